//! The one wrapper that runs our Lua: scripts embedded at build time, run by EVALSHA, re-sent
//! with EVAL when Redis answers NOSCRIPT (a restart or failover empties the script cache).
//!
//! Each file in `lua/` is one script; `lua/include/common.lua` is prepended to every script so a
//! script is always one self-contained body (Redis has no `require`). A script may name further
//! includes (`name => "file.lua" [window]` prepends `lua/include/window.lua` after common.lua), so
//! a step shared by several scripts (the window's claim, a fused finish) is written once and only
//! the scripts that use it pay for its closures. The header of each file is its wire contract
//! (KEYS, ARGV, return codes).

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};

use redis::aio::ConnectionLike;
use redis::{FromRedisValue, Script, ToRedisArgs};

use super::connection::Conn;
use super::slots::{Topology, common_slot};

const COMMON: &str = include_str!("../../../lua/include/common.lua");

macro_rules! scripts {
    ($($(#[$doc:meta])* $name:ident => $file:literal $([$($include:ident),+])?),* $(,)?) => {
        /// Every script ringback runs, compiled (hashed) once per process.
        #[derive(Debug)]
        pub struct Scripts { $($(#[$doc])* pub $name: LuaScript,)* }

        impl Scripts {
            fn load() -> Self {
                Self { $($name: LuaScript::new($file, [
                    COMMON,
                    $($(concat!(
                        "\n-- include: ", stringify!($include), ".lua\n",
                        include_str!(concat!("../../../lua/include/", stringify!($include), ".lua"))
                    ),)+)?
                    concat!("\n-- script: ", $file, "\n", include_str!(concat!("../../../lua/", $file))),
                ].concat()),)* }
            }

            /// Every script, for tests and for loading them all at start.
            pub fn all(&self) -> Vec<&LuaScript> {
                vec![$(&self.$name,)*]
            }
        }
    };
}

scripts! {
    /// Take the next ready job, lock it and return it (BullMQ's moveToActive).
    move_to_active => "move_to_active.lua",
    /// Complete or fail an active job as BullMQ does, optionally taking the next one.
    move_to_finished => "move_to_finished.lua" [finish],
    /// Several move_to_finished calls in one (the group commit of plain finishes).
    move_to_finished_batch => "move_to_finished_batch.lua" [finish],
    /// Park an active job in the delayed set until a due time (backoff, run later).
    move_to_delayed => "move_to_delayed.lua",
    /// Put a failed attempt with attempts left straight back to wait (no backoff delay).
    retry_job => "retry_job.lua",
    /// Renew the locks of many running jobs at once, each only while it still holds our token.
    extend_locks => "extend_locks.lua",
    /// One two-phase stall sweep, throttled queue-wide by `stalled-check`.
    move_stalled_jobs_to_wait => "move_stalled_jobs_to_wait.lua",
    /// Store a job's progress and emit its `progress` event.
    update_progress => "update_progress.lua",
    /// Append one row to a job's log, trimmed to `keepLogs` (Node's `job.log()`).
    add_log => "add_log.lua",
    /// Put a rate-limited job back to wait without using an attempt.
    move_limited_to_wait => "move_limited_to_wait.lua",
    /// Add a child job of a parent (a flow), linking it in the parent's dependencies.
    add_child => "add_child.lua",
    /// Move a job to `waiting-children` while it has pending children.
    move_to_waiting_children => "move_to_waiting_children.lua",
    /// Add a standard job as BullMQ's `Queue.add` stores it (optionally once only).
    add_job => "add_job.lua",
    /// Create a job scheduler's next iteration when a worker activates a job.
    update_job_scheduler => "update_job_scheduler.lua",
    /// Decide atomically what an attempt to send a run's text may do (the claim).
    window_claim => "window_claim.lua" [window],
    /// Twilio took the message: turn the claim into the long-lived sent marker.
    window_mark_sent => "window_mark_sent.lua" [window],
    /// Twilio took nothing: keep the claim for a retry, or close a failed run.
    window_release => "window_release.lua",
    /// The send's outcome is unknown: keep the claim and mark the attempt ambiguous.
    window_hold => "window_hold.lua",
    /// Take one overdue open attempt for the orphan sweep, re-fencing its claim.
    window_sweep => "window_sweep.lua",
    /// Make a job that ended unresolved an open attempt of the orphan sweep's.
    window_adopt => "window_adopt.lua",
    /// Settle an unprovable send as `unknown`: a sent marker with no MessageSid.
    window_settle_unknown => "window_settle_unknown.lua",
    /// One step (`take`, `drop`) on the open-attempts index alone, for a cluster.
    window_index => "window_index.lua",
    /// The ringback workers' heartbeats, scored on Redis's clock.
    window_workers => "window_workers.lua",
    /// Note the identity of the Redis that serves a claim key, before a claim needs it.
    window_identity => "window_identity.lua" [window],
    /// Apply one delivery status (status callback or poll) to its run's record.
    receipt_apply => "receipt_apply.lua" [window],
    /// Take up to N due members of a schedule ZSET, leasing each to the caller.
    claim_due => "claim_due.lua",
    /// Open a run's escalation ladder.
    ladder_start => "ladder_start.lua",
    /// Start a run's next ladder step, or end its ladder exhausted.
    ladder_advance => "ladder_advance.lua" [window],
    /// Record a ladder step's send; a call on a stopped ladder is to be ended.
    ladder_mark => "ladder_mark.lua",
    /// Stop a run's ladder at the first acknowledgement.
    ladder_ack => "ladder_ack.lua",
    /// Move a climbing ladder's next step sooner (a step failed) or later (quiet hours).
    ladder_due => "ladder_due.lua",
    /// Take over a ladder step's claim whose sender is gone.
    ladder_adopt => "ladder_adopt.lua",
    /// Keep a ladder call's status callback, ranked.
    ladder_call_status => "ladder_call_status.lua",
    /// Take or give back a number's one unconfirmed ladder call.
    ladder_number => "ladder_number.lua",
    /// Hand a question's answer claim over from a message that never answered it.
    question_answer_take => "question_answer_take.lua",
    /// The single-Redis SMS finish: sent marker, completion, fetch and the next run's claim.
    finish_sent => "finish_sent.lua" [finish, window, fused],
    /// Several finish_sent calls in one (the group commit of the SMS finish).
    finish_sent_batch => "finish_sent_batch.lua" [finish, window, fused],
}

/// The process-wide script set.
pub fn scripts() -> &'static Scripts {
    static SCRIPTS: LazyLock<Scripts> = LazyLock::new(Scripts::load);
    &SCRIPTS
}

/// Counts Redis round trips, so benchmarks can report Redis work per job (a NOSCRIPT retry
/// counts as the extra round trips it costs).
#[derive(Debug, Default)]
pub struct RoundTrips(AtomicU64);

impl RoundTrips {
    /// Count `n` more round trips (a pipeline is one).
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }
    /// Round trips counted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A script body and its SHA1.
#[derive(Debug)]
pub struct LuaScript {
    /// Its file under `lua/` (`window_claim.lua`): the label of its errors in logs and metrics.
    pub name: &'static str,
    code: String,
    hash: String,
}

impl LuaScript {
    fn new(name: &'static str, code: String) -> Self {
        let hash = Script::new(&code).get_hash().to_string();
        Self { name, code, hash }
    }

    /// The whole body Redis runs: the includes, then the script with its header.
    pub(crate) fn code(&self) -> &str {
        &self.code
    }

    /// The body's SHA1 in hex, as `EVALSHA` and `SCRIPT EXISTS` name it.
    pub fn hash(&self) -> &str {
        &self.hash
    }

    /// `SCRIPT LOAD` the body (at start and for readiness; calls fall back to EVAL anyway).
    pub async fn load<C: ConnectionLike + Send>(&self, conn: &mut C) -> redis::RedisResult<()> {
        redis::cmd("SCRIPT")
            .arg("LOAD")
            .arg(&self.code)
            .query_async::<String>(conn)
            .await
            .map(|_| ())
    }

    /// [`run`](Self::run), laid out for `topology`: in `PerSlot` mode a call whose keys span
    /// two Redis Cluster slots is refused before it is sent (`CROSSSLOT`, as a cluster would
    /// answer), so tests on a single Redis prove every such call single-slot.
    pub async fn run_in<C, T, K, A>(
        &self,
        topology: Topology,
        conn: &mut C,
        trips: &RoundTrips,
        keys: &[K],
        args: &[A],
    ) -> redis::RedisResult<T>
    where
        C: ConnectionLike + Send,
        T: FromRedisValue,
        K: ToRedisArgs,
        A: ToRedisArgs,
    {
        if topology.per_slot() {
            self.check_one_slot(keys)?;
        }
        self.run(conn, trips, keys, args).await
    }

    /// [`run_in`](Self::run_in) for a write that must survive a failover (a claim, a sent
    /// marker): the `WAIT` the connection's replica policy asks for after a write to `wait.key`
    /// rides in the write's pipeline ([`Conn::write_durably`]), so it costs no round trip of its
    /// own. Without a wait (one Redis, or a master with no replica) it is [`run_in`](Self::run_in).
    /// Returns the reply and whether the replicas acknowledged it ([`Durability`]).
    pub async fn run_durably<T, K, A>(
        &self,
        topology: Topology,
        conn: &mut Conn,
        trips: &RoundTrips,
        wait: WaitOn<'_>,
        keys: &[K],
        args: &[A],
    ) -> redis::RedisResult<(T, Durability)>
    where
        T: FromRedisValue,
        K: ToRedisArgs,
        A: ToRedisArgs,
    {
        if topology.per_slot() {
            self.check_one_slot(keys)?;
        }
        let mut durability = Durability::default();
        let reply = self
            .send(
                Via::<Conn>::Durably(conn, wait.key, wait.survive, &mut durability),
                trips,
                keys,
                args,
            )
            .await?;
        Ok((reply, durability))
    }

    /// Refuse keys that span two slots (a call a Redis Cluster would refuse with CROSSSLOT).
    pub fn check_one_slot<K: ToRedisArgs>(&self, keys: &[K]) -> redis::RedisResult<()> {
        let flat: Vec<Vec<u8>> = keys.iter().flat_map(|k| k.to_redis_args()).collect();
        common_slot(&flat).map(|_| ()).map_err(|(a, b)| {
            ringback_shared::telemetry::global().redis_error(self.name, "crossslot".into());
            redis::RedisError::from((
                redis::ErrorKind::Server(redis::ServerErrorKind::CrossSlot),
                "refused before sending",
                format!("{}: keys in different slots ({a:?}, {b:?})", self.name),
            ))
        })
    }

    /// Run with `keys` and `args`: EVALSHA, and on NOSCRIPT one EVAL of the body (which also
    /// caches it again), so a flushed cache costs one extra round trip.
    pub async fn run<C, T, K, A>(
        &self,
        conn: &mut C,
        trips: &RoundTrips,
        keys: &[K],
        args: &[A],
    ) -> redis::RedisResult<T>
    where
        C: ConnectionLike + Send,
        T: FromRedisValue,
        K: ToRedisArgs,
        A: ToRedisArgs,
    {
        self.send(Via::Query(conn), trips, keys, args).await
    }

    /// The shape of every script call, written once: send the EVALSHA `via` the connection,
    /// and on NOSCRIPT one EVAL of the body (which also caches it again), counting each as a
    /// round trip; a failure is counted in `ringback_redis_errors_total` here.
    async fn send<C, T, K, A>(
        &self,
        mut via: Via<'_, C>,
        trips: &RoundTrips,
        keys: &[K],
        args: &[A],
    ) -> redis::RedisResult<T>
    where
        C: ConnectionLike + Send,
        T: FromRedisValue,
        K: ToRedisArgs,
        A: ToRedisArgs,
    {
        trips.add(1);
        let result = match via.send(&self.command(By::Hash, keys, args)).await {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                trips.add(1);
                via.send(&self.command(By::Body, keys, args)).await
            }
            other => other,
        };
        if let Err(e) = &result {
            ringback_shared::telemetry::global().redis_error(self.name, error_kind(e));
        }
        result
    }

    /// The command Redis gets for a call with `keys` and `args`: `EVALSHA <hash>` or `EVAL
    /// <body>`, the key count, the keys, the arguments (public for `benches/worker.rs`, which
    /// measures packing a finishing call).
    pub fn command<K, A>(&self, by: By, keys: &[K], args: &[A]) -> redis::Cmd
    where
        K: ToRedisArgs,
        A: ToRedisArgs,
    {
        let (verb, body) = match by {
            By::Hash => ("EVALSHA", &self.hash),
            By::Body => ("EVAL", &self.code),
        };
        let mut cmd = redis::cmd(verb);
        cmd.arg(body).arg(keys.len()).arg(keys).arg(args);
        cmd
    }
}

/// How a script call travels: a plain query, or a write with the replica `WAIT` its
/// connection's policy asks for in the same pipeline ([`Conn::write_durably`]).
enum Via<'a, C> {
    Query(&'a mut C),
    Durably(&'a mut Conn, &'a str, Survive, &'a mut Durability),
}

/// Whether a durable write reached the replicas its `WAIT` asked for, and the disk its
/// `WAITAOF` asked for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Durability {
    /// Replicas the wait asked for (0: no wait).
    pub wanted: usize,
    /// Replicas that acknowledged in time.
    pub acked: usize,
    /// The write was to be on disk in the node's append-only file (`WAITAOF`).
    pub fsync_wanted: bool,
    /// The node had it on disk in time.
    pub fsynced: bool,
}

impl Durability {
    /// Fewer replicas acknowledged than were asked for (a failover now could lose the write),
    /// or the disk did not (a restart now could).
    pub fn short(&self) -> bool {
        self.acked < self.wanted || (self.fsync_wanted && !self.fsynced)
    }
}

/// Where a durable write waits: the node of `key`'s slot, for what it must `survive`.
#[derive(Debug, Clone, Copy)]
pub struct WaitOn<'a> {
    /// A key the write touches: its slot's master takes the write and runs the `WAIT`.
    pub key: &'a str,
    /// A failover only (`WAIT`), or a restart too (`WAITAOF` where the policy asks for it).
    pub survive: Survive,
}

/// What a durable write must survive before its caller goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Survive {
    /// A failover: the replicas the policy asks for have it (`WAIT`).
    Failover,
    /// A failover, and a restart from the append-only file where the policy asks for it
    /// (`WAITAOF`): a claim, before its text goes out.
    Restart,
}

impl<C: ConnectionLike + Send> Via<'_, C> {
    async fn send<T: FromRedisValue>(&mut self, cmd: &redis::Cmd) -> redis::RedisResult<T> {
        match self {
            Via::Query(conn) => cmd.query_async(&mut **conn).await,
            Via::Durably(conn, wait_key, survive, durability) => conn
                .write_durably::<T>(wait_key, *survive, cmd)
                .await
                .map(|(reply, acked)| {
                    **durability = acked;
                    reply
                }),
        }
    }
}

/// How a call names its script: by its SHA1 (`EVALSHA`, every call), or with its body (`EVAL`,
/// once after Redis answered NOSCRIPT).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// `EVALSHA <sha1>`: runs the body Redis has cached (NOSCRIPT when it has none).
    Hash,
    /// `EVAL <body>`: sends the whole script, which Redis then caches again.
    Body,
}

/// The `kind` label of `ringback_redis_errors_total`: Redis's error code (`OOM`, `READONLY`,
/// `BUSY`, `MOVED`, …) in lower case, else how the call failed (`io`, `timeout`, `other`).
pub fn error_kind(e: &redis::RedisError) -> String {
    match e.code() {
        Some(code) if code.len() <= 16 && code.bytes().all(|b| b.is_ascii_alphabetic()) => {
            code.to_ascii_lowercase()
        }
        _ if e.is_timeout() => "timeout".into(),
        _ if e.is_io_error() || e.is_connection_dropped() => "io".into(),
        _ => "other".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn includes_are_prepended_only_where_named() {
        let s = scripts();
        let claim = &s.window_claim.code;
        let (common, include, body) = (
            claim.find("local rcall").expect("common first"),
            claim
                .find("local function claimRun")
                .expect("the window include"),
            claim
                .find("-- script: window_claim.lua")
                .expect("the body last"),
        );
        assert!(common < include && include < body);
        assert!(!s.move_to_active.code.contains("local function claimRun"));
        assert!(s.receipt_apply.code.contains("local function applyReceipt"));
    }

    /// The fused finish reads the identity key undeclared, by the name keys.rs gives it.
    #[test]
    fn the_fused_finish_names_the_identity_key_as_keys_rs_does() {
        let line = format!(
            "local REDIS_IDENTITY = \"{}\"",
            crate::keys::redis_identity()
        );
        assert!(scripts().finish_sent.code.contains(&line), "{line}");
    }

    #[test]
    fn the_slot_check_refuses_a_cross_slot_call() {
        let s = scripts();
        let w = crate::keys::WindowKeys::new("agent-callback:", "r1");
        let run_keys = [w.claim.clone(), w.attempt.clone(), w.record.clone()];
        assert!(s.window_claim.check_one_slot(&run_keys).is_ok());
        let crossed = [
            w.claim,
            w.attempt,
            crate::keys::open_attempts("agent-callback:"),
        ];
        let e = s.window_claim.check_one_slot(&crossed).unwrap_err();
        assert_eq!(e.code(), Some("CROSSSLOT"));
        assert!(e.to_string().contains("window_claim"), "{e}");
    }
}
