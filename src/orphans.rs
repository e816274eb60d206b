//! The orphan sweep: an attempt whose window is still open past its deadline has no live job
//! resolving it (its job was dropped: the legacy worker's `if (!claimed) return;` after a
//! ringback crash, or a job removed by hand). The sweep re-enqueues a callback job from the
//! attempt record, which resolves it like any retry (receipt, lookup, reconcile window), so a
//! callback is never silently lost. Several replicas may sweep: the job id is derived from the
//! attempt, so an orphan is enqueued once.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::commands::Commands;
use crate::sms::{CALLBACK_JOB_NAME, CALLBACK_JOB_OPTS};
use crate::window::Window;

/// Sweep once: returns the runs re-enqueued.
pub async fn sweep(window: &Window, queue: &Commands) -> Result<Vec<String>, crate::error::Error> {
    let mut enqueued = vec![];
    for run_id in window.orphans(100).await? {
        let rec = window.attempt_record(&run_id).await?;
        let open = matches!(
            rec.get("state").map(String::as_str),
            Some("claimed" | "ambiguous")
        );
        if !open {
            window.reschedule_orphan(&run_id, true).await?;
            continue;
        }
        let field = |k: &str| rec.get(k).cloned().unwrap_or_default();
        let mut data =
            serde_json::json!({"runId": run_id, "to": field("to"), "body": field("body")});
        if !field("from").is_empty() {
            data["from"] = serde_json::Value::String(field("from"));
        }
        let job_id = format!("ringback-orphan:{run_id}:{}", field("token"));
        let (id, created) = queue
            .add_job(
                Some(&job_id),
                CALLBACK_JOB_NAME,
                &data.to_string(),
                CALLBACK_JOB_OPTS,
            )
            .await?;
        window.reschedule_orphan(&run_id, false).await?;
        if created {
            tracing::warn!(run_id = %run_id, job_id = %id, "open attempt without a live job: re-enqueued its callback");
            enqueued.push(run_id);
        }
    }
    Ok(enqueued)
}

/// Sweep every `interval` until `cancel`.
pub async fn run(window: Window, queue: Commands, interval: Duration, cancel: CancellationToken) {
    loop {
        if let Err(e) = sweep(&window, &queue).await {
            tracing::warn!(error = %e, "orphan sweep failed; will retry");
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
