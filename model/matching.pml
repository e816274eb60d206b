/*
 * Matching a person's messages to their questions (docs/replies.md; crates/callbacks/src/replies/
 * mod.rs, `choose` and `take_answer`; lua/question_answer_take.lua). One person, two questions
 * Q0 and Q1, both open, each asked with its reply code. Four messages from the person, each
 * handled by a request of `serve` that may be cut at any step (serve killed, the request
 * timeout), after which Twilio may never post that message again:
 *   1. "K1 yes": Q0's code;
 *   2. "K1 yes" again, a new message: the person's answer to Q0 sent a second time because the
 *      first got no reply;
 *   3. "no, cancel that": no code; the person means Q0 or Q1 (drawn, unknown to ringback);
 *   4. "K2 no": Q1's code.
 * A handler: decide the message's question (by its code; without one, by `choose`), take the
 * question's answer claim (one claim per question: the first message to take it answers), record
 * the message with its match, then close the question as answered by it.
 *
 * The answer claim: a message claims the question before it is recorded. A claim held by
 * another message whose handler is alive is waited for (that request ends, one way or the
 * other). A claim held by a message that has no record and whose handler is gone (its last post
 * older than the grace period) is void: the message at hand takes it over
 * (question_answer_take.lua). CLAIM_AS_WRITTEN: a claim is never void, and a message that finds
 * its question claimed by another lands unmatched.
 *
 * A message without a code goes to the one question still open only when no other question to
 * that person is open or was answered within the codeless window (in this model, every answer
 * is within it); otherwise the person is asked back which one. CODELESS_AS_WRITTEN: it goes to
 * the only question still open, whatever was just answered.
 *
 * Properties:
 *   never another run's (assert, always): a message recorded as an answer answers the question
 *     its person meant;
 *   no lost answer (at the end): a question the person answered by a coded message that was
 *     recorded is answered.
 * Both as-written variants must fail: CLAIM_AS_WRITTEN loses message 2 (message 1's handler cut
 * after its claim, before its record: message 2 lands unmatched and Q0 is never answered);
 * CODELESS_AS_WRITTEN gives message 3 to Q1 after message 1 answered Q0 while the person meant
 * Q0.
 */

#ifndef MAXCRASH
#define MAXCRASH 2
#endif

#define NONE 0
#define ASKED_BACK 3
#define UNMATCHED 4

byte claim[2];     /* the message holding each question's answer claim (0: none) */
byte answer[2];    /* the message each question was answered by (0: open) */
byte rec[5];       /* message m's record: 0 none, 1 + q answers question q, ASKED_BACK, UNMATCHED */
bool alive[5];     /* message m's handler is alive */
byte meant3;       /* the question message 3 means */
byte crashes;

/* the question a coded message names */
#define CODED(m) (m == 4 -> 1 : 0)

/* a claim no record backs whose handler is gone: void (past the grace period) */
#ifdef CLAIM_AS_WRITTEN
#define VOID(q) false
#else
#define VOID(q) (claim[q] != 0 && !alive[claim[q]] && rec[claim[q]] == NONE)
#endif

/* the handler may be cut here: its request ends with no answer, and Twilio gives up */
inline cut() {
  if
  :: atomic { crashes < MAXCRASH -> crashes++; alive[m] = false; goto end }
  :: skip
  fi
}

proctype handler(byte m) {
  byte q;
  bool take;
  /* decide */
  if
  :: m != 3 -> q = CODED(m)
  :: else ->
    atomic {
      if
#ifdef CODELESS_AS_WRITTEN
      :: answer[0] == 0 && answer[1] == 0 -> rec[m] = ASKED_BACK
      :: answer[0] == 0 && answer[1] != 0 -> q = 0
      :: answer[0] != 0 && answer[1] == 0 -> q = 1
      :: answer[0] != 0 && answer[1] != 0 -> rec[m] = UNMATCHED
#else
      /* the other question is open or was just answered: asked back */
      :: true -> rec[m] = (answer[0] != 0 && answer[1] != 0 -> UNMATCHED : ASKED_BACK)
#endif
      fi
    }
    if
    :: rec[m] != NONE -> alive[m] = false; goto end
    :: else -> skip
    fi
  fi;
  /* take the answer claim: wait while another live handler holds it */
  atomic {
    (claim[q] == 0 || claim[q] == m || !alive[claim[q]]) ->
    if
    :: claim[q] == 0 || claim[q] == m || VOID(q) -> claim[q] = m; take = true
    :: else -> take = false
    fi
  }
  cut();
  /* record the message with its match */
  atomic {
    if
    :: take && answer[q] == 0 ->
      rec[m] = 1 + q;
      /* never another run's: the question answered is the one the person meant */
      assert(q == (m == 3 -> meant3 : CODED(m)))
    :: else -> rec[m] = UNMATCHED
    fi
  }
  cut();
  /* close the question as answered by it */
  atomic {
    if
    :: rec[m] == 1 + q -> answer[q] = m
    :: else -> skip
    fi;
    alive[m] = false
  }
end:
  skip
}

init {
  if
  :: meant3 = 0
  :: meant3 = 1
  fi;
  atomic {
    alive[1] = true; alive[4] = true;
    run handler(1); run handler(4)
  }
  /* the person writes again once message 1 got its reply, or got none */
  !alive[1];
  atomic { alive[2] = true; run handler(2) }
  /* and the codeless message, once their first answer to Q0 was handled */
  !alive[2];
  atomic { alive[3] = true; run handler(3) }
  _nr_pr == 1;
  /* serve's sweep finishes every recorded message whose handler was cut after its record */
  byte k;
  for (k : 1 .. 4) {
    if
    :: rec[k] == 1 && answer[0] == 0 -> answer[0] = k
    :: rec[k] == 2 && answer[1] == 0 -> answer[1] = k
    :: else -> skip
    fi
  }
  /* no lost answer: a recorded coded answer leaves its question answered */
  assert(!(rec[1] != NONE || rec[2] != NONE) || answer[0] != 0);
  assert(rec[4] == NONE || answer[1] != 0)
}
