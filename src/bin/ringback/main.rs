//! The `ringback` binary: parse flags and environment, build a validated config, call the
//! library. Subcommands and names follow `../shared/CLI.md`. Exit codes: 0 clean stop,
//! 1 runtime failure, 2 bad configuration.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ringback::edge::cli::{
    QueueArgs, ServeArgs, SimArgs, SmsArgs, TwilioArgs, WorkerArgs, init_logging,
};
use ringback::{ConfigError, ConfigErrors, WorkerConfig};

mod commands;
use commands::*;

/// mimalloc, not glibc's malloc: a profile of the SMS path put ~20 % of the worker's CPU in
/// glibc's allocator (many small, short-lived buffers per job across tokio's threads).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "ringback",
    version,
    about = "Text a human exactly once when an autonomous job is finished"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Threads of the async runtime. One by default: the worker and the status webhook wait on
    /// Redis and Twilio, and one thread keeps up with what one Redis can do (see README,
    /// "Configuration"); more only add cross-thread wake-ups.
    #[arg(long, env = "RINGBACK_THREADS", global = true, default_value_t = 1,
        value_parser = parse_threads)]
    threads: u16,
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
    /// Serve the HTTP API: status webhook, callback records, the legacy send call.
    Serve {
        #[command(flatten)]
        queue: QueueArgs,
        #[command(flatten)]
        sms: SmsArgs,
        #[command(flatten)]
        serve: ServeArgs,
    },
    /// Print one callback's record for a person.
    Status {
        /// The run whose callback to show.
        run_id: String,
        #[command(flatten)]
        queue: QueueArgs,
        #[arg(long, env = "RINGBACK_CLAIM_PREFIX", default_value = "agent-callback:")]
        claim_prefix: String,
    },
    /// Print the effective configuration and every invariant's verdict; exit 2 when one is broken.
    CheckConfig(RunArgs),
    /// Before a rollback to the legacy worker: resolve every open attempt (receipt, lookup,
    /// reconcile window, send). Run it after the ringback workers are stopped (it refuses while
    /// one is alive: exit 3). Exit 0 when none is left open; 4 at `--timeout-ms` with attempts
    /// still open (listed and escalated); progress on stderr.
    Drain {
        #[command(flatten)]
        queue: QueueArgs,
        #[command(flatten)]
        sms: SmsArgs,
        #[command(flatten)]
        twilio: TwilioArgs,
        /// Give up after this long (the unresolved attempts are escalated).
        #[arg(long = "timeout-ms", default_value_t = 600_000)]
        drain_timeout_ms: u64,
        /// Print the report as JSON on stdout.
        #[arg(long)]
        json: bool,
    },
    /// Text a run's callback once more, through the window, after a person decided the human
    /// must be told (the runbook's path after an escalation; never a text typed by hand). Goes
    /// out as run `<runId>:resend`: one fenced attempt, idempotent. Exit 0 sent (or sent by an
    /// earlier resend), 3 refused (still being resolved, delivered, or no record; the reason on
    /// stderr), 4 the resend's outcome is not known yet, 1 Twilio refused it or Redis failed.
    Resend {
        /// The run whose callback to resend.
        run_id: String,
        #[command(flatten)]
        queue: QueueArgs,
        #[command(flatten)]
        sms: SmsArgs,
        #[command(flatten)]
        twilio: TwilioArgs,
    },
    /// Run a drill end to end (its own redis-server, simulator, Node BullMQ producer and legacy
    /// service, this binary as the worker): exit 0 when it proves one text per run, 1 when not.
    Drill {
        /// stall | cutover | chaos | mixed | rollback | edges | all
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(ringback::edge::drill::DRILLS))]
        name: String,
        /// Callbacks per drill (defaults: stall 20, cutover 200, chaos 300).
        #[arg(long, env = "RINGBACK_DRILL_RUNS")]
        runs: Option<u32>,
        /// The bullmq major the Node side runs: 5 (5.81.5) or 6 (6.7.0).
        #[arg(long, env = "BULLMQ_VERSION", value_parser = ["5", "6"])]
        bullmq: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Run each drill on a real local Redis Cluster (three masters with a replica each, the
        /// queues under the `{bull}` prefix) instead of one redis-server.
        #[arg(long)]
        cluster: bool,
        /// The node-harness directory (default: ./node-harness, else the checkout's).
        #[arg(long, env = "RINGBACK_HARNESS_DIR")]
        harness: Option<std::path::PathBuf>,
    },
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
    /// `/metrics`, `/healthz`, `/readyz` of the worker (`off` to disable).
    #[arg(
        long,
        env = "RINGBACK_METRICS_LISTEN",
        default_value = "127.0.0.1:9464"
    )]
    metrics_listen: String,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProcessorKind {
    Sms,
    Scripted,
}

/// Every configuration the run needs, validated.
struct Validated {
    worker: WorkerConfig,
    sms: Option<(
        ringback::callbacks::sms::SmsConfig,
        ringback::twilio::TwilioConfig,
    )>,
    warnings: Vec<String>,
    metrics: Option<std::net::SocketAddr>,
}

/// Every part is checked, so one run names every broken or missing setting.
fn validate(args: &RunArgs) -> Result<Validated, ConfigErrors> {
    let mut errors = ConfigErrors::default();
    let worker = errors.take(args.worker.to_config());
    let metrics = errors.take(match args.metrics_listen.as_str() {
        "off" | "" => Ok(None),
        addr => addr
            .parse::<std::net::SocketAddr>()
            .map(Some)
            .map_err(|_| ConfigError::new("RINGBACK_METRICS_LISTEN", "expected host:port or off")),
    });
    let sms = match args.processor {
        ProcessorKind::Scripted => Some(None),
        ProcessorKind::Sms => {
            let mut twilio = errors.take(args.twilio.to_config());
            let sms = errors.take(args.sms.to_config());
            let validity = errors.take(ringback::callbacks::sms::validity_period(
                args.twilio.validity_period_s,
                Duration::from_millis(args.sms.delivery_deadline_ms),
            ));
            if let Some(twilio) = &mut twilio {
                twilio.validity_period = validity;
            }
            // checked against the timeout as given, so it is judged even when other Twilio
            // settings are missing
            let warnings = match (&sms, &worker) {
                (Some(sms), Some(w)) => errors.take(sms.validate(
                    std::time::Duration::from_millis(args.twilio.timeout_ms),
                    w.lock_duration,
                    w.stalled_interval,
                )),
                _ => None,
            };
            sms.zip(twilio).zip(warnings).map(Some)
        }
    };
    let ((worker, metrics), sms) = errors.or(worker.zip(metrics).zip(sms))?;
    let (sms, mut warnings) = match sms {
        Some((sms, warnings)) => (Some(sms), warnings),
        None => (None, vec![]),
    };
    if args.twilio.from.as_deref().is_some_and(|f| {
        ringback::twilio::message::sender_form(f)
            == Some(ringback::twilio::message::SenderForm::MessagingService)
    }) {
        warnings.push(
            "TWILIO_FROM holds a Messaging Service SID: it is used as TWILIO_MESSAGING_SERVICE_SID (set that instead)"
                .into(),
        );
    }
    Ok(Validated {
        worker,
        sms,
        warnings,
        metrics,
    })
}

/// `--threads` / `RINGBACK_THREADS`: 1 to 256 (the message names both spellings: clap names
/// only the flag, also when the value came from the environment).
fn parse_threads(v: &str) -> Result<u16, String> {
    match v.trim().parse::<u16>() {
        Ok(n) if (1..=256).contains(&n) => Ok(n),
        _ => Err("RINGBACK_THREADS (--threads) must be a whole number from 1 to 256".into()),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(cli.threads))
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(run(cli)),
        Err(e) => {
            eprintln!("ringback: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> ExitCode {
    init_logging();
    match cli.command {
        Command::CheckConfig(args) => check_config(&args),
        Command::TwilioSim { args } => twilio_sim(args).await,
        Command::Drill {
            name,
            runs,
            bullmq,
            json,
            cluster,
            harness,
        } => drill(
            harness.as_deref(),
            ringback::edge::drill::DrillArgs {
                name,
                runs,
                bullmq,
                json,
                cluster,
            },
        ),
        Command::Serve { queue, sms, serve } => serve_api(queue, sms, serve).await,
        Command::Drain {
            queue,
            sms,
            twilio,
            drain_timeout_ms,
            json,
        } => {
            let timeout = Duration::from_millis(drain_timeout_ms);
            drain(queue, sms, twilio, timeout, json).await
        }
        Command::Status {
            run_id,
            queue,
            claim_prefix,
        } => status(&run_id, &queue, &claim_prefix).await,
        Command::Resend {
            run_id,
            queue,
            sms,
            twilio,
        } => resend(&run_id, queue, sms, twilio).await,
        Command::Worker(args) => worker(&args).await,
    }
}

/// Prints the effective values (secrets masked) whatever their verdict, then every problem.
fn check_config(args: &RunArgs) -> ExitCode {
    let mut settings = args.worker.effective();
    settings.push(("RINGBACK_METRICS_LISTEN", args.metrics_listen.clone()));
    if args.processor == ProcessorKind::Sms {
        settings.extend(args.sms.effective());
        settings.extend(args.twilio.effective());
    } else {
        settings.push(("RINGBACK_PROCESSOR", "scripted".into()));
    }
    for (name, value) in settings {
        println!("{name}={value}");
    }
    match validate(args) {
        Ok(v) => {
            for w in &v.warnings {
                println!("warning: {w}");
            }
            println!("all invariants hold");
            ExitCode::SUCCESS
        }
        Err(errors) => bad_config(errors),
    }
}
