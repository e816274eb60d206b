//! ringback: text a human exactly once when an autonomous job is really finished.
//!
//! ringback replaces a Node.js BullMQ worker, drop-in. It speaks BullMQ's Redis layout through
//! its own Lua scripts (`lua/`), takes jobs an unchanged Node `Queue` adds, and leaves the state
//! a Node `Worker` would leave, so Node tools (Queue, QueueEvents, dashboards) cannot tell the
//! difference. The worker core knows nothing about SMS: work plugs in as a [`Processor`].
//!
//! # Layout
//! Floors, bottom up, one crate each (`crates/`); a crate may depend on its own floor and those
//! below it, never one above (Cargo enforces the graph, `tests/it/architecture.rs` the table;
//! `docs/architecture.md` draws it). This crate is the edge; it re-exports each floor as a
//! module (`ringback::store::keys`, `ringback::queue::worker`), so tests and
//! examples name one crate, plus the worker's key types.
//! - `ringback-shared`, used by every floor: [`clock`] (the process clock), [`error`] (layered errors),
//!   [`settings`] (a broken setting named, every one at once, and the rules `check-config`
//!   prints), [`redact`] (phone numbers and URL passwords out of logs), [`telemetry`] (the
//!   labelled metric families every floor records into), [`trace`] (OpenTelemetry traces,
//!   continued from the producer's).
//! - [`store`] (`ringback-store`), Redis and Lua: `keys` (the one place that builds key names), `scripts` (the Lua
//!   wrapper: EVALSHA, EVAL on NOSCRIPT; round-trip counting), `connection` (command and
//!   blocking connections: one Redis, Sentinel or a Cluster), `cluster` (Cluster URLs, `WAIT`),
//!   `sentinel`, `probe` (what Redis refuses), `slots`, `group_commit`, `json` (JSON as
//!   JavaScript writes it).
//! - [`twilio`] (`ringback-twilio`), the provider the window calls: client (create, fetch, list), message types,
//!   error blame, request signatures. Beside storage: neither uses the other.
//! - [`queue`] (`ringback-queue`), the BullMQ worker core: `config` (the worker's settings), `commands` (one typed
//!   function per queue script), `job`, `processor` (the `Processor` trait and `Outcome`),
//!   `lock_manager`, `stalled_checker`, `fetcher`, `worker`, `cron`, `scripted` (a job-data
//!   driven processor for tests and drills).
//! - [`callbacks`] (`ringback-callbacks`), the callback window: `callback` (the job's data), `window` (claim, mark sent,
//!   release, hold), `sms` (the SMS processor), `orphans`, `receipts`, `reconcile`,
//!   `escalation`, `replies` (questions, inbound messages, the replies queue, opt-outs),
//!   `quiet` (quiet hours), `layout`, `drain`, `resend`.
//! - [`twilio_sim`] (`ringback-twilio-sim`), a tool beside the edge: the Twilio simulator (`ringback twilio-sim`); it
//!   speaks the provider's types only.
//! - [`edge`] (this crate), adapters: `api` (`ringback serve`), `access`, `console`, `metrics`, `cli` (flags
//!   and environment), `app` (the command line: subcommands, `check-config`, exit codes; the
//!   binary only calls it), `run` (the worker and `serve` with everything around them: the one place a process is wired), `drill`.

pub mod edge;

pub use ringback_callbacks as callbacks;
pub use ringback_queue as queue;
pub use ringback_shared::{clock, error, redact, settings, telemetry, trace};
pub use ringback_store as store;
pub use ringback_twilio as twilio;
pub use ringback_twilio_sim as twilio_sim;

pub use error::{Error, ScriptCode};
pub use queue::config::WorkerConfig;
pub use queue::job::Job;
pub use queue::processor::{Failure, JobContext, Outcome, Processor};
pub use queue::worker::{Stopped, Worker};
pub use settings::{ConfigError, ConfigErrors};
