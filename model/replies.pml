/*
 * The reply path (docs/replies.md): one inbound message, posted by Twilio any number of times,
 * concurrently and after its job was consumed and removed, to a `serve` that may stop at any
 * step (a crash, or the request timeout dropping the handler), with serve's sweep finishing what
 * was recorded and the producer's worker consuming the replies-queue job and removing it.
 *
 * Steps of a handler (crates/callbacks/src/replies/mod.rs, Replies::receive and finish):
 *   1. ZADD the MessageSid to the pending set, scored by its arrival (GT: a later arrival's
 *      time wins; the member is added if absent)
 *   2. record the message and its match (SET NX: the first arrival decides)
 *   3. one script: unless the per-MessageSid marker exists, add the job (id = MessageSid,
 *      refused while it exists) and set the marker
 *   4. the run's record and its question (idempotent writes)
 *   5. ZREM from the pending set; answer 200
 * The sweep takes a pending message once its score is older than the grace period, which is
 * longer than the request timeout: the handler whose arrival set the score is no longer alive,
 * nor any that arrived before it (`DUE`); a later arrival's may be. Handlers are numbered in
 * arrival order (at most 4); the one that set the score is `pend_by`. A recorded message gets steps 3-5, an unrecorded one is dropped (its
 * request never got a 200: Twilio's to retry).
 *
 * With FORWARD, the message answers no question and a forward URL is set
 * (crates/callbacks/src/replies/forwards.rs, src/edge/api/inbound.rs): a handler that finds no record
 * schedules the forward (ZADD GT, due a grace period after its arrival) before step 2; after
 * step 5 the handler that recorded the message forwards it and, once the app accepted it, takes
 * it off the schedule (ZREM). The app refuses up to MAXREFUSE forwards. The sweep takes a
 * scheduled message once due (the handler that set its due time, `due_by`, is no longer alive;
 * 0 when the sweep itself set it after a refusal): it forwards it when recorded and drops it
 * when not.
 *
 * Properties:
 *   safety (always): the consumer receives the message at most once;
 *   at quiescence (`timeout`): a message that was recorded, or that Twilio got a 200 for, was
 *   received exactly once; with FORWARD, a recorded message was accepted by the app at least
 *   once.
 * Variants that must fail: JOB_ID_ONLY (dedup by the job id alone: a retry after the job was
 * removed adds it again), NO_PENDING (no pending set: a crash between steps 2 and 3 with no
 * retry loses the message), FIRST_SCORE (the pending score and the forward's due time kept
 * from the first arrival, ZADD NX: the sweep drops an unrecorded message while a later
 * arrival's handler is between its ZADD and its record, which then records it and stops: lost),
 * FORWARD with NO_SCHEDULE (forwarded in the request only: a crash after the record, or a
 * refusal, with no retry loses the forward), SKEW (the sweep's clock ahead of the arrivals' by
 * more than the grace period: it drops a message a live handler is about to record).
 */

#ifndef MAXCRASH
#define MAXCRASH 2
#endif
#ifndef MAXPOSTS
#define MAXPOSTS 3   /* at most 4 */
#endif
#ifndef MAXREFUSE
#define MAXREFUSE 2
#endif

bool recorded, pending, marker, job, answered, done_record;
byte jobs_added, delivered, crashes, live;
bool alive[5];             /* handler i (1..4) is alive; alive[0], the sweep's own time, never */
byte pend_by;              /* the handler whose arrival is the pending score */
bool scheduled;            /* in the forwards schedule */
byte due_by;               /* the handler whose arrival set the forward's due time; 0: the sweep */
byte accepted, refused;    /* forwards the app accepted, refused */

/* a time set by handler n's arrival is past the grace period: n and every handler that arrived
 * before it are gone (past the request timeout); later arrivals may still be alive. This holds
 * only when the arrivals and the sweep's cut are read on one clock (Redis's); with SKEW the
 * sweep runs on a clock ahead of the arrivals' by more than the grace period, and everything
 * looks due to it at once */
#ifdef SKEW
#define DUE(n) true
#else
#define DUE(n) ((n < 1 || !alive[1]) && (n < 2 || !alive[2]) && (n < 3 || !alive[3]) \
                && (n < 4 || !alive[4]))
#endif

/* one forward: the app accepts it or (up to MAXREFUSE times) refuses it */
inline forward(ok) {
  if
  :: atomic { refused < MAXREFUSE -> refused++; ok = false }
  :: atomic { accepted++; ok = true }
  fi
}

/* ZADD of handler `me`'s arrival to a set holding the member (`in`, scored by `by`) */
#ifdef FIRST_SCORE
#define ZADD_ARRIVAL(in, by) atomic { if :: !in -> by = me; in = true :: else -> skip fi }
#else
#define ZADD_ARRIVAL(in, by) \
  atomic { \
    if \
    :: !in || (by != 0 && me > by) -> by = me \
    :: in && by == 0 -> if :: by = me :: skip fi /* the sweep's retry time: either is later */ \
    :: else -> skip \
    fi; \
    in = true \
  }
#endif

inline add_once() {
  atomic {
#ifdef JOB_ID_ONLY
    if
    :: job -> skip
    :: else -> job = true; jobs_added++
    fi
#else
    if
    :: marker -> skip
    :: !marker && job -> marker = true
    :: !marker && !job -> job = true; marker = true; jobs_added++
    fi
#endif
  }
}

/* the handler may stop here: a crash, or the request timeout dropping it */
inline may_stop() {
  if
  :: crashes < MAXCRASH -> crashes++; goto stopped
  :: true -> skip
  fi
}

proctype handler(byte me) {
  bool first, ok;
#ifndef NO_PENDING
  ZADD_ARRIVAL(pending, pend_by);
#endif
  may_stop();
#if defined(FORWARD) && !defined(NO_SCHEDULE)
  if
  :: !recorded -> ZADD_ARRIVAL(scheduled, due_by)  /* GET found no record */
  :: else -> skip
  fi;
  may_stop();
#endif
  atomic { first = !recorded; recorded = true }  /* SET NX: the first arrival's decision stays */
  may_stop();
  add_once();
  may_stop();
  done_record = true;       /* the run's record, the question closed */
  may_stop();
  pending = false;
#ifdef FORWARD
  if
  :: first ->
     forward(ok);
     if
     :: ok -> may_stop(); scheduled = false
     :: else -> skip
     fi
  :: else -> skip
  fi;
#endif
  answered = true;
stopped:
  atomic { alive[me] = false; live-- }
}

proctype twilio() {
  byte posts = 0;
  do
  :: posts < MAXPOSTS -> posts++; atomic { live++; alive[posts] = true; run handler(posts) }
  :: break
  od
}

proctype sweep() {
  bool ok;
end_sweep:
  do
  :: atomic { pending && recorded && DUE(pend_by) } ->
     add_once(); done_record = true; pending = false
  :: atomic { pending && !recorded && DUE(pend_by) -> pending = false }
#ifdef FORWARD
  :: atomic { scheduled && !recorded && DUE(due_by) -> scheduled = false }
  :: atomic { scheduled && recorded && DUE(due_by) } ->
     forward(ok);
     if
     :: ok -> scheduled = false
     :: else -> due_by = 0  /* ZADD XX: due a minute from now */
     fi
#endif
  od
}

proctype consumer() {
end_consume:
  do
  :: atomic { job -> delivered++; job = false; assert(delivered <= 1) }  /* removeOnComplete */
  od
}

init {
  atomic {
    run twilio();
    run sweep();
    run consumer();
  }
  timeout ->
    assert(!recorded || delivered == 1);
    assert(!answered || delivered == 1)
#ifdef FORWARD
    ; assert(!recorded || accepted >= 1)
#endif
}
