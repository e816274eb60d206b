/*
 * One unconfirmed ladder call per number (docs/model.md; lua/ladder_number.lua,
 * crates/callbacks/src/ladder/number.rs, evidence.rs `find_call`, climb.rs `send`). STEPS
 * ladders each reach one call step to the same number N (one on-call person), at any time. A
 * step, once claimed (its claim is ladder.pml's), takes N (the number's claim, holding
 * "<run> <step>"; refused while another step holds it, taken again by the same step), then,
 * adopted, looks for its call in Twilio's list of calls to N, passing over the SIDs in N's
 * confirmed calls; a call found is its call (marked). Otherwise it creates one: accepted (the
 * SID known), refused for good (the step skipped), "try later" (a 503, nothing created), or
 * its answer lost (the call created). With a SID known the step marks it, then gives N back,
 * the SID added to N's confirmed calls in the same script; skipped, it gives N back with none.
 * A "try later" or a lost answer keeps N: the step is left claimed and, its lease over, adopted,
 * and its adopter takes N again and looks first. A refused take is left the same way.
 *
 * Here a sender stops (a crash) between any two steps before its mark, at most MAXCRASH times
 * in all; its adopter goes on. The list is every call to N created so far (more than the
 * list since the step's claim), in any order: the first unconfirmed one is any of them.
 *
 * Properties:
 *   own (always): a step marks only a call it created;
 *   once (always): no step's call is created twice;
 *   at quiescence (`timeout`): every step marked (its call, or none when skipped), every call
 *     marked by the step that created it, and N free.
 * Variants that must fail:
 *   NO_NUMBER_CLAIM: steps look and create without taking N: an adopted step finds another
 *     step's unconfirmed call (its answer lost) and marks it as its own;
 *   GIVE_BEFORE_CONFIRM: N given back without the SID added to its confirmed calls: the next
 *     adopted step finds that call, confirmed by the record of its own ladder only, and marks it.
 *   NO_REPAIR: a sender that stops between its mark and its give (two calls) leaves N held;
 *     nothing gives it back for the marked step, its hold ends with its call unconfirmed, and
 *     an adopted step marks that call as its own.
 * A sender may stop between its mark and its give: a step the holder refuses gives N back on
 * its behalf, with its call, and so does the ladder's next visit.
 * Assumed: an adopter takes N again within its hold (600 s); Twilio lists a call by the time
 * its step's lease is over.
 */

#ifndef STEPS
#define STEPS 3
#endif
#ifndef MAXCRASH
#define MAXCRASH 2
#endif
#define MAXCALLS 6      /* creates in all; the design stays at STEPS */

#define NOCALL 255      /* marked with no call (skipped) */

byte holder;                    /* N's claim: the step holding it; 0: free */
bool confirmed[MAXCALLS];       /* N's confirmed calls, by SID (call index + 1) */
byte creator[MAXCALLS];         /* the step that created each call (Twilio's truth) */
byte ncalls;                    /* calls to N created so far, in order */
byte created[STEPS + 1];        /* calls created per step (must stay <= 1) */
byte marked[STEPS + 1];         /* the step's mark: its call's SID, NOCALL; 0: unmarked */
byte crashes;

/* the number's claim: taken if free or already the step's ("take") */
#ifdef NO_NUMBER_CLAIM
#define TAKE(s) true
#else
#define TAKE(s) (holder == 0 || holder == s)
#endif

/* a call created for step s at Twilio */
inline new_call(s) {
  assert(ncalls < MAXCALLS);
  creator[ncalls] = s;
  ncalls++;
  created[s]++;
  assert(created[s] <= 1)
}

/* "give": the SID kept among N's confirmed calls, N freed if the step holds it, one script */
inline give(s, sid) {
  atomic {
#ifndef GIVE_BEFORE_CONFIRM
    if
    :: sid != 0 && sid != NOCALL -> confirmed[sid - 1] = true
    :: else -> skip
    fi;
#endif
    if
    :: holder == s -> holder = 0
    :: else -> skip
    fi
  }
}

/* the sender stops here; its adopter goes on once the lease is over, from the take */
inline may_crash() {
  if
  :: atomic { crashes < MAXCRASH -> crashes++; adopted = true; goto take }
  :: true -> skip
  fi
}

proctype ladder(byte s) {
  bool adopted;                 /* the step is an adopter's: its send is looked for first */
  byte sid;                     /* the call the step found or created; 0: none */
  byte i;
  may_crash();
take:
#ifndef NO_NUMBER_CLAIM
  if
  :: atomic { TAKE(s) -> holder = s }
#ifndef NO_REPAIR
  /* refused by a holder already marked (its sender stopped between its mark and its give):
   * given back on its behalf, with its call, and taken again */
  :: atomic { !TAKE(s) && marked[holder] != 0 -> give(holder, marked[holder]) }; goto take
  /* refused: another step's call is unconfirmed; the step waits, its adopter takes again */
  :: atomic { !TAKE(s) && marked[holder] == 0 -> adopted = true }; goto take
#else
  :: atomic { !TAKE(s) -> adopted = true }; goto take
  /* nobody gives a marked holder's number back: its hold ends, its call unconfirmed */
  :: atomic { !TAKE(s) && marked[holder] != 0 -> holder = 0 }; goto take
#endif
  fi;
  may_crash();
#endif
  sid = 0;
  if
  :: adopted ->
     /* find_call: the list of calls to N since the claim, the confirmed ones passed over; the
      * first that remains (in any order) is the step's */
     atomic {
       i = 0;
       do
       :: i < ncalls && !confirmed[i] -> sid = i + 1; i++; if :: break :: skip fi
       :: i < ncalls && confirmed[i] -> i++
       :: i >= ncalls -> break
       od
     }
  :: else -> skip
  fi;
  if
  :: sid == 0 ->
     atomic {
       if
       :: new_call(s); sid = ncalls                 /* accepted: the SID known */
       :: sid = NOCALL                              /* refused for good: skipped */
       :: skip                                      /* "try later": nothing created */
       :: new_call(s)                               /* created, its answer lost */
       fi
     }
     if
     :: sid == 0 -> adopted = true; goto take      /* kept N: adopted after the lease */
     :: else -> skip
     fi;
     may_crash()
  :: else -> skip
  fi;
  /* the mark: the step's call (or none) */
  atomic {
    marked[s] = sid;
    assert(sid == NOCALL || creator[sid - 1] == s)
  }
  /* the sender may stop between its mark and its give (two calls): the number stays held by a
   * marked step until a step it refuses gives it back on its behalf, or the ladder's next
   * visit (`give:<step>`) */
  if
  :: atomic { crashes < MAXCRASH -> crashes++ }
  :: give(s, sid)
  fi
}

/* the ladder's next visit gives back a marked step's number it still holds (`give:<step>`) */
proctype visit() {
  byte s;
end_visit:
  do
  :: atomic { holder != 0 && marked[holder] != 0 -> s = holder; give(s, marked[s]) }
  od
}

init {
  byte i;
  atomic {
    i = 1;
    do
    :: i <= STEPS -> run ladder(i); i++
    :: else -> break
    od;
#ifndef NO_REPAIR
    run visit()
#endif
  }
  timeout ->
    i = 1;
    do
    :: i <= STEPS -> assert(marked[i] != 0 && created[i] <= 1); i++
    :: else -> break
    od;
    i = 0;
    do
    :: i < ncalls -> assert(marked[creator[i]] == i + 1); i++
    :: else -> break
    od;
    assert(holder == 0)
}
