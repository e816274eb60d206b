/*
 * ringback's exactly-once window, as a protocol, for Spin.
 *
 *   spin -a -DV1 model/window.pml   the rejected short-claim design (the claim expires with the attempt)
 *   spin -a -DV2 model/window.pml   the design of docs/window-protocol.md (v2)
 *
 * Switches (see docs/model.md for the assumptions, in one place):
 *   MAXCRASH n   crashes in a run, all processes together (default 2)
 *   MAXERR n     non-"accept" Twilio answers and failed lookups in a run (default 2)
 *   ATTEMPTS n   the job's BullMQ attempts (default 2: one retry)
 *   DRAIN        (v2) an operator drains, then rolls back to the legacy fleet (leases may end)
 *   LEASE_MAX    (v2) the ringback fleet may be lost for a whole lease without a drain
 *   F1_AS_WRITTEN (v2) window_release as the v2 design first wrote it
 *                (model/v1/window_release_draft.lua: a release with a queue job behind it
 *                deletes C and leaves the index);
 *                without it, rule F1 of docs/model-findings.md as the tree runs it (a "released"
 *                attempt keeps C and stays in the index as `retry`)
 *   F2_AS_WRITTEN (v2) a permanent refusal releases (send-failed) before it escalates, as the
 *                v2 design's worker first did (model/v1/README.md); without it, rule F2 as the
 *                tree runs it (escalate first)
 *   AS_WRITTEN   both of the above
 *   EDGES        (v2) what Twilio does to a stored message: the account may rewrite stored bodies
 *                (a Messaging Service's Smart Encoding, link shortening, appended text: chosen
 *                once), and a look-alike message (the same person, a body no transform tells
 *                from the run's: the legacy worker's text for another run) may appear at any
 *                time, once. Without it: neither happens.
 *   EVIDENCE_AS_WRITTEN (v2, with EDGES) the lookup as first designed: bodies compared byte
 *                for byte (a rewritten body is not seen) and one readable match taken as this
 *                run's send (findings F3, F4). Without it (crates/callbacks/src/sms/evidence.rs): only
 *                a receipt naming the run proves a send; a message the lookup cannot rule out
 *                settles the attempt unknown (escalated), once the reconcile window has passed
 *   ESCALATE_AS_WRITTEN (v2) an unknown attempt is settled, then escalated: a crash between
 *                the two leaves it settled and nobody told (finding F5). Without it: escalated
 *                first, settled after (crates/callbacks/src/sms/attempt.rs)
 *   FORGET       (v2) Redis forgets a suffix of its writes, once: at any time Env keeps a copy of
 *                Redis's state (what an AOF or a replica held), and later Redis comes back as that
 *                copy (a restart from an AOF that missed its last second, a replica promoted
 *                behind its master). Twilio's messages, the escalations and the processes' own
 *                state stay. A job the copy shows active is no longer renewed by a worker that
 *                already finished it: its lock dies (over-approximated: every active job's).
 *                The restarted Redis is another server, so every claim after it that would open a
 *                fresh attempt resolves first (lua/include/window.lua redisLost; the window is
 *                taken to outlast every retry of a forgotten job: assumption A7). Run without the
 *                legacy fleet, which does not look (a forgotten legacy claim texts again, as in
 *                the legacy design).
 *                A resolution that began before the change (its since) looks again before it
 *                supersedes: what it ruled out predates what Redis forgot.
 *   FORGET_AS_WRITTEN (v2, with FORGET) the claim does not look after a change
 *   FORGET_SUPERSEDE_AS_WRITTEN (v2, with FORGET) the claim looks after a change, but trusts
 *                every supersede (as the look was first written)
 *   PERMIT       (v2) each ringback worker runs at concurrency 1 (the default): its idle fetch
 *                loop takes the one permit and waits for a job in BZPOPMIN, again and again
 *                (crates/queue/src/worker/mod.rs); a job arriving takes the permit from there. The sweep
 *                takes a permit when one is free and runs without one when none is
 *                (crates/callbacks/src/orphans.rs sweep). Without PERMIT the sweep is always enabled, and
 *                weak fairness then runs it: a sweep that waits for a permit is not seen.
 *   PERMIT_AS_WRITTEN (v2, with PERMIT) the sweep waits for a permit, as it first did: an idle
 *                worker's fetch holds it, the sweep never runs, and an orphan is never resolved
 *   PER_SLOT     (v2) the Redis Cluster layout (crates/callbacks/src/window/mod.rs, Topology::PerSlot): the
 *                scripts do not write the open-attempts index I; each index write is its own
 *                call before or after the script, and a process may crash between them:
 *                claim = I ZADD (intent), script, then Sent → ZREM / Resolve → ZADD; mark sent =
 *                script, then ZREM; release / hold = script, then ZADD or ZREM (when the claim
 *                was ours); adopt = ZADD, then script; sweep = take (window_index.lua), script,
 *                then drop only if nobody wrote the run's index entry since the take (the
 *                drop-if of window_index.lua: the score is still the one the take set).
 *                Time, for I only: a sweep takes the entry only when it is due (idue); every
 *                write but adopt's sets a time ahead, and the time passes (Env) except while a
 *                live worker is between its intent and its claim script's answer: a live
 *                process's consecutive calls are faster than the pending TTL (the claim script
 *                enforces it: it opens no attempt once its intent is due, window_claim ARGV[14])
 *
 * d_step is deterministic (first true branch, like Lua's if/elseif); steps with a real choice
 * (Twilio's answer, a lookup) are atomic.
 * Every step names the script and lines or the Rust function it stands for: for v2, lua/ and
 * src/ of this tree (the final scripts, F1 and F2 included); for v1, the short-claim design's
 * scripts, kept in model/v1/ (model/v1/README.md, which also describes its worker). A Lua script is
 * one d_step; between two steps anything interleaves, and a process may crash between any two
 * of its steps.
 */

/* a script's own write of the index I (PER_SLOT: the caller's separate call instead) */
#ifdef PER_SLOT
#define SETI(v) skip
#else
#define SETI(v) inI = v
#endif
/* PER_SLOT: a write of the run's index entry in its own call; it changes the entry's score, so a
 * sweep's pending drop-if (window_index.lua "drop") no longer matches */
#define IW(v) inI = v; idue = 0; itake[0] = 0; itake[1] = 0

/* the sweep's guard: as first written it waited for a permit (PERMIT_AS_WRITTEN) */
#if defined(PERMIT) && defined(PERMIT_AS_WRITTEN)
#define SWEEP_PERMIT (!fetching[me])
#else
#define SWEEP_PERMIT 1
#endif

#ifdef AS_WRITTEN
#define F1_AS_WRITTEN
#define F2_AS_WRITTEN
#endif
#ifndef MAXCRASH
#define MAXCRASH 2
#endif
#ifndef MAXERR
#define MAXERR 2
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 2
#endif
#ifndef MAXSTALLED
#define MAXSTALLED 1            /* BullMQ maxStalledCount (both fleets) */
#endif

/* ---- Redis: the claim key C = agent-callback:<runId> ---- */
#define C_NONE 0
#define C_LP   1                /* legacy "pending" (SET NX EX 600) */
#define C_RP   2                /* ringback "pending:<ctok>" */
#define C_SENT 3                /* "sent" | "sent:<sid>" */
byte C;
byte ctok;
bit  cshort;                    /* v1: C carries the pending TTL (model/v1/window_claim.lua:96) */

/* ---- the attempt record A = ringback:attempt:{C} ---- */
#define A_NONE 0
#define A_CLAIMED 1
#define A_AMBIG 2
#define A_RETRY 3               /* v2 */
#define A_SENT 4
#define A_RELEASED 5
#define A_SFAILED 6
#define A_UNKNOWN 7             /* v2: settled unknown (window_settle_unknown.lua): fenced for good */
byte ast;
byte atok;
bit  aged;                      /* claimed_at + pending TTL has passed (a claimed attempt is dead) */
bit  rwin;                      /* since + reconcile window has passed */
bit  inI;                       /* runId in the open-attempts index I */
bit  iint[2];                   /* PER_SLOT: ringback worker i is between its claim intent and the claim's answer */
bit  idue;                      /* PER_SLOT: I's entry is due (its time has passed) */
bit  itake[2];                  /* PER_SLOT: ringback worker i's sweep took I's entry, and nobody wrote it since */
bit  R;                         /* the callback record holds a sid (status webhook receipt) */
bit  fetching[2];               /* PERMIT: ringback worker i's idle fetch holds its one permit */

/* ---- Twilio and the outcome ---- */
byte texts;                     /* messages Twilio created for the run */
bit  escalated;
bit  rbClaimed;                 /* ringback's window_claim ever answered claimed/resolve */
byte errs;                      /* non-accept answers and failed lookups so far */
byte crashes;
bit  polled;                    /* the reconciler looked the sent message up */
bit  rewritten;                 /* EDGES: Twilio stores this account's bodies rewritten */
bit  lookalike;                 /* EDGES: a look-alike message that is not this run's exists */

/* ---- BullMQ: the run's callback job ---- */
#define J_WAIT 0                /* wait, or delayed (a delayed job is promoted at any time) */
#define J_ACTIVE 1
#define J_DONE 2
#define J_FAILED 3
byte js;
byte holder;                    /* 0, 1 ringback workers; 2 legacy */
bit  lockDead;                  /* the holder died: its lock will expire, nobody renews it */
byte stc;                       /* job.stc, stall counter */
byte made;                      /* attemptsMade */
bit  stallFailed;               /* failed by the stall limit */
bit  adopted;                   /* v2: the failed-set scan has looked at it */

/* ---- processes ---- */
bit  alive[3];                  /* 0, 1 ringback; 2 legacy */
bit  sending[2];                /* between window_claim "claimed" and the send's own script */
#ifdef LOST_REPLY
byte lost;                      /* claim replies lost after the claim ran (at most MAXLOST) */
#ifndef MAXLOST
#define MAXLOST 1
#endif
#endif
byte tok[2];                    /* the token a ringback worker's attempt holds */
byte inAttempt;                 /* ringback attempts in progress (queue job or sweep) */
byte lpc;                       /* legacy: 0 idle, 1 claimed (before create), 2 created (before SET XX) */
bit  rolledBack;                /* v2 DRAIN: drained, ringback stopped, legacy fleet only */

#ifdef FORGET
/* Redis as a copy kept earlier (the s-prefixed state), and whether it came back as it */
byte sC, sctok, sast, satok, sjs, sholder, sstc, smade;
bit  scshort, saged, srwin, sinI, sR, slockDead, sstallFailed, sadopted, saafter;
bit  kept, forgot;
bit  lostwin;                   /* the claim sees another server than the one that acknowledged */
#define LOOKS lostwin
#ifdef FORGET_SUPERSEDE_AS_WRITTEN
#define SUPERSEDE_TRUSTED 1
#else
#define SUPERSEDE_TRUSTED 0
#endif
bit  aafter;                    /* the attempt's resolution began after the change (its since) */
#define AFTER(v) aafter = v
#define NO_FORGOTTEN_CALL (!(sending[0] && tok[0] != atok) && !(sending[1] && tok[1] != atok))
#else
#define LOOKS 0
#define SUPERSEDE_TRUSTED 1
#define aafter 1
#define AFTER(v) skip
#define NO_FORGOTTEN_CALL 1
#endif
/* a fresh attempt, or (after Redis lost writes) evidence first */
#define FRESH_OR_LOOK if :: LOOKS -> resolveWith(nt, 0) :: else -> fresh(nt) fi

#define OPEN (ast == A_CLAIMED || ast == A_AMBIG || ast == A_RETRY)
#ifdef V2
#define JOBEND (js == J_DONE || (js == J_FAILED && (!stallFailed || adopted)))
#else
#define JOBEND (js == J_DONE || js == J_FAILED)
#endif
/* silent loss: ringback touched the run, its job ended, nothing open, nothing sent, no escalation */
#define LOST (rbClaimed && texts == 0 && !escalated && !OPEN && JOBEND && inAttempt == 0)
/* a run only the legacy worker touched may keep the legacy design's own drop */
#define LEGACY_DROP (!rbClaimed && texts == 0 && JOBEND && lpc == 0)
#define RESOLVED (texts == 1 || escalated || LEGACY_DROP)

ltl safety { [] (texts <= 1 && !LOST) }
ltl liveness { <> RESOLVED }
ltl once { [] (texts <= 1) }          /* the second text alone (v1's counterexample) */
ltl nolost { [] !LOST }               /* the silent loss alone */

/* a fresh token: the smallest one nothing refers to (tokens are only compared) */
inline newtoken(t) {
  t = 1;
  do
  :: (C == C_RP && ctok == t) || (ast != A_NONE && atok == t) || tok[0] == t || tok[1] == t -> t++
  :: else -> break
  od
}

/* a new attempt: v1 model/v1/window_claim.lua:96-103 (claim TTL = pending TTL);
 * v2 fresh() of lua/window_claim.lua:69-78 (C a lease; due in I at claimed_at + pending TTL) */
inline fresh(t) {
  C = C_RP; ctok = t;
#ifdef V2
  cshort = 0;
#else
  cshort = 1;
#endif
  ast = A_CLAIMED; atok = t; aged = 0; rwin = 0; SETI(1); AFTER(0);
  tok[me] = t; sending[me] = 1; res = 3; rbClaimed = 1
}

/* resolveWith: v1 model/v1/window_claim.lua:48-57 (C held for `hold`);
 * v2 lua/window_claim.lua:57-66 (C held with the lease, record `ambiguous`, due at now + hold/2) */
inline resolveWith(t, keepSince) {
  C = C_RP; ctok = t; cshort = 0;
  if :: !keepSince -> rwin = 0; AFTER(LOOKS) :: else -> skip fi;
  ast = A_AMBIG; atok = t; SETI(1);
  tok[me] = t; res = 4; rbClaimed = 1
}

#define DEAD_OR_AMBIG (atok == ctok && (ast == A_AMBIG || (ast == A_CLAIMED && aged)))
/* res: 1 sent, 2 busy, 3 claimed, 4 resolve.  crates/callbacks/src/window/claim.rs Window::claim */
inline window_claim(sup) {
  d_step {
    tok[me] = 0; newtoken(nt);
#ifndef V2
    /* model/v1/window_claim.lua:63-103 */
    if
    :: C == C_SENT -> inI = 0; res = 1                                   /* :64-69 */
    :: C == C_LP -> ast = A_NONE; resolveWith(nt, 0)                      /* :70-77 */
    :: C == C_RP && DEAD_OR_AMBIG -> resolveWith(ctok, 1)                 /* :78-81 */
    :: C == C_RP && !DEAD_OR_AMBIG -> res = 2                             /* :82-86 busy */
    :: C == C_NONE && (ast == A_CLAIMED || ast == A_AMBIG) -> resolveWith(atok, 1)  /* :89-94 */
    :: C == C_NONE && !(ast == A_CLAIMED || ast == A_AMBIG) -> fresh(nt)  /* :96-103 */
    fi
#else
    /* v2 lua/window_claim.lua:84-139 (docs/window-protocol.md v2 §1, §3) */
    if
    :: C == C_SENT -> SETI(0); res = 1                                   /* :85-89, sent() :51-54 */
    :: C == C_LP -> ast = A_NONE; resolveWith(nt, 0)                      /* :90-97 take the legacy claim over */
    :: C == C_RP && (ast == A_NONE || atok != ctok) -> ast = A_NONE; resolveWith(ctok, 0)  /* :98-104 */
    :: C == C_RP && ast != A_NONE && atok == ctok ->
       if
       :: sup != 0 && sup == ctok && ast == A_AMBIG ->                    /* :105-109 supersede, atomic */
          if :: LOOKS && !aafter && !SUPERSEDE_TRUSTED -> resolveWith(nt, 0)  /* FORGET: looked before the change */
             :: else -> fresh(nt) fi
       :: else ->
          if
          :: ast == A_CLAIMED && !aged -> res = 2          /* :110-112 busy until claimed_at + pending TTL */
          :: ast == A_CLAIMED && aged -> resolveWith(ctok, 1)              /* :113 */
          :: ast == A_AMBIG -> resolveWith(ctok, 1)                        /* :115 */
          :: ast == A_SENT -> C = C_SENT; SETI(0); res = 1                 /* :116-119 */
          :: ast == A_RETRY || ast == A_RELEASED || ast == A_SFAILED || ast == A_UNKNOWN -> FRESH_OR_LOOK  /* :120-121 */
          fi
       fi
    :: C == C_NONE && (ast == A_CLAIMED || ast == A_AMBIG) -> resolveWith(atok, 1)  /* :124-129 */
    :: C == C_NONE && ast == A_SENT -> C = C_SENT; SETI(0); res = 1      /* :130-133 */
    :: C == C_NONE && ast != A_CLAIMED && ast != A_AMBIG && ast != A_SENT && R ->
         C = C_SENT; SETI(0); res = 1                                     /* :134-138 a receipt proved a send */
#if !defined(F1_AS_WRITTEN)
    /* F1 fix, :81-82 and :124-129: a `retry` whose fence is gone: someone else may have sent
     * since; resolve first. (The script tests this before the receipt of :134-138, and resolves
     * with the record's own token and since when it has a token; the model resolves after the
     * receipt test, with a new token and a new since. A `retry` with a token keeps its claim
     * (window_release.lua:28-35), so under A3/A6 only an adopted `retry` (token "", since = the
     * adoption) gets here; the script's order gives the same state space at model/check's bounds.) */
    :: C == C_NONE && ast == A_RETRY && !R -> resolveWith(nt, 0)
#endif
    :: C == C_NONE && ast != A_CLAIMED && ast != A_AMBIG && ast != A_SENT && !R -> FRESH_OR_LOOK  /* :139 */
    fi
#endif
  }
}

/* window_mark_sent (Window::mark_sent): v1 model/v1/window_mark_sent.lua:26-37; v2
 * lua/window_mark_sent.lua:33-40 (written whatever C holds; the "found" refusal of :29-32, a
 * message linked to another run, is outside the one-run model) */
inline window_mark_sent(t) {
  d_step {
    C = C_SENT; cshort = 0;
    if :: atok == t || ast == A_NONE -> ast = A_SENT; atok = t :: else -> skip fi;
    SETI(0)
  }
}

/* window_release (Window::release): v1 model/v1/window_release.lua:18-27 (deletes C, writes
 * the state, out of I). v2 lua/window_release.lua:26-46, the F1 fix for every caller: "released"
 * refreshes C (:28-35) and makes the record `retry`, in I at the retry time (:36-44);
 * "send-failed" deletes C (:30-31) and takes the run out of I (:37-39). F1_AS_WRITTEN:
 * model/v1/window_release_draft.lua:22-38 (C deleted; `retry` only for a caller with no queue job) */
inline window_release(t, st, jobless) {
  d_step {
    res = (C == C_RP && ctok == t);          /* PER_SLOT: Window::release's `released == 1` */
#if defined(V2) && !defined(F1_AS_WRITTEN)
    /* F1 fix (:28-35): "not taken, retry" keeps the fence (C stays pending:<t>, lease refreshed)
     * and the record becomes `retry` in I (:41-42): whoever comes next (queue job or sweep)
     * sends under the same fence (lua/window_claim.lua:120-121) */
    if :: C == C_RP && ctok == t && st != A_RELEASED -> C = C_NONE :: else -> skip fi;
#else
    if :: C == C_RP && ctok == t -> C = C_NONE :: else -> skip fi;
#endif
    if
    :: atok == t && ast != A_NONE ->
#ifdef V2
       if
#ifdef F1_AS_WRITTEN
       :: st == A_RELEASED && jobless -> ast = A_RETRY; SETI(1)
#else
       :: st == A_RELEASED -> ast = A_RETRY; SETI(1)
#endif
       :: else -> ast = st; SETI(0)
       fi
#else
       ast = st; inI = 0
#endif
    :: else -> skip
    fi
  }
}

/* window_hold (Window::hold): v1 model/v1/window_hold.lua:18-26; v2 lua/window_hold.lua:19-29,
 * which also requires the record's token (:22) */
inline window_hold(t) {
  d_step {
#ifdef V2
    if
    :: (C == C_NONE || (C == C_RP && ctok == t)) && atok == t && ast != A_NONE ->
#else
    if
    :: C == C_NONE || (C == C_RP && ctok == t) ->
#endif
       C = C_RP; ctok = t; cshort = 0;
       if :: atok == t && ast != A_AMBIG && ast != A_NONE -> ast = A_AMBIG; rwin = 0 :: else -> skip fi;
       SETI(1); res = 1
    :: else -> res = 0
    fi
  }
}

/* window_settle_unknown (Window::settle_unknown): lua/window_settle_unknown.lua:17-24, only
 * under the attempt's own claim: the claim becomes a sent marker without a sid, the record
 * `unknown`, out of I */
inline window_settle_unknown(t) {
  d_step {
    if
    :: C == C_NONE || (C == C_RP && ctok == t) -> C = C_SENT; cshort = 0; ast = A_UNKNOWN; SETI(0); res = 1
    :: else -> res = 0
    fi
  }
}

/* crash of ringback worker `me` (or restart later): its lock is never renewed again */
inline rb_crash() {
  d_step {
    alive[me] = 0; crashes++; sending[me] = 0; tok[me] = 0; itake[me] = 0; iint[me] = 0; fetching[me] = 0;
    if :: js == J_ACTIVE && holder == me -> lockDead = 1 :: else -> skip fi;
    if :: inAttempt > 0 && busyAttempt -> inAttempt-- :: else -> skip fi;
    busyAttempt = 0; res = 0; ans = 0; nt = 0; found = 0; loops = 0; sup = 0; jobless = 0
  }
  goto end_dead
}
#define CRASHPOINT if :: crashes < MAXCRASH -> rb_crash() :: true -> skip fi

/* PER_SLOT: the index writes Window makes in their own calls (crates/callbacks/src/window/mod.rs) */
inline idx_after_release(st) {
#ifdef PER_SLOT
  CRASHPOINT;
  d_step { if :: res == 1 && st == A_SFAILED -> IW(0) :: res == 1 -> IW(1) :: else -> skip fi }
#else
  skip
#endif
}
inline idx_after_hold() {
#ifdef PER_SLOT
  CRASHPOINT;
  d_step { if :: res == 1 -> IW(1) :: else -> skip fi }
#else
  skip
#endif
}
inline idx_after_mark() {
#ifdef PER_SLOT
  CRASHPOINT;
  d_step { IW(0) }
#else
  skip
#endif
}

/* end of an attempt: crates/queue/src/processor.rs Outcome → BullMQ (lua/move_to_finished.lua /
 * lua/move_to_delayed.lua), or for the sweep (jobless) crates/callbacks/src/orphans.rs sweep (and drain.rs
 * drain): DelayUntil → Window::revisit_at (ZADD XX) */
#define O_DONE 1
#define O_DELAY 2
#define O_FAIL 3
inline finish(o) {
  d_step {
    if
    :: !jobless && js == J_ACTIVE && holder == me && !lockDead ->
       if
       :: o == O_DONE -> js = J_DONE
       :: o == O_DELAY -> js = J_WAIT                                     /* delayed, promoted later */
       :: o == O_FAIL -> js = J_FAILED
       fi
    :: jobless && o == O_DELAY && OPEN -> IW(1)                           /* revisit_at: ZADD XX */
    :: else -> skip
    fi;
    inAttempt--; busyAttempt = 0; tok[me] = 0; sending[me] = 0;
    res = 0; ans = 0; nt = 0; found = 0; loops = 0; sup = 0; jobless = 0   /* dead locals */
  }
}

proctype Ringback(byte me) {
  byte res, sup, loops, ans, nt;
  bit jobless, busyAttempt, found, seen;
  alive[me] = 1;
end_idle:
  skip;
end_idle2:
  do
  :: d_step { alive[me] && !rolledBack && js == J_WAIT ->                 /* lua/move_to_active.lua */
       js = J_ACTIVE; holder = me; lockDead = 0; jobless = 0; inAttempt++; busyAttempt = 1;
       fetching[me] = 0 }                                                   /* the permit: the job's */
     goto attempt
#ifdef PERMIT
  /* idle: the fetch loop takes the one permit and waits in BZPOPMIN, again and again */
  :: d_step { alive[me] && !rolledBack && !fetching[me] && js != J_WAIT -> fetching[me] = 1 }
#endif
#ifdef PER_SLOT
  /* Window::sweep, PerSlot: window_index.lua take (due: I holds the run), window_sweep.lua
   * without I, then drop when settled */
  :: d_step { alive[me] && !rolledBack && inI && idue -> jobless = 0; found = 0; IW(1); itake[me] = 1 }
     CRASHPOINT;
     d_step {
       if
       :: !OPEN || C == C_SENT -> found = 1                               /* settled: drop after */
       :: else ->
          if :: ast != A_RETRY && (C == C_NONE || (C == C_RP && ctok == atok)) -> C = C_RP; ctok = atok
             :: else -> skip fi;
          jobless = 1; inAttempt++; busyAttempt = 1
       fi
     }
     CRASHPOINT;
     d_step { if :: found && itake[me] -> IW(0) :: else -> skip fi; found = 0; itake[me] = 0 }
     if :: jobless -> goto attempt :: else -> skip fi
  :: d_step { alive[me] && !rolledBack && js == J_FAILED && stallFailed && !adopted ->
       IW(1); idue = 1 }                                      /* Window::adopt, PerSlot: ZADD (now) first */
     CRASHPOINT;
     d_step {
       if
       :: !adopted -> adopted = 1;
          if
          :: C == C_SENT || R || ast == A_SENT || ast == A_SFAILED -> skip
          :: OPEN -> skip
          :: else -> ast = A_RETRY; atok = 0
          fi
       :: else -> skip
       fi }
#else
  :: d_step { alive[me] && !rolledBack && inI && SWEEP_PERMIT ->  /* crates/callbacks/src/orphans.rs sweep → Window::sweep */
       jobless = 0;
#ifndef V2
       /* model/v1/window_sweep.lua:18-36: an open attempt is re-fenced with the hold */
       if
       :: !OPEN || C == C_SENT -> inI = 0                                  /* :22-30 settled */
       :: else ->
          if :: C == C_NONE || (C == C_RP && ctok == atok) -> C = C_RP; ctok = atok; cshort = 0
             :: else -> skip fi;                                            /* :31-33 */
          jobless = 1; inAttempt++; busyAttempt = 1
       fi
#else
       /* v2 lua/window_sweep.lua:21-40: claimed/ambiguous re-fenced (lease refreshed); retry
        * taken too, re-fenced only under its own claim (a no-op here: the lease is not modelled);
        * a `retry` with C absent is left to window_claim (:35-37) */
       if
       :: !OPEN || C == C_SENT -> inI = 0                                  /* :25-34 settled */
       :: else ->
          if :: ast != A_RETRY && (C == C_NONE || (C == C_RP && ctok == atok)) -> C = C_RP; ctok = atok
             :: else -> skip fi;                                            /* :35-37 */
          jobless = 1; inAttempt++; busyAttempt = 1                         /* :38-40 */
       fi
#endif
     }
     if :: jobless -> goto attempt :: else -> skip fi
#endif
#if defined(V2) && !defined(PER_SLOT)
  :: d_step { alive[me] && !rolledBack && js == J_FAILED && stallFailed && !adopted ->
       adopted = 1;          /* crates/callbacks/src/orphans.rs adopt_stall_failures → Window::adopt */
       if                                                                  /* lua/window_adopt.lua:17-32 */
       :: C == C_SENT || R || ast == A_SENT || ast == A_SFAILED -> skip     /* :18-22 */
       :: OPEN -> inI = 1                                                   /* :23-26 */
       :: else -> ast = A_RETRY; atok = 0; inI = 1                         /* :27-32 token "" */
       fi }
#endif
  /* crates/callbacks/src/reconcile.rs Reconciler::run_once */
  :: d_step { alive[me] && !rolledBack && ast == A_SENT && !polled -> polled = 1 }
     if :: d_step { errs < MAXERR -> errs++; escalated = 1 }              /* delivery failed: escalated */
        :: true -> skip fi
  :: alive[me] && !rolledBack && crashes < MAXCRASH -> rb_crash()
  od;

attempt:                                          /* crates/callbacks/src/sms/attempt.rs SmsProcessor::attempt */
  loops = 0; sup = 0;
claim:
#ifdef PER_SLOT
  skip;                                          /* (a label may not jump into the d_step) */
  d_step { IW(1); iint[me] = 1 };                /* Window::claim: the intent, before the script */
  CRASHPOINT;
#endif
  window_claim(sup);
#ifdef PER_SLOT
  CRASHPOINT;
  d_step { iint[me] = 0; if :: res == 1 -> IW(0) :: res == 2 || res == 4 -> IW(1) :: else -> skip fi }  /* after_claim */
#endif
#ifdef LOST_REPLY
  /* A1 relaxed: a claim may run and its reply be lost (a connection cut after Redis ran it).
   * crates/callbacks/src/window/claim.rs Window::claim sends the same call again with the same token; until
   * it answers, the worker is in no provider call, so the attempt may age meanwhile. */
  if
  :: res == 3 && lost < MAXLOST ->
     /* the re-sent call's supersede token was replaced by its first run (tokens are UUIDs, never
      * reused: the model's small tokens are, so the stale one is dropped rather than compared) */
     d_step { lost++; sending[me] = 0; nt = tok[me]; sup = 0 }
     CRASHPOINT;
     atomic {
       /* claimRun's re-execution (lua/include/window.lua): its own live claim answers claimed,
        * within replay_for of the first send (the attempt's liveness then outlasts the provider
        * call: A1 holds from here) or later than that (atomic, not d_step: a d_step would
        * always take the first) */
       if
       :: C == C_RP && ctok == nt && atok == nt && ast == A_CLAIMED && !aged ->
          if :: sending[me] = 1; res = 3 :: res = 6 fi
       :: else -> res = 0
       fi }
     if :: res == 0 -> window_claim(sup) :: else -> skip fi;
     if
     :: res == 6 ->
#ifdef REPLAY_AS_WRITTEN
        /* sent on anyway: the provider call may outlast the attempt's liveness */
        goto send
#else
        /* given back ("claim answered too late"): released, the job comes back at once */
        window_release(tok[me], A_RELEASED, jobless);
        idx_after_release(A_RELEASED);
        CRASHPOINT;
        finish(O_DELAY); goto end_idle
#endif
     :: else -> skip
     fi
  :: else -> skip
  fi;
#endif
  sup = 0; loops++;
  if
  :: res == 1 -> finish(O_DONE); goto end_idle                           /* Claim::Sent */
  :: res == 2 -> finish(O_DELAY); goto end_idle                          /* Claim::Busy → later */
  :: res == 3 -> goto send                                               /* Claim::Claimed */
  :: res == 4 -> goto resolve                                            /* Claim::Resolve */
  fi;

send:
  CRASHPOINT;                                                            /* RINGBACK_CRASH_AT=after-claim */
  atomic {                                     /* crates/callbacks/src/sms/send.rs SmsProcessor::send: create_message */
    if
    :: ans = 1                                                            /* accepted */
    :: errs < MAXERR -> ans = 2; errs++                                   /* permanent */
    :: errs < MAXERR -> ans = 3; errs++                                   /* retry later */
    :: errs < MAXERR -> ans = 4; errs++                                   /* ambiguous, created */
    :: errs < MAXERR -> ans = 5; errs++                                   /* ambiguous, not created */
#ifdef V2
    :: errs < MAXERR -> ans = 6; errs++                                   /* auth refused (AuthRefused, v2 §4) */
#endif
    fi;
    if :: ans == 1 || ans == 4 -> texts++ :: else -> skip fi
  }
  CRASHPOINT;                                                            /* after-provider-accept */
  if
  :: ans == 1 -> window_mark_sent(tok[me]); sending[me] = 0;              /* SendOutcome::Accepted: mark_sent */
     idx_after_mark();
     CRASHPOINT;                                                         /* after-sent-marker */
     finish(O_DONE); goto end_idle
  :: ans == 2 ->                                                          /* SendOutcome::Permanent */
#if defined(V2) && !defined(F2_AS_WRITTEN)
     /* F2 fix, as crates/callbacks/src/sms/send.rs SmsProcessor::send runs it: Escalator::escalate (job id
      * from the run: idempotent), then release(send-failed); an escalation that fails delays the
      * job with nothing released (not modelled: like a crash here, the attempt stays open) */
     d_step { escalated = 1; sending[me] = 0 }
     CRASHPOINT;
     window_release(tok[me], A_SFAILED, jobless);
     idx_after_release(A_SFAILED);
#else
     window_release(tok[me], A_SFAILED, jobless); sending[me] = 0;       /* v1, first v2 worker: release, */
     CRASHPOINT;
     d_step { escalated = 1 }                                            /* then escalate */
#endif
     CRASHPOINT;
     finish(O_FAIL); goto end_idle
  :: ans == 3 || ans == 6 -> window_release(tok[me], A_RELEASED, jobless); sending[me] = 0;
     idx_after_release(A_RELEASED);
     CRASHPOINT;                  /* RetryLater, v2 AuthRefused: release("released"), DelayUntil */
     finish(O_DELAY); goto end_idle
  :: ans == 4 || ans == 5 -> window_hold(tok[me]); sending[me] = 0;       /* Ambiguous: hold */
     idx_after_hold();
     CRASHPOINT;
     finish(O_DELAY); goto end_idle
  fi;

resolve:          /* crates/callbacks/src/sms/evidence.rs SmsProcessor::resolve */
  CRASHPOINT;
  atomic {
#ifndef V2
    if
    :: R || texts > 0 -> found = 1                                        /* receipt, or the list lookup */
    :: errs < MAXERR -> errs++; found = 0; res = 0                        /* lookup failed: wait */
    :: !(R || texts > 0) -> found = 0; res = rwin                         /* 1 Lost, 0 wait */
    fi
#else
    /* what the complete list lookup cannot rule out: this run's own message (unless compared
     * byte for byte and stored rewritten), and a look-alike */
    seen = (texts > 0
#ifdef EVIDENCE_AS_WRITTEN
            && !rewritten
#endif
           ) || lookalike;
    if
    :: R -> found = 1                                    /* a receipt naming the run: proof */
    :: errs < MAXERR -> errs++; found = 0; res = 0       /* lookup failed: wait */
#ifdef EVIDENCE_AS_WRITTEN
    :: !R && seen -> found = 1                           /* one readable match taken as this run's */
#else
    :: !R && seen -> found = 0; res = 2 * rwin           /* a look-alike: wait for a receipt, then unknown */
#endif
    :: !R && !seen -> found = 0; res = rwin              /* 1 Lost, 0 wait */
    fi;
    seen = 0
#endif
  }
  if
  :: found -> window_mark_sent(tok[me]);                 /* Resolution::Sent: attempt's mark_sent(Found) */
     idx_after_mark();
     CRASHPOINT;
     finish(O_DONE); goto end_idle
  :: !found && res == 0 -> finish(O_DELAY); goto end_idle                /* Resolution::Wait */
  :: !found && res == 2 ->                                               /* Resolution::Indistinct */
#ifdef ESCALATE_AS_WRITTEN
     window_settle_unknown(tok[me]);                     /* settled first, */
     idx_after_mark();
     CRASHPOINT;
     d_step { escalated = 1 }                            /* then escalated */
#else
     d_step { escalated = 1 }                            /* escalate_unknown: the escalation exists, */
     CRASHPOINT;
     window_settle_unknown(tok[me]);                     /* then settle_unknown */
     idx_after_mark();
#endif
     CRASHPOINT;
     finish(O_DONE); goto end_idle
  :: !found && res == 1 ->                                               /* Resolution::Lost */
#ifndef V2
     window_release(tok[me], A_RELEASED, jobless);      /* v1 worker: release, claim anew */
     CRASHPOINT;
     sup = 0;
#else
     sup = tok[me];                     /* supersede inside the claim (attempt; lua/window_claim.lua:105-109) */
#endif
     if :: loops < 3 -> goto claim
        :: else -> finish(O_DELAY); goto end_idle fi
  fi;

end_dead:
  skip;
end_dead2:
  do
  :: d_step { !rolledBack -> alive[me] = 1 }; goto end_idle              /* restart: a new process */
  od
}

/* node-harness/bin/legacy-worker.js:46-72 (the legacy worker, as it ran in production) */
inline leg_crash() {
  d_step {
    alive[2] = 0; crashes++; lpc = 0; lres = 0;
    if :: js == J_ACTIVE && holder == 2 -> lockDead = 1 :: else -> skip fi
  }
  goto end_ldead
}
#define LCRASH if :: crashes < MAXCRASH -> leg_crash() :: true -> skip fi

proctype Legacy() {
  byte lres;
  alive[2] = 1;
end_lidle:
  skip;
end_lidle2:
  d_step { alive[2] && js == J_WAIT -> js = J_ACTIVE; holder = 2; lockDead = 0 }  /* BullMQ Worker */
  d_step {                                                                /* :51-52 SET NX EX 600 */
    if
    :: C == C_NONE -> C = C_LP; lpc = 1
    :: else -> lpc = 0;                                                   /* :52 `if (!claimed) return;` */
       if :: js == J_ACTIVE && holder == 2 && !lockDead -> js = J_DONE :: else -> skip fi
    fi
  }
  if :: lpc == 0 -> goto end_lidle :: else -> skip fi;
  LCRASH;                                                                 /* :53 LEGACY_CRASH_AT=after-claim */
  atomic {                                                                /* :56-61 messages.create */
    if
    :: lres = 1                                                           /* accepted */
    :: errs < MAXERR -> errs++; lres = 2                                  /* refused / retry / lost, not created */
    :: errs < MAXERR -> errs++; lres = 3                                  /* created, answer lost */
    fi;
    if :: lres != 2 -> texts++ :: else -> skip fi;
    lpc = 2
  }
  LCRASH;                                                                 /* :68 after-provider-accept */
  if
  :: lres == 1 ->
     d_step { if :: C != C_NONE -> C = C_SENT :: else -> skip fi }       /* :69 SET XX sent */
     LCRASH;                                                              /* :70 before-complete */
     d_step { lpc = 0; lres = 0; if :: js == J_ACTIVE && holder == 2 && !lockDead -> js = J_DONE :: else -> skip fi }
  :: lres != 1 ->                                                         /* :62-67 throw: BullMQ retry_job */
     d_step {
       lpc = 0; lres = 0;
       if
       :: js == J_ACTIVE && holder == 2 && !lockDead ->
          made++; if :: made < ATTEMPTS -> js = J_WAIT :: else -> js = J_FAILED fi
       :: else -> skip
       fi
     }
  fi;
  goto end_lidle;
end_ldead:
  skip;
end_ldead2:
  d_step { alive[2] = 1 }; goto end_lidle                                 /* restart */
}

/* time, and what happens without any worker: each is enabled only in the order the
 * configuration guarantees (docs/model.md, "Assumptions") */
proctype Env() {
end_env:
  do
  /* claimed_at + pending TTL: never while the attempt's live worker is still inside its call
   * (pending TTL > TWILIO_TIMEOUT_MS + SAFETY_MARGIN, crates/callbacks/src/sms/config.rs SmsConfig::validate) */
  :: d_step { ast == A_CLAIMED && !aged && !(sending[0] && tok[0] == atok) && !(sending[1] && tok[1] == atok) -> aged = 1 }
#ifndef V2
  /* v1: the claim written by model/v1/window_claim.lua:96 expires with the pending TTL */
  :: d_step { C == C_RP && cshort && aged && ctok == atok -> C = C_NONE; cshort = 0 }
  /* v1: a held claim (hold = reconcile window + pending TTL) expires only untouched: no ringback alive */
  :: d_step { C == C_RP && !cshort && !alive[0] && !alive[1] -> C = C_NONE }
#else
  /* v2: the lease ends only after a drain and rollback, or (LEASE_MAX) a fleet lost for the lease */
  :: d_step { C == C_RP && (rolledBack
#ifdef LEASE_MAX
              || (!alive[0] && !alive[1] && js != J_ACTIVE)  /* after stall recovery (A3; A6 dropped) */
#endif
              ) -> C = C_NONE }
#endif
  /* the legacy claim (600 s) ends after its job ended, and not under a ringback step in progress
   * or an open attempt a live fleet sweeps within seconds (assumption A5) */
  :: d_step { C == C_LP && lpc == 0 && (js == J_DONE || js == J_FAILED) && inAttempt == 0 &&
              (!OPEN || rolledBack) -> C = C_NONE }
  /* since + reconcile window: after any legacy call that started before it (window > provider
   * timeout), and (FORGET) after any ringback call of an attempt Redis forgot, which started
   * before the change its resolver's `since` is */
  :: d_step { ast == A_AMBIG && !rwin && lpc != 1 && NO_FORGOTTEN_CALL -> rwin = 1 }
#ifdef FORGET
  /* Redis's state as an AOF or a replica holds it at some moment (once: any suffix after it) */
  :: d_step { !kept -> kept = 1; sC = C; sctok = ctok; scshort = cshort; sast = ast; satok = atok;
       saged = aged; srwin = rwin; sinI = inI; sR = R; sjs = js; sholder = holder; slockDead = lockDead;
       sstc = stc; smade = made; sstallFailed = stallFailed; sadopted = adopted; saafter = aafter }
  /* Redis comes back as that copy: every write since is lost */
  :: d_step { kept && !forgot -> forgot = 1; C = sC; ctok = sctok; cshort = scshort; ast = sast;
       atok = satok; aged = saged; rwin = srwin; inI = sinI; R = sR; js = sjs; holder = sholder;
       lockDead = slockDead; stc = sstc; made = smade; stallFailed = sstallFailed; adopted = sadopted;
       aafter = saafter;
       if :: js == J_ACTIVE -> lockDead = 1 :: else -> skip fi;
#ifndef FORGET_AS_WRITTEN
       lostwin = 1
#endif
     }
#endif
  /* the status webhook (src/edge/api/webhook.rs → lua/receipt_apply.lua): the callback record gets the sid */
  :: d_step { texts > 0 && !R -> R = 1 }
#ifdef EDGES
  /* a look-alike message to the same person (another run's, another sender's), once */
  :: d_step { !lookalike -> lookalike = 1 }
#endif
  /* lock expiry + stall recovery (lua/move_stalled_jobs_to_wait.lua, two sweeps): the job goes back to
   * wait, or past maxStalledCount to failed */
  :: d_step { js == J_ACTIVE && lockDead ->
       stc++; lockDead = 0; holder = 3;
       if :: stc > MAXSTALLED -> js = J_FAILED; stallFailed = 1 :: else -> js = J_WAIT fi }
#ifdef DRAIN
  /* the operator: `ringback drain` (crates/callbacks/src/drain.rs drain: refuses while ringback workers
   * live; adopts, takes every indexed run with window_sweep forced, attempts it) resolves every
   * open attempt, then the fleet is rolled back to the legacy worker. (A drain that reaches its
   * deadline escalates what is still open and stops: not modelled, outside A6.) */
  :: d_step { !rolledBack && !OPEN && inAttempt == 0 -> rolledBack = 1; alive[0] = 0; alive[1] = 0;
              sending[0] = 0; sending[1] = 0;
              if :: js == J_ACTIVE && holder < 2 -> lockDead = 1 :: else -> skip fi }
#endif
  od
}

#ifdef PER_SLOT
/* the index entry's time passes, but not under a live worker between its claim intent and the
 * claim's answer (the pending TTL exceeds two consecutive calls). Its own process, so that weak
 * fairness still gives Env's other steps their turn. */
proctype Clock() {
end_clock:
  do
  :: d_step { inI && !idue && !(alive[0] && iint[0]) && !(alive[1] && iint[1]) -> idue = 1 }
  od
}
#endif

init {
  atomic {
#ifdef EDGES
    if :: rewritten = 1 :: skip fi;          /* the account's stored bodies: rewritten or not */
#endif
#ifdef PER_SLOT
    run Clock();
#endif
    run Env();
    run Ringback(0);
    run Ringback(1);
#ifndef FORGET
    run Legacy()
#endif
  }
}
