//! The command-line surface shared by the `ringback` binary and the examples: flags that also
//! read environment variables (names from `../shared/CLI.md`), turned into a validated config.

use std::time::Duration;

use clap::Args;

use crate::error::{ConfigError, ConfigErrors};
use crate::queue::config::WorkerConfig;
use crate::queue::job::KeepJobs;

/// Redis and queue settings.
#[derive(Debug, Clone, Args)]
pub struct QueueArgs {
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    #[arg(long, env = "RINGBACK_PREFIX", default_value = "bull")]
    pub prefix: String,
    #[arg(long, env = "RINGBACK_QUEUE", default_value = "notify")]
    pub queue: String,
    /// PEM CA to trust for rediss:// (instead of the system's roots).
    #[arg(long, env = "RINGBACK_REDIS_CA_FILE")]
    pub redis_ca_file: Option<std::path::PathBuf>,
    /// PEM client certificate for rediss:// servers that require one (with --redis-client-key).
    #[arg(long, env = "RINGBACK_REDIS_CLIENT_CERT")]
    pub redis_client_cert: Option<std::path::PathBuf>,
    /// PEM key of the client certificate.
    #[arg(long, env = "RINGBACK_REDIS_CLIENT_KEY")]
    pub redis_client_key: Option<std::path::PathBuf>,
    /// Replicas that must acknowledge a claim and a sent marker (`WAIT`) before the worker goes
    /// on. Unset: 1 on a Redis Cluster when the key's master has a replica, 0 on one Redis.
    #[arg(long, env = "RINGBACK_REDIS_WAIT_REPLICAS")]
    pub redis_wait_replicas: Option<usize>,
    /// How long such a `WAIT` may take; after it the worker goes on (and logs it).
    #[arg(long, env = "RINGBACK_REDIS_WAIT_TIMEOUT_MS", default_value_t = 500)]
    pub redis_wait_timeout_ms: u64,
}

impl QueueArgs {
    /// The TLS files, as the connection takes them.
    pub fn tls(&self) -> crate::store::connection::RedisTls {
        crate::store::connection::RedisTls {
            ca_file: self.redis_ca_file.clone(),
            client_cert: self.redis_client_cert.clone(),
            client_key: self.redis_client_key.clone(),
        }
    }

    /// The replica wait after a claim and a sent marker.
    pub fn redis_wait(&self) -> crate::store::cluster::ReplicaWait {
        crate::store::cluster::ReplicaWait {
            replicas: self.redis_wait_replicas,
            timeout: Duration::from_millis(self.redis_wait_timeout_ms),
        }
    }

    /// A Redis client for these settings, the TLS invariants checked first.
    pub fn client(&self) -> Result<crate::store::connection::Client, ConfigError> {
        let tls = self.tls();
        tls.validate(&self.redis_url)?;
        crate::store::connection::client(&self.redis_url, &tls)
            .map(|c| c.with_wait(self.redis_wait()))
            .map_err(|e| match e {
                crate::error::Error::Config(c) => c,
                e => ConfigError::new("REDIS_URL", e.to_string()),
            })
    }
}

/// Worker settings (BullMQ Worker options).
#[derive(Debug, Clone, Args)]
pub struct WorkerArgs {
    #[command(flatten)]
    pub queue: QueueArgs,
    #[arg(long, env = "RINGBACK_CONCURRENCY", default_value_t = 1)]
    pub concurrency: usize,
    /// BullMQ's `maxStartedAttempts` (0 or unset: no limit).
    #[arg(long, env = "RINGBACK_MAX_STARTED_ATTEMPTS")]
    pub max_started_attempts: Option<u32>,
    #[arg(long, env = "RINGBACK_LOCK_DURATION_MS", default_value_t = 30_000)]
    pub lock_duration_ms: u64,
    /// Default: half the lock duration, as BullMQ.
    #[arg(long, env = "RINGBACK_LOCK_RENEW_TIME_MS")]
    pub lock_renew_time_ms: Option<u64>,
    #[arg(long, env = "RINGBACK_STALLED_INTERVAL_MS", default_value_t = 30_000)]
    pub stalled_interval_ms: u64,
    #[arg(long, env = "RINGBACK_MAX_STALLED_COUNT", default_value_t = 1)]
    pub max_stalled_count: u32,
    #[arg(long, env = "RINGBACK_SHUTDOWN_GRACE_MS", default_value_t = 30_000)]
    pub shutdown_grace_ms: u64,
    #[arg(long, env = "RINGBACK_DRAIN_DELAY_MS", default_value_t = 5_000)]
    pub drain_delay_ms: u64,
    /// Written on each job as `pb` (processedBy), and the `:w:<name>` part of the blocking
    /// connection's client name, as a Node `Worker` names its own (`Queue.getWorkers()`).
    #[arg(long, env = "RINGBACK_WORKER_NAME")]
    pub worker_name: Option<String>,
    /// Worker default for jobs without the option: `true`, `false`, a count, or JSON `{"age":s,"count":n}`.
    #[arg(long, env = "RINGBACK_REMOVE_ON_COMPLETE")]
    pub remove_on_complete: Option<String>,
    #[arg(long, env = "RINGBACK_REMOVE_ON_FAIL")]
    pub remove_on_fail: Option<String>,
    /// Worker rate limit as `<max>/<duration_ms>`, e.g. `10/1000`.
    #[arg(long, env = "RINGBACK_LIMITER")]
    pub limiter: Option<String>,
    /// Keep BullMQ metrics with this many per-minute data points.
    #[arg(long, env = "RINGBACK_METRICS_DATA_POINTS")]
    pub metrics_data_points: Option<u32>,
}

impl WorkerArgs {
    /// Build and validate the worker configuration; every broken setting at once.
    pub fn to_config(&self) -> Result<WorkerConfig, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        let keep = |setting: &'static str,
                    v: &Option<String>|
         -> Result<Option<KeepJobs>, ConfigError> {
            v.as_deref()
                .map(|s| {
                    serde_json::from_str(s)
                        .ok()
                        .and_then(|v| KeepJobs::parse(&v))
                        .ok_or_else(|| ConfigError::new(setting, format!("expected true, false, a count or {{\"age\":s,\"count\":n}}, got {s:?}")))
                })
                .transpose()
        };
        let limiter = self
            .limiter
            .as_deref()
            .map(|s| {
                s.split_once('/')
                    .and_then(|(m, d)| {
                        Some((
                            m.trim().parse().ok()?,
                            Duration::from_millis(d.trim().parse().ok()?),
                        ))
                    })
                    .ok_or_else(|| {
                        ConfigError::new(
                            "RINGBACK_LIMITER",
                            format!("expected <max>/<duration_ms>, got {s:?}"),
                        )
                    })
            })
            .transpose();
        let limiter = errors.take(limiter).flatten();
        let remove_on_complete = errors
            .take(keep(
                "RINGBACK_REMOVE_ON_COMPLETE",
                &self.remove_on_complete,
            ))
            .flatten();
        let remove_on_fail = errors
            .take(keep("RINGBACK_REMOVE_ON_FAIL", &self.remove_on_fail))
            .flatten();
        if let Some(why) = self
            .worker_name
            .as_deref()
            .and_then(crate::store::connection::refused_client_name)
        {
            errors.push(ConfigError::new("RINGBACK_WORKER_NAME", why));
        }
        let lock_duration = Duration::from_millis(self.lock_duration_ms);
        let config = WorkerConfig {
            redis_url: self.queue.redis_url.clone(),
            redis_tls: self.queue.tls(),
            redis_wait: self.queue.redis_wait(),
            prefix: self.queue.prefix.clone(),
            queue: self.queue.queue.clone(),
            concurrency: self.concurrency,
            lock_duration,
            lock_renew_time: self
                .lock_renew_time_ms
                .map_or(lock_duration / 2, Duration::from_millis),
            stalled_interval: Duration::from_millis(self.stalled_interval_ms),
            max_stalled_count: self.max_stalled_count,
            shutdown_grace: Duration::from_millis(self.shutdown_grace_ms),
            drain_delay: Duration::from_millis(self.drain_delay_ms),
            name: self.worker_name.clone(),
            remove_on_complete,
            remove_on_fail,
            limiter,
            metrics_max_data_points: self.metrics_data_points,
            max_started_attempts: self.max_started_attempts.filter(|m| *m > 0),
        };
        for e in &config.problems() {
            errors.push(e.clone());
        }
        errors.or(Some(config))
    }

    /// The effective settings, the Redis password masked, for `check-config` (read even when
    /// invalid).
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let q = &self.queue;
        let lock_renew = self.lock_renew_time_ms.unwrap_or(self.lock_duration_ms / 2);
        let mut out = vec![("REDIS_URL", crate::redact::url(&q.redis_url))];
        for (name, file) in [
            ("RINGBACK_REDIS_CA_FILE", &q.redis_ca_file),
            ("RINGBACK_REDIS_CLIENT_CERT", &q.redis_client_cert),
            ("RINGBACK_REDIS_CLIENT_KEY", &q.redis_client_key),
        ] {
            if let Some(f) = file {
                out.push((name, f.display().to_string()));
            }
        }
        out.extend([
            (
                "RINGBACK_REDIS_WAIT_REPLICAS",
                q.redis_wait_replicas.map_or(
                    "auto (1 on a cluster when the master has a replica, 0 on one Redis)".into(),
                    |n| n.to_string(),
                ),
            ),
            (
                "RINGBACK_REDIS_WAIT_TIMEOUT_MS",
                q.redis_wait_timeout_ms.to_string(),
            ),
            ("RINGBACK_PREFIX", q.prefix.clone()),
            ("RINGBACK_QUEUE", q.queue.clone()),
            ("RINGBACK_CONCURRENCY", self.concurrency.to_string()),
            (
                "RINGBACK_MAX_STARTED_ATTEMPTS",
                self.max_started_attempts
                    .filter(|m| *m > 0)
                    .map_or("no limit".into(), |m| m.to_string()),
            ),
            (
                "RINGBACK_LOCK_DURATION_MS",
                self.lock_duration_ms.to_string(),
            ),
            ("RINGBACK_LOCK_RENEW_TIME_MS", lock_renew.to_string()),
            (
                "RINGBACK_STALLED_INTERVAL_MS",
                self.stalled_interval_ms.to_string(),
            ),
            (
                "RINGBACK_MAX_STALLED_COUNT",
                self.max_stalled_count.to_string(),
            ),
            (
                "RINGBACK_SHUTDOWN_GRACE_MS",
                self.shutdown_grace_ms.to_string(),
            ),
            ("RINGBACK_DRAIN_DELAY_MS", self.drain_delay_ms.to_string()),
        ]);
        for (name, v) in [
            ("RINGBACK_WORKER_NAME", &self.worker_name),
            ("RINGBACK_REMOVE_ON_COMPLETE", &self.remove_on_complete),
            ("RINGBACK_REMOVE_ON_FAIL", &self.remove_on_fail),
            ("RINGBACK_LIMITER", &self.limiter),
        ] {
            if let Some(v) = v {
                out.push((name, v.clone()));
            }
        }
        out
    }
}

/// Logs to stderr, `text` or `json` (`RINGBACK_LOG_FORMAT`), filtered by `RUST_LOG` (default info).
pub fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    // colours only on a terminal: logs captured by tests, drills and collectors stay plain
    let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    if std::env::var("RINGBACK_LOG_FORMAT").as_deref() == Ok("json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// A token cancelled on the first SIGTERM or SIGINT. The handlers are installed before this
/// returns, so a signal that arrives at any later instant (say, while Redis is still
/// unreachable) is a clean stop rather than the default action's death by signal.
pub fn shutdown_on_signals() -> tokio_util::sync::CancellationToken {
    use tokio::signal::unix::{SignalKind, signal};
    let token = tokio_util::sync::CancellationToken::new();
    let t = token.clone();
    let (term, int) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(term), Ok(int)) => (term, int),
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "cannot listen for SIGTERM/SIGINT");
            return token;
        }
    };
    tokio::spawn(async move {
        let (mut term, mut int) = (term, int);
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
        t.cancel();
    });
    token
}

/// Twilio client settings (`TWILIO_*`).
#[derive(Debug, Clone, Args)]
pub struct TwilioArgs {
    #[arg(long, env = "TWILIO_ACCOUNT_SID")]
    pub account_sid: Option<String>,
    #[arg(long, env = "TWILIO_AUTH_TOKEN", hide_env_values = true)]
    pub auth_token: Option<String>,
    #[arg(long, env = "TWILIO_API_KEY")]
    pub api_key: Option<String>,
    #[arg(long, env = "TWILIO_API_SECRET", hide_env_values = true)]
    pub api_secret: Option<String>,
    #[arg(long = "twilio-from", env = "TWILIO_FROM")]
    pub from: Option<String>,
    #[arg(long, env = "TWILIO_MESSAGING_SERVICE_SID")]
    pub messaging_service_sid: Option<String>,
    #[arg(
        long,
        env = "TWILIO_API_BASE",
        default_value = "https://api.twilio.com"
    )]
    pub api_base: String,
    #[arg(
        long = "twilio-connect-timeout-ms",
        env = "TWILIO_CONNECT_TIMEOUT_MS",
        default_value_t = 3_000
    )]
    pub connect_timeout_ms: u64,
    #[arg(
        long = "twilio-timeout-ms",
        env = "TWILIO_TIMEOUT_MS",
        default_value_t = 8_000
    )]
    pub timeout_ms: u64,
    /// Seconds Twilio may queue a message (1–36000).
    #[arg(long, env = "TWILIO_VALIDITY_PERIOD_S")]
    pub validity_period_s: Option<u32>,
}

impl TwilioArgs {
    /// The validated client settings, or every broken or missing setting at once.
    pub fn to_config(&self) -> Result<crate::twilio::TwilioConfig, ConfigErrors> {
        use crate::twilio::{Auth, Secret, Sender};
        let mut errors = ConfigErrors::default();
        let account_sid = errors.require(
            self.account_sid
                .clone()
                .filter(|s| s.starts_with("AC") && s.len() == 34),
            "TWILIO_ACCOUNT_SID",
            "required: AC followed by 32 hex digits",
        );
        let auth = match (&self.api_key, &self.api_secret, &self.auth_token) {
            (Some(key), Some(_), _) if !key.starts_with("SK") => Err(ConfigError::new(
                "TWILIO_API_KEY",
                "an API key SID starts with SK",
            )),
            (Some(key), Some(secret), _) => Ok(Auth::ApiKey {
                sid: key.clone(),
                secret: Secret::new(secret.clone()),
            }),
            (Some(_), None, _) => Err(ConfigError::new(
                "TWILIO_API_SECRET",
                "required with TWILIO_API_KEY",
            )),
            (None, _, Some(token)) if !token.is_empty() => {
                Ok(Auth::AuthToken(Secret::new(token.clone())))
            }
            _ => Err(ConfigError::new(
                "TWILIO_AUTH_TOKEN",
                "required (or TWILIO_API_KEY with TWILIO_API_SECRET)",
            )),
        };
        let auth = errors.take(auth);
        // An empty value (`TWILIO_FROM=` in an env file) is a setting left unset.
        let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        let sender = match (&given(&self.from), &given(&self.messaging_service_sid)) {
            (Some(_), Some(_)) => Err(ConfigError::new(
                "TWILIO_FROM",
                "set TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID, not both",
            )),
            (Some(from), None) => {
                use crate::twilio::message::{SenderForm, is_test_credentials_number, sender_form};
                match sender_form(from) {
                    None => Err(ConfigError::new(
                        "TWILIO_FROM",
                        format!(
                            "{from:?} is not a sender Twilio accepts: an E.164 number (+15558675310), a short code, an alphanumeric sender ID (up to 11 letters, digits, spaces), a WhatsApp sender (whatsapp:+15558675310) or a Messaging Service SID (MG…)"
                        ),
                    )),
                    Some(_)
                        if is_test_credentials_number(from) && is_twilio_api(&self.api_base) =>
                    {
                        Err(ConfigError::new(
                            "TWILIO_FROM",
                            format!(
                                "{from} is one of Twilio's numbers for test credentials: a live account refuses every message from it; set the account's own number or service"
                            ),
                        ))
                    }
                    // Twilio accepts a service SID in `From`: it is one, and looked up as one.
                    Some(SenderForm::MessagingService) => {
                        Ok(Sender::MessagingService(from.clone()))
                    }
                    Some(_) => Ok(Sender::From(from.clone())),
                }
            }
            (None, Some(ms)) => Ok(Sender::MessagingService(ms.clone())),
            (None, None) => Err(ConfigError::new(
                "TWILIO_FROM",
                "required (or TWILIO_MESSAGING_SERVICE_SID)",
            )),
        };
        let sender = errors.take(sender);
        if !(self.api_base.starts_with("https://") || self.api_base.starts_with("http://")) {
            errors.push(ConfigError::new(
                "TWILIO_API_BASE",
                "must be an http(s) URL",
            ));
        }
        if self.timeout_ms == 0 || self.connect_timeout_ms == 0 {
            errors.push(ConfigError::new(
                "TWILIO_TIMEOUT_MS",
                "timeouts must be positive",
            ));
        }
        if let Some(v) = self.validity_period_s
            && !(1..=36_000).contains(&v)
        {
            errors.push(ConfigError::new(
                "TWILIO_VALIDITY_PERIOD_S",
                "must be between 1 and 36000",
            ));
        }
        let parts = account_sid.zip(auth).zip(sender);
        let ((account_sid, auth), sender) = errors.or(parts)?;
        Ok(crate::twilio::TwilioConfig {
            account_sid,
            auth,
            sender,
            api_base: self.api_base.clone(),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            timeout: Duration::from_millis(self.timeout_ms),
            validity_period: self.validity_period_s,
        })
    }

    /// The effective settings, secrets masked, for `check-config` (read even when invalid).
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let set = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".into());
        let secret = |v: &Option<String>| match v.as_deref() {
            Some(s) if !s.is_empty() => "*** (set)".to_string(),
            _ => "(not set)".to_string(),
        };
        let mut out = vec![
            ("TWILIO_ACCOUNT_SID", set(&self.account_sid)),
            ("TWILIO_AUTH_TOKEN", secret(&self.auth_token)),
        ];
        if self.api_key.is_some() || self.api_secret.is_some() {
            out.push(("TWILIO_API_KEY", set(&self.api_key)));
            out.push(("TWILIO_API_SECRET", secret(&self.api_secret)));
        }
        if self.messaging_service_sid.is_some() {
            out.push((
                "TWILIO_MESSAGING_SERVICE_SID",
                set(&self.messaging_service_sid),
            ));
        }
        if self.from.is_some() || self.messaging_service_sid.is_none() {
            // a sender number is not a secret: it is the account's own public number
            out.push(("TWILIO_FROM", set(&self.from)));
        }
        out.push(("TWILIO_API_BASE", self.api_base.clone()));
        out.push((
            "TWILIO_CONNECT_TIMEOUT_MS",
            self.connect_timeout_ms.to_string(),
        ));
        out.push(("TWILIO_TIMEOUT_MS", self.timeout_ms.to_string()));
        if let Some(v) = self.validity_period_s {
            out.push(("TWILIO_VALIDITY_PERIOD_S", v.to_string()));
        }
        out
    }
}

/// Settings of `ringback twilio-sim`.
#[derive(Debug, Clone, Args)]
pub struct SimArgs {
    #[arg(long, env = "RINGBACK_SIM_LISTEN", default_value = "127.0.0.1:4010")]
    pub listen: std::net::SocketAddr,
    #[arg(
        long,
        env = "TWILIO_ACCOUNT_SID",
        default_value = "AC00000000000000000000000000000000"
    )]
    pub account_sid: String,
    #[arg(
        long,
        env = "TWILIO_AUTH_TOKEN",
        default_value = "sim-auth-token",
        hide_env_values = true
    )]
    pub auth_token: String,
    /// Extra credentials as `SK…:secret` (repeatable).
    #[arg(long = "api-key", env = "RINGBACK_SIM_API_KEYS", value_delimiter = ',')]
    pub api_keys: Vec<String>,
    /// Fault rules as JSON, or `@path` to a JSON file (see `twilio_sim::faults`).
    #[arg(long, env = "RINGBACK_SIM_FAULTS")]
    pub faults: Option<String>,
}

impl SimArgs {
    pub fn to_config(
        &self,
    ) -> Result<
        (
            crate::twilio_sim::SimConfig,
            crate::twilio_sim::faults::Faults,
        ),
        ConfigError,
    > {
        use crate::twilio::Secret;
        if !self.listen.ip().is_loopback() {
            return Err(ConfigError::new(
                "RINGBACK_SIM_LISTEN",
                "the simulator only listens on a loopback address",
            ));
        }
        let api_keys = self
            .api_keys
            .iter()
            .map(|k| {
                k.split_once(':')
                    .map(|(sid, secret)| (sid.to_string(), Secret::new(secret)))
                    .ok_or_else(|| ConfigError::new("RINGBACK_SIM_API_KEYS", "expected SK…:secret"))
            })
            .collect::<Result<_, _>>()?;
        let faults = match self.faults.as_deref() {
            None => Default::default(),
            Some(spec) => {
                let text = match spec.strip_prefix('@') {
                    Some(path) => std::fs::read_to_string(path).map_err(|e| {
                        ConfigError::new("RINGBACK_SIM_FAULTS", format!("cannot read {path}: {e}"))
                    })?,
                    None => spec.to_string(),
                };
                serde_json::from_str(&text).map_err(|e| {
                    ConfigError::new("RINGBACK_SIM_FAULTS", format!("not valid fault rules: {e}"))
                })?
            }
        };
        let config = crate::twilio_sim::SimConfig {
            account_sid: self.account_sid.clone(),
            auth_token: Secret::new(self.auth_token.clone()),
            api_keys,
        };
        Ok((config, faults))
    }
}

/// The claim/sent window's settings.
#[derive(Debug, Clone, Args)]
pub struct SmsArgs {
    #[arg(long, env = "RINGBACK_CLAIM_PREFIX", default_value = "agent-callback:")]
    pub claim_prefix: String,
    #[arg(long, env = "RINGBACK_PENDING_TTL_MS", default_value_t = 15_000)]
    pub pending_ttl_ms: u64,
    /// The claim key's lease while an attempt may be unresolved (refreshed by every step).
    #[arg(long, env = "RINGBACK_CLAIM_LEASE_MS", default_value_t = 600_000)]
    pub claim_lease_ms: u64,
    /// Escalate an attempt whose outcome stays unknown this long (once; still resolved).
    #[arg(long, env = "RINGBACK_UNKNOWN_ESCALATE_MS", default_value_t = 300_000)]
    pub unknown_escalate_ms: u64,
    #[arg(long, env = "RINGBACK_SENT_TTL_MS", default_value_t = 86_400_000)]
    pub sent_ttl_ms: u64,
    #[arg(long, env = "RINGBACK_RECONCILE_WINDOW_MS", default_value_t = 60_000)]
    pub reconcile_window_ms: u64,
    #[arg(long, env = "RINGBACK_RECONCILE_POLL_MS", default_value_t = 5_000)]
    pub reconcile_poll_ms: u64,
    /// Delay after a "retry later" answer without `Retry-After`.
    #[arg(long, env = "RINGBACK_RETRY_LATER_MS", default_value_t = 2_000)]
    pub retry_later_ms: u64,
    #[arg(long, env = "RINGBACK_STATUS_CALLBACK_URL")]
    pub status_callback_url: Option<String>,
    /// Drills only: `<point>[:<probability>]`; honoured only with `RINGBACK_DRILL=1`.
    #[arg(long, env = "RINGBACK_CRASH_AT")]
    pub crash_at: Option<String>,
    /// Drill mode: allows `RINGBACK_CRASH_AT` (a process that aborts on purpose).
    #[arg(
        long,
        env = "RINGBACK_DRILL",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub drill: bool,
    /// BullMQ queue for escalation jobs (default `<queue>-escalations`).
    #[arg(long, env = "RINGBACK_ESCALATION_QUEUE")]
    pub escalation_queue: Option<String>,
    /// Also text this number when a callback is escalated.
    #[arg(long, env = "RINGBACK_FALLBACK_TO")]
    pub fallback_to: Option<String>,
    #[arg(long, env = "RINGBACK_DELIVERY_DEADLINE_MS", default_value_t = 900_000)]
    pub delivery_deadline_ms: u64,
    /// Look an accepted message up when no terminal receipt came within this long.
    #[arg(long, env = "RINGBACK_RECEIPT_POLL_AFTER_MS", default_value_t = 60_000)]
    pub receipt_poll_after_ms: u64,
    /// Every sender this deployment's texts go out from besides TWILIO_FROM or the Messaging
    /// Service (the legacy worker's numbers, a service's SID), comma-separated: a lookup then
    /// never takes a message from another sender of the account for this deployment's.
    #[arg(long, env = "RINGBACK_SENDERS")]
    pub senders: Option<String>,
    /// Escalate a callback held by a fault of this deployment (a sender the account does not
    /// own, a region it may not text) once it was held this long; it is still texted once fixed.
    #[arg(long, env = "RINGBACK_HOLD_ESCALATE_MS", default_value_t = 900_000)]
    pub hold_escalate_ms: u64,
    /// The legacy workers' Twilio create timeout (twilio-node's default): the reconcile window
    /// must outlast it.
    #[arg(
        long,
        env = "RINGBACK_LEGACY_CREATE_TIMEOUT_MS",
        default_value_t = 30_000
    )]
    pub legacy_create_timeout_ms: u64,
    /// The legacy workers' BullMQ lock duration, when it differs from ringback's.
    #[arg(long, env = "RINGBACK_LEGACY_LOCK_DURATION_MS")]
    pub legacy_lock_duration_ms: Option<u64>,
    /// The legacy workers' BullMQ stalled interval, when it differs from ringback's.
    #[arg(long, env = "RINGBACK_LEGACY_STALLED_INTERVAL_MS")]
    pub legacy_stalled_interval_ms: Option<u64>,
    /// The job names that are callbacks, comma-separated. A job of any other name is not
    /// ringback's: it goes back to delayed for a few seconds, its attempts untouched, for the
    /// worker that handles it.
    #[arg(
        long,
        env = "RINGBACK_CALLBACK_JOB_NAMES",
        default_value = "agent-callback"
    )]
    pub callback_job_names: String,
}

impl SmsArgs {
    /// The window's settings; every broken one at once.
    pub fn to_config(&self) -> Result<crate::callbacks::sms::SmsConfig, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        let crash_at = self
            .crash_at
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(str::parse)
            .transpose();
        let crash_at = errors.take(crash_at);
        if matches!(crash_at, Some(Some(_))) && !self.drill {
            errors.push(ConfigError::new(
                "RINGBACK_CRASH_AT",
                "honoured only in drill mode (RINGBACK_DRILL=1): it aborts this process on purpose",
            ));
        }
        if let Some(url) = self.status_callback_url.as_deref()
            && let Some(host) = crate::queue::config::documentation_host(url)
        {
            errors.push(ConfigError::new(
                "RINGBACK_STATUS_CALLBACK_URL",
                format!("{host} is a documentation host nobody can reach: set serve's public URL, or leave it empty to rely on polling"),
            ));
        }
        let fallback_to = match self.fallback_to.as_deref().filter(|f| !f.is_empty()) {
            Some(f) if !crate::twilio::message::is_e164(f) => {
                errors.push(ConfigError::new(
                    "RINGBACK_FALLBACK_TO",
                    "must be an E.164 number",
                ));
                None
            }
            other => other.map(str::to_string),
        };
        let senders: Vec<String> = self
            .senders
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let refused: Vec<&str> = senders
            .iter()
            .filter(|s| crate::twilio::message::sender_form(s).is_none())
            .map(String::as_str)
            .collect();
        if !refused.is_empty() {
            errors.push(ConfigError::new(
                "RINGBACK_SENDERS",
                format!(
                    "{} {} not a sender Twilio accepts (E.164 number, short code, alphanumeric ID, or MG service SID)",
                    refused.join(", "),
                    if refused.len() == 1 { "is" } else { "are" }
                ),
            ));
        }
        let callback_job_names: Vec<String> = self
            .callback_job_names
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if callback_job_names.is_empty() {
            errors.push(ConfigError::new(
                "RINGBACK_CALLBACK_JOB_NAMES",
                "names no job: every job would be left for another worker",
            ));
        }
        if callback_job_names
            .iter()
            .any(|n| n.chars().any(char::is_control))
        {
            errors.push(ConfigError::new(
                "RINGBACK_CALLBACK_JOB_NAMES",
                "a name holds control characters",
            ));
        }
        let crash_at = errors.or(crash_at)?;
        Ok(crate::callbacks::sms::SmsConfig {
            claim_prefix: self.claim_prefix.clone(),
            pending_ttl: Duration::from_millis(self.pending_ttl_ms),
            claim_lease: Duration::from_millis(self.claim_lease_ms),
            unknown_escalate: Duration::from_millis(self.unknown_escalate_ms),
            sent_ttl: Duration::from_millis(self.sent_ttl_ms),
            reconcile_window: Duration::from_millis(self.reconcile_window_ms),
            reconcile_poll: Duration::from_millis(self.reconcile_poll_ms),
            retry_later_default: Duration::from_millis(self.retry_later_ms),
            status_callback_url: self.status_callback_url.clone().filter(|u| !u.is_empty()),
            crash_at,
            escalation_queue: self.escalation_queue.clone().filter(|q| !q.is_empty()),
            fallback_to,
            delivery_deadline: Duration::from_millis(self.delivery_deadline_ms),
            receipt_poll_after: Duration::from_millis(self.receipt_poll_after_ms),
            senders,
            callback_job_names,
            hold_escalate: Duration::from_millis(self.hold_escalate_ms),
            legacy: crate::callbacks::sms::LegacyFleet {
                create_timeout: Duration::from_millis(self.legacy_create_timeout_ms),
                lock_duration: self.legacy_lock_duration_ms.map(Duration::from_millis),
                stalled_interval: self.legacy_stalled_interval_ms.map(Duration::from_millis),
            },
        })
    }

    /// The effective settings, for `check-config` (read even when invalid). The fallback
    /// number is masked: phone numbers never appear in full.
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("RINGBACK_CLAIM_PREFIX", self.claim_prefix.clone()),
            ("RINGBACK_PENDING_TTL_MS", self.pending_ttl_ms.to_string()),
            ("RINGBACK_CLAIM_LEASE_MS", self.claim_lease_ms.to_string()),
            (
                "RINGBACK_UNKNOWN_ESCALATE_MS",
                self.unknown_escalate_ms.to_string(),
            ),
            ("RINGBACK_SENT_TTL_MS", self.sent_ttl_ms.to_string()),
            (
                "RINGBACK_RECONCILE_WINDOW_MS",
                self.reconcile_window_ms.to_string(),
            ),
            (
                "RINGBACK_RECONCILE_POLL_MS",
                self.reconcile_poll_ms.to_string(),
            ),
            ("RINGBACK_RETRY_LATER_MS", self.retry_later_ms.to_string()),
            (
                "RINGBACK_STATUS_CALLBACK_URL",
                self.status_callback_url.clone().unwrap_or_default(),
            ),
            (
                "RINGBACK_DELIVERY_DEADLINE_MS",
                self.delivery_deadline_ms.to_string(),
            ),
            (
                "RINGBACK_RECEIPT_POLL_AFTER_MS",
                self.receipt_poll_after_ms.to_string(),
            ),
            (
                "RINGBACK_HOLD_ESCALATE_MS",
                self.hold_escalate_ms.to_string(),
            ),
            (
                "RINGBACK_CALLBACK_JOB_NAMES",
                self.callback_job_names.clone(),
            ),
            (
                "RINGBACK_LEGACY_CREATE_TIMEOUT_MS",
                self.legacy_create_timeout_ms.to_string(),
            ),
        ];
        if let Some(v) = self.legacy_lock_duration_ms {
            out.push(("RINGBACK_LEGACY_LOCK_DURATION_MS", v.to_string()));
        }
        if let Some(v) = self.legacy_stalled_interval_ms {
            out.push(("RINGBACK_LEGACY_STALLED_INTERVAL_MS", v.to_string()));
        }
        if let Some(q) = &self.escalation_queue {
            out.push(("RINGBACK_ESCALATION_QUEUE", q.clone()));
        }
        if let Some(s) = self.senders.as_deref().filter(|s| !s.is_empty()) {
            out.push(("RINGBACK_SENDERS", s.to_string()));
        }
        if let Some(f) = &self.fallback_to {
            out.push(("RINGBACK_FALLBACK_TO", crate::redact::mask(f)));
        }
        if let Some(c) = &self.crash_at {
            out.push(("RINGBACK_CRASH_AT", c.clone()));
        }
        out
    }
}

/// Settings of `ringback serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    #[arg(long, env = "RINGBACK_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: std::net::SocketAddr,
    /// Bind to a non-loopback address (behind a proxy that terminates TLS).
    #[arg(long, env = "RINGBACK_ALLOW_PUBLIC_BIND", default_value_t = false)]
    pub allow_public_bind: bool,
    /// The base URL Twilio calls (scheme, host, port): signatures are checked over it.
    #[arg(long, env = "RINGBACK_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Bearer token of /api/notify/send and /api/notify/callbacks.
    #[arg(long, env = "RINGBACK_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// The Twilio auth token status callbacks are signed with.
    #[arg(
        long = "twilio-auth-token",
        env = "TWILIO_AUTH_TOKEN",
        hide_env_values = true
    )]
    pub twilio_auth_token: Option<String>,
    /// During a Twilio auth-token rotation: the other token signatures may be made with.
    #[arg(
        long = "twilio-auth-token-secondary",
        env = "TWILIO_AUTH_TOKEN_SECONDARY",
        hide_env_values = true
    )]
    pub twilio_auth_token_secondary: Option<String>,
    /// Optional bearer token that reads callback records only.
    #[arg(long, env = "RINGBACK_READ_TOKEN", hide_env_values = true)]
    pub read_token: Option<String>,
    /// Optional bearer token that sends only (the allowlist and rate limits apply to it).
    #[arg(long, env = "RINGBACK_SEND_TOKEN", hide_env_values = true)]
    pub send_token: Option<String>,
    /// Destinations `/api/notify/send` accepts: +E.164 numbers, or prefixes ending in `*`,
    /// comma-separated (default: every destination).
    #[arg(long, env = "RINGBACK_SEND_ALLOW_TO")]
    pub send_allow_to: Option<String>,
    /// Sends per token: `N/s`, `N/min` or `N/h` (default off).
    #[arg(long, env = "RINGBACK_SEND_RATE_PER_TOKEN")]
    pub send_rate_per_token: Option<String>,
    /// Sends per destination number: `N/s`, `N/min` or `N/h` (default off).
    #[arg(long, env = "RINGBACK_SEND_RATE_PER_DESTINATION")]
    pub send_rate_per_destination: Option<String>,
    /// Apply the allowlist and the rate limits to RINGBACK_API_TOKEN too (the legacy caller
    /// never retries: a refusal is a lost callback).
    #[arg(long, env = "RINGBACK_SEND_LIMITS_LEGACY", default_value_t = false)]
    pub send_limits_legacy: bool,
    /// The directory of saved `ringback drill … --json` reports the console shows.
    #[arg(long, env = "RINGBACK_DRILL_REPORTS")]
    pub drill_reports: Option<std::path::PathBuf>,
}

/// What `ringback serve` needs, validated.
pub struct ServeConfig {
    pub listen: std::net::SocketAddr,
    pub public_url: String,
    pub twilio_auth_token: crate::twilio::Secret,
    pub twilio_auth_token_secondary: Option<crate::twilio::Secret>,
    pub tokens: crate::edge::access::Tokens,
    pub send_policy: crate::edge::access::SendPolicyConfig,
    /// `RINGBACK_DRILL_REPORTS`: the console's drill reports (an existing directory).
    pub drill_reports: Option<std::path::PathBuf>,
}

impl ServeArgs {
    /// What `serve` needs; every broken or missing setting at once.
    pub fn to_config(&self) -> Result<ServeConfig, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        if !self.listen.ip().is_loopback() && !self.allow_public_bind {
            errors.push(ConfigError::new(
                "RINGBACK_LISTEN",
                "binds to loopback unless RINGBACK_ALLOW_PUBLIC_BIND=true (put a TLS proxy in front)",
            ));
        }
        let public_url = errors.require(
            self.public_url
                .clone()
                .filter(|u| u.starts_with("https://") || u.starts_with("http://")),
            "RINGBACK_PUBLIC_URL",
            "required: the http(s) base URL Twilio calls",
        );
        if let Some(url) = self.public_url.as_deref()
            && let Some(host) = crate::queue::config::documentation_host(url)
        {
            errors.push(ConfigError::new(
                "RINGBACK_PUBLIC_URL",
                format!(
                    "{host} is a documentation host: set the URL Twilio calls, as Twilio sees it"
                ),
            ));
        }
        let api_token = errors.require(
            self.api_token.clone().filter(|t| t.len() >= 16),
            "RINGBACK_API_TOKEN",
            "required, at least 16 characters",
        );
        let twilio_auth_token = errors.require(
            self.twilio_auth_token.clone().filter(|t| !t.is_empty()),
            "TWILIO_AUTH_TOKEN",
            "required to check X-Twilio-Signature",
        );
        let token = |name: &'static str, v: &Option<String>, errors: &mut ConfigErrors| match v {
            None => None,
            Some(t) if t.is_empty() => None,
            Some(t) if t.len() < 16 => {
                errors.push(ConfigError::new(name, "at least 16 characters when set"));
                None
            }
            Some(t) => Some(crate::twilio::Secret::new(t.clone())),
        };
        let read = token("RINGBACK_READ_TOKEN", &self.read_token, &mut errors);
        let send = token("RINGBACK_SEND_TOKEN", &self.send_token, &mut errors);
        let given = [&self.api_token, &self.read_token, &self.send_token];
        let set: Vec<&String> = given
            .iter()
            .filter_map(|t| t.as_ref())
            .filter(|t| !t.is_empty())
            .collect();
        if (1..set.len()).any(|i| set[..i].contains(&set[i])) {
            errors.push(ConfigError::new(
                "RINGBACK_READ_TOKEN",
                "RINGBACK_API_TOKEN, RINGBACK_READ_TOKEN and RINGBACK_SEND_TOKEN must differ",
            ));
        }
        let secondary = self
            .twilio_auth_token_secondary
            .clone()
            .filter(|t| !t.is_empty())
            .map(crate::twilio::Secret::new);
        let policy = errors.take(crate::edge::access::SendPolicyConfig::parse(
            self.send_allow_to.as_deref(),
            self.send_rate_per_token.as_deref(),
            self.send_rate_per_destination.as_deref(),
            self.send_limits_legacy,
        ));
        let drill_reports = self
            .drill_reports
            .clone()
            .filter(|d| !d.as_os_str().is_empty());
        if let Some(d) = drill_reports.as_ref().filter(|d| !d.is_dir()) {
            errors.push(ConfigError::new(
                "RINGBACK_DRILL_REPORTS",
                format!("{}: not a directory (create it, or unset it)", d.display()),
            ));
        }
        let parts = public_url.zip(api_token).zip(twilio_auth_token).zip(policy);
        let (((public_url, api_token), twilio_auth_token), send_policy) = errors.or(parts)?;
        Ok(ServeConfig {
            listen: self.listen,
            public_url,
            twilio_auth_token: crate::twilio::Secret::new(twilio_auth_token),
            twilio_auth_token_secondary: secondary,
            tokens: crate::edge::access::Tokens {
                legacy: crate::twilio::Secret::new(api_token),
                send,
                read,
            },
            send_policy,
            drill_reports,
        })
    }
}

/// Whether `base` is Twilio's own API (not the simulator or a test double).
fn is_twilio_api(base: &str) -> bool {
    let rest = base.split_once("://").map_or(base, |(_, r)| r);
    let host = rest.split(['/', ':', '?']).next().unwrap_or("");
    host.eq_ignore_ascii_case("api.twilio.com")
        || host.to_ascii_lowercase().ends_with(".twilio.com")
}
