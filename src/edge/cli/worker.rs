//! Redis, queue and worker settings (`ringback worker`, and the queue every subcommand names).

use crate::queue::config::WorkerConfig;
use crate::queue::job::KeepJobs;
use crate::settings::{ConfigError, ConfigErrors};
use clap::Args;
use std::time::Duration;

/// Redis and queue settings.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Redis and queue")]
pub struct QueueArgs {
    /// The Redis the legacy Node side uses: `redis://`, `rediss://` (TLS), `unix:///path/to/redis.sock`
    /// (a local socket), `redis+cluster://host:port,host:port` (`rediss+cluster://`) for a
    /// Redis Cluster, or `redis+sentinel://[user:password@]host:port,host:port/<master name>[/<db>]`
    /// (`rediss+sentinel://`) for Redis Sentinel, the credentials being the master's.
    #[arg(long, env = "REDIS_URL", default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// BullMQ's key prefix, as the Node producer's `prefix` (`{bull}` on a Redis Cluster).
    #[arg(long, env = "RINGBACK_PREFIX", default_value = "bull")]
    pub prefix: String,
    /// The BullMQ queue the callbacks are added to (the Node producer's `Queue` name).
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
    /// The sentinels' own user, if they have one.
    #[arg(long, env = "RINGBACK_SENTINEL_USERNAME")]
    pub sentinel_username: Option<String>,
    /// The sentinels' own password (sentinel.conf's `requirepass`), if it differs from the
    /// master's.
    #[arg(long, env = "RINGBACK_SENTINEL_PASSWORD", hide_env_values = true)]
    pub sentinel_password: Option<String>,
    /// TLS to the sentinels, `true` or `false` (unset: as REDIS_URL's scheme).
    #[arg(long, env = "RINGBACK_SENTINEL_TLS")]
    pub sentinel_tls: Option<bool>,
    /// Replicas that must acknowledge a claim and a sent marker (`WAIT`). Unset: 1 while the
    /// key's master has a connected replica that acknowledged within 10 s (or the sentinels list
    /// one), else 0.
    #[arg(long, env = "RINGBACK_REDIS_WAIT_REPLICAS")]
    pub redis_wait_replicas: Option<usize>,
    /// How long such a `WAIT` may take; a claim not acknowledged by then is not sent on (held).
    #[arg(long, env = "RINGBACK_REDIS_WAIT_TIMEOUT_MS", default_value_t = 500)]
    pub redis_wait_timeout_ms: u64,
    /// Each claim, inbound message and key waits for the append-only file on disk (`WAITAOF`:
    /// Redis 7.2+, Valkey).
    #[arg(
        long,
        env = "RINGBACK_REDIS_WAIT_AOF",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub redis_wait_aof: bool,
}

impl QueueArgs {
    /// The TLS files, as the connection takes them.
    pub fn tls(&self) -> crate::store::connection::RedisTls {
        crate::store::connection::RedisTls {
            ca_file: self.redis_ca_file.clone(),
            client_cert: self.redis_client_cert.clone(),
            client_key: self.redis_client_key.clone(),
            sentinel: crate::store::sentinel::SentinelAuth {
                username: self.sentinel_username.clone(),
                password: self.sentinel_password.clone(),
                tls: self.sentinel_tls,
            },
        }
    }

    /// The replica wait after a claim and a sent marker.
    pub fn redis_wait(&self) -> crate::store::replicas::ReplicaWait {
        crate::store::replicas::ReplicaWait {
            replicas: self.redis_wait_replicas,
            timeout: Duration::from_millis(self.redis_wait_timeout_ms),
            aof: self.redis_wait_aof,
        }
    }

    /// A Redis client for these settings, the TLS invariants checked first.
    pub fn client(&self) -> Result<crate::store::connection::Client, ConfigErrors> {
        let problems =
            crate::queue::config::address_problems(&self.redis_url, &self.prefix, &self.queue);
        if !problems.is_empty() {
            let mut errors = ConfigErrors::default();
            for e in problems {
                errors.push(e);
            }
            return Err(errors);
        }
        let tls = self.tls();
        tls.validate(&self.redis_url)?;
        Ok(crate::store::connection::client(&self.redis_url, &tls)
            .map(|c| c.with_wait(self.redis_wait()))
            .map_err(|e| match e {
                crate::error::Error::Config(c) => c,
                e => ConfigError::new("REDIS_URL", e.to_string()),
            })?)
    }
}

/// Worker settings (BullMQ Worker options).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Worker (BullMQ options)")]
pub struct WorkerArgs {
    /// Jobs run at once (BullMQ's `concurrency`), 1 to 10000.
    #[arg(long, env = "RINGBACK_CONCURRENCY", default_value_t = 1)]
    pub concurrency: usize,
    /// BullMQ's `maxStartedAttempts` (0 or unset: no limit).
    #[arg(long, env = "RINGBACK_MAX_STARTED_ATTEMPTS")]
    pub max_started_attempts: Option<u32>,
    /// BullMQ's `lockDuration`: keep it equal to the legacy workers'.
    #[arg(long, env = "RINGBACK_LOCK_DURATION_MS", default_value_t = 30_000)]
    pub lock_duration_ms: u64,
    /// BullMQ's `lockRenewTime`: how often a running job's lock is renewed (default: half the
    /// lock duration, as BullMQ).
    #[arg(long, env = "RINGBACK_LOCK_RENEW_TIME_MS")]
    pub lock_renew_time_ms: Option<u64>,
    /// BullMQ's `stalledInterval`: how often stalled jobs are looked for (keep it equal to the
    /// legacy workers').
    #[arg(long, env = "RINGBACK_STALLED_INTERVAL_MS", default_value_t = 30_000)]
    pub stalled_interval_ms: u64,
    /// BullMQ's `maxStalledCount`: stalls a job survives before it is failed.
    #[arg(long, env = "RINGBACK_MAX_STALLED_COUNT", default_value_t = 1)]
    pub max_stalled_count: u32,
    /// How long running jobs may finish after SIGTERM (a send in flight always gets its sent
    /// marker); the unit's stop timeout must exceed it plus TWILIO_TIMEOUT_MS.
    #[arg(long, env = "RINGBACK_SHUTDOWN_GRACE_MS", default_value_t = 30_000)]
    pub shutdown_grace_ms: u64,
    /// BullMQ's `drainDelay`: how long a blocking fetch waits on an empty queue.
    #[arg(long, env = "RINGBACK_DRAIN_DELAY_MS", default_value_t = 5_000)]
    pub drain_delay_ms: u64,
    /// Written on each job as `pb` (processedBy), and the `:w:<name>` part of the blocking
    /// connection's client name, as a Node `Worker` names its own (`Queue.getWorkers()`).
    #[arg(long, env = "RINGBACK_WORKER_NAME")]
    pub worker_name: Option<String>,
    /// Worker default for jobs without the option: `true`, `false`, a count, or JSON `{"age":s,"count":n}`.
    #[arg(long, env = "RINGBACK_REMOVE_ON_COMPLETE")]
    pub remove_on_complete: Option<String>,
    /// As RINGBACK_REMOVE_ON_COMPLETE, for failed jobs.
    #[arg(long, env = "RINGBACK_REMOVE_ON_FAIL")]
    pub remove_on_fail: Option<String>,
    /// Worker rate limit as `<max>/<duration_ms>`, e.g. `10/1000`.
    #[arg(long, env = "RINGBACK_LIMITER")]
    pub limiter: Option<String>,
    /// Keep BullMQ metrics with this many per-minute data points.
    #[arg(long, env = "RINGBACK_METRICS_DATA_POINTS")]
    pub metrics_data_points: Option<u32>,
    // last: the flattened struct's heading then holds for what follows it, not for these
    /// The Redis and queue settings, shared with the other subcommands.
    #[command(flatten)]
    pub queue: QueueArgs,
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
        let lock_renew = self.lock_renew_time_ms.unwrap_or(self.lock_duration_ms / 2);
        let mut out = Self::effective_queue(&self.queue);
        out.extend([
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

    /// The rules between the worker's settings, each with its verdict.
    pub fn invariants(&self) -> Vec<crate::settings::Invariant> {
        let lock = self.lock_duration_ms;
        let renew = self.lock_renew_time_ms.unwrap_or(lock / 2);
        vec![crate::settings::Invariant::new(
            "RINGBACK_LOCK_RENEW_TIME_MS",
            renew > 0 && renew < lock,
            crate::settings::Severity::Error,
            format!(
                "0 < RINGBACK_LOCK_RENEW_TIME_MS ({renew}) < RINGBACK_LOCK_DURATION_MS ({lock})"
            ),
            "locks would expire under running jobs",
        )]
    }

    /// The effective Redis and queue settings, the password masked.
    pub fn effective_queue(q: &QueueArgs) -> Vec<(&'static str, String)> {
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
        if let Some(u) = &q.sentinel_username {
            out.push(("RINGBACK_SENTINEL_USERNAME", u.clone()));
        }
        if q.sentinel_password.is_some() {
            out.push(("RINGBACK_SENTINEL_PASSWORD", "***".into()));
        }
        if let Some(t) = q.sentinel_tls {
            out.push(("RINGBACK_SENTINEL_TLS", t.to_string()));
        }
        out.extend([
            (
                "RINGBACK_REDIS_WAIT_REPLICAS",
                q.redis_wait_replicas.map_or(
                    "auto (1 while the master has a connected replica, else 0)".into(),
                    |n| n.to_string(),
                ),
            ),
            (
                "RINGBACK_REDIS_WAIT_TIMEOUT_MS",
                q.redis_wait_timeout_ms.to_string(),
            ),
            ("RINGBACK_REDIS_WAIT_AOF", q.redis_wait_aof.to_string()),
            ("RINGBACK_PREFIX", q.prefix.clone()),
            ("RINGBACK_QUEUE", q.queue.clone()),
        ]);
        out
    }
}
