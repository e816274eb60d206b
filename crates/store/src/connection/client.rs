//! Where Redis is ([`Client`]): one server, the master Sentinel names, or a Cluster's seeds.

use std::sync::Arc;

use crate::cluster::Cluster;
use crate::replicas::ReplicaWait;
use crate::sentinel::Sentinels;

use super::describe;

/// Where Redis is: one server, or a Redis Cluster reached through its seed nodes. Made by
/// [`client`]; a plain `redis::Client` converts into one (tests make those).
#[derive(Clone)]
pub struct Client {
    pub(crate) target: Arc<Target>,
    pub(crate) wait: ReplicaWait,
}

// one per process, behind an Arc: the size difference costs nothing
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
pub(crate) enum Target {
    Single(redis::Client),
    Cluster(Cluster),
    /// One master at a time, named by Redis Sentinel.
    Sentinel(Arc<Sentinels>),
}

/// The Redis it names, password masked ([`describe`]): a `Debug` print never shows a secret.
impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("redis", &describe(self))
            .finish_non_exhaustive()
    }
}

impl Client {
    pub(super) fn new(target: Target) -> Self {
        Self {
            target: Arc::new(target),
            wait: ReplicaWait::default(),
        }
    }

    /// A Redis Cluster rather than one server.
    pub fn is_cluster(&self) -> bool {
        matches!(*self.target, Target::Cluster(_))
    }

    /// Under Redis Sentinel, the master the sentinels name now (`host:port`), checked with
    /// `ROLE` to be one; `None` for any other Redis.
    pub async fn sentinel_master(&self) -> Option<redis::RedisResult<String>> {
        match &*self.target {
            Target::Sentinel(s) => Some(s.master().await.map(|c| crate::sentinel::address(&c))),
            _ => None,
        }
    }

    /// Command connections made from this client wait for replicas per `wait` (see
    /// [`Conn::wait_for_replicas`]).
    pub fn with_wait(mut self, wait: ReplicaWait) -> Self {
        self.wait = wait;
        self
    }
}

impl From<redis::Client> for Client {
    fn from(c: redis::Client) -> Self {
        Self::new(Target::Single(c))
    }
}

impl From<&redis::Client> for Client {
    fn from(c: &redis::Client) -> Self {
        Self::new(Target::Single(c.clone()))
    }
}

impl From<&Client> for Client {
    fn from(c: &Client) -> Self {
        c.clone()
    }
}
