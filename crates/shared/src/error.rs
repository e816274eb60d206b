//! Error types, one enum per concern. A job's outcome is never an error (see `processor`);
//! these are infrastructure and configuration failures.

use crate::settings::ConfigError;

/// A BullMQ script refused an operation. Not a job failure: for −2/−6 the job now belongs to
/// stall recovery or another worker, and must be left alone, as a Node worker leaves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScriptCode {
    /// −1: the job's hash is gone (removed, or never existed).
    #[error("job does not exist (-1)")]
    JobMissing,
    /// −2: the job's lock key is gone (it expired): the job may be stall recovery's now.
    #[error("job lock is missing (-2)")]
    LockMissing,
    /// −3: the job is not in the active list (stall recovery or another worker moved it).
    #[error("job is not in the active list (-3)")]
    NotActive,
    /// −4: the job still has children that have not finished, so it cannot complete yet.
    #[error("job has pending children (-4)")]
    PendingChildren,
    /// −6: the lock holds another token: another worker has the job now.
    #[error("job lock is owned by another worker (-6)")]
    LockMismatch,
    /// −9: a child of the job failed (its `unsuccessful` set is not empty), so it cannot complete.
    #[error("job has failed children (-9)")]
    FailedChildren,
    /// Any other code, kept as answered (`i64::MIN`: the reply was not a code at all).
    #[error("script answered code {0}")]
    Other(i64),
}

impl ScriptCode {
    /// The refusal a script's negative reply code stands for; unknown codes are kept as `Other`.
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
    /// A Redis command or script call failed (connection trouble, a server error).
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// Connecting failed: the message names the Redis tried (password masked, see
    /// `ringback_store::connection::describe`), so a person knows which one.
    #[error("redis at {addr}: {source}")]
    Connect {
        /// The Redis address tried, with any password masked.
        addr: String,
        /// The connection error the client reported.
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
    ReplyCodesTaken {
        /// The recipient's number, masked for logs.
        to: String,
    },
    /// A script or command answered what its caller cannot use (a reply of the wrong shape, a
    /// refusal code where none is expected) or refused a request outright.
    #[error("unexpected reply from {script}: {detail}")]
    Reply {
        /// The script (or operation) that answered, such as `move_to_active`.
        script: &'static str,
        /// What was wrong with the answer, including the reply itself where it helps.
        detail: String,
    },
    /// A setting is missing or invalid; the error names the setting.
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
        /// What the task does, in words (`the Redis identity note`).
        task: &'static str,
        /// How the task ended: its panic or its cancellation.
        #[source]
        source: tokio::task::JoinError,
    },
    /// This Redis refuses a command ringback cannot run without (renamed away, or forbidden by
    /// an ACL or the provider): found at start by `ringback_store::probe`.
    #[error("Redis refuses {command}: {cost} (Redis answered: {answer})")]
    Refused {
        /// The command as a person types it (`CLIENT SETNAME`).
        command: &'static str,
        /// What ringback cannot do without the command.
        cost: &'static str,
        /// Redis's error reply to the command.
        answer: String,
    },
    /// Redis took a write that must survive a failover (an inbound message and its replies
    /// job, an escalation), but the replicas its `WAIT` asked for did not acknowledge it in
    /// time: transient (a webhook is answered 503, so Twilio posts it again; an escalation is
    /// tried again), since a failover now could lose it.
    #[error("replicas did not acknowledge {key} in time ({acked} of {wanted})")]
    Unacknowledged {
        /// The written key whose `WAIT` fell short.
        key: String,
        /// Replicas the `WAIT` asked for.
        wanted: usize,
        /// Replicas that acknowledged the write before the `WAIT` timed out.
        acked: usize,
    },
    /// A write a person or Twilio is told about (an answer, an escalation) was not in the
    /// append-only file on disk in time (`WAITAOF`, `RINGBACK_REDIS_WAIT_AOF`): transient, as
    /// [`Error::Unacknowledged`], since a restart now could lose it.
    #[error("Redis did not have {key} on disk in time (WAITAOF)")]
    NotOnDisk {
        /// The written key whose `WAITAOF` fell short.
        key: String,
    },
    /// The records on this Redis have a layout this build does not read
    /// (`ringback_callbacks::layout`): refused before any record is read or written.
    #[error(
        "{key} says record layout {found:?}; this ringback reads layout {reads} only \
         (CHANGELOG.md, \"Rolling upgrades\", says how to move between layouts)"
    )]
    Layout {
        /// The Redis key that records the layout.
        key: String,
        /// The layout the key holds, as stored.
        found: String,
        /// The layout this build writes (the newest it reads).
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
            Error::Unacknowledged { .. } | Error::NotOnDisk { .. } => true,
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
