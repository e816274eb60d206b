//! Redis Cluster: the `redis+cluster://` URL, the cluster client and its retries, which master
//! serves a key's slot now (for the blocking connection), and `WAIT` for a replica after the
//! writes the exactly-once promise rests on.
//!
//! Replication is asynchronous: a master killed right after acknowledging a write can lose it
//! with the failover. [`ReplicaWait`] makes a caller wait, after such a write, until a replica
//! has it too (or a timeout), on the same node and connection that took the write.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis::cluster::ClusterClient;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
use redis::{AsyncConnectionConfig, Value};

use crate::connection::{COMMAND_TIMEOUT, CONNECT_TIMEOUT, RedisTls, certificates};

/// Retries of one cluster command on redirects and failover errors (see [`Cluster::new`]).
const CLUSTER_RETRIES: u32 = 8;

/// The seed nodes of a `redis+cluster://[user:password@]host:port[,host:port…]` URL (or
/// `rediss+cluster://`), as one `redis://` (`rediss://`) URL each; `None` for any other
/// scheme. Every bad seed is named in one error, so one fix makes the URL right.
pub fn seeds(url: &str) -> Result<Option<Vec<String>>, ringback_shared::settings::ConfigError> {
    use ringback_shared::settings::ConfigError;
    let Some((scheme, rest)) = [
        ("redis+cluster://", "redis"),
        ("rediss+cluster://", "rediss"),
    ]
    .iter()
    .find_map(|(prefix, scheme)| url.strip_prefix(prefix).map(|rest| (*scheme, rest))) else {
        return Ok(None);
    };
    let bad = |problem: String| ConfigError::new("REDIS_URL", problem);
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    if !query.is_empty() {
        return Err(bad(format!(
            "a cluster URL takes no `?{query}`: give host:port seeds only"
        )));
    }
    let (rest, db) = rest.split_once('/').unwrap_or((rest, ""));
    if !(db.is_empty() || db == "0") {
        return Err(bad(format!(
            "a Redis Cluster has only database 0, not `/{db}`"
        )));
    }
    let (auth, hosts) = match rest.rsplit_once('@') {
        Some((auth, hosts)) => (format!("{auth}@"), hosts),
        None => (String::new(), rest),
    };
    let mut seeds = Vec::new();
    let mut problems = Vec::new();
    for seed in hosts.split(',') {
        let seed = seed.trim();
        let port = seed
            .rsplit_once(':')
            .map(|(host, port)| (host, port.parse::<u16>()));
        match port {
            Some((host, Ok(port))) if !host.is_empty() && port != 0 => {
                seeds.push(format!("{scheme}://{auth}{seed}"))
            }
            _ if seed.is_empty() => problems.push("an empty seed (a stray comma?)".to_string()),
            _ => problems.push(format!("`{seed}` is not host:port")),
        }
    }
    if !problems.is_empty() {
        return Err(bad(format!(
            "bad cluster seed{}: {}",
            if problems.len() > 1 { "s" } else { "" },
            problems.join(", ")
        )));
    }
    Ok(Some(seeds))
}

/// A Redis Cluster: the redis-rs client for commands, and what it takes to open a plain
/// connection to one node (the blocking connection goes to the master owning the queue's slot).
#[derive(Clone)]
pub(crate) struct Cluster {
    pub(crate) client: ClusterClient,
    /// The seed URLs, one per node, credentials included.
    pub(crate) seeds: Vec<String>,
    /// `redis://[auth@]` or `rediss://[auth@]`: a node's URL is this and its `host:port`.
    node_prefix: String,
    certs: Option<redis::TlsCertificates>,
}

impl Cluster {
    /// A cluster client on `seeds` (plain `redis://` or `rediss://` URLs, one per node).
    ///
    /// redis-rs follows `MOVED` and `ASK` at once and refreshes its slot map; it waits and retries
    /// on `TRYAGAIN`, `CLUSTERDOWN` and a dropped connection (a failover), up to [`CLUSTER_RETRIES`]
    /// times with a short jittered backoff, all within [`COMMAND_TIMEOUT`].
    ///
    /// A command re-sent after a dropped connection may have run already, with the same
    /// arguments (the same lock token or claim token). On one Redis our own loops re-run a call
    /// whose reply was lost too, so every script already checks the lock token or claim first:
    /// a re-run never finishes a job twice; at worst a job taken by a lost `moveToActive` reply
    /// waits for the stall sweep. The window's scripts must take a claim held under the
    /// caller's own token as the caller's.
    pub(crate) fn new(
        seeds: Vec<String>,
        tls: &RedisTls,
    ) -> Result<Self, ringback_shared::error::Error> {
        let certs = certificates(tls)?;
        let mut builder = ClusterClient::builder(seeds.clone())
            .connection_timeout(CONNECT_TIMEOUT)
            .response_timeout(COMMAND_TIMEOUT)
            .retries(CLUSTER_RETRIES)
            .min_retry_wait(50)
            .max_retry_wait(1_000)
            .retry_wait_formula(100, 2);
        if let Some(certs) = &certs {
            builder = builder.certs(certs.clone());
        }
        let first = seeds.first().map(String::as_str).unwrap_or_default();
        let scheme_auth_end = first
            .rfind('@')
            .map_or_else(|| first.find("://").map_or(0, |i| i + 3), |i| i + 1);
        Ok(Self {
            client: builder.build()?,
            node_prefix: first[..scheme_auth_end].to_string(),
            seeds,
            certs,
        })
    }

    /// A plain client for the node at `host:port`, with the seeds' credentials and TLS.
    fn node(&self, host: &str, port: u16) -> redis::RedisResult<redis::Client> {
        let url = format!("{}{host}:{port}", self.node_prefix);
        match &self.certs {
            None => redis::Client::open(url),
            Some(certs) => redis::Client::build_with_tls(url, certs.clone()),
        }
    }

    /// A client for the master that serves `key`'s slot now, asked of the seeds in turn.
    pub(crate) async fn master_of(&self, key: &str) -> redis::RedisResult<redis::Client> {
        let mut last = None;
        for seed in &self.seeds {
            let node = match &self.certs {
                None => redis::Client::open(seed.as_str())?,
                Some(certs) => redis::Client::build_with_tls(seed.as_str(), certs.clone())?,
            };
            match slot_master(&node, key).await {
                Ok((host, port)) => {
                    // a node that announces no address is reached where we reached the seed
                    let host = match host.as_str() {
                        "" | "?" => seed_host(seed),
                        _ => host,
                    };
                    return self.node(&host, port);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| {
            redis::RedisError::from((redis::ErrorKind::Client, "no cluster seed node"))
        }))
    }
}

/// The `host` of a `scheme://[auth@]host:port` seed URL.
pub(crate) fn seed_host(seed: &str) -> String {
    let rest = seed.split_once("://").map_or(seed, |(_, r)| r);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    rest.rsplit_once(':').map_or(rest, |(h, _)| h).to_string()
}

/// Ask `node` which master serves `key`'s slot: `CLUSTER KEYSLOT`, then `CLUSTER SLOTS`
/// (each range: start, end, then the master as `[host, port, id, …]`, then its replicas).
async fn slot_master(node: &redis::Client, key: &str) -> redis::RedisResult<(String, u16)> {
    let config = AsyncConnectionConfig::new()
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_connection_timeout(Some(CONNECT_TIMEOUT));
    let mut conn = node
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg(key)
        .query_async(&mut conn)
        .await?;
    let ranges: Vec<Vec<Value>> = redis::cmd("CLUSTER")
        .arg("SLOTS")
        .query_async(&mut conn)
        .await?;
    for range in ranges {
        let (Some(start), Some(end), Some(master)) = (range.first(), range.get(1), range.get(2))
        else {
            continue;
        };
        let (start, end): (i64, i64) = (
            redis::from_redis_value_ref(start)?,
            redis::from_redis_value_ref(end)?,
        );
        if (start..=end).contains(&slot) {
            let master: Vec<Value> = redis::from_redis_value_ref(master)?;
            let (Some(host), Some(port)) = (master.first(), master.get(1)) else {
                continue;
            };
            let (host, port): (String, u16) = (
                redis::from_redis_value_ref(host)?,
                redis::from_redis_value_ref(port)?,
            );
            return Ok((host, port));
        }
    }
    Err(redis::RedisError::from((
        redis::ErrorKind::Server(redis::ServerErrorKind::ClusterDown),
        "no master serves the slot",
        format!("slot {slot} of {key}"),
    )))
}

/// How many replicas must have a claim or a sent marker before the caller goes on: `WAIT
/// replicas timeout` after the write, on the node that took it.
///
/// `replicas: None` (the default) is 1 when the key's master has a connected replica now: on a
/// cluster by `CLUSTER SLOTS`, on one endpoint (a primary with replicas, a managed Redis) by
/// `INFO replication`, each looked at again every few seconds; 0 (no `WAIT`) otherwise. A
/// `WAIT` that times out is counted ([`replica_wait_timeouts`]) and logged, and the caller goes
/// on: the write is on the master and will most likely reach a replica; what a failover in that
/// window can lose is said in docs/cluster.md ("Durability").
///
/// `aof` (`RINGBACK_REDIS_WAIT_AOF`): a claim also waits until the node that took it has it in
/// its append-only file on disk (`WAITAOF 1 0`, Redis 7.2 and later, Valkey), so a restart from
/// that file cannot forget a claim whose text went out. Not acknowledged in time, the send is
/// held, as for a replica.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplicaWait {
    /// Replicas that must acknowledge each claim and sent marker (`RINGBACK_REDIS_WAIT_REPLICAS`);
    /// `None`: 1 while the key's master has a connected replica, else 0.
    pub replicas: Option<usize>,
    /// How long a `WAIT` or `WAITAOF` may block (`RINGBACK_REDIS_WAIT_TIMEOUT_MS`, 500 ms).
    pub timeout: Duration,
    /// Each claim also waits until it is in the append-only file on disk (`WAITAOF`).
    pub aof: bool,
}

impl Default for ReplicaWait {
    fn default() -> Self {
        Self {
            replicas: None,
            timeout: Duration::from_millis(500),
            aof: false,
        }
    }
}

/// How often the default ([`ReplicaWait::replicas`] `None`) looks again at which masters have
/// a replica (one `CLUSTER SLOTS`): after a failover, the new master has none until the old
/// one comes back as its replica, and a `WAIT 1` would time out on every write meanwhile.
const TOPOLOGY_TTL: Duration = Duration::from_secs(5);

/// `WAIT`s that came back with fewer replicas than asked for, in this process.
static REPLICA_WAIT_TIMEOUTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many `WAIT`s came back short (a replica missing or slow): each such write could be lost
/// by a failover before it reaches a replica.
pub fn replica_wait_timeouts() -> u64 {
    REPLICA_WAIT_TIMEOUTS.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn note_replica_wait_timeout() {
    REPLICA_WAIT_TIMEOUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

static AOF_WAIT_TIMEOUTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many claims were not on disk in time (`WAITAOF`, [`ReplicaWait::aof`]): each one's send
/// was held.
pub fn aof_wait_timeouts() -> u64 {
    AOF_WAIT_TIMEOUTS.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn note_aof_wait_timeout() {
    AOF_WAIT_TIMEOUTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A connection's replica-wait policy and its cached view of the replicas per slot range (a
/// cluster) or of the one endpoint's connected replicas.
#[derive(Debug, Default)]
pub(crate) struct Waiting {
    pub(crate) policy: ReplicaWait,
    topology: Mutex<Option<Topology>>,
    /// One endpoint: its connected replicas, and when that was read.
    endpoint: Mutex<Option<(Instant, usize)>>,
}

#[derive(Debug)]
struct Topology {
    read: Instant,
    /// (first slot, last slot, live replicas of its master)
    ranges: Vec<(u16, u16, usize)>,
}

impl Waiting {
    pub(crate) fn new(policy: ReplicaWait) -> Self {
        Self {
            policy,
            topology: Mutex::new(None),
            endpoint: Mutex::new(None),
        }
    }

    /// One endpoint: the replicas to wait for after a write, by `INFO replication`'s
    /// `connected_slaves` (read again when the cached count is older than a few seconds);
    /// 0 when it cannot be read (the write stands either way).
    pub(crate) async fn wanted_on_endpoint<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> usize {
        if let Some(n) = self.policy.replicas {
            return n;
        }
        let cached = self.endpoint.lock().ok().and_then(|e| {
            e.filter(|(read, _)| read.elapsed() < TOPOLOGY_TTL)
                .map(|(_, n)| n)
        });
        if let Some(n) = cached {
            return n.min(1);
        }
        self.read_endpoint(conn).await.min(1)
    }

    /// Read the endpoint's connected replicas now (`INFO replication`) and cache the count.
    pub(crate) async fn read_endpoint<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> usize {
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        let n = match info.query_async::<String>(conn).await {
            Ok(text) => connected_replicas(&text),
            Err(e) => {
                tracing::debug!(error = %e, "cannot read INFO replication; not waiting for a replica");
                0
            }
        };
        if let Ok(mut e) = self.endpoint.lock() {
            *e = Some((Instant::now(), n));
        }
        n
    }

    /// The endpoint's connected replicas as last read (0 when never read).
    pub(crate) fn endpoint_replicas(&self) -> usize {
        self.endpoint
            .lock()
            .ok()
            .and_then(|e| e.map(|(_, n)| n))
            .unwrap_or(0)
    }

    /// The replicas to wait for after a write to `key`, reading the topology through `conn`
    /// when the cached one is stale; 0 when it cannot be read (the write stands either way).
    pub(crate) async fn wanted(
        &self,
        conn: &mut redis::cluster_async::ClusterConnection,
        key: &str,
    ) -> usize {
        if let Some(n) = self.policy.replicas {
            return n;
        }
        let slot = crate::slots::slot(key.as_bytes());
        if let Some(n) = self.cached(slot) {
            return n.min(1);
        }
        match read_topology(conn).await {
            Ok(ranges) => {
                let n = replicas_in(&ranges, slot);
                if let Ok(mut t) = self.topology.lock() {
                    *t = Some(Topology {
                        read: Instant::now(),
                        ranges,
                    });
                }
                n.min(1)
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the cluster's replicas; not waiting for one");
                0
            }
        }
    }

    fn cached(&self, slot: u16) -> Option<usize> {
        let t = self.topology.lock().ok()?;
        let t = t.as_ref().filter(|t| t.read.elapsed() < TOPOLOGY_TTL)?;
        Some(replicas_in(&t.ranges, slot))
    }

    /// Forget the cached topology (a `WAIT` came back short: a replica may be gone).
    pub(crate) fn forget(&self) {
        if let Ok(mut t) = self.topology.lock() {
            *t = None;
        }
        if let Ok(mut e) = self.endpoint.lock() {
            *e = None;
        }
    }
}

/// `connected_slaves:<n>` of `INFO replication` (0 when absent: a replica itself, or a server
/// that hides it).
fn connected_replicas(info: &str) -> usize {
    info.lines()
        .find_map(|l| l.trim().strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

fn replicas_in(ranges: &[(u16, u16, usize)], slot: u16) -> usize {
    ranges
        .iter()
        .find(|(start, end, _)| (*start..=*end).contains(&slot))
        .map_or(0, |(_, _, n)| *n)
}

/// `CLUSTER SLOTS` as (first, last, replicas): Redis lists a range's master, then its replicas
/// that are not failed.
async fn read_topology(
    conn: &mut redis::cluster_async::ClusterConnection,
) -> redis::RedisResult<Vec<(u16, u16, usize)>> {
    let mut cmd = redis::cmd("CLUSTER");
    cmd.arg("SLOTS");
    let reply = conn
        .route_command(
            cmd,
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::RandomPrimary),
        )
        .await?;
    let ranges: Vec<Vec<Value>> = redis::from_redis_value(reply)?;
    Ok(ranges
        .iter()
        .filter_map(|r| {
            let start = redis::from_redis_value_ref(r.first()?).ok()?;
            let end = redis::from_redis_value_ref(r.get(1)?).ok()?;
            Some((start, end, r.len().saturating_sub(3)))
        })
        .collect())
}

/// `wait` (a `WAIT replicas timeout`) on the master serving `key`'s slot, over the connection
/// that took the write (redis-rs keeps one connection per node, shared by every clone): the
/// number of replicas that acknowledged.
pub(crate) async fn wait(
    conn: &mut redis::cluster_async::ClusterConnection,
    key: &str,
    wait: redis::Cmd,
) -> redis::RedisResult<usize> {
    let route = Route::new(crate::slots::slot(key.as_bytes()), SlotAddr::Master);
    let reply = conn
        .route_command(
            wait,
            RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
        )
        .await?;
    Ok(redis::from_redis_value(reply)?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn connected_replicas_are_read_from_info() {
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=1\r\n";
        assert_eq!(super::connected_replicas(info), 2);
        assert_eq!(
            super::connected_replicas("# Replication\r\nrole:slave\r\n"),
            0
        );
    }

    #[test]
    fn slots_match_what_redis_answers() {
        // CLUSTER KEYSLOT on Redis 7.0: the replica wait routes by this
        let slot = crate::slots::slot;
        assert_eq!(slot(b"foo"), 12182);
        assert_eq!(slot(b"agent-callback:run-1"), 7766);
        assert_eq!(slot(b"{bull}:notify:wait"), 9263);
        assert_eq!(slot(b"{}foo"), 9500); // an empty tag: the whole key
        assert_eq!(slot(b"a{b}c{d}"), 3300); // the first tag
        assert_eq!(slot(b"{{x}}"), 11068); // the tag is "{x"
    }
}
