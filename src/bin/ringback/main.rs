//! The `ringback` binary: parse flags and environment, build a validated config, call the
//! library. Subcommands and names follow `../shared/CLI.md`. Exit codes: 0 clean stop,
//! 1 runtime failure, 2 bad configuration.

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use ringback::edge::cli::{
    QueueArgs, ServeArgs, SimArgs, SmsArgs, TwilioArgs, WorkerArgs, init_logging,
    shutdown_on_signals,
};
use ringback::{ConfigError, ConfigErrors, WorkerConfig};

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

/// Every part is checked, so one run names every broken or missing setting (issue 9).
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

async fn worker(args: &RunArgs) -> ExitCode {
    let v = match validate(args) {
        Ok(v) => v,
        Err(e) => return bad_config(e),
    };
    for w in &v.warnings {
        tracing::warn!("{w}");
    }
    let shutdown = shutdown_on_signals();
    match v.sms {
        None => {
            run_until(
                v.worker,
                ringback::queue::scripted::ScriptedProcessor,
                shutdown,
                v.metrics,
                None,
            )
            .await
        }
        Some((sms, twilio)) => {
            let processor = match ringback::callbacks::service::connect(
                &v.worker.redis_url,
                &v.worker.redis_tls,
                v.worker.redis_wait,
                &v.worker.prefix,
                &v.worker.queue,
                sms,
                twilio,
                &shutdown,
            )
            .await
            {
                Ok(p) => p,
                Err(e) => return failed(e),
            };
            let background = processor.clone();
            run_until(v.worker, processor, shutdown, v.metrics, Some(background)).await
        }
    }
}

/// A runtime failure exits 1; a stop asked for before Redis answered is a clean stop (0).
fn failed(e: ringback::Error) -> ExitCode {
    match e {
        ringback::Error::Stopped => {
            tracing::info!("stopped before Redis answered");
            ExitCode::SUCCESS
        }
        e => {
            eprintln!("ringback: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Listens at once; the API opens when Redis answers (see `api::Startup`).
async fn serve_api(queue: QueueArgs, sms: SmsArgs, serve: ServeArgs) -> ExitCode {
    let mut errors = ConfigErrors::default();
    let sms = errors.take(sms.to_config());
    let serve = errors.take(serve.to_config());
    let client = errors.take(queue.client());
    let ((sms, serve), client) = match errors.or(sms.zip(serve).zip(client)) {
        Ok(p) => p,
        Err(e) => return bad_config(e),
    };
    let listener = match tokio::net::TcpListener::bind(serve.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("ringback: cannot listen on {}: {e}", serve.listen);
            return ExitCode::FAILURE;
        }
    };
    let addr = listener.local_addr().map_or(serve.listen, |a| a);
    println!("ringback serve listening on http://{addr}");
    let queue = (queue.prefix, queue.queue);
    match ringback::edge::run::serve(listener, client, queue, sms, serve, shutdown_on_signals())
        .await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringback: serve: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn status(run_id: &str, queue: &QueueArgs, claim_prefix: &str) -> ExitCode {
    let record = async {
        let client = queue.client().map_err(ringback::Error::Config)?;
        let conn = ringback::store::connection::commands(&client).await?;
        let sms = ringback::callbacks::sms::SmsConfig {
            claim_prefix: claim_prefix.to_string(),
            ..Default::default()
        };
        let (receipts, _) = sms.after_send(conn.clone(), &queue.prefix, &queue.queue);
        let q = ringback::queue::commands::Commands::new(
            conn,
            ringback::store::keys::QueueKeys::new(&queue.prefix, &queue.queue),
            Default::default(),
        );
        receipts.record(run_id, Some(&q)).await
    };
    match record.await {
        Ok(r) => {
            println!("run        {}", r.run_id);
            println!("state      {}", r.state);
            println!("message    {}", r.message_sid.as_deref().unwrap_or("-"));
            println!("status     {}", r.status.as_deref().unwrap_or("-"));
            if let Some(code) = &r.error_code {
                println!("error code {code}");
            }
            if let Some(e) = &r.error {
                println!("error      {e}");
            }
            if r.escalated {
                println!("escalated  yes");
            }
            if r.conflict {
                println!("conflict   two different final statuses arrived; the first was kept");
            }
            for h in &r.history {
                let at = h["at"]
                    .as_i64()
                    .and_then(chrono::DateTime::from_timestamp_millis)
                    .map(|d| d.to_rfc3339())
                    .unwrap_or_default();
                println!(
                    "  {at}  {:<12} {:<8} {}",
                    h["status"].as_str().unwrap_or(""),
                    h["source"].as_str().unwrap_or(""),
                    h["outcome"].as_str().unwrap_or("")
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ringback: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn twilio_sim(args: SimArgs) -> ExitCode {
    let (config, faults) = match args.to_config() {
        Ok(c) => c,
        Err(e) => return bad_config(e.into()),
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

async fn run_until<P: ringback::Processor>(
    config: WorkerConfig,
    processor: P,
    shutdown: tokio_util::sync::CancellationToken,
    metrics: Option<std::net::SocketAddr>,
    sms: Option<ringback::callbacks::sms::SmsProcessor>,
) -> ExitCode {
    match ringback::edge::run::worker(config, processor, shutdown, metrics, sms).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(ringback::edge::run::RunError::Config(e)) => bad_config(e.into()),
        Err(ringback::edge::run::RunError::Worker(e)) => failed(e),
        Err(e) => {
            eprintln!("ringback: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the drill in the Node harness, which takes this process's place (so a signal to
/// `ringback drill` reaches the drill and its children): its exit code is the drill's (0 passed,
/// 1 failed, 2 unusable).
fn drill(harness: Option<&std::path::Path>, args: ringback::edge::drill::DrillArgs) -> ExitCode {
    use ringback::edge::drill;
    use std::os::unix::process::CommandExt;
    let cmd = drill::current_exe().and_then(|exe| {
        let cwd = std::env::current_dir().map_err(drill::DrillError::NoExe)?;
        let dir = drill::harness_dir(harness, &exe, &cwd)?;
        drill::command(&dir, &exe, &args)
    });
    let err = match cmd {
        Ok(mut cmd) => format!("cannot run node: {}", cmd.exec()),
        Err(e) => e.to_string(),
    };
    eprintln!("ringback: drill: {err}");
    ExitCode::from(2)
}

/// Exit 2, naming every broken setting, one a line.
fn bad_config(errors: ConfigErrors) -> ExitCode {
    eprintln!("ringback: bad configuration:");
    for e in &errors {
        eprintln!("  {e}");
    }
    ExitCode::from(2)
}

/// The SMS and Twilio settings a command that sends needs, with Twilio's queue bounded by the
/// delivery deadline; every broken setting at once.
fn sending_config(
    sms: &SmsArgs,
    twilio: &TwilioArgs,
) -> Result<
    (
        ringback::callbacks::sms::SmsConfig,
        ringback::twilio::TwilioConfig,
    ),
    ConfigErrors,
> {
    let mut errors = ConfigErrors::default();
    let sms_config = errors.take(sms.to_config());
    let twilio_config = errors.take(twilio.to_config());
    let validity = errors.take(ringback::callbacks::sms::validity_period(
        twilio.validity_period_s,
        Duration::from_millis(sms.delivery_deadline_ms),
    ));
    let (sms_config, mut twilio_config) = errors.or(sms_config.zip(twilio_config))?;
    twilio_config.validity_period = validity;
    Ok((sms_config, twilio_config))
}

/// The SMS processor of a command that sends outside a worker (`drain`, `resend`), connected;
/// on failure, the exit code (2 bad configuration, 1 Redis), the reason printed.
async fn sending_processor(
    command: &str,
    queue: &QueueArgs,
    sms: &SmsArgs,
    twilio: &TwilioArgs,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<ringback::callbacks::sms::SmsProcessor, ExitCode> {
    let (sms, twilio) = sending_config(sms, twilio).map_err(bad_config)?;
    ringback::callbacks::service::connect(
        &queue.redis_url,
        &queue.tls(),
        queue.redis_wait(),
        &queue.prefix,
        &queue.queue,
        sms,
        twilio,
        shutdown,
    )
    .await
    .map_err(|e| {
        eprintln!("ringback {command}: {e}");
        ExitCode::FAILURE
    })
}

/// `ringback resend <runId>`: see the command's help for the exit codes.
async fn resend(run_id: &str, queue: QueueArgs, sms: SmsArgs, twilio: TwilioArgs) -> ExitCode {
    let shutdown = shutdown_on_signals();
    let processor = match sending_processor("resend", &queue, &sms, &twilio, &shutdown).await {
        Ok(p) => p,
        Err(code) => return code,
    };
    use ringback::callbacks::resend::{ResendError, Resent};
    let resent = ringback::callbacks::resend::resend_run(run_id);
    match ringback::callbacks::resend::resend(&processor, run_id).await {
        Ok(Resent::Sent { sid }) => {
            println!("resent {run_id} as {resent}: {sid}");
            ExitCode::SUCCESS
        }
        Ok(Resent::AlreadyResent { sid }) => {
            println!(
                "{run_id} was already resent as {resent} ({}); nothing sent now",
                sid.as_deref().unwrap_or("sent")
            );
            ExitCode::SUCCESS
        }
        Ok(Resent::Pending { why }) => {
            eprintln!("ringback resend: {why}; `ringback status {resent}` shows it");
            ExitCode::from(4)
        }
        Ok(Resent::Refused { why }) => {
            eprintln!("ringback resend: Twilio refused the resend: {why}");
            ExitCode::FAILURE
        }
        Err(e @ ResendError::Refused { .. }) => {
            eprintln!("ringback resend: {e}");
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("ringback resend: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `ringback drain`: exit 0 drained, 3 refused (live ringback workers), 4 attempts still open at
/// the deadline, 2 bad configuration, 1 Redis failed.
async fn drain(
    queue: QueueArgs,
    sms: SmsArgs,
    twilio: TwilioArgs,
    timeout: Duration,
    json: bool,
) -> ExitCode {
    let shutdown = shutdown_on_signals();
    let processor = match sending_processor("drain", &queue, &sms, &twilio, &shutdown).await {
        Ok(p) => p,
        Err(code) => return code,
    };
    let report = ringback::callbacks::drain::drain(&processor, timeout, &shutdown, |line| {
        eprintln!("{line}")
    })
    .await;
    match report {
        Err(ringback::callbacks::drain::DrainError::LiveWorkers(w)) => {
            eprintln!(
                "ringback drain: {}",
                ringback::callbacks::drain::DrainError::LiveWorkers(w)
            );
            ExitCode::from(3)
        }
        Err(e) => {
            eprintln!("ringback drain: {e}");
            ExitCode::FAILURE
        }
        Ok(r) => {
            if json {
                println!("{}", serde_json::to_string(&r).unwrap_or_default());
            }
            if r.interrupted {
                eprintln!(
                    "drain: interrupted; {} attempt(s) stay open (run it again)",
                    r.still_open.len()
                );
                ExitCode::from(4)
            } else if r.still_open.is_empty() {
                eprintln!(
                    "drain: done: no open attempt left ({} resolved, {} adopted from the failed set, {} ms)",
                    r.resolved.len(),
                    r.adopted,
                    r.elapsed_ms
                );
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "drain: gave up with {} attempt(s) still open (escalated; they may or may not have been sent): {}",
                    r.still_open.len(),
                    r.still_open.join(", ")
                );
                ExitCode::from(4)
            }
        }
    }
}
