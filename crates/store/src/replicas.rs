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
    /// `None`: 1 while the key's master has a connected replica that acknowledged within
    /// [`ACK_WITHIN`] (on one endpoint), else 0.
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

/// The default wait ([`ReplicaWait::replicas`] `None`) on one endpoint counts a replica only
/// while it acknowledged the primary within this bound (`INFO replication`'s `lag`, seconds
/// since its last acknowledgement; a replica acknowledges every second). One that does not (a
/// `redis-cli --replica`, a backup tool syncing, a replica whose link went silent) is named in
/// the log and counted ([`silent_replicas`]), not waited for: obeyed, it would hold every text
/// of the deployment. `RINGBACK_REDIS_WAIT_REPLICAS` set waits for any replica, as it says.
pub const ACK_WITHIN: Duration = Duration::from_secs(10);

/// Replicas listed connected whose acknowledgements stopped, as last read on one endpoint.
static SILENT_REPLICAS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many replicas the endpoint lists connected that have not acknowledged within
/// [`ACK_WITHIN`], as last read (the default wait leaves them out).
pub fn silent_replicas() -> u64 {
    SILENT_REPLICAS.load(std::sync::atomic::Ordering::Relaxed)
}

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

    /// One endpoint: the replicas to wait for after a write, by `INFO replication`'s replicas
    /// that acknowledged within [`ACK_WITHIN`] (read again when the cached count is older than
    /// a few seconds); 0 when it cannot be read (the write stands either way).
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

    /// Read the endpoint's acknowledging replicas now (`INFO replication`) and cache the
    /// count; a replica listed connected that stopped acknowledging is named in the log when
    /// the silent ones change, and counted ([`silent_replicas`]).
    pub(crate) async fn read_endpoint<C: redis::aio::ConnectionLike + Send>(
        &self,
        conn: &mut C,
    ) -> usize {
        let mut info = redis::cmd("INFO");
        info.arg("replication");
        let n = match info.query_async::<String>(conn).await {
            Ok(text) => {
                let (n, silent) = acknowledging_replicas(&text, ACK_WITHIN);
                let was =
                    SILENT_REPLICAS.swap(silent.len() as u64, std::sync::atomic::Ordering::Relaxed);
                if !silent.is_empty() && was != silent.len() as u64 {
                    tracing::warn!(
                        silent = %silent.join(", "),
                        acknowledging = n,
                        "a replica connected to Redis has not acknowledged its writes for over {} s: writes do not wait for it (RINGBACK_REDIS_WAIT_REPLICAS=1 would wait for any replica); a failover to it could lose the latest writes",
                        ACK_WITHIN.as_secs()
                    );
                } else if silent.is_empty() && was > 0 {
                    tracing::info!(
                        acknowledging = n,
                        "every replica connected to Redis acknowledges again"
                    );
                }
                n
            }
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

/// The replicas of `INFO replication` that acknowledged within `within`: each listed replica
/// (`slave<n>:ip=…,port=…,state=online,offset=…,lag=<s>`) online with a `lag` (seconds since
/// its last acknowledgement) inside the bound; and the others listed, as `ip:port (state, lag
/// s)`. A server that counts replicas (`connected_slaves`) but lists none (a proxy's view)
/// has its count taken as it is. 0 when absent: a replica itself, or a server that hides it.
fn acknowledging_replicas(info: &str, within: Duration) -> (usize, Vec<String>) {
    let connected = info
        .lines()
        .find_map(|l| l.trim().strip_prefix("connected_slaves:"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    let listed: Vec<&str> = info
        .lines()
        .map(str::trim)
        .filter_map(|l| {
            let (name, fields) = l.split_once(':')?;
            let n = name.strip_prefix("slave")?;
            (!n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())).then_some(fields)
        })
        .collect();
    if listed.is_empty() {
        return (connected, vec![]);
    }
    let mut acking = 0;
    let mut silent = vec![];
    for fields in listed {
        let field = |k: &str| {
            fields
                .split(',')
                .find_map(|kv| kv.strip_prefix(k)?.strip_prefix('='))
        };
        let state = field("state").unwrap_or("unknown");
        let lag = field("lag").and_then(|l| l.parse::<u64>().ok());
        if state == "online" && lag.is_some_and(|l| l <= within.as_secs()) {
            acking += 1;
        } else {
            silent.push(format!(
                "{}:{} ({state}, lag {} s)",
                field("ip").unwrap_or("?"),
                field("port").unwrap_or("?"),
                lag.map_or("?".to_string(), |l| l.to_string())
            ));
        }
    }
    (acking, silent)
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
    fn acknowledging_replicas_are_read_from_info() {
        let within = super::ACK_WITHIN;
        let read = |info: &str| super::acknowledging_replicas(info, within);
        let info = "# Replication\r\nrole:master\r\nconnected_slaves:2\r\n\
            slave0:ip=10.0.0.2,port=6379,state=online,offset=120,lag=0\r\n\
            slave1:ip=127.0.0.1,port=0,state=online,offset=0,lag=18\r\n\
            master_failover_state:no-failover\r\n";
        let (n, silent) = read(info);
        assert_eq!(n, 1);
        assert_eq!(silent, ["127.0.0.1:0 (online, lag 18 s)"]);
        // still syncing: not acknowledging yet
        let (n, silent) =
            read("connected_slaves:1\r\nslave0:ip=a,port=1,state=wait_bgsave,offset=0,lag=0\r\n");
        assert_eq!((n, silent.len()), (0, 1));
        // counted but not listed (a proxy's view): the count
        assert_eq!(read("connected_slaves:2\r\n"), (2, vec![]));
        assert_eq!(read("# Replication\r\nrole:slave\r\n"), (0, vec![]));
    }
}
