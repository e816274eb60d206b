//! Shared by the callback tests: an environment of a real redis-server and the Twilio
//! simulator, the SMS processor in-process or the `ringback` binary, jobs added as Node's
//! `Queue.add` stores them, and texts counted at the simulator.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::{Add, RedisServer, add_job, job_hash, queue_name, wait_for};
use redis::AsyncCommands;
use ringback::callbacks::sms::{SmsConfig, SmsProcessor};
use ringback::store::keys::QueueKeys;
use ringback::twilio::{Auth, Secret, Sender, TwilioClient, TwilioConfig};
use ringback::twilio_sim::{SimConfig, Simulator, server};
use ringback::{Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

pub(crate) const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
pub(crate) const TOKEN: &str = "sim-token";
pub(crate) const TO: &str = "+15558675310";
pub(crate) const T: Duration = Duration::from_secs(20);

pub(crate) struct Env {
    pub redis: RedisServer,
    pub sim: Arc<Simulator>,
    pub sim_base: String,
    pub queue: String,
    pub keys: QueueKeys,
    pub cancel: CancellationToken,
    /// Where status callbacks reach `serve`, once [`serve_receipts`] started it: the binaries
    /// [`ringback_command`] starts are given it as `RINGBACK_STATUS_CALLBACK_URL`.
    pub status_callback: std::sync::OnceLock<String>,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

pub(crate) async fn env(test: &str, faults: &str) -> Env {
    env_on(RedisServer::start(), test, faults).await
}

/// [`env`] on `redis` (Valkey, a server with settings of its own).
pub(crate) async fn env_on(redis: RedisServer, test: &str, faults: &str) -> Env {
    let sim = Simulator::new(
        SimConfig {
            account_sid: ACCOUNT.into(),
            auth_token: Secret::new(TOKEN),
            api_keys: vec![],
        },
        if faults.is_empty() {
            Default::default()
        } else {
            serde_json::from_str(faults).unwrap()
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let sim_base = format!("http://{}", listener.local_addr().unwrap());
    let cancel = CancellationToken::new();
    tokio::spawn(server::serve(listener, sim.clone(), cancel.clone()));
    let queue = queue_name(test);
    let keys = QueueKeys::new("bull", &queue);
    Env {
        redis,
        sim,
        sim_base,
        queue,
        keys,
        cancel,
        status_callback: Default::default(),
    }
}

pub(crate) fn twilio_config(base: &str) -> TwilioConfig {
    TwilioConfig {
        account_sid: ACCOUNT.into(),
        auth: Auth::AuthToken(Secret::new(TOKEN)),
        sender: Sender::From("+15005550006".into()),
        api_base: base.into(),
        connect_timeout: Duration::from_millis(300),
        timeout: Duration::from_millis(500),
        validity_period: None,
    }
}

pub(crate) fn sms_config() -> SmsConfig {
    SmsConfig {
        pending_ttl: Duration::from_millis(3000),
        sent_ttl: Duration::from_secs(3600),
        reconcile_window: Duration::from_millis(1500),
        reconcile_poll: Duration::from_millis(200),
        retry_later_default: Duration::from_millis(200),
        status_callback_url: None,
        ..Default::default()
    }
}

pub(crate) fn worker_config(e: &Env) -> WorkerConfig {
    WorkerConfig {
        redis_url: e.redis.url(),
        queue: e.queue.clone(),
        concurrency: 8,
        lock_duration: Duration::from_millis(1000),
        lock_renew_time: Duration::from_millis(500),
        stalled_interval: Duration::from_millis(300),
        drain_delay: Duration::from_millis(300),
        shutdown_grace: Duration::from_secs(5),
        ..Default::default()
    }
}

pub(crate) struct Running {
    pub cancel: CancellationToken,
    pub handle: tokio::task::JoinHandle<Result<ringback::Stopped, ringback::Error>>,
    /// The processor's attempt counters, as the worker's /metrics reports them.
    pub stats: Arc<ringback::callbacks::sms::SmsStats>,
}

impl Running {
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

/// The SMS processor on the test's queue and simulator.
pub(crate) fn processor(
    e: &Env,
    conn: ringback::store::connection::Conn,
    sms: SmsConfig,
) -> SmsProcessor {
    SmsProcessor::new(
        sms,
        conn,
        TwilioClient::new(twilio_config(&e.sim_base)).unwrap(),
        "bull",
        &e.queue,
    )
}

pub(crate) async fn start_worker(e: &Env, sms: SmsConfig) -> Running {
    start_worker_via(e, sms, twilio_config(&e.sim_base)).await
}

/// [`start_worker`] with other Twilio settings (a Messaging Service sender, say).
pub(crate) async fn start_worker_via(e: &Env, sms: SmsConfig, twilio: TwilioConfig) -> Running {
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let processor = SmsProcessor::new(
        sms,
        conn,
        TwilioClient::new(twilio).unwrap(),
        "bull",
        &e.queue,
    );
    let stats = processor.stats();
    let worker = Worker::new(worker_config(e), processor).unwrap();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    Running {
        cancel,
        handle,
        stats,
    }
}

/// `ringback worker` as its binary runs it (the worker with its orphan sweep, heartbeat and
/// gauges) on `processor` at `concurrency`, as a task: stop it with [`Looping::stop`].
pub(crate) fn run_worker(e: &Env, processor: SmsProcessor, concurrency: usize) -> Looping {
    let config = WorkerConfig {
        concurrency,
        ..worker_config(e)
    };
    run_worker_with(config, processor)
}

/// [`run_worker`] with the worker's settings whole.
pub(crate) fn run_worker_with(config: WorkerConfig, processor: SmsProcessor) -> Looping {
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(ringback::edge::run::worker(
        config,
        processor.clone(),
        cancel.clone(),
        None,
        Some(processor),
    ));
    Looping { cancel, handle }
}

pub(crate) struct Looping {
    pub cancel: CancellationToken,
    pub handle: tokio::task::JoinHandle<Result<ringback::Stopped, ringback::edge::run::RunError>>,
}

impl Looping {
    pub(crate) async fn stop(self) {
        self.cancel.cancel();
        let _ = self.handle.await;
    }
}

/// The text of `run_id`'s callback.
pub(crate) fn body(run_id: &str) -> String {
    format!("Run {run_id} finished: 2 approvals needed")
}

pub(crate) fn data(run_id: &str) -> String {
    serde_json::json!({"runId": run_id, "to": TO, "body": format!("Run {run_id} finished: 2 approvals needed")}).to_string()
}

pub(crate) async fn add(e: &Env, data: &str) -> String {
    let mut c = e.redis.conn().await;
    add_job(
        &mut c,
        &e.keys,
        Add {
            data,
            opts: r#"{"attempts":3,"backoff":{"type":"fixed","delay":100}}"#,
            ..Default::default()
        },
    )
    .await
}

/// Wait until the job is completed or failed; returns (state, job hash).
pub(crate) async fn finished(e: &Env, id: &str) -> (&'static str, HashMap<String, String>) {
    finished_within(e, id, T).await
}

/// [`finished`], with its own deadline.
pub(crate) async fn finished_within(
    e: &Env,
    id: &str,
    within: Duration,
) -> (&'static str, HashMap<String, String>) {
    let c = e.redis.conn().await;
    let k = e.keys.clone();
    let state = wait_for(within, &format!("job {id} to finish"), || {
        let (mut c, k, id) = (c.clone(), k.clone(), id.to_string());
        async move {
            if c.zscore::<_, _, Option<f64>>(k.completed(), &id)
                .await
                .unwrap()
                .is_some()
            {
                return Some("completed");
            }
            if c.zscore::<_, _, Option<f64>>(k.failed(), &id)
                .await
                .unwrap()
                .is_some()
            {
                return Some("failed");
            }
            None
        }
    })
    .await;
    let mut c = e.redis.conn().await;
    (state, job_hash(&mut c, &e.keys, id).await)
}

/// The SIDs of the texts the simulator took for `run_id`.
pub(crate) fn sent_sids(e: &Env, run_id: &str) -> Vec<String> {
    let body = format!("Run {run_id} finished: 2 approvals needed");
    e.sim
        .store
        .all()
        .into_iter()
        .filter(|m| m.body.as_deref() == Some(body.as_str()))
        .map(|m| m.sid)
        .collect()
}

pub(crate) fn texts(e: &Env, run_id: &str) -> usize {
    sent_sids(e, run_id).len()
}

pub(crate) fn returnvalue(h: &HashMap<String, String>) -> serde_json::Value {
    serde_json::from_str(&h["returnvalue"]).unwrap()
}

/// The order of the timings a test runs at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timings {
    /// Lock shorter than the claim: recovery in about a second.
    Compressed,
    /// The defaults' order: the claim (pending TTL) shorter than the lock, the stall sweep
    /// after the claim's liveness ended (pending 3 s, lock 6 s, stall sweep every 2 s).
    Production,
}

impl Timings {
    /// (lock duration, stalled interval, pending TTL), in ms.
    pub(crate) fn settings(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Timings::Compressed => ("1000", "300", "3000"),
            Timings::Production => ("6000", "2000", "3000"),
        }
    }
}

/// Crashes abort the process, so they run in the `ringback` binary.
pub(crate) fn spawn_binary(e: &Env, crash_at: Option<&str>) -> Proc {
    spawn_worker(e, crash_at, Timings::Compressed, &[])
}

/// A child process killed when dropped, so a failing test leaves nothing running (a child
/// would also keep the test's inherited file descriptors open).
pub(crate) struct Proc(pub std::process::Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `ringback worker` binary on the test's queue at `timings`, with `extra` settings.
pub(crate) fn spawn_worker(
    e: &Env,
    crash_at: Option<&str>,
    timings: Timings,
    extra: &[(&str, &str)],
) -> Proc {
    let mut cmd = ringback_command(e, "worker", timings);
    if let Some(point) = crash_at {
        cmd.env("RINGBACK_CRASH_AT", point);
    }
    cmd.envs(extra.iter().copied());
    Proc(cmd.spawn().expect("ringback binary"))
}

/// `ringback <subcommand>` with the test's Redis, queue, simulator and window settings.
pub(crate) fn ringback_command(
    e: &Env,
    subcommand: &str,
    timings: Timings,
) -> std::process::Command {
    let (lock, stalled, pending) = timings.settings();
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_ringback"));
    cmd.arg(subcommand)
        .env("REDIS_URL", e.redis.url())
        .env("RINGBACK_QUEUE", &e.queue)
        .env("RINGBACK_CONCURRENCY", "4")
        .env("RINGBACK_LOCK_DURATION_MS", lock)
        .env("RINGBACK_STALLED_INTERVAL_MS", stalled)
        .env("RINGBACK_DRAIN_DELAY_MS", "300")
        .env("RINGBACK_PENDING_TTL_MS", pending)
        .env("RINGBACK_RECONCILE_WINDOW_MS", "1500")
        .env("RINGBACK_RECONCILE_POLL_MS", "200")
        .env("RINGBACK_METRICS_LISTEN", "off")
        .env("RINGBACK_DRILL", "1")
        .env("TWILIO_ACCOUNT_SID", ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", TOKEN)
        .env("TWILIO_FROM", "+15005550006")
        .env("TWILIO_API_BASE", &e.sim_base)
        .env("TWILIO_TIMEOUT_MS", "500")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if let Some(url) = e.status_callback.get() {
        cmd.env("RINGBACK_STATUS_CALLBACK_URL", url);
    }
    cmd
}

pub(crate) fn window(
    e: &Env,
    conn: ringback::store::connection::Conn,
    pending_ms: u64,
) -> ringback::callbacks::window::Window {
    let _ = e;
    ringback::callbacks::window::Window::new(
        conn,
        Default::default(),
        "agent-callback:".into(),
        ringback::callbacks::window::WindowTimes {
            pending_ttl: Duration::from_millis(pending_ms),
            lease: Duration::from_secs(30),
            sent_ttl: Duration::from_secs(3600),
            hold: Duration::from_millis(2 * pending_ms),
            poll_after: Duration::from_secs(60),
            replay_for: Duration::from_millis(500),
            lost_writes_window: Duration::from_secs(120),
        },
    )
}

/// `ringback serve`'s router on a port of its own, where the simulator's status callbacks land:
/// `sms` gets its status callback URL; answers the receipt store it writes.
pub(crate) async fn serve_receipts(
    e: &Env,
    sms: &mut SmsConfig,
) -> ringback::callbacks::receipts::Receipts {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_base = format!("http://{}", listener.local_addr().unwrap());
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let url = format!("{api_base}/api/notify/webhook/status");
    let _ = e.status_callback.set(url.clone());
    sms.status_callback_url = Some(url);
    let (receipts, escalator) = sms.after_send(conn.clone(), "bull", &e.queue);
    let replies = sms.replies(conn.clone(), "bull", &e.queue);
    let serve = ringback::edge::cli::ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        public_url: api_base.clone(),
        twilio_auth_token: Secret::new(TOKEN),
        twilio_auth_token_secondary: None,
        tokens: ringback::edge::access::Tokens::new(Secret::new("api-token-0123456789")),
        send_policy: Default::default(),
        drill_reports: None,
        inbound_forward: None,
    };
    let state = Arc::new(ringback::edge::api::ApiState::new(
        receipts.clone(),
        ringback::queue::calls::Calls::new(conn, e.keys.clone(), Default::default()),
        &e.queue,
        escalator,
        replies,
        &serve,
    ));
    let cancel = e.cancel.clone();
    tokio::spawn(async move {
        axum::serve(listener, ringback::edge::api::app(state))
            .with_graceful_shutdown(cancel.cancelled_owned())
            .await
    });
    receipts
}

/// The ids waiting in the callback queue's escalation queue, sorted.
pub(crate) async fn escalation_ids(e: &Env) -> Vec<String> {
    let mut c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let mut ids: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    ids.sort();
    ids
}

/// Replace the simulator's faults (its `PUT /sim/faults`).
pub(crate) async fn set_faults(e: &Env, faults: serde_json::Value) {
    let status = reqwest::Client::new()
        .put(format!("{}/sim/faults", e.sim_base))
        .json(&faults)
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_success(), "{status}");
}

/// A real replica of the test's Redis, once its link to the primary is up.
pub(crate) async fn replica_of(e: &Env) -> super::RedisServer {
    let replica = super::RedisServer::start();
    let mut r = replica.conn().await;
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(e.redis.port)
        .query_async(&mut r)
        .await
        .unwrap();
    wait_for(T, "the replica to sync", || {
        let mut r = r.clone();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut r)
                .await
                .ok()?;
            info.contains("master_link_status:up").then_some(())
        }
    })
    .await;
    replica
}

/// Quiet hours from an hour ago to an hour from now, read in `zone` (`None`: UTC); and when they
/// end (ms, to the minute).
pub(crate) fn quiet_around_now(zone: Option<&str>) -> (ringback::callbacks::quiet::Quiet, i64) {
    let now = jiff::Timestamp::now().to_zoned_datetime(jiff::tz::TimeZone::UTC);
    let hm = |z: &jiff::ZonedDateTime| format!("{:02}:{:02}", z.hour(), z.minute());
    let start = now
        .checked_sub(jiff::SignedDuration::from_mins(60))
        .unwrap();
    let end = now
        .checked_add(jiff::SignedDuration::from_mins(60))
        .unwrap();
    let name = zone.unwrap_or("UTC");
    let quiet = ringback::callbacks::quiet::Quiet {
        hours: format!("{}-{}", hm(&start), hm(&end)).parse().unwrap(),
        zone: jiff::tz::TimeZone::get(name).unwrap(),
        zone_name: name.into(),
    };
    let opens = end
        .with()
        .second(0)
        .subsec_nanosecond(0)
        .build()
        .unwrap()
        .timestamp()
        .as_millisecond();
    (quiet, opens)
}
