//! The runs as their records tell them, for the console: the recent-runs index, callback
//! records and their history, attempt records, the open-attempts index and the job's BullMQ
//! state. Reads only; a page costs a few pipelined round trips whatever the number of runs it
//! looks at. Kept on this floor, beside the records it reads, so the edge names no key.

use std::collections::HashMap;

use ringback_store::connection::Conn;

use ringback_shared::error::Error;
use ringback_store::keys::{self, QueueKeys, WindowKeys};

/// The states the Callbacks page filters by.
pub const FILTERS: [&str; 9] = [
    "sent",
    "delivered",
    "undelivered",
    "failed",
    "send-failed",
    "invalid",
    "unknown",
    "open",
    "escalated",
];

/// One run, in a line.
#[derive(Debug, Clone, Default)]
pub struct RunRow {
    /// The run's `runId`.
    pub run_id: String,
    /// As `GET /api/notify/callbacks/{runId}` says it (without the job lookup: `queued` is
    /// not told from `unknown` here).
    pub state: String,
    /// An attempt is open (in the open-attempts index).
    pub open: bool,
    /// The record's escalation marker, `<ms>:<reason>`; `None` when never escalated.
    pub escalated: Option<String>,
    /// When its latest fresh attempt was claimed (the index's score, ms).
    pub claimed_at: Option<i64>,
    /// When Twilio took the text (ms); `None` until a send is proven.
    pub sent_at: Option<i64>,
    /// When the record last changed (ms).
    pub updated_at: Option<i64>,
    /// Twilio's latest status in the callback record; `None` before any receipt.
    pub status: Option<String>,
    /// The attempt record's state (`claimed`, `ambiguous`, `retry`, `sent`, `unknown`,
    /// `send-failed`); `None` without an attempt record.
    pub attempt_state: Option<String>,
    /// Destination, masked as in the logs.
    pub to: String,
    /// The id of the worker that holds or held the attempt.
    pub worker: Option<String>,
    /// Attempt age base: since / claimed_at (ms).
    pub since: Option<i64>,
}

impl RunRow {
    /// Does the row answer the Callbacks page's filter?
    pub fn matches(&self, filter: &str) -> bool {
        match filter {
            "sent" => matches!(self.state.as_str(), "sent" | "accepted"),
            "open" => self.open,
            "escalated" => self.escalated.is_some(),
            "unknown" => {
                self.state == "unknown"
                    || matches!(self.attempt_state.as_deref(), Some("unknown" | "ambiguous"))
            }
            other => self.state == other,
        }
    }
}

/// The console's reads.
#[derive(Clone, Debug)]
pub struct Reads {
    conn: Conn,
    claim_prefix: String,
    queue: QueueKeys,
}

const RECORD_FIELDS: [&str; 5] = ["status", "escalated", "updated_at", "sid", "invalid_job"];
const ATTEMPT_FIELDS: [&str; 7] = [
    "state",
    "sent_at",
    "claimed_at",
    "since",
    "to",
    "worker",
    "sid",
];

fn int(s: &Option<String>) -> Option<i64> {
    s.as_deref().and_then(|v| v.parse().ok())
}

impl Reads {
    /// Reads over `conn` of the runs under `claim_prefix` and the jobs of queue `queue`.
    pub fn new(conn: Conn, claim_prefix: &str, queue: QueueKeys) -> Self {
        Self {
            conn,
            claim_prefix: claim_prefix.to_string(),
            queue,
        }
    }

    fn recent(&self) -> String {
        keys::recent_runs(&self.claim_prefix)
    }

    /// Take the fallback texts' runs out of the recent-runs index: the console shows each as
    /// part of the run it tells of (its page links it), never as a run of its own. Their claim
    /// puts them in the index as it does any run; this read-side pass, before a list is read,
    /// takes them out again (idempotent, and cheap: the fallback set is small).
    pub async fn hide_fallbacks(&self) -> Result<(), Error> {
        let fallbacks: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys::fallback_runs(&self.claim_prefix))
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await?;
        if !fallbacks.is_empty() {
            redis::cmd("ZREM")
                .arg(self.recent())
                .arg(&fallbacks)
                .query_async::<()>(&mut self.conn.clone())
                .await?;
        }
        Ok(())
    }

    /// How many runs the index holds.
    pub async fn recent_count(&self) -> Result<u64, Error> {
        Ok(redis::cmd("ZCARD")
            .arg(self.recent())
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Run ids newest first, `start..=stop` (ranks).
    pub async fn recent_ids(&self, start: isize, stop: isize) -> Result<Vec<(String, i64)>, Error> {
        Ok(redis::cmd("ZRANGE")
            .arg(self.recent())
            .arg(start)
            .arg(stop)
            .arg("REV")
            .arg("WITHSCORES")
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Run ids claimed since `since_ms`, newest first.
    pub async fn recent_since(&self, since_ms: i64) -> Result<Vec<(String, i64)>, Error> {
        Ok(redis::cmd("ZRANGE")
            .arg(self.recent())
            .arg("+inf")
            .arg(since_ms)
            .arg("BYSCORE")
            .arg("REV")
            .arg("WITHSCORES")
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// One line per run, in `ids` order: two pipelined round trips (the open-attempts index
    /// once, then two `HMGET`s per run). The claim key is not read: every indexed run has an
    /// attempt record until it expires, and then its line says `unknown`.
    pub async fn rows(&self, ids: &[(String, i64)]) -> Result<Vec<RunRow>, Error> {
        if ids.is_empty() {
            return Ok(vec![]);
        }
        let open: std::collections::HashSet<String> = redis::cmd("ZRANGE")
            .arg(keys::open_attempts(&self.claim_prefix))
            .arg(0)
            .arg(-1)
            .query_async::<Vec<String>>(&mut self.conn.clone())
            .await?
            .into_iter()
            .collect();
        let mut pipe = redis::pipe();
        for (id, _) in ids {
            let w = WindowKeys::new(&self.claim_prefix, id);
            pipe.cmd("HMGET").arg(&w.record).arg(&RECORD_FIELDS[..]);
            pipe.cmd("HMGET").arg(&w.attempt).arg(&ATTEMPT_FIELDS[..]);
        }
        let replies: Vec<Vec<Option<String>>> = pipe.query_async(&mut self.conn.clone()).await?;
        let mut rows = Vec::with_capacity(ids.len());
        for ((id, score), pair) in ids.iter().zip(replies.chunks(2)) {
            let [rec, att] = pair else { break };
            let (claim, open): (Option<String>, bool) = (None, open.contains(id));
            let map = |names: &[&str], vals: &[Option<String>]| -> HashMap<String, String> {
                names
                    .iter()
                    .zip(vals)
                    .filter_map(|(n, v)| v.clone().map(|v| (n.to_string(), v)))
                    .collect()
            };
            let record = map(&RECORD_FIELDS, rec);
            let attempt = map(&ATTEMPT_FIELDS, att);
            let state = crate::receipts::derive_state(&record, &attempt, claim.as_deref(), false);
            rows.push(RunRow {
                run_id: id.clone(),
                state,
                open,
                escalated: record.get("escalated").cloned(),
                claimed_at: Some(*score),
                sent_at: int(&att[1]),
                updated_at: int(&rec[2]),
                status: record.get("status").cloned(),
                attempt_state: attempt.get("state").cloned(),
                to: att[4]
                    .as_deref()
                    .map(ringback_shared::redact::mask)
                    .unwrap_or_default(),
                worker: attempt.get("worker").cloned(),
                since: int(&att[3]).or(int(&att[2])),
            });
        }
        Ok(rows)
    }

    /// Open attempts (runId, when the sweep looks at it) and how many there are, the first `n`.
    pub async fn open_attempts(&self, n: isize) -> Result<(u64, Vec<(String, i64)>), Error> {
        let open = keys::open_attempts(&self.claim_prefix);
        Ok(redis::pipe()
            .cmd("ZCARD")
            .arg(&open)
            .cmd("ZRANGE")
            .arg(&open)
            .arg(0)
            .arg(n - 1)
            .arg("WITHSCORES")
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Everything about one run, for its timeline.
    pub async fn run(&self, run_id: &str) -> Result<RunDetail, Error> {
        let w = WindowKeys::new(&self.claim_prefix, run_id);
        type Parts = (
            HashMap<String, String>,
            HashMap<String, String>,
            Vec<String>,
            Option<String>,
            Option<String>,
            Option<i64>,
            Vec<String>,
            HashMap<String, String>,
        );
        let (record, attempt, history, claim, open, claimed, workers, ladder): Parts =
            redis::pipe()
                .hgetall(&w.record)
                .hgetall(&w.attempt)
                .lrange(keys::callback_history(&self.claim_prefix, run_id), 0, -1)
                .get(&w.claim)
                .zscore(keys::open_attempts(&self.claim_prefix), run_id)
                .zscore(self.recent(), run_id)
                .zrange(keys::ringback_workers(&self.claim_prefix), 0, -1)
                .hgetall(keys::ladder(&self.claim_prefix, run_id))
                .query_async(&mut self.conn.clone())
                .await?;
        // the attempt's job, else the invalid job escalated for this run, else the runId (the
        // legacy API's job id)
        let job_id = attempt
            .get("job")
            .or_else(|| record.get("invalid_job"))
            .cloned()
            .unwrap_or_else(|| run_id.to_string());
        let job = self.job(&job_id).await?;
        let state = crate::receipts::derive_state(
            &record,
            &attempt,
            claim.as_deref(),
            job.as_ref().is_some_and(|j| {
                matches!(
                    j.state.as_str(),
                    "waiting" | "delayed" | "prioritized" | "active" | "paused"
                )
            }),
        );
        // heartbeats are "<name> (<worker id>)": a person reads the name (pid and host)
        let worker_name = attempt.get("worker").and_then(|id| {
            let tail = format!("({id})");
            workers.into_iter().find(|w| w.ends_with(&tail))
        });
        let known = !record.is_empty()
            || !attempt.is_empty()
            || job.is_some()
            || claim.is_some()
            || !ladder.is_empty();
        let history = crate::receipts::history_of(&record, &history);
        Ok(RunDetail {
            run_id: run_id.to_string(),
            known,
            state,
            record,
            attempt,
            history,
            claim,
            open: open.is_some(),
            claimed_at: claimed,
            worker_name,
            job_id,
            job,
            question: None,
            replies: vec![],
            ladder: crate::ladder::view::LadderView::of(&ladder),
        })
    }

    async fn job(&self, id: &str) -> Result<Option<JobView>, Error> {
        self.job_in(&self.queue, id).await
    }

    /// The job's BullMQ state in queue `k`, as `Job.getState()` tells it, and its counters.
    pub async fn job_in(&self, k: &QueueKeys, id: &str) -> Result<Option<JobView>, Error> {
        type Parts = (
            HashMap<String, String>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<f64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
        );
        let (hash, completed, failed, delayed, prioritized, children, active, wait, paused): Parts =
            redis::pipe()
                .hgetall(k.job(id))
                .zscore(k.completed(), id)
                .zscore(k.failed(), id)
                .zscore(k.delayed(), id)
                .zscore(k.prioritized(), id)
                .zscore(k.waiting_children(), id)
                .cmd("LPOS")
                .arg(k.active())
                .arg(id)
                .cmd("LPOS")
                .arg(k.wait())
                .arg(id)
                .cmd("LPOS")
                .arg(k.paused())
                .arg(id)
                .query_async(&mut self.conn.clone())
                .await?;
        if hash.is_empty() {
            return Ok(None);
        }
        let state = if completed.is_some() {
            "completed"
        } else if failed.is_some() {
            "failed"
        } else if delayed.is_some() {
            "delayed"
        } else if active.is_some() {
            "active"
        } else if wait.is_some() {
            "waiting"
        } else if paused.is_some() {
            "paused"
        } else if prioritized.is_some() {
            "prioritized"
        } else if children.is_some() {
            "waiting-children"
        } else {
            "unknown"
        };
        let get = |f: &str| hash.get(f).and_then(|v| v.parse::<i64>().ok());
        Ok(Some(JobView {
            id: id.to_string(),
            state: state.to_string(),
            name: hash.get("name").cloned().unwrap_or_default(),
            timestamp: get("timestamp"),
            processed_on: get("processedOn"),
            finished_on: get("finishedOn"),
            attempts_made: get("attemptsMade").or(get("atm")).unwrap_or(0),
            attempts_started: get("ats"),
            stalled: get("stc"),
            failed_reason: hash
                .get("failedReason")
                .map(|r| ringback_shared::redact::redact(r)),
            attempts_allowed: hash
                .get("opts")
                .and_then(|o| serde_json::from_str::<serde_json::Value>(o).ok())
                .and_then(|o| o.get("attempts").and_then(|a| a.as_i64())),
        }))
    }
}

/// One run, for its page.
#[derive(Debug, Clone)]
pub struct RunDetail {
    /// The run's `runId`.
    pub run_id: String,
    /// Anything at all is recorded for it.
    pub known: bool,
    /// As `GET /api/notify/callbacks/{runId}` says it, the job's state included.
    pub state: String,
    /// The callback record's fields; empty when there is none.
    pub record: HashMap<String, String>,
    /// The attempt record's fields; empty when there is none.
    pub attempt: HashMap<String, String>,
    /// The receipts in arrival order.
    pub history: Vec<serde_json::Value>,
    /// The claim key's value (`pending…` or `sent…`); `None` when absent or expired.
    pub claim: Option<String>,
    /// An attempt is open (in the open-attempts index).
    pub open: bool,
    /// When its latest fresh attempt was claimed (the recent-runs index's score, ms).
    pub claimed_at: Option<i64>,
    /// The attempt's worker as its heartbeat names it (pid and host), while it heartbeats.
    pub worker_name: Option<String>,
    /// The job looked up: the attempt's, else the escalated invalid job's, else the runId.
    pub job_id: String,
    /// That job as BullMQ keeps it; `None` when it is gone (removed or never added).
    pub job: Option<JobView>,
    /// The question the run asked, if it asked one.
    pub question: Option<crate::replies::Question>,
    /// Its replies, oldest first, each with the replies-queue job that carries it.
    pub replies: Vec<(crate::replies::ReplyView, Option<JobView>)>,
    /// Its escalation ladder, if it climbs one.
    pub ladder: Option<crate::ladder::view::LadderView>,
}

/// The job as BullMQ keeps it.
#[derive(Debug, Clone)]
pub struct JobView {
    /// The BullMQ job id.
    pub id: String,
    /// As `Job.getState()` tells it: `waiting`, `active`, `delayed`, `completed`, `failed`, …
    pub state: String,
    /// The job's name (one of `RINGBACK_CALLBACK_JOB_NAMES` for a callback).
    pub name: String,
    /// When it was added (ms).
    pub timestamp: Option<i64>,
    /// When a worker last took it (ms); `None` before any.
    pub processed_on: Option<i64>,
    /// When it completed or failed (ms); `None` while it has not.
    pub finished_on: Option<i64>,
    /// Attempts that ended (`attemptsMade`, or `atm`); 0 before any.
    pub attempts_made: i64,
    /// Attempts started, stalled ones included (`ats`); `None` when the job has no count.
    pub attempts_started: Option<i64>,
    /// The job's `attempts` option; `None` when not set.
    pub attempts_allowed: Option<i64>,
    /// Times it stalled (`stc`); `None` when it never did.
    pub stalled: Option<i64>,
    /// Why it last failed, redacted as in the logs.
    pub failed_reason: Option<String>,
}
