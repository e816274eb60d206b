//! Redis Cluster: the `redis+cluster://` URL, the cluster client and its retries, which master
//! serves a key's slot now (for the blocking connection), its replicas (`CLUSTER SLOTS`), and
//! `WAIT` routed to the master that took a write ([`crate::replicas`] says how many).

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

/// `CLUSTER SLOTS` as (first, last, replicas): Redis lists a range's master, then its replicas
/// that are not failed.
pub(crate) async fn read_topology(
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
    redis::from_redis_value(on_key_master(conn, key, wait).await?).map_err(Into::into)
}

/// `cmd` on the master serving `key`'s slot, over the connection that took its writes.
pub(crate) async fn on_key_master(
    conn: &mut redis::cluster_async::ClusterConnection,
    key: &str,
    cmd: redis::Cmd,
) -> redis::RedisResult<Value> {
    let route = Route::new(crate::slots::slot(key.as_bytes()), SlotAddr::Master);
    conn.route_command(
        cmd,
        RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(route)),
    )
    .await
}

#[cfg(test)]
mod tests {
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
