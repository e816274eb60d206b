/*
 * The reply path (docs/replies.md): one inbound message, posted by Twilio any number of times,
 * concurrently and after its job was consumed and removed, to a `serve` that may stop at any
 * step (a crash, or the request timeout dropping the handler), with serve's sweep finishing what
 * was recorded and the producer's worker consuming the replies-queue job and removing it.
 *
 * Steps of a handler (src/callbacks/replies/mod.rs, Replies::receive and finish):
 *   1. ZADD the MessageSid to the pending set (NX)
 *   2. record the message and its match (SET NX: the first arrival decides)
 *   3. one script: unless the per-MessageSid marker exists, add the job (id = MessageSid,
 *      refused while it exists) and set the marker
 *   4. the run's record and its question (idempotent writes)
 *   5. ZREM from the pending set; answer 200
 * The sweep takes pending messages older than the grace period: past the request timeout, so
 * no handler of theirs is alive; a recorded one gets steps 3-5, an unrecorded one is dropped
 * (its request never got a 200: Twilio's to retry).
 *
 * Properties:
 *   safety (always): the consumer receives the message at most once;
 *   at quiescence (`timeout`): a message that was recorded, or that Twilio got a 200 for, was
 *   received exactly once.
 * Variants that must fail: JOB_ID_ONLY (dedup by the job id alone: a retry after the job was
 * removed adds it again), NO_PENDING (no pending set: a crash between steps 2 and 3 with no
 * retry loses the message).
 */

#ifndef MAXCRASH
#define MAXCRASH 2
#endif
#ifndef MAXPOSTS
#define MAXPOSTS 3
#endif

bool recorded, pending, marker, job, answered, done_record;
byte jobs_added, delivered, crashes, live;

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

proctype handler() {
#ifndef NO_PENDING
  pending = true;
#endif
  may_stop();
  recorded = true;          /* SET NX: the first arrival's decision stays */
  may_stop();
  add_once();
  may_stop();
  done_record = true;       /* the run's record, the question closed */
  may_stop();
  pending = false;
  answered = true;
stopped:
  live--
}

proctype twilio() {
  byte posts = 0;
  do
  :: posts < MAXPOSTS -> posts++; atomic { live++; run handler() }
  :: break
  od
}

proctype sweep() {
end_sweep:
  do
  :: atomic { pending && recorded && live == 0 } ->
     add_once(); done_record = true; pending = false
  :: atomic { pending && !recorded && live == 0 -> pending = false }
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
}
