//! Adapters at the edge: the HTTP API of `ringback serve` and who may call it (`access`), the
//! operators' console (`console`), the `/metrics` exposition, the command line (flags and
//! environment), the worker and `serve` with everything around them (`run`) and the drills'
//! launcher. They may use every floor below (`docs/architecture.md`); nothing below uses them.

pub mod access;
pub mod api;
pub mod app;
pub mod cli;
pub mod console;
pub mod drill;
pub mod metrics;
pub mod run;
