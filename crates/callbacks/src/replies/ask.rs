//! Asking: a run's question fixed once before its first claim, open to its recipient, and
//! withdrawn when the run ends without a text.

use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_store::keys;

use super::{Question, Replies, code};
use crate::callback::CallbackRequest;

impl Replies {
    /// The questions open to `number` now.
    pub(super) async fn open_to(&self, number: &str, now: i64) -> Result<Vec<Question>, Error> {
        let mut open: Vec<Question> = self
            .questions_to(number)
            .await?
            .into_iter()
            .filter(|q| q.until > now && q.answered_by.is_none())
            .collect();
        open.sort_by_key(|q| std::cmp::Reverse(q.until));
        Ok(open)
    }

    /// Every question asked of `number` the person's hash still holds: open, answered or past
    /// its time (their codes stay taken, so a late reply naming one is never another's answer).
    /// One past its time by more than a record's life is gone from the hash here: its run's
    /// record is gone too, and a person asked every day would otherwise keep every code taken.
    pub(super) async fn questions_to(&self, number: &str) -> Result<Vec<Question>, Error> {
        let key = keys::open_questions(&self.claim_prefix, number);
        let all: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
            .arg(&key)
            .query_async(&mut self.conn())
            .await?;
        let gone_before = self.now() - self.record_ttl.as_millis() as i64;
        let mut kept = Vec::with_capacity(all.len());
        let mut gone = Vec::new();
        for (run_id, v) in all {
            match serde_json::from_str::<Question>(&v) {
                Ok(mut q) if q.until > gone_before => {
                    // a copy is judged by its question: answered by anyone, on any channel,
                    // or ended unanswered, it is closed for every person it was open to
                    if q.answered_by.is_none() {
                        q.answered_by = self
                            .reads
                            .question_of(&q.run_id)
                            .await?
                            .and_then(|canonical| canonical.answered_by);
                    }
                    kept.push(q)
                }
                _ => gone.push(run_id),
            }
        }
        if !gone.is_empty() {
            let removed: Result<(), _> = redis::cmd("HDEL")
                .arg(&key)
                .arg(&gone)
                .query_async(&mut self.conn())
                .await;
            if let Err(e) = removed {
                tracing::warn!(error = %e, "could not drop questions past their record's life");
            }
        }
        Ok(kept)
    }

    /// The run's question, fixed before its first claim, and `req` with the body it sends (the
    /// producer's body and, when shown, the code). Every attempt of the run gets the same code
    /// and body; each one that is about to send keeps the question open `replyWithin` from
    /// now, so a question held by quiet hours or retried later is open as long after the text
    /// that goes out as the producer asked.
    pub async fn ask(&self, req: &mut CallbackRequest) -> Result<Question, Error> {
        let Some(within) = req.expect_reply else {
            return Err(Error::Reply {
                script: "ask",
                detail: "not a question".into(),
            });
        };
        let within_ms = within.min(self.record_ttl).as_millis() as i64;
        let qkey = keys::question(&self.claim_prefix, &req.run_id);
        let existing: Option<String> = redis::cmd("GET")
            .arg(&qkey)
            .query_async(&mut self.conn())
            .await?;
        // the question is open until a time on Redis's clock, the one `serve` judges replies
        // by, never this worker's (hosts' clocks differ)
        self.read_clock().await?;
        let now = self.now();
        let question = match existing.and_then(|v| serde_json::from_str::<Question>(&v).ok()) {
            Some(mut q) => {
                if q.answered_by.is_none() && q.until < now + within_ms {
                    q.until = now + within_ms;
                    let _: Option<String> = redis::cmd("SET")
                        .arg(&qkey)
                        .arg(serde_json::to_string(&q).unwrap_or_default())
                        .arg("XX")
                        .arg("PX")
                        .arg(self.record_ttl.as_millis().max(1) as u64)
                        .query_async(&mut self.conn())
                        .await?;
                }
                q
            }
            None => {
                let others = |qs: &[Question], open_only: bool| -> Vec<String> {
                    qs.iter()
                        .filter(|q| q.run_id != req.run_id)
                        .filter(|q| !open_only || (q.until > now && q.answered_by.is_none()))
                        .map(|q| q.code.clone())
                        .collect()
                };
                // a code no kept question of the person has; with all 1,296 taken, one no open
                // question has (a late reply naming the old one then reaches this run)
                let free_code = |kept: &[Question]| {
                    code::fresh(&others(kept, false))
                        .or_else(|| code::fresh(&others(kept, true)))
                        .ok_or_else(|| Error::ReplyCodesTaken { to: mask(&req.to) })
                };
                let mut fresh = Question {
                    run_id: req.run_id.clone(),
                    code: free_code(&self.questions_to(&req.to).await?)?,
                    shown: false,
                    until: now + within_ms,
                    excerpt: excerpt(&req.body),
                    answered_by: None,
                };
                // open first, then look: of two questions to one person asked at the same
                // moment, at least the later to look sees the other and shows its code
                self.open(&req.to, &fresh).await?;
                let kept = self.questions_to(&req.to).await?;
                fresh.shown = !others(&kept, true).is_empty();
                if others(&kept, false)
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(&fresh.code))
                {
                    fresh.code = free_code(&kept)?;
                }
                // another attempt may have fixed it first: its question is the run's
                let json = serde_json::to_string(&fresh).unwrap_or_default();
                let stands = self.set_first(&qkey, &json, self.record_ttl).await?;
                serde_json::from_str(&stands).unwrap_or(fresh)
            }
        };
        if question.answered_by.is_none() {
            // when its time is over, unanswered, a `no-answer` job says so
            let _: () = redis::cmd("ZADD")
                .arg(keys::questions_due(&self.claim_prefix))
                .arg(question.until)
                .arg(&req.run_id)
                .query_async(&mut self.conn())
                .await?;
            self.open(&req.to, &question).await?;
            // an answer claimed while this attempt read the question: it stays closed
            let answered: Option<String> = redis::cmd("GET")
                .arg(keys::question_answered(&self.claim_prefix, &req.run_id))
                .query_async(&mut self.conn())
                .await?;
            if let Some(sid) = answered {
                self.close(&req.run_id, &req.to, &sid).await?;
            }
        }
        if question.shown {
            req.body.push_str(&code::suffix(&question.code));
        }
        Ok(question)
    }

    /// `q` among the questions open to `number`.
    pub(super) async fn open(&self, number: &str, q: &Question) -> Result<(), Error> {
        let open = keys::open_questions(&self.claim_prefix, number);
        let _: () = redis::pipe()
            .cmd("HSET")
            .arg(&open)
            .arg(&q.run_id)
            .arg(serde_json::to_string(q).unwrap_or_default())
            .ignore()
            .cmd("PEXPIRE")
            .arg(&open)
            .arg(self.record_ttl.as_millis().max(1) as u64)
            .ignore()
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// A ladder reached `number`, another person than the recipient, for `run_id`'s question:
    /// it is open to them too, at least `open_for` from now, so their text reply answers it as
    /// their keypad answer would (the first answer wins, whoever gives it). Not when another
    /// question of theirs has the same code: their replies could not tell the two apart (they
    /// still acknowledge the ladder). True when it is open to them.
    pub async fn share_question(
        &self,
        run_id: &str,
        number: &str,
        open_for: std::time::Duration,
    ) -> Result<bool, Error> {
        let Some(mut q) = self.reads.question_of(run_id).await? else {
            return Ok(false);
        };
        if q.answered_by.is_some() {
            return Ok(false);
        }
        let theirs = self.questions_to(number).await?;
        if theirs
            .iter()
            .any(|o| o.run_id != run_id && o.code.eq_ignore_ascii_case(&q.code))
        {
            return Ok(false);
        }
        q.until = q.until.max(self.now() + open_for.as_millis() as i64);
        self.open(number, &q).await?;
        Ok(true)
    }

    /// A question whose text was never sent (Twilio refused it) is closed: no reply answers it.
    pub async fn withdraw(&self, run_id: &str, to: &str) -> Result<(), Error> {
        let _: () = redis::cmd("HDEL")
            .arg(keys::open_questions(&self.claim_prefix, to))
            .arg(run_id)
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }
}

/// The first words of a question (up to 40 characters), for the "which one?" text.
fn excerpt(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= 40 {
        return one_line;
    }
    let cut: String = one_line.chars().take(39).collect();
    format!("{}…", cut.trim_end())
}
