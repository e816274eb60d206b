//! The ringback worker with the scripted processor (job data decides what each attempt does),
//! configured like `ringback worker`. Used by the Node interop tests and the drills.

use clap::Parser;
use ringback::edge::cli::{LogArgs, OtelArgs, WorkerArgs, init_logging, shutdown_on_signals};
use ringback::{Worker, queue::scripted::ScriptedProcessor};

/// The allocator `ringback worker` runs with (src/bin/ringback/main.rs says why), so the no-op
/// benchmark measures the worker core as shipped.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "ringback worker with the scripted processor")]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(flatten)]
    worker: WorkerArgs,
    #[command(flatten)]
    otel: OtelArgs,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log.log_format);
    let config = match cli.worker.to_config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ringback: bad configuration: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    // traces as `ringback worker` takes them (the differential's telemetry scenario)
    let traces = match cli.otel.to_config().map(|c| c.map(|c| c.install())) {
        Ok(None) => None,
        Ok(Some(Ok(provider))) => Some(provider),
        Ok(Some(Err(e))) => {
            eprintln!("ringback: traces: {e}");
            return std::process::ExitCode::from(2);
        }
        Err(e) => {
            eprintln!("ringback: bad configuration: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let worker = match Worker::new(config, ScriptedProcessor) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("ringback: bad configuration: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let ran = worker.run(shutdown_on_signals()).await;
    if let Some(provider) = traces {
        let _ = tokio::task::spawn_blocking(move || provider.shutdown()).await;
    }
    match ran {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringback: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
