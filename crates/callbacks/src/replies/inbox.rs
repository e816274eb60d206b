//! The inbox: an inbound message recorded once, its answer claimed once, its replies-queue job
//! added once, the question closed; and the sweep that finishes what a crash cut short.

use std::time::Duration;

use serde_json::json;

use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_store::keys;

use super::{
    Inbound, Match, PENDING_GRACE, REPLY_JOB_NAME, REPLY_JOB_OPTS, Received, Recorded, Replies,
    ReplyView, optouts,
};
use crate::callback::CALLBACK_JOB_OPTS;

impl Replies {
    /// `SET key value NX GET PX ttl`: the value that stands, `value` when this call set it (or
    /// a lost reply's earlier run of it did), the first writer's otherwise.
    pub(super) async fn set_first(
        &self,
        key: &str,
        value: &str,
        ttl: Duration,
    ) -> Result<String, Error> {
        let before: Option<String> = redis::cmd("SET")
            .arg(key)
            .arg(value)
            .arg("NX")
            .arg("GET")
            .arg("PX")
            .arg(ttl.as_millis().max(1) as u64)
            .query_async(&mut self.conn())
            .await?;
        Ok(before.unwrap_or_else(|| value.to_string()))
    }

    /// Take one inbound message: record it and its match once, then enqueue it once, keep it
    /// on its run's record, and ask which question it answers when that is not clear.
    pub async fn receive(&self, m: Inbound) -> Result<Received, Error> {
        let ikey = keys::inbound(&self.claim_prefix, &m.message_sid);
        // pending first: a crash after the record leaves it for the sweep. Scored by the latest
        // arrival (GT): the sweep waits out the grace period from the newest post, whose
        // handler may still be about to record it (kept from the first post, the sweep could
        // drop it as never recorded just before this handler records it and stops)
        let _: () = redis::cmd("ZADD")
            .arg(keys::inbound_pending(&self.claim_prefix))
            .arg("GT")
            .arg(m.received_at)
            .arg(&m.message_sid)
            .query_async(&mut self.conn())
            .await?;
        let existing: Option<String> = redis::cmd("GET")
            .arg(&ikey)
            .query_async(&mut self.conn())
            .await?;
        let (recorded, repeat) = match existing.and_then(|v| serde_json::from_str(&v).ok()) {
            Some(r) => (r, true),
            None => {
                let (matched, text) = self.decide(&m).await?;
                let mut m = m;
                if matches!(matched, Match::OptOut) && m.opt_out_type.is_none() {
                    m.opt_out_type = optouts::default_keyword(&m.text).map(str::to_string);
                }
                if self.forwarding && matched.forwarded() {
                    // scheduled before the record: a crash after it leaves the forward due
                    self.forwards
                        .schedule(
                            &m.message_sid,
                            m.received_at + PENDING_GRACE.as_millis() as i64,
                        )
                        .await?;
                } else {
                    m.form.clear();
                }
                if let Some(hook) = &self.before_record {
                    hook();
                }
                let fresh = Recorded {
                    inbound: m,
                    matched,
                    text,
                };
                let json = serde_json::to_string(&fresh).unwrap_or_default();
                let stands = self.set_first(&ikey, &json, self.retention).await?;
                // a concurrent arrival of the same message may have recorded it first
                match serde_json::from_str(&stands) {
                    Ok(first) if stands != json => (first, true),
                    _ => (fresh, false),
                }
            }
        };
        if let Some(hook) = &self.crash_after_record {
            hook();
        }
        let job_id = self.finish(&recorded).await?;
        // answered only once a failover cannot lose the record and its job: a short wait is
        // a 503, and Twilio posts the message again (a repeat, finished and waited for again)
        let once = keys::reply_enqueued(self.queue.keys(), &recorded.inbound.message_sid);
        let job = self.queue.keys().job(&job_id);
        self.conn()
            .confirm_durable(&[ikey.as_str(), job.as_str(), once.as_str()])
            .await?;
        Ok(Received {
            matched: recorded.matched,
            job_id,
            repeat,
        })
    }

    /// The steps after the record, each safe to repeat: the replies-queue job (once, by its
    /// marker), the run's record and its question, the unmatched list, the opt-out record, the
    /// "which one?" text; then the message leaves the pending set.
    pub(super) async fn finish(&self, r: &Recorded) -> Result<String, Error> {
        let m = &r.inbound;
        let data = json!({
            "runId": r.matched.run_id(),
            "text": r.text,
            "from": m.from,
            "to": m.to,
            "receivedAt": m.received_at,
            "messageSid": m.message_sid,
            "media": m.media,
            "matched": r.matched.label(),
            "code": match &r.matched { Match::Answer { code, .. } | Match::Late { code, .. } => Some(code.as_str()), _ => None },
            "ambiguous": match &r.matched { Match::Ambiguous { run_ids } => Some(run_ids), _ => None },
            "optOutType": m.opt_out_type,
        });
        let mut data = data;
        if let Match::Late { run_id, .. } = &r.matched {
            data["firstAnswer"] = self.first_answer(run_id).await?;
        }
        let once = keys::reply_enqueued(self.queue.keys(), &m.message_sid);
        let (job_id, _) = self
            .queue
            .add_job_once(
                Some(&m.message_sid),
                REPLY_JOB_NAME,
                &data.to_string(),
                REPLY_JOB_OPTS,
                &once,
                self.retention,
            )
            .await?;
        let view = ReplyView {
            message_sid: m.message_sid.clone(),
            from: mask(&m.from),
            text: r.text.clone(),
            media: m.media.clone(),
            received_at: m.received_at,
            matched: r.matched.label().into(),
            run_id: r.matched.run_id().map(str::to_string),
            job_id: Some(job_id.clone()),
        };
        let view_json = serde_json::to_string(&view).unwrap_or_default();
        match &r.matched {
            Match::Answer { run_id, .. } | Match::Late { run_id, .. } => {
                let replies = keys::run_replies(&self.claim_prefix, run_id);
                let _: () = redis::pipe()
                    .cmd("HSET")
                    .arg(&replies)
                    .arg(&m.message_sid)
                    .arg(&view_json)
                    .ignore()
                    .cmd("PEXPIRE")
                    .arg(&replies)
                    .arg(self.record_ttl.as_millis().max(1) as u64)
                    .ignore()
                    .query_async(&mut self.conn())
                    .await?;
                if matches!(r.matched, Match::Answer { .. }) {
                    self.close(run_id, &m.from, &m.message_sid).await?;
                }
            }
            Match::Ambiguous { run_ids } => {
                self.keep_unmatched(&view_json, m.received_at).await?;
                self.ask_which(m, run_ids).await?;
            }
            Match::OptOut => {
                self.keep_unmatched(&view_json, m.received_at).await?;
                let how = m.opt_out_type.as_deref().unwrap_or_default();
                for sender in [Some(&m.to), m.messaging_service_sid.as_ref()]
                    .into_iter()
                    .flatten()
                {
                    match how.to_ascii_uppercase().as_str() {
                        "STOP" => self.opt_outs.record(sender, &m.from, "STOP").await?,
                        "START" => self.opt_outs.clear(sender, &m.from).await?,
                        _ => {}
                    }
                }
            }
            Match::Unmatched => self.keep_unmatched(&view_json, m.received_at).await?,
        }
        self.acknowledge(&r.matched, &m.from).await?;
        let _: () = redis::cmd("ZREM")
            .arg(keys::inbound_pending(&self.claim_prefix))
            .arg(&m.message_sid)
            .query_async(&mut self.conn())
            .await?;
        Ok(job_id)
    }

    pub(super) async fn keep_unmatched(&self, view: &str, at: i64) -> Result<(), Error> {
        let key = keys::inbound_unmatched(&self.claim_prefix);
        let _: () = redis::pipe()
            .cmd("ZADD")
            .arg(&key)
            .arg(at)
            .arg(view)
            .ignore()
            .cmd("ZREMRANGEBYSCORE")
            .arg(&key)
            .arg("-inf")
            .arg(self.now() - self.retention.as_millis() as i64)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// Ask the person once which question a message answers: a callback of its own run,
    /// `reply:<MessageSid>`, texted through the window like any other.
    pub(super) async fn ask_which(&self, m: &Inbound, run_ids: &[String]) -> Result<(), Error> {
        let mut lines = Vec::new();
        for run_id in run_ids.iter().take(5) {
            if let Some(q) = self.reads.question_of(run_id).await? {
                lines.push(format!("{} for \"{}\"", q.code, q.excerpt));
            }
        }
        let body = format!(
            "Your reply could answer {} questions. Send it again starting with the code of the one it answers: {}.",
            run_ids.len(),
            lines.join("; ")
        );
        let run_id = format!("reply:{}", m.message_sid);
        let sender = m.messaging_service_sid.as_deref().unwrap_or(&m.to);
        // an answer to a person who has just written: never held by quiet hours
        let data =
            json!({"runId": run_id, "to": m.from, "body": body, "from": sender, "urgent": true});
        self.callbacks
            .add_job(
                Some(&run_id),
                &self.callback_job_name,
                &data.to_string(),
                CALLBACK_JOB_OPTS,
            )
            .await?;
        Ok(())
    }

    /// `serve`'s sweep: finish every message recorded more than [`PENDING_GRACE`] ago whose
    /// steps were cut short (a crash, a Redis error); forget one that was never recorded. A
    /// message that fails to finish stays pending and the others are finished; a lost Redis
    /// stops the batch. Returns how many it finished.
    pub async fn finish_pending(&self) -> Result<usize, Error> {
        let pending = keys::inbound_pending(&self.claim_prefix);
        let sids = self
            .due_members(&pending, self.now() - PENDING_GRACE.as_millis() as i64, 100)
            .await?;
        let mut done = 0;
        for sid in sids {
            let v: Option<String> = redis::cmd("GET")
                .arg(keys::inbound(&self.claim_prefix, &sid))
                .query_async(&mut self.conn())
                .await?;
            match v.and_then(|v| serde_json::from_str::<Recorded>(&v).ok()) {
                Some(r) => match self.finish(&r).await {
                    Ok(_) => done += 1,
                    // Redis is gone: the rest would fail alike; the next sweep goes on
                    Err(e) if e.is_transient() => return Err(e),
                    // this message alone: it stays pending for the next sweep, the others go on
                    Err(e) => {
                        tracing::warn!(message_sid = %sid, error = %e, "could not finish an inbound message; the next sweep tries again");
                    }
                },
                None => {
                    let _: () = redis::cmd("ZREM")
                        .arg(&pending)
                        .arg(&sid)
                        .query_async(&mut self.conn())
                        .await?;
                }
            }
        }
        Ok(done)
    }
}
