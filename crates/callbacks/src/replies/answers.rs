//! Answers: one answer per question, whoever gives it and however (a text, a key, or its
//! `no-answer` when nobody did): one claim shared by every person the question is open to,
//! each claim backed by a record kept before it, so none is ever taken for void; a second answer
//! is a late reply naming the first. And what a message acknowledges: its own run's ladder.

use serde_json::json;

use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_store::keys;

use super::{Inbound, Match, PENDING_GRACE, REPLY_JOB_NAME, REPLY_JOB_OPTS, Recorded, Replies};

/// How a key pressed on a call names itself where a message names its MessageSid: its answer
/// claim, its record and its replies-queue job are `call:<CallSid>`.
pub(super) const KEYPAD_CLAIM: &str = "call:";

/// The answer claim of a question that ended unanswered (`no-answer:<runId>`): once it stands,
/// every later answer is late.
pub(super) const NO_ANSWER_CLAIM: &str = "no-answer:";

/// Where a question's answer claim stands for a key or a `no-answer` that asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claimed {
    /// It is this one's: the question's answer.
    Ours,
    /// Another answer, recorded, came first: this one is late.
    Another,
    /// Another message claimed it and may still be recorded: look again later.
    Unsettled,
}

impl Replies {
    /// Claim `run_id`'s question as answered by `sid` (`SET NX`): the MessageSid that stands,
    /// another's when that message answered it first. A question closes at its first answer even
    /// when two messages are decided at the same moment, or one was recorded and cut short
    /// before it closed the question.
    pub(super) async fn claim_answer(&self, run_id: &str, sid: &str) -> Result<String, Error> {
        let key = keys::question_answered(&self.claim_prefix, run_id);
        self.set_first(&key, sid, self.record_ttl).await
    }

    /// Whether message `sid` has no record and its handler can no longer make one: its last
    /// post is older than [`PENDING_GRACE`] (which outlasts a request's timeout), or the sweep
    /// already dropped it as never recorded.
    pub(super) async fn never_recorded(&self, sid: &str) -> Result<bool, Error> {
        // a key pressed on a call and a question's `no-answer` claim the answer only once they
        // are kept (the key's pending entry and record come first): never void
        if sid.starts_with(KEYPAD_CLAIM) || sid.starts_with(NO_ANSWER_CLAIM) {
            return Ok(false);
        }
        let recorded: bool = redis::cmd("EXISTS")
            .arg(keys::inbound(&self.claim_prefix, sid))
            .query_async(&mut self.conn())
            .await?;
        if recorded {
            return Ok(false);
        }
        self.read_clock().await?;
        let last_post: Option<f64> = redis::cmd("ZSCORE")
            .arg(keys::inbound_pending(&self.claim_prefix))
            .arg(sid)
            .query_async(&mut self.conn())
            .await?;
        let cut = self.now() - PENDING_GRACE.as_millis() as i64;
        Ok(last_post.is_none_or(|at| at as i64 <= cut))
    }

    /// `run_id`'s answer claim handed from `void` (a message [`never_recorded`](Self::never_recorded))
    /// to `sid`, if it still names `void`: the message the claim names after the call (`None`:
    /// the claim is gone).
    pub(super) async fn take_answer(
        &self,
        run_id: &str,
        void: &str,
        sid: &str,
    ) -> Result<Option<String>, Error> {
        Ok(ringback_store::scripts::scripts()
            .question_answer_take
            .call()
            .key(
                "the question's answer claim",
                keys::question_answered(&self.claim_prefix, run_id),
            )
            .arg("the MessageSid the claim must still name", void)
            .arg("the MessageSid taking it over", sid)
            .arg("the claim's TTL (ms)", self.record_ttl.as_millis().max(1))
            .run(
                &mut self.conn(),
                &ringback_store::scripts::RoundTrips::default(),
            )
            .await?)
    }

    /// What a message acknowledges (the table in `docs/ladder.md`): an answer, its own run's
    /// ladder alone; a message that answers no question (no question is open to the sender),
    /// the one ladder still climbing that reached them, when it is a plain callback's; a late
    /// reply, an ambiguous one and an opt-out, none. Calls still ringing are left for a worker
    /// to end.
    pub(super) async fn acknowledge(&self, matched: &Match, from: &str) -> Result<(), Error> {
        let run = match matched {
            Match::Answer { run_id, .. } => Some(run_id.clone()),
            Match::Unmatched => self.only_plain_ladder_reaching(from).await?,
            Match::Late { .. } | Match::Ambiguous { .. } | Match::OptOut => None,
        };
        let Some(run) = run else {
            return Ok(());
        };
        let ack = self
            .ladders
            .ack(&run, crate::ladder::record::Channel::Reply, &mask(from))
            .await?;
        if let crate::ladder::record::Ack::Stopped(ringing) = ack {
            ringback_shared::telemetry::global().ladder_step("ladder", "acknowledged");
            tracing::info!(run_id = %run, "a reply acknowledged the ladder; it stops");
            self.ladders.hang_up_later(&ringing).await?;
        }
        Ok(())
    }

    /// The run of the one ladder still climbing that reached `from`, when there is exactly one
    /// and it is a plain callback's (a question's ladder is acknowledged by its answer).
    async fn only_plain_ladder_reaching(&self, from: &str) -> Result<Option<String>, Error> {
        let mut climbing = vec![];
        for run in self.ladders.runs_reaching(from).await? {
            let record = self.ladders.read(&run).await?;
            if record.get("state").is_some_and(|s| s == "climbing") {
                let question = record.get("question").is_some_and(|q| q == "1");
                climbing.push((run, question));
            }
        }
        Ok(match climbing.as_slice() {
            [(run, false)] => Some(run.clone()),
            _ => None,
        })
    }

    /// Who answered `run_id`'s question first, for a late reply: the answer's id, its sender
    /// (masked) and channel; `null` when the question is unanswered or ended unanswered.
    pub(super) async fn first_answer(&self, run_id: &str) -> Result<serde_json::Value, Error> {
        let Some(sid) = self
            .reads
            .question_of(run_id)
            .await?
            .and_then(|q| q.answered_by)
        else {
            return Ok(serde_json::Value::Null);
        };
        if sid.starts_with(NO_ANSWER_CLAIM) {
            return Ok(json!({"matched": "no-answer"}));
        }
        let recorded: Option<String> = redis::cmd("GET")
            .arg(keys::inbound(&self.claim_prefix, &sid))
            .query_async(&mut self.conn())
            .await?;
        let by = recorded.and_then(|v| serde_json::from_str::<Recorded>(&v).ok());
        let via = if sid.starts_with(KEYPAD_CLAIM) {
            "call"
        } else {
            "sms"
        };
        Ok(json!({
            "id": sid,
            "via": via,
            "from": by.as_ref().map(|r| mask(&r.inbound.from)),
            "receivedAt": by.as_ref().map(|r| r.inbound.received_at),
        }))
    }

    /// The questions whose time is over, unanswered, and whose ladder (if any) no longer
    /// climbs: one `no-answer` job each ([`Replies::no_answer`]). A question answered, or
    /// asked again later, leaves the schedule; one whose ladder climbs waits for it. The
    /// questions looked at.
    pub async fn sweep_unanswered(&self, now: i64) -> Result<usize, Error> {
        let key = keys::questions_due(&self.claim_prefix);
        let due = self.due_members(&key, now, 50).await?;
        for run in &due {
            let later = match self.reads.question_of(run).await? {
                Some(q) if q.answered_by.is_none() && q.until > now => Some(q.until),
                Some(q) if q.answered_by.is_none() => {
                    let ladder = self.ladders.read(run).await?;
                    if ladder.get("state").is_some_and(|s| s == "climbing") {
                        Some(now + 30_000)
                    } else if self.no_answer(run, None, 0).await? {
                        None
                    } else {
                        Some(now + PENDING_GRACE.as_millis() as i64)
                    }
                }
                _ => None,
            };
            let cmd = match later {
                Some(at) => redis::cmd("ZADD").arg(&key).arg(at).arg(run).clone(),
                None => redis::cmd("ZREM").arg(&key).arg(run).clone(),
            };
            let _: () = cmd.query_async(&mut self.conn()).await?;
        }
        Ok(due.len())
    }

    /// A question's ladder ran out and its `replyWithin` is over, unanswered (or it had no
    /// ladder): one `no-answer` job on the replies queue (once, whoever adds it and however
    /// often). It claims the question's answer as any answer does, after the keys pressed on
    /// the run's calls that are kept and not yet finished: an answer that came first stands,
    /// and every answer after it is late. False when it must look again later (a kept key, or
    /// a message that claimed the answer and may still be recorded).
    pub async fn no_answer(
        &self,
        run_id: &str,
        recipient: Option<&str>,
        steps: usize,
    ) -> Result<bool, Error> {
        let id = format!("{NO_ANSWER_CLAIM}{run_id}");
        if self.keys_kept_for(run_id).await? {
            return Ok(false);
        }
        match self.claim_settled(run_id, &id).await? {
            Claimed::Ours => {}
            Claimed::Another => {
                tracing::info!(%run_id, "question answered before its no-answer; none added");
                return Ok(true);
            }
            Claimed::Unsettled => return Ok(false),
        }
        let data = json!({
            "runId": run_id, "matched": "no-answer", "to": recipient.map(mask), "steps": steps,
            "meaning": if steps > 0 {
                "nobody answered the question: its text, its calls and the next people's texts and calls went unanswered, and its time is over"
            } else {
                "nobody answered the question within its replyWithin"
            },
        });
        self.queue
            .add_job_once(
                Some(&id),
                REPLY_JOB_NAME,
                &data.to_string(),
                REPLY_JOB_OPTS,
                &keys::reply_enqueued(self.queue.keys(), &id),
                self.retention,
            )
            .await?;
        self.close_everywhere(run_id, &id).await?;
        tracing::info!(%run_id, "question unanswered: no-answer job added");
        Ok(true)
    }

    /// Claim `run_id`'s answer for `sid` (a key or a `no-answer`, each kept before it claims):
    /// a claim left void by a message never recorded is taken over; one held by a message
    /// still within its grace period is left to settle.
    pub(super) async fn claim_settled(&self, run_id: &str, sid: &str) -> Result<Claimed, Error> {
        let mut holder = self.claim_answer(run_id, sid).await?;
        if holder != sid && self.never_recorded(&holder).await? {
            holder = match self.take_answer(run_id, &holder, sid).await? {
                Some(now_holding) => now_holding,
                // the claim expired meanwhile: claim it afresh
                None => self.claim_answer(run_id, sid).await?,
            };
        }
        Ok(if holder == sid {
            Claimed::Ours
        } else if self.recorded(&holder).await? {
            Claimed::Another
        } else {
            Claimed::Unsettled
        })
    }

    /// Whether answer claim `sid` is backed by its record (a key and a `no-answer` always are).
    pub(super) async fn recorded(&self, sid: &str) -> Result<bool, Error> {
        if sid.starts_with(KEYPAD_CLAIM) || sid.starts_with(NO_ANSWER_CLAIM) {
            return Ok(true);
        }
        Ok(redis::cmd("EXISTS")
            .arg(keys::inbound(&self.claim_prefix, sid))
            .query_async(&mut self.conn())
            .await?)
    }

    /// Whether a key pressed on one of `run_id`'s calls is kept and not yet finished.
    async fn keys_kept_for(&self, run_id: &str) -> Result<bool, Error> {
        let kept = self
            .due_members(&keys::keypad_pending(&self.claim_prefix), i64::MAX, 1000)
            .await?;
        Ok(kept.iter().any(|k| {
            serde_json::from_str::<super::keypad::Keypad>(k).is_ok_and(|k| k.run_id == run_id)
        }))
    }

    /// A key pressed on a ladder's call answers `run_id`'s question as `choice` (the first
    /// answer wins, by text or keypad): one `agent-reply` job (`via: "call"`), and the
    /// question closes. The key is recorded before it claims the answer, as a text is, so no
    /// later message can take its claim for void. A key after another answer is a `late` reply
    /// (one job, the same id). While another message's claim may still be recorded, nothing
    /// is decided: the kept key is finished later.
    pub async fn keypad_answer(
        &self,
        run_id: &str,
        call_sid: &str,
        choice: &str,
        digits: &str,
        from: &str,
    ) -> Result<Claimed, Error> {
        let sid = format!("{KEYPAD_CLAIM}{call_sid}");
        let code = self
            .reads
            .question_of(run_id)
            .await?
            .map(|q| q.code)
            .unwrap_or_default();
        let record = Recorded {
            inbound: Inbound {
                message_sid: sid.clone(),
                from: from.to_string(),
                to: String::new(),
                text: choice.to_string(),
                media: vec![],
                messaging_service_sid: None,
                opt_out_type: None,
                received_at: self.now(),
                form: vec![],
            },
            matched: Match::Answer {
                run_id: run_id.to_string(),
                code: code.clone(),
            },
            text: choice.to_string(),
        };
        let ikey = keys::inbound(&self.claim_prefix, &sid);
        let stands = self
            .set_first(
                &ikey,
                &serde_json::to_string(&record).unwrap_or_default(),
                self.retention,
            )
            .await?;
        let received_at = serde_json::from_str::<Recorded>(&stands)
            .map_or(record.inbound.received_at, |r| r.inbound.received_at);
        let claimed = self.claim_settled(run_id, &sid).await?;
        if claimed == Claimed::Unsettled {
            return Ok(claimed);
        }
        let first = claimed == Claimed::Ours;
        let mut data = json!({
            "runId": run_id, "text": choice, "digits": digits, "from": from,
            "matched": if first { "answer" } else { "late" },
            "via": "call", "callSid": call_sid, "receivedAt": received_at,
        });
        if !first {
            data["code"] = json!(code);
            data["firstAnswer"] = self.first_answer(run_id).await?;
        }
        self.queue
            .add_job_once(
                Some(&sid),
                REPLY_JOB_NAME,
                &data.to_string(),
                REPLY_JOB_OPTS,
                &keys::reply_enqueued(self.queue.keys(), &sid),
                self.retention,
            )
            .await?;
        if first {
            self.close(run_id, from, &sid).await?;
        }
        let job = self.queue.keys().job(&sid);
        let once = keys::reply_enqueued(self.queue.keys(), &sid);
        self.conn()
            .confirm_durable(&[ikey.as_str(), job.as_str(), once.as_str()])
            .await?;
        Ok(claimed)
    }

    /// The question is answered: no longer open, its code still taken for the person.
    pub(super) async fn close(&self, run_id: &str, from: &str, sid: &str) -> Result<(), Error> {
        self.close_everywhere(run_id, sid).await?;
        if let Some(q) = self.reads.question_of(run_id).await? {
            self.open(from, &q).await?;
        }
        Ok(())
    }

    /// The question ended (`sid`: its answer, or its `no-answer`): closed for every person it
    /// is open to, as each person's copy is judged by the question itself.
    pub(super) async fn close_everywhere(&self, run_id: &str, sid: &str) -> Result<(), Error> {
        let qkey = keys::question(&self.claim_prefix, run_id);
        if let Some(mut q) = self.reads.question_of(run_id).await?
            && q.answered_by.is_none()
        {
            q.answered_by = Some(sid.to_string());
            let _: Option<String> = redis::cmd("SET")
                .arg(&qkey)
                .arg(serde_json::to_string(&q).unwrap_or_default())
                .arg("XX")
                .arg("KEEPTTL")
                .query_async(&mut self.conn())
                .await?;
        }
        Ok(())
    }
}
