//! ringback: text a human exactly once when an autonomous job is really finished.
//!
//! ringback replaces a Node.js BullMQ worker, drop-in. It speaks BullMQ's Redis layout through
//! its own Lua scripts (`lua/`), takes jobs an unchanged Node `Queue` adds, and leaves the state
//! a Node `Worker` would leave, so Node tools (Queue, QueueEvents, dashboards) cannot tell the
//! difference. The worker core knows nothing about SMS: work plugs in as a [`Processor`].
//!
//! # Layout
//! Floors, bottom up, one folder each; imports point down only. The modules are re-exported at
//! the crate root (`crate::store::keys`, `crate::queue::worker`, …), so a path names the concept, and the
//! folder names the floor.
//! - [`store`], Redis and Lua: [`keys`] (the one place that builds key names), [`scripts`] (the
//!   Lua wrapper: EVALSHA, EVAL on NOSCRIPT; round-trip counting), [`commands`] (one typed
//!   function per queue script), [`connection`] (command and blocking connections, connecting
//!   until Redis answers, one Redis or a Cluster), [`cluster`] (Redis Cluster URLs, slots,
//!   `WAIT` for a replica), [`json`] (JSON as JavaScript writes it).
//! - [`queue`], the BullMQ worker core: [`job`], [`processor`] (the `Processor` trait and
//!   `Outcome`), [`lock_manager`], [`stalled_checker`], [`fetcher`], [`worker`], [`scripted`] (a
//!   job-data driven processor for tests and drills).
//! - [`callbacks`], the callback window: [`callback`] (the job's data), [`window`] (claim, mark
//!   sent, release, hold), [`sms`] (the SMS processor), [`orphans`] (the sweep of open attempts
//!   without a job), [`receipts`] (ranked delivery records), [`reconcile`] (polling missing
//!   receipts), [`escalation`], [`drain`] (resolve every open attempt before a rollback),
//!   [`service`] (a running SMS worker's processor, sweep and reconciliation).
//! - [`edge`], adapters: [`twilio`] (client, signatures), [`twilio_sim`] (the simulator), [`api`]
//!   (`ringback serve`), [`access`] (its tokens, allowlist and rate limits), [`metrics`] (one
//!   Prometheus registry for every `/metrics`), [`run`] (the worker and `serve` with everything
//!   around them, so the binary stays thin), [`cli`] (flags and environment), [`console`] (the
//!   operators' read-only pages of `serve`),
//!   [`drill`] (runs the Node harness's drills).
//! - Across the floors: [`config`], [`error`], [`redact`] (phone numbers and URL passwords out
//!   of logs), [`telemetry`] (the labelled metric families every floor records into).

pub mod callbacks;
pub mod config;
pub mod edge;
pub mod error;
pub mod queue;
pub mod redact;
pub mod store;
pub mod telemetry;
pub mod twilio;
pub mod twilio_sim;

pub use callbacks::{
    callback, drain, escalation, orphans, receipts, reconcile, resend, service, sms, window,
};
pub use edge::{access, api, cli, console, drill, metrics, run};
pub use queue::{fetcher, job, lock_manager, processor, scripted, stalled_checker, worker};
pub use store::{cluster, commands, connection, group_commit, json, keys, scripts, slots};

pub use config::WorkerConfig;
pub use error::{ConfigError, ConfigErrors, Error, ScriptCode};
pub use job::Job;
pub use processor::{Failure, JobContext, Outcome, Processor};
pub use worker::{Stopped, Worker};
