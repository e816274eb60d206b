//! ringback: text a human exactly once when an autonomous job is really finished.
//!
//! ringback replaces a Node.js BullMQ worker, drop-in. It speaks BullMQ's Redis layout through
//! its own Lua scripts (`lua/`), takes jobs an unchanged Node `Queue` adds, and leaves the state
//! a Node `Worker` would leave, so Node tools (Queue, QueueEvents, dashboards) cannot tell the
//! difference. The worker core knows nothing about SMS: work plugs in as a [`Processor`].
//!
//! # Layout
//! Floors, bottom up; imports point down only.
//! - [`keys`]: the one place that builds Redis key names.
//! - [`scripts`]: the Lua wrapper (EVALSHA, EVAL on NOSCRIPT) and round-trip counting.
//! - [`commands`]: one typed function per script.
//! - [`connection`]: the command connection and the dedicated blocking connection.
//! - [`job`]: a fetched job, its options, backoff and keep-jobs rules.
//! - [`processor`]: the `Processor` trait and the `Outcome` of an attempt.
//! - [`lock_manager`]: batched renewal of running jobs' locks.
//! - [`stalled_checker`]: the periodic two-phase stall sweep.
//! - [`fetcher`]: the fetch driver (move to active, or wait on the marker).
//! - [`worker`]: permits, job tasks, finishing, graceful stop.
//! - [`scripted`]: a processor driven by job data, for interop tests and drills.
//! - [`config`], [`error`], [`cli`]: settings, errors, and the command-line surface.

pub mod api;
pub mod callback;
pub mod cli;
pub mod commands;
pub mod config;
pub mod connection;
pub mod error;
pub mod escalation;
pub mod fetcher;
pub mod job;
pub mod json;
pub mod keys;
pub mod lock_manager;
pub mod metrics;
pub mod orphans;
pub mod processor;
pub mod receipts;
pub mod reconcile;
pub mod scripted;
pub mod scripts;
pub mod sms;
pub mod stalled_checker;
pub mod twilio;
pub mod twilio_sim;
pub mod window;
pub mod worker;

pub use config::WorkerConfig;
pub use error::{ConfigError, Error, ScriptCode};
pub use job::Job;
pub use processor::{Failure, JobContext, Outcome, Processor};
pub use worker::{Stopped, Worker};
