//! A job scheduler's next iteration, created when its job is activated, as Node does.

use super::Shared;
use crate::cron;
use crate::job::Job;
use crate::processor::{Outcome, Processor};
use ringback_shared::clock::now_ms;

/// A job scheduler's job: create the next iteration at activation, as Node does (a scheduler
/// whose next run is not created stops silently). A cron pattern's next run is computed here,
/// by the cron-parser major the queue's BullMQ release ships; a pattern or time zone Node could
/// not read either fails the job visibly.
pub(super) async fn schedule_next<P: Processor>(
    shared: &Shared<P>,
    job: &Job,
    scheduler_id: &str,
) -> Option<Outcome> {
    let now = now_ms();
    let cron_next = match cron_next_run(shared, job, now).await {
        Ok(next) => next,
        Err(reason) => return Some(Outcome::unrecoverable(reason)),
    };
    match shared
        .calls
        .update_job_scheduler(job, scheduler_id, now, cron_next.flatten())
        .await
    {
        Ok(verdict) if verdict == "pattern" => Some(Outcome::unrecoverable(
            "job scheduler with a cron pattern that ringback could not read from the job's options",
        )),
        Ok(verdict) => {
            tracing::debug!(%scheduler_id, %verdict, "job scheduler: next iteration");
            None
        }
        Err(e) => {
            tracing::error!(%scheduler_id, error = %e, "could not schedule the next iteration");
            None
        }
    }
}

/// For a cron scheduler's job: `Some(next run)` (`Some(None)` when cron-parser finds none), as
/// BullMQ's `upsertJobScheduler` computes it: from max(now, prevMillis), clamped to it. `None`
/// for an `every` scheduler.
async fn cron_next_run<P: Processor>(
    shared: &Shared<P>,
    job: &Job,
    now: i64,
) -> Result<Option<Option<i64>>, String> {
    let opts: serde_json::Value = serde_json::from_str(&job.raw_opts).unwrap_or_default();
    let repeat = opts.get("repeat").cloned().unwrap_or_default();
    let schedule = match cron::Schedule::from_repeat(&repeat) {
        Ok(Some(s)) => s,
        Ok(None) => return Ok(None),
        Err(e) => {
            return Err(format!(
                "Failed to add repeatable job for next iteration: {e}"
            ));
        }
    };
    let version = match shared.calls.meta_version().await {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "could not read meta.version; computing cron as bullmq 6");
            None
        }
    };
    let dialect = cron::Dialect::for_meta_version(version.as_deref());
    let prev = opts.get("prevMillis").and_then(|p| p.as_i64()).unwrap_or(0);
    let from = now.max(prev);
    match cron::next_millis(dialect, &schedule, from, now, &cron::Zone::system()) {
        Ok(next) => Ok(Some(next.map(|n| n.max(from)))),
        Err(e) => Err(format!(
            "Failed to add repeatable job for next iteration: {e}"
        )),
    }
}
