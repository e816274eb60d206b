//! The claim/sent window around `messages.create`: claim before the provider call, turn the
//! claim into a long-lived `sent` marker after Twilio accepted, release it when Twilio did not
//! take the message, hold it while a send's outcome is unknown. Each step is one Lua script over
//! the claim key (shared with the legacy Node worker) and ringback's durable attempt record.
//!
//! The claim key is a lease (`RINGBACK_CLAIM_LEASE_MS`) that exists while an attempt may be
//! unresolved; liveness comes from the attempt record. Every decision reads Redis's clock
//! (`TIME` inside the scripts), never the worker's; the claim's reply carries Redis's now, and
//! the window keeps the offset so the processor's delays are on Redis's clock too.
//!
//! ## Topology: one call per step, or one slot per call
//! On one Redis (`Topology::Fused`) each step is one script call that also writes the global
//! indexes. On a Redis Cluster (`Topology::PerSlot`) a script touches only the run's slot (the
//! claim key and the `{<claim key>}`-tagged records); the global keys are separate single-slot
//! calls, ordered so that a cut between any two calls (the process dies) loses nothing:
//!
//! | step | order of the calls | a cut leaves | repaired by |
//! |---|---|---|---|
//! | claim | index ZADD (intent: now + pending TTL; the script opens no attempt once it is due: a sweep may have taken it), claim script, then by reply: Sent → index ZREM, Busy → index ZADD (the live attempt's deadline back), Resolve → index ZADD (now + hold/2), Claimed → recent-runs ZADD + trim | an index entry for a run with no open attempt, or with a later time than ideal | the sweep: it drops an entry whose attempt is not open (or sent) when it comes due; a later time only delays an orphan's pickup (at most the pending TTL) |
//! | mark sent | (found: link GET, refuse another run's) link SET, reconcile ZADD, marker script, index ZREM | a link and a scheduled poll with no marker; or a sent run still indexed | the reconciler polls the sid and writes its status into the run's record; the attempt is still open and indexed, so its resolver (job retry or sweep) sees the receipt and marks it found. A sent run's entry is dropped by the sweep |
//! | release (retry) / hold | script, then index ZADD (new time) | the older index time | the sweep looks earlier than ideal: the process that would have touched it is gone anyway |
//! | release (send-failed) / settle unknown | script, then index ZREM | a closed run indexed | the sweep drops it |
//! | adopt | index ZADD (now), then script | an index entry for a run not adopted | the sweep drops it |
//! | sweep | `window_index.lua` take (due check + push, atomic: replicas take an orphan once), script, then `drop` (only if the time is still the one taken) | a pushed time | it comes due again |
//!
//! The recent-runs index (console) may miss a run whose claim was cut before its ZADD: the
//! console lists it again at its next fresh claim. Between a send-failed release (or a settle)
//! and its index ZREM a new fresh claim of the same run could write the index, and the ZREM then
//! removes that newer entry: the attempt is still found by its job's stall recovery (the job
//! lock) and by the next claim, which resolves it; the window is one round trip wide.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use ringback_store::command::RoundTrip;
use ringback_store::connection::Conn;

use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_store::keys::WindowKeys;
use ringback_store::scripts::RoundTrips;
use ringback_store::slots::Topology;

mod claim;
mod identity;
mod mark;
mod number;
mod release;
mod resolve;
mod workers;
pub use workers::alive_within;

/// What `claim` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Already sent (by either worker); the MessageSid where known.
    Sent(Option<String>),
    /// Another attempt holds the claim; try again after this long.
    Busy(Duration),
    /// The claim is ours: send now.
    Claimed {
        /// The attempt's token: the claim key reads `pending:<token>`, and marking the run sent
        /// or releasing it is fenced by it.
        token: String,
    },
    /// The claim is ours, but the replicas its `WAIT` asked for did not acknowledge it in time
    /// (`RINGBACK_REDIS_WAIT_TIMEOUT_MS`): a failover now could lose it, and the retried job
    /// would claim afresh and text again. The send is held, not made; the claim is to be
    /// released. `since`: when claims began to come back unacknowledged (ms since the epoch),
    /// for the hold's escalation bound.
    Unacknowledged {
        /// The attempt's token the claim is held under, to release it by.
        token: String,
        /// When claims began to come back unacknowledged (ms since the epoch).
        since: i64,
    },
    /// A previous attempt may have sent: find evidence before sending again.
    Resolve(Unresolved),
}

/// An attempt whose send may or may not have reached Twilio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unresolved {
    /// The claim is held under this token while we resolve.
    pub token: String,
    /// When the unknown send may have happened (ms since the epoch).
    pub since: i64,
    /// The recipient the unknown send went to, from the attempt record.
    pub to: String,
    /// "" when the configured sender was used.
    pub from: String,
    /// The text the unknown send carried: evidence is matched against it.
    pub body: String,
    /// A status callback already proved this MessageSid.
    pub receipt_sid: Option<String>,
    /// The unknown outcome was already escalated.
    pub escalated: bool,
    /// The claim was taken over from a writer with no attempt record (the legacy worker's
    /// plain `pending`, or a ringback claim whose record is gone): its send may predate `since`
    /// by [`crate::sms::LOOKBACK`]. Otherwise `since` is when ringback's own attempt claimed.
    pub taken: bool,
    /// Redis lost acknowledged writes at `since` (its server identity changed: a restart from
    /// an AOF, a failover): this run's claim and send may be among them, so evidence comes
    /// first, the process's own kept answers for the run included. Implies `taken`.
    pub after_loss: bool,
}

/// Settings of the window.
#[derive(Debug, Clone)]
pub struct WindowTimes {
    /// A `claimed` attempt is alive this long (it exceeds the provider timeout).
    pub pending_ttl: Duration,
    /// The claim key's lease: refreshed by every step on an open attempt.
    pub lease: Duration,
    /// How long a sent marker and the attempt record live: a run added again within it is
    /// found sent, not texted again.
    pub sent_ttl: Duration,
    /// How long the claim is held while an unknown send is resolved.
    pub hold: Duration,
    /// When a sent message with no terminal receipt is looked up.
    pub poll_after: Duration,
    /// How long after a claim call was first sent its `claimed` answer may still start a send:
    /// the pending TTL less the provider timeout and the safety margin, and never under half
    /// the margin (the model's A1). A call
    /// whose reply was lost is sent again, with the same token, within this time; its answer
    /// is kept this long for a re-send (`finish_sent.lua`).
    pub replay_for: Duration,
    /// How long after Redis is seen to have lost writes a fresh claim looks for evidence
    /// first (`window_claim.lua`'s ARGV[17]).
    pub lost_writes_window: Duration,
}

/// Times a sent marker was written after the claim had expired or changed hands.
static WINDOW_OVERRUNS: AtomicU64 = AtomicU64::new(0);

/// How many sent markers this process wrote after the claim had expired or changed hands.
pub fn window_overruns() -> u64 {
    WINDOW_OVERRUNS.load(Ordering::Relaxed)
}

/// Count a sent marker written after a window overrun (also by the fused finish, which writes
/// the marker in the job's finishing call).
pub fn note_overrun() {
    WINDOW_OVERRUNS.fetch_add(1, Ordering::Relaxed);
}

/// Whether a failed call may be sent again as it is: the connection failed (the call may or may
/// not have run; a re-execution answers as the first run did) or Redis refused it before running
/// it (busy loading, a script running too long, a read-only replica after a failover).
fn may_resend(e: &redis::RedisError) -> bool {
    ringback_shared::error::connection_failed(e)
        || matches!(
            e.kind(),
            redis::ErrorKind::Server(
                redis::ServerErrorKind::BusyLoading
                    | redis::ServerErrorKind::ReadOnly
                    | redis::ServerErrorKind::TryAgain
            )
        )
}

/// The window's Redis operations.
#[derive(Clone, Debug)]
pub struct Window {
    conn: Conn,
    trips: Arc<RoundTrips>,
    claim_prefix: String,
    times: WindowTimes,
    /// Redis's clock minus this process's, as last read (ms).
    offset: Arc<AtomicI64>,
    topology: Topology,
    /// Since when claims have come back short of their replicas (ms since the epoch; 0: the
    /// last claim was acknowledged).
    unacknowledged_since: Arc<AtomicI64>,
    /// When the last lost-writes change this process logged was noticed (ms, Redis's clock).
    loss_logged: Arc<AtomicI64>,
}

impl Window {
    /// The window over `conn` for claim keys `<claim_prefix><runId>`, laid out for its topology;
    /// `trips` counts the Redis round trips it makes.
    pub fn new(
        conn: Conn,
        trips: Arc<RoundTrips>,
        claim_prefix: String,
        times: WindowTimes,
    ) -> Self {
        Self {
            topology: Topology::forced_or(Topology::of(&conn)),
            conn,
            trips,
            claim_prefix,
            times,
            offset: Arc::new(AtomicI64::new(0)),
            unacknowledged_since: Arc::new(AtomicI64::new(0)),
            loss_logged: Arc::new(AtomicI64::new(0)),
        }
    }

    /// Lay the calls out for `topology` (see the module docs).
    pub fn with_topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    /// One endpoint with replica waits unset: whether it had a connected replica when last
    /// looked at (writes then wait for one, and the fused finish, whose marker cannot, is off).
    pub fn has_replica_now(&self) -> bool {
        self.conn.has_replica_now()
    }

    /// Look at the endpoint's connected replicas again (every sweep interval).
    pub async fn look_at_replicas(&self) {
        self.conn.clone().look_at_replicas().await;
    }

    /// How the calls are laid out: one call per step (`Fused`) or one slot per call (`PerSlot`).
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// The window's lifetimes and timings (TTLs, lease, hold, replay bound).
    pub fn times(&self) -> &WindowTimes {
        &self.times
    }

    fn per_slot(&self) -> bool {
        self.topology.per_slot()
    }

    /// A global key where this layout passes it to a script: on one Redis, never on a
    /// Cluster (there the index is written by a call of its own).
    fn global(&self, key: String) -> Option<String> {
        (!self.per_slot()).then_some(key)
    }

    /// `ZADD <index> <at> <run_id>` (PerSlot mode: the index is its own call).
    async fn index_add(&self, run_id: &str, at: i64) -> Result<(), Error> {
        redis::cmd("ZADD")
            .arg(self.index())
            .arg(at)
            .arg(run_id)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// `ZREM <index> <run_id>` (PerSlot mode).
    async fn index_rem(&self, run_id: &str) -> Result<(), Error> {
        redis::cmd("ZREM")
            .arg(self.index())
            .arg(run_id)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// Now on Redis's clock, as far as this process knows it (ms).
    pub fn now(&self) -> i64 {
        now_ms() + self.offset.load(Ordering::Relaxed)
    }

    /// `at` on Redis's clock, as this process's clock reads the same moment: what a job's delay
    /// (BullMQ's timestamps are the process's, [`ringback_queue::processor::Outcome::DelayUntil`])
    /// is told.
    pub fn to_local(&self, at: i64) -> i64 {
        at - self.offset.load(Ordering::Relaxed)
    }

    /// `at` on this process's clock, as Redis's clock reads the same moment (the index's times).
    pub fn to_redis(&self, at: i64) -> i64 {
        at + self.offset.load(Ordering::Relaxed)
    }

    /// Read Redis's clock now (`TIME`) and keep the offset: a worker that has claimed nothing
    /// yet (idle since it started) must still see which open attempts are overdue on Redis's
    /// clock, not its own, which may be an hour behind.
    pub async fn learn_clock(&self) -> Result<(), Error> {
        let (secs, micros): (i64, i64) = redis::cmd("TIME")
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        let redis_now = secs * 1000 + micros / 1000;
        self.offset.store(redis_now - now_ms(), Ordering::Relaxed);
        Ok(())
    }

    fn saw_redis_now(&self, redis_now: Option<&String>) {
        if let Some(n) = redis_now.and_then(|n| n.parse::<i64>().ok()) {
            self.offset.store(n - now_ms(), Ordering::Relaxed);
        }
    }

    /// The Redis keys of run `run_id`: its claim key, attempt record and callback record.
    pub fn keys(&self, run_id: &str) -> WindowKeys {
        WindowKeys::new(&self.claim_prefix, run_id)
    }

    fn index(&self) -> String {
        ringback_store::keys::open_attempts(&self.claim_prefix)
    }
}

/// How many open attempts the age gauge reads per refresh.
const GAUGE_SAMPLE: isize = 200;

/// How a sent marker came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    /// Twilio answered this attempt with the message.
    Sent,
    /// A lookup found a message an earlier attempt sent.
    Found,
}

/// What `mark_sent` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkSent {
    /// The marker is written under the attempt's own claim: the expected case.
    Marked,
    /// Marked after the claim had changed hands (counted).
    Overrun,
    /// A found message is linked to another run: not taken.
    OtherRun,
}

/// The open-attempts gauges (states read from up to `GAUGE_SAMPLE` records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenAttempts {
    /// Runs in the open-attempts index: every open attempt, not only the sampled ones.
    pub count: u64,
    /// When the oldest open attempt started (ms, Redis's clock).
    pub oldest_since: Option<i64>,
    /// Released for another attempt (`retry`): their jobs wait in delayed for the next one.
    pub retry: u64,
    /// An earlier send not proven either way (`ambiguous`, `unknown`): their jobs wait in
    /// delayed while lookups and receipts decide.
    pub in_doubt: u64,
}

/// What a send decision needs of a callback beyond its text, kept on the attempt record
/// (fields `urgent`, `tz`, `ask`) so that every path that rebuilds the request from the record
/// alone (the orphan sweep, drain, resend) keeps the callback's quiet hours, its question and
/// its ladder.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendFacts {
    /// Sent inside quiet hours.
    pub urgent: bool,
    /// The zone its quiet hours are read in (`None`: the deployment's).
    pub time_zone: Option<String>,
    /// Its question and ladder ([`crate::callback::CallbackRequest::kept_ask`]; `None`: none
    /// asked, the deployment's default ladder).
    pub ask: Option<String>,
}

impl SendFacts {
    /// The facts of callback `req`, as its claim keeps them on the attempt record.
    pub fn of(req: &crate::callback::CallbackRequest) -> Self {
        Self {
            urgent: req.urgent,
            time_zone: req.time_zone.clone(),
            ask: req.kept_ask(),
        }
    }

    /// From an attempt record's fields `urgent` ("1"), `tz` and `ask` ("" = none).
    pub fn read(urgent: &str, tz: &str, ask: &str) -> Self {
        Self {
            urgent: urgent == "1",
            time_zone: Some(tz.to_string()).filter(|z| !z.is_empty()),
            ask: Some(ask.to_string()).filter(|a| !a.is_empty()),
        }
    }
}

/// An open attempt the sweep took: what its re-enqueued job needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// How many times it was swept (part of the new job's id).
    pub generation: String,
    /// The attempt's token, under which the sweep re-fenced its claim.
    pub token: String,
    /// The recipient, from the attempt record.
    pub to: String,
    /// The sender the attempt asked for; "" when the configured sender was used.
    pub from: String,
    /// The text to send, from the attempt record.
    pub body: String,
    /// Urgency, time zone, question and ladder, so resolving it keeps the callback's quiet hours
    /// and opens the ladder its job asked for.
    pub facts: SendFacts,
}

impl Orphan {
    /// The job id (`ringback-<by>:<token>:<generation>`) and the callback that resolving this
    /// orphan runs, `by` naming who took it (`sweep`, `drain`).
    pub fn job(self, by: &str, run_id: &str) -> (String, crate::callback::CallbackRequest) {
        let job_id = format!("ringback-{by}:{}:{}", self.token, self.generation);
        let req = crate::callback::CallbackRequest {
            run_id: run_id.to_string(),
            to: self.to,
            body: self.body,
            from: Some(self.from).filter(|f| !f.is_empty()),
            urgent: self.facts.urgent,
            time_zone: self.facts.time_zone,
            ..Default::default()
        };
        let req = match self.facts.ask {
            Some(ask) => req.with_kept_ask(&ask),
            None => req,
        };
        (job_id, req)
    }
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}
