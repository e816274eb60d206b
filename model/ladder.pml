/*
 * The escalation ladder (docs/model.md): when a text is not enough, a run climbs steps (the
 * text, a call to the same person, the next person's text, their call, ...), each step a send
 * inside the claim/sent window, until the person acknowledges on any channel or the ladder is
 * exhausted and one escalation job is added.
 *
 * The design checked here, one Lua script per state change of the run's ladder record:
 *   advance(s): if the ladder is climbing, its last started step is s and the step's wait is
 *     over: step s+1 is claimed (its window claim written in the same script), or, past the last
 *     step, the ladder is exhausted and the escalation job added, in the same script;
 *   ack(channel): if the ladder is climbing, it stops (the first acknowledgement wins);
 *   mark(k): the send of step k is recorded (the window's sent marker); a call created after the
 *     ladder stopped is answered "end it".
 * Any number of actors (workers, serve) advance the same ladder, each may crash between any two
 * steps, and the ladder sweep (any actor) takes a due ladder and an orphaned claim. A step's
 * send inside its claim is the window's, proven exactly once by window.pml: here it is one
 * atomic send by whoever holds or adopts the claim.
 *
 * Properties:
 *   safety (always): no step is claimed twice; no step is claimed after the ladder stopped;
 *   at most one escalation, and none for a stopped ladder; a call never rings on after the
 *   ladder stopped and the sweep ran;
 *   at quiescence (`timeout`): the ladder ended (stopped or exhausted), every claimed step was
 *   sent once (or, orphaned and found unsent after the stop, closed unsent), and an exhausted
 *   ladder has its escalation.
 * Variants that must fail: READ_THEN_ADVANCE (the step read, then written in a second call: two
 * actors claim the same step), STOP_READ_FIRST (the worker reads the ladder's state and then
 * claims without the script checking it: a step claimed after the stop), ESCALATE_AFTER (the
 * escalation job added by the worker after the script said exhausted: a crash between loses it),
 * NO_END_ON_MARK (a call created after the stop is not ended: it rings on after the ack),
 * BLIND_ADOPT (the sweep takes an orphaned claim and creates without looking for the send: a
 * step sent twice), CLOSE_STOPPED_BLIND (the sweep closes an orphaned claim of a stopped
 * ladder without looking for its call: a call created before the stop rings on).
 *
 * A claim is orphaned when its owner crashed, or (LOST_REPLY) when its create's answer was lost
 * (Twilio may have created the call; the owner leaves the claim for the sweep rather than
 * create again).
 *
 * FORGET: the Redis behind the record loses its last advance once (an AOF a second old, a replica
 * promoted behind): the step's claim and mark are gone and the ladder stands a step back, while
 * its call may ring, or its sender may still be about to create it. The advance that claims a
 * step after the change (the Redis identity differs) sends nothing: the step is the sweep's,
 * adopted once its lease is over (no live sender of it is still creating), its send looked for
 * first. FORGET_BLIND (the claim after the change sends at once) and FORGET_NO_LEASE (the step
 * adopted at once, while its first sender may still create it) must fail: the step twice.
 * Under FORGET a call the Redis forgot is not ended by a stop (it rings out): exempted below.
 *
 * The sweep finds ladders through the due index: a run leaves it only once its ladder ended and
 * no step's claim is unmarked (an orphan left there would never be adopted). UNINDEX_ENDED (the
 * run unindexed as soon as its ladder ended) must fail. PER_SLOT: on a Cluster the index is a
 * key of its own, so the sweep reads the record and removes the run in a second call.
 */

#define STEPS 4        /* steps after the text: a call, the next person's text, their call, ... */
#ifndef MAXCRASH
#define MAXCRASH 2
#endif
#ifndef ACTORS
#define ACTORS 3       /* two workers and serve */
#endif
#ifndef MAXACKS
#define MAXACKS 2      /* acknowledgements arriving, on any channel, possibly the same twice */
#endif

#define CLIMBING 0
#define STOPPED 1
#define EXHAUSTED 2

#define NONE 0
#define CLAIMED 1
#define SENT 2

byte state = CLIMBING;
short step = 0;                 /* the last started step; 0: the text */
byte claim[STEPS + 1];          /* per step: NONE, CLAIMED, SENT; step 0 is the text, sent */
byte claimed[STEPS + 1];        /* how many times each step was claimed (must stay <= 1) */
byte sends[STEPS + 1];          /* creates at the provider per step (must stay <= 1) */
byte owner[STEPS + 1];          /* the actor holding the step's claim; 0: orphaned */
bool ringing[STEPS + 1];        /* a call of this step rings (the truth, at Twilio) */
bool known[STEPS + 1];          /* the record knows it rings (`ringing:<k>`, written by the mark) */
bool is_call[STEPS + 1];
bool end_pending;               /* a stop found a call ringing: the sweep ends it */
byte escalations, crashes, acks;
bool exhausted_seen;            /* ESCALATE_AFTER: the script said exhausted */
bool alive[4];
bool indexed = true;            /* the run is in the due index (ladder_start wrote it) */
#define NO_CLAIMED (claim[1] != CLAIMED && claim[2] != CLAIMED && claim[3] != CLAIMED && claim[4] != CLAIMED)
#ifdef UNINDEX_ENDED
#define MAY_UNINDEX (state != CLIMBING)
#else
#define MAY_UNINDEX (state != CLIMBING && NO_CLAIMED)
#endif
#ifdef FORGET
bool changed;                   /* the Redis identity changed (within the lost-writes window) */
bool forgot[STEPS + 1];         /* the Redis forgot this step's claim and mark */
byte creating_by[4];            /* the step each live sender claimed and has not created yet */
#define BUSY(a, k) (a <= ACTORS && alive[a] && creating_by[a] == k)
#ifdef FORGET_NO_LEASE
#define LEASE_OVER(k) true
#else
#define LEASE_OVER(k) (!BUSY(1, k) && !BUSY(2, k) && !BUSY(3, k))
#endif
#else
#define LEASE_OVER(k) true
#endif

/* the send of a claimed step (the window's exactly-once send): one create, then the mark */
inline send(k) {
  atomic {
#ifndef FORGET
    claim[k] == CLAIMED ->
#endif
    /* (under FORGET the sender creates whatever the Redis forgot since its claim) */
    sends[k]++;
    assert(sends[k] <= 1);
    if
    :: is_call[k] -> ringing[k] = true
    :: else -> skip
    fi
  }
}

inline mark(k) {
  atomic {
    if
    :: claim[k] == CLAIMED -> claim[k] = SENT; known[k] = ringing[k]
    :: else -> skip
    fi;
#ifndef NO_END_ON_MARK
    /* a call created after the stop: the mark answers "end it" */
    if
    :: state == STOPPED && ringing[k] -> ringing[k] = false
    :: else -> skip
    fi
#endif
  }
}

/* the actor stops here: a crash (its claims are orphaned for the sweep) */
inline may_crash() {
  if
  :: atomic { crashes < MAXCRASH -> crashes++; alive[me] = false; goto crashed }
  :: true -> skip
  fi
}

inline add_escalation() {
  atomic {
    escalations++;
    assert(escalations <= 1);
    assert(state != STOPPED)
  }
}

proctype actor(byte me) {
  short s;
  short k;
end_actor:
  do
  :: atomic { state == CLIMBING -> s = step }
     /* the step's wait is over (any time: the timer is nondeterministic) */
#ifdef STOP_READ_FIRST
     may_crash();
     atomic {
       if
       :: step == s && s < STEPS -> step = s + 1; k = step; claim[k] = CLAIMED; claimed[k]++;
          owner[k] = me; assert(claimed[k] <= 1); assert(state == CLIMBING)
       :: else -> k = 0
       fi
     }
#elif defined(READ_THEN_ADVANCE)
     may_crash();
     atomic {
       if
       :: state == CLIMBING && s < STEPS -> k = s + 1
       :: else -> k = 0
       fi
     }
     /* the second call checks the state but not the step it read */
     atomic {
       if
       :: k > 0 && state == CLIMBING ->
          step = k; claim[k] = CLAIMED; claimed[k]++; owner[k] = me; assert(claimed[k] <= 1)
       :: else -> k = 0
       fi
     }
#else
     atomic {
       if
       :: state == CLIMBING && step == s && s < STEPS ->
          step = s + 1; k = step; claim[k] = CLAIMED; claimed[k]++; owner[k] = me;
          assert(claimed[k] <= 1); assert(state == CLIMBING);
  #ifdef FORGET
          if
    #ifndef FORGET_BLIND
          :: changed -> owner[k] = 0; k = 0   /* left for adoption after the lease */
    #endif
          :: else -> creating_by[me] = k
          fi
  #endif
       :: state == CLIMBING && step == s && s == STEPS ->
          state = EXHAUSTED; k = 0;
  #ifdef ESCALATE_AFTER
          exhausted_seen = true
  #else
          escalations++; assert(escalations <= 1)
  #endif
       :: else -> k = 0
       fi
     }
  #ifdef ESCALATE_AFTER
     if
     :: exhausted_seen && escalations == 0 -> may_crash(); add_escalation()
     :: else -> skip
     fi;
  #endif
#endif
     /* a stopped ladder never gets a claim (the Redis may have forgotten it since, under FORGET) */
#ifndef FORGET
     assert(k == 0 || claimed[k] == 1);
#endif
     if
     :: k > 0 ->
        may_crash();
        send(k);
#ifdef FORGET
        creating_by[me] = 0;
#endif
        may_crash();
#ifdef LOST_REPLY
        if
        :: mark(k)
        :: owner[k] = 0   /* the create's answer was lost: left claimed for the sweep */
        fi
#elif defined(FORGET)
        /* the mark names its token: a claim taken again after the Redis forgot is not its */
        if
        :: owner[k] == me -> mark(k)
        :: else -> skip
        fi
#else
        mark(k)
#endif
     :: else -> skip
     fi
  od;
crashed:
  skip
}

/* the ladder sweep: an orphaned claim is the window sweep's (sent once, then marked); a call
 * still ringing on a stopped ladder is ended */
#define ORPHAN(k) (claim[k] == CLAIMED && (owner[k] == 0 || !alive[owner[k]]) && LEASE_OVER(k))

/* the claim taken, the send looked for (its status callback, then Twilio's list): created only
 * when none is found and the ladder still climbs; a found call of a stopped ladder is ended by
 * the mark */
inline adopt(k) {
#ifdef BLIND_ADOPT
  send(k);
#else
  if
  :: sends[k] == 0 && state != STOPPED -> send(k)
  :: else -> skip
  fi;
#endif
#ifdef CLOSE_STOPPED_BLIND
  if
  :: state == STOPPED -> claim[k] = SENT
  :: else -> mark(k)
  fi
#else
  mark(k)
#endif
}

proctype sweep() {
end_sweep:
  do
  :: indexed && ORPHAN(1) -> adopt(1)
  :: indexed && ORPHAN(2) -> adopt(2)
  :: indexed && ORPHAN(3) -> adopt(3)
  :: indexed && ORPHAN(4) -> adopt(4)
#ifdef PER_SLOT
  :: indexed && MAY_UNINDEX -> indexed = false   /* read the record, then ZREM: two calls */
#else
  :: atomic { indexed && MAY_UNINDEX -> indexed = false }
#endif
  :: atomic {
       /* the calls the stop named (the record's): ended */
       end_pending -> end_pending = false;
       ringing[1] = ringing[1] && !known[1]; ringing[2] = ringing[2] && !known[2];
       ringing[3] = ringing[3] && !known[3]; ringing[4] = ringing[4] && !known[4]
     }
  od
}

#ifdef FORGET
/* the Redis loses its last advance once: the step's claim and mark, the ladder a step back */
proctype redis() {
  short k;
end_redis:
  if
  :: atomic {
       state == CLIMBING && step > 0 && claim[step] != NONE ->
       k = step; step = k - 1; claim[k] = NONE; claimed[k]--; owner[k] = 0; known[k] = false;
       forgot[k] = true; changed = true
     }
  :: skip
  fi
}
#endif

/* the person acknowledges: a reply, a keypad answer, a delivered receipt */
proctype person() {
  short k;
end_person:
  do
  :: acks < MAXACKS ->
     atomic {
       acks++;
       if
       :: state == CLIMBING ->
          state = STOPPED;
          k = 1;
          do
          :: k <= STEPS && known[k] && ringing[k] -> end_pending = true; k++
          :: k <= STEPS && !(known[k] && ringing[k]) -> k++
          :: else -> break
          od
       :: else -> skip   /* a later answer: the first one won */
       fi
     }
  :: break
  od
}

init {
  byte i;
  atomic {
    claim[0] = SENT;
    i = 1;
    do
    :: i <= STEPS -> is_call[i] = (i % 2 == 1); i++
    :: else -> break
    od;
    i = 1;
    do
    :: i <= ACTORS -> alive[i] = true; run actor(i); i++
    :: else -> break
    od;
    run sweep();
#ifdef FORGET
    run redis();
#endif
    run person()
  }
  timeout ->
    assert(state != CLIMBING || crashes == ACTORS);
    i = 1;
    do
    :: i <= STEPS ->
       assert(claim[i] != CLAIMED);
       /* sent once; or closed unsent, found not sent after the stop */
       assert(claimed[i] == 0 || sends[i] == 1 || (state == STOPPED && sends[i] == 0));
#ifdef FORGET
       assert(!(state == STOPPED && ringing[i] && !forgot[i]));
#else
       assert(!(state == STOPPED && ringing[i]));
#endif
       i++
    :: else -> break
    od;
    assert(state != EXHAUSTED || escalations == 1)
}
