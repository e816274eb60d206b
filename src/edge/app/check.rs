//! `ringback check-config`: every setting and invariant with its verdict, the Redis and the
//! sentinels asked where they can be, per subcommand (worker, serve, drain).

use std::process::ExitCode;
use std::time::Duration;

use clap::{CommandFactory, Parser};

use super::commands::{bad_config_with, sending_config, serve_config};
use super::{Cli, Command, ProcessorKind, RunArgs, validate};
use crate::edge::cli::{OtelArgs, QueueArgs, ServeArgs, SmsArgs, TwilioArgs, WorkerArgs};
use crate::{ConfigError, ConfigErrors};

/// `check-config [worker|serve|drain] [flags]`: the settings printed whatever their verdict
/// (secrets masked), the test knobs that are set, every invariant with its verdict, then every
/// problem; exit 2 when one is an error.
pub(super) fn check_config(
    reference: bool,
    args: Vec<std::ffi::OsString>,
    unparsable: Vec<String>,
) -> ExitCode {
    let root = Cli::command();
    if reference {
        // the rules, judged on the defaults (`main` cleared the environment)
        let mut rules = vec![];
        if let Ok(Cli {
            command: Command::Worker(args),
            ..
        }) = Cli::try_parse_from(["ringback", "worker"])
        {
            rules.extend(check_worker(&args).1);
        }
        if let Ok(Cli {
            command:
                Command::Serve {
                    queue,
                    sms,
                    serve,
                    otel,
                },
            ..
        }) = Cli::try_parse_from(["ringback", "serve"])
        {
            rules.extend(check_serve(&queue, &sms, &serve, &otel).1);
        }
        print!("{}", crate::edge::cli::reference::markdown(&root, &rules));
        return ExitCode::SUCCESS;
    }
    let (target, rest) = match args.first().and_then(|a| a.to_str()) {
        Some(t @ ("worker" | "serve" | "drain" | "resend")) => (t.to_string(), &args[1..]),
        Some(other) if !other.starts_with('-') => {
            eprintln!(
                "ringback check-config: checks worker, serve, drain or resend (which reads drain's settings), not {other:?}"
            );
            return ExitCode::from(2);
        }
        _ => ("worker".to_string(), &args[..]),
    };
    // resend reads exactly drain's settings: they are checked as drain's
    let parsed_as = if target == "resend" {
        "drain"
    } else {
        target.as_str()
    };
    let argv = ["ringback".into(), parsed_as.into()]
        .into_iter()
        .chain(rest.iter().cloned());
    let cli = match Cli::try_parse_from(argv) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(2);
        }
    };
    let (settings, invariants, mut checked) = match &cli.command {
        Command::Worker(args) => check_worker(args),
        Command::Serve {
            queue,
            sms,
            serve,
            otel,
        } => check_serve(queue, sms, serve, otel),
        Command::Drain {
            queue, sms, twilio, ..
        } => check_drain(queue, sms, twilio),
        _ => return ExitCode::from(2),
    };
    let queue = match &cli.command {
        Command::Worker(args) => Some(&args.worker.queue),
        Command::Serve { queue, .. } | Command::Drain { queue, .. } => Some(queue),
        _ => None,
    };
    match queue.and_then(sentinels_answer) {
        Some(Err(e)) => match &mut checked {
            Err(errors) => errors.push(e),
            Ok(_) => {
                let mut errors = ConfigErrors::default();
                errors.push(e);
                checked = Err(errors);
            }
        },
        Some(Ok(Some(warning))) => {
            if let Ok(warnings) = &mut checked {
                warnings.push(warning);
            }
        }
        _ => {}
    }
    if target == "resend" {
        println!("# ringback resend reads the settings drain reads");
    }
    println!("# ringback {target}: effective settings");
    for (name, value) in settings {
        println!("{name}={value}");
    }
    for knob in crate::edge::cli::reference::test_knobs_set(&root) {
        println!("warning: test and drill knob set: {knob} (never in production)");
    }
    println!("# invariants");
    for i in &invariants {
        if i.holds {
            println!("{:<8} {}", i.verdict(), i.rule);
        } else {
            // the verdict, the rule it judges, and why it matters, side by side
            println!("{:<8} does not hold: {}", i.verdict(), i.rule);
            println!("{:<8} {}", "", i.problem);
        }
    }
    let unknown = crate::edge::cli::reference::unknown_env(&root, std::env::vars_os());
    for u in &unknown {
        println!("warning: {u}");
    }
    match checked {
        Ok(warnings) if unparsable.is_empty() => {
            let shown: Vec<&String> = warnings
                .iter()
                .filter(|w| !invariants.iter().any(|i| !i.holds && &i.problem == *w))
                .collect();
            for w in &shown {
                println!("warning: {w}");
            }
            let warned =
                shown.len() + unknown.len() + invariants.iter().filter(|i| !i.holds).count();
            if warned == 0 {
                println!("all invariants hold");
            } else {
                println!("no broken setting; {warned} warning(s) above");
            }
            ExitCode::SUCCESS
        }
        Ok(_) => bad_config_with(&unparsable, ConfigErrors::default()),
        Err(errors) => bad_config_with(&unparsable, errors),
    }
}

/// Under Redis Sentinel, whether the sentinels answer for the URL's master name: a name none of
/// them knows is an error (a typo there is otherwise a worker retrying for ever); sentinels that
/// cannot be reached from here are a warning (check-config may run where Redis is not
/// reachable). `None` for any other Redis, or a URL already refused.
fn sentinels_answer(queue: &QueueArgs) -> Option<Result<Option<String>, ConfigError>> {
    let url = crate::store::sentinel::parse(&queue.redis_url)
        .ok()
        .flatten()?;
    let client = queue.client().ok()?;
    let asked = tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(tokio::time::timeout(
            Duration::from_secs(10),
            client.sentinel_master(),
        ))
    });
    let sentinels = url.describe();
    Some(match asked {
        Ok(Some(Ok(_master))) => Ok(None),
        Ok(Some(Err(e))) if e.kind() == redis::ErrorKind::MasterNameNotFoundBySentinel => {
            Err(ConfigError::new(
                "REDIS_URL",
                format!(
                    "no sentinel of {sentinels} names a master `{}` (or each flags it down): the name after the hosts must be the one in sentinel.conf's `sentinel monitor <name> …`",
                    url.master
                ),
            ))
        }
        Ok(Some(Err(e))) => Ok(Some(format!(
            "could not ask the sentinels of {sentinels} for master `{}` ({e}): its name is not confirmed",
            url.master
        ))),
        Ok(None) => Ok(None),
        Err(_) => Ok(Some(format!(
            "the sentinels of {sentinels} did not answer within 10 s: master `{}` is not confirmed",
            url.master
        ))),
    })
}

pub(super) type Checked = (
    Vec<(&'static str, String)>,
    Vec<crate::settings::Invariant>,
    Result<Vec<String>, ConfigErrors>,
);

pub(super) fn check_worker(args: &RunArgs) -> Checked {
    let mut settings = args.worker.effective();
    settings.push(("RINGBACK_METRICS_LISTEN", args.metrics_listen.clone()));
    let mut invariants = args.worker.invariants();
    if args.processor == ProcessorKind::Sms {
        settings.extend(args.sms.effective());
        settings.extend(args.twilio.effective());
        settings.extend(args.otel.effective());
        invariants.extend(args.sms.window().invariants(
            Duration::from_millis(args.twilio.timeout_ms),
            Duration::from_millis(args.worker.lock_duration_ms),
            Duration::from_millis(args.worker.stalled_interval_ms),
        ));
        invariants.push(args.sms.validity_invariant(&args.twilio));
    } else {
        settings.push(("RINGBACK_PROCESSOR", "scripted".into()));
    }
    let checked = validate(args).map(|v| v.warnings);
    (settings, invariants, checked)
}

pub(super) fn check_serve(
    queue: &QueueArgs,
    sms: &SmsArgs,
    serve: &ServeArgs,
    otel: &OtelArgs,
) -> Checked {
    let mut settings = WorkerArgs::effective_queue(queue);
    settings.extend(sms.effective());
    settings.extend(serve.effective());
    settings.extend(otel.effective());
    let mut invariants = serve.invariants();
    invariants.extend(sms.window().record_invariants());
    let mut errors = ConfigErrors::default();
    let served = errors.take(serve_config(queue, sms, serve));
    let traced = errors.take(otel.to_config());
    let checked = errors.or(served.zip(traced)).map(|_| vec![]);
    (settings, invariants, checked)
}

pub(super) fn check_drain(queue: &QueueArgs, sms: &SmsArgs, twilio: &TwilioArgs) -> Checked {
    let mut settings = WorkerArgs::effective_queue(queue);
    settings.extend(sms.effective());
    settings.extend(twilio.effective());
    let mut invariants = sms.window().record_invariants();
    invariants.push(sms.validity_invariant(twilio));
    let mut errors = ConfigErrors::default();
    crate::settings::judge(&sms.window().record_invariants(), &mut errors);
    let sending = errors.take(sending_config(sms, twilio));
    let client = errors.take(queue.client());
    let checked = errors.or(sending.zip(client)).map(|_| vec![]);
    (settings, invariants, checked)
}
