//! The orphan sweep: an attempt whose window is still open past its deadline may have no live
//! job resolving it (its job was dropped: the legacy worker's `if (!claimed) return;` on a job
//! ringback crashed in, a job failed by the stall limit, or one removed by hand). The sweep
//! re-fences the claim (so no legacy retry can claim and send while the attempt is
//! unresolved) and resolves the attempt itself, from its durable record, exactly as a retry
//! would (receipt, lookup, reconcile window, then send): the attempt record is the outbox, so
//! a callback is never silently lost, and the sweep does not depend on which worker a queue
//! job would reach. Replicas may sweep together: taking an orphan is one atomic script, and
//! the window arbitrates between resolvers.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::callback::CallbackRequest;
use crate::processor::Outcome;
use crate::sms::SmsProcessor;

/// Sweep once: returns the runs it resolved (sent, or found sent).
pub async fn sweep(processor: &SmsProcessor) -> Result<Vec<String>, crate::error::Error> {
    let window = processor.window();
    let mut resolved = vec![];
    for run_id in window.overdue(100).await? {
        let Some(orphan) = window.sweep(&run_id).await? else {
            continue;
        };
        let req = CallbackRequest {
            run_id: run_id.clone(),
            to: orphan.to,
            body: orphan.body,
            from: Some(orphan.from).filter(|f| !f.is_empty()),
        };
        let job_id = format!("ringback-sweep:{}:{}", orphan.token, orphan.generation);
        tracing::warn!(run_id = %run_id, "open attempt past its deadline: claim re-fenced, resolving it");
        match processor.attempt(&job_id, &req).await {
            Outcome::Completed(v) => {
                tracing::info!(run_id = %run_id, result = %v, "orphan resolved");
                resolved.push(run_id);
            }
            Outcome::DelayUntil(at) => window.revisit_at(&run_id, at).await?,
            Outcome::Failed(f) => {
                // Recorded on the attempt record by the window (state send-failed) for escalation.
                tracing::error!(run_id = %run_id, reason = %crate::redact::redact(&f.message), "orphan could not be sent");
            }
        }
    }
    Ok(resolved)
}

/// Sweep every `interval` until `cancel`.
pub async fn run(processor: SmsProcessor, interval: Duration, cancel: CancellationToken) {
    loop {
        if let Err(e) = sweep(&processor).await {
            tracing::warn!(error = %e, "orphan sweep failed; will retry");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
