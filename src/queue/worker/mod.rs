//! The BullMQ-compatible worker: one fetch driver, a task per running job, lock renewal and
//! stall recovery beside them, and a graceful stop.
//!
//! Life of a job: a concurrency permit is taken *before* the job is moved to active (taking a
//! job first and waiting for a permit later lets locks expire: bullmq-rs PR #21); the job runs
//! in its own task under its own tracing span; the finishing script records the outcome and,
//! unless we are stopping, takes the next job in the same round trip, which the same task then
//! runs with the same permit.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::Instrument;

use crate::error::{ConfigError, Error, ScriptCode};
use crate::queue::commands::{Commands, FetchArgs, Fetched, Finish, now_ms};
use crate::queue::config::WorkerConfig;
use crate::queue::cron;
use crate::queue::fetcher::Fetcher;
use crate::queue::job::{Job, KeepJobs};
use crate::queue::lock_manager::LockManager;
use crate::queue::processor::{Failure, JobContext, Outcome, Processor};
use crate::queue::stalled_checker;
use crate::redact::redact;
use crate::store::scripts::RoundTrips;

/// Why [`Worker::run`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// Jobs still running at the grace deadline, left to stall recovery.
    pub abandoned: usize,
    /// Jobs this process finished (completed, failed or moved to delayed/wait).
    pub finished: u64,
}

/// A worker bound to one queue and one processor.
pub struct Worker<P> {
    config: WorkerConfig,
    processor: Arc<P>,
    trips: Arc<RoundTrips>,
    stats: Arc<WorkerStats>,
    permits: Arc<Semaphore>,
    max_started_attempts: Option<u32>,
}

/// Counters of one worker process, for `/metrics`.
#[derive(Debug, Default)]
pub struct WorkerStats {
    /// Attempts whose outcome was recorded (completed, failed, retried, delayed).
    pub finished: AtomicU64,
    /// Finishing calls refused because the lock was no longer ours.
    pub lock_lost: AtomicU64,
    /// Attempts running now.
    pub running: AtomicU64,
}

/// What every job task shares.
struct Shared<P> {
    config: WorkerConfig,
    processor: Arc<P>,
    commands: Commands,
    locks: Arc<LockManager>,
    stopping: CancellationToken,
    stats: Arc<WorkerStats>,
    /// A processor rate-limited the queue until then (ms; 0 = not): no fetch before it.
    limit_until: Arc<AtomicI64>,
    max_started_attempts: Option<u32>,
}

impl<P: Processor> Worker<P> {
    /// BullMQ's `maxStartedAttempts` worker option: a job activated more than `max` times fails
    /// at once ("job started more than allowable limit"); on bullmq 6 queues a job started
    /// `max` times is not retried either. `None` or 0: no limit.
    pub fn max_started_attempts(mut self, max: Option<u32>) -> Self {
        self.max_started_attempts = max.filter(|m| *m > 0);
        self
    }

    /// Validates `config`: a worker that would break an invariant never starts.
    pub fn new(config: WorkerConfig, processor: P) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self {
            permits: Arc::new(Semaphore::new(config.concurrency)),
            processor: Arc::new(processor),
            trips: Arc::default(),
            stats: Arc::default(),
            max_started_attempts: config.max_started_attempts.filter(|m| *m > 0),
            config,
        })
    }

    /// The concurrency limit: work beside the fetch loop (the orphan sweep) takes its permits
    /// too, so the worker never runs more than `concurrency` attempts at once.
    pub fn permits(&self) -> Arc<Semaphore> {
        self.permits.clone()
    }

    /// Redis round trips made so far (scripts and blocking waits), for benchmarks.
    pub fn round_trips(&self) -> Arc<RoundTrips> {
        self.trips.clone()
    }

    /// This worker's counters.
    pub fn stats(&self) -> Arc<WorkerStats> {
        self.stats.clone()
    }

    /// Run until `shutdown` is cancelled, then let running jobs finish within the grace period.
    pub async fn run(self, shutdown: CancellationToken) -> Result<Stopped, Error> {
        let cfg = self.config;
        let client = crate::store::connection::client(&cfg.redis_url, &cfg.redis_tls)?;
        let conn = match connect_until(&client, &shutdown).await {
            Ok(c) => c,
            // asked to stop before Redis ever answered: nothing ran, a clean stop
            Err(Error::Stopped) => {
                tracing::info!("stopped before Redis answered");
                return Ok(Stopped {
                    abandoned: 0,
                    finished: 0,
                });
            }
            Err(e) => return Err(e),
        };
        let keys = crate::store::keys::QueueKeys::new(&cfg.prefix, &cfg.queue);
        let commands = Commands::new(conn, keys, self.trips.clone());
        // Every script on every node now (on a cluster: every master), so the first jobs pay no
        // EVAL; a node that loses its cache later (restart, promoted replica) answers NOSCRIPT
        // and gets one EVAL from the wrapper.
        if let Err(e) = commands.ensure_scripts().await {
            tracing::warn!(error = %e, "could not load the scripts at start; they load on first use");
        }
        let locks = Arc::new(LockManager::new(
            commands.clone(),
            cfg.lock_duration,
            cfg.lock_renew_time,
        ));

        // Background loops outlive the fetch loop: locks must be renewed while jobs finish.
        let background = CancellationToken::new();
        let mut loops = tokio::task::JoinSet::new();
        {
            let (locks, cancel) = (locks.clone(), background.clone());
            loops.spawn(async move { locks.run(cancel).await });
            loops.spawn(stalled_checker::run(
                commands.clone(),
                cfg.max_stalled_count,
                cfg.stalled_interval,
                background.clone(),
            ));
        }

        let limit_until = Arc::new(AtomicI64::new(0));
        let shared = Arc::new(Shared {
            config: cfg.clone(),
            processor: self.processor,
            commands: commands.clone(),
            locks: locks.clone(),
            stopping: shutdown.clone(),
            stats: self.stats.clone(),
            limit_until: limit_until.clone(),
            max_started_attempts: self.max_started_attempts,
        });
        let tracker = TaskTracker::new();
        let permits = self.permits;
        let mut fetcher = Fetcher::new(client, commands, &cfg, limit_until);
        tracing::info!(queue = %cfg.queue, prefix = %cfg.prefix, concurrency = cfg.concurrency,
            worker = %fetcher.worker_id(), "worker started");

        loop {
            let permit = tokio::select! {
                biased;
                _ = shutdown.cancelled() => break,
                p = permits.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
            };
            let Some((job, token)) = fetcher.next_job(&shutdown).await else {
                break;
            };
            tracker.spawn(run_jobs(shared.clone(), *job, token, permit));
        }

        tracker.close();
        let running = locks.running();
        tracing::info!(
            running,
            grace_ms = cfg.shutdown_grace.as_millis() as u64,
            "stopping: no new jobs; waiting for running jobs"
        );
        let abandoned = match tokio::time::timeout(cfg.shutdown_grace, tracker.wait()).await {
            Ok(()) => 0,
            Err(_) => locks.running().max(1),
        };
        background.cancel();
        while loops.join_next().await.is_some() {}
        let finished = shared.stats.finished.load(Ordering::Relaxed);
        if abandoned > 0 {
            tracing::warn!(
                abandoned,
                finished,
                "grace period over: jobs still running are left to \
                stall recovery"
            );
        } else {
            tracing::info!(finished, "worker stopped cleanly");
        }
        Ok(Stopped {
            abandoned,
            finished,
        })
    }
}

/// Kept here for the callers that name it so; it lives in [`crate::store::connection`].
pub use crate::store::connection::connect_until;

/// A job its predecessor's finishing call fetched, with what that call's [`FinishStep`]
/// prepared for it.
///
/// [`FinishStep`]: crate::queue::processor::FinishStep
struct NextJob {
    job: Job,
    prepared: Option<redis::Value>,
}

/// Run a job, then whatever job its finishing call fetched next, on one permit.
async fn run_jobs<P: Processor>(
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
            if let Some(prepared) = prepared.filter(|p| !matches!(p, redis::Value::Nil)) {
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
            let mut ctx = JobContext::new(shared.commands.clone(), &job, token);
            ctx.prepared = prepared;
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
                .commands
                .complete_with_step(
                    &job,
                    token,
                    returnvalue,
                    keep_for(&finish),
                    shared.config.metrics_max_data_points,
                    fetch.as_ref(),
                    (s.script, &s.keys, &s.args),
                    s.batch,
                )
                .await
                .map(|answer| {
                    if let Some(s) = step.take() {
                        (s.done)(&answer.own);
                    }
                    prepared = Some(answer.prepared);
                    answer.finished
                }),
            _ => {
                shared
                    .commands
                    .finish(
                        &job,
                        token,
                        &finish,
                        keep_for(&finish),
                        shared.config.metrics_max_data_points,
                        fetch.as_ref(),
                    )
                    .await
            }
        };
        match result {
            Ok(Ok(fetched)) => {
                shared.stats.finished.fetch_add(1, Ordering::Relaxed);
                log_finish(&finish);
                let Fetched::Job(next) = fetched else {
                    return None;
                };
                let stale = fresh_for.is_some_and(|f| first_sent.elapsed() > f);
                if let Some(p) = prepared.take_if(|p| stale && !matches!(p, redis::Value::Nil)) {
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
    let version = shared.commands.meta_version().await.ok().flatten();
    cron::Dialect::for_meta_version(version.as_deref()) == cron::Dialect::CronParser5
}

/// The processor rate-limited the queue: the job goes back to wait without using an attempt,
/// and this worker fetches nothing until the limit ends (Node's `RateLimitError`).
async fn back_to_wait_limited<P: Processor>(shared: &Shared<P>, job: &Job, token: &str) {
    match shared.commands.move_limited_to_wait(&job.id, token).await {
        Ok(ttl) => {
            let until = if ttl > 0 { now_ms() + ttl as i64 } else { 0 };
            shared.limit_until.store(until, Ordering::Relaxed);
            tracing::info!(ttl_ms = ttl, "rate limited: job back to wait");
        }
        Err(e) => tracing::error!(error = %e, "could not move the rate-limited job back to wait; \
            stall recovery will"),
    }
}

/// A job scheduler's job: create the next iteration at activation, as Node does (a scheduler
/// whose next run is not created stops silently). A cron pattern's next run is computed here,
/// by the cron-parser major the queue's BullMQ release ships; a pattern or time zone Node could
/// not read either fails the job visibly.
async fn schedule_next<P: Processor>(
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
        .commands
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
    let version = match shared.commands.meta_version().await {
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

fn log_finish(finish: &Finish) {
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
const UNREADABLE_RETRY: Duration = Duration::from_secs(2);

/// Jobs that must fail without running: a deferred failure (stall limit, failed child), or
/// options/data Node could not read either. Node loops forever on non-JSON data
/// (bullmq-protocol.md §8.8); we fail it once, with a reason a person can act on.
fn precheck(job: &Job) -> Option<Outcome> {
    if let Some(reason) = &job.deferred_failure {
        return Some(Outcome::unrecoverable(reason.clone()));
    }
    unreadable(job).map(Outcome::unrecoverable)
}

/// Why `job`'s options or data cannot be read, if they cannot.
fn unreadable(job: &Job) -> Option<String> {
    if let Some(problem) = &job.opts.invalid {
        return Some(problem.clone());
    }
    serde_json::from_str::<serde::de::IgnoredAny>(&job.data)
        .err()
        .map(|e| format!("job data is not valid JSON ({e}); fix the producer"))
}

/// Turn an outcome into the finishing call, as Node's `handleCompleted` / `moveToFailed` do.
pub fn decide(job: &Job, outcome: Outcome, rand: f64) -> Finish {
    match outcome {
        Outcome::Completed(value) => Finish::Completed {
            returnvalue: crate::store::json::stringify(&value),
        },
        Outcome::DelayUntil(at) => Finish::Delay {
            delay_ms: (at - now_ms()).max(0) as u64,
            skip_attempt: true,
            failure: None,
        },
        Outcome::Failed(failure) => decide_failure(job, &failure, rand),
    }
}

fn decide_failure(job: &Job, failure: &Failure, rand: f64) -> Finish {
    let mut traces = job.stacktrace.clone();
    traces.push(failure.stack_entry());
    match job.opts.stack_trace_limit {
        Some(limit) if traces.len() > limit => {
            traces.drain(..traces.len() - limit);
        }
        _ => {}
    }
    let stacktrace = serde_json::Value::from(traces).to_string();
    let mut reason = failure.message.clone();
    if !failure.unrecoverable && job.attempt() < job.opts.attempts {
        match job
            .opts
            .backoff
            .as_ref()
            .map(|b| b.delay_ms(job.attempt(), rand))
        {
            None | Some(Ok(0)) => {
                return Finish::RetryNow {
                    reason,
                    stacktrace,
                    lifo: job.opts.lifo,
                };
            }
            Some(Ok(delay_ms)) => {
                return Finish::Delay {
                    delay_ms,
                    skip_attempt: false,
                    failure: Some((reason, stacktrace)),
                };
            }
            Some(Err(problem)) => reason = format!("{reason} (not retried: {problem})"),
        }
    }
    Finish::Failed { reason, stacktrace }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::job::{Backoff, JobOptions};

    fn job(attempts: u32, made: u32, backoff: Option<Backoff>) -> Job {
        let mut j = Job::from_fields("1".into(), vec![]);
        j.opts = JobOptions {
            attempts,
            backoff,
            ..Default::default()
        };
        j.attempts_made = made;
        j
    }

    #[test]
    fn retries_while_attempts_remain() {
        let f = decide(&job(3, 0, None), Outcome::fail("boom"), 0.0);
        assert!(matches!(f, Finish::RetryNow { ref reason, .. } if reason == "boom"));
        let b = Some(Backoff::Fixed {
            delay: 100.0,
            jitter: 0.0,
        });
        let f = decide(&job(3, 1, b.clone()), Outcome::fail("boom"), 0.0);
        assert!(matches!(
            f,
            Finish::Delay {
                delay_ms: 100,
                skip_attempt: false,
                ..
            }
        ));
        let f = decide(&job(3, 2, b), Outcome::fail("boom"), 0.0);
        assert!(matches!(f, Finish::Failed { .. }));
    }

    #[test]
    fn unrecoverable_skips_retries_and_stack_accumulates() {
        let mut j = job(5, 0, None);
        j.stacktrace = vec!["Error: earlier".into()];
        match decide(&j, Outcome::unrecoverable("nope"), 0.0) {
            Finish::Failed { reason, stacktrace } => {
                assert_eq!(reason, "nope");
                assert_eq!(
                    stacktrace,
                    r#"["Error: earlier","UnrecoverableError: nope"]"#
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_data_and_deferred_failure_fail_without_running() {
        let mut j = job(1, 0, None);
        j.data = "{not json".into();
        assert!(matches!(
            precheck(&j),
            Some(Outcome::Failed(Failure {
                unrecoverable: true,
                ..
            }))
        ));
        j.data = "{}".into();
        assert_eq!(precheck(&j), None);
        j.deferred_failure = Some("job stalled more than allowable limit".into());
        assert_eq!(
            precheck(&j),
            Some(Outcome::unrecoverable(
                "job stalled more than allowable limit"
            ))
        );
    }
}
