//! The configuration as an operator meets it: `check-config [worker|serve|drain]` names every
//! unparsable, missing or contradictory setting of one run by variable and flag, with each
//! invariant's verdict; the reference in `docs/configuration.md` is the binary's own; every flag
//! has help, one flag name per variable; test knobs are hidden and reported; and records of
//! another on-Redis layout are refused at start, naming the key and the layout.

use crate::common;

use std::process::{Command, Output};

use common::RedisServer;

const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
/// An auth token of Twilio's shape (32 hex digits): check-config checks the shape against
/// Twilio's own API, the default `TWILIO_API_BASE`.
const TOKEN: &str = "fedcba9876543210fedcba9876543210";

/// The binary with an empty environment: only what a test sets is seen.
fn ringback(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringback"));
    cmd.args(args).env_clear().env("NO_COLOR", "1");
    cmd
}

fn run(cmd: &mut Command) -> (Option<i32>, String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("the binary runs");
    (
        status.code(),
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    )
}

/// The stderr line naming `name`, if any (`  NAME (--flag): problem`).
fn named<'a>(stderr: &'a str, name: &str, flag: &str) -> Option<&'a str> {
    let start = format!("  {name} ({flag}): ");
    stderr.lines().find(|l| l.starts_with(&start))
}

/// The settings a worker cannot do without, valid (Redis on a closed port: check-config does
/// not connect).
fn worker_env(cmd: &mut Command) {
    cmd.env("REDIS_URL", "redis://127.0.0.1:1")
        .env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("TWILIO_FROM", "+15005550006");
}

#[test]
fn quiet_hours_and_the_inbound_settings_are_checked_together() {
    let mut cmd = ringback(&["check-config"]);
    worker_env(&mut cmd);
    cmd.env("RINGBACK_QUIET_HOURS", "22-08")
        .env("RINGBACK_INBOUND_RETENTION_MS", "1000");
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    for (name, flag, says) in [
        (
            "RINGBACK_QUIET_HOURS",
            "--quiet-hours",
            "not a window such as 22:00-08:00",
        ),
        (
            "RINGBACK_QUIET_HOURS_TZ",
            "--quiet-hours-tz",
            "is required with RINGBACK_QUIET_HOURS",
        ),
        (
            "RINGBACK_INBOUND_RETENTION_MS",
            "--inbound-retention-ms",
            "at least a day",
        ),
    ] {
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}: {stderr}"));
        assert!(line.contains(says), "{name} says {says:?}: {line}");
    }
    let mut cmd = ringback(&["check-config"]);
    worker_env(&mut cmd);
    cmd.env("RINGBACK_QUIET_HOURS", "22:00-08:00")
        .env("RINGBACK_QUIET_HOURS_TZ", "Mars/Olympus");
    let (code, _, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2));
    assert!(
        named(&stderr, "RINGBACK_QUIET_HOURS_TZ", "--quiet-hours-tz")
            .is_some_and(|l| l.contains("not a time zone of the IANA database")),
        "{stderr}"
    );
    let mut cmd = ringback(&["check-config"]);
    worker_env(&mut cmd);
    cmd.env("RINGBACK_QUIET_HOURS", "22:00-08:00")
        .env("RINGBACK_QUIET_HOURS_TZ", "Europe/Paris");
    let (_, stdout, stderr) = run(&mut cmd);
    assert!(
        stdout.contains("RINGBACK_QUIET_HOURS=22:00-08:00")
            && stdout.contains("RINGBACK_QUIET_HOURS_TZ=Europe/Paris"),
        "{stdout}{stderr}"
    );
    assert!(!stderr.contains("RINGBACK_QUIET"), "{stderr}");
    let mut cmd = ringback(&["check-config", "serve"]);
    cmd.env("RINGBACK_PUBLIC_URL", "https://ringback.your-company.net")
        .env("RINGBACK_API_TOKEN", "api-token-0123456789")
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env(
            "RINGBACK_INBOUND_FORWARD_URL",
            "ftp://app.your-company.net/sms",
        );
    let (code, _, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2));
    assert!(
        named(
            &stderr,
            "RINGBACK_INBOUND_FORWARD_URL",
            "--inbound-forward-url"
        )
        .is_some_and(|l| l.contains("not an http(s) URL")),
        "{stderr}"
    );
}

#[test]
fn the_ladders_settings_are_named_all_at_once_and_a_good_set_passes() {
    let mut cmd = ringback(&["check-config"]);
    worker_env(&mut cmd);
    cmd.env("RINGBACK_CALL_AFTER", "soon")
        .env("RINGBACK_LADDER_STEP_MS", "10")
        .env("RINGBACK_ONCALL", "+15550000001, 555-0100")
        .env("RINGBACK_VOICE_FROM", "ringback")
        .env("RINGBACK_MACHINE_DETECTION", "maybe")
        .env("RINGBACK_CALLS_PER_HOUR", "0");
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    for (name, flag, says) in [
        ("RINGBACK_CALL_AFTER", "--call-after", "not a duration"),
        (
            "RINGBACK_LADDER_STEP_MS",
            "--ladder-step-ms",
            "under a second",
        ),
        (
            "RINGBACK_ONCALL",
            "--oncall",
            "\"555-0100\" is not an E.164 number",
        ),
        ("RINGBACK_VOICE_FROM", "--voice-from", "E.164"),
        (
            "RINGBACK_MACHINE_DETECTION",
            "--machine-detection",
            "neither `on` nor `off`",
        ),
        (
            "RINGBACK_CALLS_PER_HOUR",
            "--calls-per-hour",
            "every ladder call would be skipped",
        ),
    ] {
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}: {stderr}"));
        assert!(line.contains(says), "{name} says {says:?}: {line}");
    }
    // a default ladder needs serve's webhooks for its calls' answers
    let mut cmd = ringback(&["check-config"]);
    worker_env(&mut cmd);
    cmd.env("RINGBACK_CALL_AFTER", "10m");
    let (code, _, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2));
    assert!(
        named(&stderr, "RINGBACK_CALL_AFTER", "--call-after")
            .is_some_and(|l| l.contains("needs RINGBACK_STATUS_CALLBACK_URL")),
        "{stderr}"
    );
    let mut cmd = ringback(&["check-config"]);
    worker_env(&mut cmd);
    cmd.env("RINGBACK_CALL_AFTER", "10m")
        .env(
            "RINGBACK_STATUS_CALLBACK_URL",
            "https://ringback.acme-corp.net/api/notify/webhook/status",
        )
        .env("RINGBACK_ONCALL", "+15550000001,+15550000002")
        .env("RINGBACK_VOICE", "Polly.Joanna");
    let (_, stdout, stderr) = run(&mut cmd);
    assert!(!stderr.contains("RINGBACK_CALL_AFTER"), "{stderr}");
    assert!(!stderr.contains("RINGBACK_ONCALL"), "{stderr}");
    assert!(
        stdout.contains("RINGBACK_CALL_AFTER=10m")
            && stdout.contains("RINGBACK_VOICE=Polly.Joanna"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("+15550000002"),
        "numbers are masked: {stdout}"
    );
}

#[test]
fn check_config_names_every_unparsable_missing_and_broken_setting_in_one_run() {
    let (code, stdout, stderr) = run(ringback(&["check-config"])
        .env("RINGBACK_CONCURRENCY", "x")
        .env("RINGBACK_LOCK_DURATION_MS", "30s")
        .env("RINGBACK_LOG_FORMAT", "jsn")
        .env("REDIS_URL", "http://127.0.0.1:6379")
        .env("RINGBACK_CLAIM_LEASE_MS", "1000")
        .env("RINGBACK_SENT_TTL_MS", "500"));
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    for (name, flag, says) in [
        ("RINGBACK_CONCURRENCY", "--concurrency", "invalid value 'x'"),
        ("RINGBACK_LOCK_DURATION_MS", "--lock-duration-ms", "'30s'"),
        (
            "RINGBACK_LOG_FORMAT",
            "--log-format",
            "possible values: text, json",
        ),
        ("REDIS_URL", "--redis-url", "must start with"),
        ("TWILIO_ACCOUNT_SID", "--account-sid", "required"),
        ("TWILIO_AUTH_TOKEN", "--auth-token", "required"),
        ("TWILIO_FROM", "--twilio-from", "required"),
        ("RINGBACK_CLAIM_LEASE_MS", "--claim-lease-ms", "105000 ms"),
        (
            "RINGBACK_SENT_TTL_MS",
            "--sent-ttl-ms",
            "RINGBACK_PENDING_TTL_MS",
        ),
    ] {
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}: {stderr}"));
        assert!(line.contains(says), "{name} says {says:?}: {line}");
    }
    // every invariant with its verdict, judged on the defaults where a value did not parse
    for verdict in [
        "ok       0 < RINGBACK_LOCK_RENEW_TIME_MS (15000) < RINGBACK_LOCK_DURATION_MS (30000)",
        "broken   does not hold: RINGBACK_SENT_TTL_MS (500) > RINGBACK_PENDING_TTL_MS (15000)",
        "broken   does not hold: RINGBACK_CLAIM_LEASE_MS (1000) > lock duration",
        "ok       RINGBACK_PENDING_TTL_MS (15000) > TWILIO_TIMEOUT_MS + 2000 ms (10000)",
        "warning  does not hold: receipts on: RINGBACK_STATUS_CALLBACK_URL is set",
    ] {
        assert!(
            stdout.lines().any(|l| l.starts_with(verdict)),
            "{verdict}: {stdout}"
        );
    }
}

#[test]
fn check_config_checks_what_serve_and_drain_need() {
    let (code, stdout, stderr) = run(&mut ringback(&["check-config", "serve"]));
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    for (name, flag) in [
        ("RINGBACK_PUBLIC_URL", "--public-url"),
        ("RINGBACK_API_TOKEN", "--api-token"),
        ("TWILIO_AUTH_TOKEN", "--auth-token"),
    ] {
        assert!(named(&stderr, name, flag).is_some(), "{name}: {stderr}");
    }
    // the worker's Twilio sender is not serve's business
    assert!(!stderr.contains("TWILIO_FROM"), "{stderr}");
    let serve = |cmd: &mut Command| {
        cmd.env("RINGBACK_PUBLIC_URL", "https://ringback.acme.test")
            .env("RINGBACK_API_TOKEN", "api-token-0123456789")
            .env("TWILIO_AUTH_TOKEN", TOKEN)
            .env("RINGBACK_LISTEN", "127.0.0.1:3001");
    };
    let mut cmd = ringback(&["check-config", "serve"]);
    serve(&mut cmd);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("RINGBACK_LISTEN=127.0.0.1:3001"),
        "{stdout}"
    );
    assert!(stdout.contains("RINGBACK_API_TOKEN=*** (set)"), "{stdout}");
    assert!(!stdout.contains("api-token-0123456789"), "{stdout}");
    assert!(
        stdout.contains("ok       RINGBACK_LISTEN (127.0.0.1:3001) is loopback"),
        "{stdout}"
    );
    // flags after the subcommand are read as serve reads them
    let mut cmd = ringback(&["check-config", "serve", "--listen", "0.0.0.0:3001"]);
    serve(&mut cmd);
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        stdout.contains("broken   does not hold: RINGBACK_LISTEN (0.0.0.0:3001)"),
        "{stdout}"
    );
    assert!(
        named(&stderr, "RINGBACK_LISTEN", "--listen").is_some(),
        "{stderr}"
    );

    let (code, _, stderr) = run(ringback(&["check-config", "drain"])
        .env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("TWILIO_VALIDITY_PERIOD_S", "3600"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        named(&stderr, "TWILIO_FROM", "--twilio-from").is_some(),
        "{stderr}"
    );
    assert!(
        named(&stderr, "TWILIO_VALIDITY_PERIOD_S", "--validity-period-s").is_some(),
        "{stderr}"
    );
    let (code, _, stderr) = run(&mut ringback(&["check-config", "status"]));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("worker, serve, drain or resend"),
        "{stderr}"
    );
}

#[test]
fn test_knobs_are_hidden_from_help_and_reported_when_set() {
    let (code, help, _) = run(&mut ringback(&["worker", "--help"]));
    assert_eq!(code, Some(0));
    for knob in ["--crash-at", "--drill", "--processor"] {
        assert!(!help.contains(knob), "{knob} in --help: {help}");
    }
    let (code, stdout, stderr) = run(ringback(&["check-config"])
        .env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("TWILIO_FROM", "+14155550123")
        .env("RINGBACK_CLOCK_SKEW_MS", "5000")
        .env("RINGBACK_PROCESSOR", "sms"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for knob in ["RINGBACK_CLOCK_SKEW_MS=5000", "RINGBACK_PROCESSOR=sms"] {
        assert!(
            stdout.contains(&format!("warning: test and drill knob set: {knob}")),
            "{knob}: {stdout}"
        );
    }
}

/// The committed reference is what the binary prints: regenerate it with
/// `cargo run --bin ringback -- check-config --reference > docs/configuration.md`.
#[test]
fn the_configuration_reference_is_the_binarys_own() {
    let (code, printed, stderr) = run(&mut ringback(&["check-config", "--reference"]));
    assert_eq!(code, Some(0), "{stderr}");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/configuration.md");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        printed == committed,
        "docs/configuration.md differs from `ringback check-config --reference`; regenerate it: \
         cargo run --bin ringback -- check-config --reference > docs/configuration.md"
    );
    // one flag per variable, and every setting says what it is
    for row in printed.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split(" | ").collect();
        if cells.len() < 5 {
            continue; // the variables read from the environment only: no flag
        }
        assert!(!cells[1].contains(','), "two flags for one variable: {row}");
        let meaning = cells.last().unwrap_or(&"").trim_end_matches(" |").trim();
        assert!(!meaning.is_empty(), "no help: {row}");
    }
    // every variable the env example sets or shows is in the reference
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/ringback.env.example"
    ))
    .expect("the env example");
    for line in example.lines() {
        let line = line.trim_start_matches("# ");
        if let Some((name, _)) = line.split_once('=')
            && !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c == '_' || c.is_ascii_digit())
        {
            assert!(
                printed.contains(&format!("`{name}`")),
                "{name} not in the reference"
            );
        }
    }
}

/// Every flag of every subcommand has help text: clap's long help prints a flag's description
/// on the lines under it, before its `[env: …]` and `[default: …]` notes.
#[test]
fn every_flag_has_help() {
    for sub in [
        "worker",
        "serve",
        "status",
        "drain",
        "resend",
        "twilio-sim",
        "drill",
        "check-config",
    ] {
        let (code, help, stderr) = run(&mut ringback(&[sub, "--help"]));
        assert_eq!(code, Some(0), "{sub}: {stderr}");
        for block in help.split("\n\n") {
            let mut lines = block.lines().map(str::trim);
            let Some(first) = lines.next() else { continue };
            if !(first.starts_with("--") || first.starts_with("-h,") || first.starts_with("-V,")) {
                continue;
            }
            let described = lines.any(|l| !l.is_empty() && !l.starts_with('['));
            assert!(described, "`ringback {sub}`: {first} has no help");
        }
    }
}

/// `--version` says the release and the record layout it writes.
#[test]
fn the_version_names_the_record_layout() {
    let (code, stdout, _) = run(&mut ringback(&["--version"]));
    assert_eq!(code, Some(0));
    assert_eq!(
        stdout.trim(),
        format!(
            "ringback {} (record layout {})",
            env!("CARGO_PKG_VERSION"),
            ringback::callbacks::layout::RECORD_LAYOUT
        )
    );
}

/// A Redis whose records say another layout is refused before anything is read or written
/// (worker, drain, resend at start; serve when Redis first answers, before its API opens):
/// exit 2 naming the key and the layout. A fresh Redis gets this build's layout written.
#[test]
fn records_of_another_layout_are_refused_at_start() {
    let redis = RedisServer::start();
    let mut conn = redis::Client::open(redis.url())
        .and_then(|c| c.get_connection())
        .expect("redis");
    let sending = |args: &[&str]| {
        let mut cmd = ringback(args);
        cmd.env("REDIS_URL", redis.url())
            .env("TWILIO_ACCOUNT_SID", ACCOUNT)
            .env("TWILIO_AUTH_TOKEN", TOKEN)
            .env("TWILIO_FROM", "+14155550123")
            .env("TWILIO_API_BASE", "http://127.0.0.1:9")
            .env("RINGBACK_METRICS_LISTEN", "off");
        cmd
    };
    let key = "ringback:layout:agent-callback:";
    let (code, _, stderr) = run(&mut sending(&["drain", "--timeout-ms", "5000"]));
    assert_eq!(code, Some(0), "{stderr}");
    let written: Option<String> = redis::cmd("GET").arg(key).query(&mut conn).unwrap();
    assert_eq!(
        written.as_deref(),
        Some(
            ringback::callbacks::layout::RECORD_LAYOUT
                .to_string()
                .as_str()
        )
    );
    for (found, args) in [
        ("0", &["drain"][..]),
        ("2", &["worker"][..]),
        ("0", &["serve"][..]),
    ] {
        let () = redis::cmd("SET")
            .arg(key)
            .arg(found)
            .query(&mut conn)
            .unwrap();
        let mut cmd = sending(args);
        // serve listens at once and stops when Redis first answers with another layout
        cmd.env("RINGBACK_PUBLIC_URL", "https://ringback.acme.test")
            .env("RINGBACK_API_TOKEN", "api-token-0123456789")
            .env("RINGBACK_LISTEN", "127.0.0.1:0");
        let (code, _, stderr) = run(&mut cmd);
        assert_eq!(code, Some(2), "{args:?} with layout {found}: {stderr}");
        assert!(
            stderr.contains(&format!("{key} says record layout \"{found}\"")),
            "{stderr}"
        );
    }
}

/// OpenTelemetry's standard variables: a protocol, exporter or sampler ringback does not build
/// is refused by name with the reason; the headers (a vendor's key) are masked.
#[test]
fn check_config_refuses_otel_settings_it_cannot_honour() {
    let twilio = |cmd: &mut Command| {
        cmd.env("TWILIO_ACCOUNT_SID", ACCOUNT)
            .env("TWILIO_AUTH_TOKEN", TOKEN)
            .env("TWILIO_FROM", "+14155550123");
    };
    let mut cmd = ringback(&["check-config"]);
    twilio(&mut cmd);
    cmd.env(
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "http://collector.acme.test:4317",
    )
    .env("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    .env("OTEL_TRACES_SAMPLER", "probabilistic")
    .env("OTEL_TRACES_EXPORTER", "zipkin");
    let (code, _, stderr) = run(&mut cmd);
    assert_eq!(code, Some(2), "{stderr}");
    for (name, flag, says) in [
        (
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "--otel-protocol",
            "OTLP over HTTP with protobuf",
        ),
        (
            "OTEL_TRACES_SAMPLER",
            "--otel-traces-sampler",
            "parentbased_always_on",
        ),
        (
            "OTEL_TRACES_EXPORTER",
            "--otel-traces-exporter",
            "otlp or none",
        ),
    ] {
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}: {stderr}"));
        assert!(line.contains(says), "{line}");
    }
    let mut cmd = ringback(&["check-config", "serve"]);
    cmd.env("RINGBACK_PUBLIC_URL", "https://ringback.acme.test")
        .env("RINGBACK_API_TOKEN", "api-token-0123456789")
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env(
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "http://collector.acme.test:4318",
        )
        .env("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=s3cret")
        .env("OTEL_SERVICE_NAME", "ringback-serve");
    let (code, stdout, stderr) = run(&mut cmd);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.contains("OTEL_SERVICE_NAME=ringback-serve"),
        "{stdout}"
    );
    assert!(
        stdout.contains("OTEL_EXPORTER_OTLP_HEADERS=*** (set)"),
        "{stdout}"
    );
    assert!(!stdout.contains("s3cret"), "{stdout}");
}

/// The `NAME=value` lines of the README's minimal configuration, as a reader pastes them.
fn readme_block() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let start = readme
        .find("# ringback.env: the worker")
        .expect("the README's minimal configuration");
    let block = &readme[start
        ..readme[start..]
            .find("```")
            .map_or(readme.len(), |e| start + e)];
    let pairs: Vec<(String, String)> = block
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    assert!(pairs.len() >= 6, "the block's settings: {pairs:?}");
    pairs
}

#[test]
fn the_readmes_minimal_configuration_pasted_literally_is_refused() {
    let with_block = |args: &[&str]| {
        let mut cmd = ringback(args);
        for (k, v) in readme_block() {
            cmd.env(k, v);
        }
        run(&mut cmd)
    };
    // every placeholder named at once, each by variable and flag
    let (code, stdout, stderr) = with_block(&["check-config"]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    for (name, flag) in [
        ("REDIS_URL", "--redis-url"),
        ("TWILIO_ACCOUNT_SID", "--account-sid"),
        ("TWILIO_AUTH_TOKEN", "--auth-token"),
        ("TWILIO_FROM", "--twilio-from"),
        ("RINGBACK_STATUS_CALLBACK_URL", "--status-callback-url"),
    ] {
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}: {stderr}"));
        assert!(
            line.contains("placeholder") || line.contains("fictional"),
            "{line}"
        );
    }
    assert!(!stdout.contains("all invariants hold"), "{stdout}");
    // the auth token's value is never printed, even refused
    let token = readme_block()
        .into_iter()
        .find(|(k, _)| k == "TWILIO_AUTH_TOKEN")
        .map(|(_, v)| v)
        .expect("the block sets the auth token");
    assert!(
        !stderr.contains(&token) && !stdout.contains(&token),
        "{stderr}"
    );

    let (code, stdout, stderr) = with_block(&["check-config", "serve"]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    for (name, flag) in [
        ("REDIS_URL", "--redis-url"),
        ("RINGBACK_PUBLIC_URL", "--public-url"),
        ("RINGBACK_API_TOKEN", "--api-token"),
        ("TWILIO_AUTH_TOKEN", "--auth-token"),
    ] {
        assert!(named(&stderr, name, flag).is_some(), "{name}: {stderr}");
    }
    let (code, stdout, stderr) = with_block(&["check-config", "drain"]);
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        named(&stderr, "TWILIO_ACCOUNT_SID", "--account-sid").is_some(),
        "{stderr}"
    );
}

/// The worker's settings with Twilio's own API, valid but for what a test sets after.
fn live_twilio(cmd: &mut Command) -> &mut Command {
    cmd.env("REDIS_URL", "redis://127.0.0.1:1")
        .env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("TWILIO_FROM", "+14155550123")
        .env(
            "RINGBACK_STATUS_CALLBACK_URL",
            "https://ringback.acme.test/api/notify/webhook/status",
        )
}

#[test]
fn shapes_twilio_refuses_are_refused_against_twilio_and_a_simulator_keeps_its_own() {
    let (code, stdout, stderr) = run(live_twilio(&mut ringback(&["check-config"])));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("all invariants hold"), "{stdout}");

    for (name, flag, value, says) in [
        (
            "TWILIO_ACCOUNT_SID",
            "--account-sid",
            "ACzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
            "malformed",
        ),
        ("TWILIO_ACCOUNT_SID", "--account-sid", "AC123", "malformed"),
        (
            "TWILIO_AUTH_TOKEN",
            "--auth-token",
            "sim-token",
            "malformed",
        ),
        ("TWILIO_FROM", "--twilio-from", "+15558675310", "fictional"),
    ] {
        let (code, stdout, stderr) =
            run(live_twilio(&mut ringback(&["check-config"])).env(name, value));
        assert_eq!(code, Some(2), "{name}={value}: {stdout}{stderr}");
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}={value}: {stderr}"));
        assert!(line.contains(says), "{name}={value}: {line}");
    }
    // a Messaging Service SID is checked as one, in place of the sender
    for value in ["+14155550123", "MG123"] {
        let (code, _, stderr) = run(live_twilio(&mut ringback(&["check-config"]))
            .env_remove("TWILIO_FROM")
            .env("TWILIO_MESSAGING_SERVICE_SID", value));
        assert_eq!(code, Some(2), "{value}: {stderr}");
        assert!(
            named(
                &stderr,
                "TWILIO_MESSAGING_SERVICE_SID",
                "--messaging-service-sid"
            )
            .is_some_and(|l| l.contains("MG followed by 32 hex digits")),
            "{value}: {stderr}"
        );
    }
    // an API key and its secret, by Twilio's shapes
    let (code, _, stderr) = run(live_twilio(&mut ringback(&["check-config"]))
        .env_remove("TWILIO_AUTH_TOKEN")
        .env("TWILIO_API_KEY", "SK123")
        .env("TWILIO_API_SECRET", "short"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        named(&stderr, "TWILIO_API_KEY", "--api-key").is_some(),
        "{stderr}"
    );
    assert!(
        named(&stderr, "TWILIO_API_SECRET", "--api-secret").is_some(),
        "{stderr}"
    );
    // a simulator keeps its own credentials: the shape is Twilio's rule, the placeholder is not
    let (code, stdout, stderr) = run(live_twilio(&mut ringback(&["check-config"]))
        .env("TWILIO_API_BASE", "http://127.0.0.1:1")
        .env("TWILIO_ACCOUNT_SID", "ACzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz")
        .env("TWILIO_AUTH_TOKEN", "sim-token")
        .env("TWILIO_FROM", "+14155550123"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let (code, _, stderr) = run(live_twilio(&mut ringback(&["check-config"]))
        .env("TWILIO_API_BASE", "http://127.0.0.1:1")
        .env("TWILIO_ACCOUNT_SID", "ACxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"));
    assert_eq!(code, Some(2), "{stderr}");
    let (code, _, stderr) =
        run(live_twilio(&mut ringback(&["check-config"])).env("TWILIO_API_BASE", "https://"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        named(&stderr, "TWILIO_API_BASE", "--api-base").is_some_and(|l| l.contains("host")),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_a_public_url_without_a_host_and_placeholder_tokens() {
    let serve = |cmd: &mut Command| {
        cmd.env("RINGBACK_PUBLIC_URL", "https://ringback.acme.test")
            .env("RINGBACK_API_TOKEN", "api-token-0123456789")
            .env("TWILIO_AUTH_TOKEN", TOKEN);
    };
    for (name, flag, value, says) in [
        ("RINGBACK_PUBLIC_URL", "--public-url", "https://", "no host"),
        (
            "RINGBACK_PUBLIC_URL",
            "--public-url",
            "ringback.acme.test",
            "malformed",
        ),
        (
            "RINGBACK_API_TOKEN",
            "--api-token",
            "replace-with-openssl-rand-hex-32",
            "placeholder",
        ),
        ("RINGBACK_API_TOKEN", "--api-token", "short", "malformed"),
        (
            "TWILIO_AUTH_TOKEN",
            "--auth-token",
            "your-twilio-auth-token",
            "placeholder",
        ),
    ] {
        let mut cmd = ringback(&["check-config", "serve"]);
        serve(&mut cmd);
        let (code, stdout, stderr) = run(cmd.env(name, value));
        assert_eq!(code, Some(2), "{name}={value}: {stdout}{stderr}");
        let line = named(&stderr, name, flag).unwrap_or_else(|| panic!("{name}={value}: {stderr}"));
        assert!(line.contains(says), "{name}={value}: {line}");
        // a set but malformed value is not called missing
        assert!(!line.contains("required"), "{line}");
    }
}

#[test]
fn a_cluster_queue_without_a_hash_tag_is_refused_on_every_subcommand() {
    for args in [
        &["check-config"][..],
        &["check-config", "serve"],
        &["check-config", "drain"],
    ] {
        let mut cmd = ringback(args);
        live_twilio(&mut cmd).env("REDIS_URL", "redis+cluster://127.0.0.1:7000,127.0.0.1:7001");
        let (code, _, stderr) = run(&mut cmd);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            named(&stderr, "RINGBACK_PREFIX", "--prefix").is_some_and(|l| l.contains("hash tag")),
            "{args:?}: {stderr}"
        );
    }
    // a tag in the prefix or in the queue's name keeps a queue in one slot
    for (prefix, queue) in [("{bull}", "notify"), ("bull", "{notify}")] {
        let mut cmd = ringback(&["check-config"]);
        live_twilio(&mut cmd)
            .env("REDIS_URL", "redis+cluster://127.0.0.1:7000")
            .env("RINGBACK_PREFIX", prefix)
            .env("RINGBACK_QUEUE", queue);
        let (code, stdout, stderr) = run(&mut cmd);
        assert_eq!(code, Some(0), "{prefix} {queue}: {stdout}{stderr}");
    }
}

#[test]
fn the_scripted_processor_is_refused_outside_drill_mode() {
    let (code, _, stderr) = run(ringback(&["check-config", "--processor", "scripted"])
        .env("REDIS_URL", "redis://127.0.0.1:1"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("RINGBACK_PROCESSOR") && stderr.contains("RINGBACK_DRILL=1"),
        "{stderr}"
    );
    let (code, stdout, stderr) = run(ringback(&["check-config", "--processor", "scripted"])
        .env("REDIS_URL", "redis://127.0.0.1:1")
        .env("RINGBACK_DRILL", "1"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

#[test]
fn unknown_and_misspelled_variables_are_named_with_the_real_one() {
    let (code, stdout, stderr) = run(live_twilio(&mut ringback(&["check-config"]))
        .env("RINGBACK_PENDNG_TTL_MS", "5000")
        .env("RINGBACK_SOMETHING_ELSE", "1")
        .env("TWILIO_ACOUNT_SID", ACCOUNT)
        .env("OTEL_SERVICE_NAM", "x")
        // read by other tools, and by the image's health check: quiet
        .env("OTEL_LOGS_EXPORTER", "none")
        .env("TWILIO_REGION", "ie1")
        .env("RINGBACK_HEALTH_PORT", "3000"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for (name, says) in [
        (
            "RINGBACK_PENDNG_TTL_MS",
            "did you mean RINGBACK_PENDING_TTL_MS?",
        ),
        ("RINGBACK_SOMETHING_ELSE", "is not a setting ringback reads"),
        ("TWILIO_ACOUNT_SID", "misspelling of TWILIO_ACCOUNT_SID"),
        ("OTEL_SERVICE_NAM", "misspelling of OTEL_SERVICE_NAME"),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with(&format!("warning: {name} ")) && l.contains(says)),
            "{name}: {stdout}"
        );
    }
    for quiet in [
        "OTEL_LOGS_EXPORTER",
        "TWILIO_REGION",
        "RINGBACK_HEALTH_PORT",
    ] {
        assert!(!stdout.contains(quiet), "{quiet}: {stdout}");
    }
    assert!(!stdout.contains("all invariants hold"), "{stdout}");
    assert!(stdout.contains("4 warning(s) above"), "{stdout}");
}

#[test]
fn every_ringback_variable_the_repositorys_tools_set_is_known() {
    // a script's or the image's own variable must not read as a misspelling in check-config
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let name = regex::Regex::new(r"\bRINGBACK_[A-Z][A-Z_]*[A-Z]\b").expect("pattern");
    let mut text = String::new();
    for dir in [
        "scripts",
        "deploy",
        "node-harness/lib",
        "node-harness/bin",
        "node-harness/test",
    ] {
        for entry in walk(&root.join(dir)) {
            text.push_str(&std::fs::read_to_string(entry).unwrap_or_default());
        }
    }
    text.push_str(&std::fs::read_to_string(root.join("Dockerfile")).expect("Dockerfile"));
    let mut cmd = ringback(&["check-config"]);
    live_twilio(&mut cmd);
    let mut names: Vec<&str> = name.find_iter(&text).map(|m| m.as_str()).collect();
    names.sort();
    names.dedup();
    for n in &names {
        cmd.env(n, "1");
    }
    let (_, stdout, stderr) = run(&mut cmd);
    let unknown: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("is not a setting ringback reads"))
        .collect();
    assert!(unknown.is_empty(), "{unknown:#?}\n{stderr}");
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = vec![];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn verdicts_read_true_and_name_the_setting_changed() {
    // the receipts rule unkept: its verdict, the rule, and why, side by side
    let (code, stdout, stderr) =
        run(live_twilio(&mut ringback(&["check-config"]))
            .env_remove("RINGBACK_STATUS_CALLBACK_URL"));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("warning  does not hold: receipts on"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(lines[at + 1].contains("is not set"), "{stdout}");
    assert!(stdout.contains("1 warning(s) above"), "{stdout}");

    // with an error present the explanations are still printed; a sent TTL below the lease
    // names the setting changed, for the worker and for serve
    let (code, stdout, stderr) = run(live_twilio(&mut ringback(&["check-config"]))
        .env_remove("RINGBACK_STATUS_CALLBACK_URL")
        .env("RINGBACK_SENT_TTL_MS", "300000"));
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(stdout.contains("does not hold: receipts on"), "{stdout}");
    assert!(
        named(&stderr, "RINGBACK_SENT_TTL_MS", "--sent-ttl-ms")
            .is_some_and(|l| l.contains("shorter than RINGBACK_CLAIM_LEASE_MS")),
        "{stderr}"
    );
    assert!(
        named(&stderr, "RINGBACK_CLAIM_LEASE_MS", "--claim-lease-ms").is_none(),
        "{stderr}"
    );
    let (code, stdout, stderr) = run(ringback(&["check-config", "serve"])
        .env("RINGBACK_PUBLIC_URL", "https://ringback.acme.test")
        .env("RINGBACK_API_TOKEN", "api-token-0123456789")
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("RINGBACK_SENT_TTL_MS", "300000"));
    assert_eq!(code, Some(2), "{stdout}{stderr}");
    assert!(
        named(&stderr, "RINGBACK_SENT_TTL_MS", "--sent-ttl-ms").is_some(),
        "{stderr}"
    );
}

#[test]
fn check_config_resend_checks_the_settings_resend_reads() {
    let (code, stdout, stderr) = run(live_twilio(&mut ringback(&["check-config", "resend"])));
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("# ringback resend reads the settings drain reads"),
        "{stdout}"
    );
    let (code, _, stderr) =
        run(live_twilio(&mut ringback(&["check-config", "resend"])).env_remove("TWILIO_FROM"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        named(&stderr, "TWILIO_FROM", "--twilio-from").is_some(),
        "{stderr}"
    );
}

/// Every Twilio credential and sender the docs show, pasted into a configuration that talks to
/// Twilio's own API, is refused by check-config: a value copied from a page fails before the
/// first text does, not at it.
#[test]
fn every_twilio_value_the_docs_show_is_refused_against_twilio() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![
        root.join("README.md"),
        root.join("deploy/ringback.env.example"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).unwrap().flatten() {
        pages.push(entry.path());
    }
    let assignment = regex::Regex::new(
        r"(?m)^\s*(?:export\s+)?(TWILIO_ACCOUNT_SID|TWILIO_AUTH_TOKEN|TWILIO_API_KEY|TWILIO_API_SECRET|TWILIO_FROM|TWILIO_MESSAGING_SERVICE_SID)=(\S+)",
    )
    .unwrap();
    let sid_anywhere = regex::Regex::new(r"\b(AC|MG|SK)[0-9a-fA-Fx]{32}\b").unwrap();
    let mut shown: Vec<(String, String)> = vec![];
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap_or_default();
        for c in assignment.captures_iter(&text) {
            let value = c[2].trim_matches(['"', '\'']).to_string();
            if !value.contains('$') {
                shown.push((c[1].to_string(), value));
            }
        }
        for m in sid_anywhere.find_iter(&text) {
            let setting = match &m.as_str()[..2] {
                "AC" => "TWILIO_ACCOUNT_SID",
                "MG" => "TWILIO_MESSAGING_SERVICE_SID",
                _ => "TWILIO_API_KEY",
            };
            shown.push((setting.to_string(), m.as_str().to_string()));
        }
    }
    shown.sort();
    shown.dedup();
    assert!(shown.len() >= 5, "the docs' values: {shown:?}");
    for (setting, value) in &shown {
        let mut cmd = ringback(&["check-config"]);
        live_twilio(&mut cmd).env(setting, value);
        if setting == "TWILIO_API_KEY" || setting == "TWILIO_API_SECRET" {
            cmd.env_remove("TWILIO_AUTH_TOKEN")
                .env("TWILIO_API_KEY", "SK0123456789abcdef0123456789abcdef")
                .env("TWILIO_API_SECRET", "abcdefghijklmnopqrstuvwxyz012345")
                .env(setting, value);
        }
        if setting == "TWILIO_MESSAGING_SERVICE_SID" {
            cmd.env_remove("TWILIO_FROM");
        }
        let (code, stdout, stderr) = run(&mut cmd);
        assert_eq!(
            code,
            Some(2),
            "{setting}={value} from the docs passes against Twilio: {stdout}{stderr}"
        );
    }
}
