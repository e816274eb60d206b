//! The `ringback` command line: parse flags and environment, build a validated config, run the
//! subcommand; the binary only calls [`main`]. Subcommands, settings and exit codes:
//! docs/commands.md and docs/configuration.md. Exit codes: 0 clean stop, 1 runtime failure, 2 bad
//! configuration.

use std::process::ExitCode;
use std::time::Duration;

use crate::edge::cli::{
    LogArgs, OtelArgs, QueueArgs, ServeArgs, SimArgs, SmsArgs, TwilioArgs, WorkerArgs, init_logging,
};
use crate::{ConfigError, ConfigErrors, WorkerConfig};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

mod check;
mod commands;
use check::{check_config, check_drain, check_serve, check_worker};
use commands::{bad_config_with, drain, drill, resend, serve_api, status, twilio_sim, worker};

#[derive(Parser)]
#[command(
    name = "ringback",
    version = VERSION,
    about = "Text a human exactly once when an autonomous job is finished"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    log: LogArgs,
    /// Threads of the async runtime. One by default: the worker and the status webhook wait on
    /// Redis and Twilio, and one thread keeps up with what one Redis can do
    /// (`docs/benchmarks.md`); more only add cross-thread wake-ups.
    #[arg(long, env = "RINGBACK_THREADS", global = true, default_value_t = 1,
        value_parser = parse_threads, help_heading = "Process")]
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
        #[command(flatten)]
        otel: OtelArgs,
    },
    /// Print one callback's record for a person.
    Status {
        /// The run whose callback to show.
        run_id: String,
        #[command(flatten)]
        queue: QueueArgs,
        /// The prefix of the claim and sent keys, shared with the legacy worker.
        #[arg(long, env = "RINGBACK_CLAIM_PREFIX", default_value = "agent-callback:")]
        claim_prefix: String,
    },
    /// Check the settings a subcommand needs (the worker's by default): print the effective
    /// values (secrets masked), every rule between them with its verdict, and every broken or
    /// missing setting by variable and flag; exit 2 when one is broken. The flags after the
    /// subcommand's name are read as that subcommand reads them.
    CheckConfig {
        /// Print the configuration reference (Markdown, `docs/configuration.md`) and exit.
        #[arg(long)]
        reference: bool,
        /// `worker` (default), `serve` or `drain`, then that subcommand's flags.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "SUBCOMMAND [FLAGS]"
        )]
        args: Vec<std::ffi::OsString>,
    },
    /// Before a rollback to the legacy worker: resolve every open attempt (receipt, lookup,
    /// reconcile window, send). Run it after the ringback workers are stopped (it refuses while
    /// one is alive, or while escalation ladders climb without `--end-ladders`: exit 3). Exit 0 when none is left open; 4 at `--timeout-ms` with attempts
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
        /// End the escalation ladders that still climb, each escalated once (kind `rollback`)
        /// so a person is told; without it the drain refuses (exit 3) while any climbs, since
        /// only workers climb them.
        #[arg(long = "end-ladders")]
        end_ladders: bool,
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
        /// The drill to run (docs/drills.md); `all` runs every one.
        #[arg(value_parser = clap::builder::PossibleValuesParser::new(crate::edge::drill::DRILLS))]
        name: String,
        /// Callbacks per drill (default: each drill's own, `docs/drills.md`).
        #[arg(long, env = "RINGBACK_DRILL_RUNS", help_heading = "Drills")]
        runs: Option<u32>,
        /// The bullmq major the Node side runs: 5 (5.81.5) or 6 (6.7.0).
        #[arg(long, env = "BULLMQ_VERSION", value_parser = ["5", "6"], help_heading = "Drills")]
        bullmq: Option<String>,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Run each drill on a real local Redis Cluster (three masters with a replica each, the
        /// queues under the `{bull}` prefix) instead of one redis-server.
        #[arg(long)]
        cluster: bool,
        /// The node-harness directory (default: ./node-harness, else the checkout's).
        #[arg(long, env = "RINGBACK_HARNESS_DIR", help_heading = "Drills")]
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
    #[command(flatten)]
    otel: OtelArgs,
    /// What each job does: `sms` texts the callback; `scripted` runs the job-data-driven test
    /// processor (drills).
    #[arg(long, env = "RINGBACK_PROCESSOR", value_enum, default_value_t = ProcessorKind::Sms,
        hide = true)]
    processor: ProcessorKind,
    /// `/metrics`, `/healthz`, `/readyz` of the worker (`off` to disable).
    #[arg(
        long,
        env = "RINGBACK_METRICS_LISTEN",
        default_value = "127.0.0.1:9464",
        help_heading = "Worker (BullMQ options)"
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
        crate::callbacks::sms::SmsConfig,
        crate::twilio::TwilioConfig,
    )>,
    warnings: Vec<String>,
    metrics: Option<std::net::SocketAddr>,
    /// Where traces go (`None`: off).
    otel: Option<crate::edge::cli::OtelConfig>,
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
        ProcessorKind::Scripted if !args.sms.drill => {
            errors.push(ConfigError::new(
                "RINGBACK_PROCESSOR",
                "scripted texts nobody (a test processor): refused outside drill mode (RINGBACK_DRILL=1); unset it to text callbacks",
            ));
            None
        }
        ProcessorKind::Scripted => Some(None),
        ProcessorKind::Sms => {
            let mut twilio = errors.take(args.twilio.to_config());
            let sms = errors.take(args.sms.to_config()).map(|mut s| {
                s.lost_writes_window = s.lost_writes_window_for(
                    Duration::from_millis(args.worker.lock_duration_ms),
                    Duration::from_millis(args.worker.stalled_interval_ms),
                );
                s
            });
            let validity = errors.take(crate::callbacks::sms::validity_period(
                args.twilio.validity_period_s,
                Duration::from_millis(args.sms.delivery_deadline_ms),
            ));
            if let Some(twilio) = &mut twilio {
                twilio.validity_period = validity;
            }
            // judged on the timings as given, so every broken rule is named even when another
            // setting (a Redis URL, a Twilio secret) is broken too
            let mut warnings = errors.take(args.sms.window().validate(
                Duration::from_millis(args.twilio.timeout_ms),
                Duration::from_millis(args.worker.lock_duration_ms),
                Duration::from_millis(args.worker.stalled_interval_ms),
            ));
            if let (Some(w), Some(sms)) = (warnings.as_mut(), &sms)
                && sms.crash_at.is_some()
            {
                w.push(
                    "RINGBACK_CRASH_AT is set: this process will abort on purpose (drills only)"
                        .into(),
                );
            }
            sms.zip(twilio).zip(warnings).map(Some)
        }
    };
    let otel = errors.take(args.otel.to_config());
    let (((worker, metrics), sms), otel) = errors.or(worker.zip(metrics).zip(sms).zip(otel))?;
    let (sms, mut warnings) = match sms {
        Some((sms, warnings)) => (Some(sms), warnings),
        None => (None, vec![]),
    };
    if args.twilio.from.as_deref().is_some_and(|f| {
        crate::twilio::message::sender_form(f)
            == Some(crate::twilio::message::SenderForm::MessagingService)
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
        otel,
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

/// The trace exporter, when `worker` or `serve` turned traces on: shut down at exit.
static TRACES: std::sync::OnceLock<opentelemetry_sdk::trace::SdkTracerProvider> =
    std::sync::OnceLock::new();

/// Turns traces on when `otel` says where they go.
fn start_traces(otel: Option<&crate::edge::cli::OtelConfig>) -> Result<(), ExitCode> {
    let Some(otel) = otel else { return Ok(()) };
    match otel.install() {
        Ok(provider) => {
            tracing::info!(endpoint = %otel.traces_endpoint, "traces on, over OTLP/HTTP");
            let _ = TRACES.set(provider);
            Ok(())
        }
        Err(e) => {
            eprintln!("ringback: traces: {e}");
            Err(ExitCode::from(2))
        }
    }
}

/// `ringback --version`: the release and the on-Redis record layout it writes.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (record layout 1)");

/// Parse the command line and run it on a runtime of its own; the process's exit code.
pub fn main() -> ExitCode {
    if std::env::args().any(|a| a == "check-config") && std::env::args().any(|a| a == "--reference")
    {
        // the reference gives the defaults, whatever this environment sets
        for s in crate::edge::cli::reference::settings(&Cli::command()) {
            // SAFETY: one thread (the runtime is not built yet): nothing reads the environment
            // while it changes.
            unsafe { std::env::remove_var(&s.env) };
        }
    }
    if let Some(text) = short_help() {
        print!("{text}");
        return ExitCode::SUCCESS;
    }
    let unparsable = unparsable_settings();
    let cli = Cli::parse();
    match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(usize::from(cli.threads))
        .enable_all()
        .build()
    {
        Ok(runtime) => {
            let code = runtime.block_on(run(cli, unparsable));
            drop(runtime);
            // the last spans, sent after every task stopped
            if let Some(provider) = TRACES.get()
                && let Err(e) = provider.shutdown()
            {
                eprintln!("ringback: the last traces could not be sent: {e}");
            }
            code
        }
        Err(e) => {
            eprintln!("ringback: cannot start the async runtime: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `-h` (without `--help`): one line per flag, for the subcommands named before it
/// ([`crate::edge::cli::reference::short_help`]); `--help` is clap's full reference.
fn short_help() -> Option<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "-h") || args.iter().any(|a| a == "--help") {
        return None;
    }
    let root = Cli::command();
    let mut path: Vec<&str> = vec![];
    let mut cmd = &root;
    for a in args.iter().take_while(|a| *a != "-h") {
        if let Some(sub) = cmd.find_subcommand(a) {
            path.push(sub.get_name());
            cmd = sub;
        }
    }
    crate::edge::cli::reference::short_help(&root, &path)
}

/// Every variable the named subcommand reads whose value does not parse, named with its flag
/// (clap would stop at the first and name only the flag). Each is then removed from the
/// environment, so the rest of the configuration is still checked in the same run and every
/// problem named at once.
fn unparsable_settings() -> Vec<String> {
    let Some(sub) = subcommand_named() else {
        return vec![];
    };
    let unparsable = crate::edge::cli::reference::unparsable_env(&Cli::command(), &sub);
    for (name, _) in &unparsable {
        // SAFETY: the process has one thread here (the runtime is not built yet), so nothing
        // reads the environment while it changes.
        unsafe { std::env::remove_var(name) };
    }
    unparsable.into_iter().map(|(_, line)| line).collect()
}

/// The subcommand the command line names (the first argument that is one); for
/// `check-config`, the subcommand it checks.
fn subcommand_named() -> Option<String> {
    let root = Cli::command();
    let mut args = std::env::args().skip_while(|a| root.find_subcommand(a).is_none());
    let sub = args.next()?;
    if sub != "check-config" {
        return Some(sub);
    }
    match args.find(|a| a != "--reference").as_deref() {
        Some(t @ ("worker" | "serve" | "drain")) => Some(t.to_string()),
        Some("resend") => Some("drain".to_string()),
        _ => Some("worker".to_string()),
    }
}

async fn run(cli: Cli, unparsable: Vec<String>) -> ExitCode {
    init_logging(cli.log.log_format);
    if !unparsable.is_empty() {
        // refused, with every other problem of the same configuration named too
        let checked = match &cli.command {
            Command::CheckConfig {
                reference: false,
                args,
            } => return check_config(false, args.clone(), unparsable),
            Command::Worker(args) => check_worker(args).2,
            Command::Serve {
                queue,
                sms,
                serve,
                otel,
            } => check_serve(queue, sms, serve, otel).2,
            Command::Drain {
                queue, sms, twilio, ..
            } => check_drain(queue, sms, twilio).2,
            _ => Ok(vec![]),
        };
        return bad_config_with(&unparsable, checked.err().unwrap_or_default());
    }
    match cli.command {
        Command::CheckConfig { reference, args } => check_config(reference, args, vec![]),
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
            crate::edge::drill::DrillArgs {
                name,
                runs,
                bullmq,
                json,
                cluster,
            },
        ),
        Command::Serve {
            queue,
            sms,
            serve,
            otel,
        } => serve_api(queue, sms, serve, otel).await,
        Command::Drain {
            queue,
            sms,
            twilio,
            drain_timeout_ms,
            json,
            end_ladders,
        } => {
            let timeout = Duration::from_millis(drain_timeout_ms);
            let ladders = if end_ladders {
                crate::callbacks::drain::Ladders::End
            } else {
                crate::callbacks::drain::Ladders::Refuse
            };
            drain(queue, sms, twilio, timeout, json, ladders).await
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
