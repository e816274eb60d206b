//! Opening connections: the command connection (once, or retried until shutdown) and the
//! blocking one a worker's `BZPOPMIN` waits on.

use std::time::Duration;

use redis::AsyncConnectionConfig;
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio_util::sync::CancellationToken;

use super::{Client, Conn, Link, Target, describe, worker_client_name};
use crate::replicas::ReplicaWait;
use crate::sentinel::Followed;

/// Commands must answer within this; our slowest script (a 1000-job age cleanup) is far below.
pub(crate) const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// One connection attempt (TCP connect and handshake) gives up after this.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The command connection. Once up, it reconnects by itself after a Redis restart; callers
/// retry failed commands with their own backoff.
///
/// It makes exactly one connection attempt now and on each reconnect: redis-rs's own retries
/// (exponential, with jitter) would add a wait no log shows, about 1.15 s per failed attempt
/// with the 3 retries we once set, on top of every logged `retry_ms`, and made `ringback status`
/// take as long to say Redis is down. Our loops own the backoff, and log it.
///
/// On a cluster it is redis-rs's cluster connection (see [`Cluster::new`] for its retries).
///
/// Takes a [`Client`] or a plain `redis::Client`.
pub async fn commands(client: impl Into<Client>) -> Result<Conn, ringback_shared::error::Error> {
    let client = client.into();
    let conn = match &*client.target {
        Target::Single(c) => manager(c.clone()).await.map(Link::Single),
        Target::Cluster(c) => c.client.get_async_connection().await.map(Link::Cluster),
        Target::Sentinel(s) => Followed::connect(s.clone(), |c| Box::pin(manager(c)))
            .await
            .map(Link::Sentinel),
    };
    conn.map(|link| Conn::new(link, client.wait))
        .map_err(|source| ringback_shared::error::Error::Connect {
            addr: describe(&client),
            source,
        })
}

/// The self-reconnecting command connection to one Redis (see [`commands`]).
async fn manager(client: redis::Client) -> redis::RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_number_of_retries(0);
    client.get_connection_manager_with_config(config).await
}

/// The command connection, retrying with backoff while Redis is unreachable; each failed attempt
/// is logged with the Redis tried and the true wait before the next. Returns
/// [`Error::Stopped`](ringback_shared::error::Error::Stopped) when `shutdown` fires first.
pub async fn connect_until(
    client: impl Into<Client>,
    shutdown: &CancellationToken,
) -> Result<Conn, ringback_shared::error::Error> {
    let client = client.into();
    let mut delay = Duration::from_millis(100);
    loop {
        let attempt = tokio::select! {
            biased;
            _ = shutdown.cancelled() => return Err(ringback_shared::error::Error::Stopped),
            c = commands(&client) => c,
        };
        match attempt {
            Ok(c) => return Ok(c),
            Err(e) => {
                tracing::warn!(error = %e, retry_ms = delay.as_millis() as u64, "redis unreachable");
                tokio::select! {
                    _ = shutdown.cancelled() => return Err(ringback_shared::error::Error::Stopped),
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
}

/// A blocking connection, named as a Node `Worker` names its own so `Queue.getWorkers()` (Bull
/// Board, Taskforce) lists this worker: `<prefix>:<base64(queue)>`, followed by `:w:<name>`
/// when the worker has a name. A Redis that refuses `CLIENT SETNAME`
/// (some managed services do) is warned about once, and the connection is used unnamed.
///
/// It is one plain connection with no response timeout, never a self-reconnecting one. On a
/// cluster it goes to the master that owns the queue's slot now; when the slot moves or that
/// master fails over, Redis answers the blocked `BZPOPMIN` with `MOVED` (or the connection
/// drops), the caller drops this connection, and the next one is opened where the slot is then.
pub async fn blocking(
    client: &Client,
    prefix: &str,
    queue: &str,
    worker_name: Option<&str>,
) -> redis::RedisResult<Conn> {
    let node = match &*client.target {
        Target::Single(c) => c.clone(),
        Target::Cluster(c) => {
            let marker = crate::keys::QueueKeys::new(prefix, queue).marker();
            c.master_of(&marker).await?
        }
        // the master named now; on a demoted one `BZPOPMIN` answers READONLY, the caller
        // drops the connection, and the next is opened on the master named then
        Target::Sentinel(s) => s.master().await?,
    };
    let config = AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(CONNECT_TIMEOUT));
    let mut conn = node
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let name = worker_client_name(prefix, queue, worker_name);
    if let Err(e) = redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(&name)
        .query_async::<()>(&mut conn)
        .await
    {
        if e.is_io_error() {
            return Err(e);
        }
        static WARNED: std::sync::Once = std::sync::Once::new();
        WARNED.call_once(|| {
            tracing::warn!(error = %e, "Redis refuses CLIENT SETNAME: this worker works, but Queue.getWorkers() (Bull Board, Taskforce) will not list it");
        });
    }
    Ok(Conn::new(Link::Direct(conn), ReplicaWait::default()))
}
