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

mod answers;
pub use answers::Claimed;
mod ask;
pub mod code;
pub mod forwards;
mod inbox;
pub mod keypad;
mod matching;
pub mod optouts;
pub mod reads;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use ringback_queue::calls::Calls;
use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_store::connection::Conn;

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
    /// The run that asks.
    pub run_id: String,
    /// Its reply code (`A7`, …), unique among the person's questions still kept.
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
    /// Where Twilio keeps the file (`MediaUrl<N>`).
    pub url: String,
    /// Its MIME type (`MediaContentType<N>`), when Twilio gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// An inbound message as Twilio posted it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Inbound {
    /// Twilio's id of the message (`MessageSid`, `SM…`): the key of its exactly-once record.
    pub message_sid: String,
    /// The person's number (`From`).
    pub from: String,
    /// The number (or sender) the person wrote to.
    pub to: String,
    /// The message as the person wrote it (`Body`).
    pub text: String,
    /// Its attachments, in Twilio's order.
    pub media: Vec<Media>,
    /// The Messaging Service that received it (`MessagingServiceSid`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messaging_service_sid: Option<String>,
    /// Advanced Opt-Out's `OptOutType` (`STOP`, `START`, `HELP`), or the one Twilio's default
    /// handling gives its keyword alone in the message ([`optouts::default_keyword`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opt_out_type: Option<String>,
    /// When `serve` first received it (ms since the epoch).
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
    Answer {
        /// The run whose question it answers.
        run_id: String,
        /// The code it was matched by (the question's own, named or not).
        code: String,
    },
    /// It names the code of a question already answered or past its time: it reaches that
    /// run, as a reply that is not its answer.
    Late {
        /// The run whose code it names.
        run_id: String,
        /// The code it names.
        code: String,
    },
    /// Several questions are open and it names none of them.
    Ambiguous {
        /// The runs whose questions are open to the person.
        run_ids: Vec<String>,
    },
    /// An opt-out keyword Twilio handled (never an answer).
    OptOut,
    /// No open question to this person.
    Unmatched,
}

impl Match {
    /// Its name in metrics, logs and the record (`answer`, `late`, …).
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
    /// The message as Twilio posted it.
    pub inbound: Inbound,
    /// What it was matched to, once.
    pub matched: Match,
    /// The answer's text without its code.
    pub text: String,
}

/// A reply as the run's record, the API and the console show it (the sender masked).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ReplyView {
    /// Twilio's id of the message (`SM…`).
    pub message_sid: String,
    /// The sender, masked (`+1555***0100`).
    pub from: String,
    /// The text as the person wrote it.
    pub text: String,
    /// Its attachments.
    pub media: Vec<Media>,
    /// When `serve` first received it (ms since the epoch).
    pub received_at: i64,
    /// What it was matched to ([`Match::label`]).
    pub matched: String,
    /// The run it reached, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The replies-queue job that carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_id: Option<String>,
}

/// What [`Replies::receive`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    /// What the message was matched to (at its first arrival).
    pub matched: Match,
    /// The replies-queue job id.
    pub job_id: String,
    /// A repeat of a message already recorded (Twilio's retry).
    pub repeat: bool,
}

/// A crash hook between recording a message and enqueuing it (drills only).
pub type CrashHook = std::sync::Arc<dyn Fn() + Send + Sync>;

/// Replies: questions asked and inbound messages matched and recorded once onto the replies
/// queue (asking and receiving share the questions' state and the matcher, so they are one
/// type), beside the roles that own their keys: opt-outs, forwards and the reads.
#[derive(Clone)]
pub struct Replies {
    conn: Conn,
    claim_prefix: String,
    /// How long a question may stay open: the run's record life.
    record_ttl: Duration,
    retention: Duration,
    /// The replies queue.
    pub queue: Calls,
    /// The callback queue (the "which one?" texts) and its job name.
    callbacks: Calls,
    callback_job_name: String,
    /// Who texted STOP (texts to them are refused until START).
    pub opt_outs: optouts::OptOuts,
    /// The messages still to forward.
    pub forwards: forwards::Forwards,
    /// A run's question and replies, and the messages that answered nothing, as read.
    pub reads: reads::ReplyReads,
    /// The ladders a message acknowledges.
    pub ladders: crate::ladder::record::LadderRecord,
    /// Whether messages that answer no question are forwarded (a forward URL is set).
    forwarding: bool,
    before_record: Option<CrashHook>,
    crash_after_record: Option<CrashHook>,
    crash_after_ladder_webhook: Option<CrashHook>,
    /// Redis's clock less this process's (ms), as last read: the pending set's scores and the
    /// sweep's cut are on Redis's clock, so replicas of `serve` whose clocks disagree by more
    /// than the grace period never sweep each other's messages early.
    clock_offset: Arc<AtomicI64>,
}

/// Its settings; the connections and test hooks print nothing useful.
impl std::fmt::Debug for Replies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Replies")
            .field("claim_prefix", &self.claim_prefix)
            .field("record_ttl", &self.record_ttl)
            .field("retention", &self.retention)
            .field("forwarding", &self.forwarding)
            .finish_non_exhaustive()
    }
}

impl Replies {
    /// Replies over `conn`, its keys under `claim_prefix`; `queue` is the replies queue,
    /// `callbacks` the callback queue the "which one?" texts go through as `callback_job_name`.
    pub fn new(
        conn: Conn,
        claim_prefix: &str,
        record_ttl: Duration,
        retention: Duration,
        queue: Calls,
        callbacks: Calls,
        callback_job_name: &str,
    ) -> Self {
        let topology =
            ringback_store::slots::Topology::forced_or(ringback_store::slots::Topology::of(&conn));
        Self {
            ladders: crate::ladder::record::LadderRecord::new(
                conn.clone(),
                Default::default(),
                claim_prefix,
                topology,
                record_ttl,
            ),
            opt_outs: optouts::OptOuts::new(conn.clone(), claim_prefix),
            forwards: forwards::Forwards::new(conn.clone(), claim_prefix),
            reads: reads::ReplyReads::new(conn.clone(), claim_prefix),
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
            crash_after_ladder_webhook: None,
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

    /// Tests (`test-support`): call `hook` right before a message's first arrival is recorded
    /// (its pending entry and forward schedule already written).
    #[cfg(any(test, feature = "test-support"))]
    pub fn with_hook_before_record(mut self, hook: CrashHook) -> Self {
        self.before_record = Some(hook);
        self
    }

    /// Drills: call `hook` right after a message is recorded, before it is enqueued.
    pub fn with_crash_after_record(mut self, hook: CrashHook) -> Self {
        self.crash_after_record = Some(hook);
        self
    }

    /// Drills: call `hook` right after a ladder webhook is recorded (a key pressed kept, a
    /// call's status ranked), before what it does (the acknowledgement, the climb).
    pub fn with_crash_after_ladder_webhook(mut self, hook: CrashHook) -> Self {
        self.crash_after_ladder_webhook = Some(hook);
        self
    }

    /// A ladder webhook is recorded: the drills' crash point.
    pub fn ladder_webhook_recorded(&self) {
        if let Some(hook) = &self.crash_after_ladder_webhook {
            hook();
        }
    }

    /// The members of the sorted set `key` scored at or before `cut`, at most `limit`: what a
    /// sweep takes (pending messages and keypad answers, questions whose time is over).
    async fn due_members(&self, key: &str, cut: i64, limit: usize) -> Result<Vec<String>, Error> {
        Ok(redis::cmd("ZRANGE")
            .arg(key)
            .arg("-inf")
            .arg(cut)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .query_async(&mut self.conn())
            .await?)
    }

    fn conn(&self) -> Conn {
        self.conn.clone()
    }
}
