//! The command connection under Sentinel: a self-reconnecting connection to the master the
//! sentinels name, replaced by one to the master they name next when it is lost or demoted.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use redis::aio::{ConnectionLike, ConnectionManager};
use redis::{Cmd, ConnectionAddr, Pipeline, RedisFuture, Value};

use super::Sentinels;

/// Whether an error means the master in use is no longer the one to write to: the connection
/// failed, or Redis says it is a replica now (`READONLY`) or cut off from its master
/// (`MASTERDOWN`).
pub(crate) fn master_lost(e: &redis::RedisError) -> bool {
    ringback_shared::error::connection_failed(e)
        || matches!(
            e.kind(),
            redis::ErrorKind::Server(
                redis::ServerErrorKind::ReadOnly | redis::ServerErrorKind::MasterDown
            )
        )
}

struct Current {
    conn: ConnectionManager,
    epoch: u64,
    addr: String,
}

/// The command connection under Sentinel: a self-reconnecting connection to the master the
/// sentinels name, replaced by one to the master they name next whenever [`master_lost`] says
/// so. Cheap to clone (clones share it).
#[derive(Clone)]
pub(crate) struct Followed {
    sentinels: Arc<Sentinels>,
    current: Arc<tokio::sync::RwLock<Option<Current>>>,
    make: fn(redis::Client) -> ManagerFuture,
}

pub(crate) type ManagerFuture = std::pin::Pin<
    Box<dyn std::future::Future<Output = redis::RedisResult<ConnectionManager>> + Send>,
>;

/// A client's `host:port`.
pub(crate) fn address(client: &redis::Client) -> String {
    match client.get_connection_info().addr() {
        ConnectionAddr::Tcp(h, p)
        | ConnectionAddr::TcpTls {
            host: h, port: p, ..
        } => {
            format!("{h}:{p}")
        }
        other => other.to_string(),
    }
}

impl Followed {
    /// Connected to the master the sentinels name now (`make` opens the self-reconnecting
    /// connection to it).
    pub(crate) async fn connect(
        sentinels: Arc<Sentinels>,
        make: fn(redis::Client) -> ManagerFuture,
    ) -> redis::RedisResult<Self> {
        let link = Self {
            sentinels,
            current: Arc::new(tokio::sync::RwLock::new(None)),
            make,
        };
        link.conn().await?;
        Ok(link)
    }

    pub(crate) fn db(&self) -> i64 {
        self.sentinels.url.db
    }

    /// The connection to the master in use, asking the sentinels first when it was lost.
    async fn conn(&self) -> redis::RedisResult<(ConnectionManager, u64)> {
        let epoch = self.sentinels.epoch();
        if let Some(c) = &*self.current.read().await
            && c.epoch == epoch
        {
            return Ok((c.conn.clone(), epoch));
        }
        let mut current = self.current.write().await;
        let epoch = self.sentinels.epoch();
        if let Some(c) = &*current
            && c.epoch == epoch
        {
            return Ok((c.conn.clone(), epoch));
        }
        let master = self.sentinels.master().await?;
        let addr = address(&master);
        let conn = (self.make)(master).await?;
        match &*current {
            Some(old) if old.addr != addr => {
                tracing::warn!(from = %old.addr, to = %addr, name = %self.sentinels.url.master, "the sentinels name a new master: following it");
            }
            None => {
                tracing::info!(master = %addr, name = %self.sentinels.url.master, "connected to the master the sentinels name");
            }
            Some(_) => {}
        }
        *current = Some(Current {
            conn: conn.clone(),
            epoch,
            addr,
        });
        Ok((conn, epoch))
    }

    /// The healthy replicas the sentinels listed for the master when last asked
    /// ([`Followed::check_master`]).
    pub(crate) fn sentinel_replicas(&self) -> usize {
        self.sentinels.replicas.load(Ordering::Relaxed)
    }

    /// Ask the sentinels which master they name now, and how many healthy replicas it has;
    /// another master than the one in use sends every connection to it before its next
    /// command. Errors are left to the next command.
    pub(crate) async fn check_master(&self) {
        if let Some(n) = self.sentinels.count_replicas().await {
            self.sentinels.replicas.store(n, Ordering::Relaxed);
        }
        let Ok(master) = self.sentinels.master().await else {
            return;
        };
        let now = address(&master);
        let (in_use, epoch) = match &*self.current.read().await {
            Some(c) => (c.addr.clone(), c.epoch),
            None => return,
        };
        if in_use != now {
            self.sentinels.lost(epoch);
        }
    }

    fn after(&self, epoch: u64, e: &redis::RedisError) {
        if master_lost(e) {
            self.sentinels.lost(epoch);
        }
    }
}

impl ConnectionLike for Followed {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(async move {
            let (mut conn, epoch) = self.conn().await?;
            let reply = conn.req_packed_command(cmd).await;
            if let Err(e) = &reply {
                self.after(epoch, e);
            }
            reply
        })
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        pipeline: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        Box::pin(async move {
            let (mut conn, epoch) = self.conn().await?;
            let reply = conn.req_packed_commands(pipeline, offset, count).await;
            if let Err(e) = &reply {
                self.after(epoch, e);
            }
            reply
        })
    }

    fn get_db(&self) -> i64 {
        self.db()
    }
}
