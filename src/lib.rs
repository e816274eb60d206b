//! ringback: text a human exactly once when an autonomous job is really finished.
//!
//! ringback replaces a Node.js BullMQ worker, drop-in. It speaks BullMQ's Redis layout through
//! its own Lua scripts (`lua/`), takes jobs an unchanged Node `Queue` adds, and leaves the state
//! a Node `Worker` would leave, so Node tools (Queue, QueueEvents, dashboards) cannot tell the
//! difference. The worker core knows nothing about SMS: work plugs in as a [`Processor`].
//!
//! # Layout
//! Floors, bottom up; imports point down only.
//! - Redis and Lua: [`keys`] (the one place that builds key names), [`scripts`] (the Lua
//!   wrapper: EVALSHA, EVAL on NOSCRIPT; round-trip counting), [`commands`] (one typed function
//!   per queue script), [`connection`] (command and blocking connections, connecting until Redis
//!   answers), [`json`] (JSON as JavaScript writes it), [`redact`] (phone numbers and URL
//!   passwords out of logs).
//! - The BullMQ worker core: [`job`], [`processor`] (the `Processor` trait and `Outcome`),
//!   [`lock_manager`], [`stalled_checker`], [`fetcher`], [`worker`], [`scripted`] (a job-data
//!   driven processor for tests and drills).
//! - The callback window: [`callback`] (the job's data), [`window`] (claim, mark sent, release,
//!   hold), [`sms`] (the SMS processor), [`orphans`] (the sweep of open attempts without a job),
//!   [`receipts`] (ranked delivery records), [`reconcile`] (polling missing receipts),
//!   [`escalation`], [`drain`] (resolve every open attempt before a rollback).
//! - Wiring: [`service`] (a running SMS worker's processor, sweep and reconciliation).
//! - Adapters at the edge: [`twilio`] (client, signatures), [`twilio_sim`] (the simulator),
//!   [`api`] (`ringback serve`), [`metrics`] (the worker's `/metrics`), [`cli`] (flags and
//!   environment), [`config`], [`error`], [`drill`] (runs the Node harness's drills).

pub mod api;
pub mod callback;
pub mod cli;
pub mod commands;
pub mod config;
pub mod connection;
pub mod drain;
pub mod drill;
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
pub mod redact;
pub mod scripted;
pub mod scripts;
pub mod service;
pub mod sms;
pub mod stalled_checker;
pub mod twilio;
pub mod twilio_sim;
pub mod window;
pub mod worker;

pub use config::WorkerConfig;
pub use error::{ConfigError, ConfigErrors, Error, ScriptCode};
pub use job::Job;
pub use processor::{Failure, JobContext, Outcome, Processor};
pub use worker::{Stopped, Worker};
