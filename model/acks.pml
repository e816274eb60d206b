/*
 * Which ladder a person's message acknowledges (docs/ladder.md#acknowledgements;
 * crates/callbacks/src/replies/inbox.rs `acknowledge`, keypad.rs, lua/ladder_ack.lua). Three runs
 * reach one person R, each with a ladder: questions A and B (codes shown: both may be open) and
 * a plain callback P. Each run's text reaches R at any time, opening its ladder (and a question);
 * each ladder then calls R, the call ends, the ladder runs out; a question's time may end. R sends
 * A's coded answer (twice: the second is late), B's coded answer, an uncoded "ok", a STOP, and
 * presses a key on A's call and on P's call, in any order, concurrently; each message is decided
 * (rules of docs/replies.md, the question's one claim taken in the decision) and then
 * acknowledges, as serve's handler does after its record.
 *
 * The design: an answer acknowledges its own run; a key its call's run; a late reply, an
 * ambiguous or unmatched message and an opt-out none, except that an uncoded message that
 * matches no question acknowledges a plain callback's ladder where that ladder is the only
 * climbing one that reached the sender and no question is open to them.
 *
 * Properties:
 *   own (always): a ladder is acknowledged only by its own run's answer or key, or by the
 *     plain-callback rule;
 *   at quiescence (`timeout`): the ladder of each answered run and of each call keyed no longer
 *     climbs.
 * Variant that must fail: ACK_ALL_REACHING (any message but an opt-out acknowledges every ladder
 * that reached its sender, as well as its answer's run): one question's ladder stopped by the
 * other's answer.
 */

#define A 0
#define B 1
#define P 2
#define NONE 3

#define CLIMBING 0
#define STOPPED 1
#define EXHAUSTED 2

/* what a message was decided to be */
#define ANSWER 1
#define LATE 2
#define AMBIGUOUS 3
#define UNMATCHED 4
#define OPTOUT 5
#define KEYED 6

bool reached[3];        /* the run's text reached R: its ladder opened, its question asked */
byte lad[3];            /* each ladder's state, once reached */
bool ringing[3], called[3];
bool answered[2];       /* question q has its answer (its one claim taken) */
bool over[2];           /* question q's time is over */
bool sent_a;             /* A's coded answer was sent */
bool owed[3];           /* the run was answered or keyed: its ladder owes a stop */

#define OPEN(q) (reached[q] && !answered[q] && !over[q])
#define CLOSED(q) (reached[q] && (answered[q] || over[q]))
#define CLIMBS(r) (reached[r] && lad[r] == CLIMBING)

/* ladder_ack of run l by a message decided `w` about run `o` (pl: the plain-callback rule held
 * when it was decided) */
inline ack(l, w, o, pl) {
  assert((w == ANSWER || w == KEYED) && o == l || pl && l == P);
  if
  :: lad[l] == CLIMBING -> lad[l] = STOPPED
  :: else -> skip
  fi
}

#define OWE(what, whose) if :: what == ANSWER -> owed[whose] = true :: else -> skip fi

#ifdef ACK_ALL_REACHING
/* every ladder that reached the sender, and the answer's run */
inline acknowledge(aw, ao, ap) {
  if
  :: aw != OPTOUT ->
     if :: reached[A] || ao == A -> ack(A, aw, ao, ap) :: else -> skip fi;
     if :: reached[B] || ao == B -> ack(B, aw, ao, ap) :: else -> skip fi;
     if :: reached[P] -> ack(P, aw, ao, ap) :: else -> skip fi
  :: else -> skip
  fi
}
#else
inline acknowledge(aw, ao, ap) {
  if
  :: aw == ANSWER || aw == KEYED -> ack(ao, aw, ao, ap)
  :: aw == UNMATCHED && ap -> ack(P, aw, ao, ap)
  :: else -> skip
  fi
}
#endif

/* a text from R, sent once its run reached them: `code` is the question it names (NONE:
 * uncoded), `optout` a STOP, `again` A's answer sent a second time */
proctype text(byte code; bool optout; bool again) {
  byte what, whose = NONE;
  bool plain;
end_unsent:
  atomic {
    (code == NONE || reached[code]) && (!again || sent_a) ->
    sent_a = sent_a || code == A;
    if
    :: optout -> what = OPTOUT
    :: !optout && code != NONE && OPEN(code) -> what = ANSWER; whose = code; answered[code] = true
    :: !optout && code != NONE && CLOSED(code) -> what = LATE; whose = code
    :: !optout && code == NONE ->
       if
       /* one question open, none closed within the codeless window: it answers that one */
       :: OPEN(A) && !OPEN(B) && !CLOSED(B) -> what = ANSWER; whose = A; answered[A] = true
       :: OPEN(B) && !OPEN(A) && !CLOSED(A) -> what = ANSWER; whose = B; answered[B] = true
       :: OPEN(A) && (OPEN(B) || CLOSED(B)) || OPEN(B) && (OPEN(A) || CLOSED(A)) -> what = AMBIGUOUS
       :: !OPEN(A) && !OPEN(B) -> what = UNMATCHED;
          /* the plain-callback rule: P the only climbing ladder that reached R */
          plain = CLIMBS(P) && !CLIMBS(A) && !CLIMBS(B)
       fi
    fi
  }
  /* recorded; then the acknowledgement (after the record: serve's sweep finishes it) */
  atomic { OWE(what, whose); acknowledge(what, whose, plain) }
}

/* a key pressed on run r's ringing call: its question's answer (first wins), its ladder's stop */
proctype key(byte r) {
end_unpressed:
  atomic {
    ringing[r] ->
    if
    :: r != P && OPEN(r) -> answered[r] = true
    :: else -> skip
    fi
  }
  atomic { owed[r] = true; acknowledge(KEYED, r, false) }
}

proctype runs() {
end_runs:
  do
  :: atomic { !reached[A] -> reached[A] = true }
  :: atomic { !reached[B] -> reached[B] = true }
  :: atomic { !reached[P] -> reached[P] = true }
  :: atomic { CLIMBS(A) && !called[A] -> called[A] = true; ringing[A] = true }
  :: atomic { CLIMBS(P) && !called[P] -> called[P] = true; ringing[P] = true }
  :: atomic { ringing[A] -> ringing[A] = false }
  :: atomic { ringing[P] -> ringing[P] = false }
  :: atomic { CLIMBS(A) && called[A] && !ringing[A] -> lad[A] = EXHAUSTED }
  :: atomic { CLIMBS(B) -> lad[B] = EXHAUSTED }
  :: atomic { CLIMBS(P) && called[P] && !ringing[P] -> lad[P] = EXHAUSTED }
  :: atomic { reached[A] && !over[A] -> over[A] = true }
  :: atomic { reached[B] && !over[B] -> over[B] = true }
  od
}

init {
  atomic {
    run runs();
    run text(A, false, false); run text(A, false, true); run text(B, false, false);
    run text(NONE, false, false); run text(NONE, true, false); run key(A); run key(P)
  }
  timeout ->
    assert(!owed[A] || lad[A] != CLIMBING);
    assert(!owed[B] || lad[B] != CLIMBING);
    assert(!owed[P] || lad[P] != CLIMBING)
}
