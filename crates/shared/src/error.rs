//! Error types, one enum per concern. A job's outcome is never an error (see `processor`);
//! these are infrastructure and configuration failures.

use crate::settings::ConfigError;

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
    /// `ringback_store::connection::describe`), so a person knows which one.
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
    /// A question that cannot be fixed yet: every reply code is taken by a question open to
    /// the same person (`to`, masked); it waits until one closes.
    #[error(
        "the run's question: every reply code is taken by a question open to {to}; this one waits until one closes"
    )]
    ReplyCodesTaken { to: String },
    #[error("unexpected reply from {script}: {detail}")]
    Reply {
        script: &'static str,
        detail: String,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The Twilio client could not be built; its error is the source (boxed: the provider is a
    /// floor above this one).
    #[error("twilio client: {0}")]
    Twilio(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The HTTP listener failed.
    #[error("listener: {0}")]
    Listener(#[source] std::io::Error),
    /// A task the process cannot run without ended (it panicked or was cancelled): the process
    /// stops rather than run on half-opened.
    #[error("{task} failed: {source}")]
    Task {
        task: &'static str,
        #[source]
        source: tokio::task::JoinError,
    },
    /// This Redis refuses a command ringback cannot run without (renamed away, or forbidden by
    /// an ACL or the provider): found at start by `ringback_store::probe`.
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
    /// (`ringback_callbacks::layout`): refused before any record is read or written.
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
