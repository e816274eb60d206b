//! Running one job on its permit: the processor, the finishing call, and the job that call
//! fetched next; jobs that fail without running.

use super::schedule::schedule_next;
use super::{Shared, decide};
use crate::calls::{FetchArgs, Fetched, Finish};
use crate::cron;
use crate::job::{Job, KeepJobs};
use crate::processor::{JobContext, Outcome, Prepared, Processor};
use ringback_shared::clock::now_ms;
use ringback_shared::error::ScriptCode;
use ringback_shared::redact::redact;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument;

/// A job its predecessor's finishing call fetched, with what that call's [`FinishStep`]
/// prepared for it.
///
/// [`FinishStep`]: crate::processor::FinishStep
pub(super) struct NextJob {
    job: Job,
    prepared: Option<Prepared>,
}

/// Run a job, then whatever job its finishing call fetched next, on one permit.
pub(super) async fn run_jobs<P: Processor>(
    shared: Arc<Shared<P>>,
    job: Job,
    token: String,
    _permit: OwnedSemaphorePermit,
) {
    let mut next = NextJob {
        job,
        prepared: None,
    };
    loop {
        let span = tracing::info_span!("job", queue = %shared.config.queue, job_id = %next.job.id,
            attempt = next.job.attempt());
        match run_one(&shared, next, &token).instrument(span).await {
            Some(fetched) => next = fetched,
            None => return,
        }
    }
}

async fn run_one<P: Processor>(shared: &Shared<P>, job: NextJob, token: &str) -> Option<NextJob> {
    shared.stats.running.fetch_add(1, Ordering::Relaxed);
    let next = run_attempt(shared, job, token).await;
    shared.stats.running.fetch_sub(1, Ordering::Relaxed);
    next
}

async fn run_attempt<P: Processor>(
    shared: &Shared<P>,
    next: NextJob,
    token: &str,
) -> Option<NextJob> {
    let NextJob { job, prepared } = next;
    shared.locks.track(&job.id, token);
    let trace = ringback_shared::trace::process(
        &shared.config.queue,
        &job.id,
        &job.name,
        job.attempts_made,
        job.opts.telemetry.as_deref(),
        job.opts.omit_context,
        shared.config.name.as_deref(),
    );
    // a job of another worker's goes back untouched (a deferred failure fails, as any worker's)
    let declined = job
        .deferred_failure
        .is_none()
        .then(|| shared.processor.declines(&job))
        .flatten();
    let refused = match &job.scheduler_id {
        _ if declined.is_some() => None,
        Some(id) => schedule_next(shared, &job, id).await,
        None => None,
    };
    let too_many_starts = || {
        shared
            .max_started_attempts
            .filter(|max| *max < job.attempts_started)
            .map(|_| Outcome::unrecoverable("job started more than allowable limit"))
    };
    let mut step = None;
    let declined = declined.map(|after| Outcome::DelayUntil(now_ms() + after.as_millis() as i64));
    let outcome = match declined
        .clone()
        .or(refused)
        .or_else(|| precheck(&job))
        .or_else(too_many_starts)
    {
        Some(outcome) => {
            if let Some(prepared) = prepared {
                shared.processor.unprepared(&job, prepared).await;
            }
            match unreadable(&job).filter(|_| job.deferred_failure.is_none() && declined.is_none())
            {
                Some(reason) if !shared.processor.unreadable(&job, &reason).await => {
                    Outcome::DelayUntil(now_ms() + UNREADABLE_RETRY.as_millis() as i64)
                }
                _ => outcome,
            }
        }
        None => {
            let mut ctx = JobContext::new(shared.calls.clone(), &job, token);
            ctx.prepared = prepared;
            ctx.trace = trace.share();
            ctx.resent_within = shared.config.lock_duration;
            let outcome = shared.processor.process(&job, &ctx).await;
            step = ctx.take_finish_step();
            if ctx.waiting_children.load(Ordering::Relaxed) {
                // moved to waiting-children with its lock released: nothing left to record
                shared.locks.untrack(&job.id);
                tracing::debug!("waiting for children");
                return None;
            }
            if ctx.rate_limited.load(Ordering::Relaxed) {
                shared.locks.untrack(&job.id);
                back_to_wait_limited(shared, &job, token).await;
                return None;
            }
            outcome
        }
    };
    let mut finish = decide(&job, outcome, rand::random::<f64>());
    if let Some(max) = shared.max_started_attempts
        && max <= job.attempts_started
        && matches!(
            finish,
            Finish::RetryNow { .. }
                | Finish::Delay {
                    failure: Some(_),
                    ..
                }
        )
        && started_limit_stops_retries(shared).await
    {
        finish = match finish {
            Finish::RetryNow {
                reason, stacktrace, ..
            }
            | Finish::Delay {
                failure: Some((reason, stacktrace)),
                ..
            } => Finish::Failed { reason, stacktrace },
            other => other,
        };
    }
    let keep_for = |finish: &Finish| match finish {
        Finish::Completed { .. } => KeepJobs::resolve(
            job.opts.remove_on_complete,
            shared.config.remove_on_complete,
        ),
        _ => KeepJobs::resolve(job.opts.remove_on_fail, shared.config.remove_on_fail),
    };
    let fetch = (!shared.stopping.is_cancelled()).then(|| FetchArgs::new(&shared.config, token));
    shared.locks.untrack(&job.id);
    // The finishing call's span, named as Node names it (`fail`, `retry`, `delay` + the queue);
    // a failure writes that span's context on the job (`tm`), as a Node worker with BullMQ's
    // OpenTelemetry add-on does.
    // (names made only while traces are on: nothing is built for a span that is not)
    let finishing = match &finish {
        _ if !ringback_shared::trace::enabled() => ringback_shared::trace::Step::default(),
        Finish::Completed { .. } if step.is_some() => trace.child("finish"),
        Finish::Completed { .. } => trace.child("complete"),
        Finish::Failed { .. } => trace.child(format!("fail {}", shared.config.queue)),
        Finish::RetryNow { .. } => trace.child(format!("retry {}", shared.config.queue)),
        Finish::Delay { .. } => trace.child(format!("delay {}", shared.config.queue)),
    };
    let tm = match &finish {
        Finish::Failed { reason, .. }
        | Finish::RetryNow { reason, .. }
        | Finish::Delay {
            failure: Some((reason, _)),
            ..
        } => {
            trace.error(reason);
            finishing.metadata().filter(|_| !job.opts.omit_context)
        }
        _ => None,
    };

    // Retry the finishing call through Redis trouble for as long as our lock could still be
    // valid: giving up early would leave finished work to be redone by stall recovery.
    let deadline = tokio::time::Instant::now() + shared.config.lock_duration;
    let mut delay = Duration::from_millis(50);
    // A processor's step rides only on a completion; once its call answered, the step is done
    // (its write is not the job's), and any retry below is a plain finish.
    let mut step = step.filter(|_| matches!(finish, Finish::Completed { .. }));
    // A step's re-sends carry its first call's arguments (the same call id): the script answers
    // a re-execution as it answered the first run. What the answer prepared is bounded in time
    // from the first send, however many sends it took.
    let first_sent = tokio::time::Instant::now();
    let fresh_for = step.as_ref().and_then(|s| s.fresh_for);
    loop {
        let mut prepared = None;
        let result = match (&step, &finish) {
            (Some(s), Finish::Completed { returnvalue }) => shared
                .calls
                .complete_with_step(
                    &job,
                    token,
                    returnvalue,
                    keep_for(&finish),
                    shared.config.metrics_max_data_points,
                    fetch.as_ref(),
                    &s.call,
                    s.batch,
                )
                .await
                .map(|answer| {
                    if let Some(s) = step.take() {
                        (s.done)(answer.own);
                        finishing.event("step written");
                    }
                    prepared = answer.prepared;
                    answer.finished
                }),
            _ => {
                shared
                    .calls
                    .finish(
                        &job,
                        token,
                        &finish,
                        keep_for(&finish),
                        shared.config.metrics_max_data_points,
                        fetch.as_ref(),
                        tm.as_deref(),
                    )
                    .await
            }
        };
        match result {
            Ok(Ok(fetched)) => {
                shared.stats.finished.fetch_add(1, Ordering::Relaxed);
                log_finish(&finish);
                // a job left for another worker was not processed here
                if declined.is_none() {
                    ringback_shared::telemetry::global().bullmq_job(
                        &shared.config.queue,
                        &job.name,
                        match &finish {
                            Finish::Completed { .. } => "completed",
                            Finish::Failed { .. } => "failed",
                            Finish::RetryNow { .. } => "retried",
                            Finish::Delay { .. } => "delayed",
                        },
                        job.processed_on,
                    );
                }
                let Fetched::Job(next) = fetched else {
                    return None;
                };
                finishing.event("next job fetched");
                let stale = fresh_for.is_some_and(|f| first_sent.elapsed() > f);
                if let Some(p) = prepared.take_if(|_| stale) {
                    tracing::warn!(
                        elapsed_ms = first_sent.elapsed().as_millis() as u64,
                        "the finishing call answered too late for what it prepared; giving it back"
                    );
                    shared.processor.unprepared(&next, p).await;
                }
                return Some(NextJob {
                    job: *next,
                    prepared,
                });
            }
            Ok(Err(code)) if code.is_lock_lost() => {
                shared.stats.lock_lost.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(%code, "job no longer ours (lock lost); leaving it to its new owner or \
                    to stall recovery");
                return None;
            }
            // A parent that completed while children are pending or failed: Node fails it with
            // these errors (the lock is still ours: the children check comes first).
            Ok(Err(ScriptCode::PendingChildren)) if matches!(finish, Finish::Completed { .. }) => {
                let reason = format!("Job {} has pending dependencies. moveToFinished", job.id);
                finish = decide(&job, Outcome::fail(reason), rand::random::<f64>());
            }
            Ok(Err(ScriptCode::FailedChildren)) if matches!(finish, Finish::Completed { .. }) => {
                let reason = format!(
                    "Cannot complete job {} because it has at least one failed child. moveToFinished",
                    job.id
                );
                finish = decide(&job, Outcome::unrecoverable(reason), rand::random::<f64>());
            }
            Ok(Err(code)) => {
                tracing::error!(%code, "finishing the job was refused");
                return None;
            }
            Err(e) if e.is_transient() && tokio::time::Instant::now() + delay < deadline => {
                tracing::warn!(error = %e, "could not record the job's outcome; retrying");
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_secs(2));
            }
            Err(e) => {
                tracing::error!(error = %e, "could not record the job's outcome; stall recovery \
                    will run it again");
                return None;
            }
        }
    }
}

/// Whether a job started `maxStartedAttempts` times is no longer retried: bullmq 6's
/// `shouldRetryJob` says so, 5.81.5's does not (it fails the job at its next activation).
async fn started_limit_stops_retries<P: Processor>(shared: &Shared<P>) -> bool {
    let version = shared.calls.meta_version().await.ok().flatten();
    cron::Dialect::for_meta_version(version.as_deref()) == cron::Dialect::CronParser5
}

/// The processor rate-limited the queue: the job goes back to wait without using an attempt,
/// and this worker fetches nothing until the limit ends (Node's `RateLimitError`).
async fn back_to_wait_limited<P: Processor>(shared: &Shared<P>, job: &Job, token: &str) {
    match shared.calls.move_limited_to_wait(&job.id, token).await {
        Ok(ttl) => {
            let until = if ttl > 0 { now_ms() + ttl as i64 } else { 0 };
            shared.limit_until.store(until, Ordering::Relaxed);
            tracing::info!(ttl_ms = ttl, "rate limited: job back to wait");
        }
        Err(e) => tracing::error!(error = %e, "could not move the rate-limited job back to wait; \
            stall recovery will"),
    }
}

pub(super) fn log_finish(finish: &Finish) {
    match finish {
        Finish::Completed { .. } => tracing::debug!("completed"),
        Finish::Failed { reason, .. } => tracing::info!(reason = %redact(reason), "failed"),
        Finish::RetryNow { reason, .. } => {
            tracing::info!(reason = %redact(reason), "failed; retrying now")
        }
        Finish::Delay {
            delay_ms,
            failure: Some((reason, _)),
            ..
        } => {
            tracing::info!(reason = %redact(reason), delay_ms, "failed; retrying after backoff")
        }
        Finish::Delay { delay_ms, .. } => tracing::debug!(delay_ms, "moved to delayed"),
    }
}

/// How soon an unreadable job whose telling failed is tried again.
pub(super) const UNREADABLE_RETRY: Duration = Duration::from_secs(2);

/// Jobs that must fail without running: a deferred failure (stall limit, failed child), or
/// options/data Node could not read either. Node retries a job whose data is not JSON
/// forever; we fail it once, with a reason a person can act on.
pub(super) fn precheck(job: &Job) -> Option<Outcome> {
    if let Some(reason) = &job.deferred_failure {
        return Some(Outcome::unrecoverable(reason.clone()));
    }
    unreadable(job).map(Outcome::unrecoverable)
}

/// Why `job`'s options or data cannot be read, if they cannot.
pub(super) fn unreadable(job: &Job) -> Option<String> {
    if let Some(problem) = &job.opts.invalid {
        return Some(problem.clone());
    }
    serde_json::from_str::<serde::de::IgnoredAny>(&job.data)
        .err()
        .map(|e| format!("job data is not valid JSON ({e}); fix the producer"))
}
