//! One typed function per Lua script: keys in header order, arguments packed in one place,
//! replies parsed into typed values and negative codes mapped to [`ScriptCode`].

use std::sync::{Arc, OnceLock};

use redis::Value;

use crate::processor::{Prepared, StepReply};
use ringback_store::call::Call;
use ringback_store::connection::Conn;
use ringback_store::group_commit::GroupCommit;

use crate::job::Job;
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::keys::QueueKeys;
use ringback_store::scripts::RoundTrips;

mod finish;
mod jobs;
mod locks;

/// What the worker passes to every script that may take a job (move_to_active, and the
/// fetch-next of the finishing scripts).
#[derive(Debug, Clone)]
pub struct FetchArgs {
    /// The lock token this worker holds on the jobs it takes.
    pub token: String,
    /// How long a taken job's lock lasts before it must be renewed (ms, as text).
    pub lock_ms: String,
    /// The worker's name, written on each job it takes as `pb` (empty: unnamed).
    pub name: String,
    /// At most this many jobs per limiter window, as text (empty: no limiter).
    pub limiter_max: String,
    /// The worker's rate-limit window in ms, as text (empty: no limiter).
    pub limiter_duration: String,
}

impl FetchArgs {
    /// The fetch arguments of a worker configured by `cfg`, taking jobs with lock `token`.
    pub fn new(cfg: &crate::config::WorkerConfig, token: &str) -> Self {
        FetchArgs {
            token: token.to_string(),
            lock_ms: cfg.lock_duration.as_millis().to_string(),
            name: cfg.name.clone().unwrap_or_default(),
            limiter_max: cfg.limiter.map(|(m, _)| m.to_string()).unwrap_or_default(),
            limiter_duration: cfg
                .limiter
                .map(|(_, d)| d.as_millis().to_string())
                .unwrap_or_default(),
        }
    }
}

/// The answer of a fetch.
#[derive(Debug)]
pub enum Fetched {
    /// A job is ours now, locked with the token that fetched it.
    Job(Box<Job>),
    /// Rate limited: try again in this many ms.
    RateLimited(u64),
    /// Nothing ready; the next delayed job is due at this time (ms).
    NextDelayed(i64),
    /// Nothing ready (or the queue is paused or at its global concurrency).
    Empty,
}

/// How an attempt ends, as the finishing scripts record it.
#[derive(Debug, Clone)]
pub enum Finish {
    /// The processor succeeded; the job moves to the completed set.
    Completed {
        /// The processor's result as JSON text, written as the job's `returnvalue`.
        returnvalue: String,
    },
    /// Final failure (no retries left, unrecoverable, or deferred failure).
    Failed {
        /// The failure message, written as the job's `failedReason`.
        reason: String,
        /// The job's `stacktrace` field: a JSON array of its past failures' stacks.
        stacktrace: String,
    },
    /// Failed attempt, retried at once.
    RetryNow {
        /// The failure message, written as the job's `failedReason`.
        reason: String,
        /// The job's `stacktrace` field: a JSON array of its past failures' stacks.
        stacktrace: String,
        /// Put the job back at the front of wait (the job's `lifo` option), not the back.
        lifo: bool,
    },
    /// Failed attempt retried after `delay_ms` (uses an attempt), or a processor-requested delay
    /// (`skip_attempt`, no failure fields).
    Delay {
        /// How long the job sits in the delayed set before it is ready again (ms).
        delay_ms: u64,
        /// True when the processor asked for the delay: `attemptsMade` is not incremented.
        skip_attempt: bool,
        /// The failure's `(reason, stacktrace)` written on the job; `None` for a requested delay.
        failure: Option<(String, String)>,
    },
}

/// The answer of a completion with a processor's step folded in.
#[derive(Debug)]
pub struct StepFinished {
    /// As [`Calls::finish`] answers.
    pub finished: Result<Fetched, ScriptCode>,
    /// The step's own answer.
    pub own: StepReply,
    /// What the step prepared for the fetched job, if anything.
    pub prepared: Option<Prepared>,
}

/// Redis commands of one queue, over the shared multiplexed connection.
#[derive(Clone, Debug)]
pub struct Calls {
    conn: Conn,
    keys: Arc<QueueKeys>,
    trips: Arc<RoundTrips>,
    /// Groups finishing calls that queue up together (started by the first that can group):
    /// plain finishes, and finishes with a processor's step (each with its own calls in flight).
    group: Arc<OnceLock<GroupCommit>>,
    step_group: Arc<OnceLock<GroupCommit>>,
}

impl Calls {
    /// Calls of the queue named by `keys` over `conn`, counting round trips in `trips`.
    /// The finishing calls' group commits start lazily, on first use.
    pub fn new(conn: Conn, keys: QueueKeys, trips: Arc<RoundTrips>) -> Self {
        Self {
            conn,
            keys: Arc::new(keys),
            trips,
            group: Arc::default(),
            step_group: Arc::default(),
        }
    }

    /// The Redis key names of this queue (`<prefix>:<queue>:…`).
    pub fn keys(&self) -> &QueueKeys {
        &self.keys
    }

    /// The Redis round-trip counter this queue's scripts add to.
    pub fn round_trips(&self) -> &Arc<RoundTrips> {
        &self.trips
    }

    /// A clone of the multiplexed connection, for commands outside the queue's scripts.
    pub fn connection(&self) -> Conn {
        self.conn.clone()
    }

    /// KEYS 1–10 of every script that may take a job, in BullMQ's moveToActive order (wait,
    /// active, prioritized, events, stalled, limiter, delayed, paused, meta, pc), then `more`.
    /// The first ten keys every fetching script takes, in their headers' order.
    fn fetch_keys<'s>(&self, call: Call<'s>) -> Call<'s> {
        let k = &self.keys;
        call.key("wait", k.wait())
            .key("active", k.active())
            .key("prioritized", k.prioritized())
            .key("events", k.events())
            .key("stalled", k.stalled())
            .key("limiter", k.limiter())
            .key("delayed", k.delayed())
            .key("paused", k.paused())
            .key("meta", k.meta())
            .key("pc", k.pc())
    }
}

fn code_or(script: &'static str, reply: Value) -> Result<(), ScriptCode> {
    match reply {
        Value::Int(0) => Ok(()),
        Value::Int(code) => Err(ScriptCode::from_code(code)),
        other => {
            tracing::error!(script, ?other, "unexpected script reply");
            Err(ScriptCode::Other(i64::MIN))
        }
    }
}

/// Parse BullMQ's 4-tuple `{fields|0, jobId|0, rateLimitTtl, nextDelayedMs}`.
/// move_to_finished's answer: 0, a negative code, or the next job's 4-tuple. (Benchmarks
/// measure it through `test_support`.)
pub(crate) fn finished_reply(
    script: &'static str,
    reply: Value,
) -> Result<Result<Fetched, ScriptCode>, Error> {
    match reply {
        Value::Array(_) => parse_fetched(script, reply).map(Ok),
        other => Ok(code_or(script, other).map(|()| Fetched::Empty)),
    }
}

fn parse_fetched(script: &'static str, reply: Value) -> Result<Fetched, Error> {
    let bad = |detail: String| Error::Reply { script, detail };
    let Value::Array(mut items) = reply else {
        return Err(bad(format!("expected an array, got {reply:?}")));
    };
    if items.len() < 4 {
        return Err(bad(format!("expected 4 elements, got {}", items.len())));
    }
    let int = |v: &Value| match v {
        Value::Int(i) => *i,
        _ => 0,
    };
    let delayed = int(&items[3]);
    let ttl = int(&items[2]);
    let id = items.swap_remove(1);
    match (items.swap_remove(0), id) {
        (Value::Array(fields), Value::BulkString(id)) => {
            let text = |v: Value| match v {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                Value::SimpleString(s) => s,
                Value::Int(i) => i.to_string(),
                _ => String::new(),
            };
            let mut pairs = Vec::with_capacity(fields.len() / 2);
            let mut it = fields.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((text(k), text(v)));
            }
            let id = String::from_utf8_lossy(&id).into_owned();
            Ok(Fetched::Job(Box::new(Job::from_fields(id, pairs))))
        }
        _ if ttl > 0 => Ok(Fetched::RateLimited(ttl as u64)),
        _ if delayed > 0 => Ok(Fetched::NextDelayed(delayed)),
        _ => Ok(Fetched::Empty),
    }
}
