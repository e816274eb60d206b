//! Delivery receipts: what happened to a callback after Twilio accepted it. Status callbacks
//! and polls are applied to the run's callback record by one Lua script (`receipt_apply.lua`),
//! ranked so a record never moves backwards whatever order Twilio delivers them in.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use crate::store::connection::Conn;
use serde::Serialize;

use crate::error::Error;
use crate::queue::commands::now_ms;
use crate::store::keys::{self, WindowKeys};
use crate::store::scripts::{RoundTrips, scripts};
use crate::store::slots::Topology;

/// Where a status came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Webhook,
    Poll,
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
    pub run_id: String,
    pub sid: String,
    pub status: String,
    pub error_code: Option<String>,
    pub raw_dlr_done_date: Option<String>,
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
    pub status: String,
    pub previous: String,
}

impl Applied {
    /// This update newly made the record end in a failed delivery.
    pub fn newly_failed(&self) -> bool {
        self.outcome == "applied" && self.ends_failed()
    }

    /// Count a newly failed delivery by its error code (`ringback_delivery_errors_total`).
    pub fn count_delivery_error(&self, code: Option<&str>) {
        if self.newly_failed() {
            crate::telemetry::global().delivery_error(code);
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
const RECEIPT_SAMPLE: isize = 200;

/// The callback records.
#[derive(Clone)]
pub struct Receipts {
    conn: Conn,
    trips: Arc<RoundTrips>,
    claim_prefix: String,
    times: ReceiptTimes,
    topology: Topology,
}

impl Receipts {
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
        let keys = [
            w.record,
            keys::callback_history(&self.claim_prefix, &u.run_id),
        ];
        let now = now_ms();
        let record_ttl = self.times.record_ttl.as_millis().to_string();
        let args = [
            u.run_id.as_str(),
            &u.sid,
            &u.status,
            u.error_code.as_deref().unwrap_or(""),
            u.raw_dlr_done_date.as_deref().unwrap_or(""),
            &now.to_string(),
            u.source.as_str(),
            u.repeat_id.as_deref().unwrap_or(""),
            &record_ttl,
            u.attempt.as_deref().unwrap_or(""),
        ];
        let r: Vec<String> = scripts()
            .receipt_apply
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &keys,
                &args,
            )
            .await?;
        let [outcome, status, previous, unlinked] = r.as_slice() else {
            return Err(Error::Reply {
                script: "receipt_apply",
                detail: format!("{r:?}"),
            });
        };
        if unlinked == "1" {
            self.trips.add(1);
            let _: () = redis::cmd("SET")
                .arg(keys::message_link(&u.sid))
                .arg(&u.run_id)
                .arg("PX")
                .arg(&record_ttl)
                .query_async(&mut self.conn.clone())
                .await?;
        }
        Ok(Applied {
            outcome: outcome.clone(),
            status: status.clone(),
            previous: previous.clone(),
        })
    }

    /// Whether the run's record already ends in a terminal status for `sid` (the reconciler
    /// drops such a sid from its schedule instead of looking it up: the webhook's one call
    /// leaves the schedule alone).
    pub async fn settled(&self, run_id: &str, sid: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let (rec_sid, rank): (Option<String>, Option<u8>) = redis::cmd("HMGET")
            .arg(WindowKeys::new(&self.claim_prefix, run_id).record)
            .arg("sid")
            .arg("rank")
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(rec_sid.as_deref() == Some(sid) && rank.is_some_and(|r| r >= TERMINAL_RANK))
    }

    /// Keep which long runId `short_key` names, as long as the run's record lives: written
    /// before the create whose StatusCallback URL carries the key.
    pub async fn link_short_key(&self, short_key: &str, run_id: &str) -> Result<(), Error> {
        self.trips.add(1);
        let _: () = redis::cmd("SET")
            .arg(keys::run_key_link(&self.claim_prefix, short_key))
            .arg(run_id)
            .arg("PX")
            .arg(self.times.record_ttl.as_millis().max(1) as u64)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The long runId a status callback's short key names ([`Self::link_short_key`]).
    pub async fn run_of_short_key(&self, short_key: &str) -> Result<Option<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("GET")
            .arg(keys::run_key_link(&self.claim_prefix, short_key))
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// The run a MessageSid belongs to, as recorded at send time or by an earlier callback.
    pub async fn run_of(&self, sid: &str) -> Result<Option<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("GET")
            .arg(keys::message_link(sid))
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Take up to `n` messages due for a poll (leased for `lease`).
    pub async fn due_polls(&self, n: usize, lease: Duration) -> Result<Vec<String>, Error> {
        let args = [
            now_ms().to_string(),
            n.to_string(),
            lease.as_millis().to_string(),
        ];
        let keys = [keys::reconcile_schedule(&self.claim_prefix)];
        Ok(scripts()
            .claim_due
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?)
    }

    /// Stop polling a message (no run, or settled).
    pub async fn forget_poll(&self, sid: &str) -> Result<(), Error> {
        self.trips.add(1);
        redis::cmd("ZREM")
            .arg(keys::reconcile_schedule(&self.claim_prefix))
            .arg(sid)
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Mark the run escalated; true only the first time (exactly once). A run escalated before
    /// any status (a send that failed, a run settled as unknown) has no record yet: the flag
    /// starts one, which then gets the record TTL here (it would otherwise never expire: only a
    /// status gives a record its TTL).
    pub async fn mark_escalated(&self, run_id: &str, reason: &str) -> Result<bool, Error> {
        let record = WindowKeys::new(&self.claim_prefix, run_id).record;
        self.trips.add(1);
        let (first, ttl): (i64, i64) = redis::pipe()
            .cmd("HSETNX")
            .arg(&record)
            .arg("escalated")
            .arg(format!("{}:{reason}", now_ms()))
            .cmd("PTTL")
            .arg(&record)
            .query_async(&mut self.conn.clone())
            .await?;
        if ttl == -1 {
            self.trips.add(1);
            redis::cmd("PEXPIRE")
                .arg(&record)
                .arg(self.times.record_ttl.as_millis() as u64)
                .query_async::<()>(&mut self.conn.clone())
                .await?;
        }
        Ok(first == 1)
    }

    /// The reconciliation backlog: messages waiting for a final receipt, and how many of them
    /// (among the first `RECEIPT_SAMPLE` scheduled) were sent more than `deadline` ago.
    pub async fn receipt_backlog(&self, deadline: Duration) -> Result<(u64, u64), Error> {
        let schedule = keys::reconcile_schedule(&self.claim_prefix);
        self.trips.add(1);
        let (count, sids): (u64, Vec<String>) = redis::pipe()
            .cmd("ZCARD")
            .arg(&schedule)
            .cmd("ZRANGE")
            .arg(&schedule)
            .arg(0)
            .arg(RECEIPT_SAMPLE - 1)
            .query_async(&mut self.conn.clone())
            .await?;
        if sids.is_empty() {
            return Ok((count, 0));
        }
        let mut pipe = redis::pipe();
        for sid in &sids {
            pipe.cmd("GET").arg(keys::message_link(sid));
        }
        self.trips.add(1);
        let runs: Vec<Option<String>> = pipe.query_async(&mut self.conn.clone()).await?;
        let mut pipe = redis::pipe();
        for run in runs.iter().flatten() {
            pipe.cmd("HGET")
                .arg(WindowKeys::new(&self.claim_prefix, run).attempt)
                .arg("sent_at");
        }
        self.trips.add(1);
        let sent: Vec<Option<i64>> = pipe.query_async(&mut self.conn.clone()).await?;
        let before = now_ms() - deadline.as_millis() as i64;
        let missing = sent.into_iter().flatten().filter(|t| *t < before).count() as u64;
        Ok((count, missing))
    }

    /// Whether this run's escalation was already created (its marker outlives the record).
    pub async fn was_escalated(&self, run_id: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let n: i64 = redis::cmd("EXISTS")
            .arg(keys::escalated_marker(&self.claim_prefix, run_id))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(n == 1)
    }

    /// Remember that this run's escalation of `kind` exists, for [`ESCALATED_MARKER_LIVES`]
    /// times the record's lifetime; true when this call wrote the kind's marker first.
    pub async fn remember_escalated(&self, run_id: &str, kind: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let ttl = self.times.record_ttl.as_millis().max(1) as u64 * ESCALATED_MARKER_LIVES;
        let (_, first): ((), Option<String>) = redis::pipe()
            .cmd("SET")
            .arg(keys::escalated_marker(&self.claim_prefix, run_id))
            .arg(now_ms())
            .arg("PX")
            .arg(ttl)
            .cmd("SET")
            .arg(keys::escalated_kind_marker(
                &self.claim_prefix,
                run_id,
                kind,
            ))
            .arg(now_ms())
            .arg("PX")
            .arg(ttl)
            .arg("NX")
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(first.is_some())
    }

    /// Whether this run's escalation of `kind` exists.
    pub async fn was_escalated_as(&self, run_id: &str, kind: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let n: i64 = redis::cmd("EXISTS")
            .arg(keys::escalated_kind_marker(
                &self.claim_prefix,
                run_id,
                kind,
            ))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(n == 1)
    }

    /// The callback record of a run, for people and the API.
    pub async fn record(
        &self,
        run_id: &str,
        queue: Option<&crate::queue::commands::Commands>,
    ) -> Result<CallbackRecord, Error> {
        let w = WindowKeys::new(&self.claim_prefix, run_id);
        self.trips.add(1);
        let (fields, attempt, history, claim): RecordParts = redis::pipe()
            .hgetall(&w.record)
            .hgetall(&w.attempt)
            .lrange(keys::callback_history(&self.claim_prefix, run_id), 0, -1)
            .get(&w.claim)
            .query_async(&mut self.conn.clone())
            .await?;
        let queued = match queue {
            Some(q) => q.job_exists(run_id).await?,
            None => false,
        };
        let state = derive_state(&fields, &attempt, claim.as_deref(), queued);
        Ok(CallbackRecord {
            run_id: run_id.to_string(),
            state,
            message_sid: fields
                .get("sid")
                .cloned()
                .or_else(|| attempt.get("sid").cloned()),
            status: fields.get("status").cloned(),
            error_code: fields.get("error_code").cloned(),
            error: attempt.get("error").cloned(),
            escalated: fields.contains_key("escalated"),
            conflict: fields.contains_key("conflict"),
            history: history_of(&fields, &history),
        })
    }
}

/// A run's receipt history in arrival order: the send's own entry first when the record holds
/// it (its `send` field: a send that starts the record writes its entry there, not to the list,
/// see `applyReceipt` in lua/include/window.lua; such a record had seen no ranked status, so
/// nothing ranked came before it), then the history list's entries. Entries that are not JSON
/// are left out. (Not by time: the send's time is Redis's clock, a status callback's the
/// receiving server's, and the two may differ by more than the gap between them.)
pub fn history_of(record: &HashMap<String, String>, list: &[String]) -> Vec<serde_json::Value> {
    let send = record
        .get("send")
        .and_then(|e| send_entry(e, record.get("sid")));
    send.into_iter()
        .chain(list.iter().filter_map(|h| serde_json::from_str(h).ok()))
        .collect()
}

/// The record's `send` field as a history entry. Since session 10 it is `<at> <status>
/// <attempt>` (`sendEntry` in lua/include/window.lua: a value short enough that Redis keeps the
/// record in its compact encoding), the rest of the entry being the record's own: its sid, source
/// `send`, outcome `applied`. Records written before (and a send with an error code or a DLR
/// date) hold the entry's JSON. Anything else is left out.
fn send_entry(field: &str, sid: Option<&String>) -> Option<serde_json::Value> {
    if field.starts_with('{') {
        return serde_json::from_str(field).ok();
    }
    let mut parts = field.splitn(3, ' ');
    let at: u64 = parts.next()?.parse().ok()?;
    let status = parts.next().filter(|s| !s.is_empty())?;
    let attempt = parts.next()?;
    let mut entry = serde_json::json!({
        "status": status, "at": at, "source": "send", "outcome": "applied",
    });
    if let Some(sid) = sid {
        entry["sid"] = sid.as_str().into();
    }
    if !attempt.is_empty() {
        entry["attempt"] = attempt.into();
    }
    Some(entry)
}

/// The record hash, the attempt hash, the history and the claim value.
type RecordParts = (
    HashMap<String, String>,
    HashMap<String, String>,
    Vec<String>,
    Option<String>,
);

/// A callback's record, as `GET /api/notify/callbacks/{runId}` and `ringback status` show it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CallbackRecord {
    #[serde(rename = "runId")]
    pub run_id: String,
    /// queued, claimed, accepted, sent, delivered, undelivered, failed, send-failed, unknown.
    pub state: String,
    #[serde(rename = "messageSid")]
    pub message_sid: Option<String>,
    /// Twilio's last status, as ranked.
    pub status: Option<String>,
    #[serde(rename = "errorCode")]
    pub error_code: Option<String>,
    /// Why the send failed or is unresolved (from the attempt record).
    pub error: Option<String>,
    pub escalated: bool,
    /// Two different terminal statuses arrived (the first was kept).
    pub conflict: bool,
    /// Every status seen: status, sid, at (ms), source (webhook, poll, send), outcome.
    pub history: Vec<serde_json::Value>,
}

pub(crate) fn derive_state(
    rec: &HashMap<String, String>,
    attempt: &HashMap<String, String>,
    claim: Option<&str>,
    queued: bool,
) -> String {
    if let Some(status) = rec.get("status") {
        return match status.as_str() {
            "accepted" | "scheduled" | "queued" => "accepted",
            "sending" | "sent" => "sent",
            "delivered" | "read" => "delivered",
            "undelivered" => "undelivered",
            "failed" | "canceled" | "partially_delivered" => "failed",
            _ => "unknown",
        }
        .into();
    }
    match attempt.get("state").map(String::as_str) {
        Some("sent") => "accepted".into(),
        Some("send-failed") => "send-failed".into(),
        // settled as unknown: the claim says `sent:` (fenced for good), but nobody knows
        Some("unknown") => "unknown".into(),
        // the legacy worker finished the attempt ringback took over: its plain "sent"
        Some("claimed" | "ambiguous") if claim.is_some_and(|c| c.starts_with("sent")) => {
            "sent".into()
        }
        Some("claimed" | "ambiguous") => "claimed".into(),
        _ if claim.is_some_and(|c| c.starts_with("sent")) => "accepted".into(),
        _ if queued => "queued".into(),
        _ => "unknown".into(),
    }
}

#[cfg(test)]
mod state_tests {
    use super::derive_state;
    use std::collections::HashMap;

    #[test]
    fn a_run_the_legacy_worker_sent_after_a_takeover_shows_sent() {
        let attempt: HashMap<String, String> =
            [("state".to_string(), "ambiguous".to_string())].into();
        let none = HashMap::new();
        assert_eq!(derive_state(&none, &attempt, Some("sent"), false), "sent");
        assert_eq!(
            derive_state(&none, &attempt, Some("pending:t1"), false),
            "claimed"
        );
    }
}

#[cfg(test)]
mod history_tests {
    use super::history_of;
    use std::collections::HashMap;

    fn entry(status: &str, at: u64, source: &str) -> String {
        serde_json::json!({"status": status, "at": at, "source": source}).to_string()
    }

    fn statuses(h: &[serde_json::Value]) -> Vec<&str> {
        h.iter()
            .map(|e| e["status"].as_str().unwrap_or("?"))
            .collect()
    }

    #[test]
    fn the_records_send_entry_comes_first() {
        let list = vec![
            entry("sent", 100, "webhook"),
            entry("delivered", 300, "webhook"),
        ];
        let mut rec = HashMap::new();
        // a later time than the status callbacks' (another clock): still first
        rec.insert("send".to_string(), entry("queued", 400, "send"));
        let h = history_of(&rec, &list);
        assert_eq!(statuses(&h), ["queued", "sent", "delivered"]);
        // no list yet (the usual run before its first status callback): the send alone
        assert_eq!(statuses(&history_of(&rec, &[])), ["queued"]);
        // a record without one, and a list entry that is not JSON: the list's entries
        let h = history_of(
            &HashMap::new(),
            &[entry("sent", 1, "poll"), "{".to_string()],
        );
        assert_eq!(statuses(&h), ["sent"]);
        // a send entry that is neither JSON nor "<at> <status> <attempt>" is left out, the
        // list kept
        for bad in [
            "not json",
            "12 queued",
            "x queued tok",
            " queued tok",
            "12  tok",
            "{",
        ] {
            rec.insert("send".to_string(), bad.to_string());
            assert_eq!(
                statuses(&history_of(&rec, &list)),
                ["sent", "delivered"],
                "{bad:?}"
            );
        }
    }

    #[test]
    fn a_compact_send_entry_is_rebuilt_with_the_records_sid() {
        let mut rec = HashMap::new();
        rec.insert("send".to_string(), "1700000000123 queued tok-1".to_string());
        rec.insert("sid".to_string(), "SM1".to_string());
        let h = history_of(&rec, &[entry("delivered", 9, "webhook")]);
        assert_eq!(
            h[0],
            serde_json::json!({"status": "queued", "sid": "SM1", "at": 1700000000123u64,
                "source": "send", "outcome": "applied", "attempt": "tok-1"})
        );
        assert_eq!(statuses(&h), ["queued", "delivered"]);
        // no attempt token: no attempt field
        rec.insert("send".to_string(), "5 accepted ".to_string());
        let h = history_of(&rec, &[]);
        assert_eq!(
            h[0],
            serde_json::json!({"status": "accepted", "sid": "SM1", "at": 5,
                "source": "send", "outcome": "applied"})
        );
    }
}
