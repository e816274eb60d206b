//! Redis faults with real processes: Redis frozen (`SIGSTOP`) for longer than the
//! lock, and Redis at `maxmemory` with `noeviction` while a text is in flight. The `ringback`
//! binary runs at the defaults' order of timings (claim liveness 3 s < lock 6 s, stall sweep
//! every 2 s); texts are counted at the simulator.

use crate::common;

use std::time::Duration;

use common::callbacks::*;
use common::{RedisServer, wait_for};
use redis::AsyncCommands;
use ringback::store::keys::{QueueKeys, WindowKeys};

fn free_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// The sum of a series' values (every label set whose line starts with `name{`).
async fn scrape_sum(addr: &str, name: &str) -> f64 {
    let text = reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test]
async fn redis_frozen_longer_than_the_lock_loses_locks_and_texts_each_run_once() {
    let e = env("sigstop", r#"{"create":[{"fault":"slow","delay_ms":250}]}"#).await;
    let runs: Vec<String> = (0..40).map(|i| format!("frozen-{i}")).collect();
    let mut ids = vec![];
    for run in &runs {
        ids.push(add(&e, &data(run)).await);
    }
    let addrs = [free_addr(), free_addr()];
    let _workers: Vec<Proc> = addrs
        .iter()
        .map(|a| {
            spawn_worker(
                &e,
                None,
                Timings::Production,
                &[("RINGBACK_METRICS_LISTEN", a.as_str())],
            )
        })
        .collect();
    wait_for(T, "the first texts", || async {
        (e.sim.store.all().len() >= 4).then_some(())
    })
    .await;
    // Frozen for 8 s: every lock (6 s) expires on Redis's own clock, mid-flight.
    e.redis.pause();
    tokio::time::sleep(Duration::from_secs(8)).await;
    e.redis.resume();
    for id in &ids {
        let (state, _) = finished_within(&e, id, Duration::from_secs(90)).await;
        assert_eq!(state, "completed", "{id}");
    }
    for run in &runs {
        assert_eq!(texts(&e, run), 1, "{run}: one text");
    }
    let mut lost = 0.0;
    for a in &addrs {
        lost += scrape_sum(a, "ringback_lock_lost_total").await;
    }
    assert!(lost >= 1.0, "the freeze cost some locks: {lost}");
}

#[tokio::test]
async fn at_maxmemory_nothing_is_acknowledged_as_sent_without_its_marker() {
    let e = env("oom", r#"{"create":[{"fault":"slow","delay_ms":1200}]}"#).await;
    let id = add(&e, &data("oom-1")).await;
    let metrics = free_addr();
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut cmd = ringback_command(&e, "worker", Timings::Production);
    cmd.env("RINGBACK_METRICS_LISTEN", &metrics)
        .env("TWILIO_TIMEOUT_MS", "2000")
        // still shorter than the 6 s lock (the defaults' order), and longer than a call + 2 s
        .env("RINGBACK_PENDING_TTL_MS", "4500")
        .env("RUST_LOG", "ringback=info")
        .stderr(log.reopen().unwrap());
    let _worker = Proc(cmd.spawn().expect("ringback binary"));
    let claim = WindowKeys::new("agent-callback:", "oom-1").claim;
    let mut c = e.redis.conn().await;
    let show_log = || std::fs::read_to_string(log.path()).unwrap_or_default();
    let _show = ShowOnPanic(&show_log);
    wait_for(T, "the claim", || {
        let mut c = c.clone();
        let claim = claim.clone();
        async move {
            let v: Option<String> = c.get(&claim).await.ok()?;
            v.filter(|v| v.starts_with("pending")).map(|_| ())
        }
    })
    .await;
    // Twilio is taking the message now; Redis stops accepting writes.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .arg("maxmemory")
        .arg("1")
        .query_async(&mut c)
        .await
        .unwrap();
    wait_for(T, "the text", || async {
        (texts(&e, "oom-1") == 1).then_some(())
    })
    .await;
    wait_for(T, "the refused writes counted", || async {
        let n = scrape_sum(&metrics, "ringback_redis_errors_total").await;
        (n >= 1.0).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let v: Option<String> = c.get(&claim).await.unwrap();
    assert!(
        v.as_deref().is_some_and(|v| v.starts_with("pending")),
        "no sent marker could be written, so none is claimed: {v:?}"
    );
    let completed: bool = c
        .zscore::<_, _, Option<f64>>(e.keys.completed(), &id)
        .await
        .unwrap()
        .is_some();
    assert!(
        !completed,
        "the job is not acknowledged while its marker is missing"
    );
    let oom_series = scrape_text(&metrics).await;
    assert!(
        oom_series.contains(r#"kind="oom""#),
        "the refusal is counted as oom:\n{oom_series}"
    );
    let logged = std::fs::read_to_string(log.path()).unwrap();
    assert!(logged.contains("OOM"), "the error is in the log:\n{logged}");

    // Memory back: everything goes through, once.
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query_async(&mut c)
        .await
        .unwrap();
    let (state, h) = finished_within(&e, &id, Duration::from_secs(60)).await;
    assert_eq!(state, "completed");
    let sids = sent_sids(&e, "oom-1");
    assert_eq!(sids.len(), 1, "one text");
    assert_eq!(returnvalue(&h)["messageSid"], sids[0].as_str());
    let v: Option<String> = c.get(&claim).await.unwrap();
    assert!(v.is_some_and(|v| v.starts_with("sent")));
}

async fn scrape_text(addr: &str) -> String {
    reqwest::get(format!("http://{addr}/metrics"))
        .await
        .expect("scrape")
        .text()
        .await
        .unwrap()
}

/// Prints the worker's log when the test fails.
struct ShowOnPanic<'a>(&'a dyn Fn() -> String);

impl Drop for ShowOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("worker log:\n{}", (self.0)());
        }
    }
}

/// An explicit `RINGBACK_REDIS_WAIT_REPLICAS` on one Redis with a real replica: every claim and
/// every sent marker waits for it (`WAIT` rides with each), the fused finish (which carries no
/// `WAIT`) off; each run texted once.
#[tokio::test]
async fn an_explicit_replica_wait_covers_every_claim_and_marker_on_one_redis() {
    let e = env("replica-wait", "").await;
    let _replica = replica_of(&e).await;
    let runs = ["rw1", "rw2", "rw3"];
    let mut ids = vec![];
    for run in runs {
        ids.push(add(&e, &data(run)).await);
    }
    let mut cmd = ringback_command(&e, "worker", Timings::Compressed);
    cmd.env("RINGBACK_REDIS_WAIT_REPLICAS", "1");
    let worker = Proc(cmd.spawn().unwrap());
    for id in &ids {
        assert_eq!(finished(&e, id).await.0, "completed");
    }
    drop(worker);
    for run in runs {
        assert_eq!(texts(&e, run), 1, "{run}");
    }
    let mut c = e.redis.conn().await;
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap();
    let waits: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_wait:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(
        waits >= 2 * runs.len() as u64,
        "a WAIT per claim and per marker: {waits}\n{stats}"
    );
}

/// A Redis that takes a worker's connection and then does not answer its first write (paused
/// past the command timeout at start: a failover, a slow fork) is waited out as an unreachable
/// Redis is: the worker starts once Redis answers and texts the waiting run, never exits 1.
#[tokio::test]
async fn a_worker_starting_while_redis_holds_its_writes_waits_and_texts() {
    let e = env("start-paused", "").await;
    add(&e, &data("start-paused-1")).await;
    let mut admin = e.redis.conn().await;
    // longer than the command timeout (10 s): the start-up's first write times out
    common::pause_writes(&mut admin, 12_000).await;
    let mut w = spawn_worker(&e, None, Timings::Compressed, &[]);
    let texted = wait_for(Duration::from_secs(40), "the run texted", || {
        let e = &e;
        let exited = w.0.try_wait().expect("wait");
        async move {
            assert!(exited.is_none(), "the worker exited at start: {exited:?}");
            (texts(e, "start-paused-1") == 1).then_some(())
        }
    })
    .await;
    assert_eq!(texted, ());
    assert!(w.0.try_wait().expect("wait").is_none(), "still running");
}

/// `WAIT`s the primary has answered so far (`INFO commandstats`).
async fn waits_answered(c: &mut redis::aio::MultiplexedConnection) -> u64 {
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(c)
        .await
        .unwrap();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_wait:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// `WAITAOF` calls the server answered so far.
async fn waitaof_calls(c: &mut redis::aio::MultiplexedConnection) -> usize {
    let stats: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(c)
        .await
        .unwrap();
    stats
        .lines()
        .find_map(|l| l.strip_prefix("cmdstat_waitaof:calls="))
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Waits for `run`'s escalation, and checks it is `held` for `reason` and the run untexted.
async fn assert_held(e: &Env, run: &str, reason: &str) {
    let id = format!("escalation:{run}");
    wait_for(T, "the held run's escalation", || async {
        escalation_ids(e).await.contains(&id).then_some(())
    })
    .await;
    assert_eq!(texts(e, run), 0, "not texted on a claim not acknowledged");
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let job: String = e
        .redis
        .conn()
        .await
        .hget(esc.job(&id), "data")
        .await
        .unwrap();
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    assert_eq!(job["kind"], "held", "{job}");
    assert!(job["reason"].as_str().unwrap().contains(reason), "{job}");
}

/// One endpoint with a replica, `RINGBACK_REDIS_WAIT_REPLICAS` unset (a managed primary): the
/// claim and the sent marker of each run wait for the replica once one is connected (none
/// before), and a replica that stops answering makes the `WAIT` come back short: counted, and the
/// run still texted once.
#[tokio::test]
async fn one_endpoint_waits_for_a_connected_replica_by_default_and_counts_a_short_wait() {
    let e = env("replica-wait-default", "").await;
    let mut primary = e.redis.conn().await;
    // as `ringback worker` runs: its safety-net loop looks at the replicas every interval
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let mut config = sms_config();
    // a send held past this is escalated `held`
    config.hold_escalate = Duration::from_secs(2);
    let w = run_worker(&e, processor(&e, conn, config), 1);
    let id = add(&e, &data("rw-0")).await;
    assert_eq!(finished(&e, &id).await.0, "completed");
    assert_eq!(waits_answered(&mut primary).await, 0, "no replica: no WAIT");

    let replica = replica_of(&e).await;
    // the worker looks at the endpoint's replicas again within a few seconds
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    for i in 1..=3 {
        let id = add(&e, &data(&format!("rw-{i}"))).await;
        assert_eq!(finished(&e, &id).await.0, "completed");
    }
    let waited = waits_answered(&mut primary).await;
    assert!(
        waited >= 6,
        "{waited} WAIT(s) for 3 runs: a claim and a marker each"
    );

    // the replica stops answering: the claim's WAIT comes back short, counted, and the send is
    // held, not made (a failover now could lose the claim, and the retried job would text
    // again); held past the bound it is escalated `held`; once the replica answers, the run is
    // texted once
    let short_before = ringback::store::replicas::replica_wait_timeouts();
    replica.pause();
    let id = add(&e, &data("rw-paused")).await;
    assert_held(&e, "rw-paused", "replicas did not acknowledge").await;
    assert!(ringback::store::replicas::replica_wait_timeouts() > short_before);
    replica.resume();
    assert_eq!(finished(&e, &id).await.0, "completed");
    for i in 0..=3 {
        assert_eq!(texts(&e, &format!("rw-{i}")), 1);
    }
    assert_eq!(texts(&e, "rw-paused"), 1);
    w.stop().await;
}

/// A Redis restarted from its append-only file as it stood a second before it died (what
/// `appendfsync everysec` leaves after a power loss or a kernel crash): the claims, sent
/// markers and completions of that second are gone, and the jobs that texted in it run again.
/// The restarted Redis is another server (its `run_id`), so every callback claimed afresh in
/// the window after it looks for its text first (the worker's own kept answers, Twilio's list):
/// at the defaults' order, two workers and hundreds of callbacks in flight, no run is texted
/// twice and every job finishes.
#[tokio::test]
async fn a_redis_restarted_from_an_aof_a_second_old_texts_no_run_twice() {
    let mut e = env(
        "aof-loss",
        r#"{"create":[{"fault":"slow","delay_ms":100}],"callbacks":[{"delay_ms":1000}]}"#,
    )
    .await;
    e.redis.append_only().await;
    // receipts name their run: one that comes after the restart proves a send Redis forgot
    let _receipts = serve_receipts(&e, &mut sms_config()).await;
    let runs: Vec<String> = (0..300).map(|i| format!("aof-{i}")).collect();
    let mut ids = vec![];
    for run in &runs {
        ids.push(add(&e, &data(run)).await);
    }
    let _workers: Vec<Proc> = (0..2)
        .map(|_| spawn_worker(&e, None, Timings::Production, &[]))
        .collect();
    wait_for(T, "the first hundred texts", || async {
        (e.sim.store.all().len() >= 100).then_some(())
    })
    .await;
    let copy = e.redis.copy_aof();
    let at_copy = e.sim.store.all().len();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let at_crash = e.sim.store.all().len();
    e.redis.restart_from_aof(&copy);
    assert!(
        at_crash >= at_copy + 20,
        "texts in the lost second: {at_copy} -> {at_crash}"
    );
    let mut c = e.redis.conn().await;
    let known: Option<String> = c
        .hget(ringback::store::keys::redis_identity(), "run")
        .await
        .unwrap();
    assert!(known.is_some(), "the identity came back with the AOF");
    for id in &ids {
        let (state, _) = finished_within(&e, id, Duration::from_secs(120)).await;
        assert_eq!(state, "completed", "{id}");
    }
    let twice: Vec<&String> = runs.iter().filter(|r| texts(&e, r) != 1).collect();
    assert!(twice.is_empty(), "not texted exactly once: {twice:?}");
    let changed: Option<String> = c
        .hget(ringback::store::keys::redis_identity(), "changed_at")
        .await
        .unwrap();
    assert!(changed.is_some(), "the change was recorded");
    // a run texted by the other worker, whose receipt was lost too, is found at Twilio unlinked:
    // escalated as probably sent, never texted again; only runs of the lost second are
    let escalated = escalation_ids(&e).await.len();
    eprintln!(
        "lost second: {} texts; escalated as probably sent: {escalated}",
        at_crash - at_copy
    );
    assert!(escalated <= at_crash - at_copy, "{escalated} escalations");
}

/// `RINGBACK_REDIS_WAIT_AOF` on Valkey (a Redis with `WAITAOF`): each claim waits until it is in
/// the append-only file on disk before its text goes out, so a restart from that file cannot
/// forget it. A server that syncs nothing (`appendfsync no`) never acknowledges: the send is
/// held, not made, and escalated `held` past the bound; once the server syncs, the run is texted
/// once. Debian's Redis 7.0, which has no `WAITAOF`, stops the worker at start with the command
/// named, as does a Valkey without an append-only file.
#[tokio::test]
async fn a_claim_waits_for_the_disk_where_asked_and_is_held_until_it_is_there() {
    let mut e = env_on(RedisServer::start_valkey(), "aof-wait", "").await;
    e.redis.append_only().await;
    let mut c = e.redis.conn().await;
    let admin = c.clone();
    let fsync = |policy: &'static str| {
        let mut c = admin.clone();
        async move {
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg("appendfsync")
                .arg(policy)
                .query_async(&mut c)
                .await
                .unwrap();
        }
    };
    fsync("no").await;
    // one job at a time: each next job is the finishing call's to claim, where a fused finish
    // would claim it without a wait
    let aof = [
        ("RINGBACK_REDIS_WAIT_AOF", "1"),
        ("RINGBACK_HOLD_ESCALATE_MS", "2000"),
        ("RINGBACK_CONCURRENCY", "1"),
    ];
    let _w = spawn_worker(&e, None, Timings::Production, &aof);
    let id = add(&e, &data("aof-held")).await;
    assert_held(&e, "aof-held", "disk did not have it").await;
    fsync("everysec").await;
    assert_eq!(finished(&e, &id).await.0, "completed");
    assert_eq!(texts(&e, "aof-held"), 1);
    // every claim waits, also the next job's, which a fused finish would claim unwaited
    let before = waitaof_calls(&mut c).await;
    let mut ids = vec![];
    for i in 0..5 {
        ids.push(add(&e, &data(&format!("aof-{i}"))).await);
    }
    for id in &ids {
        assert_eq!(finished(&e, id).await.0, "completed");
    }
    for i in 0..5 {
        assert_eq!(texts(&e, &format!("aof-{i}")), 1);
    }
    let waited = waitaof_calls(&mut c).await - before;
    assert!(waited >= 5, "{waited} WAITAOF(s) for 5 runs: one per claim");

    // a server without WAITAOF, and one without an append-only file: refused at start
    for redis in [RedisServer::start(), RedisServer::start_valkey()] {
        let out = ringback_command(&e, "worker", Timings::Production)
            .env("REDIS_URL", redis.url())
            .envs(aof)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("Redis refuses WAITAOF"), "{stderr}");
    }
}

/// A replica listed connected that never acknowledges (a `redis-cli --replica`: it syncs, then
/// never sends `REPLCONF ACK`), at the defaults (`RINGBACK_REDIS_WAIT_REPLICAS` unset): alone,
/// it holds texts only until its silence passes the bound (10 s), then it is named in the log,
/// counted (`ringback_redis_replicas_silent`) and not waited for; beside a real replica, the
/// writes wait for the real one. Each run texted once.
#[tokio::test]
async fn a_replica_that_never_acknowledges_is_named_and_holds_no_text_past_its_bound() {
    let e = env("silent-replica", "").await;
    let _silent = Proc(
        std::process::Command::new("redis-cli")
            .args(["-p", &e.redis.port.to_string(), "--replica"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("redis-cli runs (the redis-tools package, beside redis-server)"),
    );
    let mut primary = e.redis.conn().await;
    wait_for(T, "the silent replica synced", || {
        let mut c = primary.clone();
        async move {
            let info: String = redis::cmd("INFO")
                .arg("replication")
                .query_async(&mut c)
                .await
                .ok()?;
            info.contains("state=online").then_some(())
        }
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("worker.log");
    let addr = free_addr();
    let mut cmd = ringback_command(&e, "worker", Timings::Compressed);
    cmd.env("RINGBACK_METRICS_LISTEN", &addr)
        .stderr(std::fs::File::create(&log_path).unwrap());
    let _worker = Proc(cmd.spawn().unwrap());
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let _show = ShowOnPanic(&log);
    let started = std::time::Instant::now();
    let mut ids = vec![];
    for i in 0..20 {
        ids.push(add(&e, &data(&format!("silent-{i}"))).await);
    }
    for id in &ids {
        let (state, _) = finished_within(&e, id, Duration::from_secs(60)).await;
        assert_eq!(state, "completed", "{id}");
    }
    for i in 0..20 {
        assert_eq!(texts(&e, &format!("silent-{i}")), 1, "silent-{i}");
    }
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "texts flow once the silence passed its bound: {:?}",
        started.elapsed()
    );
    assert_eq!(
        scrape_sum(&addr, "ringback_redis_replicas_silent").await,
        1.0
    );
    let said = log();
    assert!(
        said.contains("has not acknowledged") && said.contains("127.0.0.1:0"),
        "the silent replica named: {said}"
    );

    // beside a real replica: writes wait for it, the silent one still named
    let _replica = replica_of(&e).await;
    // the worker looks at the endpoint's replicas again within a few seconds
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    let before = waits_answered(&mut primary).await;
    let mut ids = vec![];
    for i in 0..3 {
        ids.push(add(&e, &data(&format!("beside-{i}"))).await);
    }
    for id in &ids {
        assert_eq!(finished(&e, id).await.0, "completed", "{id}");
    }
    let waited = waits_answered(&mut primary).await - before;
    assert!(
        waited >= 6,
        "{waited} WAIT(s) for 3 runs: a claim and a marker each"
    );
    for i in 0..3 {
        assert_eq!(texts(&e, &format!("beside-{i}")), 1);
    }
    assert_eq!(
        scrape_sum(&addr, "ringback_redis_replicas_silent").await,
        1.0
    );
}
