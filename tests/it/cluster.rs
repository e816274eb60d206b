//! ringback on a real Redis Cluster (three masters, one replica each; scripts/redis-cluster):
//! a worker given `REDIS_URL=redis+cluster://…` and the `{bull}` prefix processes jobs a Node
//! `Queue` on an ioredis `Cluster` added, also after every node's script cache is emptied;
//! through a manual failover, a master killed with SIGKILL and a migration of the queue's slot
//! no job is lost and none finishes twice, and the blocking fetch still wakes the worker at once
//! afterwards, from the slot's new master. `WAIT` for a replica goes to the key's master and is
//! skipped once that master has no replica. The binary takes the cluster URL (`worker`,
//! `serve`, `status`, `check-config`) and names every bad seed of a wrong one. The SMS worker
//! texts each run once (Twilio simulator) through a failover of the queue's master.

use crate::common;

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::RedisCluster;
use common::queue_name;
use redis::AsyncCommands;
use ringback::store::connection::Conn;
use ringback::store::keys::QueueKeys;
use ringback::{Job, JobContext, Outcome, Processor, Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

/// BullMQ's documented Cluster prefix: every key of a queue in the slot of `bull`.
const PREFIX: &str = "{bull}";

/// Completes each job after `work`, counting how often each job ran.
#[derive(Clone)]
struct Counting {
    runs: Arc<Mutex<HashMap<String, u32>>>,
    work: Duration,
}

impl Counting {
    fn new(work: Duration) -> Self {
        Self {
            runs: Default::default(),
            work,
        }
    }

    fn runs(&self) -> HashMap<String, u32> {
        self.runs.lock().unwrap().clone()
    }
}

impl Processor for Counting {
    async fn process(&self, job: &Job, _ctx: &JobContext) -> Outcome {
        *self.runs.lock().unwrap().entry(job.id.clone()).or_default() += 1;
        tokio::time::sleep(self.work).await;
        Outcome::Completed(serde_json::json!({"ok": true}))
    }
}

struct Running {
    cancel: CancellationToken,
    handle: tokio::task::JoinHandle<Result<ringback::Stopped, ringback::Error>>,
}

impl Running {
    fn start(cfg: WorkerConfig, p: Counting) -> Self {
        let worker = Worker::new(cfg, p).expect("valid config");
        let cancel = CancellationToken::new();
        let handle = tokio::spawn(worker.run(cancel.clone()));
        Running { cancel, handle }
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.handle.await.expect("worker task").expect("worker run");
    }
}

fn config(cluster: &RedisCluster, queue: &str) -> WorkerConfig {
    WorkerConfig {
        redis_url: cluster.url(),
        redis_tls: tls_of(cluster),
        prefix: PREFIX.to_string(),
        queue: queue.to_string(),
        concurrency: 4,
        // production's order: the stall sweep comes after a lock has expired
        lock_duration: Duration::from_millis(2000),
        lock_renew_time: Duration::from_millis(1000),
        stalled_interval: Duration::from_millis(1000),
        shutdown_grace: Duration::from_secs(5),
        // long: a job added to an idle queue is only picked up at once if BZPOPMIN wakes us
        drain_delay: Duration::from_secs(10),
        ..Default::default()
    }
}

/// Add `n` jobs (ids `j<from>`…; BullMQ refuses integer custom ids) with a Node BullMQ `Queue` on an ioredis `Cluster`.
fn node_add(cluster: &RedisCluster, queue: &str, from: usize, n: usize) {
    node_add_data(cluster, queue, from, n, r#"{"i":$i}"#)
}

/// [`node_add`] with each job's data from `template` (`$i` replaced by the job's number).
fn node_add_data(cluster: &RedisCluster, queue: &str, from: usize, n: usize, template: &str) {
    let root = env!("CARGO_MANIFEST_DIR");
    let script = r#"
        const { Cluster } = require('ioredis');
        const { Queue } = require('bullmq6');
        const [seeds, name, prefix, from, n, template, ca] = process.argv.slice(1);
        (async () => {
          const nodes = seeds.split(',').map((s) => ({ host: s.split(':')[0], port: Number(s.split(':')[1]) }));
          const redisOptions = { maxRetriesPerRequest: null };
          if (ca) redisOptions.tls = { ca: require('fs').readFileSync(ca) };
          const connection = new Cluster(nodes, { redisOptions });
          const queue = new Queue(name, { connection, prefix });
          const jobs = [];
          for (let i = 0; i < Number(n); i++) {
            const data = JSON.parse(template.split('$i').join(String(Number(from) + i)));
            jobs.push({ name: 'agent-callback', data, opts: { jobId: `j${Number(from) + i}` } });
          }
          await queue.addBulk(jobs);
          await queue.close();
          await connection.quit();
        })().catch((e) => { console.error(e); process.exit(1); });
    "#;
    let out = Command::new("node")
        .current_dir(format!("{root}/node-harness"))
        .arg("-e")
        .arg(script)
        .arg(cluster.seeds.join(","))
        .arg(queue)
        .arg(PREFIX)
        .arg(from.to_string())
        .arg(n.to_string())
        .arg(template)
        .args(cluster.tls.then(|| common::tls_fixture("ca.crt")))
        .output()
        .expect("node runs (the Node harness is installed by scripts/lib.sh ensure_node_harness)");
    assert!(
        out.status.success(),
        "node producer failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The TLS settings a client of `cluster` needs: the fixtures' CA on a TLS cluster.
fn tls_of(cluster: &RedisCluster) -> ringback::store::connection::RedisTls {
    ringback::store::connection::RedisTls {
        ca_file: cluster.tls.then(|| common::tls_fixture("ca.crt")),
        ..Default::default()
    }
}

async fn conn(cluster: &RedisCluster) -> Conn {
    let client = ringback::store::connection::client(&cluster.url(), &tls_of(cluster)).unwrap();
    ringback::store::connection::commands(&client)
        .await
        .unwrap()
}

/// Wait until `n` jobs are completed; fail after `timeout`.
async fn completed(c: &mut Conn, k: &QueueKeys, n: usize, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    loop {
        let done: usize = c.zcard(k.completed()).await.unwrap_or(0);
        if done >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{done} of {n} jobs completed after {timeout:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Every one of `n` jobs finished exactly once: in `completed`, one `completed` event each,
/// nothing left waiting or active.
async fn each_finished_once(c: &mut Conn, k: &QueueKeys, n: usize) {
    let done: Vec<String> = c.zrange(k.completed(), 0, -1).await.unwrap();
    let mut done = done;
    done.sort_by_key(|id| id[1..].parse::<usize>().unwrap_or(usize::MAX));
    let want: Vec<String> = (0..n).map(|i| format!("j{i}")).collect();
    assert_eq!(done, want, "every job completed");
    let reply: redis::streams::StreamRangeReply = c.xrange_all(k.events()).await.unwrap();
    let mut finishes: HashMap<String, u32> = HashMap::new();
    for e in &reply.ids {
        if e.get::<String>("event").as_deref() == Some("completed") {
            *finishes
                .entry(e.get::<String>("jobId").unwrap_or_default())
                .or_default() += 1;
        }
    }
    let twice: Vec<_> = finishes.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "jobs finished more than once: {twice:?}");
    let (wait, active): (usize, usize) = (
        c.llen(k.wait()).await.unwrap(),
        c.llen(k.active()).await.unwrap(),
    );
    assert_eq!((wait, active), (0, 0), "nothing left waiting or active");
}

/// A job added to the idle queue is taken within a second: the blocking `BZPOPMIN` woke the
/// worker (its drain delay is 10 s).
async fn wakes_at_once(cluster: &RedisCluster, c: &mut Conn, k: &QueueKeys, id: usize) {
    // let the worker go idle on the marker first
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    node_add(cluster, &queue_of(k), id, 1);
    let added = started.elapsed();
    completed(c, k, id + 1, Duration::from_secs(3)).await;
    let took = started.elapsed() - added;
    assert!(
        took < Duration::from_secs(2),
        "an idle worker took {took:?} to pick up a job: the blocking fetch is not waking it"
    );
}

/// The worker's blocking connection (named as BullMQ names it) is on the master on `port`.
async fn blocking_on(cluster: &RedisCluster, q: &str, port: u16) {
    use base64::Engine as _;
    let name = format!(
        "{PREFIX}:{}",
        base64::engine::general_purpose::STANDARD.encode(q)
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !cluster.client_names(port).contains(&name) {
        assert!(
            Instant::now() < deadline,
            "no blocking connection {name} on {port}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// When the number of completed jobs changed, polled every 10 ms (what a fault costs the
/// workers: the longest pause between two completions).
struct Completions {
    cancel: CancellationToken,
    handle: tokio::task::JoinHandle<Vec<Instant>>,
}

impl Completions {
    fn watch(mut c: Conn, k: QueueKeys) -> Self {
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let handle = tokio::spawn(async move {
            let (mut changes, mut last) = (vec![Instant::now()], 0usize);
            while !stop.is_cancelled() {
                if let Ok(n) = c.zcard::<_, usize>(k.completed()).await
                    && n != last
                {
                    last = n;
                    changes.push(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            changes
        });
        Self { cancel, handle }
    }

    async fn stop(self) -> Vec<Instant> {
        self.cancel.cancel();
        self.handle.await.expect("watch task")
    }
}

/// The longest time without a completion between `from` and `to`.
fn longest_pause(changes: &[Instant], from: Instant, to: Instant) -> Duration {
    let mut points: Vec<Instant> = changes
        .iter()
        .copied()
        .filter(|t| *t > from && *t < to)
        .collect();
    points.insert(0, from);
    points.push(to);
    points
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

fn queue_of(k: &QueueKeys) -> String {
    // `{bull}:<queue>:`
    k.base()
        .trim_end_matches(':')
        .rsplit_once(':')
        .map(|(_, q)| q.to_string())
        .expect("queue name in the key base")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn worker_on_a_cluster_processes_node_produced_jobs_and_survives_empty_script_caches() {
    let cluster = RedisCluster::start();
    let q = queue_name("cluster-basic");
    let k = QueueKeys::new(PREFIX, &q);
    node_add(&cluster, &q, 0, 50);
    let p = Counting::new(Duration::ZERO);
    let w = Running::start(config(&cluster, &q), p.clone());
    let mut c = conn(&cluster).await;
    assert!(c.is_cluster());
    completed(&mut c, &k, 50, Duration::from_secs(20)).await;
    each_finished_once(&mut c, &k, 50).await;
    blocking_on(&cluster, &q, cluster.owner_of(&k.marker())).await;
    wakes_at_once(&cluster, &mut c, &k, 50).await;

    // every node's script cache emptied (a restart, a failover to a replica that never ran
    // them): the next calls fall back to EVAL on whichever node owns their keys
    let flush_all = || {
        for port in cluster.ports() {
            let _: () = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query(&mut cluster.node(port))
                .unwrap();
        }
    };
    flush_all();
    node_add(&cluster, &q, 51, 20);
    completed(&mut c, &k, 71, Duration::from_secs(20)).await;
    // readiness loads every script on every node (SCRIPT LOAD goes to all of them)
    flush_all();
    let commands = ringback::queue::calls::Calls::new(c.clone(), k.clone(), Default::default());
    commands.ensure_scripts().await.unwrap();
    let hashes: Vec<&str> = ringback::store::scripts::scripts()
        .all()
        .iter()
        .map(|s| s.hash())
        .collect();
    for port in cluster.ports() {
        let there: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(&hashes)
            .query(&mut cluster.node(port))
            .unwrap();
        assert!(
            there.iter().all(|t| *t),
            "every script loaded on node {port}"
        );
    }
    w.stop().await;
    assert!(p.runs().values().all(|n| *n == 1), "each job ran once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn failover_and_a_killed_master_lose_no_job_and_finish_none_twice() {
    let cluster = RedisCluster::start();
    let q = queue_name("cluster-failover");
    let k = QueueKeys::new(PREFIX, &q);
    let n = 600;
    node_add(&cluster, &q, 0, n);
    let p = Counting::new(Duration::from_millis(20));
    let w = Running::start(config(&cluster, &q), p.clone());
    let mut c = conn(&cluster).await;
    let owner = cluster.owner_of(&k.wait());

    completed(&mut c, &k, 30, Duration::from_secs(20)).await;
    let watch = Completions::watch(c.clone(), k.clone());
    let cl = &cluster;
    let failover_at = Instant::now();
    let promoted = tokio::task::block_in_place(|| cl.failover(owner));
    let at_failover: usize = c.zcard(k.completed()).await.unwrap();
    assert!(
        at_failover < n,
        "the failover came mid-run ({at_failover} of {n} done)"
    );
    completed(&mut c, &k, at_failover + 60, Duration::from_secs(20)).await;
    let at_kill: usize = c.zcard(k.completed()).await.unwrap();
    let kill_at = Instant::now();
    let taken_over = tokio::task::block_in_place(|| cl.kill(promoted));
    assert!(
        at_kill < n,
        "the master was killed mid-run ({at_kill} of {n} done)"
    );
    let taken_over = taken_over.expect("a replica took over");

    completed(&mut c, &k, n, Duration::from_secs(40)).await;
    let changes = watch.stop().await;
    eprintln!(
        "longest pause between two completions: {:?} around the manual failover, {:?} around the SIGKILL (node timeout 2 s)",
        longest_pause(&changes, failover_at, kill_at),
        longest_pause(&changes, kill_at, Instant::now()),
    );
    each_finished_once(&mut c, &k, n).await;
    // idle now: the blocking connection went to where the slot is
    assert_eq!(cluster.owner_of(&k.marker()), taken_over);
    blocking_on(&cluster, &q, taken_over).await;
    wakes_at_once(&cluster, &mut c, &k, n).await;
    w.stop().await;
    let again: Vec<_> = p.runs().into_iter().filter(|(_, n)| *n > 1).collect();
    // the jobs in flight when the master died may run again (their locks expired during the
    // outage), and a finish not yet replicated is lost with the master: at-least-once, each
    // finished once, and only around the kill (4 in flight, a few writes of replication lag)
    assert!(
        again.len() <= 8,
        "only jobs around the kill ran again: {again:?}"
    );
    eprintln!("jobs run twice (in flight at the SIGKILL): {again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn migrating_the_queues_slot_loses_no_job_and_finishes_none_twice() {
    let cluster = RedisCluster::start();
    let q = queue_name("cluster-migrate");
    let k = QueueKeys::new(PREFIX, &q);
    let n = 400;
    node_add(&cluster, &q, 0, n);
    let p = Counting::new(Duration::from_millis(20));
    let w = Running::start(config(&cluster, &q), p.clone());
    let mut c = conn(&cluster).await;
    let slot = cluster.slot_of(&k.wait());
    let from = cluster.owner_of_slot(slot);
    let to = cluster.other_master(from);

    completed(&mut c, &k, 30, Duration::from_secs(20)).await;
    let cl = &cluster;
    tokio::task::block_in_place(|| {
        cl.migrate_slot(slot, to, || std::thread::sleep(Duration::from_millis(20)))
    });
    assert_eq!(cluster.owner_of(&k.wait()), to);
    let at_move: usize = c.zcard(k.completed()).await.unwrap();
    assert!(
        at_move < n,
        "the slot moved mid-run ({at_move} of {n} done)"
    );

    completed(&mut c, &k, n, Duration::from_secs(40)).await;
    each_finished_once(&mut c, &k, n).await;
    // idle now: the blocking connection went to where the slot is
    blocking_on(&cluster, &q, to).await;
    wakes_at_once(&cluster, &mut c, &k, n).await;
    w.stop().await;
    let again: Vec<_> = p.runs().into_iter().filter(|(_, n)| *n > 1).collect();
    assert!(again.is_empty(), "a migration loses no write: {again:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wait_for_replicas_waits_on_the_keys_master_and_not_without_a_replica() {
    use ringback::store::replicas::ReplicaWait;
    use ringback::store::scripts::Survive;
    let cluster = RedisCluster::start();
    let wait = ReplicaWait {
        replicas: None,
        timeout: Duration::from_millis(100),
        aof: false,
    };
    let client = ringback::store::connection::client(&cluster.url(), &Default::default())
        .unwrap()
        .with_wait(wait);
    let mut c = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let key = "agent-callback:run-1";
    let _ = tracing_subscriber::fmt().with_test_writer().try_init();

    // the cost, printed: a write alone, then a write and its WAIT in a round trip of its own, then
    // both in one pipeline (docs/cluster.md, "Durability")
    let rounds = 1000;
    let started = Instant::now();
    for i in 0..rounds {
        let _: () = c.set(key, i).await.unwrap();
    }
    let write = started.elapsed();
    let started = Instant::now();
    for i in 0..rounds {
        let _: () = c.set(key, i).await.unwrap();
        assert_eq!(c.wait_for_replicas(key).await.unwrap(), 1);
    }
    let with_wait = started.elapsed();
    // the same in one pipeline: the write and its WAIT in one round trip to the key's master
    let started = Instant::now();
    for i in 0..rounds {
        let mut set = redis::cmd("SET");
        set.arg(key).arg(i);
        let ((), acked) = c.write_durably(key, Survive::Failover, &set).await.unwrap();
        assert_eq!(acked.acked, 1);
    }
    let pipelined = started.elapsed();
    let per = |d: Duration| d.as_micros() as f64 / rounds as f64;
    eprintln!(
        "per write: {:.0} µs alone, {:.0} µs then wait_for_replicas (+{:.0}), {:.0} µs with write_durably (+{:.0})",
        per(write),
        per(with_wait),
        per(with_wait) - per(write),
        per(pipelined),
        per(pipelined) - per(write),
    );

    // a script the node has not cached: NOSCRIPT as alone, so the caller re-sends with EVAL
    let body = "return redis.call('SET', KEYS[1], ARGV[1])";
    let mut evalsha = redis::cmd("EVALSHA");
    evalsha
        .arg(redis::Script::new(body).get_hash())
        .arg(1)
        .arg(key)
        .arg("by-script");
    let e = c
        .write_durably::<redis::Value>(key, Survive::Failover, &evalsha)
        .await
        .unwrap_err();
    assert_eq!(
        e.kind(),
        redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
    );
    let mut eval = redis::cmd("EVAL");
    eval.arg(body).arg(1).arg(key).arg(rounds - 1);
    let (_, acked) = c
        .write_durably::<redis::Value>(key, Survive::Failover, &eval)
        .await
        .unwrap();
    assert_eq!(acked.acked, 1);

    // the replica has the write
    let master = cluster.owner_of(key);
    let replica = cluster.replica_of(master);
    let mut r = cluster.node(replica);
    let _: () = redis::cmd("READONLY").query(&mut r).unwrap();
    let seen: i64 = redis::cmd("GET").arg(key).query(&mut r).unwrap();
    assert_eq!(seen, rounds - 1);

    // with the master's replica gone, the default stops waiting once the cluster says so
    tokio::task::block_in_place(|| cluster.kill(replica));
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let _: () = c.set(key, "after").await.unwrap();
        let started = Instant::now();
        let acked = c.wait_for_replicas(key).await.unwrap();
        if acked == 0 && started.elapsed() < Duration::from_millis(50) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "still waiting for a dead replica"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // an explicit count is waited for (and times out) whatever the topology
    let client = client.with_wait(ReplicaWait {
        replicas: Some(1),
        timeout: Duration::from_millis(100),
        aof: false,
    });
    let mut c = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let _: () = c.set(key, "explicit").await.unwrap();
    let started = Instant::now();
    assert_eq!(c.wait_for_replicas(key).await.unwrap(), 0);
    assert!(started.elapsed() >= Duration::from_millis(100));
}

/// The binary with an empty environment but for what the test sets.
fn ringback(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringback"));
    cmd.args(args)
        .env_clear()
        .env("NO_COLOR", "1")
        .env("RUST_LOG", "info");
    cmd
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_binary_takes_a_cluster_url_for_every_subcommand() {
    // a bad cluster URL: every bad seed named at once, before anything connects
    let out = ringback(&["check-config"])
        .env("REDIS_URL", "redis+cluster://a,b:x,c:7000")
        .env("RINGBACK_PROCESSOR", "scripted")
        .env("RINGBACK_DRILL", "1")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for part in ["REDIS_URL", "`a`", "`b:x`"] {
        assert!(err.contains(part), "names {part}: {err}");
    }

    let cluster = RedisCluster::start();
    let q = queue_name("cluster-bin");
    let k = QueueKeys::new(PREFIX, &q);
    let out = ringback(&["check-config"])
        .env("REDIS_URL", cluster.url())
        .env("RINGBACK_PREFIX", PREFIX)
        .env("RINGBACK_PROCESSOR", "scripted")
        .env("RINGBACK_DRILL", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );

    // `ringback worker` on the cluster takes what a Node Queue on an ioredis Cluster added
    node_add(&cluster, &q, 0, 20);
    let mut worker = ringback(&["worker"])
        .env("REDIS_URL", cluster.url())
        .env("RINGBACK_PREFIX", PREFIX)
        .env("RINGBACK_QUEUE", &q)
        .env("RINGBACK_PROCESSOR", "scripted")
        .env("RINGBACK_DRILL", "1")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut c = conn(&cluster).await;
    completed(&mut c, &k, 20, Duration::from_secs(20)).await;
    each_finished_once(&mut c, &k, 20).await;
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(worker.id().to_string())
        .status();
    let status = tokio::task::block_in_place(|| worker.wait()).unwrap();
    assert!(status.success(), "worker exit: {status}");

    // `ringback serve` on the cluster: ready once every script is loaded on every node
    ringback::twilio::client::install_tls_provider();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut serve = ringback(&["serve"])
        .env("REDIS_URL", cluster.url())
        .env("RINGBACK_PREFIX", PREFIX)
        .env("RINGBACK_QUEUE", &q)
        .env("RINGBACK_LISTEN", format!("127.0.0.1:{port}"))
        .env("RINGBACK_PUBLIC_URL", "http://127.0.0.1")
        .env("RINGBACK_API_TOKEN", "api-token-0123456789")
        .env("TWILIO_AUTH_TOKEN", "sim-token")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let http = reqwest::Client::new();
    let ready = common::wait_for(Duration::from_secs(20), "serve to be ready", || {
        let (http, url) = (http.clone(), format!("http://127.0.0.1:{port}/readyz"));
        async move {
            let r = http.get(url).send().await.ok()?;
            (r.status() == 200).then_some(r.status())
        }
    })
    .await;
    assert_eq!(ready, 200);
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(serve.id().to_string())
        .status();
    let status = tokio::task::block_in_place(|| serve.wait()).unwrap();
    assert!(status.success(), "serve exit: {status}");

    // `ringback status` reads through the cluster too: a run never seen is told apart (exit 3)
    let out = ringback(&["status", "run-none"])
        .env("REDIS_URL", cluster.url())
        .env("RINGBACK_PREFIX", PREFIX)
        .env("RINGBACK_QUEUE", &q)
        .output()
        .unwrap();
    assert!(
        out.status.code() == Some(3) && String::from_utf8_lossy(&out.stdout).contains("no record"),
        "status: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rediss_cluster_urls_speak_tls_with_the_configured_ca() {
    let cluster = RedisCluster::start_tls();
    let q = queue_name("cluster-tls");
    let k = QueueKeys::new(PREFIX, &q);
    assert!(cluster.url().starts_with("rediss+cluster://"));

    // the system's roots do not trust the test CA: no connection without RINGBACK_REDIS_CA_FILE
    let untrusted =
        ringback::store::connection::client(&cluster.url(), &Default::default()).unwrap();
    let err = ringback::store::connection::commands(&untrusted)
        .await
        .expect_err("an untrusted cluster");
    assert!(err.to_string().contains("rediss+cluster://"), "{err}");

    node_add(&cluster, &q, 0, 20);
    let p = Counting::new(Duration::ZERO);
    let w = Running::start(config(&cluster, &q), p.clone());
    let mut c = conn(&cluster).await;
    completed(&mut c, &k, 20, Duration::from_secs(20)).await;
    each_finished_once(&mut c, &k, 20).await;
    blocking_on(&cluster, &q, cluster.owner_of(&k.marker())).await;
    wakes_at_once(&cluster, &mut c, &k, 20).await;
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sms_worker_on_a_cluster_texts_each_run_once_through_a_failover() {
    const TO: &str = "+15558675310";
    let (sim, sim_base, stop_sim) = start_sim().await;
    let cluster = RedisCluster::start();
    let q = queue_name("cluster-sms");
    let k = QueueKeys::new(PREFIX, &q);
    let n = 40;
    // the callback jobs the legacy producer adds, from Node on an ioredis Cluster
    node_add_data(
        &cluster,
        &q,
        0,
        n,
        &format!(r#"{{"runId":"run-$i","to":"{TO}","body":"Run run-$i finished"}}"#),
    );
    let mut worker = sms_worker(&cluster, &q, &sim_base);
    let mut c = conn(&cluster).await;
    completed(&mut c, &k, 10, Duration::from_secs(30)).await;
    // the queue's master fails over mid-run (the claim keys live on every master)
    let owner = cluster.owner_of(&k.wait());
    let cl = &cluster;
    tokio::task::block_in_place(|| cl.failover(owner));
    // at the defaults (a 30 s lock, a stall check every 30 s), a job whose finishing call the
    // failover cut is recovered by stall recovery: up to a lock and a check interval later
    completed(&mut c, &k, n, Duration::from_secs(100)).await;
    each_finished_once(&mut c, &k, n).await;
    let stats = sim.store.stats();
    assert_eq!(stats.total, n, "one text per run: {:?}", stats.by_to_body);
    assert!(
        stats.by_to_body.iter().all(|b| b.count == 1),
        "{:?}",
        stats.by_to_body
    );
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(worker.id().to_string())
        .status();
    let status = tokio::task::block_in_place(|| worker.wait()).unwrap();
    assert!(status.success(), "worker exit: {status}");
    stop_sim.cancel();
}

/// A shard's master dies with its replica a second and a half behind, promoted without a wait
/// (`RINGBACK_REDIS_WAIT_REPLICAS=0`), while two workers at the defaults' order (claim 3 s <
/// lock 6 s) text 300 runs: the promoted master never saw that time's claims, sent markers and
/// completions, and the jobs that texted then run again. Each claim compares the identity kept
/// in its slot with the server that now serves it, and inside the lost-writes window looks for
/// its text first (the worker's kept answers, Twilio's list): no run texted twice, every job
/// finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_master_promoted_a_second_behind_texts_no_run_twice() {
    const TO: &str = "+15558675310";
    let (sim, sim_base, stop_sim) =
        start_sim_with(r#"{"create":[{"fault":"slow","delay_ms":100}]}"#).await;
    let cluster = RedisCluster::start();
    let q = queue_name("cluster-behind");
    let k = QueueKeys::new(PREFIX, &q);
    let n = 300;
    node_add_data(
        &cluster,
        &q,
        0,
        n,
        &format!(r#"{{"runId":"behind-$i","to":"{TO}","body":"Run behind-$i finished"}}"#),
    );
    let production = [
        ("RINGBACK_REDIS_WAIT_REPLICAS", "0"),
        ("RINGBACK_LOCK_DURATION_MS", "6000"),
        ("RINGBACK_STALLED_INTERVAL_MS", "2000"),
        ("RINGBACK_PENDING_TTL_MS", "3000"),
        ("RINGBACK_RECONCILE_WINDOW_MS", "1500"),
        ("RINGBACK_RECONCILE_POLL_MS", "200"),
        ("TWILIO_TIMEOUT_MS", "500"),
    ];
    let mut workers: Vec<common::callbacks::Proc> = (0..2)
        .map(|_| {
            let mut w = sms_worker_command(&cluster, &q, &sim_base);
            w.envs(production);
            common::callbacks::Proc(w.spawn().unwrap())
        })
        .collect();
    let texts = || sim.store.stats().total;
    let deadline = Instant::now() + Duration::from_secs(60);
    while texts() < 100 {
        assert!(Instant::now() < deadline, "the first hundred texts");
        for w in &mut workers {
            assert!(w.0.try_wait().unwrap().is_none(), "a worker exited");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let owner = cluster.owner_of(&k.wait());
    let before = texts();
    let cl = &cluster;
    let promoted =
        tokio::task::block_in_place(|| cl.kill_behind(owner, Duration::from_millis(1500)));
    assert!(texts() >= before + 20, "texts while the replica was behind");
    let mut c = conn(&cluster).await;
    completed(&mut c, &k, n, Duration::from_secs(120)).await;
    let stats = sim.store.stats();
    let twice: Vec<_> = stats.by_to_body.iter().filter(|b| b.count != 1).collect();
    assert!(twice.is_empty(), "not texted exactly once: {twice:?}");
    assert_eq!(stats.total, n, "one text per run");
    // the slots of the promoted master that served a claim since noticed the change: their
    // identity names the server it replaced
    let mut node = cluster.node(promoted);
    let ids: Vec<String> = redis::cmd("KEYS")
        .arg("ringback:redis-identity:*")
        .query(&mut node)
        .unwrap();
    assert!(
        ids.len() > 1000,
        "every slot's identity noted: {}",
        ids.len()
    );
    let changed = ids
        .iter()
        .filter(|id| {
            redis::cmd("HEXISTS")
                .arg(id.as_str())
                .arg("was")
                .query::<bool>(&mut node)
                .unwrap()
        })
        .count();
    assert!(
        changed > 0,
        "a change was recorded in the promoted master's slots"
    );
    for w in &mut workers {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(w.0.id().to_string())
            .status();
    }
    for w in &mut workers {
        let status = tokio::task::block_in_place(|| w.0.wait()).unwrap();
        assert!(status.success(), "worker exit: {status}");
    }
    stop_sim.cancel();
}

const SIM_ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";

/// The Twilio simulator on a port of its own: it, its base URL, and what stops it.
async fn start_sim() -> (
    std::sync::Arc<ringback::twilio_sim::Simulator>,
    String,
    CancellationToken,
) {
    start_sim_with("").await
}

/// [`start_sim`] with the simulator's faults (`twilio_sim::faults`' JSON).
async fn start_sim_with(
    faults: &str,
) -> (
    std::sync::Arc<ringback::twilio_sim::Simulator>,
    String,
    CancellationToken,
) {
    use ringback::twilio::Secret;
    use ringback::twilio_sim::{SimConfig, Simulator, server};
    let sim = Simulator::new(
        SimConfig {
            account_sid: SIM_ACCOUNT.into(),
            auth_token: Secret::new("sim-token"),
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
    let stop_sim = CancellationToken::new();
    tokio::spawn(server::serve(listener, sim.clone(), stop_sim.clone()));
    (sim, sim_base, stop_sim)
}

/// `ringback worker` (SMS) on the cluster's queue `q`, texting through the simulator.
fn sms_worker(cluster: &RedisCluster, q: &str, sim_base: &str) -> std::process::Child {
    sms_worker_command(cluster, q, sim_base).spawn().unwrap()
}

/// [`sms_worker`], not yet started.
fn sms_worker_command(cluster: &RedisCluster, q: &str, sim_base: &str) -> Command {
    let mut cmd = ringback(&["worker"]);
    cmd.env("REDIS_URL", cluster.url())
        .env("RINGBACK_PREFIX", PREFIX)
        .env("RINGBACK_QUEUE", q)
        .env("RINGBACK_CONCURRENCY", "4")
        .env("RINGBACK_DRAIN_DELAY_MS", "300")
        .env("RINGBACK_METRICS_LISTEN", "off")
        .env("TWILIO_ACCOUNT_SID", SIM_ACCOUNT)
        .env("TWILIO_AUTH_TOKEN", "sim-token")
        .env("TWILIO_FROM", "+15005550006")
        .env("TWILIO_API_BASE", sim_base)
        .env("TWILIO_TIMEOUT_MS", "2000")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    cmd
}

/// runIds with braces, which the legacy worker texts: every record of the run lives in its
/// claim key's slot (a tag of that slot when the claim key's own tag cannot be reused), so the
/// window's scripts never go CROSSSLOT; each run texted once, keyed as the legacy worker keys it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn braced_runids_keep_every_record_in_the_claim_keys_slot() {
    let (sim, sim_base, stop_sim) = start_sim().await;
    let cluster = RedisCluster::start();
    let q = queue_name("cluster-braces");
    let k = QueueKeys::new(PREFIX, &q);
    let c = conn(&cluster).await;
    let commands = ringback::queue::calls::Calls::new(c.clone(), k.clone(), Default::default());
    let runs = ["a{b}c", "{}", "}{", "a}b", "plain"];
    for (i, run) in runs.iter().enumerate() {
        let data = serde_json::json!({"runId": run, "to": "+15558675310", "body": format!("braces case {i}")});
        commands
            .add_job(
                Some(&format!("j{i}")),
                "agent-callback",
                &data.to_string(),
                "{}",
            )
            .await
            .unwrap();
    }
    let mut worker = sms_worker(&cluster, &q, &sim_base);
    let mut c = c;
    completed(&mut c, &k, runs.len(), Duration::from_secs(30)).await;
    each_finished_once(&mut c, &k, runs.len()).await;
    for (i, run) in runs.iter().enumerate() {
        let body = format!("braces case {i}");
        let sent = sim.store.list(|m| m.body.as_deref() == Some(body.as_str()));
        assert_eq!(sent.len(), 1, "{run}");
        let w = ringback::store::keys::WindowKeys::new("agent-callback:", run);
        assert_eq!(
            cluster.slot_of(&w.attempt),
            cluster.slot_of(&w.claim),
            "{run}"
        );
        let claim: String = c.get(&w.claim).await.unwrap();
        assert!(claim.starts_with("sent:SM"), "{run}: {claim}");
        let state: String = c.hget(&w.attempt, "state").await.unwrap();
        assert_eq!(state, "sent", "{run}");
    }
    let _ = worker.kill();
    let _ = worker.wait();
    stop_sim.cancel();
}
