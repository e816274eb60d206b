//! The fetch driver: takes the next job, or waits for one the way BullMQ 5/6 workers do, on the
//! marker ZSET with `BZPOPMIN` over a dedicated connection.
//!
//! After every wake-up or timeout we call `move_to_active` again: one marker stands for many
//! jobs, and pause/resume delete and re-add it.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use ringback_store::connection::{Client, Conn};
use tokio_util::sync::CancellationToken;

use crate::calls::{Calls, Fetched};
use crate::config::WorkerConfig;
use crate::job::Job;
use ringback_shared::clock::now_ms;

/// BullMQ's ceiling on one blocking wait (its worker's `maximumBlockTimeout`: a longer block
/// risks trouble on reconnection) and on a rate-limit sleep.
const MAX_BLOCK: Duration = Duration::from_secs(10);
const MAX_RATE_LIMIT_DELAY: Duration = Duration::from_secs(30);
/// Redis ≥ 7.0.8 accepts a 1 ms BZPOPMIN timeout; 0 would block forever.
const MIN_BLOCK: Duration = Duration::from_millis(1);

/// Takes the next job for one worker process, waiting on the queue's marker between jobs
/// as BullMQ 5/6 workers do, and honouring rate limits.
#[derive(Debug)]
pub struct Fetcher {
    client: Client,
    calls: Calls,
    blocking: Option<Conn>,
    config: WorkerConfig,
    worker_id: String,
    fetches: u64,
    error_delay: Duration,
    /// Set when a processor rate-limited the queue (ms since the epoch; 0 = not limited).
    limit_until: Arc<AtomicI64>,
}

impl Fetcher {
    /// A fetcher running `calls`, its blocking connection opened from `client`; a
    /// processor's rate limit reaches it through `limit_until` (ms since the epoch, 0 = none).
    pub fn new(
        client: Client,
        calls: Calls,
        config: &WorkerConfig,
        limit_until: Arc<AtomicI64>,
    ) -> Self {
        Self {
            client,
            calls,
            blocking: None,
            config: config.clone(),
            // unique per process: replicas must never share an identity (apalis #504)
            worker_id: uuid::Uuid::new_v4().to_string(),
            fetches: 0,
            error_delay: Duration::ZERO,
            limit_until,
        }
    }

    /// This process's worker id (a random UUID); the lock tokens it takes jobs with are
    /// `<worker_id>:<n>`, n counting fetches.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// The next job and the lock token it was taken with; `None` once `cancel` fires.
    /// Cancellation only interrupts waits, never a `move_to_active` in flight (its reply
    /// would be lost with a job already moved to active).
    pub async fn next_job(&mut self, cancel: &CancellationToken) -> Option<(Box<Job>, String)> {
        // the named blocking connection is this worker's presence for Queue.getWorkers(): open
        // it at once, not only when the queue first runs dry (a busy worker never blocks)
        if self.blocking.is_none()
            && let Ok(c) = self.open_blocking().await
        {
            self.blocking = Some(c);
        }
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            // a processor rate-limited the queue (Node's waitForRateLimit)
            let until = self.limit_until.swap(0, Ordering::Relaxed);
            let wait_ms = until - now_ms();
            if wait_ms > 0 {
                sleep(
                    Duration::from_millis(wait_ms as u64).min(MAX_RATE_LIMIT_DELAY),
                    cancel,
                )
                .await;
                continue;
            }
            self.fetches += 1;
            let token = format!("{}:{}", self.worker_id, self.fetches);
            let args = crate::calls::FetchArgs::new(&self.config, &token);
            let wait = match self.calls.move_to_active(&args).await {
                Ok(Fetched::Job(job)) => {
                    self.error_delay = Duration::ZERO;
                    return Some((job, token));
                }
                Ok(Fetched::RateLimited(ms)) => {
                    sleep(Duration::from_millis(ms).min(MAX_RATE_LIMIT_DELAY), cancel).await;
                    continue;
                }
                Ok(Fetched::NextDelayed(due)) => {
                    let ms = due - now_ms();
                    if ms <= 0 {
                        continue;
                    }
                    Duration::from_millis(ms as u64).min(MAX_BLOCK)
                }
                Ok(Fetched::Empty) => self.config.drain_delay.min(MAX_BLOCK),
                Err(e) => {
                    self.backoff_after(&e, cancel).await;
                    continue;
                }
            };
            self.error_delay = Duration::ZERO;
            self.wait_for_marker(wait, cancel).await;
        }
    }

    /// The blocking connection, named as a Node `Worker` names its own (every reconnect is a
    /// new connection, named again).
    async fn open_blocking(&self) -> redis::RedisResult<Conn> {
        ringback_store::connection::blocking(
            &self.client,
            &self.config.prefix,
            &self.config.queue,
            self.config.name.as_deref(),
        )
        .await
    }

    /// Block on the marker for up to `timeout`, with a client-side watchdog one second later
    /// that drops a connection that stopped answering (bullmq #4479).
    async fn wait_for_marker(&mut self, timeout: Duration, cancel: &CancellationToken) {
        let timeout = timeout.max(MIN_BLOCK);
        let mut conn = match self.blocking.take() {
            Some(c) => c,
            None => match self.open_blocking().await {
                Ok(c) => c,
                Err(e) => {
                    self.backoff_after(&e.into(), cancel).await;
                    return;
                }
            },
        };
        let mut cmd = redis::cmd("BZPOPMIN");
        cmd.arg(self.calls.keys().marker())
            .arg(timeout.as_secs_f64());
        self.calls.round_trips().add(1);
        let reply = tokio::select! {
            _ = cancel.cancelled() => return,
            r = tokio::time::timeout(timeout + Duration::from_secs(1), cmd.query_async::<redis::Value>(&mut conn)) => r,
        };
        match reply {
            Ok(Ok(_)) => self.blocking = Some(conn),
            Ok(Err(e)) => self.backoff_after(&e.into(), cancel).await,
            Err(_) => tracing::warn!("blocking wait on the marker did not return; reconnecting"),
        }
    }

    async fn backoff_after(
        &mut self,
        e: &ringback_shared::error::Error,
        cancel: &CancellationToken,
    ) {
        self.error_delay =
            (self.error_delay * 2).clamp(Duration::from_millis(100), Duration::from_secs(5));
        tracing::warn!(error = %e, retry_ms = self.error_delay.as_millis() as u64, "fetching jobs failed");
        sleep(self.error_delay, cancel).await;
    }
}

async fn sleep(d: Duration, cancel: &CancellationToken) {
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = tokio::time::sleep(d) => {}
    }
}
