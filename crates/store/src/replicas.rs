//! How many replicas must have a write before the caller goes on ([`ReplicaWait`]), and each
//! connection's view of its replicas ([`Waiting`]): replication is asynchronous, and a master
//! killed right after acknowledging a write can lose it with the failover, so after the writes
//! the exactly-once promise rests on a caller waits until a replica has them too (or a
//! timeout), on the same node and connection that took the write.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::cluster::read_topology;

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
}
