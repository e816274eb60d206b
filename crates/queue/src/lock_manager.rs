//! Keeps the locks of running jobs alive: one batched `extend_locks` call per tick for every
//! job whose last renewal is older than half the renewal time (Node `lock-manager.ts`).
//!
//! The table is behind a std `Mutex` that is never held across an await: a tick copies what
//! is due, releases the guard, then talks to Redis.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::calls::Calls;

#[derive(Debug)]
struct Tracked {
    token: String,
    renewed: Instant,
    lost: bool,
}

/// The running jobs of one worker process and their lock tokens.
#[derive(Debug)]
pub struct LockManager {
    jobs: Mutex<HashMap<String, Tracked>>,
    calls: Calls,
    lock_duration: Duration,
    renew_time: Duration,
}

impl LockManager {
    /// Tracks no job yet; `run` extends each tracked lock to `lock_duration` once it is
    /// `renew_time / 2` old.
    pub fn new(calls: Calls, lock_duration: Duration, renew_time: Duration) -> Self {
        Self {
            jobs: Mutex::new(HashMap::new()),
            calls,
            lock_duration,
            renew_time,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, HashMap<String, Tracked>> {
        // A panic while holding this guard cannot leave the map inconsistent (single inserts and
        // removes), so a poisoned lock is safe to keep using.
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Start renewing `job_id`'s lock (it was just written with `token`).
    pub fn track(&self, job_id: &str, token: &str) {
        self.table().insert(
            job_id.to_string(),
            Tracked {
                token: token.to_string(),
                renewed: Instant::now(),
                lost: false,
            },
        );
    }

    /// Stop renewing, just before the finishing call (avoids spurious renewal failures, bullmq #3579).
    pub fn untrack(&self, job_id: &str) {
        self.table().remove(job_id);
    }

    /// How many jobs are tracked now: taken by this process and not yet finishing.
    pub fn running(&self) -> usize {
        self.table().len()
    }

    /// Renew due locks every `renew_time / 2` until `cancel`.
    pub async fn run(&self, cancel: CancellationToken) {
        let mut tick = tokio::time::interval(self.renew_time / 2);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tick.tick() => self.renew_due().await,
            }
        }
    }

    async fn renew_due(&self) {
        let now = Instant::now();
        let due: Vec<(String, String)> = self
            .table()
            .iter()
            .filter(|(_, t)| !t.lost && now.duration_since(t.renewed) >= self.renew_time / 2)
            .map(|(id, t)| (id.clone(), t.token.clone()))
            .collect();
        if due.is_empty() {
            return;
        }
        match self
            .calls
            .extend_locks(&due, self.lock_duration.as_millis() as u64)
            .await
        {
            Ok(lost) => {
                let mut table = self.table();
                for (id, _) in &due {
                    if let Some(t) = table.get_mut(id) {
                        t.renewed = now;
                    }
                }
                for id in lost {
                    if let Some(t) = table.get_mut(&id) {
                        t.lost = true;
                        tracing::warn!(job_id = %id, "could not renew lock: the job may run again \
                            elsewhere (stall recovery)");
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, jobs = due.len(), "lock renewal failed; will retry")
            }
        }
    }
}
