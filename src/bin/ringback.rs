//! The `ringback` binary: parse flags and environment, build a validated config, call the
//! library. Subcommands and names follow `../shared/CLI.md`. Exit codes: 0 clean stop,
//! 1 runtime failure, 2 bad configuration.

use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use ringback::cli::{SimArgs, WorkerArgs, init_logging, shutdown_on_signals};
use ringback::{Worker, WorkerConfig};

#[derive(Parser)]
#[command(
    name = "ringback",
    version,
    about = "Text a human exactly once when an autonomous job is finished"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Consume the queue as a BullMQ worker would.
    Worker {
        #[command(flatten)]
        args: WorkerArgs,
        /// What each job does: `scripted` runs the job-data-driven test processor (drills).
        #[arg(long, env = "RINGBACK_PROCESSOR", value_enum, default_value_t = ProcessorKind::Sms)]
        processor: ProcessorKind,
    },
    /// Run the Twilio simulator on loopback.
    TwilioSim {
        #[command(flatten)]
        args: SimArgs,
    },
    /// Print the effective configuration and every invariant's verdict; exit 2 when one is broken.
    CheckConfig {
        #[command(flatten)]
        args: WorkerArgs,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum ProcessorKind {
    /// Send the callback SMS (the claim/sent window around Twilio).
    Sms,
    /// Job data decides each attempt (`{"script": ["fail:boom", "complete"]}`).
    Scripted,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    match cli.command {
        Command::CheckConfig { args } => match args.to_config() {
            Ok(config) => {
                print_config(&config);
                println!("all invariants hold");
                ExitCode::SUCCESS
            }
            Err(e) => bad_config(e),
        },
        Command::TwilioSim { args } => {
            let (config, faults) = match args.to_config() {
                Ok(c) => c,
                Err(e) => return bad_config(e),
            };
            let listener = match tokio::net::TcpListener::bind(args.listen).await {
                Ok(l) => l,
                Err(e) => {
                    eprintln!("ringback: cannot listen on {}: {e}", args.listen);
                    return ExitCode::FAILURE;
                }
            };
            let addr = listener.local_addr().map_or(args.listen, |a| a);
            let sim = ringback::twilio_sim::Simulator::new(config, faults);
            // The line tests and drills wait for; it names the address (useful with port 0).
            println!(
                "twilio-sim listening on http://{addr} (account {})",
                sim.config.account_sid
            );
            match ringback::twilio_sim::server::serve(listener, sim, shutdown_on_signals()).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("ringback: twilio-sim: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Worker { args, processor } => {
            let config = match args.to_config() {
                Ok(c) => c,
                Err(e) => return bad_config(e),
            };
            match processor {
                ProcessorKind::Scripted => run(config, ringback::scripted::ScriptedProcessor).await,
                ProcessorKind::Sms => {
                    eprintln!(
                        "ringback: RINGBACK_PROCESSOR=sms: the SMS processor is not part of this build yet; \
                         use --processor scripted"
                    );
                    ExitCode::from(2)
                }
            }
        }
    }
}

async fn run<P: ringback::Processor>(config: WorkerConfig, processor: P) -> ExitCode {
    let worker = match Worker::new(config, processor) {
        Ok(w) => w,
        Err(e) => return bad_config(e),
    };
    match worker.run(shutdown_on_signals()).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringback: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bad_config(e: ringback::ConfigError) -> ExitCode {
    eprintln!("ringback: bad configuration: {e}");
    ExitCode::from(2)
}

fn print_config(c: &WorkerConfig) {
    println!("REDIS_URL={}", mask_url(&c.redis_url));
    println!("RINGBACK_PREFIX={}", c.prefix);
    println!("RINGBACK_QUEUE={}", c.queue);
    println!("RINGBACK_CONCURRENCY={}", c.concurrency);
    println!("RINGBACK_LOCK_DURATION_MS={}", c.lock_duration.as_millis());
    println!(
        "RINGBACK_LOCK_RENEW_TIME_MS={}",
        c.lock_renew_time.as_millis()
    );
    println!(
        "RINGBACK_STALLED_INTERVAL_MS={}",
        c.stalled_interval.as_millis()
    );
    println!("RINGBACK_MAX_STALLED_COUNT={}", c.max_stalled_count);
    println!(
        "RINGBACK_SHUTDOWN_GRACE_MS={}",
        c.shutdown_grace.as_millis()
    );
}

/// `redis://user:secret@host` → `redis://user:***@host`.
fn mask_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => {
            let creds = &url[s + 3..at];
            let user = creds.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..s + 3], &url[at..])
        }
        _ => url.to_string(),
    }
}
