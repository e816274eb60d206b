//! Escalation: a callback that ends undelivered or failed, a send that failed permanently, or a
//! callback with no terminal status by the delivery deadline, is escalated exactly once: a job
//! on the escalations queue (BullMQ, for whoever handles them), and optionally a text to a
//! fallback number through the same exactly-once window (run `<runId>:escalation`).
//!
//! Exactly once rests on job ids: both jobs are added with ids derived from the run, which
//! BullMQ's layout refuses to add twice, whichever replica escalates and however often.

use crate::callback::CALLBACK_JOB_OPTS;
use crate::receipts::Receipts;
use ringback_queue::calls::Calls;
use ringback_shared::error::Error;

/// Why a callback was escalated: the `reason` label of `ringback_escalations_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EscalationKind {
    /// A status callback or a poll found the message undelivered or failed.
    Undelivered,
    /// Twilio refused the message for good (validation, opt-out).
    Permanent,
    /// Whether the text went out cannot be proven yet (lookups failing): still being resolved,
    /// and sent once a complete lookup proves it was not.
    Unknown,
    /// Whether the text went out cannot be told (an unlinked look-alike message): settled, never
    /// sent again.
    UnknownSettled,
    /// No final receipt by the delivery deadline.
    ReceiptMissing,
    /// `ringback drain` gave up on an open attempt.
    Drain,
    /// A fault of this deployment (or of the destination) has held it past
    /// `RINGBACK_HOLD_ESCALATE_MS`: not sent yet, sent once the fault is fixed.
    Held,
    /// The job's data is not a callback ringback can send (the reason names the field): it is
    /// failed, never texted.
    Invalid,
    /// The callback's escalation ladder ran out: nobody acknowledged the text, the calls or
    /// the next people's texts and calls.
    Unacknowledged,
    /// Its escalation ladder was still climbing when ringback was rolled back
    /// (`ringback drain --end-ladders`): its next calls and texts will not come.
    Rollback,
}

impl EscalationKind {
    /// Every kind, in the order of the metric's pre-created `reason` labels.
    pub const ALL: [EscalationKind; 10] = [
        Self::Undelivered,
        Self::Permanent,
        Self::Unknown,
        Self::UnknownSettled,
        Self::ReceiptMissing,
        Self::Drain,
        Self::Held,
        Self::Invalid,
        Self::Unacknowledged,
        Self::Rollback,
    ];

    /// The `reason` label of `ringback_escalations_total`, and the job's `kind`.
    pub fn label(self) -> &'static str {
        match self {
            Self::Undelivered => "undelivered",
            Self::Permanent => "permanent",
            Self::Unknown => "unknown",
            Self::UnknownSettled => "unknown_settled",
            Self::ReceiptMissing => "receipt_missing",
            Self::Held => "held",
            Self::Invalid => "invalid",
            Self::Drain => "drain",
            Self::Unacknowledged => "unacknowledged",
            Self::Rollback => "rollback",
        }
    }
}

/// Options of an escalation job: kept until handled, retried as a callback is.
const ESCALATION_JOB_OPTS: &str = r#"{"attempts":5,"backoff":{"type":"exponential","delay":1000}}"#;

/// Escalates a run exactly once per kind: an escalation job, and maybe a fallback text.
#[derive(Clone, Debug)]
pub struct Escalator {
    /// The escalations queue (`RINGBACK_ESCALATION_QUEUE`, `<queue>-escalations` by default).
    pub escalations: Calls,
    /// The callbacks queue, where a fallback text is enqueued as a callback job of its own.
    pub callbacks: Calls,
    /// The run records: the escalation markers, and which runs are fallbacks themselves.
    pub receipts: Receipts,
    /// `RINGBACK_FALLBACK_TO`: the number also texted on an escalation; `None`: jobs only.
    pub fallback_to: Option<String>,
    /// The name fallback texts (and the API's sends) are enqueued under: the first of
    /// `RINGBACK_CALLBACK_JOB_NAMES`.
    pub callback_job_name: String,
    /// The ladders: a run that climbs one is escalated when it ends unacknowledged, and the
    /// failures that escalate a plain callback climb it instead.
    pub ladders: crate::ladder::record::LadderRecord,
}

/// Why a callback is escalated.
#[derive(Debug, Clone)]
pub struct Escalation {
    /// The run escalated (`job:<jobId>` for an invalid job); names the escalation job's id.
    pub run_id: String,
    /// What happened, in words for the person: goes in the job and the fallback text.
    pub reason: String,
    /// The message's last Twilio status (`undelivered`, `failed`); `None` when none was seen.
    pub last_status: Option<String>,
    /// Twilio's error code for the message or the refused create; `None` when Twilio gave none.
    pub error_code: Option<String>,
    /// The `reason` label it is counted under.
    pub kind: EscalationKind,
}

impl EscalationKind {
    /// What this kind tells the person, in the fallback text and the job's `meaning`.
    pub fn meaning(self) -> &'static str {
        match self {
            Self::Undelivered => "was not delivered",
            Self::Permanent => "was refused by Twilio and not sent",
            Self::Unknown => {
                "may have been sent; ringback is still checking and sends it only once it proves it was not"
            }
            Self::UnknownSettled => "may have been sent; ringback will not send it again",
            Self::ReceiptMissing => "was accepted by Twilio but is not delivered yet",
            Self::Drain => "may have been sent; ringback drain stopped before it could tell",
            Self::Invalid => {
                "was not sent: its job data is not a callback ringback can send (the reason names the field)"
            }
            Self::Unacknowledged => {
                "was sent, but nobody acknowledged it: every step of its escalation ladder (calls, the next people's texts and calls) went unanswered"
            }
            Self::Rollback => {
                "was sent, but nobody acknowledged it yet, and its escalation ladder was ended by a rollback: no further call or text of it will come"
            }
            Self::Held => {
                "is not sent yet: a fault of this deployment (its sender, account or a region it may not text) holds it; ringback sends it once the fault is fixed"
            }
        }
    }
}

/// At most this many fallback texts for invalid jobs per [`INVALID_FALLBACK_WINDOW`] in one
/// process; the escalation jobs are made for every one, and RingbackInvalidJobs alerts.
const INVALID_FALLBACKS: u64 = 5;
const INVALID_FALLBACK_WINDOW: std::time::Duration = std::time::Duration::from_secs(600);

/// Whether one more invalid job's fallback text fits the bound.
fn invalid_fallback_allowed() -> bool {
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
    static WINDOW_START: AtomicI64 = AtomicI64::new(0);
    static SENT: AtomicU64 = AtomicU64::new(0);
    let now = ringback_shared::clock::now_ms();
    let start = WINDOW_START.load(Ordering::Relaxed);
    if now - start >= INVALID_FALLBACK_WINDOW.as_millis() as i64
        && WINDOW_START
            .compare_exchange(start, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        SENT.store(0, Ordering::Relaxed);
    }
    SENT.fetch_add(1, Ordering::Relaxed) < INVALID_FALLBACKS
}

impl Escalator {
    /// Escalate once per kind; returns true when this call made the escalation exist.
    ///
    /// Once per run and kind, for longer than the run's record lives: the kind's marker
    /// ([`ringback_store::keys::escalated_kind_marker`]) is checked first and written last, after the
    /// jobs, which are deduplicated by their ids: a crash or an error between two steps leaves
    /// no marker, and the next path that sees the run escalates it (nothing is lost, nothing
    /// doubled). The run's first escalation keeps the job id `escalation:<runId>`; a later,
    /// different kind gets `escalation:<runId>:<kind>`.
    pub async fn escalate(&self, e: &Escalation) -> Result<bool, Error> {
        if self.climbs_instead(e).await? {
            return Ok(false);
        }
        // a fallback text's own run is never escalated further: known by its record (written
        // when the fallback was asked for), not by its name, so a producer's runId that happens
        // to end in `:escalation` is escalated like any other
        if let Some(of) = self.receipts.fallback_of(&e.run_id).await? {
            tracing::error!(run_id = %e.run_id, fallback_of = %of, reason = %ringback_shared::redact::redact(&e.reason), "the fallback text itself failed; not escalating further");
            return Ok(false);
        }
        let kind = e.kind.label();
        if self.receipts.was_escalated_as(&e.run_id, kind).await? {
            tracing::debug!(run_id = %e.run_id, kind, "already escalated");
            return Ok(false);
        }
        // a runId beyond 2^53 is named by its key, as the legacy worker keys it; its exact
        // digits go with it, so a person finds the job (a run refused for sharing a key with
        // another is `invalid`, and its reason names both)
        let exact = match e.kind {
            EscalationKind::Invalid => None,
            _ => self.receipts.exact_digits(&e.run_id).await?,
        };
        let data = serde_json::json!({
            "runId": e.run_id, "kind": kind, "meaning": e.kind.meaning(), "reason": e.reason,
            "lastStatus": e.last_status, "errorCode": e.error_code, "exactRunId": exact,
        });
        let first_id = format!("escalation:{}", e.run_id);
        let kind_id = format!("escalation:{}:{kind}", e.run_id);
        // The first id is this kind's unless a job of another kind holds it.
        let same_kind = |held: &str| job_kind(held).is_none_or(|k| k == kind);
        let first = match self.escalations.job_data(&first_id).await? {
            None if !self.receipts.was_escalated(&e.run_id).await? => true,
            // A marker appeared after the read: another process escalated the run meanwhile, and
            // its job was added before its marker. Read the first id again: the same kind there
            // is this escalation, not a second one.
            None => self
                .escalations
                .job_data(&first_id)
                .await?
                .is_some_and(|held| same_kind(&held)),
            // a job written before kinds existed was the run's one escalation: it stands for
            // this kind too (an upgrade escalates nothing twice)
            Some(held) => same_kind(&held),
        };
        let id = if first { first_id } else { kind_id };
        self.escalations
            .add_job(
                Some(&id),
                "escalation",
                &data.to_string(),
                ESCALATION_JOB_OPTS,
            )
            .await?;
        // a held callback's fallback text would go through the same broken sender
        // a held callback's fallback would go through the same broken sender; a broken producer
        // must not flood the fallback number with invalid jobs
        let fallback = match e.kind {
            EscalationKind::Held => false,
            EscalationKind::Invalid => invalid_fallback_allowed(),
            _ => true,
        };
        let mut fallback_run = None;
        if let Some(to) = self.fallback_to.as_ref().filter(|_| fallback) {
            // a long runId is named by its short key: the fallback's own runId stays short
            let name = crate::callback::short_name(&e.run_id);
            let run = if first {
                format!("{name}:escalation")
            } else {
                format!("{name}:escalation:{kind}")
            };
            let body = format!(
                "ringback: the callback for run {} {} ({}).",
                e.run_id,
                e.kind.meaning(),
                e.reason
            );
            let body: String = body.chars().take(crate::callback::MAX_BODY).collect();
            // a person on call is told whatever the hour: the fallback is urgent
            let data = serde_json::json!({
                "runId": run, "to": to, "body": body, "urgent": true, "fallbackOf": e.run_id,
            });
            self.callbacks
                .add_job(
                    Some(&run),
                    &self.callback_job_name,
                    &data.to_string(),
                    CALLBACK_JOB_OPTS,
                )
                .await?;
            fallback_run = Some(run);
        }
        self.receipts.mark_escalated(&e.run_id, &e.reason).await?;
        if let Some(run) = &fallback_run {
            self.receipts.note_fallback(&e.run_id, run).await?;
        }
        // the escalation (and its fallback text) on a replica before it counts as made: a
        // short wait is an error the caller tries again, never an escalation lost in silence
        let job = self.escalations.keys().job(&id);
        let record =
            ringback_store::keys::WindowKeys::new(self.receipts.claim_prefix(), &e.run_id).record;
        let fallback_job = fallback_run.as_ref().map(|r| self.callbacks.keys().job(r));
        let mut durable = vec![job.as_str(), record.as_str()];
        durable.extend(fallback_job.as_deref());
        self.escalations
            .connection()
            .confirm_durable(&durable)
            .await?;
        let created = self.receipts.remember_escalated(&e.run_id, kind).await?;
        if created {
            ringback_shared::telemetry::global().escalated(e.kind.label());
            tracing::warn!(run_id = %e.run_id, kind, reason = %ringback_shared::redact::redact(&e.reason), "callback escalated");
        }
        Ok(created)
    }

    /// A failure of a run whose ladder climbs (the text undelivered, refused, its receipt
    /// missing, held) starts the next step at once, kept on the ladder's record, instead of an
    /// escalation: the escalation comes when the ladder ends unacknowledged. A step's own text
    /// is never escalated: its failure climbs its ladder. True when the ladder took it.
    async fn climbs_instead(&self, e: &Escalation) -> Result<bool, Error> {
        let climbs = matches!(
            e.kind,
            EscalationKind::Undelivered
                | EscalationKind::Permanent
                | EscalationKind::ReceiptMissing
                | EscalationKind::Held
        );
        if let Some(of) = self.ladders.step_of(&e.run_id).await? {
            let why = format!("step text {}: {} ({})", e.run_id, e.kind.label(), e.reason);
            if climbs {
                self.ladders.climb(&of, None, &why).await?;
            }
            tracing::warn!(run_id = %e.run_id, ladder_of = %of, kind = e.kind.label(), "a ladder step's text failed; its ladder climbs on");
            return Ok(true);
        }
        if !climbs {
            return Ok(false);
        }
        let why = format!("{}: {}", e.kind.label(), e.reason);
        let climbing = self.ladders.climb(&e.run_id, None, &why).await?;
        if climbing {
            tracing::warn!(run_id = %e.run_id, kind = e.kind.label(), "callback failed; its ladder climbs instead of escalating");
        }
        Ok(climbing)
    }

    /// A delivered receipt of `run_id` (or of a ladder step's text): where no answer was
    /// asked, it acknowledges the run's ladder. Calls still ringing are left for a worker to
    /// end.
    pub async fn delivered(&self, run_id: &str) -> Result<(), Error> {
        let run = self
            .ladders
            .step_of(run_id)
            .await?
            .unwrap_or_else(|| run_id.to_string());
        let ack = self
            .ladders
            .ack(&run, crate::ladder::record::Channel::Delivered, "")
            .await?;
        if let crate::ladder::record::Ack::Stopped(ringing) = ack {
            ringback_shared::telemetry::global().ladder_step("ladder", "acknowledged");
            tracing::info!(run_id = %run, "delivered: the ladder stops");
            self.ladders.hang_up_later(&ringing).await?;
        }
        Ok(())
    }

    /// Tell the escalation queue that a run escalated as still resolving was resolved after
    /// all (`how`: "found-sent" or "sent"). Idempotent: one notice per run.
    pub async fn resolved(&self, run_id: &str, how: &str, sid: Option<&str>) -> Result<(), Error> {
        let data = serde_json::json!({
            "runId": run_id, "kind": "resolved", "resolution": how, "messageSid": sid,
            "meaning": "the callback escalated as unknown was resolved: the human was texted once",
        });
        self.escalations
            .add_job(
                Some(&format!("escalation:{run_id}:resolved")),
                "escalation-resolved",
                &data.to_string(),
                ESCALATION_JOB_OPTS,
            )
            .await?;
        tracing::info!(%run_id, how, "escalated callback resolved; notice queued");
        Ok(())
    }
}

/// The `kind` of an escalation job's data (`None` for jobs written before kinds existed).
fn job_kind(data: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(data).ok()?;
    v.get("kind")?.as_str().map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_pre_created_in_the_metrics() {
        assert_eq!(
            EscalationKind::ALL.map(EscalationKind::label),
            ringback_shared::telemetry::ESCALATION_REASONS
        );
    }

    #[test]
    fn reads_the_kind_of_a_job() {
        assert_eq!(
            job_kind(r#"{"runId":"r","kind":"unknown","reason":"x"}"#).as_deref(),
            Some("unknown")
        );
        assert_eq!(job_kind(r#"{"runId":"r","reason":"x"}"#), None);
    }

    #[test]
    fn every_kind_says_what_it_means() {
        for k in [
            EscalationKind::Unknown,
            EscalationKind::UnknownSettled,
            EscalationKind::Drain,
        ] {
            assert!(k.meaning().contains("may have been sent"), "{k:?}");
            assert!(!k.meaning().contains("not delivered"), "{k:?}");
        }
        assert!(
            EscalationKind::ReceiptMissing
                .meaning()
                .contains("not delivered yet")
        );
    }
}
