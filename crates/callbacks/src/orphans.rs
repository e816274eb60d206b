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
use crate::sms::SmsProcessor;
use ringback_queue::processor::Outcome;

/// BullMQ's failedReason for a job failed by the stall limit (v5 and v6).
pub const STALLED_LIMIT_REASON: &str = "job stalled more than allowable limit";

/// Sweep once: returns the runs it resolved (sent, or found sent). With `permits`, each attempt
/// takes a concurrency permit when one is free, and runs without one when none is: the fetch
/// loop holds a permit while it waits for a job, so at concurrency 1 an idle worker would
/// otherwise never sweep (the sweep's attempts are one at a time: at most one beyond the
/// concurrency). `cancel` stops it between attempts, never inside one.
pub async fn sweep(
    processor: &SmsProcessor,
    permits: Option<&Arc<Semaphore>>,
    cancel: &CancellationToken,
) -> Result<Vec<String>, ringback_shared::error::Error> {
    let window = processor.window();
    let mut resolved = vec![];
    // overdue by Redis's clock, even before this process has claimed anything
    window.learn_clock().await?;
    for run_id in window.overdue(100).await? {
        let _permit = permits.and_then(|p| p.clone().try_acquire_owned().ok());
        if cancel.is_cancelled() {
            break;
        }
        let asked = job_asks(processor, &run_id).await?;
        let Some(orphan) = window.sweep(&run_id).await? else {
            continue;
        };
        let (job_id, req) = orphan.job("sweep", &run_id);
        let req = with_asks(req, asked);
        tracing::warn!(run_id = %run_id, "open attempt past its deadline: claim re-fenced, resolving it");
        match processor.attempt(&job_id, &req).await {
            Outcome::Completed(v) => {
                tracing::info!(run_id = %run_id, result = %v, "orphan resolved");
                resolved.push(run_id);
            }
            // The attempt stays in the index (open, or `retry`): come back when it asked.
            Outcome::DelayUntil(at) => window.revisit_at(&run_id, window.to_redis(at)).await?,
            Outcome::Failed(f) => {
                // Recorded on the attempt record by the window (state send-failed) and escalated.
                tracing::error!(run_id = %run_id, reason = %ringback_shared::redact::redact(&f.message), "orphan could not be sent");
            }
        }
    }
    Ok(resolved)
}

/// What an open attempt's own job asked beyond what its attempt record keeps (its ladder, its
/// choices, whether it is a question), read from the job while the queue holds it: an orphan
/// that the sweep or the drain sends opens the ladder its job asked for, not the deployment's
/// default. `None` when the job is gone or was made by a sweep (the default then applies).
pub(crate) async fn job_asks(
    processor: &SmsProcessor,
    run_id: &str,
) -> Result<Option<CallbackRequest>, ringback_shared::error::Error> {
    let record = processor.window().attempt_record(run_id).await?;
    let Some(job) = record.get("job").filter(|j| !j.starts_with("ringback-")) else {
        return Ok(None);
    };
    let Some(data) = processor.escalator().callbacks.job_data(job).await? else {
        return Ok(None);
    };
    Ok(CallbackRequest::parse(&data)
        .ok()
        .filter(|asked| asked.run_id == run_id))
}

/// `req` (from the attempt record) with what its job asked ([`job_asks`]).
pub(crate) fn with_asks(
    mut req: CallbackRequest,
    asked: Option<CallbackRequest>,
) -> CallbackRequest {
    if let Some(asked) = asked {
        req.ladder = asked.ladder;
        req.choices = asked.choices;
        req.expect_reply = asked.expect_reply;
    }
    req
}

/// How far below the cursor each scan looks again: a failure's score is the finishing worker's
/// clock (hosts differ by milliseconds; a grouped finish carries the time its call was built),
/// so one may land below a cursor that already passed it. Adopting is idempotent.
const ADOPT_LOOKBACK_MS: f64 = 60_000.0;

/// Failures read per scan, forward from the cursor and again below it.
const ADOPT_PAGE: usize = 200;

/// The scan's place in the failed set: a score, and how many failures of that score it has
/// read (failures finished in the same millisecond share a score, and Redis orders them by id,
/// so a page that ends inside a run of equal scores resumes inside it, never stuck on it).
/// Stored as `<score>:<offset>`; a bare score is read as offset 0.
fn read_cursor(raw: Option<&str>) -> Option<(f64, usize)> {
    let raw = raw?;
    let (score, offset) = raw.split_once(':').unwrap_or((raw, "0"));
    Some((score.parse().ok()?, offset.parse().unwrap_or(0)))
}

/// Adopt callback jobs the stall limit failed (before any attempt, or with one): each becomes
/// an open attempt the sweep resolves. Scans the failed set from a cursor kept in Redis, so
/// replicas and restarts share it, and the last minute below it again; adopting is
/// idempotent. Returns how many were adopted.
pub async fn adopt_stall_failures(
    processor: &SmsProcessor,
) -> Result<usize, ringback_shared::error::Error> {
    let calls = processor.queue_calls();
    let keys = calls.keys();
    let cursor_key = ringback_store::keys::stall_scan_cursor(keys.base());
    let mut conn = calls.connection();
    let raw: Option<String> = redis::cmd("GET")
        .arg(&cursor_key)
        .query_async(&mut conn)
        .await?;
    let cursor = read_cursor(raw.as_deref());
    let (from, offset) = cursor.unwrap_or((f64::NEG_INFINITY, 0));
    // `newest_first`: ZREVRANGEBYSCORE (its bounds given max first)
    let range = |min: String, max: String, offset: usize, newest_first: bool| {
        let mut cmd = redis::cmd(if newest_first {
            "ZREVRANGEBYSCORE"
        } else {
            "ZRANGEBYSCORE"
        });
        let (a, b) = if newest_first { (max, min) } else { (min, max) };
        cmd.arg(keys.failed())
            .arg(a)
            .arg(b)
            .arg("WITHSCORES")
            .arg("LIMIT")
            .arg(offset)
            .arg(ADOPT_PAGE);
        cmd
    };
    let bound = |s: f64| {
        if s.is_finite() {
            s.to_string()
        } else {
            "-inf".to_string()
        }
    };
    let page: Vec<(String, f64)> = range(bound(from), "+inf".into(), offset, false)
        .query_async(&mut conn)
        .await?;
    // below the cursor again, newest first: failures scored there after the scan had passed
    // (a late one sits just below the cursor; the page holds the newest of the last minute)
    let below: Vec<(String, f64)> = match cursor {
        Some((c, _)) => {
            range(bound(c - ADOPT_LOOKBACK_MS), format!("({c}"), 0, true)
                .query_async(&mut conn)
                .await?
        }
        None => vec![],
    };
    let next = page.last().map(|&(_, last)| {
        let at_last = page.iter().filter(|(_, s)| *s == last).count();
        if last == from {
            (last, offset + page.len())
        } else {
            (last, at_last)
        }
    });
    let mut seen = std::collections::HashSet::new();
    let jobs: Vec<&String> = below
        .iter()
        .chain(&page)
        .map(|(id, _)| id)
        .filter(|id| seen.insert(id.as_str()))
        .collect();
    let mut adopted = 0;
    if !jobs.is_empty() {
        // One round trip for the failure reasons, names and data.
        let mut pipe = redis::pipe();
        for job_id in &jobs {
            pipe.cmd("HMGET")
                .arg(keys.job(job_id))
                .arg("failedReason")
                .arg("name")
                .arg("data");
        }
        type Fields = (Option<String>, Option<String>, Option<String>);
        let fields: Vec<Fields> = pipe.query_async(&mut conn).await?;
        for (job_id, (reason, name, data)) in jobs.iter().zip(fields) {
            if reason.as_deref() != Some(STALLED_LIMIT_REASON) {
                continue;
            }
            // a job of another name is another worker's, whatever its data looks like
            if !name.is_some_and(|n| processor.is_callback_name(&n)) {
                continue;
            }
            let Some(data) = data else { continue };
            let Ok(req) = CallbackRequest::parse(&data) else {
                continue;
            };
            // a run beyond 2^53 whose key another run's digits hold is not this one's to send
            let job = ringback_queue::job::Job {
                id: job_id.to_string(),
                data,
                ..Default::default()
            };
            if processor.shares_a_key(&job, &req).await? {
                continue;
            }
            if processor.window().adopt(job_id, &req).await? {
                tracing::warn!(run_id = %req.run_id, job = %job_id, "the stall limit failed this callback's job: the sweep will resolve it");
                adopted += 1;
            }
        }
    }
    if let Some((score, offset)) = next {
        redis::cmd("SET")
            .arg(&cursor_key)
            .arg(format!("{score}:{offset}"))
            .query_async::<()>(&mut conn)
            .await?;
    }
    Ok(adopted)
}

/// Refresh the open-attempts gauges.
async fn gauges(processor: &SmsProcessor) -> Result<(), ringback_shared::error::Error> {
    // a replica that attached, or a failover that left none, is followed here
    processor.window().look_at_replicas().await;
    let open = processor.window().open_attempts().await?;
    let stats = processor.stats();
    stats.open_attempts.store(open.count, Ordering::Relaxed);
    let age = open
        .oldest_since
        .map_or(0, |s| (processor.window().now() - s).max(0) as u64);
    stats.oldest_open_ms.store(age, Ordering::Relaxed);
    stats.open_retry.store(open.retry, Ordering::Relaxed);
    stats.open_in_doubt.store(open.in_doubt, Ordering::Relaxed);
    let delayed = processor.queue_calls().delayed_count().await?;
    stats.delayed.store(delayed, Ordering::Relaxed);
    let (backlog, missing) = processor
        .receipts()
        .receipt_backlog(processor.delivery_deadline())
        .await?;
    stats.reconcile_backlog.store(backlog, Ordering::Relaxed);
    stats.receipts_missing.store(missing, Ordering::Relaxed);
    Ok(())
}

/// The worker's safety net, every `interval` until `cancel`, as two loops that never wait
/// for each other nor for a job: the liveness loop (the heartbeat `drain` reads, and the
/// gauges the alerts read) and the sweep loop (stall-limit adoption, then the orphan sweep; an
/// attempt in progress finishes first). A sweep blocked on Twilio or on work therefore never
/// freezes the heartbeat, and an idle fetch never holds the sweep back.
pub async fn run(
    processor: SmsProcessor,
    interval: Duration,
    name: String,
    permits: Option<Arc<Semaphore>>,
    cancel: CancellationToken,
) {
    let liveness = async {
        let id = processor.worker_id().to_string();
        loop {
            let alive_for = crate::window::alive_within(interval);
            if let Err(e) = processor.window().heartbeat(&id, &name, alive_for).await {
                tracing::debug!(error = %e, "heartbeat not written");
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
    };
    let safety = async {
        let mut noted = false;
        loop {
            // the identity of the Redis behind every claim, before the first claim needs it;
            // once: a slot a failed note left out is noted by its first claim
            if !noted {
                noted = true;
                if let Err(e) = processor.window().note_redis().await {
                    tracing::debug!(error = %e, "Redis identity not noted; each claim notes its own");
                }
            }
            if let Err(e) = adopt_stall_failures(&processor).await {
                tracing::warn!(error = %e, "scan of stall-limit failures failed; will retry");
            }
            if let Err(e) = sweep(&processor, permits.as_ref(), &cancel).await {
                tracing::warn!(error = %e, "orphan sweep failed; will retry");
            }
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    };
    tokio::join!(liveness, safety);
}

/// How the console and `ringback drain` name this worker: `name` (`RINGBACK_WORKER_NAME`,
/// the name `getWorkers()` shows too), else the machine's hostname, with the process id.
pub fn worker_name(name: Option<&str>) -> String {
    match name.filter(|n| !n.is_empty()) {
        Some(name) => format!("ringback worker {name} pid {}", std::process::id()),
        None => format!(
            "ringback worker pid {} on {}",
            std::process::id(),
            hostname()
        ),
    }
}

/// The machine's hostname, as the kernel has it (systemd sets no `$HOSTNAME` for a unit):
/// read from procfs, Linux being the one supported system, else `localhost`.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(test)]
mod cursor_tests {
    use super::read_cursor;

    #[test]
    fn the_cursor_reads_with_and_without_its_offset() {
        assert_eq!(read_cursor(Some("1700000000000:3")), Some((1.7e12, 3)));
        assert_eq!(read_cursor(Some("1700000000000")), Some((1.7e12, 0)));
        assert_eq!(read_cursor(Some("x")), None);
        assert_eq!(read_cursor(None), None);
    }
}
