//! Redis connections: one multiplexed, self-reconnecting connection for commands and scripts,
//! and a dedicated connection for `BZPOPMIN` with no client response timeout (redis-rs's default
//! 500 ms timeout silently loses blocking replies: bullmq #4512, redis-rs #1924).

use std::path::PathBuf;
use std::time::Duration;

use redis::AsyncConnectionConfig;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use tokio_util::sync::CancellationToken;

/// TLS material for a `rediss://` URL: a CA to trust instead of the system's roots (a private CA,
/// as self-hosted TLS and some managed services use), and a client certificate and key for
/// servers that require one (`tls-auth-clients yes`). Files are PEM. Without any, `rediss://`
/// trusts the system's roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisTls {
    pub ca_file: Option<PathBuf>,
    pub client_cert: Option<PathBuf>,
    pub client_key: Option<PathBuf>,
}

impl RedisTls {
    fn is_set(&self) -> bool {
        self.ca_file.is_some() || self.client_cert.is_some() || self.client_key.is_some()
    }

    /// The invariants: files only with `rediss://`, a certificate with its key, every file
    /// readable. The error names the setting at fault.
    pub fn validate(&self, url: &str) -> Result<(), crate::error::ConfigError> {
        use crate::error::ConfigError;
        if !self.is_set() {
            return Ok(());
        }
        if !url.starts_with("rediss://") {
            let setting = if self.ca_file.is_some() {
                "RINGBACK_REDIS_CA_FILE"
            } else {
                "RINGBACK_REDIS_CLIENT_CERT"
            };
            return Err(ConfigError::new(
                setting,
                "TLS files are given but REDIS_URL is not rediss:// (the connection would not use them)",
            ));
        }
        if self.client_cert.is_some() != self.client_key.is_some() {
            return Err(ConfigError::new(
                "RINGBACK_REDIS_CLIENT_KEY",
                "a client certificate and its key go together: set both RINGBACK_REDIS_CLIENT_CERT and RINGBACK_REDIS_CLIENT_KEY, or neither",
            ));
        }
        // Each file must be readable PEM holding what it is for: found now, with the setting
        // named, rather than as a connection that never comes up.
        for (setting, file, label) in [
            ("RINGBACK_REDIS_CA_FILE", &self.ca_file, "CERTIFICATE-----"),
            (
                "RINGBACK_REDIS_CLIENT_CERT",
                &self.client_cert,
                "CERTIFICATE-----",
            ),
            (
                "RINGBACK_REDIS_CLIENT_KEY",
                &self.client_key,
                "PRIVATE KEY-----",
            ),
        ] {
            if let Some(path) = file {
                let text = std::fs::read(path).map_err(|e| {
                    ConfigError::new(setting, format!("cannot read {}: {e}", path.display()))
                })?;
                let text = String::from_utf8_lossy(&text);
                // a certificate: "-----BEGIN CERTIFICATE-----"; a key: "-----BEGIN [RSA |EC ]PRIVATE KEY-----"
                let holds = text
                    .lines()
                    .any(|l| l.starts_with("-----BEGIN ") && l.ends_with(label));
                if !holds {
                    return Err(ConfigError::new(
                        setting,
                        format!("{} holds no PEM `-----BEGIN {label}` block", path.display()),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// The one place a Redis client is made: plain for `redis://` and `unix://`; for `rediss://`,
/// with the system's roots, or `tls` when given.
pub fn client(url: &str, tls: &RedisTls) -> Result<redis::Client, crate::error::Error> {
    if !tls.is_set() {
        return Ok(redis::Client::open(url)?);
    }
    let read = |setting: &'static str, p: &PathBuf| {
        std::fs::read(p).map_err(|e| {
            crate::error::Error::Config(crate::error::ConfigError::new(
                setting,
                format!("cannot read {}: {e}", p.display()),
            ))
        })
    };
    let client_tls = match (&tls.client_cert, &tls.client_key) {
        (Some(cert), Some(key)) => Some(redis::ClientTlsConfig {
            client_cert: read("RINGBACK_REDIS_CLIENT_CERT", cert)?,
            client_key: read("RINGBACK_REDIS_CLIENT_KEY", key)?,
        }),
        _ => None,
    };
    let root_cert = tls
        .ca_file
        .as_ref()
        .map(|p| read("RINGBACK_REDIS_CA_FILE", p))
        .transpose()?;
    Ok(redis::Client::build_with_tls(
        url,
        redis::TlsCertificates {
            client_tls,
            root_cert,
        },
    )?)
}

/// Commands must answer within this; our slowest script (a 1000-job age cleanup) is far below.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);
/// One connection attempt (TCP connect and handshake) gives up after this.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// The Redis a client connects to, for messages: scheme, user, host, port and database, the
/// password masked (`redis://:***@host:6379`).
pub fn describe(client: &redis::Client) -> String {
    use redis::ConnectionAddr;
    let info = client.get_connection_info();
    let settings = info.redis_settings();
    let creds = match (settings.username(), settings.password()) {
        (Some(user), Some(_)) => format!("{user}:***@"),
        (None, Some(_)) => ":***@".to_string(),
        (Some(user), None) => format!("{user}@"),
        (None, None) => String::new(),
    };
    let db = match settings.db() {
        0 => String::new(),
        n => format!("/{n}"),
    };
    match info.addr() {
        ConnectionAddr::Tcp(host, port) => format!("redis://{creds}{host}:{port}{db}"),
        ConnectionAddr::TcpTls { host, port, .. } => format!("rediss://{creds}{host}:{port}{db}"),
        ConnectionAddr::Unix(path) => format!("unix://{}", path.display()),
        other => other.to_string(),
    }
}

/// The command connection. Once up, it reconnects by itself after a Redis restart; callers
/// retry failed commands with their own backoff.
///
/// It makes exactly one connection attempt now and on each reconnect: redis-rs's own retries
/// (exponential, with jitter) would add a wait no log shows, about 1.15 s per failed attempt
/// with the 3 retries we once set, on top of every logged `retry_ms`, and made `ringback status`
/// take as long to say Redis is down (issue 9). Our loops own the backoff, and log it.
pub async fn commands(client: &redis::Client) -> Result<ConnectionManager, crate::error::Error> {
    let config = ConnectionManagerConfig::new()
        .set_response_timeout(Some(COMMAND_TIMEOUT))
        .set_connection_timeout(Some(CONNECT_TIMEOUT))
        .set_number_of_retries(0);
    client
        .get_connection_manager_with_config(config)
        .await
        .map_err(|source| crate::error::Error::Connect {
            addr: describe(client),
            source,
        })
}

/// The command connection, retrying with backoff while Redis is unreachable; each failed attempt
/// is logged with the Redis tried and the true wait before the next. Returns
/// [`Error::Stopped`](crate::error::Error::Stopped) when `shutdown` fires first.
pub async fn connect_until(
    client: &redis::Client,
    shutdown: &CancellationToken,
) -> Result<ConnectionManager, crate::error::Error> {
    let mut delay = Duration::from_millis(100);
    loop {
        let attempt = tokio::select! {
            biased;
            _ = shutdown.cancelled() => return Err(crate::error::Error::Stopped),
            c = commands(client) => c,
        };
        match attempt {
            Ok(c) => return Ok(c),
            Err(e) => {
                tracing::warn!(error = %e, retry_ms = delay.as_millis() as u64, "redis unreachable");
                tokio::select! {
                    _ = shutdown.cancelled() => return Err(crate::error::Error::Stopped),
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(Duration::from_secs(5));
            }
        }
    }
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
        .set_connection_timeout(Some(CONNECT_TIMEOUT));
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

    #[test]
    fn describe_masks_the_password() {
        let d = |url: &str| super::describe(&redis::Client::open(url).unwrap());
        assert_eq!(d("redis://127.0.0.1:6379"), "redis://127.0.0.1:6379");
        assert_eq!(d("redis://:s3cret@h:1"), "redis://:***@h:1");
        assert_eq!(d("redis://u:s3cret@h:1/2"), "redis://u:***@h:1/2");
        assert_eq!(d("unix:///tmp/r.sock?pass=s3cret"), "unix:///tmp/r.sock");
    }

    #[test]
    fn tls_files_need_rediss_a_pair_and_readable_files() {
        use super::RedisTls;
        use std::path::PathBuf;
        let fixture = |name: &str| {
            Some(
                PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/tls")
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
