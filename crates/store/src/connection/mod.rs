//! Redis connections: one multiplexed, self-reconnecting connection for commands and scripts,
//! and a dedicated connection for `BZPOPMIN` with no client response timeout (redis-rs's default
//! 500 ms timeout silently loses blocking replies: bullmq #4512, redis-rs #1924).
//!
//! Both come as a [`Conn`], which is one Redis or a Redis Cluster: the rest of the crate runs
//! commands and scripts on it the same way and never asks which. What is cluster-only (the
//! URL's seeds, the slot owner, `WAIT` for a replica) lives in [`crate::cluster`].

use std::sync::Arc;

use redis::aio::{ConnectionLike, ConnectionManager, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, Pipeline, RedisFuture, Value};

use crate::replicas::{ReplicaWait, Waiting};
use crate::scripts::{Durability, Survive};
use crate::sentinel::Followed;

mod client;
mod connect;
mod names;
mod url;

pub use client::Client;
pub(crate) use client::Target;
pub(crate) use connect::{COMMAND_TIMEOUT, CONNECT_TIMEOUT};
pub use connect::{blocking, commands, connect_until};
pub use names::{refused_client_name, worker_client_name};
pub(crate) use url::certificates;
pub use url::{RedisTls, check_url, client, describe};

/// A connection to Redis, single or cluster. Cheap to clone (clones share the connection), and
/// a `redis::aio::ConnectionLike`, so scripts and `query_async` run on it unchanged. On a
/// cluster, each command goes to the master owning its first key's slot, following `MOVED`,
/// `ASK` and `TRYAGAIN`.
#[derive(Clone)]
pub struct Conn {
    link: Link,
    wait: Arc<Waiting>,
}

#[derive(Clone)]
pub(crate) enum Link {
    /// The self-reconnecting command connection to one Redis.
    Single(ConnectionManager),
    /// One plain connection: the blocking one, which must not reconnect behind our back.
    Direct(MultiplexedConnection),
    Cluster(ClusterConnection),
    /// The self-reconnecting command connection to the master Redis Sentinel names, following
    /// it through a failover.
    Sentinel(Followed),
}

/// Which kind of link it is; the connection itself prints nothing useful.
impl std::fmt::Debug for Conn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let link = match self.link {
            Link::Single(_) => "one Redis",
            Link::Direct(_) => "one Redis, not reconnecting",
            Link::Cluster(_) => "a Cluster",
            Link::Sentinel(_) => "the master Sentinel names",
        };
        f.debug_struct("Conn")
            .field("link", &link)
            .finish_non_exhaustive()
    }
}

impl Conn {
    fn new(link: Link, wait: ReplicaWait) -> Self {
        Self {
            link,
            wait: Arc::new(Waiting::new(wait)),
        }
    }

    /// Connected to a Redis Cluster.
    pub fn is_cluster(&self) -> bool {
        matches!(self.link, Link::Cluster(_))
    }

    /// An explicit `RINGBACK_REDIS_WAIT_REPLICAS` above 0: every claim and sent marker must be
    /// acknowledged by that many replicas, on one Redis too.
    pub fn waits_for_replicas(&self) -> bool {
        self.wait.policy.replicas.is_some_and(|n| n > 0)
    }

    /// `RINGBACK_REDIS_WAIT_AOF`: every claim waits to be in the append-only file on disk.
    pub fn waits_for_aof(&self) -> bool {
        self.wait.policy.aof
    }

    /// One endpoint with `RINGBACK_REDIS_WAIT_REPLICAS` unset: whether it had a connected
    /// replica when last looked at ([`Conn::look_at_replicas`]), so that writes wait for one.
    ///
    /// Under Sentinel, also while the sentinels list a healthy replica of the master: a master
    /// whose replica was just promoted away reports none connected, and that is exactly when
    /// its writes are about to be lost.
    pub fn has_replica_now(&self) -> bool {
        self.wait.policy.replicas.is_none()
            && match &self.link {
                Link::Single(_) => self.wait.endpoint_replicas() > 0,
                Link::Sentinel(c) => self.wait.endpoint_replicas() > 0 || c.sentinel_replicas() > 0,
                _ => false,
            }
    }

    /// One endpoint with `RINGBACK_REDIS_WAIT_REPLICAS` unset: look at its connected replicas
    /// again (`INFO replication`); the worker does it every sweep interval, so a replica that
    /// attaches (or a failover that leaves none) is followed without a restart.
    ///
    /// Under Sentinel it also asks the sentinels which master they name, so a master replaced
    /// behind a connection that still answers is left within the same interval.
    pub async fn look_at_replicas(&mut self) {
        let Conn { link, wait } = self;
        if let Link::Sentinel(c) = link {
            c.check_master().await;
        }
        match (link, wait.policy.replicas) {
            (Link::Single(c), None) => {
                wait.read_endpoint(c).await;
            }
            (Link::Sentinel(c), None) => {
                wait.read_endpoint(c).await;
            }
            _ => {}
        }
    }

    /// After a write to `key` that must survive a failover (a claim, a sent marker): `WAIT`
    /// until the replicas the policy asks for have it, on the node that took the write, over
    /// the same connection (see [`ReplicaWait`]). Returns how many acknowledged (0 without a
    /// wait). A short count is logged, not an error: the write stands on the master.
    ///
    /// A round trip of its own: [`Conn::write_durably`] sends the `WAIT` in the write's
    /// pipeline instead, which costs far less: no round trip of its own (docs/cluster.md,
    /// "Durability").
    pub async fn wait_for_replicas(
        &mut self,
        key: &str,
    ) -> Result<usize, ringback_shared::error::Error> {
        let wanted = self.replicas_wanted(key).await;
        if wanted == 0 {
            return Ok(0);
        }
        let wait = self.wait_command(wanted);
        let acked = match &mut self.link {
            Link::Cluster(c) => crate::cluster::wait(c, key, wait).await?,
            link => {
                let reply = link.req_packed_command(&wait).await?;
                redis::from_redis_value(reply).map_err(redis::RedisError::from)?
            }
        };
        self.check_acked(key, wanted, acked);
        Ok(acked)
    }

    /// After writes to `keys` that must survive a failover and are not worth a send held on
    /// their own (an inbound message and its replies job, an escalation): `WAIT` on each node
    /// that took one (once on one endpoint, where one `WAIT` covers every earlier write of the
    /// connection); a short count is [`Error::Unacknowledged`](ringback_shared::error::Error::Unacknowledged)
    /// for the caller to answer as transient. With `RINGBACK_REDIS_WAIT_AOF`, each also waits
    /// for the disk (`WAITAOF`), as a claim does; short, [`Error::NotOnDisk`](ringback_shared::error::Error::NotOnDisk).
    /// Costs nothing without a wait.
    pub async fn confirm_durable(
        &mut self,
        keys: &[&str],
    ) -> Result<(), ringback_shared::error::Error> {
        let keys = if self.is_cluster() {
            keys
        } else {
            &keys[..keys.len().min(1)]
        };
        for key in keys {
            let wanted = self.replicas_wanted(key).await;
            if wanted > 0 {
                let acked = self.wait_for_replicas(key).await?;
                if acked < wanted {
                    return Err(ringback_shared::error::Error::Unacknowledged {
                        key: key.to_string(),
                        wanted,
                        acked,
                    });
                }
            }
            // where asked, on disk too, as a claim is: a restart from the append-only file
            // must not forget what a person was told was taken
            if self.wait.policy.aof && !self.on_disk(key).await? {
                crate::replicas::note_aof_wait_timeout();
                return Err(ringback_shared::error::Error::NotOnDisk {
                    key: key.to_string(),
                });
            }
        }
        Ok(())
    }

    /// Send `write` (a script call or a command whose first key is in `key`'s slot) and, in the
    /// same pipeline, the `WAIT` the policy asks for after a write to `key` (and for
    /// [`Survive::Restart`], the `WAITAOF` it asks for): the write's reply and what acknowledged
    /// it ([`Durability`]; the default without a wait). The write's error comes back as it would
    /// alone (a `NOSCRIPT` keeps its kind, so a caller can re-send with `EVAL`).
    pub async fn write_durably<T: redis::FromRedisValue>(
        &mut self,
        key: &str,
        survive: Survive,
        write: &Cmd,
    ) -> redis::RedisResult<(T, Durability)> {
        let wanted = self.replicas_wanted(key).await;
        let fsync_wanted = survive == Survive::Restart && self.wait.policy.aof;
        if wanted == 0 && !fsync_wanted {
            return Ok((write.query_async(self).await?, Durability::default()));
        }
        let mut pipe = redis::pipe();
        pipe.add_command(write.clone());
        if wanted > 0 {
            pipe.add_command(self.wait_command(wanted));
        }
        if fsync_wanted {
            // on disk here, no replica asked: the replicas are WAIT's
            pipe.cmd("WAITAOF")
                .arg(1)
                .arg(0)
                .arg(self.wait.policy.timeout.as_millis().max(1) as u64);
        }
        let mut replies: Vec<Value> = pipe.query_async(self).await?;
        let fsynced = if fsync_wanted {
            let (local, _replicas): (usize, usize) =
                redis::from_redis_value(replies.pop().unwrap_or(Value::Nil))
                    .map_err(redis::RedisError::from)?;
            local >= 1
        } else {
            false
        };
        let acked = if wanted > 0 {
            redis::from_redis_value(replies.pop().unwrap_or(Value::Nil))
                .map_err(redis::RedisError::from)?
        } else {
            0
        };
        let reply = redis::from_redis_value(replies.pop().unwrap_or(Value::Nil))
            .map_err(redis::RedisError::from)?;
        self.check_acked(key, wanted, acked);
        if fsync_wanted && !fsynced {
            crate::replicas::note_aof_wait_timeout();
            tracing::warn!(
                key,
                timeout_ms = self.wait.policy.timeout.as_millis() as u64,
                "Redis did not have a claim on disk in time (WAITAOF): a restart now could lose it"
            );
        }
        Ok((
            reply,
            Durability {
                wanted,
                acked,
                fsync_wanted,
                fsynced,
            },
        ))
    }

    /// `WAITAOF 1 0` on the node that took `key`'s write: whether it is in that node's
    /// append-only file on disk within the wait's timeout.
    async fn on_disk(&mut self, key: &str) -> Result<bool, ringback_shared::error::Error> {
        let mut waitaof = redis::cmd("WAITAOF");
        waitaof
            .arg(1)
            .arg(0)
            .arg(self.wait.policy.timeout.as_millis().max(1) as u64);
        let reply = match &mut self.link {
            Link::Cluster(c) => crate::cluster::on_key_master(c, key, waitaof).await?,
            link => link.req_packed_command(&waitaof).await?,
        };
        let (local, _replicas): (usize, usize) =
            redis::from_redis_value(reply).map_err(redis::RedisError::from)?;
        Ok(local >= 1)
    }

    /// How many replicas to wait for after a write to `key` (see [`ReplicaWait`]).
    async fn replicas_wanted(&mut self, key: &str) -> usize {
        let Conn { link, wait } = self;
        match link {
            Link::Cluster(c) => wait.wanted(c, key).await,
            Link::Single(c) => wait.wanted_on_endpoint(c).await,
            Link::Sentinel(c) => {
                let connected = wait.wanted_on_endpoint(c).await;
                match wait.policy.replicas {
                    None => connected.max(c.sentinel_replicas().min(1)),
                    Some(_) => connected,
                }
            }
            Link::Direct(_) => wait.policy.replicas.unwrap_or(0),
        }
    }

    fn wait_command(&self, wanted: usize) -> Cmd {
        let mut cmd = redis::cmd("WAIT");
        // WAIT with 0 would block until the replicas answer
        cmd.arg(wanted)
            .arg(self.wait.policy.timeout.as_millis().max(1) as u64);
        cmd
    }

    fn check_acked(&self, key: &str, wanted: usize, acked: usize) {
        if acked < wanted {
            crate::replicas::note_replica_wait_timeout();
            self.wait.forget();
            tracing::warn!(
                key,
                wanted,
                acked,
                timeout_ms = self.wait.policy.timeout.as_millis() as u64,
                "replicas did not acknowledge a write in time: a failover now could lose it"
            );
        }
    }
}

impl Link {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        match self {
            Link::Single(c) => c.req_packed_command(cmd),
            Link::Direct(c) => c.req_packed_command(cmd),
            Link::Cluster(c) => c.req_packed_command(cmd),
            Link::Sentinel(c) => c.req_packed_command(cmd),
        }
    }
}

impl ConnectionLike for Conn {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        self.link.req_packed_command(cmd)
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        match &mut self.link {
            Link::Single(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Direct(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Cluster(c) => c.req_packed_commands(pipeline, offset, count),
            Link::Sentinel(c) => c.req_packed_commands(pipeline, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match &self.link {
            Link::Single(c) => c.get_db(),
            Link::Direct(c) => c.get_db(),
            Link::Cluster(c) => c.get_db(),
            Link::Sentinel(c) => c.get_db(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_node() {
        assert_eq!(
            super::worker_client_name("bull", "notify", Some("rb-1")),
            "bull:bm90aWZ5:w:rb-1"
        );
        assert_eq!(
            super::worker_client_name("bull", "notify", None),
            "bull:bm90aWZ5"
        );
        assert!(super::refused_client_name("rb 1").is_some());
        assert!(super::refused_client_name("rb-1").is_none());
        assert_eq!(super::names::base64(b"notify"), "bm90aWZ5");
        assert_eq!(super::names::base64(b"ab"), "YWI=");
        assert_eq!(super::names::base64(b"a"), "YQ==");
    }

    #[test]
    fn describe_masks_the_password() {
        let d = |url: &str| super::describe(&redis::Client::open(url).unwrap().into());
        assert_eq!(d("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(d("redis://:s3cret@h:1"), "redis://:***@h:1");
        assert_eq!(d("redis://u:s3cret@h:1/2"), "redis://u:***@h:1/2");
        assert_eq!(d("unix:///tmp/r.sock?pass=s3cret"), "unix:///tmp/r.sock");
    }

    #[test]
    fn cluster_urls_give_one_seed_url_per_node() {
        use crate::cluster::seeds as cluster_seeds;
        assert_eq!(cluster_seeds("redis://h:1").unwrap(), None);
        assert_eq!(
            cluster_seeds("redis+cluster://u:p@a:7000,b:7001").unwrap(),
            Some(vec![
                "redis://u:p@a:7000".into(),
                "redis://u:p@b:7001".into()
            ])
        );
        assert_eq!(
            cluster_seeds("rediss+cluster://[::1]:7000/0").unwrap(),
            Some(vec!["rediss://[::1]:7000".into()])
        );
        // every bad seed named at once
        let e = cluster_seeds("redis+cluster://a,b:x,,c:7000").unwrap_err();
        assert_eq!(e.setting, "REDIS_URL");
        for part in ["`a`", "`b:x`", "empty seed"] {
            assert!(e.problem.contains(part), "{e}");
        }
        assert!(cluster_seeds("redis+cluster://a:1/2").is_err());
        assert!(cluster_seeds("redis+cluster://a:1?x=1").is_err());
        assert!(super::check_url("http://a:1").is_err());
        assert!(super::check_url("redis+cluster://a:1,b:2").is_ok());
    }

    #[test]
    fn describe_names_a_clusters_seeds_without_the_password() {
        let c = super::client(
            "redis+cluster://u:s3cret@a:7000,b:7001",
            &Default::default(),
        )
        .unwrap();
        assert!(c.is_cluster());
        assert_eq!(super::describe(&c), "redis+cluster://u:***@a:7000,b:7001");
        // check-config prints REDIS_URL through redact::url
        assert_eq!(
            ringback_shared::redact::url("rediss+cluster://u:s3cret@a:7000,b:7001"),
            "rediss+cluster://u:***@a:7000,b:7001"
        );
    }

    #[test]
    fn tls_files_need_rediss_a_pair_and_readable_files() {
        use super::RedisTls;
        use std::path::PathBuf;
        let fixture = |name: &str| {
            Some(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("../../tests/fixtures/tls")
                    .join(name),
            )
        };
        let ca = RedisTls {
            ca_file: fixture("ca.crt"),
            ..Default::default()
        };
        assert!(ca.validate("rediss://h:6380").is_ok());
        let not_pem = RedisTls {
            ca_file: Some(PathBuf::from("Cargo.toml")),
            ..Default::default()
        };
        let e = not_pem.validate("rediss://h").unwrap_err();
        assert!(e.to_string().contains("no PEM"), "{e}");
        let swapped = RedisTls {
            client_cert: fixture("client.key"),
            client_key: fixture("client.crt"),
            ..Default::default()
        };
        assert_eq!(
            swapped.validate("rediss://h").unwrap_err().setting,
            "RINGBACK_REDIS_CLIENT_CERT"
        );
        let e = ca.validate("redis://h:6379").unwrap_err();
        assert_eq!(e.setting, "RINGBACK_REDIS_CA_FILE");
        let half = RedisTls {
            client_cert: fixture("client.crt"),
            ..Default::default()
        };
        assert_eq!(
            half.validate("rediss://h").unwrap_err().setting,
            "RINGBACK_REDIS_CLIENT_KEY"
        );
        let missing = RedisTls {
            ca_file: Some(PathBuf::from("/nonexistent/ca.pem")),
            ..Default::default()
        };
        let e = missing.validate("rediss://h").unwrap_err();
        assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
        assert!(RedisTls::default().validate("redis://h").is_ok());
    }
}
