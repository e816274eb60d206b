//! The command-line surface shared by the `ringback` binary and the examples: flags that also
//! read environment variables (docs/configuration.md lists them), turned into a validated config.

mod ladder;
mod otel;
pub mod reference;
mod serve;
mod sim;
mod sms;
mod twilio;
mod worker;

pub use otel::{OtelArgs, OtelConfig};
pub use serve::{ServeArgs, ServeConfig};
pub use sim::SimArgs;
pub use sms::SmsArgs;
pub use twilio::TwilioArgs;
pub use worker::{QueueArgs, WorkerArgs};

/// The log line format (`RINGBACK_LOG_FORMAT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One human-readable line per event.
    Text,
    /// One JSON object per line, for a log collector.
    Json,
}

/// Process settings every subcommand reads.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Process")]
pub struct LogArgs {
    /// The log line format on stderr; RUST_LOG filters (default info).
    #[arg(long, env = "RINGBACK_LOG_FORMAT", global = true, value_enum,
        default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}

/// Logs to stderr in `format`, filtered by `RUST_LOG` (default info).
pub fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    // colours only on a terminal: logs captured by tests, drills and collectors stay plain
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// A token cancelled on the first SIGTERM or SIGINT. The handlers are installed before this
/// returns, so a signal that arrives at any later instant (say, while Redis is still
/// unreachable) is a clean stop rather than the default action's death by signal.
pub fn shutdown_on_signals() -> tokio_util::sync::CancellationToken {
    use tokio::signal::unix::{SignalKind, signal};
    let token = tokio_util::sync::CancellationToken::new();
    let t = token.clone();
    let (term, int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => (term, int),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM/SIGINT");
            return token;
        }
    };
    tokio::spawn(async move {
        let (mut term, mut int) = (term, int);
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
        t.cancel();
    });
    token
}

/// Whether `base` is Twilio's own API (not the simulator or a test double).
pub(super) fn is_twilio_api(base: &str) -> bool {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let host = rest.split(['/', ':', '?']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.twilio.com")
        || host.to_ascii_lowercase().ends_with(".twilio.com")
}
