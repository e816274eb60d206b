//! Where Redis is: the one place a client is made from a URL, the TLS material of `rediss://`,
//! a URL's check, and how a client is described in messages (the password masked).

use super::{Client, Target};
use crate::cluster::Cluster;
use std::path::PathBuf;
use std::sync::Arc;

/// TLS material for a `rediss://` URL: a CA to trust instead of the system's roots (a private CA,
/// as self-hosted TLS and some managed services use), and a client certificate and key for
/// servers that require one (`tls-auth-clients yes`). Files are PEM. Without any, `rediss://`
/// trusts the system's roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedisTls {
    /// CA certificate to trust instead of the system's roots (`RINGBACK_REDIS_CA_FILE`).
    pub ca_file: Option<PathBuf>,
    /// Client certificate for mutual TLS (`RINGBACK_REDIS_CLIENT_CERT`); set with `client_key`.
    pub client_cert: Option<PathBuf>,
    /// Private key of `client_cert` (`RINGBACK_REDIS_CLIENT_KEY`); set with `client_cert`.
    pub client_key: Option<PathBuf>,
    /// Under Redis Sentinel, the sentinels' own credentials and TLS where they differ from the
    /// master's (the TLS files above serve both).
    pub sentinel: crate::sentinel::SentinelAuth,
}

impl RedisTls {
    fn is_set(&self) -> bool {
        self.ca_file.is_some() || self.client_cert.is_some() || self.client_key.is_some()
    }

    /// The invariants: files only with `rediss://`, a certificate with its key, every file
    /// readable. The error names the setting at fault.
    pub fn validate(&self, url: &str) -> Result<(), ringback_shared::settings::ConfigError> {
        use ringback_shared::settings::ConfigError;
        if self.sentinel.is_set() && crate::sentinel::parse(url).ok().flatten().is_none() {
            let setting = if self.sentinel.password.is_some() {
                "RINGBACK_SENTINEL_PASSWORD"
            } else if self.sentinel.username.is_some() {
                "RINGBACK_SENTINEL_USERNAME"
            } else {
                "RINGBACK_SENTINEL_TLS"
            };
            return Err(ConfigError::new(
                setting,
                "the sentinels' settings are given but REDIS_URL is not redis+sentinel:// or rediss+sentinel:// (nothing would use them)",
            ));
        }
        if !self.is_set() {
            return Ok(());
        }
        let sentinel_tls = url.starts_with("redis+sentinel://") && self.sentinel.tls == Some(true);
        if !(url.starts_with("rediss://")
            || url.starts_with("rediss+cluster://")
            || url.starts_with("rediss+sentinel://")
            || sentinel_tls)
        {
            let setting = if self.ca_file.is_some() {
                "RINGBACK_REDIS_CA_FILE"
            } else {
                "RINGBACK_REDIS_CLIENT_CERT"
            };
            return Err(ConfigError::new(
                setting,
                "TLS files are given but REDIS_URL is not rediss://, rediss+cluster:// or rediss+sentinel:// (the connection would not use them)",
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
/// with the system's roots, or `tls` when given; a Redis Cluster for `redis+cluster://` and
/// `rediss+cluster://` (see [`crate::cluster::seeds`]), with the same TLS settings.
pub fn client(url: &str, tls: &RedisTls) -> Result<Client, ringback_shared::error::Error> {
    if let Some(seeds) = crate::cluster::seeds(url)? {
        return Ok(Client::new(Target::Cluster(Cluster::new(seeds, tls)?)));
    }
    let certs = certificates(tls)?;
    if let Some(sentinel) = crate::sentinel::parse(url)? {
        let sentinels = crate::sentinel::Sentinels::new(sentinel, &tls.sentinel, certs)?;
        return Ok(Client::new(Target::Sentinel(Arc::new(sentinels))));
    }
    Ok(Client::new(Target::Single(match certs {
        None => redis::Client::open(url)?,
        Some(certs) => redis::Client::build_with_tls(url, certs)?,
    })))
}

/// The TLS material read from its files; `None` when no file is set.
pub(crate) fn certificates(
    tls: &RedisTls,
) -> Result<Option<redis::TlsCertificates>, ringback_shared::error::Error> {
    if !tls.is_set() {
        return Ok(None);
    }
    let read = |setting: &'static str, p: &PathBuf| {
        std::fs::read(p).map_err(|e| {
            ringback_shared::error::Error::Config(ringback_shared::settings::ConfigError::new(
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
    Ok(Some(redis::TlsCertificates {
        client_tls,
        root_cert,
    }))
}

/// What is wrong with a `REDIS_URL`, if anything: its scheme, or a cluster URL's seeds.
pub fn check_url(url: &str) -> Result<(), ringback_shared::settings::ConfigError> {
    const SCHEMES: [&str; 7] = [
        "redis://",
        "rediss://",
        "unix://",
        "redis+cluster://",
        "rediss+cluster://",
        "redis+sentinel://",
        "rediss+sentinel://",
    ];
    if !SCHEMES.iter().any(|s| url.starts_with(s)) {
        return Err(ringback_shared::settings::ConfigError::new(
            "REDIS_URL",
            "must start with redis://, rediss://, unix:// (one Redis), redis+cluster://, rediss+cluster:// (a Redis Cluster) or redis+sentinel://, rediss+sentinel:// (Redis Sentinel)",
        ));
    }
    crate::cluster::seeds(url)?;
    crate::sentinel::parse(url).map(|_| ())
}

/// The Redis a client connects to, for messages: scheme, user, host, port and database, the
/// password masked (`redis://:***@host:6379`); a cluster as `redis+cluster://` and its seeds.
pub fn describe(client: &Client) -> String {
    match &*client.target {
        Target::Single(c) => describe_one(c),
        Target::Sentinel(s) => s.url.describe(),
        Target::Cluster(cluster) => {
            let mut out = String::new();
            for seed in &cluster.seeds {
                let one = redis::Client::open(seed.as_str())
                    .map(|c| describe_one(&c))
                    .unwrap_or_else(|_| crate::cluster::seed_host(seed));
                if out.is_empty() {
                    out = one.replacen("://", "+cluster://", 1);
                } else {
                    out.push(',');
                    out.push_str(one.rsplit_once('@').map_or_else(
                        || one.split_once("://").map_or(one.as_str(), |(_, r)| r),
                        |(_, r)| r,
                    ));
                }
            }
            out
        }
    }
}

fn describe_one(client: &redis::Client) -> String {
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
