//! What every floor of ringback uses: [`clock`] (the process clock), [`error`] (layered
//! errors), [`settings`] (a broken setting named, every one at once, and the rules
//! `check-config` prints), [`redact`] (phone numbers and URL passwords out of logs),
//! [`telemetry`] (the labelled metric families every floor records into) and [`trace`]
//! (OpenTelemetry traces, continued from the producer's). It depends on no other ringback crate.

pub mod clock;
pub mod error;
pub mod redact;
pub mod settings;
pub mod telemetry;
pub mod trace;

pub use error::{Error, ScriptCode};
pub use settings::{ConfigError, ConfigErrors};
