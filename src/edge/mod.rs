//! Adapters at the edge: the Twilio client and the Twilio simulator, the HTTP API of `ringback
//! serve` and who may call it (`access`), the operators' console (`console`), the `/metrics` exposition, the command line (flags and environment) and the drills'
//! launcher. They use the floors below; nothing below uses them (but the Twilio client, which the
//! window calls).

pub mod access;
pub mod api;
pub mod cli;
pub mod console;
pub mod drill;
pub mod metrics;
pub mod run;
pub mod twilio;
pub mod twilio_sim;
