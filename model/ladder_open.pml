/*
 * Where a callback's ladder opens (crates/callbacks/src/sms/ladder.rs `open_ladder`,
 * lua/ladder_start.lua): one run with a ladder, its text sent through the claim/sent window
 * (proven once by window.pml, here one worker at a time), the worker crashing between any two
 * steps and restarting, and the Redis forgetting a suffix of its writes once (an AOF a second
 * old, a replica promoted behind) at any moment.
 *
 * The run finishes by one of three paths: its own send (claim, open the ladder, create, mark
 * sent, complete the job); an earlier attempt found sent by its evidence (its status callback,
 * Twilio's list) when the attempt is resolved after a crash; or, after the Redis changed, a
 * claim that looks for the send first and finds it. The design: the ladder opens on every path
 * that finishes the run (ladder_start is idempotent: a second open changes nothing).
 *
 * The worker's writes after the change: its mark names its claim (refused if the claim was
 * forgotten), its job's completion its lock (forgotten: the job is retried).
 *
 * Property (at quiescence): the run finished (marked sent, its job completed) with its ladder
 * open; never two texts.
 * Variant that must fail: OPEN_ONLY_ON_SEND (the ladder opens only before the run's own send):
 * the Redis forgets the open with the claim, the retry finds the text sent and finishes the run
 * with no ladder.
 */

#ifndef MAXCRASH
#define MAXCRASH 3
#endif

/* the Redis's state of the run, one bit each */
#define CLAIMED 1       /* an attempt is open (the window's claim) */
#define OPENED 2        /* the ladder record (ladder_start) */
#define MARKED 4        /* the sent marker */
#define DONE 8          /* the job completed */

byte redis;             /* the bits above */
byte hist[16];          /* the Redis's states after each write, for the forget */
byte writes;
bool changed;           /* the Redis forgot writes: a claim after it looks for the send first */
byte sends, crashes;

#define HAS(b) (redis & b)

/* one write: the new state, kept in the history */
inline write(b) {
  redis = redis | b;
  writes++;
  hist[writes] = redis
}

bool lockdead;          /* the worker's job lock was forgotten with the Redis's last writes */

inline may_crash() {
  if
  :: crashes < MAXCRASH -> crashes++; goto restart
  :: skip
  fi
}

/* the sent marker: the window's mark names its claim, refused when the Redis forgot it (the job
 * is retried) */
inline mark() {
  atomic { if :: HAS(CLAIMED) -> write(MARKED) :: else -> goto restart fi }
}

/* the job completes under its lock; a lock the Redis forgot dies, and stall recovery hands the job
 * to a retry */
inline complete() {
  atomic { if :: !lockdead -> write(DONE) :: else -> goto restart fi }
}

/* open the ladder (ladder_start: a second open changes nothing) */
inline open() {
  atomic { write(OPENED) };
  may_crash()
}

/* the run found sent by its evidence: marked and completed (OPEN_ONLY_ON_SEND: no ladder) */
inline finish_found() {
#ifndef OPEN_ONLY_ON_SEND
  open();
#endif
  mark();
  may_crash();
  complete()
}

/* the run's own send: the ladder opens first (a crash after the create leaves it open) */
inline send_own() {
  open();
  atomic { sends++; assert(sends == 1) };
  may_crash();
  mark();
  may_crash();
  complete()
}

proctype worker() {
restart:
  lockdead = false;
end_worker:
  do
  /* a fresh claim; after the Redis changed it looks for the send first */
  :: atomic { !HAS(DONE) && !HAS(CLAIMED) -> write(CLAIMED) };
     may_crash();
     if
     :: changed && sends > 0 -> finish_found()
     :: else -> send_own()
     fi
  /* an earlier attempt left open (its worker crashed, or the Redis forgot its mark): resolved by
   * its evidence */
  :: atomic { !HAS(DONE) && HAS(CLAIMED) && !HAS(MARKED) } ->
     if
     :: sends > 0 -> finish_found()
     :: else -> send_own()
     fi
  /* marked, the job not completed (its completion forgotten, or a crash before it) */
  :: atomic { !HAS(DONE) && HAS(MARKED) } ->
#ifndef OPEN_ONLY_ON_SEND
     open();
#endif
     complete()
  od
}

/* the Redis forgets its last writes once: back to any earlier state of the run */
proctype forget() {
  byte k;
end_forget:
  atomic {
    writes > 0 ->
    k = 0;
    do
    :: k < writes -> k++
    :: k > 0 -> break   /* the last writes - k + 1 are lost */
    od;
    redis = hist[k - 1]; writes = k - 1; changed = true; lockdead = true
  }
}

init {
  atomic { run worker(); run forget() }
  timeout ->
    assert(HAS(DONE));
    assert(!HAS(DONE) || HAS(OPENED))
}
