//! The subcommands that run something: the worker, `serve`, `status`, the simulator, a drill,
//! `resend`, `drain`, and what the sending ones share; each answers its exit code.

use super::{Cli, RunArgs, start_traces, validate};
use std::process::ExitCode;
use std::time::Duration;

use crate::edge::cli::{
    OtelArgs, QueueArgs, ServeArgs, SimArgs, SmsArgs, TwilioArgs, shutdown_on_signals,
};
use crate::{ConfigErrors, WorkerConfig};

pub(crate) async fn worker(args: &RunArgs) -> ExitCode {
    let v = match validate(args) {
        Ok(v) => v,
        Err(e) => return bad_config(e),
    };
    for w in &v.warnings {
        tracing::warn!("{w}");
    }
    if let Err(code) = start_traces(v.otel.as_ref()) {
        return code;
    }
    let shutdown = shutdown_on_signals();
    match v.sms {
        None => {
            run_until(
                v.worker,
                crate::queue::scripted::ScriptedProcessor,
                shutdown,
                v.metrics,
                None,
            )
            .await
        }
        Some((sms, twilio)) => {
            let processor = match crate::edge::run::sms::connect(
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

/// What `serve` needs, validated; every broken or missing setting at once.
pub(crate) fn serve_config(
    queue: &QueueArgs,
    sms: &SmsArgs,
    serve: &ServeArgs,
) -> Result<
    (
        crate::callbacks::sms::SmsConfig,
        crate::edge::cli::ServeConfig,
        crate::store::connection::Client,
    ),
    ConfigErrors,
> {
    let mut errors = ConfigErrors::default();
    let sms = errors.take(sms.to_config());
    if let Some(sms) = &sms {
        crate::settings::judge(&sms.record_invariants(), &mut errors);
    }
    let serve = errors.take(serve.to_config());
    let client = errors.take(queue.client());
    let ((sms, serve), client) = errors.or(sms.zip(serve).zip(client))?;
    Ok((sms, serve, client))
}

/// A runtime failure exits 1; records of a layout this build does not read, or a Redis that
/// refuses a command ringback cannot run without, 2 (nothing was read or written); a stop asked for before Redis answered is a clean stop (0).
pub(crate) fn failed(e: crate::Error) -> ExitCode {
    match e {
        e @ (crate::Error::Layout { .. } | crate::Error::Refused { .. }) => {
            eprintln!("ringback: {e}");
            ExitCode::from(2)
        }
        crate::Error::Stopped => {
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
pub(crate) async fn serve_api(
    queue: QueueArgs,
    sms: SmsArgs,
    serve: ServeArgs,
    otel: OtelArgs,
) -> ExitCode {
    let mut errors = ConfigErrors::default();
    let served = errors.take(serve_config(&queue, &sms, &serve));
    let traced = errors.take(otel.to_config());
    let ((sms, serve, client), traced) = match errors.or(served.zip(traced)) {
        Ok(p) => p,
        Err(e) => return bad_config(e),
    };
    if let Err(code) = start_traces(traced.as_ref()) {
        return code;
    }
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
    match crate::edge::run::serve(listener, client, queue, sms, serve, shutdown_on_signals()).await
    {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ (crate::Error::Layout { .. } | crate::Error::Refused { .. })) => failed(e),
        Err(e) => {
            eprintln!("ringback: serve: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) async fn status(run_id: &str, queue: &QueueArgs, claim_prefix: &str) -> ExitCode {
    let client = match queue.client() {
        Ok(client) => client,
        Err(errors) => return bad_config(errors),
    };
    let record = async {
        let conn = crate::store::connection::commands(&client).await?;
        let sms = crate::callbacks::sms::SmsConfig {
            claim_prefix: claim_prefix.to_string(),
            ..Default::default()
        };
        let (receipts, _) = sms.after_send(conn.clone(), &queue.prefix, &queue.queue);
        let replies = sms.replies(conn.clone(), &queue.prefix, &queue.queue);
        let q = crate::queue::calls::Calls::new(
            conn,
            crate::store::keys::QueueKeys::new(&queue.prefix, &queue.queue),
            Default::default(),
        );
        let record = receipts.record(run_id, Some(&q)).await?;
        let question = replies.reads.question_of(run_id).await?;
        let answers = replies.reads.replies_of(run_id).await?;
        let ladder =
            crate::callbacks::ladder::view::LadderView::of(&replies.ladders.read(run_id).await?);
        Ok::<_, crate::Error>((record, question, answers, ladder))
    };
    let when = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .map(|d| d.to_rfc3339())
            .unwrap_or_default()
    };
    match record.await {
        Ok((r, question, answers, ladder))
            if !r.seen && question.is_none() && answers.is_empty() && ladder.is_none() =>
        {
            // not "unknown": that word is a send whose outcome is unknown
            println!("run        {}", r.run_id);
            println!(
                "no record  no job, claim or record of this run on {} (queue {}, claim prefix {claim_prefix:?}); its records expire after RINGBACK_SENT_TTL_MS",
                crate::redact::url(&queue.redis_url),
                queue.queue
            );
            ExitCode::from(3)
        }
        Ok((r, question, answers, ladder)) => {
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
            if let Some(q) = &question {
                let code = if q.shown { "shown" } else { "not shown" };
                match &q.answered_by {
                    Some(sid) => println!("question   code {} ({code}), answered by {sid}", q.code),
                    None => println!(
                        "question   code {} ({code}), open until {}",
                        q.code,
                        when(q.until)
                    ),
                }
            }
            for a in &answers {
                println!(
                    "reply      {}  {}  {:<6} {}  {:?}",
                    when(a.received_at),
                    a.from,
                    a.matched,
                    a.message_sid,
                    a.text
                );
            }
            for line in ladder.iter().flat_map(|l| l.lines(&when)) {
                println!("{line}");
            }
            for h in &r.history {
                let at = h["at"].as_i64().map(when).unwrap_or_default();
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

pub(crate) async fn twilio_sim(args: SimArgs) -> ExitCode {
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
    let sim = crate::twilio_sim::Simulator::new(config, faults);
    // The line tests and drills wait for; it names the address (useful with port 0).
    println!(
        "twilio-sim listening on http://{addr} (account {})",
        sim.config.account_sid
    );
    match crate::twilio_sim::server::serve(listener, sim, shutdown_on_signals()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringback: twilio-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) async fn run_until<P: crate::Processor>(
    config: WorkerConfig,
    processor: P,
    shutdown: tokio_util::sync::CancellationToken,
    metrics: Option<std::net::SocketAddr>,
    sms: Option<crate::callbacks::sms::SmsProcessor>,
) -> ExitCode {
    match crate::edge::run::worker(config, processor, shutdown, metrics, sms).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(crate::edge::run::RunError::Config(e)) => bad_config(e.into()),
        Err(crate::edge::run::RunError::Worker(e)) => failed(e),
    }
}

/// Runs the drill in the Node harness, which takes this process's place (so a signal to
/// `ringback drill` reaches the drill and its children): its exit code is the drill's (0 passed,
/// 1 failed, 2 unusable).
pub(crate) fn drill(
    harness: Option<&std::path::Path>,
    args: crate::edge::drill::DrillArgs,
) -> ExitCode {
    use crate::edge::drill;
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
/// Every problem, each setting named by its variable and its flag.
pub(crate) fn bad_config(errors: ConfigErrors) -> ExitCode {
    bad_config_with(&[], errors)
}

/// Every problem: the values that did not parse (`unparsable`, already named with their
/// flags), then `errors`, each setting named by its variable and its flag; exit 2.
pub(crate) fn bad_config_with(unparsable: &[String], errors: ConfigErrors) -> ExitCode {
    use clap::CommandFactory;
    let root = Cli::command();
    eprintln!("ringback: bad configuration:");
    for u in unparsable {
        eprintln!("  {u}");
    }
    for e in &errors {
        match crate::edge::cli::reference::flag_of(&root, e.setting) {
            Some(flag) => eprintln!("  {} ({flag}): {}", e.setting, e.problem),
            None => eprintln!("  {e}"),
        }
    }
    ExitCode::from(2)
}

/// The SMS and Twilio settings a command that sends needs, with Twilio's queue bounded by the
/// delivery deadline; every broken setting at once.
pub(crate) fn sending_config(
    sms: &SmsArgs,
    twilio: &TwilioArgs,
) -> Result<
    (
        crate::callbacks::sms::SmsConfig,
        crate::twilio::TwilioConfig,
    ),
    ConfigErrors,
> {
    let mut errors = ConfigErrors::default();
    let sms_config = errors.take(sms.to_config());
    let twilio_config = errors.take(twilio.to_config());
    let validity = errors.take(crate::callbacks::sms::validity_period(
        twilio.validity_period_s,
        Duration::from_millis(sms.delivery_deadline_ms),
    ));
    let (sms_config, mut twilio_config) = errors.or(sms_config.zip(twilio_config))?;
    twilio_config.validity_period = validity;
    Ok((sms_config, twilio_config))
}

/// The SMS processor of a command that sends outside a worker (`drain`, `resend`), connected;
/// on failure, the exit code (2 bad configuration, 1 Redis), the reason printed.
pub(crate) async fn sending_processor(
    command: &str,
    queue: &QueueArgs,
    sms: &SmsArgs,
    twilio: &TwilioArgs,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<crate::callbacks::sms::SmsProcessor, ExitCode> {
    let (sms, twilio) = sending_config(sms, twilio).map_err(bad_config)?;
    crate::edge::run::sms::connect(
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
    .map_err(|e| match e {
        e @ (crate::Error::Layout { .. } | crate::Error::Refused { .. }) => failed(e),
        e => {
            eprintln!("ringback {command}: {e}");
            ExitCode::FAILURE
        }
    })
}

/// `ringback resend <runId>`: see the command's help for the exit codes.
pub(crate) async fn resend(
    run_id: &str,
    queue: QueueArgs,
    sms: SmsArgs,
    twilio: TwilioArgs,
) -> ExitCode {
    let shutdown = shutdown_on_signals();
    let processor = match sending_processor("resend", &queue, &sms, &twilio, &shutdown).await {
        Ok(p) => p,
        Err(code) => return code,
    };
    use crate::callbacks::resend::{ResendError, Resent};
    let resent = crate::callbacks::resend::resend_run(run_id);
    match crate::callbacks::resend::resend(&processor, run_id).await {
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

/// `ringback drain`: exit 0 drained, 3 refused (live ringback workers, or escalation ladders
/// still climbing without `--end-ladders`), 4 attempts still open at
/// the deadline, 2 bad configuration, 1 Redis failed.
pub(crate) async fn drain(
    queue: QueueArgs,
    sms: SmsArgs,
    twilio: TwilioArgs,
    timeout: Duration,
    json: bool,
    ladders: crate::callbacks::drain::Ladders,
) -> ExitCode {
    let shutdown = shutdown_on_signals();
    let processor = match sending_processor("drain", &queue, &sms, &twilio, &shutdown).await {
        Ok(p) => p,
        Err(code) => return code,
    };
    let report = crate::callbacks::drain::drain(&processor, timeout, &shutdown, ladders, |line| {
        eprintln!("{line}")
    })
    .await;
    match report {
        Err(
            e @ (crate::callbacks::drain::DrainError::LiveWorkers(_)
            | crate::callbacks::drain::DrainError::LaddersClimbing(_)),
        ) => {
            eprintln!("ringback drain: {e}");
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
                if !r.ladders_ended.is_empty() {
                    eprintln!(
                        "drain: ended {} escalation ladder(s), each escalated (kind rollback): {}",
                        r.ladders_ended.len(),
                        r.ladders_ended.join(", ")
                    );
                }
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
