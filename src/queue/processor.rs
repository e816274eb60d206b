//! The seam between the worker core and the work: a [`Processor`] turns a job into an
//! [`Outcome`]. The core knows nothing of SMS; the SMS processor and the scripted test
//! processor plug in here.
//!
//! An outcome is a value, not an error (apalis-core, BullMQ's `UnrecoverableError`): the core
//! decides from it and the job's options whether to complete, retry, delay or fail.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::commands::Commands;
use crate::error::Error;
use crate::job::Job;

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done; the value is stored as the job's `returnvalue` (JSON).
    Completed(serde_json::Value),
    /// The attempt failed; retried per the job's `attempts`/`backoff` unless `unrecoverable`.
    Failed(Failure),
    /// Run the job again at this time (ms since the epoch) without using an attempt, as
    /// Node's `job.moveToDelayed(ts)` + `DelayedError`.
    DelayUntil(i64),
}

impl Outcome {
    pub fn fail(message: impl Into<String>) -> Self {
        Outcome::Failed(Failure::new(message))
    }

    pub fn unrecoverable(message: impl Into<String>) -> Self {
        Outcome::Failed(Failure {
            unrecoverable: true,
            ..Failure::new(message)
        })
    }
}

/// A failed attempt.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    /// Stored as `failedReason`: what a person reads first.
    pub message: String,
    /// Stored as the next entry of `stacktrace`; defaults to `Error: <message>`.
    pub stack: Option<String>,
    /// Skip any retries left (BullMQ `UnrecoverableError`).
    pub unrecoverable: bool,
}

impl Failure {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            stack: None,
            unrecoverable: false,
        }
    }

    pub(crate) fn stack_entry(&self) -> String {
        // The first line of a JavaScript `err.stack`: "Error: msg", or just "Error" when empty.
        let kind = if self.unrecoverable {
            "UnrecoverableError"
        } else {
            "Error"
        };
        match &self.stack {
            Some(s) => s.clone(),
            None if self.message.is_empty() => kind.to_string(),
            None => format!("{kind}: {}", self.message),
        }
    }
}

/// What a running job may do besides returning: report progress, write log rows, rate-limit
/// the queue.
#[derive(Clone)]
pub struct JobContext {
    pub(crate) commands: Commands,
    pub(crate) job_id: String,
    /// The job's `keepLogs`.
    pub(crate) keep_logs: Option<u64>,
    /// Set by [`JobContext::rate_limit`]: the job goes back to wait, whatever it returns.
    pub(crate) rate_limited: Arc<AtomicBool>,
    /// The job's lock token (for moves a processor asks for).
    pub(crate) token: String,
    /// Set by [`JobContext::wait_for_children`]: the job is in waiting-children, nothing to
    /// record.
    pub(crate) waiting_children: Arc<AtomicBool>,
}

impl JobContext {
    /// Store progress on the job and emit the `progress` event QueueEvents listens for.
    pub async fn update_progress(&self, progress: &serde_json::Value) -> Result<(), Error> {
        self.commands.update_progress(&self.job_id, progress).await
    }

    /// Rate-limit the queue for `ms` and put this job back to wait without using an attempt,
    /// as Node's `await worker.rateLimit(ms); throw Worker.RateLimitError()`. Return the outcome
    /// it gives (the worker ignores it once the queue is limited). On a Redis error the job
    /// fails this attempt with the error.
    pub async fn rate_limit(&self, ms: u64) -> Outcome {
        match self.commands.set_rate_limit(ms).await {
            Ok(()) => {
                self.rate_limited.store(true, Ordering::Relaxed);
                Outcome::DelayUntil(0)
            }
            Err(e) => Outcome::fail(format!("rateLimit failed: {e}")),
        }
    }

    /// Add a child job of this job on the same queue (Node's `Queue.add` with `opts.parent`):
    /// `opts` as Node stores them (must hold `attempts`). Returns the child's id.
    pub async fn add_child(&self, name: &str, data: &str, opts: &str) -> Result<String, Error> {
        self.commands
            .add_child(&self.job_id, name, data, opts)
            .await
    }

    /// Wait for this job's children (Node's `job.moveToWaitingChildren(token)` +
    /// `WaitingChildrenError`): `Ok(Some(outcome))` when the job moved to waiting-children
    /// (return that outcome; the worker records nothing, the job runs again when its children
    /// are done), `Ok(None)` when no child is pending (go on processing).
    pub async fn wait_for_children(&self) -> Result<Option<Outcome>, Error> {
        if self
            .commands
            .move_to_waiting_children(&self.job_id, &self.token)
            .await?
        {
            self.waiting_children.store(true, Ordering::Relaxed);
            return Ok(Some(Outcome::DelayUntil(0)));
        }
        Ok(None)
    }

    /// Append a row to the job's log (Node's `job.log`), keeping the job's `keepLogs` last rows.
    /// Returns the number of rows kept.
    pub async fn log(&self, row: &str) -> Result<i64, Error> {
        self.commands
            .add_log(&self.job_id, row, self.keep_logs)
            .await
    }
}

/// The work a worker does for each job.
pub trait Processor: Send + Sync + 'static {
    fn process(&self, job: &Job, ctx: &JobContext) -> impl Future<Output = Outcome> + Send;
}
