//! Reconciliation of missing receipts: Twilio may never send a status callback. Accepted
//! messages without a terminal status are looked up (`GET …/Messages/{Sid}.json`) when due, and
//! the answer goes through the same Lua update as a webhook. Due checks live in a sorted set
//! claimed atomically (`claim_due.lua`), so replicas never poll one message twice at once. A
//! message still without a terminal status past the delivery deadline is escalated.
//!
//! The schedule is written by the send path only (`window_mark_sent.lua`); a status callback
//! does not touch it (its one call stays in the run's slot), so a sid whose record is already
//! terminal when it comes due is dropped here without a lookup. That is also the schedule's
//! repair rule: an entry outliving its message's terminal status is dropped when due; an entry
//! whose link is gone is dropped; a sid left unscheduled by a cut is polled by no one, but its
//! run's attempt stays open until the sent marker exists, and the send path schedules it again.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::escalation::{Escalation, Escalator};
use crate::receipts::{Receipts, Source, StatusUpdate, is_failed_status};
use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_twilio::TwilioClient;

/// Looks up accepted messages with no final status when due, and escalates what it finds.
#[derive(Debug)]
pub struct Reconciler {
    /// The run records: the poll schedule, the sid-to-run links, and where statuses go.
    pub receipts: Receipts,
    /// The Twilio client the lookups (`GET …/Messages/{Sid}.json`) go through.
    pub twilio: TwilioClient,
    /// Escalates a failed delivery, or a message with no final status by the deadline.
    pub escalator: Escalator,
    /// `RINGBACK_DELIVERY_DEADLINE_MS`: how long after Twilio accepted it a message may go
    /// without a final status before it is escalated `receipt_missing`.
    pub delivery_deadline: Duration,
}

impl Reconciler {
    /// Poll every due message once; returns how many were looked up.
    pub async fn run_once(&self) -> Result<usize, Error> {
        let due = self
            .receipts
            .due_polls(50, self.receipts.times().poll_after)
            .await?;
        for sid in &due {
            let Some(run_id) = self.receipts.run_of(sid).await? else {
                self.receipts.forget_poll(sid).await?;
                continue;
            };
            if self.receipts.settled(&run_id, sid).await? {
                // A status callback settled it; if it ended failed, its escalation may have
                // been cut short: escalate (idempotently) before the sid is forgotten.
                let record = self.receipts.record(&run_id, None).await?;
                if let Some(status) = record.status.as_deref().filter(|s| is_failed_status(s)) {
                    self.escalator
                        .escalate(&Escalation {
                            run_id: run_id.clone(),
                            reason: format!("delivery {status}"),
                            last_status: Some(status.to_string()),
                            error_code: record.error_code.clone(),
                            kind: crate::escalation::EscalationKind::Undelivered,
                        })
                        .await?;
                }
                self.receipts.forget_poll(sid).await?;
                continue;
            }
            let message = match self.twilio.fetch_message(sid).await {
                Ok(m) => m,
                Err(e) => {
                    tracing::warn!(%sid, error = %e, "reconciliation lookup failed; will retry");
                    continue;
                }
            };
            let status = message.status.clone().unwrap_or_default();
            let applied = self
                .receipts
                .apply(&StatusUpdate {
                    run_id: run_id.clone(),
                    sid: sid.clone(),
                    status: status.clone(),
                    error_code: message.error_code.map(|c| c.to_string()),
                    raw_dlr_done_date: None,
                    source: Source::Poll,
                    repeat_id: None,
                    attempt: None,
                })
                .await?;
            applied.count_delivery_error(message.error_code.map(|c| c.to_string()).as_deref());
            let record = self.receipts.record(&run_id, None).await?;
            let terminal = record
                .status
                .as_deref()
                .and_then(ringback_twilio::message::status_rank)
                .is_some_and(|r| r >= 3);
            if status == "delivered" && applied.ladder {
                self.escalator.delivered(&run_id).await?;
            }
            if terminal {
                self.receipts.forget_poll(sid).await?;
            }
            if applied.ends_failed() {
                self.escalator
                    .escalate(&Escalation {
                        run_id: run_id.clone(),
                        reason: format!("delivery {status}"),
                        last_status: Some(status.clone()),
                        error_code: record.error_code.clone(),
                        kind: crate::escalation::EscalationKind::Undelivered,
                    })
                    .await?;
            } else if !terminal && self.past_deadline(&record) {
                self.escalator
                    .escalate(&Escalation {
                        run_id: run_id.clone(),
                        reason: format!(
                            "no delivery receipt within {} s",
                            self.delivery_deadline.as_secs()
                        ),
                        last_status: record.status.clone(),
                        error_code: record.error_code.clone(),
                        kind: crate::escalation::EscalationKind::ReceiptMissing,
                    })
                    .await?;
            }
        }
        Ok(due.len())
    }

    fn past_deadline(&self, record: &crate::receipts::CallbackRecord) -> bool {
        let accepted = record
            .history
            .iter()
            .filter_map(|h| h.get("at").and_then(|a| a.as_i64()))
            .min()
            .unwrap_or_else(now_ms);
        now_ms() >= accepted + self.delivery_deadline.as_millis() as i64
    }

    /// Poll every `interval` until `cancel`.
    pub async fn run(self, interval: Duration, cancel: CancellationToken) {
        loop {
            if let Err(e) = self.run_once().await {
                tracing::warn!(error = %e, "reconciliation failed; will retry");
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    }
}
