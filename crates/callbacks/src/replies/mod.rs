//! Replies: the human answers back. A callback whose job says `"expectReply": true` is a
//! question, open to its recipient for `"replyWithin"`. Twilio posts each message the human
//! sends to `serve`'s inbound webhook; it is matched to the question it answers and lands once
//! as a job in the replies queue, whatever Twilio's retries and whatever crashes in between.
//!
//! - **Asking** ([`Replies::ask`], in the worker before the run's first claim): the question
//!   and its reply code are fixed once per run (`SET NX`), so every attempt sends the same
//!   body; the code is shown only when other questions are open to the same person.
//! - **Matching**: a reply that starts with an open question's code answers it; without a code,
//!   the one open question; with several open, it is ambiguous, and the person is asked which
//!   once, through the window (a run of its own, `reply:<MessageSid>`). A question closes on
//!   its first answer.
//! - **Exactly once**: the first arrival records the message and its match
//!   (`ringback:inbound:…`, `SET NX`, kept for the retention); then one script adds the
//!   replies-queue job and sets a per-MessageSid marker in the queue's slot, so no retry, sweep
//!   or restart adds it twice, even after the job was removed; then the run's record keeps the
//!   reply. A message recorded whose later steps were cut short stays in a pending set that
//!   `serve`'s sweep finishes ([`Replies::finish_pending`]).
//! - **Forwarding** ([`forwards`]): a message that answers no question goes on, at least once,
//!   to whatever handled the number's inbound messages before.

pub mod code;
pub mod forwards;
pub mod optouts;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::callback::{CALLBACK_JOB_OPTS, CallbackRequest};
use ringback_queue::commands::Commands;
use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_store::connection::Conn;
use ringback_store::keys;

/// The name of a replies-queue job.
pub const REPLY_JOB_NAME: &str = "agent-reply";

/// Options of a replies-queue job: retried as a callback is, the last 10,000 kept.
pub const REPLY_JOB_OPTS: &str = r#"{"attempts":5,"backoff":{"type":"exponential","delay":1000},"removeOnComplete":{"count":10000},"removeOnFail":{"count":10000}}"#;

/// How long a recorded message waits before the sweep finishes it (its own request is then
/// long over).
pub const PENDING_GRACE: Duration = Duration::from_secs(15);

/// How long after another question to the same person was answered or closed a message
/// without a code is asked back instead of answering the one question still open: a person
/// who writes "no, wait" minutes after an answer may mean the earlier question.
pub const CODELESS_WINDOW: Duration = Duration::from_secs(600);

/// How long inbound messages, their markers and the unmatched ones are kept by default.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 86_400);

/// The question a run asks, fixed before its first claim.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Question {
    pub run_id: String,
    pub code: String,
    /// Whether the text shows the code (other questions were open to the person).
    pub shown: bool,
    /// Open until (ms).
    pub until: i64,
    /// The first words of the question, for the "which one?" text.
    pub excerpt: String,
    /// The first reply's MessageSid once answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

/// A media attachment of an inbound message (Twilio keeps the file; ringback the link).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Media {
    pub url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// An inbound message as Twilio posted it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Inbound {
    pub message_sid: String,
    pub from: String,
    /// The number (or sender) the person wrote to.
    pub to: String,
    pub text: String,
    pub media: Vec<Media>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_service_sid: Option<String>,
    /// Advanced Opt-Out's `OptOutType` (`STOP`, `START`, `HELP`), or the one Twilio's default
    /// handling gives its keyword alone in the message ([`optouts::default_keyword`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_type: Option<String>,
    pub received_at: i64,
    /// The whole form Twilio posted, kept only for a message to forward (it is forwarded as
    /// Twilio sent it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub form: Vec<(String, String)>,
}

/// What a message was matched to.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Match {
    /// It answers this run's question.
    Answer { run_id: String, code: String },
    /// It names the code of a question already answered or past its time: it reaches that
    /// run, as a reply that is not its answer.
    Late { run_id: String, code: String },
    /// Several questions are open and it names none of them.
    Ambiguous { run_ids: Vec<String> },
    /// An opt-out keyword Twilio handled (never an answer).
    OptOut,
    /// No open question to this person.
    Unmatched,
}

impl Match {
    pub fn label(&self) -> &'static str {
        match self {
            Match::Answer { .. } => "answer",
            Match::Late { .. } => "late",
            Match::Ambiguous { .. } => "ambiguous",
            Match::OptOut => "opt_out",
            Match::Unmatched => "unmatched",
        }
    }

    /// Whether a message of this match goes on to the forward URL: it answers no question
    /// (an ambiguous one is asked back instead).
    pub fn forwarded(&self) -> bool {
        matches!(self, Match::Unmatched | Match::OptOut)
    }

    fn run_id(&self) -> Option<&str> {
        match self {
            Match::Answer { run_id, .. } | Match::Late { run_id, .. } => Some(run_id),
            _ => None,
        }
    }
}

/// A message as recorded at its first arrival: the match is decided once.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Recorded {
    pub inbound: Inbound,
    pub matched: Match,
    /// The answer's text without its code.
    pub text: String,
}

/// A reply as the run's record, the API and the console show it (the sender masked).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReplyView {
    pub message_sid: String,
    pub from: String,
    pub text: String,
    pub media: Vec<Media>,
    pub received_at: i64,
    pub matched: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The replies-queue job that carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

/// What [`Replies::receive`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub matched: Match,
    /// The replies-queue job id.
    pub job_id: String,
    /// A repeat of a message already recorded (Twilio's retry).
    pub repeat: bool,
}

/// A crash hook between recording a message and enqueuing it (drills only).
pub type CrashHook = std::sync::Arc<dyn Fn() + Send + Sync>;

#[derive(Clone)]
pub struct Replies {
    conn: Conn,
    claim_prefix: String,
    /// How long a question may stay open: the run's record life.
    record_ttl: Duration,
    retention: Duration,
    /// The replies queue.
    pub queue: Commands,
    /// The callback queue (the "which one?" texts) and its job name.
    callbacks: Commands,
    callback_job_name: String,
    pub opt_outs: optouts::OptOuts,
    /// The messages still to forward.
    pub forwards: forwards::Forwards,
    /// Whether messages that answer no question are forwarded (a forward URL is set).
    forwarding: bool,
    before_record: Option<CrashHook>,
    crash_after_record: Option<CrashHook>,
    /// Redis's clock less this process's (ms), as last read: the pending set's scores and the
    /// sweep's cut are on Redis's clock, so replicas of `serve` whose clocks disagree by more
    /// than the grace period never sweep each other's messages early.
    clock_offset: Arc<AtomicI64>,
}

impl Replies {
    pub fn new(
        conn: Conn,
        claim_prefix: &str,
        record_ttl: Duration,
        retention: Duration,
        queue: Commands,
        callbacks: Commands,
        callback_job_name: &str,
    ) -> Self {
        Self {
            opt_outs: optouts::OptOuts::new(conn.clone(), claim_prefix),
            forwards: forwards::Forwards::new(conn.clone(), claim_prefix),
            forwarding: false,
            before_record: None,
            conn,
            claim_prefix: claim_prefix.into(),
            record_ttl,
            retention,
            queue,
            callbacks,
            callback_job_name: callback_job_name.into(),
            crash_after_record: None,
            clock_offset: Arc::default(),
        }
    }

    /// Now on Redis's clock, as last read by [`Replies::read_clock`] (ms).
    pub fn now(&self) -> i64 {
        now_ms() + self.clock_offset.load(Ordering::Relaxed)
    }

    /// Read Redis's clock (`TIME`), for [`Replies::now`]. `serve`'s sweep reads it every round.
    pub async fn read_clock(&self) -> Result<(), Error> {
        let before = now_ms();
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut self.conn()).await?;
        let after = now_ms();
        let redis_now = secs * 1000 + micros / 1000;
        self.clock_offset
            .store(redis_now - (before + after) / 2, Ordering::Relaxed);
        Ok(())
    }

    /// Forward the messages that answer no question (`serve` with a forward URL).
    pub fn with_forwarding(mut self, on: bool) -> Self {
        self.forwarding = on;
        self
    }

    /// Drills and tests: call `hook` right before a message's first arrival is recorded (its
    /// pending entry and forward schedule already written).
    pub fn with_hook_before_record(mut self, hook: CrashHook) -> Self {
        self.before_record = Some(hook);
        self
    }

    /// Drills: call `hook` right after a message is recorded, before it is enqueued.
    pub fn with_crash_after_record(mut self, hook: CrashHook) -> Self {
        self.crash_after_record = Some(hook);
        self
    }

    fn conn(&self) -> Conn {
        self.conn.clone()
    }

    /// The questions open to `number` now.
    async fn open_to(&self, number: &str, now: i64) -> Result<Vec<Question>, Error> {
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
    async fn questions_to(&self, number: &str) -> Result<Vec<Question>, Error> {
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
                Ok(q) if q.until > gone_before => kept.push(q),
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
    async fn open(&self, number: &str, q: &Question) -> Result<(), Error> {
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

    /// A question whose text was never sent (Twilio refused it) is closed: no reply answers it.
    pub async fn withdraw(&self, run_id: &str, to: &str) -> Result<(), Error> {
        let _: () = redis::cmd("HDEL")
            .arg(keys::open_questions(&self.claim_prefix, to))
            .arg(run_id)
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// The run's question, if it asked one.
    pub async fn question_of(&self, run_id: &str) -> Result<Option<Question>, Error> {
        let v: Option<String> = redis::cmd("GET")
            .arg(keys::question(&self.claim_prefix, run_id))
            .query_async(&mut self.conn())
            .await?;
        Ok(v.and_then(|v| serde_json::from_str(&v).ok()))
    }

    /// The replies the run received, oldest first.
    pub async fn replies_of(&self, run_id: &str) -> Result<Vec<ReplyView>, Error> {
        let values: Vec<String> = redis::cmd("HVALS")
            .arg(keys::run_replies(&self.claim_prefix, run_id))
            .query_async(&mut self.conn())
            .await?;
        let mut all: Vec<ReplyView> = values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect();
        all.sort_by_key(|r| r.received_at);
        Ok(all)
    }

    /// The newest messages that answered no question (masked), at most `limit`.
    pub async fn unmatched(&self, limit: usize) -> Result<Vec<ReplyView>, Error> {
        let values: Vec<String> = redis::cmd("ZREVRANGE")
            .arg(keys::inbound_unmatched(&self.claim_prefix))
            .arg(0)
            .arg(limit.saturating_sub(1))
            .query_async(&mut self.conn())
            .await?;
        Ok(values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }

    /// Decide what a new message answers.
    async fn decide(&self, m: &Inbound) -> Result<(Match, String), Error> {
        // Twilio's keyword, reported (Advanced Opt-Out) or alone in the message (Twilio's default
        // handling acts on it whatever ringback does): never an answer, never asked back
        if m.opt_out_type.is_some() || optouts::default_keyword(&m.text).is_some() {
            return Ok((Match::OptOut, m.text.clone()));
        }
        // questions another message claimed as their answer while this one was being decided
        let mut taken: Vec<String> = vec![];
        loop {
            let (matched, text, closed) = self.choose(m, &taken).await?;
            match &matched {
                Match::Answer { run_id, .. } => {
                    let mut holder = self.claim_answer(run_id, &m.message_sid).await?;
                    // a claim whose message was never recorded and never will be (its handler
                    // was cut between the two) is void: the person's real answer answers
                    if holder != m.message_sid && self.never_recorded(&holder).await? {
                        match self.take_answer(run_id, &holder, &m.message_sid).await? {
                            Some(now_holding) => holder = now_holding,
                            // the claim expired meanwhile: claim it afresh
                            None => continue,
                        }
                    }
                    if holder != m.message_sid {
                        self.close(run_id, &m.from, &holder).await?;
                        taken.push(run_id.clone());
                        continue;
                    }
                }
                // a question another message claimed stays closed, also when that message was
                // cut short before it closed it, while it may still be recorded: never asked
                // about (a claim no record will ever back is void: the question stays open)
                Match::Ambiguous { run_ids } => {
                    let mut claimed = false;
                    for run_id in run_ids {
                        // a question already closed is named in the ask-back on purpose (the
                        // message may be about it): only an open one claimed meanwhile is news
                        if closed.contains(run_id) {
                            continue;
                        }
                        let holder: Option<String> = redis::cmd("GET")
                            .arg(keys::question_answered(&self.claim_prefix, run_id))
                            .query_async(&mut self.conn())
                            .await?;
                        if let Some(holder) = holder.filter(|h| *h != m.message_sid) {
                            // a void claim (never recorded, never will be) leaves it open
                            if self.never_recorded(&holder).await? {
                                continue;
                            }
                            self.close(run_id, &m.from, &holder).await?;
                            taken.push(run_id.clone());
                            claimed = true;
                        }
                    }
                    if claimed {
                        continue;
                    }
                }
                _ => {}
            }
            return Ok((matched, text));
        }
    }

    /// What `m` answers among the questions open to its sender, `taken` left out; and the
    /// questions already closed that an ask-back names on purpose ([`CODELESS_WINDOW`]).
    async fn choose(
        &self,
        m: &Inbound,
        taken: &[String],
    ) -> Result<(Match, String, Vec<String>), Error> {
        let open: Vec<Question> = self
            .open_to(&m.from, m.received_at)
            .await?
            .into_iter()
            .filter(|q| !taken.contains(&q.run_id))
            .collect();
        if let Some((c, rest)) = code::split(&m.text) {
            if let Some(q) = open.iter().find(|q| q.code == c) {
                return Ok((
                    Match::Answer {
                        run_id: q.run_id.clone(),
                        code: q.code.clone(),
                    },
                    rest.to_string(),
                    vec![],
                ));
            }
            // the code of a question already answered or past its time: a late reply to that
            // run, never the answer to another
            if let Some(q) = self
                .questions_to(&m.from)
                .await?
                .into_iter()
                .find(|q| q.code == c)
            {
                return Ok((
                    Match::Late {
                        run_id: q.run_id,
                        code: q.code,
                    },
                    rest.to_string(),
                    vec![],
                ));
            }
        }
        Ok(match open.as_slice() {
            [] => (Match::Unmatched, m.text.clone(), vec![]),
            // the only open question, unless the person may still be talking about another one
            // (answered or closed within the window): then asked back, never guessed
            [q] => {
                let recent = self.recently_closed(m, &q.run_id).await?;
                if recent.is_empty() {
                    (
                        Match::Answer {
                            run_id: q.run_id.clone(),
                            code: q.code.clone(),
                        },
                        m.text.clone(),
                        vec![],
                    )
                } else {
                    (
                        Match::Ambiguous {
                            run_ids: std::iter::once(q.run_id.clone())
                                .chain(recent.iter().cloned())
                                .collect(),
                        },
                        m.text.clone(),
                        recent,
                    )
                }
            }
            many => (
                Match::Ambiguous {
                    run_ids: many.iter().map(|q| q.run_id.clone()).collect(),
                },
                m.text.clone(),
                vec![],
            ),
        })
    }

    /// The person's other questions (not `open_run`) answered or closed within
    /// [`CODELESS_WINDOW`] before `m` arrived: a message without a code may be about one of
    /// them ("no, wait"), so it is asked back rather than given to the one still open.
    async fn recently_closed(&self, m: &Inbound, open_run: &str) -> Result<Vec<String>, Error> {
        let since = m.received_at - CODELESS_WINDOW.as_millis() as i64;
        let mut recent = Vec::new();
        for q in self.questions_to(&m.from).await? {
            if q.run_id == open_run {
                continue;
            }
            let closed_at = match &q.answered_by {
                Some(sid) => {
                    let v: Option<String> = redis::cmd("GET")
                        .arg(keys::inbound(&self.claim_prefix, sid))
                        .query_async(&mut self.conn())
                        .await?;
                    // an answer with no record yet is being recorded now: recent
                    v.and_then(|v| serde_json::from_str::<Recorded>(&v).ok())
                        .map_or(m.received_at, |r| r.inbound.received_at)
                }
                None if q.until <= m.received_at => q.until,
                None => continue,
            };
            if closed_at > since {
                recent.push(q.run_id);
            }
        }
        Ok(recent)
    }

    /// Claim `run_id`'s question as answered by `sid` (`SET NX`): the MessageSid that stands,
    /// another's when that message answered it first. A question closes at its first answer even
    /// when two messages are decided at the same moment, or one was recorded and cut short
    /// before it closed the question.
    async fn claim_answer(&self, run_id: &str, sid: &str) -> Result<String, Error> {
        let key = keys::question_answered(&self.claim_prefix, run_id);
        self.set_first(&key, sid, self.record_ttl).await
    }

    /// Whether message `sid` has no record and its handler can no longer make one: its last
    /// post is older than [`PENDING_GRACE`] (which outlasts a request's timeout), or the sweep
    /// already dropped it as never recorded.
    async fn never_recorded(&self, sid: &str) -> Result<bool, Error> {
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
    async fn take_answer(
        &self,
        run_id: &str,
        void: &str,
        sid: &str,
    ) -> Result<Option<String>, Error> {
        let key = keys::question_answered(&self.claim_prefix, run_id);
        let ttl = self.record_ttl.as_millis().max(1).to_string();
        Ok(ringback_store::scripts::scripts()
            .question_answer_take
            .run(
                &mut self.conn(),
                &ringback_store::scripts::RoundTrips::default(),
                &[key],
                &[void, sid, ttl.as_str()],
            )
            .await?)
    }

    /// `SET key value NX GET PX ttl`: the value that stands, `value` when this call set it (or
    /// a lost reply's earlier run of it did), the first writer's otherwise.
    async fn set_first(&self, key: &str, value: &str, ttl: Duration) -> Result<String, Error> {
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
    async fn finish(&self, r: &Recorded) -> Result<String, Error> {
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
        let _: () = redis::cmd("ZREM")
            .arg(keys::inbound_pending(&self.claim_prefix))
            .arg(&m.message_sid)
            .query_async(&mut self.conn())
            .await?;
        Ok(job_id)
    }

    /// The question is answered: no longer open, its code still taken for the person.
    async fn close(&self, run_id: &str, from: &str, sid: &str) -> Result<(), Error> {
        let qkey = keys::question(&self.claim_prefix, run_id);
        if let Some(mut q) = self.question_of(run_id).await? {
            if q.answered_by.is_none() {
                q.answered_by = Some(sid.to_string());
                let _: Option<String> = redis::cmd("SET")
                    .arg(&qkey)
                    .arg(serde_json::to_string(&q).unwrap_or_default())
                    .arg("XX")
                    .arg("KEEPTTL")
                    .query_async(&mut self.conn())
                    .await?;
            }
            self.open(from, &q).await?;
        }
        Ok(())
    }

    async fn keep_unmatched(&self, view: &str, at: i64) -> Result<(), Error> {
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
    async fn ask_which(&self, m: &Inbound, run_ids: &[String]) -> Result<(), Error> {
        let mut lines = Vec::new();
        for run_id in run_ids.iter().take(5) {
            if let Some(q) = self.question_of(run_id).await? {
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
        let sids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(&pending)
            .arg("-inf")
            .arg(self.now() - PENDING_GRACE.as_millis() as i64)
            .arg("LIMIT")
            .arg(0)
            .arg(100)
            .query_async(&mut self.conn())
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

/// The first words of a question (up to 40 characters), for the "which one?" text.
fn excerpt(body: &str) -> String {
    let one_line: String = body.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= 40 {
        return one_line;
    }
    let cut: String = one_line.chars().take(39).collect();
    format!("{}…", cut.trim_end())
}
