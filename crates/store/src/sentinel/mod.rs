//! Redis Sentinel: a `redis+sentinel://` URL's sentinels and master name, the master they name
//! now, and the command connection that follows it through a failover.
//!
//! The sentinels are asked for the master by name, and the node they name is asked `ROLE`
//! before it is used (redis-rs's Sentinel client does both), so a connection never starts on a
//! demoted master. Once up, the command connection goes back to the sentinels when:
//! - a command fails on the connection (the master died or was cut off);
//! - Redis answers `READONLY` or `MASTERDOWN` (the master was demoted under us);
//! - the sentinels name another master than the one in use, asked every sweep interval
//!   ([`Followed::check_master`]): an old master cut off from the sentinels but not from us
//!   would otherwise go on taking writes a failover then drops. Redis's own
//!   `min-replicas-to-write` closes that window on the server; this narrows it on the client.
//!
//! Every connection made from one client shares one count of masters seen ([`Sentinels`]'s
//! epoch), so one link that finds the master gone sends every other (and the next blocking
//! connection) to the sentinels too.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use redis::ConnectionAddr;
use redis::sentinel::{SentinelClient, SentinelClientBuilder, SentinelServerType};

use ringback_shared::settings::ConfigError;

mod followed;
pub(crate) use followed::{Followed, address};

/// The sentinels' own access where it differs from the master's: the URL's credentials are the
/// master's (`requirepass`/ACL of the data nodes); sentinels configured with their own
/// `requirepass` or TLS take these.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SentinelAuth {
    /// `RINGBACK_SENTINEL_USERNAME`.
    pub username: Option<String>,
    /// `RINGBACK_SENTINEL_PASSWORD`.
    pub password: Option<String>,
    /// `RINGBACK_SENTINEL_TLS`: TLS to the sentinels; unset, as the URL's scheme says
    /// (`rediss+sentinel://`: TLS to both).
    pub tls: Option<bool>,
}

impl SentinelAuth {
    pub(crate) fn is_set(&self) -> bool {
        self.username.is_some() || self.password.is_some() || self.tls.is_some()
    }
}

/// A `redis+sentinel://[user:password@]host:port[,host:port…]/<master name>[/<db>]` URL (or
/// `rediss+sentinel://`), taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentinelUrl {
    /// `rediss+sentinel://`: TLS to the master (and, unless told otherwise, to the sentinels).
    pub tls: bool,
    /// The sentinels, as given.
    pub sentinels: Vec<(String, u16)>,
    /// The name the sentinels monitor the master by (`sentinel monitor <name> …`).
    pub master: String,
    /// The master's credentials and database, as `redis://` would carry them.
    pub username: Option<String>,
    /// The master's password, if the URL has one.
    pub password: Option<String>,
    /// The database index (`/<db>` after the master's name; 0 when absent).
    pub db: i64,
}

/// Sentinel's port when a sentinel is given without one.
pub const SENTINEL_PORT: u16 = 26379;

/// The sentinels and master name of a sentinel URL; `None` for any other scheme. Every
/// problem is named in one error, so one fix makes the URL right.
pub fn parse(url: &str) -> Result<Option<SentinelUrl>, ConfigError> {
    let Some((tls, rest)) = [("redis+sentinel://", false), ("rediss+sentinel://", true)]
        .iter()
        .find_map(|(prefix, tls)| url.strip_prefix(prefix).map(|rest| (*tls, rest)))
    else {
        return Ok(None);
    };
    let bad = |problem: String| ConfigError::new("REDIS_URL", problem);
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    if !query.is_empty() {
        return Err(bad(format!(
            "a sentinel URL takes no `?{query}`: give the sentinels, the master's name and a database"
        )));
    }
    let (auth, rest) = match rest.split_once('/') {
        // the credentials end at the last `@` before the path
        Some((head, path)) => match head.rsplit_once('@') {
            Some((auth, hosts)) => (auth, format!("{hosts}/{path}")),
            None => ("", rest.to_string()),
        },
        None => match rest.rsplit_once('@') {
            Some((auth, hosts)) => (auth, hosts.to_string()),
            None => ("", rest.to_string()),
        },
    };
    let mut parts = rest.splitn(3, '/');
    let hosts = parts.next().unwrap_or_default();
    let master = parts.next().unwrap_or_default();
    let db = parts.next().unwrap_or_default();
    let mut problems = Vec::new();
    let mut sentinels = Vec::new();
    for host in hosts.split(',') {
        let host = host.trim();
        match host.rsplit_once(':') {
            _ if host.is_empty() => problems.push("an empty sentinel (a stray comma?)".to_string()),
            Some((name, port)) if !name.is_empty() => match port.parse::<u16>() {
                Ok(port) if port != 0 => sentinels.push((name.to_string(), port)),
                _ => problems.push(format!("`{host}` is not host:port")),
            },
            None => sentinels.push((host.to_string(), SENTINEL_PORT)),
            Some(_) => problems.push(format!("`{host}` is not host:port")),
        }
    }
    if master.is_empty() {
        problems.push(
            "no master name: end the URL with `/<master name>` (the name in `sentinel monitor`)"
                .to_string(),
        );
    }
    let db = match db {
        "" => 0,
        n => match n.parse::<i64>() {
            Ok(n) if n >= 0 => n,
            _ => {
                problems.push(format!(
                    "`/{n}` after the master name is not a database number"
                ));
                0
            }
        },
    };
    // the master's credentials, decoded as redis-rs decodes a `redis://` URL's
    let (username, password) = if auth.is_empty() {
        (None, None)
    } else {
        match redis::Client::open(format!("redis://{auth}@127.0.0.1:1")) {
            Ok(c) => {
                let info = c.get_connection_info();
                let s = info.redis_settings();
                (
                    s.username().map(str::to_string),
                    s.password().map(str::to_string),
                )
            }
            Err(_) => {
                problems.push("the credentials before `@` do not parse as user:password".into());
                (None, None)
            }
        }
    };
    if !problems.is_empty() {
        return Err(bad(format!(
            "{}; expected redis+sentinel://[user:password@]host:port[,host:port…]/<master name>[/<db>]",
            problems.join("; ")
        )));
    }
    Ok(Some(SentinelUrl {
        tls,
        sentinels,
        master: master.to_string(),
        username,
        password,
        db,
    }))
}

impl SentinelUrl {
    /// For messages: `redis+sentinel://[user:***@]host:port,…/<name>[/<db>]`.
    pub fn describe(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        let creds = match (&self.username, &self.password) {
            (Some(u), Some(_)) => format!("{u}:***@"),
            (None, Some(_)) => ":***@".into(),
            (Some(u), None) => format!("{u}@"),
            (None, None) => String::new(),
        };
        let hosts: Vec<String> = self
            .sentinels
            .iter()
            .map(|(h, p)| format!("{h}:{p}"))
            .collect();
        let db = match self.db {
            0 => String::new(),
            n => format!("/{n}"),
        };
        format!(
            "{scheme}+sentinel://{creds}{}/{}{db}",
            hosts.join(","),
            self.master
        )
    }
}

/// The sentinels of one client, shared by every connection made from it.
pub struct Sentinels {
    pub(crate) url: SentinelUrl,
    client: tokio::sync::Mutex<SentinelClient>,
    /// Bumped when a connection finds the master gone or demoted, or the sentinels name
    /// another: a connection made at an older epoch asks the sentinels again before its next
    /// command.
    epoch: AtomicU64,
    /// The healthy replicas the sentinels list for the master, as last asked.
    replicas: AtomicUsize,
}

/// The sentinels' address, password masked, and the current epoch.
impl std::fmt::Debug for Sentinels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sentinels")
            .field("url", &self.url.describe())
            .field("epoch", &self.epoch)
            .finish_non_exhaustive()
    }
}

impl Sentinels {
    /// The sentinels of `url`, reached with `auth` where it differs from the master's; `certs`
    /// for TLS. Connects to none yet.
    pub fn new(
        url: SentinelUrl,
        auth: &SentinelAuth,
        certs: Option<redis::TlsCertificates>,
    ) -> Result<Self, ringback_shared::error::Error> {
        let sentinel_tls = auth.tls.unwrap_or(url.tls);
        let addrs = url.sentinels.iter().map(|(host, port)| {
            if sentinel_tls {
                ConnectionAddr::TcpTls {
                    host: host.clone(),
                    port: *port,
                    insecure: false,
                    tls_params: None,
                }
            } else {
                ConnectionAddr::Tcp(host.clone(), *port)
            }
        });
        let mut b = SentinelClientBuilder::new(addrs, &url.master, SentinelServerType::Master)?
            .set_client_to_redis_db(url.db);
        if let Some(u) = &url.username {
            b = b.set_client_to_redis_username(u);
        }
        if let Some(p) = &url.password {
            b = b.set_client_to_redis_password(p);
        }
        if url.tls {
            b = b.set_client_to_redis_tls_mode(redis::TlsMode::Secure);
            if let Some(c) = &certs {
                b = b.set_client_to_redis_certificates(c.clone());
            }
        }
        if let Some(u) = &auth.username {
            b = b.set_client_to_sentinel_username(u);
        }
        if let Some(p) = &auth.password {
            b = b.set_client_to_sentinel_password(p);
        }
        if sentinel_tls && let Some(c) = certs {
            b = b.set_client_to_sentinel_certificates(c);
        }
        Ok(Self {
            url,
            client: tokio::sync::Mutex::new(b.build()?),
            epoch: AtomicU64::new(0),
            replicas: AtomicUsize::new(0),
        })
    }

    /// How many replicas of the master the sentinels list as healthy (not flagged down or
    /// disconnected), asked of the first sentinel that answers; `None` when none does.
    async fn count_replicas(&self) -> Option<usize> {
        let sentinel = self
            .client
            .lock()
            .await
            .async_get_sentinel_client()
            .await
            .ok()?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(Some(crate::connection::CONNECT_TIMEOUT))
            .set_response_timeout(Some(crate::connection::CONNECT_TIMEOUT));
        let mut conn = sentinel
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .ok()?;
        let rows: Vec<std::collections::HashMap<String, String>> = redis::cmd("SENTINEL")
            .arg("replicas")
            .arg(&self.url.master)
            .query_async(&mut conn)
            .await
            .ok()?;
        Some(
            rows.iter()
                .filter(|r| {
                    r.get("flags").is_some_and(|f| {
                        !["s_down", "o_down", "disconnected"]
                            .iter()
                            .any(|bad| f.contains(bad))
                    })
                })
                .count(),
        )
    }

    /// The master the sentinels name now, checked with `ROLE` to be one.
    pub async fn master(&self) -> redis::RedisResult<redis::Client> {
        self.client.lock().await.async_get_client().await
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The master in use is gone, demoted or replaced: every connection asks again.
    fn lost(&self, seen: u64) {
        // only once per master: the links that failed together bump it once
        let _ = self
            .epoch
            .compare_exchange(seen, seen + 1, Ordering::AcqRel, Ordering::Acquire);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sentinels_name_credentials_and_database() {
        let u = parse("redis+sentinel://u:p%40ss@s1:26379,s2:26380,s3/mymaster/2")
            .unwrap()
            .unwrap();
        assert!(!u.tls);
        assert_eq!(
            u.sentinels,
            [
                ("s1".to_string(), 26379),
                ("s2".to_string(), 26380),
                ("s3".to_string(), SENTINEL_PORT)
            ]
        );
        assert_eq!(u.master, "mymaster");
        assert_eq!(u.username.as_deref(), Some("u"));
        assert_eq!(u.password.as_deref(), Some("p@ss"));
        assert_eq!(u.db, 2);
        assert_eq!(
            u.describe(),
            "redis+sentinel://u:***@s1:26379,s2:26380,s3:26379/mymaster/2"
        );
        let t = parse("rediss+sentinel://h:1/m").unwrap().unwrap();
        assert!(t.tls && t.db == 0 && t.password.is_none());
        assert!(parse("redis://h:1").unwrap().is_none());
    }

    #[test]
    fn names_every_problem_at_once() {
        let e = parse("redis+sentinel://h:x,,h2:0").unwrap_err();
        let why = e.to_string();
        for part in ["`h:x`", "empty sentinel", "`h2:0`", "no master name"] {
            assert!(why.contains(part), "{part}: {why}");
        }
        assert!(
            parse("redis+sentinel://h/m/x")
                .unwrap_err()
                .to_string()
                .contains("`/x`")
        );
    }
}
