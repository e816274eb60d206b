//! Error types, one enum per concern. A job's outcome is never an error (see `processor`);
//! these are infrastructure and configuration failures.

/// A BullMQ script refused an operation. Not a job failure: for −2/−6 the job now belongs to
/// stall recovery or another worker, and must be left alone, as a Node worker leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptCode {
    #[error("job does not exist (-1)")]
    JobMissing,
    #[error("job lock is missing (-2)")]
    LockMissing,
    #[error("job is not in the active list (-3)")]
    NotActive,
    #[error("job has pending children (-4)")]
    PendingChildren,
    #[error("job lock is owned by another worker (-6)")]
    LockMismatch,
    #[error("job has failed children (-9)")]
    FailedChildren,
    #[error("script answered code {0}")]
    Other(i64),
}

impl ScriptCode {
    pub fn from_code(code: i64) -> Self {
        match code {
            -1 => Self::JobMissing,
            -2 => Self::LockMissing,
            -3 => Self::NotActive,
            -4 => Self::PendingChildren,
            -6 => Self::LockMismatch,
            -9 => Self::FailedChildren,
            other => Self::Other(other),
        }
    }

    /// The job is no longer ours: leave it untouched.
    pub fn is_lock_lost(self) -> bool {
        matches!(
            self,
            Self::LockMissing | Self::LockMismatch | Self::NotActive
        )
    }
}

/// Redis-side failures of the worker.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Connecting failed: the message names the Redis tried (password masked, see
    /// [`crate::store::connection::describe`]), so a person knows which one.
    #[error("redis at {addr}: {source}")]
    Connect {
        addr: String,
        #[source]
        source: redis::RedisError,
    },
    /// Shutdown was asked for before Redis first answered: a clean stop, not a failure (the
    /// binary exits 0 on it; `Worker::run` returns `Ok`).
    #[error("stopped before Redis answered")]
    Stopped,
    /// A question that cannot be fixed yet (every reply code is taken by an open question).
    #[error("the run's question: {0}")]
    Question(String),
    #[error("unexpected reply from {script}: {detail}")]
    Reply {
        script: &'static str,
        detail: String,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("twilio client: {0}")]
    Twilio(String),
    /// The HTTP listener failed.
    #[error("listener: {0}")]
    Listener(#[source] std::io::Error),
    /// A task the process cannot run without ended (it panicked): the process stops rather
    /// than run on half-opened.
    #[error("{0}")]
    Task(String),
    /// This Redis refuses a command ringback cannot run without (renamed away, or forbidden by
    /// an ACL or the provider): found at start by [`crate::store::probe`].
    #[error("Redis refuses {command}: {cost} (Redis answered: {answer})")]
    Refused {
        command: &'static str,
        cost: &'static str,
        answer: String,
    },
    /// Redis took a write that must survive a failover (an inbound message and its replies
    /// job, an escalation), but the replicas its `WAIT` asked for did not acknowledge it in
    /// time: transient (a webhook is answered 503, so Twilio posts it again; an escalation is
    /// tried again), since a failover now could lose it.
    #[error("replicas did not acknowledge {key} in time ({acked} of {wanted})")]
    Unacknowledged {
        key: String,
        wanted: usize,
        acked: usize,
    },
    /// The records on this Redis have a layout this build does not read
    /// (`crate::callbacks::layout`): refused before any record is read or written.
    #[error(
        "{key} says record layout {found:?}; this ringback reads layout {reads} only \
         (CHANGELOG.md, \"Rolling upgrades\", says how to move between layouts)"
    )]
    Layout {
        key: String,
        found: String,
        reads: u32,
    },
}

impl Error {
    /// Worth retrying after a pause (connection trouble, Redis loading or failing over).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Redis(e) | Error::Connect { source: e, .. } => {
                connection_failed(e)
                    || matches!(
                        e.kind(),
                        // a failover under way: the master is loading, demoted, cut off from
                        // its own, or not named by the sentinels yet
                        redis::ErrorKind::Server(
                            redis::ServerErrorKind::BusyLoading
                                | redis::ServerErrorKind::ReadOnly
                                | redis::ServerErrorKind::MasterDown
                        ) | redis::ErrorKind::MasterNameNotFoundBySentinel
                    )
            }
            Error::Unacknowledged { .. } => true,
            _ => false,
        }
    }
}

/// The connection failed under the call (refused, dropped, timed out, broken): the call may or
/// may not have run.
pub fn connection_failed(e: &redis::RedisError) -> bool {
    e.is_io_error()
        || e.is_connection_dropped()
        || e.is_connection_refusal()
        || e.is_timeout()
        || e.is_unrecoverable_error()
}

/// One rule between settings and whether a configuration keeps it: what `check-config` prints,
/// one line each, so a person sees every rule the deployment relies on, kept or not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invariant {
    /// The setting to change when the rule is broken.
    pub setting: &'static str,
    /// The rule, with this configuration's values.
    pub rule: String,
    /// What goes wrong when it does not hold (a warning's text is read alone: it names the
    /// setting and values).
    pub problem: String,
    pub holds: bool,
    /// A broken rule refuses the configuration (`Error`), or is printed and tolerated (`Warning`).
    pub severity: Severity,
}

/// How a broken [`Invariant`] is treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    Error,
    Warning,
}

impl Invariant {
    pub fn new(
        setting: &'static str,
        holds: bool,
        severity: Severity,
        rule: impl Into<String>,
        problem: impl Into<String>,
    ) -> Self {
        Self {
            setting,
            rule: rule.into(),
            problem: problem.into(),
            holds,
            severity,
        }
    }

    /// `ok`, `broken` or `warning`: the verdict's word.
    pub fn verdict(&self) -> &'static str {
        match (self.holds, self.severity) {
            (true, _) => "ok",
            (false, Severity::Error) => "broken",
            (false, Severity::Warning) => "warning",
        }
    }
}

/// Broken invariants sorted: the errors noted in `errors`, the warnings' texts returned. A
/// problem's text names its setting and values, so it reads alone in a log.
pub fn judge(invariants: &[Invariant], errors: &mut ConfigErrors) -> Vec<String> {
    let mut warnings = vec![];
    for i in invariants.iter().filter(|i| !i.holds) {
        match i.severity {
            Severity::Error => errors.push(ConfigError::new(i.setting, i.problem.clone())),
            Severity::Warning => warnings.push(i.problem.clone()),
        }
    }
    warnings
}

/// A configuration that breaks an invariant; the message names the setting.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct ConfigError {
    pub setting: &'static str,
    pub problem: String,
}

impl ConfigError {
    pub fn new(setting: &'static str, problem: impl Into<String>) -> Self {
        Self {
            setting,
            problem: problem.into(),
        }
    }
}

/// Every broken setting of one configuration, found in one pass, so a person fixes them all
/// after one run instead of learning of them one run at a time. Returned as an error
/// only when it holds at least one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigErrors(Vec<ConfigError>);

impl ConfigErrors {
    /// Note a problem.
    pub fn push(&mut self, e: ConfigError) {
        self.0.push(e);
    }

    /// `r`'s value, or `None` with its problems noted: the caller goes on checking the rest.
    pub fn take<T, E: Into<ConfigErrors>>(&mut self, r: Result<T, E>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(e) => {
                self.0.extend(e.into().0);
                None
            }
        }
    }

    /// `value`, or `None` with `setting`'s problem noted.
    pub fn require<T>(
        &mut self,
        value: Option<T>,
        setting: &'static str,
        problem: &str,
    ) -> Option<T> {
        if value.is_none() {
            self.push(ConfigError::new(setting, problem));
        }
        value
    }

    /// A setting's value checked by `check`, or `None` with its problem noted: `missing` when
    /// it is unset or empty (`NAME=` in an env file is unset), `check`'s when it is set but wrong.
    pub fn given<T>(
        &mut self,
        value: Option<&str>,
        setting: &'static str,
        missing: &str,
        check: impl FnOnce(&str) -> Result<T, ConfigError>,
    ) -> Option<T> {
        match value.filter(|v| !v.is_empty()) {
            None => {
                self.push(ConfigError::new(setting, missing));
                None
            }
            Some(v) => self.take(check(v)),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }

    /// `value` when no problem was noted, else every problem.
    pub fn or<T>(self, value: Option<T>) -> Result<T, ConfigErrors> {
        match value {
            Some(v) if self.is_empty() => Ok(v),
            Some(_) => Err(self),
            // a missing value always comes with its problem noted; say so if it did not
            None if self.is_empty() => Err(ConfigError::new("configuration", "incomplete").into()),
            None => Err(self),
        }
    }
}

impl std::fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self(vec![e])
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_keep_every_problem() {
        let mut errors = ConfigErrors::default();
        assert_eq!(errors.take(Ok::<_, ConfigError>(1)), Some(1));
        let none: Option<u8> = errors.take(Err(ConfigError::new("A", "missing")));
        assert_eq!(none, None);
        errors.push(ConfigError::new("B", "bad"));
        assert_eq!(errors.to_string(), "A: missing; B: bad");
        assert_eq!(errors.clone().or(Some(1)).unwrap_err(), errors);
        assert_eq!(ConfigErrors::default().or(Some(1)), Ok(1));
    }
}
