//! Escalation: a callback that ends undelivered or failed, a send that failed permanently, or a
//! callback with no terminal status by the delivery deadline, is escalated exactly once: a job
//! on the escalations queue (BullMQ, for whoever handles them), and optionally a text to a
//! fallback number through the same exactly-once window (run `<runId>:escalation`).
//!
//! Exactly once rests on job ids: both jobs are added with ids derived from the run, which
//! BullMQ's layout refuses to add twice, whichever replica escalates and however often.

use crate::callback::{CALLBACK_JOB_NAME, CALLBACK_JOB_OPTS};
use crate::commands::Commands;
use crate::error::Error;
use crate::receipts::Receipts;
pub use crate::telemetry::EscalationKind;

/// Options of an escalation job: kept until handled, retried as a callback is.
const ESCALATION_JOB_OPTS: &str = r#"{"attempts":5,"backoff":{"type":"exponential","delay":1000}}"#;

#[derive(Clone)]
pub struct Escalator {
    pub escalations: Commands,
    pub callbacks: Commands,
    pub receipts: Receipts,
    pub fallback_to: Option<String>,
}

/// Why a callback is escalated.
#[derive(Debug, Clone)]
pub struct Escalation {
    pub run_id: String,
    pub reason: String,
    pub last_status: Option<String>,
    pub error_code: Option<String>,
    /// The `reason` label it is counted under.
    pub kind: EscalationKind,
}

impl Escalator {
    /// Escalate once; returns true when this call created the escalation.
    ///
    /// Once per run, for longer than the run's record lives: the marker
    /// ([`crate::keys::escalated_marker`]) is checked first and written last, and the jobs in
    /// between are deduplicated by their ids, so a crash between two steps escalates once too.
    pub async fn escalate(&self, e: &Escalation) -> Result<bool, Error> {
        if e.run_id.ends_with(":escalation") {
            tracing::error!(run_id = %e.run_id, reason = %crate::redact::redact(&e.reason), "the fallback text itself failed; not escalating further");
            return Ok(false);
        }
        if self.receipts.was_escalated(&e.run_id).await? {
            tracing::debug!(run_id = %e.run_id, "already escalated");
            return Ok(false);
        }
        let data = serde_json::json!({
            "runId": e.run_id, "reason": e.reason, "lastStatus": e.last_status, "errorCode": e.error_code,
        });
        let (_, created) = self
            .escalations
            .add_job(
                Some(&format!("escalation:{}", e.run_id)),
                "escalation",
                &data.to_string(),
                ESCALATION_JOB_OPTS,
            )
            .await?;
        if let Some(to) = &self.fallback_to {
            let run = format!("{}:escalation", e.run_id);
            let body = format!(
                "ringback: the callback for run {} was not delivered ({}).",
                e.run_id, e.reason
            );
            let body: String = body.chars().take(crate::callback::MAX_BODY).collect();
            let data = serde_json::json!({"runId": run, "to": to, "body": body});
            self.callbacks
                .add_job(
                    Some(&run),
                    CALLBACK_JOB_NAME,
                    &data.to_string(),
                    CALLBACK_JOB_OPTS,
                )
                .await?;
        }
        self.receipts.mark_escalated(&e.run_id, &e.reason).await?;
        self.receipts.remember_escalated(&e.run_id).await?;
        if created {
            crate::telemetry::global().escalated(e.kind);
            tracing::warn!(run_id = %e.run_id, reason = %crate::redact::redact(&e.reason), "callback escalated");
        }
        Ok(created)
    }
}
