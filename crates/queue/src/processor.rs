//! The seam between the worker core and the work: a [`Processor`] turns a job into an
//! [`Outcome`]. The core knows nothing of SMS; the SMS processor and the scripted test
//! processor plug in here.
//!
//! An outcome is a value, not an error (apalis-core, BullMQ's `UnrecoverableError`): the core
//! decides from it and the job's options whether to complete, retry, delay or fail.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::calls::Calls;
use crate::job::Job;
use ringback_shared::error::Error;
use ringback_store::call::Call;
use ringback_store::scripts::LuaScript;

/// How one attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Done; the value is stored as the job's `returnvalue` (JSON).
    Completed(serde_json::Value),
    /// The attempt failed; retried per the job's `attempts`/`backoff` unless `unrecoverable`.
    Failed(Failure),
    /// Run the job again at this time (ms since the epoch, on this process's clock, as every
    /// BullMQ timestamp a worker writes) without using an attempt, as Node's
    /// `job.moveToDelayed(ts)` + `DelayedError`.
    DelayUntil(i64),
}

impl Outcome {
    /// A failed attempt with `message`, retried per the job's `attempts` and `backoff`.
    pub fn fail(message: impl Into<String>) -> Self {
        Outcome::Failed(Failure::new(message))
    }

    /// A failure that skips any retries left (BullMQ's `UnrecoverableError`).
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
    /// A recoverable failure with `message`: retried while attempts remain, stack defaulted.
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
#[derive(Clone, Debug)]
pub struct JobContext {
    pub(crate) calls: Calls,
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
    /// What the finishing call that fetched this job prepared for it (see [`FinishStep`]).
    pub(crate) prepared: Option<Prepared>,
    /// Set by [`JobContext::finish_with`].
    pub(crate) finish_step: Arc<Mutex<Option<FinishStep>>>,
    /// The span the job is processed in (a no-op when traces are off).
    pub(crate) trace: ringback_shared::trace::Step,
    /// How long the worker may keep sending this job's finishing call again (see
    /// [`JobContext::resent_within`]).
    pub(crate) resent_within: Duration,
}

/// A processor's last write, folded into the call that completes its job, and its first step for
/// the next job, folded into the same call's fetch: one Redis round trip per job.
///
/// When an attempt completes and its processor gave a step ([`JobContext::finish_with`]), the
/// worker runs the step's script in place of `move_to_finished.lua`: the script takes that
/// script's KEYS\[1..14\] and ARGV\[1..17\] (the same contract, so Node sees the same
/// completion), then the step's own part, named as its header names it
/// ([`LuaScript::call_after`]), and answers `{finish, own, next}`: move_to_finished's answer,
/// the step's own answer (a [`StepReply`] handed to `done`, whatever became of the job: the
/// step's write is not the job's), and what it prepared for the job it fetched, if any (that
/// job's [`Prepared`]). The worker knows nothing of what the step does; a step is only given
/// where one script can reach all its keys (a single Redis, not a Cluster).
pub struct FinishStep {
    /// The step's part of the call: its script, and the keys and arguments it names after
    /// move_to_finished's contract (`script.call_after(14, 17)…`).
    pub call: Call<'static>,
    /// The script's batch counterpart, when it has one: several jobs' calls of the script in
    /// one, in the group commit's layout (`ringback_store::group_commit::batch_layout`: each
    /// job's KEYS and ARGV as the script takes them, a later job's as what differs from the one
    /// before). Finishing calls that queue up together are then sent as one.
    pub batch: Option<&'static LuaScript>,
    /// Called with the step's own answer once the call answered.
    pub done: Box<dyn FnOnce(StepReply) + Send>,
    /// What the step prepared is usable this long after the call was first sent: an answer
    /// that came later (a reply lost and the call sent again, a slow Redis) has its preparation
    /// given back ([`Processor::unprepared`]) and the fetched job runs without it. `None`: no
    /// bound. A step whose script is sent again must answer a re-execution as its first run
    /// did (`finish_sent.lua` keeps its answer).
    pub fresh_for: Option<Duration>,
}

impl std::fmt::Debug for FinishStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinishStep")
            .field("script", &self.call.script().name)
            .field("keys", &self.call.keys())
            .finish_non_exhaustive()
    }
}

/// A [`FinishStep`]'s own answer, as its script gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StepReply {
    /// Nothing (`nil` or `false`).
    Nothing,
    /// A number.
    Number(i64),
    /// A list of strings (or one string).
    Words(Vec<String>),
}

/// What a [`FinishStep`] prepared for the job its call fetched: the strings its script answered
/// for that job, in the step's own order (the SMS window's: the claim, then the runId it is
/// for). Handed to the fetched job's processor ([`JobContext::prepared`]), or given back when
/// that job ends without it running ([`Processor::unprepared`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared(Vec<String>);

impl Prepared {
    /// What was prepared, as `words` (none: nothing was prepared, and there is no `Prepared`).
    pub fn new(words: Vec<String>) -> Option<Self> {
        (!words.is_empty()).then_some(Self(words))
    }

    /// The strings, in the step's order.
    pub fn words(&self) -> &[String] {
        &self.0
    }
}

impl JobContext {
    /// A context with no finishing step and nothing prepared.
    pub(crate) fn new(calls: Calls, job: &Job, token: &str) -> Self {
        Self {
            calls,
            job_id: job.id.clone(),
            keep_logs: job.opts.keep_logs,
            rate_limited: Arc::new(AtomicBool::new(false)),
            token: token.to_string(),
            waiting_children: Arc::new(AtomicBool::new(false)),
            prepared: None,
            finish_step: Arc::default(),
            trace: ringback_shared::trace::Step::default(),
            resent_within: Duration::ZERO,
        }
    }

    /// How long after its first send the worker may still send this job's finishing call again
    /// (through lost replies and Redis outages it retries for as long as its lock could be
    /// valid). A [`FinishStep`] whose script keeps its answer for re-executions keeps it at
    /// least this long: a re-send that found the answer gone would take its own job for lost
    /// and leave the job the first run fetched to stall recovery.
    pub fn resent_within(&self) -> Duration {
        self.resent_within
    }

    /// The span the job is processed in: a processor opens its steps' spans under it (a no-op
    /// when traces are off).
    pub fn trace(&self) -> &ringback_shared::trace::Step {
        &self.trace
    }

    /// What the previous job's [`FinishStep`] prepared for this job when its finishing call
    /// fetched it (`None`: fetched by a plain call, or the step prepared nothing).
    pub fn prepared(&self) -> Option<&Prepared> {
        self.prepared.as_ref()
    }

    /// Fold `step` into this job's finishing call. Only used when the attempt completes (an
    /// [`Outcome::Completed`]); a processor that must write whatever the outcome writes itself.
    pub fn finish_with(&self, step: FinishStep) {
        if let Ok(mut slot) = self.finish_step.lock() {
            *slot = Some(step);
        }
    }

    pub(crate) fn take_finish_step(&self) -> Option<FinishStep> {
        self.finish_step.lock().ok().and_then(|mut s| s.take())
    }

    /// Store progress on the job and emit the `progress` event QueueEvents listens for.
    pub async fn update_progress(&self, progress: &serde_json::Value) -> Result<(), Error> {
        self.calls.update_progress(&self.job_id, progress).await
    }

    /// Rate-limit the queue for `ms` and put this job back to wait without using an attempt,
    /// as Node's `await worker.rateLimit(ms); throw Worker.RateLimitError()`. Return the outcome
    /// it gives (the worker ignores it once the queue is limited). On a Redis error the job
    /// fails this attempt with the error.
    pub async fn rate_limit(&self, ms: u64) -> Outcome {
        match self.calls.set_rate_limit(ms).await {
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
        self.calls.add_child(&self.job_id, name, data, opts).await
    }

    /// Wait for this job's children (Node's `job.moveToWaitingChildren(token)` +
    /// `WaitingChildrenError`): `Ok(Some(outcome))` when the job moved to waiting-children
    /// (return that outcome; the worker records nothing, the job runs again when its children
    /// are done), `Ok(None)` when no child is pending (go on processing).
    pub async fn wait_for_children(&self) -> Result<Option<Outcome>, Error> {
        if self
            .calls
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
        self.calls.add_log(&self.job_id, row, self.keep_logs).await
    }
}

/// The work a worker does for each job.
pub trait Processor: Send + Sync + 'static {
    /// Run one attempt of `job` and say how it ended; `ctx` reports progress, logs and rate
    /// limits. Not called for a job it declines or one that must fail without running.
    fn process(&self, job: &Job, ctx: &JobContext) -> impl Future<Output = Outcome> + Send;

    /// The previous job's [`FinishStep`] prepared `prepared` for `job`, but the job ends without
    /// the processor running (a deferred failure, unreadable options, the started limit): undo
    /// what needs undoing. Nothing by default.
    fn unprepared(&self, job: &Job, prepared: Prepared) -> impl Future<Output = ()> + Send {
        let _ = (job, prepared);
        async {}
    }

    /// Some(`after`) when `job` is not this processor's to run (another worker's job name on a
    /// shared queue): it goes back to delayed for `after`, its attempts untouched, for the
    /// worker that handles it, and is never failed. None (run it) by default.
    fn declines(&self, job: &Job) -> Option<Duration> {
        let _ = job;
        None
    }

    /// `job` fails without running because its data or options cannot be read (`reason`):
    /// tell whoever must hear of it. False keeps the job, to be tried again shortly (telling
    /// failed); true lets it fail. Nothing to tell by default.
    fn unreadable(&self, job: &Job, reason: &str) -> impl Future<Output = bool> + Send {
        let _ = (job, reason);
        async { true }
    }
}
