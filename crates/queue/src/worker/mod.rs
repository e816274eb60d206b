//! The BullMQ-compatible worker: one fetch driver, a task per running job, lock renewal and
//! stall recovery beside them, and a graceful stop.
//!
//! Life of a job: a concurrency permit is taken *before* the job is moved to active (taking a
//! job first and waiting for a permit later lets its lock expire while it waits); the job runs
//! in its own task under its own tracing span; the finishing script records the outcome and,
//! unless we are stopping, takes the next job in the same round trip, which the same task then
//! runs with the same permit.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::calls::Calls;
use crate::config::WorkerConfig;
use crate::fetcher::Fetcher;
use crate::lock_manager::LockManager;
use crate::processor::Processor;
use crate::stalled_checker;
use ringback_shared::error::Error;
use ringback_shared::settings::ConfigError;
use ringback_store::scripts::RoundTrips;

mod attempt;
mod decide;
mod schedule;

/// Why [`Worker::run`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stopped {
    /// Jobs still running at the grace deadline, left to stall recovery.
    pub abandoned: usize,
    /// Jobs this process finished (completed, failed or moved to delayed/wait).
    pub finished: u64,
}

/// A worker bound to one queue and one processor.
#[derive(Debug)]
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
    calls: Calls,
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

    /// The concurrency limit: work beside the fetch loop (the orphan sweep) takes a permit when
    /// one is free, never waiting for one (the fetch loop holds one while it waits for a job),
    /// so the worker runs at most `concurrency` attempts at once, and one more while it sweeps.
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
        let client = ringback_store::connection::client(&cfg.redis_url, &cfg.redis_tls)?;
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
        let keys = ringback_store::keys::QueueKeys::new(&cfg.prefix, &cfg.queue);
        let calls = Calls::new(conn, keys, self.trips.clone());
        // Every script on every node now (on a cluster: every master), so the first jobs pay no
        // EVAL; a node that loses its cache later (restart, promoted replica) answers NOSCRIPT
        // and gets one EVAL from the wrapper.
        if let Err(e) = calls.ensure_scripts().await {
            tracing::warn!(error = %e, "could not load the scripts at start; they load on first use");
        }
        let locks = Arc::new(LockManager::new(
            calls.clone(),
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
                calls.clone(),
                cfg.max_stalled_count,
                cfg.stalled_interval,
                background.clone(),
            ));
        }

        let limit_until = Arc::new(AtomicI64::new(0));
        let shared = Arc::new(Shared {
            config: cfg.clone(),
            processor: self.processor,
            calls: calls.clone(),
            locks: locks.clone(),
            stopping: shutdown.clone(),
            stats: self.stats.clone(),
            limit_until: limit_until.clone(),
            max_started_attempts: self.max_started_attempts,
        });
        let tracker = TaskTracker::new();
        let permits = self.permits;
        let mut fetcher = Fetcher::new(client, calls, &cfg, limit_until);
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

/// Kept here for the callers that name it so; it lives in `ringback_store::connection`.
pub use ringback_store::connection::connect_until;

use attempt::run_jobs;
pub use decide::decide;
