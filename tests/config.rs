//! The configuration as an operator meets it: `check-config [worker|serve|drain]` names every
//! unparsable, missing or contradictory setting of one run by variable and flag, with each
//! invariant's verdict; the reference in `docs/configuration.md` is the binary's own; every flag
//! has help, one flag name per variable; test knobs are hidden and reported; and records of
//! another on-Redis layout are refused at start, naming the key and the layout.

mod common;

use std::process::{Command, Output};

use common::RedisServer;

const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "sim-token";

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

#[test]
fn quiet_hours_and_the_inbound_settings_are_checked_together() {
    let base = |cmd: &mut Command| {
        cmd.env("REDIS_URL", "redis://127.0.0.1:1")
            .env("TWILIO_ACCOUNT_SID", ACCOUNT)
            .env("TWILIO_AUTH_TOKEN", TOKEN)
            .env("TWILIO_FROM", "+15005550006");
    };
    let mut cmd = ringback(&["check-config"]);
    base(&mut cmd);
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
    base(&mut cmd);
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
    base(&mut cmd);
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
        "broken   RINGBACK_SENT_TTL_MS (500) > RINGBACK_PENDING_TTL_MS (15000)",
        "broken   RINGBACK_CLAIM_LEASE_MS (1000) > lock duration",
        "ok       RINGBACK_PENDING_TTL_MS (15000) > TWILIO_TIMEOUT_MS + 2000 ms (10000)",
        "warning  RINGBACK_STATUS_CALLBACK_URL is set",
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
        stdout.contains("broken   RINGBACK_LISTEN (0.0.0.0:3001)"),
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
    assert!(stderr.contains("worker, serve or drain"), "{stderr}");
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
        .env("TWILIO_FROM", "+15558675310")
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
            .env("TWILIO_FROM", "+15558675310")
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
            .env("TWILIO_FROM", "+15558675310");
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
