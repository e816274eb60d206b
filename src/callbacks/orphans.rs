//! The orphan sweep: an attempt whose window is still open past its deadline may have no live
//! job resolving it (its job was dropped: the legacy worker's `if (!claimed) return;` on a job
//! ringback crashed in, a job failed by the stall limit, or one removed by hand). The sweep
//! re-fences the claim (so no legacy retry can claim and send while the attempt is
//! unresolved) and resolves the attempt itself, from its durable record, exactly as a retry
//! would (receipt, lookup, reconcile window, then send): the attempt record is the outbox, so
//! a callback is never silently lost, and the sweep does not depend on which worker a queue
//! job would reach. Replicas may sweep together: taking an orphan is one atomic script, and
//! the window arbitrates between resolvers.
//!
//! The sweep also adopts callback jobs that the stall limit failed before any attempt (the
//! failed set is scanned from a cursor), and keeps the open-attempts gauges. It runs inside the
//! worker's concurrency limit and its shutdown: an attempt it started is never cut between
//! Twilio's answer and the sent marker.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::callback::CallbackRequest;
use crate::processor::Outcome;
use crate::sms::SmsProcessor;

/// BullMQ's failedReason for a job failed by the stall limit (v5 and v6).
pub const STALLED_LIMIT_REASON: &str = "job stalled more than allowable limit";

/// Sweep once: returns the runs it resolved (sent, or found sent). With `permits`, each attempt
/// takes a concurrency permit first; `cancel` stops it between attempts, never inside one.
pub async fn sweep(
    processor: &SmsProcessor,
    permits: Option<&Arc<Semaphore>>,
    cancel: &CancellationToken,
) -> Result<Vec<String>, crate::error::Error> {
    let window = processor.window();
    let mut resolved = vec![];
    for run_id in window.overdue(100).await? {
        let _permit = match permits {
            Some(p) => tokio::select! {
                _ = cancel.cancelled() => break,
                p = p.clone().acquire_owned() => match p { Ok(p) => Some(p), Err(_) => break },
            },
            None => None,
        };
        if cancel.is_cancelled() {
            break;
        }
        let Some(orphan) = window.sweep(&run_id).await? else {
            continue;
        };
        let (job_id, req) = orphan.job("sweep", &run_id);
        tracing::warn!(run_id = %run_id, "open attempt past its deadline: claim re-fenced, resolving it");
        match processor.attempt(&job_id, &req).await {
            Outcome::Completed(v) => {
                tracing::info!(run_id = %run_id, result = %v, "orphan resolved");
                resolved.push(run_id);
            }
            // The attempt stays in the index (open, or `retry`): come back when it asked.
            Outcome::DelayUntil(at) => window.revisit_at(&run_id, at).await?,
            Outcome::Failed(f) => {
                // Recorded on the attempt record by the window (state send-failed) and escalated.
                tracing::error!(run_id = %run_id, reason = %crate::redact::redact(&f.message), "orphan could not be sent");
            }
        }
    }
    Ok(resolved)
}

/// Adopt callback jobs the stall limit failed (before any attempt, or with one): each becomes
/// an open attempt the sweep resolves. Scans the failed set from a cursor kept in Redis, so
/// replicas and restarts share it; adopting is idempotent. Returns how many were adopted.
pub async fn adopt_stall_failures(processor: &SmsProcessor) -> Result<usize, crate::error::Error> {
    let commands = processor.queue_commands();
    let keys = commands.keys();
    let cursor_key = crate::keys::stall_scan_cursor(keys.base());
    let mut conn = commands.connection();
    let cursor: Option<f64> = redis::cmd("GET")
        .arg(&cursor_key)
        .query_async(&mut conn)
        .await?;
    let from = cursor.map_or("-inf".to_string(), |c| format!("({c}"));
    let page: Vec<(String, f64)> = redis::cmd("ZRANGEBYSCORE")
        .arg(keys.failed())
        .arg(&from)
        .arg("+inf")
        .arg("WITHSCORES")
        .arg("LIMIT")
        .arg(0)
        .arg(200)
        .query_async(&mut conn)
        .await?;
    let mut adopted = 0;
    // Jobs finished in the same millisecond share a score: stop before the last score unless the
    // page is short, so none is skipped by the exclusive cursor.
    let last = page.last().map(|(_, s)| *s);
    let full = page.len() == 200;
    let page: Vec<(String, f64)> = page
        .into_iter()
        .take_while(|(_, score)| !(full && Some(*score) == last))
        .collect();
    let Some(upto) = page.last().map(|(_, s)| *s) else {
        return Ok(0);
    };
    // One round trip for the page's failure reasons and data.
    let mut pipe = redis::pipe();
    for (job_id, _) in &page {
        pipe.cmd("HMGET")
            .arg(keys.job(job_id))
            .arg("failedReason")
            .arg("data");
    }
    let fields: Vec<(Option<String>, Option<String>)> = pipe.query_async(&mut conn).await?;
    for ((job_id, _), (reason, data)) in page.iter().zip(fields) {
        if reason.as_deref() != Some(STALLED_LIMIT_REASON) {
            continue;
        }
        let Some(req) = data.and_then(|d| CallbackRequest::parse(&d).ok()) else {
            continue;
        };
        if processor.window().adopt(job_id, &req).await? {
            tracing::warn!(run_id = %req.run_id, job = %job_id, "the stall limit failed this callback's job: the sweep will resolve it");
            adopted += 1;
        }
    }
    redis::cmd("SET")
        .arg(&cursor_key)
        .arg(upto)
        .query_async::<()>(&mut conn)
        .await?;
    Ok(adopted)
}

/// Refresh the open-attempts gauges.
async fn gauges(processor: &SmsProcessor) -> Result<(), crate::error::Error> {
    let open = processor.window().open_attempts().await?;
    let stats = processor.stats();
    stats.open_attempts.store(open.count, Ordering::Relaxed);
    let age = open
        .oldest_since
        .map_or(0, |s| (processor.window().now() - s).max(0) as u64);
    stats.oldest_open_ms.store(age, Ordering::Relaxed);
    stats.open_retry.store(open.retry, Ordering::Relaxed);
    stats.open_in_doubt.store(open.in_doubt, Ordering::Relaxed);
    let delayed = processor.queue_commands().delayed_count().await?;
    stats.delayed.store(delayed, Ordering::Relaxed);
    let (backlog, missing) = processor
        .receipts()
        .receipt_backlog(processor.delivery_deadline())
        .await?;
    stats.reconcile_backlog.store(backlog, Ordering::Relaxed);
    stats.receipts_missing.store(missing, Ordering::Relaxed);
    Ok(())
}

/// Sweep every `interval` until `cancel` (an attempt in progress finishes first).
pub async fn run(
    processor: SmsProcessor,
    interval: Duration,
    permits: Option<Arc<Semaphore>>,
    cancel: CancellationToken,
) {
    let (id, name) = (processor.worker_id().to_string(), worker_name());
    loop {
        if let Err(e) = processor.window().heartbeat(&id, &name).await {
            tracing::debug!(error = %e, "heartbeat not written");
        }
        if let Err(e) = adopt_stall_failures(&processor).await {
            tracing::warn!(error = %e, "scan of stall-limit failures failed; will retry");
        }
        if let Err(e) = sweep(&processor, permits.as_ref(), &cancel).await {
            tracing::warn!(error = %e, "orphan sweep failed; will retry");
        }
        if let Err(e) = gauges(&processor).await {
            tracing::debug!(error = %e, "open-attempts gauge not refreshed");
        }
        tokio::select! {
            _ = cancel.cancelled() => break,
            _ = tokio::time::sleep(interval) => {}
        }
    }
    if let Err(e) = processor.window().heartbeat_stop(&id, &name).await {
        tracing::debug!(error = %e, "heartbeat not removed; it ages out");
    }
}

/// How `ringback drain` names this worker when it refuses.
fn worker_name() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "localhost".into());
    format!("ringback worker pid {} on {host}", std::process::id())
}
