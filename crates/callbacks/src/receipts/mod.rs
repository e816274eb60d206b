//! Delivery receipts: what happened to a callback after Twilio accepted it. Status callbacks
//! and polls are applied to the run's callback record by one Lua script (`receipt_apply.lua`),
//! ranked so a record never moves backwards whatever order Twilio delivers them in.

use std::sync::Arc;
use std::time::Duration;

use ringback_store::command::RoundTrip;
use ringback_store::connection::Conn;

use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_store::keys::{self, WindowKeys};
use ringback_store::scripts::{RoundTrips, scripts};
use ringback_store::slots::Topology;

mod escalated;
mod record;

pub use record::derive_state;
pub use record::{CallbackRecord, history_of};

/// Where a status came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A status callback Twilio posted to the webhook.
    Webhook,
    /// A lookup of the message by the reconciler, when no final status came in time.
    Poll,
    /// The status Twilio's create answered with, applied when the send is marked sent.
    Send,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Webhook => "webhook",
            Source::Poll => "poll",
            Source::Send => "send",
        }
    }
}

/// One status to apply.
#[derive(Debug, Clone)]
pub struct StatusUpdate {
    /// The run whose record the status applies to.
    pub run_id: String,
    /// The message's Twilio MessageSid (`SM…`): another sid than the record's is a second text.
    pub sid: String,
    /// Twilio's message status (`queued`, `sent`, `delivered`, `undelivered`, …).
    pub status: String,
    /// Twilio's `ErrorCode` for a failed delivery; `None` when Twilio sent none.
    pub error_code: Option<String>,
    /// The carrier's `RawDlrDoneDate` (`YYMMDDhhmm`): at equal rank, the later one wins.
    /// `None` when absent (polls never carry it).
    pub raw_dlr_done_date: Option<String>,
    /// Where the status came from, kept in the run's history.
    pub source: Source,
    /// Repeat detection id (`token:<idempotency token>` or `params:<hash of the signed
    /// parameters>`), kept on the run's record as the field `seen:<id>`.
    pub repeat_id: Option<String>,
    /// The attempt token the StatusCallback URL carried.
    pub attempt: Option<String>,
}

/// What applying a status did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// "repeat", "applied", "stale", "same", "conflict", "other", "unknown".
    pub outcome: String,
    /// The record's status after the update (unchanged unless the outcome is "applied").
    pub status: String,
    /// The record's status before the update; empty when the record had none.
    pub previous: String,
    /// The run has an escalation ladder, or its runId names a ladder step's text
    /// (`<runId>:ladder:<k>`): a delivered receipt may acknowledge a ladder.
    pub ladder: bool,
}

impl Applied {
    /// This update newly made the record end in a failed delivery.
    pub fn newly_failed(&self) -> bool {
        self.outcome == "applied" && self.ends_failed()
    }

    /// Count a newly failed delivery by its error code (`ringback_delivery_errors_total`).
    pub fn count_delivery_error(&self, code: Option<&str>) {
        if self.newly_failed() {
            ringback_shared::telemetry::global().delivery_error(code);
        }
    }

    /// The run's record, after this update whatever its outcome, ends in a failed delivery:
    /// every path that sees this escalates (idempotently), so a repeat of a callback whose
    /// escalation was cut short escalates it.
    pub fn ends_failed(&self) -> bool {
        is_failed_status(&self.status)
    }
}

/// Terminal statuses that mean the human was not (fully) texted.
pub fn is_failed_status(status: &str) -> bool {
    matches!(
        status,
        "failed" | "undelivered" | "canceled" | "partially_delivered"
    )
}

/// Settings of the receipt store.
#[derive(Debug, Clone)]
pub struct ReceiptTimes {
    /// How long records and links live (the sent TTL); a status callback is remembered as a
    /// repeat as long as its run's record lives (the marker is a field of the record).
    pub record_ttl: Duration,
    /// After how long without a terminal status a message is looked up.
    pub poll_after: Duration,
}

/// The escalation marker lives this many times the record's lifetime (`RINGBACK_SENT_TTL_MS`):
/// a replayed status callback after the record expired finds the marker and escalates nothing.
pub const ESCALATED_MARKER_LIVES: u64 = 4;

/// The rank of a terminal status (delivered, undelivered, failed, …; see receipt_apply.lua).
const TERMINAL_RANK: u8 = 3;

/// How many scheduled messages the receipts-missing gauge reads per refresh.
/// Scheduled messages the backlog gauge reads in one pass (three pipelined round trips).
const BACKLOG_READ: isize = 2_000;

/// The callback records.
#[derive(Clone, Debug)]
pub struct Receipts {
    conn: Conn,
    trips: Arc<RoundTrips>,
    claim_prefix: String,
    times: ReceiptTimes,
    topology: Topology,
}

impl Receipts {
    /// The records on `conn`, keyed by `claim_prefix` as the claims are, laid out for its
    /// topology (one slot per call on a cluster, or as `RINGBACK_DRILL_PER_SLOT` forces).
    pub fn new(conn: Conn, claim_prefix: String, times: ReceiptTimes) -> Self {
        Self {
            topology: Topology::forced_or(Topology::of(&conn)),
            conn,
            trips: Default::default(),
            claim_prefix,
            times,
        }
    }

    /// Redis round trips this store made (all clones), for measurements.
    pub fn round_trips(&self) -> u64 {
        self.trips.get()
    }

    /// The claim prefix the records are keyed by (the console reads them directly).
    pub fn claim_prefix(&self) -> &str {
        &self.claim_prefix
    }

    /// How long records live and when a message without a final status is looked up.
    pub fn times(&self) -> &ReceiptTimes {
        &self.times
    }

    /// Lay the calls out for `topology` (see [`Topology`]).
    pub fn with_topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    /// Apply one status to its run's record: one call, in the run's slot (the repeat marker is
    /// a field of the record, `seen:<repeat id>`). A second call only when the record did not
    /// know this MessageSid (the send was never marked, or another message of the run): its
    /// link is written then.
    pub async fn apply(&self, u: &StatusUpdate) -> Result<Applied, Error> {
        let w = WindowKeys::new(&self.claim_prefix, &u.run_id);
        let r: Vec<String> = scripts()
            .receipt_apply
            .call()
            .key("callback record", w.record)
            .key(
                "history list",
                keys::callback_history(&self.claim_prefix, &u.run_id),
            )
            .key("ladder record", keys::ladder(&self.claim_prefix, &u.run_id))
            .arg("runId", &u.run_id)
            .arg("MessageSid", &u.sid)
            .arg("status", &u.status)
            .arg("error code", u.error_code.as_deref().unwrap_or(""))
            .arg(
                "RawDlrDoneDate",
                u.raw_dlr_done_date.as_deref().unwrap_or(""),
            )
            .arg("now (ms)", now_ms())
            .arg("source", u.source.as_str())
            .arg("repeat id", u.repeat_id.as_deref().unwrap_or(""))
            .arg("record TTL (ms)", self.times.record_ttl.as_millis())
            .arg("the attempt token", u.attempt.as_deref().unwrap_or(""))
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        let [outcome, status, previous, unlinked, ladder] = r.as_slice() else {
            return Err(Error::Reply {
                script: "receipt_apply",
                detail: format!("{r:?}"),
            });
        };
        if unlinked == "1" {
            let _: () = redis::cmd("SET")
                .arg(keys::message_link(&u.sid))
                .arg(&u.run_id)
                .arg("PX")
                .arg(self.times.record_ttl.as_millis() as u64)
                .round_trip(&mut self.conn.clone(), &self.trips)
                .await?;
        }
        Ok(Applied {
            outcome: outcome.clone(),
            status: status.clone(),
            previous: previous.clone(),
            ladder: ladder == "1" || crate::ladder::may_be_step_run(&u.run_id),
        })
    }

    /// Whether the run's record already ends in a terminal status for `sid` (the reconciler
    /// drops such a sid from its schedule instead of looking it up: the webhook's one call
    /// leaves the schedule alone).
    pub async fn settled(&self, run_id: &str, sid: &str) -> Result<bool, Error> {
        let (rec_sid, rank): (Option<String>, Option<u8>) = redis::cmd("HMGET")
            .arg(WindowKeys::new(&self.claim_prefix, run_id).record)
            .arg("sid")
            .arg("rank")
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(rec_sid.as_deref() == Some(sid) && rank.is_some_and(|r| r >= TERMINAL_RANK))
    }

    /// Keep which long runId `short_key` names, as long as the run's record lives: written
    /// before the create whose StatusCallback URL carries the key.
    pub async fn link_short_key(&self, short_key: &str, run_id: &str) -> Result<(), Error> {
        let _: () = redis::cmd("SET")
            .arg(keys::run_key_link(&self.claim_prefix, short_key))
            .arg(run_id)
            .arg("PX")
            .arg(self.times.record_ttl.as_millis().max(1) as u64)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// The long runId a status callback's short key names ([`Self::link_short_key`]).
    pub async fn run_of_short_key(&self, short_key: &str) -> Result<Option<String>, Error> {
        Ok(redis::cmd("GET")
            .arg(keys::run_key_link(&self.claim_prefix, short_key))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// The run a MessageSid belongs to, as recorded at send time or by an earlier callback.
    pub async fn run_of(&self, sid: &str) -> Result<Option<String>, Error> {
        Ok(redis::cmd("GET")
            .arg(keys::message_link(sid))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Take up to `n` messages due for a poll (leased for `lease`).
    pub async fn due_polls(&self, n: usize, lease: Duration) -> Result<Vec<String>, Error> {
        Ok(scripts()
            .claim_due
            .call()
            .key("the schedule", keys::reconcile_schedule(&self.claim_prefix))
            .arg("now (ms)", now_ms())
            .arg("max members", n)
            .arg("lease (ms)", lease.as_millis())
            .run(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Stop polling a message (no run, or settled).
    pub async fn forget_poll(&self, sid: &str) -> Result<(), Error> {
        redis::cmd("ZREM")
            .arg(keys::reconcile_schedule(&self.claim_prefix))
            .arg(sid)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// The reconciliation backlog: messages waiting for a final receipt, and how many of them
    /// were sent more than `deadline` ago. A message whose final receipt the webhook recorded
    /// is not waiting: its sid stays in the poll schedule until it comes due (the webhook's
    /// one call in the run's slot never touches the shared schedule), so this pass reads each
    /// scheduled sid's record, counts the ones without a final status, and drops the others
    /// from the schedule (as the reconciler would when they come due). At most
    /// `BACKLOG_READ` sids are read a pass; beyond them each is counted as waiting.
    pub async fn receipt_backlog(&self, deadline: Duration) -> Result<(u64, u64), Error> {
        let schedule = keys::reconcile_schedule(&self.claim_prefix);
        let (count, sids): (u64, Vec<String>) = redis::pipe()
            .cmd("ZCARD")
            .arg(&schedule)
            .cmd("ZRANGE")
            .arg(&schedule)
            .arg(0)
            .arg(BACKLOG_READ - 1)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        if sids.is_empty() {
            return Ok((count, 0));
        }
        let mut pipe = redis::pipe();
        for sid in &sids {
            pipe.cmd("GET").arg(keys::message_link(sid));
        }
        let runs: Vec<Option<String>> =
            pipe.round_trip(&mut self.conn.clone(), &self.trips).await?;
        let mut pipe = redis::pipe();
        for run in runs.iter().flatten() {
            let w = WindowKeys::new(&self.claim_prefix, run);
            pipe.cmd("HMGET").arg(&w.record).arg("sid").arg("rank");
            pipe.cmd("HGET").arg(&w.attempt).arg("sent_at");
        }
        let read: Vec<redis::Value> = pipe.round_trip(&mut self.conn.clone(), &self.trips).await?;
        let before = now_ms() - deadline.as_millis() as i64;
        let (mut waiting, mut missing, mut settled) = (0u64, 0u64, vec![]);
        let mut replies = read.chunks(2);
        for (sid, run) in sids.iter().zip(&runs) {
            if run.is_none() {
                // no run to settle it for: waiting until the reconciler drops it
                waiting += 1;
                continue;
            }
            let Some([record, sent_at]) = replies.next() else {
                break;
            };
            let (rec_sid, rank): (Option<String>, Option<u8>) =
                redis::from_redis_value(record.clone()).unwrap_or((None, None));
            if rec_sid.as_deref() == Some(sid.as_str()) && rank.is_some_and(|r| r >= TERMINAL_RANK)
            {
                settled.push(sid.clone());
                continue;
            }
            waiting += 1;
            let sent: Option<i64> = redis::from_redis_value(sent_at.clone()).unwrap_or(None);
            if sent.is_some_and(|t| t < before) {
                missing += 1;
            }
        }
        if !settled.is_empty() {
            redis::cmd("ZREM")
                .arg(&schedule)
                .arg(&settled)
                .round_trip::<()>(&mut self.conn.clone(), &self.trips)
                .await?;
        }
        let unread = count.saturating_sub(sids.len() as u64);
        Ok((waiting + unread, missing))
    }
}
