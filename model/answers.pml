/*
 * One outcome per question, whoever answers and however (docs/replies.md, docs/ladder.md;
 * crates/callbacks/src/replies/, lua/question_answer_take.lua, lua/ladder_*.lua). A question to
 * the recipient R climbs its ladder: a call to R, a text to the next person N (the question's
 * copy opens to them), a call to N, then it runs out (the `unacknowledged` escalation). R and N
 * each answer by text and by a key on their call, at any time the channel allows; `serve`'s
 * handlers may be cut between any two steps (MAXCUT times in all) and the message is not posted
 * again; serve's sweep finishes what a cut left kept or recorded. The question's time
 * (`replyWithin`) may end at any moment.
 *
 * The design checked here:
 *   - every copy shares the question's one answer claim (SET NX of its answered key); an answer,
 *     by text or key, takes it, waits while its holder is still being handled, unrecorded, and
 *     takes over a void one (question_answer_take.lua): a claim whose message has no record and
 *     whose handler is gone (past the grace period);
 *   - a text is recorded after its claim; a key is kept (its record) before its claim, so a
 *     key's claim is never void;
 *   - a text answers only when the question is open to its sender, judged by the canonical
 *     question (unanswered, in its time), never by the sender's copy; closing closes every copy;
 *   - `no-answer` (its time over, its ladder no longer climbing) waits for the keys kept, then
 *     takes the claim as an answer would: an answer and a no-answer exclude each other;
 *   - an answer acknowledges its run's ladder; a key the ladder of its call, then answers;
 *   - the ladder runs out only once its calls ended; a call's end finishes a key kept on it
 *     first (the keypad's sweep of that call).
 *
 * Properties:
 *   one outcome (always): at most one answer, and never an answer and a no-answer;
 *   in time (always): a text answers only if it came while the question was open;
 *   the escalation (always): the ladder runs out with no call of it ringing, and a key pressed on
 *     one of its calls never finds it run out;
 *   at quiescence (`timeout`): a kept key stopped the ladder, and its question has no no-answer.
 * Variants that must fail:
 *   KEYPAD_UNRECORDED: a key's claim backed by no record, void once its handler is done: the
 *     no-answer, or a text decided before the close, takes it over (two outcomes);
 *   COPY_CLOSE: closing closes the answerer's copy only, and matching trusts the sender's copy
 *     (its own `until`, which the ladder set later for N): N's text answers after the time. (The
 *     one claim still keeps it to one answer: the copies' state decides only who may try it.)
 *   EXHAUST_AT_DUE: the ladder runs out at its last step's due whatever still rings (a call rings
 *     at the escalation; its key comes after);
 *   NOANSWER_UNCLAIMED: `no-answer` judged by the question's closed state (an answer recorded
 *     and not yet closed is missed): an answer and a no-answer;
 *   KEY_LATE_AT_ONCE: a key finding the claim held is late at once (SET NX alone): a text cut
 *     between its claim and its record leaves a void claim the no-answer takes over, beside the
 *     key that stopped the ladder.
 */

#ifndef MAXCUT
#define MAXCUT 3
#endif

#define R 0
#define N 1

/* who holds the answer claim */
#define FREE 0
#define TEXT_R 1        /* R's text */
#define TEXT_N 2        /* N's text */
#define TEXT_R2 3       /* R's second text, once the first got its answer or none */
#define KEY_R 4
#define KEY_N 5
#define NOANS 6
#define KEY(p) (KEY_R + p)

#define CLIMBING 0
#define STOPPED 1
#define EXHAUSTED 2

byte claim = FREE;
bool closed;            /* the canonical question: answered (`answered_by`) */
bool over;              /* its time is over (`until`) */
bool copy_closed[2];    /* COPY_CLOSE: each person's copy's own state */
bool copy_over_n;       /* COPY_CLOSE: N's copy's own time (the ladder set it later) */
bool reached_n;         /* the ladder texted N: the copy is open to them */
byte answers, noanswer, escalations, cuts;

byte lstate = CLIMBING;
byte lstep;             /* 0: the text; 1: R's call; 2: N's text; 3: N's call */
bool ringing[2];        /* p's call of the ladder rings (at Twilio) */
bool kept[2];           /* a key pressed on p's call was kept (the keypad's pending entry) */
bool kdone[2];          /* and finished: claimed, its job, closed, acknowledged */
bool kjob[2];           /* its replies-queue job (the per-call marker: once) */
bool tdone[4];          /* text id finished after its record (closed, acknowledged) */
bool alive[7];          /* the handler of message id (1..5) is alive */
bool started[4];        /* text id came */
bool rec[7];            /* message id has a record (a text's inbound record; a key's kept one) */
bool early[4];          /* text id came before the time was over */

#define VOID(h) (h != FREE && !rec[h] && !alive[h])

#ifdef COPY_CLOSE
#define OPEN(p) ((p == R || reached_n) && !copy_closed[p] && (p == R -> !over : !copy_over_n))
#else
#define OPEN(p) ((p == R || reached_n) && !closed && !over)
#endif

/* the answer claim: SET NX (the holder that stands), or a void holder taken over */
#define TAKE(id) (claim == FREE || claim == id || VOID(claim))

inline close(p) {
  closed = true;
#ifdef COPY_CLOSE
  copy_closed[p] = true
#endif
}

inline count_answer() {
  answers++;
  assert(answers + noanswer <= 1)
}

/* ladder_ack: the first acknowledgement stops a climbing ladder */
inline ack(bykey) {
  if
  :: lstate == CLIMBING -> lstate = STOPPED
  :: else -> assert(!bykey || lstate != EXHAUSTED)   /* a key on a ringing call still counts */
  fi
}

/* the claim's holder is settled for message id: none, itself, recorded, or gone (void); a holder
 * still being handled, not yet recorded, is waited for (its request ends one way or the other) */
#define SETTLED(id) (claim == FREE || claim == id || rec[claim] || !alive[claim])

/* a key's claim as a text's: waits for a holder still being handled, takes over a void one;
 * KEY_LATE_AT_ONCE: SET NX alone, a key finding any holder is late */
#ifdef KEY_LATE_AT_ONCE
#define KEY_SETTLED(id) true
#define KEY_TAKE(id) (claim == FREE || claim == id)
#else
#define KEY_SETTLED(id) SETTLED(id)
#define KEY_TAKE(id) TAKE(id)
#endif

/* the rest of a kept key, in one go, by the sweep or by its call's end: acknowledged; claimed
 * once its holder is settled (else it stays kept, for the next sweep) */
inline finish_key(p) {
  ack(true);
  if
  :: KEY_SETTLED(KEY(p)) ->
     if
     :: KEY_TAKE(KEY(p)) -> claim = KEY(p);
        if
        :: !kjob[p] -> kjob[p] = true; count_answer()
        :: else -> skip
        fi;
        close(p)
     :: else -> skip   /* another answer came first: a late key */
     fi;
     kdone[p] = true
  :: else -> skip
  fi
}

/* each step of a handler may instead be where it is cut (serve killed, the request timeout):
 * `if CUT :: <the step> fi`, in one atomic step with it */
#define CUT :: cuts < MAXCUT -> cuts++; alive[id] = false; goto gone

/* a text from person p: decided (is the question open to the sender), claimed, recorded as the
 * answer, then closed and acknowledged */
proctype text(byte p; byte id) {
end_unsent:
  atomic {
    (id == TEXT_R || id == TEXT_N && reached_n || id == TEXT_R2 && started[TEXT_R] && !alive[TEXT_R])
    -> started[id] = true; alive[id] = true; early[id] = !over;
    if :: OPEN(p) -> skip :: else -> goto done fi
  }
  atomic {
    if
    CUT
    :: SETTLED(id) && TAKE(id) -> claim = id
    :: SETTLED(id) && !TAKE(id) -> goto done   /* late: the one claim stands for another */
    fi
  }
  atomic { if CUT :: rec[id] = true; count_answer(); assert(early[id]) fi }
  atomic { if CUT :: close(p); ack(false); tdone[id] = true fi }
done:
  alive[id] = false;
gone:
  skip
}

/* a key pressed on p's ringing call: kept by its handler before it answers the call's <Gather>
 * (the call goes on only after that answer: a key cut short before it was kept is no key), then
 * acknowledged, claimed, its job, closed */
proctype key(byte p) {
  byte id = KEY(p);
  bool won;
end_unpressed:
  atomic {
    ringing[p] -> kept[p] = true; alive[id] = true;
#ifndef KEYPAD_UNRECORDED
    rec[id] = true
#endif
  }
  atomic { if CUT :: ack(true) fi }
  atomic {
    if
    CUT
    :: KEY_SETTLED(id) -> won = KEY_TAKE(id); if :: won -> claim = id :: else -> skip fi
    fi
  }
  atomic { if CUT :: won && !kjob[p] -> kjob[p] = true; count_answer() :: !won || kjob[p] fi }
  atomic { if CUT :: if :: won -> close(p) :: else -> skip fi; kdone[p] = true fi }
  alive[id] = false;
gone:
  skip
}

/* the ladder runs out once its calls ended (or a bound past their ring time); EXHAUST_AT_DUE: at
 * its last step's due, whatever still rings */
#ifdef EXHAUST_AT_DUE
#define CALLS_ENDED true
#else
#define CALLS_ENDED (!ringing[R] && !ringing[N])
#endif

/* the ladder: its steps (each the window's, proven once by ladder.pml), its end */
proctype climber() {
end_climb:
  do
  :: atomic { lstate == CLIMBING && lstep == 0 -> lstep = 1; ringing[R] = true }
  :: atomic { lstate == CLIMBING && lstep == 1 -> lstep = 2; reached_n = true }
  :: atomic { lstate == CLIMBING && lstep == 2 -> lstep = 3; ringing[N] = true }
  :: atomic {
       lstate == CLIMBING && lstep == 3 && CALLS_ENDED -> lstate = EXHAUSTED; escalations++;
       assert(escalations == 1 && !ringing[R] && !ringing[N])
     }
  od
}

/* Twilio and time: each call ending (unanswered, answered, or hung up by the stop), the time
 * running out */
proctype world() {
end_world:
  do
  /* a call's end finishes a key kept on it first, then the ladder learns it ended */
  :: atomic { ringing[R] -> if :: kept[R] -> finish_key(R) :: else -> skip fi; ringing[R] = false }
  :: atomic { ringing[N] -> if :: kept[N] -> finish_key(N) :: else -> skip fi; ringing[N] = false }
  :: atomic { !over -> over = true }
#ifdef COPY_CLOSE
  :: atomic { over && !copy_over_n -> copy_over_n = true }
#endif
  od
}

/* the no-answer waits for the keys kept (each a claim to come), then takes the answer claim;
 * NOANSWER_UNCLAIMED: judged by the closed state alone */
#define KEYS_DONE (!(kept[R] && !kdone[R]) && !(kept[N] && !kdone[N]))
#ifdef NOANSWER_UNCLAIMED
#define UNANSWERED (!closed)
#define NO_ANSWER noanswer++
#else
#define UNANSWERED TAKE(NOANS)
#define NO_ANSWER claim = NOANS; rec[NOANS] = true; noanswer++
#endif

#define FINISH_TEXT(p, id) rec[id] && !tdone[id] && !alive[id] -> close(p); ack(false); tdone[id] = true

/* serve's sweeps: a kept key or a recorded text whose handler is gone is finished; the question
 * unanswered once its ladder no longer climbs and its time is over gets its no-answer */
proctype sweep() {
end_sweep:
  do
  :: atomic { kept[R] && !kdone[R] && !alive[KEY_R] -> finish_key(R) }
  :: atomic { kept[N] && !kdone[N] && !alive[KEY_N] -> finish_key(N) }
  :: atomic { FINISH_TEXT(R, TEXT_R) }
  :: atomic { FINISH_TEXT(N, TEXT_N) }
  :: atomic { FINISH_TEXT(R, TEXT_R2) }
  :: atomic {
       noanswer == 0 && over && lstate != CLIMBING && KEYS_DONE && UNANSWERED -> NO_ANSWER;
       assert(answers + noanswer <= 1)
     }
  od
}

init {
  atomic {
    run climber(); run world(); run sweep();
    /* the people: a text from each (N once texted), a key on each ringing call */
    run text(R, TEXT_R); run text(N, TEXT_N); run text(R, TEXT_R2); run key(R); run key(N)
  }
  timeout ->
    /* a kept key stopped the ladder, and its question never ends as a no-answer */
    assert(!kept[R] || lstate == STOPPED);
    assert(!kept[N] || lstate == STOPPED);
    assert(!(kept[R] || kept[N]) || noanswer == 0)
}
