//! The `ringback` binary: parse flags and environment, build a validated config, call the
//! library. Subcommands and names follow `../shared/CLI.md`. Exit codes: 0 clean stop,
//! 1 runtime failure, 2 bad configuration.

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ringback::cli::{SimArgs, SmsArgs, TwilioArgs, WorkerArgs, init_logging, shutdown_on_signals};
use ringback::{ConfigError, Worker, WorkerConfig};

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
    /// Consume the queue as a BullMQ worker would, texting each callback exactly once.
    Worker(RunArgs),
    /// Run the Twilio simulator on loopback.
    TwilioSim {
        #[command(flatten)]
        args: SimArgs,
    },
    /// Print the effective configuration and every invariant's verdict; exit 2 when one is broken.
    CheckConfig(RunArgs),
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    worker: WorkerArgs,
    #[command(flatten)]
    sms: SmsArgs,
    #[command(flatten)]
    twilio: TwilioArgs,
    /// What each job does: `sms` texts the callback; `scripted` runs the job-data-driven test
    /// processor (drills).
    #[arg(long, env = "RINGBACK_PROCESSOR", value_enum, default_value_t = ProcessorKind::Sms)]
    processor: ProcessorKind,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProcessorKind {
    Sms,
    Scripted,
}

/// Every configuration the run needs, validated.
struct Validated {
    worker: WorkerConfig,
    sms: Option<(ringback::sms::SmsConfig, ringback::twilio::TwilioConfig)>,
    warnings: Vec<String>,
}

fn validate(args: &RunArgs) -> Result<Validated, ConfigError> {
    let worker = args.worker.to_config()?;
    if args.processor == ProcessorKind::Scripted {
        return Ok(Validated {
            worker,
            sms: None,
            warnings: vec![],
        });
    }
    let twilio = args.twilio.to_config()?;
    let sms = args.sms.to_config()?;
    let warnings = sms.validate(twilio.timeout, worker.lock_duration, worker.lock_renew_time)?;
    Ok(Validated {
        worker,
        sms: Some((sms, twilio)),
        warnings,
    })
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging();
    match cli.command {
        Command::CheckConfig(args) => match validate(&args) {
            Ok(v) => {
                print_config(&v);
                for w in &v.warnings {
                    println!("warning: {w}");
                }
                println!("all invariants hold");
                ExitCode::SUCCESS
            }
            Err(e) => bad_config(e),
        },
        Command::TwilioSim { args } => twilio_sim(args).await,
        Command::Worker(args) => {
            let v = match validate(&args) {
                Ok(v) => v,
                Err(e) => return bad_config(e),
            };
            for w in &v.warnings {
                tracing::warn!("{w}");
            }
            match v.sms {
                None => run(v.worker, ringback::scripted::ScriptedProcessor).await,
                Some((sms, twilio)) => {
                    let shutdown = shutdown_on_signals();
                    let processor = match ringback::sms::connect(
                        &v.worker.redis_url,
                        &v.worker.prefix,
                        &v.worker.queue,
                        sms,
                        twilio,
                        &shutdown,
                    )
                    .await
                    {
                        Ok(p) => p,
                        Err(e) => {
                            eprintln!("ringback: {e}");
                            return ExitCode::FAILURE;
                        }
                    };
                    run_until(v.worker, processor, shutdown).await
                }
            }
        }
    }
}

async fn twilio_sim(args: SimArgs) -> ExitCode {
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

async fn run<P: ringback::Processor>(config: WorkerConfig, processor: P) -> ExitCode {
    run_until(config, processor, shutdown_on_signals()).await
}

async fn run_until<P: ringback::Processor>(
    config: WorkerConfig,
    processor: P,
    shutdown: tokio_util::sync::CancellationToken,
) -> ExitCode {
    let worker = match Worker::new(config, processor) {
        Ok(w) => w,
        Err(e) => return bad_config(e),
    };
    match worker.run(shutdown).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringback: {e}");
            ExitCode::FAILURE
        }
    }
}

fn bad_config(e: ConfigError) -> ExitCode {
    eprintln!("ringback: bad configuration: {e}");
    ExitCode::from(2)
}

fn print_config(v: &Validated) {
    let c = &v.worker;
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
    if let Some((s, t)) = &v.sms {
        println!("RINGBACK_CLAIM_PREFIX={}", s.claim_prefix);
        println!("RINGBACK_PENDING_TTL_MS={}", s.pending_ttl.as_millis());
        println!("RINGBACK_SENT_TTL_MS={}", s.sent_ttl.as_millis());
        println!(
            "RINGBACK_RECONCILE_WINDOW_MS={}",
            s.reconcile_window.as_millis()
        );
        println!(
            "RINGBACK_STATUS_CALLBACK_URL={}",
            s.status_callback_url.as_deref().unwrap_or("")
        );
        println!("TWILIO_ACCOUNT_SID={}", t.account_sid);
        println!(
            "TWILIO_AUTH=*** ({})",
            match t.auth {
                ringback::twilio::Auth::AuthToken(_) => "auth token",
                ringback::twilio::Auth::ApiKey { .. } => "API key",
            }
        );
        println!("TWILIO_API_BASE={}", t.api_base);
        println!("TWILIO_TIMEOUT_MS={}", t.timeout.as_millis());
    }
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
