//! A real local Redis Cluster for tests: `scripts/redis-cluster` starts it (three masters with
//! one replica each, random free ports, a temp dir) and stops it on drop; the helpers here find
//! a key's slot and owner and make the faults the tests need: a manual failover, a master killed
//! with SIGKILL, and a slot migrated to another master.
//!
//! The helpers use blocking connections: call them from a multi-threaded tokio test (or
//! `spawn_blocking`) so the worker under test keeps running meanwhile.

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

/// How long a fault may take to settle (a killed master is failed over after the node timeout,
/// 2 s in `scripts/redis-cluster`, plus an election).
const SETTLE: Duration = Duration::from_secs(20);

pub(crate) struct RedisCluster {
    dir: tempfile::TempDir,
    /// `127.0.0.1:port` of every node, masters first (as created).
    pub seeds: Vec<String>,
    /// TLS only, with the certificates of `tests/fixtures/tls`.
    pub tls: bool,
}

/// One node as `CLUSTER NODES` lists it.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub id: String,
    pub port: u16,
    pub master: bool,
    /// For a replica, its master's id.
    pub master_id: Option<String>,
    pub failed: bool,
}

fn script() -> String {
    format!("{}/scripts/redis-cluster", env!("CARGO_MANIFEST_DIR"))
}

impl RedisCluster {
    /// Three masters, one replica each. A missing `redis-server` fails the test.
    pub(crate) fn start() -> Self {
        Self::start_with(false)
    }

    /// [`Self::start`], speaking only TLS (clients, cluster bus and replication), its
    /// certificates from `tests/fixtures/tls` (trust `ca.crt`).
    pub(crate) fn start_tls() -> Self {
        Self::start_with(true)
    }

    fn start_with(tls: bool) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut cmd = Command::new(script());
        cmd.arg("start")
            .arg(dir.path().join("nodes"))
            .env("REDIS_CLUSTER_OWNER_PID", std::process::id().to_string());
        if tls {
            cmd.env(
                "REDIS_CLUSTER_TLS_DIR",
                super::tls_fixture("ca.crt").parent().expect("fixtures dir"),
            );
        }
        let out = cmd.output().expect("scripts/redis-cluster runs");
        assert!(
            out.status.success(),
            "scripts/redis-cluster start failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let seeds = String::from_utf8_lossy(&out.stdout)
            .trim()
            .split(',')
            .map(str::to_string)
            .collect();
        RedisCluster { dir, seeds, tls }
    }

    /// `redis+cluster://` (`rediss+cluster://`) with every node as a seed.
    pub(crate) fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}+cluster://{}", self.seeds.join(","))
    }

    /// A client for one node (over TLS, trusting the fixtures' CA, on a TLS cluster).
    fn client(&self, port: u16) -> redis::Client {
        if self.tls {
            let ca = std::fs::read(super::tls_fixture("ca.crt")).expect("ca.crt");
            redis::Client::build_with_tls(
                format!("rediss://127.0.0.1:{port}"),
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(ca),
                },
            )
            .expect("node url")
        } else {
            redis::Client::open(format!("redis://127.0.0.1:{port}")).expect("node url")
        }
    }

    pub(crate) fn ports(&self) -> Vec<u16> {
        self.seeds
            .iter()
            .filter_map(|s| s.rsplit_once(':')?.1.parse().ok())
            .collect()
    }

    /// A plain connection to one node.
    pub(crate) fn node(&self, port: u16) -> redis::Connection {
        let conn = self
            .client(port)
            .get_connection_with_timeout(Duration::from_secs(2))
            .expect("node answers");
        conn.set_read_timeout(Some(Duration::from_secs(5))).ok();
        conn
    }

    /// A node still running (not killed), for questions about the cluster.
    fn any_live(&self) -> u16 {
        *self
            .ports()
            .iter()
            .find(|p| self.alive(**p))
            .expect("a live node")
    }

    fn alive(&self, port: u16) -> bool {
        self.client(port)
            .get_connection_with_timeout(Duration::from_millis(300))
            .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
            .is_ok()
    }

    /// The nodes as a live node sees them.
    pub(crate) fn nodes(&self) -> Vec<Node> {
        self.nodes_seen_by(self.any_live())
    }

    fn nodes_seen_by(&self, port: u16) -> Vec<Node> {
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.node(port))
            .expect("CLUSTER NODES");
        text.lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                let addr = f.get(1)?.split('@').next()?;
                let port = addr.rsplit_once(':')?.1.parse().ok()?;
                let flags = *f.get(2)?;
                Some(Node {
                    id: f[0].to_string(),
                    port,
                    master: flags.contains("master"),
                    master_id: (f.get(3) != Some(&"-")).then(|| f[3].to_string()),
                    failed: flags.contains("fail") && !flags.contains("fail?"),
                })
            })
            .collect()
    }

    /// The slot of `key` (its hash tag's, when it has one).
    pub(crate) fn slot_of(&self, key: &str) -> u16 {
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut self.node(self.any_live()))
            .expect("CLUSTER KEYSLOT")
    }

    /// The port of the master serving `slot`, as a live node sees it.
    pub(crate) fn owner_of_slot(&self, slot: u16) -> u16 {
        self.owner_seen_by(self.any_live(), slot)
            .expect("a master serves the slot")
    }

    fn owner_seen_by(&self, port: u16, slot: u16) -> Option<u16> {
        // each range: start, end, master [host, port, id, …], replicas…
        let ranges: Vec<Vec<redis::Value>> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut self.node(port))
            .ok()?;
        ranges.into_iter().find_map(|r| {
            let start: u16 = redis::from_redis_value_ref(r.first()?).ok()?;
            let end: u16 = redis::from_redis_value_ref(r.get(1)?).ok()?;
            let master: Vec<redis::Value> = redis::from_redis_value_ref(r.get(2)?).ok()?;
            let port: u16 = redis::from_redis_value_ref(master.get(1)?).ok()?;
            (start..=end).contains(&slot).then_some(port)
        })
    }

    /// The port of the master serving `key`.
    pub(crate) fn owner_of(&self, key: &str) -> u16 {
        self.owner_of_slot(self.slot_of(key))
    }

    /// A replica of the master on `master_port`, as the master sees it (waiting for one that
    /// is still joining, as an old master does after a failover).
    pub(crate) fn replica_of(&self, master_port: u16) -> u16 {
        let deadline = Instant::now() + SETTLE;
        loop {
            let nodes = self.nodes_seen_by(master_port);
            let replica = nodes
                .iter()
                .find(|n| n.port == master_port)
                .and_then(|master| {
                    nodes
                        .iter()
                        .find(|n| !n.failed && n.master_id.as_deref() == Some(&master.id))
                })
                .map(|n| n.port);
            if let Some(port) = replica {
                return port;
            }
            assert!(
                Instant::now() < deadline,
                "the master on {master_port} has no live replica"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A manual failover (`CLUSTER FAILOVER` on a replica of `master_port`): the replica
    /// catches up, takes over, and the old master becomes its replica. Returns the new master.
    /// Asked again if it has not happened after Redis's 5 s manual-failover timeout.
    pub(crate) fn failover(&self, master_port: u16) -> u16 {
        let replica = self.replica_of(master_port);
        for _ in 0..3 {
            let _: () = redis::cmd("CLUSTER")
                .arg("FAILOVER")
                .query(&mut self.node(replica))
                .expect("CLUSTER FAILOVER");
            let deadline = Instant::now() + Duration::from_secs(6);
            while Instant::now() < deadline {
                if self.is_master(replica) {
                    self.wait_ok();
                    return replica;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("the replica on {replica} did not take over from {master_port}");
    }

    /// The names of the clients connected to the node on `port` (`CLIENT LIST`).
    pub(crate) fn client_names(&self, port: u16) -> Vec<String> {
        let list: String = redis::cmd("CLIENT")
            .arg("LIST")
            .query(&mut self.node(port))
            .expect("CLIENT LIST");
        list.lines()
            .filter_map(|l| l.split(' ').find_map(|f| f.strip_prefix("name=")))
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    }

    /// The node on `port` says it is a master.
    pub(crate) fn is_master(&self, port: u16) -> bool {
        redis::cmd("ROLE")
            .query::<Vec<redis::Value>>(&mut self.node(port))
            .ok()
            .and_then(|r| redis::from_redis_value_ref::<String>(r.first()?).ok())
            .as_deref()
            == Some("master")
    }

    /// SIGKILL the node on `port` (as a crash would); its replica is promoted after the node
    /// timeout. Returns the replica that takes over when `port` was a master.
    pub(crate) fn kill(&self, port: u16) -> Option<u16> {
        let was_master = self.nodes().iter().any(|n| n.port == port && n.master);
        let replica = was_master.then(|| self.replica_of(port));
        let pidfile = self
            .dir
            .path()
            .join("nodes")
            .join(port.to_string())
            .join("redis.pid");
        let pid = std::fs::read_to_string(&pidfile).expect("pid file");
        let ok = Command::new("kill")
            .arg("-9")
            .arg(pid.trim())
            .status()
            .expect("kill")
            .success();
        assert!(ok, "kill -9 {pid}");
        if let Some(replica) = replica {
            self.settle_until("the replica to be promoted", || self.is_master(replica));
        }
        replica
    }

    /// The master on `master_port` dies `behind` after its replica last heard from it, and the
    /// replica takes over without it (`CLUSTER FAILOVER TAKEOVER`): the replica frozen and its
    /// link cut (what the kernel had buffered for it is all it will read) while the master takes
    /// writes; those die with the master, and the replica is promoted that far behind, as after
    /// a failover that waited for no replica. Returns the new master.
    pub(crate) fn kill_behind(&self, master_port: u16, behind: Duration) -> u16 {
        let replica = self.replica_of(master_port);
        let signal = |port: u16, sig: &str| {
            let pid = std::fs::read_to_string(
                self.dir
                    .path()
                    .join("nodes")
                    .join(port.to_string())
                    .join("redis.pid"),
            )
            .expect("pid file");
            assert!(
                Command::new("kill")
                    .arg(sig)
                    .arg(pid.trim())
                    .status()
                    .expect("kill")
                    .success(),
                "kill {sig} {pid}"
            );
        };
        signal(replica, "-STOP");
        let _: redis::RedisResult<i64> = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("replica")
            .query(&mut self.node(master_port));
        std::thread::sleep(behind);
        signal(master_port, "-9");
        signal(replica, "-CONT");
        let _: () = redis::cmd("CLUSTER")
            .arg("FAILOVER")
            .arg("TAKEOVER")
            .query(&mut self.node(replica))
            .expect("CLUSTER FAILOVER TAKEOVER");
        self.settle_until("the replica to take over", || self.is_master(replica));
        replica
    }

    /// Move `slot` to the master on `to` with its keys, as `redis-cli --cluster reshard` does:
    /// IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in batches, then
    /// SETSLOT NODE on every master. Clients see ASK (and TRYAGAIN for multi-key commands)
    /// while it runs, MOVED after. `between_batches` runs after each batch (to let work go on).
    pub(crate) fn migrate_slot(&self, slot: u16, to: u16, mut between_batches: impl FnMut()) {
        let from = self.owner_of_slot(slot);
        assert_ne!(from, to, "the slot is already on {to}");
        let nodes = self.nodes();
        let id = |port: u16| {
            nodes
                .iter()
                .find(|n| n.port == port)
                .map(|n| n.id.clone())
                .expect("node id")
        };
        let (from_id, to_id) = (id(from), id(to));
        let setslot = |port: u16, how: &str, node: &str| {
            let _: () = redis::cmd("CLUSTER")
                .arg("SETSLOT")
                .arg(slot)
                .arg(how)
                .arg(node)
                .query(&mut self.node(port))
                .unwrap_or_else(|e| panic!("SETSLOT {slot} {how} on {port}: {e}"));
        };
        setslot(to, "IMPORTING", &from_id);
        setslot(from, "MIGRATING", &to_id);
        let mut source = self.node(from);
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(10)
                .query(&mut source)
                .expect("GETKEYSINSLOT");
            if keys.is_empty() {
                break;
            }
            let _: redis::Value = redis::cmd("MIGRATE")
                .arg("127.0.0.1")
                .arg(to)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys)
                .query(&mut source)
                .expect("MIGRATE");
            between_batches();
        }
        // the target first, then the source, then everyone (the order redis-cli uses)
        setslot(to, "NODE", &to_id);
        setslot(from, "NODE", &to_id);
        for n in nodes.iter().filter(|n| n.master && !n.failed) {
            if n.port != from && n.port != to {
                setslot(n.port, "NODE", &to_id);
            }
        }
        self.settle_until("every node to see the slot moved", || {
            self.ports()
                .into_iter()
                .filter(|p| self.alive(*p))
                .all(|p| self.owner_seen_by(p, slot) == Some(to))
        });
    }

    /// A master other than `port` (a migration target).
    pub(crate) fn other_master(&self, port: u16) -> u16 {
        self.nodes()
            .iter()
            .find(|n| n.master && !n.failed && n.port != port)
            .map(|n| n.port)
            .expect("another master")
    }

    fn settle_until(&self, what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + SETTLE;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
        self.wait_ok();
    }

    /// Wait until every live node says the cluster is ok.
    pub(crate) fn wait_ok(&self) {
        let deadline = Instant::now() + SETTLE;
        loop {
            let ok = self
                .ports()
                .into_iter()
                .filter(|p| self.alive(*p))
                .all(|p| {
                    redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query::<String>(&mut self.node(p))
                        .is_ok_and(|i| i.contains("cluster_state:ok"))
                });
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the cluster did not come back ok"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Each node's log, for a failing test.
    pub(crate) fn logs(&self) -> HashMap<u16, String> {
        self.ports()
            .into_iter()
            .map(|p| {
                let log = self
                    .dir
                    .path()
                    .join("nodes")
                    .join(p.to_string())
                    .join("redis.log");
                (p, std::fs::read_to_string(log).unwrap_or_default())
            })
            .collect()
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        if std::thread::panicking() {
            for (port, log) in self.logs() {
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                eprintln!("--- node {port} log (last lines) ---");
                for line in tail.iter().rev() {
                    eprintln!("{line}");
                }
            }
        }
        let _ = Command::new(script())
            .arg("stop")
            .arg(self.dir.path().join("nodes"))
            .status();
    }
}
