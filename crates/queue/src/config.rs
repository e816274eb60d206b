//! Worker configuration: a plain struct with `Duration` fields and BullMQ's defaults, validated
//! once. Environment and flag parsing live in `cli`, not here.

use std::time::Duration;

use crate::job::KeepJobs;
use ringback_shared::settings::{ConfigError, ConfigErrors};

/// The host of `url` when it is one reserved for documentation (`example.com`, `.org`, `.net`,
/// their subdomains, and the `.example` top-level domain; RFC 2606): a URL copied from an
/// example that nobody can ever reach.
pub fn documentation_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = host_port
        .split(':')
        .next()
        .unwrap_or("")
        .trim_end_matches('.');
    let lower = host.to_ascii_lowercase();
    let reserved = ["example.com", "example.org", "example.net"]
        .iter()
        .any(|d| lower == *d || lower.ends_with(&format!(".{d}")))
        || lower == "example"
        || lower.ends_with(".example");
    reserved.then_some(host)
}

/// Why `value` reads as a value copied from the docs rather than a deployment's own: the
/// docs' placeholder words (`your-…`, `replace-with-…`, `changeme`), a run of `x` standing for
/// digits (`ACxxxx…`), an `<angle-bracketed>` name, or a documentation host. Such a value
/// passes every syntax check and fails only when Redis or Twilio is first called, so it is
/// refused where settings are read.
pub fn placeholder(value: &str) -> Option<String> {
    let lower = value.to_ascii_lowercase();
    let words = [
        "your-",
        "your_",
        "yourcompany",
        "replace-with",
        "replace_with",
        "changeme",
        "change-me",
        "placeholder",
    ];
    if let Some(word) = words.iter().find(|w| lower.contains(*w)) {
        return Some(format!(
            "{value:?} is a placeholder from the docs (it holds {word:?})"
        ));
    }
    if lower.contains("xxxxxx") {
        return Some(format!(
            "{value:?} is a placeholder from the docs (x stands for digits)"
        ));
    }
    if let Some(open) = value.find('<')
        && value[open..].contains('>')
    {
        return Some(format!(
            "{value:?} is a placeholder from the docs (an <angle-bracketed> name)"
        ));
    }
    if value.contains("://")
        && let Some(host) = documentation_host(value)
    {
        return Some(format!("{host} is a documentation host nobody can reach"));
    }
    None
}

/// The host of an `http(s)://` or `redis…://` URL, when it has one (`https://` alone has none).
pub fn url_host(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    (!host.is_empty()).then_some(host)
}

/// The hash tag of a queue's keys (`{bull}` in `{bull}:notify:wait`), by Redis Cluster's rule:
/// the text between the first `{` and the next `}`, when not empty.
pub fn hash_tag(prefix: &str, queue: &str) -> Option<String> {
    let key = format!("{prefix}:{queue}:");
    let open = key.find('{')?;
    let close = key[open + 1..].find('}')?;
    (close > 0).then(|| key[open..open + close + 2].to_string())
}

/// What a deployment's queue address gives away before anything connects: a placeholder host
/// from the docs, and on a Redis Cluster a prefix and queue name without a hash tag.
pub fn address_problems(redis_url: &str, prefix: &str, queue: &str) -> Vec<ConfigError> {
    let mut out = vec![];
    let cluster =
        redis_url.starts_with("redis+cluster://") || redis_url.starts_with("rediss+cluster://");
    if cluster && hash_tag(prefix, queue).is_none() {
        out.push(ConfigError::new(
            "RINGBACK_PREFIX",
            format!(
                "{prefix:?} has no hash tag: on a Redis Cluster the queue's keys need one, such as \
                 RINGBACK_PREFIX={{bull}} (the Node side's prefix too), because BullMQ's scripts \
                 touch several keys of the queue at once and a Cluster refuses keys of different \
                 slots in one script"
            ),
        ));
    }
    if let Some(why) = placeholder(redis_url) {
        out.push(ConfigError::new("REDIS_URL", why));
    }
    out
}

/// Everything a worker needs to run against one queue.
#[derive(Debug, Clone)]
pub struct WorkerConfig {
    /// The Redis to work against (`redis://`, `rediss://`, `unix://`, `redis+cluster://`,
    /// `redis+sentinel://`); it may hold a password, which `connection::describe` masks.
    pub redis_url: String,
    /// CA and client certificate for `rediss://`.
    pub redis_tls: ringback_store::connection::RedisTls,
    /// Replicas to `WAIT` for after a claim and a sent marker (see `ringback_store::replicas::ReplicaWait`).
    pub redis_wait: ringback_store::replicas::ReplicaWait,
    /// BullMQ's key prefix (`bull`; `{bull}` on a Redis Cluster): keys are `<prefix>:<queue>:…`.
    pub prefix: String,
    /// The BullMQ queue name, as the Node producer's `Queue` names it.
    pub queue: String,
    /// Jobs processed at once by this process.
    pub concurrency: usize,
    /// Lock TTL; a job whose lock expires is presumed dead and recovered by a stall sweep.
    pub lock_duration: Duration,
    /// Each running job's lock is renewed every `lock_renew_time / 2 ..= lock_renew_time`.
    pub lock_renew_time: Duration,
    /// Period of the stall sweep (and TTL of its queue-wide throttle key).
    pub stalled_interval: Duration,
    /// Stall recoveries a job may have before it is failed (deferred failure `defa`).
    pub max_stalled_count: u32,
    /// On SIGTERM, how long running jobs may take to finish before we exit anyway.
    pub shutdown_grace: Duration,
    /// BZPOPMIN timeout while idle (BullMQ `drainDelay`).
    pub drain_delay: Duration,
    /// Written to each job as `pb` (processedBy) when set.
    pub name: Option<String>,
    /// Worker defaults; a job's own option wins.
    pub remove_on_complete: Option<KeepJobs>,
    /// What to keep of failed jobs when a job sets no `removeOnFail` (`None`: keep all).
    pub remove_on_fail: Option<KeepJobs>,
    /// Worker-side rate limit: at most `max` jobs per `duration`.
    pub limiter: Option<(u64, Duration)>,
    /// Keep this many per-minute data points in `metrics:*` (BullMQ `metrics.maxDataPoints`).
    pub metrics_max_data_points: Option<u32>,
    /// BullMQ's `maxStartedAttempts` (`None`: no limit): a job activated more than this many
    /// times fails at once.
    pub max_started_attempts: Option<u32>,
}

impl Default for WorkerConfig {
    fn default() -> Self {
        Self {
            redis_url: "redis://127.0.0.1:6379".into(),
            redis_tls: Default::default(),
            redis_wait: Default::default(),
            prefix: "bull".into(),
            queue: "notify".into(),
            concurrency: 1,
            lock_duration: Duration::from_millis(30_000),
            lock_renew_time: Duration::from_millis(15_000),
            stalled_interval: Duration::from_millis(30_000),
            max_stalled_count: 1,
            shutdown_grace: Duration::from_millis(30_000),
            drain_delay: Duration::from_secs(5),
            name: None,
            remove_on_complete: None,
            remove_on_fail: None,
            limiter: None,
            metrics_max_data_points: None,
            max_started_attempts: None,
        }
    }
}

impl WorkerConfig {
    /// Check every invariant; the error names the setting (by its environment name) that breaks
    /// the first one. [`WorkerConfig::problems`] lists them all.
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self.problems().iter().next() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    /// Every broken invariant, each naming its setting (by its environment name).
    pub fn problems(&self) -> ConfigErrors {
        fn need(ok: bool, setting: &'static str, problem: &str) -> Option<ConfigError> {
            (!ok).then(|| ConfigError::new(setting, problem))
        }
        let found = [
            ringback_store::connection::check_url(&self.redis_url).err(),
            self.redis_tls.validate(&self.redis_url).err(),
            need(
                (1..=5_000).contains(&self.redis_wait.timeout.as_millis()),
                "RINGBACK_REDIS_WAIT_TIMEOUT_MS",
                "must be 1..=5000 (WAIT with 0 blocks until the replicas answer, and a wait must end well within the 10 s command timeout)",
            ),
            need(
                !self.prefix.is_empty(),
                "RINGBACK_PREFIX",
                "must not be empty",
            ),
            need(
                !self.queue.is_empty() && !self.queue.contains(':'),
                "RINGBACK_QUEUE",
                "must be a non-empty name without ':' (BullMQ refuses such queue names)",
            ),
            need(
                (1..=10_000).contains(&self.concurrency),
                "RINGBACK_CONCURRENCY",
                "must be between 1 and 10000",
            ),
            need(
                self.lock_duration >= Duration::from_millis(100),
                "RINGBACK_LOCK_DURATION_MS",
                "must be at least 100 ms",
            ),
            need(
                !self.lock_renew_time.is_zero() && self.lock_renew_time < self.lock_duration,
                "RINGBACK_LOCK_DURATION_MS",
                "the lock renewal time must be shorter than the lock duration, or locks expire \
                 under running jobs",
            ),
            need(
                self.stalled_interval >= Duration::from_millis(10),
                "RINGBACK_STALLED_INTERVAL_MS",
                "must be at least 10 ms",
            ),
            need(
                self.limiter
                    .is_none_or(|(max, duration)| max > 0 && !duration.is_zero()),
                "RINGBACK_LIMITER",
                "max and duration must both be positive",
            ),
        ];
        let mut errors = ConfigErrors::default();
        for e in found.into_iter().flatten() {
            errors.push(e);
        }
        for e in address_problems(&self.redis_url, &self.prefix, &self.queue) {
            errors.push(e);
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documentation_hosts_are_named() {
        for url in [
            "https://ringback.example.com/api/notify/webhook/status",
            "https://EXAMPLE.org",
            "http://user@example.net:8443/x",
            "https://ringback.example/",
        ] {
            assert!(documentation_host(url).is_some(), "{url}");
        }
        for url in [
            "https://ringback.acme.com",
            "https://notexample.com/x",
            "http://127.0.0.1:3000",
        ] {
            assert_eq!(documentation_host(url), None, "{url}");
        }
    }

    #[test]
    fn defaults_are_bullmq_defaults_and_valid() {
        let c = WorkerConfig::default();
        assert_eq!(c.lock_duration, Duration::from_secs(30));
        assert_eq!(c.lock_renew_time, c.lock_duration / 2);
        assert_eq!(c.max_stalled_count, 1);
        c.validate().unwrap();
    }

    #[test]
    fn refusals_name_the_setting() {
        let c = WorkerConfig {
            concurrency: 0,
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().setting, "RINGBACK_CONCURRENCY");
        let c = WorkerConfig {
            queue: "a:b".into(),
            ..Default::default()
        };
        assert_eq!(c.validate().unwrap_err().setting, "RINGBACK_QUEUE");
        let c = WorkerConfig {
            lock_renew_time: Duration::from_secs(40),
            ..Default::default()
        };
        assert_eq!(
            c.validate().unwrap_err().setting,
            "RINGBACK_LOCK_DURATION_MS"
        );
    }

    #[test]
    fn problems_lists_every_broken_setting() {
        let c = WorkerConfig {
            redis_url: "http://h".into(),
            queue: String::new(),
            concurrency: 0,
            ..Default::default()
        };
        let names: Vec<_> = c.problems().iter().map(|e| e.setting).collect();
        assert_eq!(
            names,
            ["REDIS_URL", "RINGBACK_QUEUE", "RINGBACK_CONCURRENCY"]
        );
    }
}
