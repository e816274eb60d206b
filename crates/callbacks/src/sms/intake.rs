//! Before a claim: whether a job is one of ours (its name), whether its numeric runId shares a
//! key with another run's, when quiet hours let it go, and a job ringback will not text
//! escalated with its reason.

use ringback_queue::job::Job;

use super::{SmsEvent, SmsProcessor};
use crate::callback::CallbackRequest;

/// Why a run whose exact runId is `exact` is not texted: its key `key` (as JavaScript keys the
/// number) is held by run `other`.
pub(super) fn shared_key_reason(exact: &str, key: &str, other: &str) -> String {
    format!(
        "field `runId` {exact} is keyed {key} as JavaScript keys it (the nearest double), the key run {other} already holds: two runs cannot share one key, so this one is not texted"
    )
}

impl SmsProcessor {
    /// Whether `job`, a callback the stall limit failed (`req` read from its data), must not
    /// be adopted: its numeric runId beyond 2^53 shares its key with another run's digits. Such
    /// a job is escalated invalid, as it would have been had a worker run it.
    pub async fn shares_a_key(
        &self,
        job: &Job,
        req: &CallbackRequest,
    ) -> Result<bool, ringback_shared::error::Error> {
        let Some(exact) = crate::callback::exact_run_id(&req.run_id, &job.data) else {
            return Ok(false);
        };
        let Some(other) = self.window.number_owner(&req.run_id, &exact).await? else {
            return Ok(false);
        };
        let reason = shared_key_reason(&exact, &req.run_id, &other);
        self.escalate_invalid(job, &reason, false).await;
        Ok(true)
    }

    /// Whether jobs of this name are callbacks (`RINGBACK_CALLBACK_JOB_NAMES`).
    pub fn is_callback_name(&self, name: &str) -> bool {
        self.config.callback_job_names.iter().any(|n| n == name)
    }

    /// When the quiet hours that hold this moment (or start within the shortest validity a text
    /// is sent with) end (ms, on Redis's clock), for a callback that is not urgent; `None` when
    /// it may be sent now.
    pub fn quiet_until(&self, req: &CallbackRequest) -> Option<i64> {
        let quiet = self.config.quiet.as_ref().filter(|_| !req.urgent)?;
        quiet.waits_until(self.window.now(), req.time_zone.as_deref())
    }

    /// The `ValidityPeriod` of a send outside quiet hours: cut to the start of the next quiet
    /// window, so a text that waits in Twilio's queue is not delivered in the night.
    pub(super) fn validity_before_quiet(&self, req: &CallbackRequest) -> Option<u32> {
        let quiet = self.config.quiet.as_ref().filter(|_| !req.urgent)?;
        quiet.validity(
            self.window.now(),
            req.time_zone.as_deref(),
            self.twilio.config().validity_period,
        )
    }

    /// A job ringback will not text: a person hears of it (escalated `invalid`, with the reason,
    /// under `escalation:job:<jobId>`) before it fails, and, when `listed`, its run is found by
    /// its runId when the data has a usable one (not when that key is another run's); false
    /// when the escalation failed (the job is kept and tried again).
    pub(super) async fn escalate_invalid(&self, job: &Job, reason: &str, listed: bool) -> bool {
        let e = crate::escalation::Escalation {
            run_id: format!("job:{}", job.id),
            reason: format!("invalid callback job {}: {reason}", job.id),
            last_status: None,
            error_code: None,
            kind: crate::escalation::EscalationKind::Invalid,
        };
        if let Err(err) = self.escalator.escalate(&e).await {
            tracing::warn!(error = %err, job = %job.id, "could not escalate an invalid callback job; will try again");
            return false;
        }
        if listed
            && let Some(run_id) = crate::callback::readable_run_id(&job.data)
            && let Err(err) = self
                .receipts()
                .mark_invalid(&run_id, &job.id, &e.reason)
                .await
        {
            // the escalation stands: only the run's listing under its runId is missing
            tracing::warn!(error = %err, job = %job.id, "invalid callback job escalated, but not listed under its runId");
        }
        self.stats.record(SmsEvent::Invalid);
        true
    }
}
