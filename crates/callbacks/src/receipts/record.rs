//! A run's record as people read it (`ringback status`, the API, the console): its state and
//! its receipt history in arrival order.

use super::Receipts;
use std::collections::HashMap;

use serde::Serialize;

use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::keys::{self, WindowKeys};

impl Receipts {
    /// The callback record of a run, for people and the API.
    pub async fn record(
        &self,
        run_id: &str,
        queue: Option<&ringback_queue::calls::Calls>,
    ) -> Result<CallbackRecord, Error> {
        let w = WindowKeys::new(&self.claim_prefix, run_id);
        let (fields, attempt, history, claim): RecordParts = redis::pipe()
            .hgetall(&w.record)
            .hgetall(&w.attempt)
            .lrange(keys::callback_history(&self.claim_prefix, run_id), 0, -1)
            .get(&w.claim)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        let queued = match queue {
            Some(q) => q.job_exists(run_id).await?,
            None => false,
        };
        let state = derive_state(&fields, &attempt, claim.as_deref(), queued);
        let seen = queued
            || claim.is_some()
            || !(fields.is_empty() && attempt.is_empty() && history.is_empty());
        Ok(CallbackRecord {
            seen,
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

/// The record's `send` field as a history entry. Compactly it is `<at> <status>
/// <attempt>` (`sendEntry` in lua/include/window.lua: a value short enough that Redis keeps the
/// record in its compact encoding), the rest of the entry being the record's own: its sid, source
/// `send`, outcome `applied`. Records of the older layout (and a send with an error code or a DLR
/// date) hold the entry's JSON. Anything else is left out.
pub(super) fn send_entry(field: &str, sid: Option<&String>) -> Option<serde_json::Value> {
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
    /// The run asked about.
    #[serde(rename = "runId")]
    pub run_id: String,
    /// queued, claimed, accepted, sent, delivered, undelivered, failed, send-failed, invalid
    /// (an invalid job of the run was escalated, nothing sent), unknown.
    pub state: String,
    /// Twilio's MessageSid of the run's text; `None` until a create was accepted.
    #[serde(rename = "messageSid")]
    pub message_sid: Option<String>,
    /// Twilio's last status, as ranked.
    pub status: Option<String>,
    /// Twilio's error code for a failed delivery (such as 30003); `None` when it gave none.
    #[serde(rename = "errorCode")]
    pub error_code: Option<String>,
    /// Why the send failed or is unresolved (from the attempt record).
    pub error: Option<String>,
    /// The run was escalated (a job on the escalations queue, and maybe a fallback text).
    pub escalated: bool,
    /// Two different terminal statuses arrived (the first was kept).
    pub conflict: bool,
    /// Every status seen: status, sid, at (ms), source (webhook, poll, send), outcome.
    pub history: Vec<serde_json::Value>,
    /// Anything of the run exists: its job, claim, attempt or record. `false` is a run never
    /// seen (or one whose keys all expired), not a send whose outcome is unknown.
    #[serde(skip)]
    pub seen: bool,
}

/// A run's state as [`CallbackRecord::state`] names it, from its record, its attempt record,
/// its claim key's value (`pending:<token>`, `sent…`) and whether its job is still queued.
pub fn derive_state(
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
    // an invalid job of the run was escalated, and nothing of it was sent: not "unknown",
    // which is a send whose outcome is unknown
    if attempt.is_empty() && claim.is_none() && rec.contains_key("invalid_job") {
        return "invalid".into();
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
    pub(super) fn a_run_the_legacy_worker_sent_after_a_takeover_shows_sent() {
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

    pub(super) fn entry(status: &str, at: u64, source: &str) -> String {
        serde_json::json!({"status": status, "at": at, "source": source}).to_string()
    }

    pub(super) fn statuses(h: &[serde_json::Value]) -> Vec<&str> {
        h.iter()
            .map(|e| e["status"].as_str().unwrap_or("?"))
            .collect()
    }

    #[test]
    pub(super) fn the_records_send_entry_comes_first() {
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
    pub(super) fn a_compact_send_entry_is_rebuilt_with_the_records_sid() {
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
