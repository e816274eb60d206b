//! Redis connections: one multiplexed, self-reconnecting connection for commands and scripts,
//! and a dedicated connection for `BZPOPMIN` with no client response timeout (redis-rs's default
//! 500 ms timeout silently loses blocking replies: bullmq #4512, redis-rs #1924).

use std::time::Duration;

use redis::AsyncConnectionConfig;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};

/// Commands must answer within this; our slowest script (a 1000-job age cleanup) is far below.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The command connection. It reconnects by itself after a Redis restart; callers retry.
pub async fn commands(client: &redis::Client) -> redis::RedisResult<ConnectionManager> {
    let config = ConnectionManagerConfig::new()
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_connection_timeout(Some(Duration::from_secs(5)))
        .set_number_of_retries(3)
        .set_max_delay(Duration::from_secs(2));
    client.get_connection_manager_with_config(config).await
}

/// A blocking connection, named as BullMQ names worker connections so `Queue.getWorkers()` lists
/// us: `<prefix>:<base64(queue)>` (bullmq-protocol.md §2.1).
pub async fn blocking(
    client: &redis::Client,
    prefix: &str,
    queue: &str,
) -> redis::RedisResult<MultiplexedConnection> {
    let config = AsyncConnectionConfig::new()
        .set_response_timeout(None)
        .set_connection_timeout(Some(Duration::from_secs(5)));
    let mut conn = client
        .get_multiplexed_async_connection_with_config(&config)
        .await?;
    let name = format!("{prefix}:{}", base64(queue.as_bytes()));
    redis::cmd("CLIENT")
        .arg("SETNAME")
        .arg(name)
        .query_async::<()>(&mut conn)
        .await?;
    Ok(conn)
}

/// Standard base64 with padding (what Node's `Buffer.toString('base64')` gives).
fn base64(input: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(input.len().div_ceil(3) * 4);
    for chunk in input.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_node() {
        assert_eq!(super::base64(b"notify"), "bm90aWZ5");
        assert_eq!(super::base64(b"ab"), "YWI=");
        assert_eq!(super::base64(b"a"), "YQ==");
    }
}
