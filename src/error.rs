//! Error types, one enum per concern. A job's outcome is never an error (see `processor`);
//! these are infrastructure and configuration failures.

/// A BullMQ script refused an operation. Not a job failure: for −2/−6 the job now belongs to
/// stall recovery or another worker, and must be left alone (bullmq-protocol.md §2.9, §8.4).
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
    #[error("unexpected reply from {script}: {detail}")]
    Reply {
        script: &'static str,
        detail: String,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("twilio client: {0}")]
    Twilio(String),
}

impl Error {
    /// Worth retrying after a pause (connection trouble, Redis loading or failing over).
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Redis(e) => {
                e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_timeout()
                    || matches!(
                        e.kind(),
                        redis::ErrorKind::Server(redis::ServerErrorKind::BusyLoading)
                    )
                    || e.is_unrecoverable_error()
            }
            _ => false,
        }
    }
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
