//! The `ringback` binary as a newcomer meets it: every missing setting named in one
//! run, the Redis tried named in every connection error, a quick failure on a refused port,
//! retry waits as logged, SIGTERM a clean stop while Redis is down, and `serve` listening at
//! once while Redis is down, its refused status callbacks recovered by the worker's poll.

use crate::common;

use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::{Duration, Instant};

use common::{Add, RedisServer, add_job, queue_name};
use ringback::store::keys::QueueKeys;

const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
/// Twilio's shape (32 hex digits): check-config checks it against Twilio's own API.
const TOKEN: &str = "fedcba9876543210fedcba9876543210";
const API_TOKEN: &str = "api-token-0123456789";
const T: Duration = Duration::from_secs(20);

/// A port nothing listens on (bound once, then released).
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The binary with an empty environment: only what a test sets is seen.
fn ringback(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringback"));
    cmd.args(args)
        .env_clear()
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info");
    cmd
}

fn twilio_env(cmd: &mut Command) -> &mut Command {
    cmd.env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("TWILIO_FROM", "+14155550123")
}

/// A running binary whose output lines arrive on channels; killed on drop.
struct Running {
    child: Child,
    stdout: Receiver<String>,
    stderr: Receiver<String>,
    /// Every stderr line read so far and when it arrived, printed when a test fails.
    log: Vec<(String, Instant)>,
    /// How many of `log` a stderr wait has passed over.
    log_seen: usize,
}

impl Running {
    fn spawn(cmd: &mut Command) -> Self {
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ringback binary");
        let lines = |r: Box<dyn std::io::Read + Send>| {
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(r).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
            rx
        };
        let stdout = lines(Box::new(child.stdout.take().unwrap()));
        let stderr = lines(Box::new(child.stderr.take().unwrap()));
        Running {
            child,
            stdout,
            stderr,
            log: vec![],
            log_seen: 0,
        }
    }

    /// The first stdout line containing `what`, within `timeout`.
    async fn stdout_line(&mut self, what: &str, timeout: Duration) -> String {
        self.line(true, what, timeout).await.0
    }

    /// The first stderr line containing `what`, and when it arrived.
    async fn stderr_line(&mut self, what: &str, timeout: Duration) -> (String, Instant) {
        self.line(false, what, timeout).await
    }

    async fn line(&mut self, stdout: bool, what: &str, timeout: Duration) -> (String, Instant) {
        let deadline = Instant::now() + timeout;
        loop {
            // stderr lines are read into `log` whichever stream is waited on, so a stdout wait
            // never loses one a later stderr wait looks for
            let closed = self.drain_stderr();
            if !stdout {
                while let Some((line, at)) = self.log.get(self.log_seen).cloned() {
                    self.log_seen += 1;
                    if line.contains(what) {
                        return (line, at);
                    }
                }
                assert!(!closed, "stderr closed before {what:?}:\n{}", self.text());
            } else {
                match self.stdout.try_recv() {
                    Ok(line) if line.contains(what) => return (line, Instant::now()),
                    Ok(_) => continue,
                    Err(TryRecvError::Disconnected) => {
                        panic!("stdout closed before {what:?}:\n{}", self.text())
                    }
                    Err(TryRecvError::Empty) => {}
                }
            }
            assert!(
                Instant::now() < deadline,
                "no {what:?} within {timeout:?}; stderr:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Reads the stderr lines that arrived; true once stderr is closed.
    fn drain_stderr(&mut self) -> bool {
        loop {
            match self.stderr.try_recv() {
                Ok(line) => self.log.push((line, Instant::now())),
                Err(TryRecvError::Empty) => return false,
                Err(TryRecvError::Disconnected) => return true,
            }
        }
    }

    fn text(&self) -> String {
        let lines: Vec<&str> = self.log.iter().map(|(l, _)| l.as_str()).collect();
        lines.join("\n")
    }

    fn sigterm(&self) {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -TERM");
    }

    /// The exit code, within `timeout`.
    async fn exit_code(&mut self, timeout: Duration) -> Option<i32> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            self.drain_stderr();
            assert!(
                Instant::now() < deadline,
                "still running after {timeout:?}:\n{}",
                self.text()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if std::thread::panicking() {
            self.drain_stderr();
            eprintln!("--- ringback stderr ---\n{}", self.text());
        }
    }
}

#[test]
fn check_config_names_every_missing_setting_in_one_run() {
    let out = ringback(&["check-config"]).output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    for name in ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_FROM"] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("  {name} (--")) && l.contains("): required")),
            "{stderr}"
        );
    }
    // the effective values it could read, printed anyway, secrets masked
    assert!(
        stdout.contains("REDIS_URL=redis://127.0.0.1:6379"),
        "{stdout}"
    );
    assert!(stdout.contains("TWILIO_AUTH_TOKEN=(not set)"), "{stdout}");

    let out = twilio_env(&mut ringback(&["check-config"]))
        .env("REDIS_URL", "redis://:s3cret@127.0.0.1:6379")
        .env("RINGBACK_CONCURRENCY", "0")
        .env("RINGBACK_QUEUE", "a:b")
        .env("TWILIO_VALIDITY_PERIOD_S", "0")
        .env("RINGBACK_CRASH_AT", "after-claim")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(out.status.code(), Some(2));
    for name in [
        "RINGBACK_QUEUE",
        "RINGBACK_CONCURRENCY",
        "TWILIO_VALIDITY_PERIOD_S",
        // a crash hook outside drill mode
        "RINGBACK_CRASH_AT",
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("  {name} (--"))),
            "{stderr}"
        );
    }
    assert!(stdout.contains("REDIS_URL=redis://:***@127.0.0.1:6379"));
    assert!(stdout.contains("TWILIO_AUTH_TOKEN=*** (set)"));
    assert!(
        !stdout.contains("s3cret") && !stdout.contains(TOKEN),
        "{stdout}"
    );
}

/// The shipped env example, as an operator fills it in: its secrets only. Every trap that would
/// make a live deployment fail its sends is named in one run, by variable.
#[test]
fn check_config_refuses_the_env_examples_traps_against_twilio() {
    let example = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/deploy/ringback.env.example"
    ))
    .unwrap();
    let mut cmd = ringback(&["check-config"]);
    for line in example.lines().filter(|l| !l.starts_with('#')) {
        if let Some((k, v)) = line.split_once('=') {
            cmd.env(k, v);
        }
    }
    cmd.env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("  TWILIO_FROM (--twilio-from): required"),
        "the example leaves the sender empty: {stderr}"
    );

    // The traps an env example could hold: Twilio's test-credential number and example.com URLs.
    let out = twilio_env(&mut ringback(&["check-config"]))
        .env("TWILIO_FROM", "+15005550006")
        .env(
            "RINGBACK_STATUS_CALLBACK_URL",
            "https://ringback.example.com/api/notify/webhook/status",
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for (name, says) in [
        ("TWILIO_FROM", "test credentials"),
        ("RINGBACK_STATUS_CALLBACK_URL", "ringback.example.com"),
    ] {
        assert!(
            stderr
                .lines()
                .any(|l| l.starts_with(&format!("  {name} (--")) && l.contains(says)),
            "{name} ({says}) not named: {stderr}"
        );
    }
    // A sender Twilio would refuse is named; a test number against the simulator is fine.
    let out = twilio_env(&mut ringback(&["check-config"]))
        .env("TWILIO_FROM", "5558675310")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("  TWILIO_FROM (--twilio-from): \"5558675310\" is not a sender"),
        "{stderr}"
    );
    let out = twilio_env(&mut ringback(&["check-config"]))
        .env("TWILIO_FROM", "+15005550006")
        .env("TWILIO_API_BASE", "http://127.0.0.1:9")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A Messaging Service SID in TWILIO_FROM is taken as one, with a warning.
    let stdout = passes(
        twilio_env(&mut ringback(&["check-config"]))
            .env("TWILIO_FROM", "MG0123456789abcdef0123456789abcdef"),
    );
    assert!(
        stdout.contains("warning: TWILIO_FROM holds a Messaging Service SID"),
        "{stdout}"
    );
}

/// Runs `cmd` (a check-config), expecting it valid (exit 0): its stdout.
fn passes(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `cmd`, expecting bad configuration (exit 2): its stderr.
fn refused(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    stderr
}

/// Twilio's queue is tied to the delivery deadline: unset, `ValidityPeriod` is the deadline
/// (shown by check-config); set longer, it is refused with both settings named. Senders in
/// `RINGBACK_SENDERS` must be senders Twilio accepts, every bad one named at once.
#[test]
fn check_config_ties_validity_to_the_deadline_and_checks_the_sender_list() {
    let stderr = refused(
        twilio_env(&mut ringback(&["check-config"]))
            .env("TWILIO_VALIDITY_PERIOD_S", "36000")
            .env("RINGBACK_SENDERS", "+15550199999, 5558675310,+1-555,Acme"),
    );
    assert!(
        stderr.lines().any(
            |l| l.starts_with("  TWILIO_VALIDITY_PERIOD_S (--validity-period-s): ")
                && l.contains("RINGBACK_DELIVERY_DEADLINE_MS (900 s)")
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("  RINGBACK_SENDERS (--senders): 5558675310, +1-555 are not a sender"),
        "{stderr}"
    );
    let stdout = passes(
        twilio_env(&mut ringback(&["check-config"]))
            .env("TWILIO_VALIDITY_PERIOD_S", "900")
            .env("RINGBACK_SENDERS", "+15550199999,Acme"),
    );
    assert!(
        stdout.contains("RINGBACK_SENDERS=+15550199999,Acme"),
        "{stdout}"
    );
    // no status callback URL: told what that costs, and still valid
    assert!(
        stdout.lines().any(|l| l
            .trim_start()
            .starts_with("RINGBACK_STATUS_CALLBACK_URL is not set")),
        "{stdout}"
    );
}

/// The window's assumptions hold for the legacy fleet beside ringback too: a reconcile window
/// no longer than the legacy create's timeout, and a lease the legacy fleet's stall recovery
/// could outlast, are named (warnings first: a unit that started before keeps starting).
#[test]
fn check_config_checks_the_windows_assumptions_against_the_legacy_fleet() {
    let stdout = passes(
        twilio_env(&mut ringback(&["check-config"]))
            .env("RINGBACK_RECONCILE_WINDOW_MS", "20000")
            .env("RINGBACK_LEGACY_LOCK_DURATION_MS", "600000"),
    );
    for (warning, says) in [
        (
            "RINGBACK_RECONCILE_WINDOW_MS (20000 ms)",
            "RINGBACK_LEGACY_CREATE_TIMEOUT_MS (30000 ms)",
        ),
        (
            "RINGBACK_CLAIM_LEASE_MS (600000 ms)",
            "RINGBACK_LEGACY_LOCK_DURATION_MS",
        ),
    ] {
        assert!(
            stdout
                .lines()
                .any(|l| l.trim_start().starts_with(warning) && l.contains(says)),
            "{warning}: {stdout}"
        );
    }
    assert!(
        stdout.contains("RINGBACK_LEGACY_LOCK_DURATION_MS=600000"),
        "{stdout}"
    );
}

/// `RINGBACK_WORKER_NAME` names the worker's connection in Redis (`CLIENT SETNAME`): a name Redis
/// would refuse is refused at once, not found out at the first connection.
#[test]
fn check_config_refuses_a_worker_name_redis_would_refuse() {
    let stderr =
        refused(twilio_env(&mut ringback(&["check-config"])).env("RINGBACK_WORKER_NAME", "rb 1"));
    assert!(
        stderr.contains(
            "  RINGBACK_WORKER_NAME (--worker-name): ' ' is not allowed in a Redis client name"
        ),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_a_documentation_public_url() {
    let out = ringback(&["serve"])
        .env("RINGBACK_PUBLIC_URL", "https://ringback.example.com")
        .env("RINGBACK_API_TOKEN", "0123456789abcdef0123")
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "  RINGBACK_PUBLIC_URL (--public-url): ringback.example.com is a documentation host"
        ),
        "{stderr}"
    );
}

#[test]
fn check_config_refuses_a_claim_lease_stall_recovery_could_outlive() {
    let out = twilio_env(&mut ringback(&["check-config"]))
        .env("RINGBACK_CLAIM_LEASE_MS", "100000")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // 30 s lock + 2 × 30 s stall sweep + 15 s liveness = 105 s
    assert!(
        stderr.contains("RINGBACK_CLAIM_LEASE_MS") && stderr.contains("105000"),
        "{stderr}"
    );
    let ok = twilio_env(&mut ringback(&["check-config"]))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&ok.stdout);
    assert_eq!(ok.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("RINGBACK_CLAIM_LEASE_MS=600000"),
        "{stdout}"
    );
}

#[test]
fn worker_and_serve_name_every_missing_setting_in_one_run() {
    let out = ringback(&["worker"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for name in ["TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN", "TWILIO_FROM"] {
        assert!(stderr.contains(name), "{stderr}");
    }
    let out = ringback(&["serve"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for name in [
        "RINGBACK_PUBLIC_URL",
        "RINGBACK_API_TOKEN",
        "TWILIO_AUTH_TOKEN",
    ] {
        assert!(stderr.contains(name), "{stderr}");
    }
}

/// The runtime's threads: a bad value is refused (exit 2) naming the variable, before anything
/// runs; a good one, from the flag or the environment, runs the command.
#[test]
fn threads_are_checked_and_taken_from_flag_or_environment() {
    for bad in ["0", "257", "two", ""] {
        let out = ringback(&["status", "run-1"])
            .env("RINGBACK_THREADS", bad)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {stderr}");
        assert!(stderr.contains("RINGBACK_THREADS"), "{bad:?}: {stderr}");
    }
    let port = closed_port();
    for cmd in [
        ringback(&["--threads", "3", "status", "run-1"]),
        ringback(&["status", "run-1", "--threads", "3"]),
    ] {
        let mut cmd = cmd;
        let out = cmd
            .env("REDIS_URL", format!("redis://127.0.0.1:{port}"))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        // it ran: the refused Redis is the answer (exit 1), not the flag (exit 2)
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    }
    let out = ringback(&["status", "run-1"])
        .env("RINGBACK_THREADS", "4")
        .env("REDIS_URL", format!("redis://127.0.0.1:{port}"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn status_on_a_refused_port_fails_at_once_naming_the_redis() {
    let port = closed_port();
    let started = Instant::now();
    let out = ringback(&["status", "run-1"])
        .env("REDIS_URL", format!("redis://:s3cret@127.0.0.1:{port}"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("redis at redis://:***@127.0.0.1:{port}: ")),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
    // redis-rs's own connection retries once hid 1.15 s here
    assert!(took < Duration::from_millis(700), "took {took:?}");
}

/// A worker with Redis down: each retry comes when its log line says, the line names the
/// Redis, and SIGTERM meanwhile is a clean stop.
#[tokio::test]
async fn worker_retries_as_logged_and_stops_cleanly_while_redis_is_down() {
    let port = closed_port();
    let mut w = Running::spawn(
        twilio_env(&mut ringback(&["worker"]))
            .env("REDIS_URL", format!("redis://:s3cret@127.0.0.1:{port}"))
            .env("RINGBACK_METRICS_LISTEN", "off"),
    );
    let retry_ms = regex::Regex::new(r"retry_ms=(\d+)").unwrap();
    let mut seen = vec![];
    for _ in 0..3 {
        let (line, at) = w.stderr_line("redis unreachable", T).await;
        assert!(
            line.contains(&format!("redis://:***@127.0.0.1:{port}")) && !line.contains("s3cret"),
            "{line}"
        );
        let ms: u64 = retry_ms.captures(&line).expect("retry_ms")[1]
            .parse()
            .unwrap();
        seen.push((ms, at));
    }
    for pair in seen.windows(2) {
        let ((said, at), (_, next)) = (pair[0], pair[1]);
        let took = next.duration_since(at);
        let said = Duration::from_millis(said);
        assert!(
            took >= said - Duration::from_millis(20) && took < said + Duration::from_millis(300),
            "logged retry_ms={said:?}, the next attempt came after {took:?}"
        );
    }
    w.sigterm();
    assert_eq!(w.exit_code(Duration::from_secs(5)).await, Some(0));
}

/// The default user of `redis` with `rules` added (`ACL SETUSER default …`): commands a managed
/// Redis refuses, refused here the same way.
async fn refuse_commands(redis: &RedisServer, rules: &[&str]) {
    let mut c = redis.conn().await;
    let _: () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg(rules)
        .query_async(&mut c)
        .await
        .unwrap();
}

/// A Redis that refuses commands ringback can do without (`WAIT`, `CLIENT SETNAME`, `CONFIG`,
/// `INFO`, as managed offerings do) is named at start, each with what it costs, and the worker runs;
/// one it cannot run without (`EVALSHA`) stops it at start with exit 2, naming the command,
/// instead of failing in the middle of a send.
#[tokio::test]
async fn a_redis_that_refuses_commands_is_named_at_start_with_what_each_costs() {
    let redis = RedisServer::start();
    refuse_commands(&redis, &["-wait", "-client|setname", "-config", "-info"]).await;
    let mut w = Running::spawn(
        twilio_env(&mut ringback(&["worker"]))
            .env("REDIS_URL", redis.url())
            .env("RINGBACK_METRICS_LISTEN", "off"),
    );
    for (command, cost) in [
        ("WAIT", "no write waits for a replica"),
        ("CLIENT SETNAME", "Queue.getWorkers()"),
        ("INFO", "lost its last writes"),
        ("CONFIG GET", "maxmemory-policy"),
    ] {
        let (line, _) = w.stderr_line(&format!("Redis refuses {command}:"), T).await;
        assert!(line.contains(cost), "{line}");
    }
    w.stderr_line("worker started", T).await;
    w.sigterm();
    assert_eq!(w.exit_code(Duration::from_secs(5)).await, Some(0));

    refuse_commands(&redis, &["-evalsha"]).await;
    let mut w = Running::spawn(
        twilio_env(&mut ringback(&["worker"]))
            .env("REDIS_URL", redis.url())
            .env("RINGBACK_METRICS_LISTEN", "off"),
    );
    assert_eq!(w.exit_code(T).await, Some(2));
    let (line, _) = w.stderr_line("Redis refuses EVALSHA", T).await;
    assert!(line.contains("ringback cannot run"), "{line}");
}

fn serve(redis_url: &str) -> Command {
    let mut cmd = ringback(&["serve"]);
    cmd.env("REDIS_URL", redis_url)
        .env("RINGBACK_LISTEN", "127.0.0.1:0")
        .env("RINGBACK_PUBLIC_URL", "http://127.0.0.1")
        .env("RINGBACK_API_TOKEN", API_TOKEN)
        .env("TWILIO_AUTH_TOKEN", TOKEN);
    cmd
}

/// `ringback serve`'s base URL, from its "listening on" line.
async fn serve_base(s: &mut Running) -> String {
    let line = s.stdout_line("listening on http://", T).await;
    line.rsplit(' ').next().unwrap().to_string()
}

/// A Redis that takes serve's connection and then holds its first write past the command
/// timeout (paused at start: a failover, a slow fork; a connection killed right after it was
/// accepted is the same error) is waited out as an unreachable Redis is: serve opens once Redis
/// answers, never exits 1.
#[tokio::test]
async fn serve_starting_while_redis_holds_its_writes_waits_and_opens() {
    ringback::twilio::client::install_tls_provider();
    let redis = RedisServer::start();
    let mut admin = redis.conn().await;
    // longer than the command timeout (10 s): the layout check's first write times out
    common::pause_writes(&mut admin, 12_000).await;
    let mut s = Running::spawn(&mut serve(&redis.url()));
    let base = serve_base(&mut s).await;
    let http = reqwest::Client::new();
    common::wait_for(Duration::from_secs(40), "serve to become ready", || {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let r = http.get(format!("{base}/readyz")).send().await.ok()?;
            (r.status() == 200).then_some(())
        }
    })
    .await;
    s.sigterm();
    assert_eq!(s.exit_code(Duration::from_secs(5)).await, Some(0));
}

#[tokio::test]
async fn serve_listens_at_once_while_redis_is_down_and_opens_when_it_answers() {
    ringback::twilio::client::install_tls_provider();
    let mut redis = RedisServer::start();
    redis.kill();
    let mut s = Running::spawn(&mut serve(&redis.url()));
    let base = serve_base(&mut s).await;
    let (line, _) = s.stderr_line("waiting for Redis", T).await;
    assert!(line.contains(&redis.url()), "{line}");
    assert!(
        line.contains("ringback::edge::api"),
        "logged as serve's: {line}"
    );

    let http = reqwest::Client::new();
    let health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let why = ready.text().await.unwrap();
    assert!(
        why.contains(&format!("waiting for Redis at {}", redis.url())),
        "{why}"
    );
    let unsigned_callback = || {
        http.post(format!("{base}/api/notify/webhook/status"))
            .form(&[("MessageSid", "SM0"), ("MessageStatus", "delivered")])
            .send()
    };
    let webhook = unsigned_callback().await.unwrap();
    assert_eq!(webhook.status(), 503);
    assert!(webhook.headers().contains_key("retry-after"));

    redis.restart();
    common::wait_for(T, "serve to become ready", || {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let r = http.get(format!("{base}/readyz")).send().await.ok()?;
            (r.status() == 200).then_some(())
        }
    })
    .await;
    // the real router now: an unsigned callback is refused for its signature
    assert_eq!(unsigned_callback().await.unwrap().status(), 403);
    s.sigterm();
    assert_eq!(s.exit_code(Duration::from_secs(5)).await, Some(0));
}

#[tokio::test]
async fn serve_stops_cleanly_while_redis_is_down() {
    let mut s = Running::spawn(&mut serve(&format!("redis://127.0.0.1:{}", closed_port())));
    serve_base(&mut s).await;
    s.stderr_line("redis unreachable", T).await;
    s.sigterm();
    assert_eq!(s.exit_code(Duration::from_secs(5)).await, Some(0));
}

/// Twilio does not retry a refused status callback unless its URL asks (`#rc=…&rp=5xx`): the
/// worker's reconciliation poll is what recovers the status.
#[tokio::test]
async fn the_poll_recovers_a_status_the_webhook_refused() {
    ringback::twilio::client::install_tls_provider();
    let redis = RedisServer::start();
    let mut sim = Running::spawn(&mut ringback(&[
        "twilio-sim",
        "--listen",
        "127.0.0.1:0",
        "--account-sid",
        ACCOUNT,
        "--auth-token",
        TOKEN,
    ]));
    let line = sim.stdout_line("twilio-sim listening on http://", T).await;
    let sim_base = line.split(' ').nth(3).expect("the address").to_string();

    // serve waits for a Redis that never comes: every callback is refused with 503
    let mut s = Running::spawn(&mut serve(&format!("redis://127.0.0.1:{}", closed_port())));
    let base = serve_base(&mut s).await;
    let queue = queue_name("refused-callback");
    let _w = Running::spawn(
        twilio_env(&mut ringback(&["worker"]))
            .env("REDIS_URL", redis.url())
            .env("RINGBACK_QUEUE", &queue)
            .env("RINGBACK_METRICS_LISTEN", "off")
            .env("RINGBACK_DRAIN_DELAY_MS", "300")
            .env("TWILIO_API_BASE", &sim_base)
            .env(
                "RINGBACK_STATUS_CALLBACK_URL",
                format!("{base}/api/notify/webhook/status"),
            )
            .env("RINGBACK_RECEIPT_POLL_AFTER_MS", "300"),
    );
    let keys = QueueKeys::new("bull", &queue);
    let data = serde_json::json!({"runId": "r1", "to": "+15558675310", "body": "done"}).to_string();
    add_job(
        &mut redis.conn().await,
        &keys,
        Add {
            data: &data,
            ..Default::default()
        },
    )
    .await;

    // the simulator's two callbacks (sent, delivered) were refused
    let http = reqwest::Client::new();
    common::wait_for(T, "serve to refuse both callbacks", || {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let why = http
                .get(format!("{base}/readyz"))
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            why.contains("; 2 requests refused meanwhile").then_some(())
        }
    })
    .await;
    // and the worker's poll brought the record to `delivered` anyway
    let client = redis::Client::open(redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let (receipts, _) =
        ringback::callbacks::sms::SmsConfig::default().after_send(conn, "bull", &queue);
    let record = common::wait_for(T, "the poll to record the delivery", || {
        let receipts = receipts.clone();
        async move {
            let r = receipts.record("r1", None).await.ok()?;
            (r.state == "delivered").then_some(r)
        }
    })
    .await;
    let sources: Vec<&str> = record
        .history
        .iter()
        .filter_map(|h| h["source"].as_str())
        .collect();
    assert!(sources.contains(&"poll"), "{:?}", record.history);
    assert!(!sources.contains(&"webhook"), "{:?}", record.history);
}

/// `ringback status` tells a run never seen (exit 3, "no record") from a run whose record
/// exists; "unknown" is kept for a send whose outcome is unknown.
#[test]
fn status_tells_a_run_never_seen_from_a_record() {
    let server = common::RedisServer::start();
    let out = ringback(&["status", "never-seen-run"])
        .env("REDIS_URL", server.url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("no record"), "{stdout}");
    assert!(!stdout.contains("unknown"), "{stdout}");
    // a run with a claim is a run seen
    let mut conn = redis::Client::open(server.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let _: () = redis::cmd("SET")
        .arg("agent-callback:seen-run")
        .arg("pending")
        .query(&mut conn)
        .unwrap();
    let out = ringback(&["status", "seen-run"])
        .env("REDIS_URL", server.url())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("state"), "{stdout}");
}

/// `-h` is one line per flag (its variable and the first sentence of its help), for every
/// subcommand; `--help` stays the reference, with every sentence, variable and default.
#[test]
fn short_help_is_one_line_per_flag_and_long_help_the_reference() {
    let flag = regex::Regex::new(r"(?m)^\s+(?:-\w, )?(--[\w-]+)").unwrap();
    for sub in [
        "worker",
        "serve",
        "drain",
        "resend",
        "status",
        "check-config",
        "drill",
        "twilio-sim",
    ] {
        let out = ringback(&[sub, "-h"]).output().unwrap();
        assert!(out.status.success(), "{sub} -h");
        let short = String::from_utf8_lossy(&out.stdout);
        let long = ringback(&[sub, "--help"]).output().unwrap();
        let long = String::from_utf8_lossy(&long.stdout);
        // every flag --help shows is in -h, on a line of its own that carries its text
        let flags: Vec<&str> = flag
            .captures_iter(&long)
            .map(|c| c.get(1).unwrap().as_str())
            .filter(|f| *f != "--help")
            .collect();
        assert!(!flags.is_empty() || sub == "status", "{sub}: {long}");
        for f in &flags {
            let lines: Vec<&str> = short
                .lines()
                .filter(|l| {
                    l.trim_start().starts_with(&format!("{f} "))
                        || l.contains(&format!(", {f} "))
                        || l.trim_end().ends_with(f)
                })
                .collect();
            assert_eq!(lines.len(), 1, "{sub} -h: {f} on one line: {short}");
        }
        // no continuation lines: each line under a heading is a flag, an argument or a command
        for line in short.lines().filter(|l| l.starts_with("   ")) {
            assert!(
                line.trim_start().starts_with('-') || line.trim_start().starts_with('<'),
                "{sub} -h: a continuation line: {line:?}\n{short}"
            );
        }
        assert!(
            short.lines().count() * 2 <= long.lines().count() + 20,
            "{sub}: -h is short"
        );
        assert!(short.contains(&format!("ringback {sub} --help")), "{short}");
    }
    let short =
        String::from_utf8_lossy(&ringback(&["worker", "-h"]).output().unwrap().stdout).into_owned();
    assert!(
        short
            .lines()
            .any(|l| l.contains("--concurrency") && l.contains("[RINGBACK_CONCURRENCY]")),
        "{short}"
    );
    let long = String::from_utf8_lossy(&ringback(&["worker", "--help"]).output().unwrap().stdout)
        .into_owned();
    assert!(
        long.contains("[env: RINGBACK_CONCURRENCY=]") && long.contains("[default: 1]"),
        "{long}"
    );
    // the root's -h lists the commands
    let root = String::from_utf8_lossy(&ringback(&["-h"]).output().unwrap().stdout).into_owned();
    assert!(
        root.lines().any(|l| l.trim_start().starts_with("worker ")),
        "{root}"
    );
}
