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

use crate::store::connection::Conn;

use crate::error::Error;
use crate::queue::commands::now_ms;
use crate::store::keys::WindowKeys;
use crate::store::scripts::{RoundTrips, scripts};
use crate::store::slots::Topology;

/// What `claim` decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// Already sent (by either worker); the MessageSid where known.
    Sent(Option<String>),
    /// Another attempt holds the claim; try again after this long.
    Busy(Duration),
    /// The claim is ours: send now.
    Claimed { token: String },
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
    pub to: String,
    /// "" when the configured sender was used.
    pub from: String,
    pub body: String,
    /// A status callback already proved this MessageSid.
    pub receipt_sid: Option<String>,
    /// The unknown outcome was already escalated.
    pub escalated: bool,
    /// The claim was taken over from a writer with no attempt record (the legacy worker's
    /// plain `pending`, or a ringback claim whose record is gone): its send may predate `since`
    /// by [`crate::callbacks::sms::LOOKBACK`]. Otherwise `since` is when ringback's own attempt claimed.
    pub taken: bool,
}

/// Settings of the window.
#[derive(Debug, Clone)]
pub struct WindowTimes {
    /// A `claimed` attempt is alive this long (it exceeds the provider timeout).
    pub pending_ttl: Duration,
    /// The claim key's lease: refreshed by every step on an open attempt.
    pub lease: Duration,
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
}

/// Times a sent marker was written after the claim had expired or changed hands.
static WINDOW_OVERRUNS: AtomicU64 = AtomicU64::new(0);

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
    crate::error::connection_failed(e)
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
#[derive(Clone)]
pub struct Window {
    conn: Conn,
    trips: Arc<RoundTrips>,
    claim_prefix: String,
    times: WindowTimes,
    /// Redis's clock minus this process's, as last read (ms).
    offset: Arc<AtomicI64>,
    topology: Topology,
}

impl Window {
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
        }
    }

    /// Lay the calls out for `topology` (see the module docs).
    pub fn with_topology(mut self, topology: Topology) -> Self {
        self.topology = topology;
        self
    }

    pub fn topology(&self) -> Topology {
        self.topology
    }

    pub fn times(&self) -> &WindowTimes {
        &self.times
    }

    fn per_slot(&self) -> bool {
        self.topology.per_slot()
    }

    /// The keys of one call: the run's own, and in `Fused` mode the global ones after them.
    fn laid_out<const N: usize>(&self, run: Vec<String>, globals: [String; N]) -> Vec<String> {
        let mut keys = run;
        if !self.per_slot() {
            keys.extend(globals);
        }
        keys
    }

    /// `ZADD <index> <at> <run_id>` (PerSlot mode: the index is its own call).
    async fn index_add(&self, run_id: &str, at: i64) -> Result<(), Error> {
        self.trips.add(1);
        redis::cmd("ZADD")
            .arg(self.index())
            .arg(at)
            .arg(run_id)
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// `ZREM <index> <run_id>` (PerSlot mode).
    async fn index_rem(&self, run_id: &str) -> Result<(), Error> {
        self.trips.add(1);
        redis::cmd("ZREM")
            .arg(self.index())
            .arg(run_id)
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Now on Redis's clock, as far as this process knows it (ms).
    pub fn now(&self) -> i64 {
        now_ms() + self.offset.load(Ordering::Relaxed)
    }

    fn saw_redis_now(&self, redis_now: Option<&String>) {
        if let Some(n) = redis_now.and_then(|n| n.parse::<i64>().ok()) {
            self.offset.store(n - now_ms(), Ordering::Relaxed);
        }
    }

    pub fn keys(&self, run_id: &str) -> WindowKeys {
        WindowKeys::new(&self.claim_prefix, run_id)
    }

    fn index(&self) -> String {
        crate::store::keys::open_attempts(&self.claim_prefix)
    }

    /// Claim `run_id` for a new attempt (`token`), or say why not. `supersede` is the token of
    /// an attempt the caller resolved as never sent: it is replaced in the same step.
    #[allow(clippy::too_many_arguments)]
    pub async fn claim(
        &self,
        run_id: &str,
        token: &str,
        supersede: Option<&str>,
        job_id: &str,
        worker_id: &str,
        to: &str,
        from: &str,
        body: &str,
    ) -> Result<Claim, Error> {
        let args = vec![
            token.to_string(),
            job_id.to_string(),
            worker_id.to_string(),
            supersede.unwrap_or("").to_string(),
            ms(self.times.pending_ttl),
            ms(self.times.hold),
            ms(self.times.sent_ttl),
            to.to_string(),
            from.to_string(),
            body.to_string(),
            run_id.to_string(),
            ms(self.times.lease),
            crate::store::keys::RECENT_RUNS_CAP.to_string(),
        ];
        let k = self.keys(run_id);
        let claim_key = k.claim.clone();
        let keys = self.laid_out(
            vec![k.claim, k.attempt, k.record],
            [
                self.index(),
                crate::store::keys::recent_runs(&self.claim_prefix),
            ],
        );
        // A lost reply is sent again with the same token: the script answers its own earlier
        // claim as "claimed" (window_claim.lua), and an answer later than the freshness bound
        // from the first send starts no send.
        let first_sent = tokio::time::Instant::now();
        let mut delay = Duration::from_millis(20);
        let reply: Vec<String> = loop {
            let mut args = args.clone();
            if self.per_slot() {
                // the intent first: an attempt this claim opens is indexed before it exists; the
                // script opens none once the intent is due (a sweep may take and drop it then)
                let due = self.now() + self.times.pending_ttl.as_millis() as i64;
                self.index_add(run_id, due).await?;
                args.push(due.to_string());
            }
            // PerSlot (a cluster): the claim's WAIT rides in its pipeline, before any send
            match scripts()
                .window_claim
                .run_durably(
                    self.topology,
                    &mut self.conn.clone(),
                    &self.trips,
                    &claim_key,
                    &keys,
                    &args,
                )
                .await
            {
                Ok(reply) => break reply,
                Err(e)
                    if may_resend(&e) && first_sent.elapsed() + delay < self.times.replay_for =>
                {
                    tracing::debug!(error = %e, "claim call failed; sending it again");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let mut claim = self.read_claim(&reply)?;
        if let Claim::Claimed { token } = &claim
            && first_sent.elapsed() > self.times.replay_for
        {
            tracing::warn!(
                elapsed_ms = first_sent.elapsed().as_millis() as u64,
                "the claim answered too late to send on; giving it back"
            );
            self.release(
                run_id,
                token,
                "claim answered too late",
                "released",
                Duration::ZERO,
            )
            .await?;
            claim = Claim::Busy(Duration::ZERO);
        }
        if self.per_slot() {
            let redis_now = reply
                .last()
                .and_then(|n| n.parse::<i64>().ok())
                .unwrap_or_else(|| self.now());
            self.after_claim(run_id, &claim, redis_now).await?;
        }
        Ok(claim)
    }

    /// A claim's reply (`window_claim.lua`'s, also the claim a fused finish made for the job it
    /// fetched, on one Redis only) as a [`Claim`]; notes Redis's clock from it.
    pub fn read_claim(&self, reply: &[String]) -> Result<Claim, Error> {
        let bad = || Error::Reply {
            script: "window_claim",
            detail: format!("{reply:?}"),
        };
        let get = |i: usize| reply.get(i).cloned().ok_or_else(bad);
        self.saw_redis_now(reply.last());
        let claim = match reply.first().map(String::as_str) {
            Some("sent") => Claim::Sent(Some(get(1)?).filter(|s| !s.is_empty())),
            Some("busy") => Claim::Busy(Duration::from_millis(
                get(1)?.parse::<i64>().unwrap_or(0).max(0) as u64,
            )),
            Some("claimed") => Claim::Claimed { token: get(1)? },
            Some("resolve") => Claim::Resolve(Unresolved {
                token: get(1)?,
                since: get(2)?.parse().unwrap_or_else(|_| self.now()),
                to: get(3)?,
                from: get(4)?,
                body: get(5)?,
                receipt_sid: Some(get(6)?).filter(|s| !s.is_empty()),
                escalated: !get(7)?.is_empty(),
                taken: get(8)? == "taken",
            }),
            _ => return Err(bad()),
        };
        Ok(claim)
    }

    /// PerSlot mode: the global writes the claim script left to its caller (module docs).
    async fn after_claim(&self, run_id: &str, claim: &Claim, redis_now: i64) -> Result<(), Error> {
        match claim {
            Claim::Sent(_) => self.index_rem(run_id).await,
            Claim::Busy(left) => {
                // the intent moved the live attempt's time on: put its deadline back
                self.index_add(run_id, redis_now + left.as_millis() as i64)
                    .await
            }
            Claim::Resolve(_) => {
                self.index_add(run_id, redis_now + self.times.hold.as_millis() as i64 / 2)
                    .await
            }
            Claim::Claimed { .. } => {
                // the console's newest-first list, trimmed to its cap in the same call
                let recent = crate::store::keys::recent_runs(&self.claim_prefix);
                self.trips.add(1);
                redis::pipe()
                    .cmd("ZADD")
                    .arg(&recent)
                    .arg(redis_now)
                    .arg(run_id)
                    .ignore()
                    .cmd("ZREMRANGEBYRANK")
                    .arg(&recent)
                    .arg(0)
                    .arg(-(crate::store::keys::RECENT_RUNS_CAP as i64) - 1)
                    .ignore()
                    .query_async::<()>(&mut self.conn.clone())
                    .await?;
                Ok(())
            }
        }
    }

    /// Record that `sid` was sent for the run (Twilio answered this attempt, or a lookup found it)
    /// with `status`, and start the callback record with it (one call).
    pub async fn mark_sent(
        &self,
        run_id: &str,
        token: &str,
        sid: &str,
        status: &str,
        how: Marked,
    ) -> Result<MarkSent, Error> {
        let k = self.keys(run_id);
        let kind = match how {
            Marked::Sent => "sent",
            Marked::Found => "found",
        };
        let args = [
            token,
            sid,
            &ms(self.times.sent_ttl),
            run_id,
            status,
            &ms(self.times.poll_after),
            kind,
        ];
        let history = crate::store::keys::callback_history(&self.claim_prefix, run_id);
        let link = crate::store::keys::message_link(sid);
        let claim_key = k.claim.clone();
        let keys = if self.per_slot() {
            if how == Marked::Found && self.linked_elsewhere(&link, run_id).await? {
                return Ok(MarkSent::OtherRun);
            }
            self.link_and_schedule(run_id, sid, &link).await?;
            vec![k.claim, k.attempt, k.record, history]
        } else {
            vec![
                k.claim,
                k.attempt,
                self.index(),
                link,
                k.record,
                history,
                crate::store::keys::reconcile_schedule(&self.claim_prefix),
            ]
        };
        let code: i64 = scripts()
            .window_mark_sent
            .run_durably(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &claim_key,
                &keys,
                &args,
            )
            .await?;
        if self.per_slot() && code != 2 {
            self.index_rem(run_id).await?;
        }
        Ok(match code {
            0 => MarkSent::Marked,
            1 => {
                WINDOW_OVERRUNS.fetch_add(1, Ordering::Relaxed);
                MarkSent::Overrun
            }
            _ => MarkSent::OtherRun,
        })
    }

    /// PerSlot mode: whether the MessageSid is already linked to another run (a lookup never
    /// takes another run's message).
    async fn linked_elsewhere(&self, link: &str, run_id: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let owner: Option<String> = redis::cmd("GET")
            .arg(link)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(owner.is_some_and(|o| o != run_id))
    }

    /// PerSlot mode, before the sent marker: the MessageSid link and the message's poll (each
    /// its own slot). Written first, so a cut before the marker leaves the reconciler the way to
    /// the run's record (module docs).
    async fn link_and_schedule(&self, run_id: &str, sid: &str, link: &str) -> Result<(), Error> {
        self.trips.add(1);
        redis::cmd("SET")
            .arg(link)
            .arg(run_id)
            .arg("PX")
            .arg(ms(self.times.sent_ttl))
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        self.trips.add(1);
        redis::cmd("ZADD")
            .arg(crate::store::keys::reconcile_schedule(&self.claim_prefix))
            .arg(self.now() + self.times.poll_after.as_millis() as i64)
            .arg(sid)
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Twilio did not take the message. `state` "released": the claim stays ours and the attempt
    /// open as `retry`, due in `retry_in` (for the job's retry or the orphan sweep, whichever
    /// comes); "send-failed": the claim is deleted and the run closed (escalate first).
    pub async fn release(
        &self,
        run_id: &str,
        token: &str,
        reason: &str,
        state: &str,
        retry_in: Duration,
    ) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let retry_in = retry_in.as_millis().to_string();
        let args = [
            token,
            &retry_in,
            reason,
            state,
            run_id,
            &ms(self.times.lease),
        ];
        let keys = self.laid_out(vec![k.claim, k.attempt], [self.index()]);
        let released: i64 = scripts()
            .window_release
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &keys,
                &args,
            )
            .await?;
        if self.per_slot() && released == 1 {
            if state == "send-failed" {
                self.index_rem(run_id).await?;
            } else {
                self.index_add(
                    run_id,
                    self.now() + retry_in.parse::<i64>().unwrap_or(0).max(1),
                )
                .await?;
            }
        }
        Ok(released == 1)
    }

    /// Keep our claim while an unknown send is resolved.
    pub async fn hold(&self, run_id: &str, token: &str, reason: &str) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let args = [
            token,
            &ms(self.times.lease),
            &ms(self.times.hold),
            reason,
            run_id,
        ];
        let keys = self.laid_out(vec![k.claim, k.attempt], [self.index()]);
        let held: i64 = scripts()
            .window_hold
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &keys,
                &args,
            )
            .await?;
        if self.per_slot() && held == 1 {
            self.index_add(run_id, self.now() + self.times.hold.as_millis() as i64 / 2)
                .await?;
        }
        Ok(held == 1)
    }

    /// A run's attempt record as stored (empty when there is none): its `state`, `to`,
    /// `from`, `body`, … (`window_claim.lua`'s header names the fields).
    pub async fn attempt_record(
        &self,
        run_id: &str,
    ) -> Result<std::collections::HashMap<String, String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("HGETALL")
            .arg(self.keys(run_id).attempt)
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// The runId a MessageSid was sent for, when ringback recorded it.
    pub async fn run_of_message(&self, sid: &str) -> Result<Option<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("GET")
            .arg(crate::store::keys::message_link(sid))
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Runs whose attempt is still open past its deadline: maybe no live job is resolving them.
    /// (Read on this process's estimate of Redis's clock; `sweep` decides on Redis's own.)
    pub async fn overdue(&self, limit: usize) -> Result<Vec<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("ZRANGEBYSCORE")
            .arg(self.index())
            .arg("-inf")
            .arg(self.now())
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Take an overdue open attempt for re-enqueueing: its claim is re-fenced and its deadline
    /// pushed on. `None` when it was not overdue after all, or is settled.
    pub async fn sweep(&self, run_id: &str) -> Result<Option<Orphan>, Error> {
        self.sweep_script(run_id, false).await
    }

    /// Take an open attempt whether or not it is due (`ringback drain`).
    pub async fn take(&self, run_id: &str) -> Result<Option<Orphan>, Error> {
        self.sweep_script(run_id, true).await
    }

    /// Every run with an open attempt (the whole index).
    pub async fn open_runs(&self) -> Result<Vec<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("ZRANGE")
            .arg(self.index())
            .arg(0)
            .arg(-1)
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Say this ringback worker (`worker_id`, a readable `name`) is alive now.
    pub async fn heartbeat(&self, worker_id: &str, name: &str) -> Result<(), Error> {
        let member = format!("{name} ({worker_id})");
        let _: i64 = self.workers_script(&["beat", &member]).await?;
        Ok(())
    }

    /// Forget this worker's heartbeat (a clean stop).
    pub async fn heartbeat_stop(&self, worker_id: &str, name: &str) -> Result<(), Error> {
        let member = format!("{name} ({worker_id})");
        let _: i64 = self.workers_script(&["stop", &member]).await?;
        Ok(())
    }

    /// Ringback workers whose heartbeat is younger than `within`, on Redis's clock (as the
    /// heartbeats are scored: one clock for every host).
    pub async fn live_workers(&self, within: Duration) -> Result<Vec<String>, Error> {
        self.workers_script(&["live", &ms(within)]).await
    }

    async fn workers_script<T: redis::FromRedisValue>(&self, args: &[&str]) -> Result<T, Error> {
        Ok(scripts()
            .window_workers
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &[self.workers()],
                args,
            )
            .await?)
    }

    fn workers(&self) -> String {
        crate::store::keys::ringback_workers(&self.claim_prefix)
    }

    async fn sweep_script(&self, run_id: &str, force: bool) -> Result<Option<Orphan>, Error> {
        let k = self.keys(run_id);
        let force = if force { "1" } else { "" };
        let args = [run_id, &ms(self.times.lease), &ms(self.times.hold), force];
        let keys = self.laid_out(vec![k.claim, k.attempt], [self.index()]);
        let taken = if self.per_slot() {
            // the due check and the push, atomic on the index alone (window_index.lua)
            let push = (self.times.hold.as_millis() / 2).to_string();
            let at: Option<i64> = scripts()
                .window_index
                .run_in(
                    self.topology,
                    &mut self.conn.clone(),
                    &self.trips,
                    &[self.index()],
                    &["take", run_id, &push, force],
                )
                .await?;
            match at {
                Some(at) => Some(at),
                None => return Ok(None),
            }
        } else {
            None
        };
        let reply: Vec<String> = scripts()
            .window_sweep
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &keys,
                &args,
            )
            .await?;
        if let (Some(at), true) = (taken, reply.is_empty()) {
            // settled: drop it, unless a newer claim wrote the index since the take
            let _: i64 = scripts()
                .window_index
                .run_in(
                    self.topology,
                    &mut self.conn.clone(),
                    &self.trips,
                    &[self.index()],
                    &["drop", run_id, &at.to_string(), ""],
                )
                .await?;
        }
        Ok(match reply.as_slice() {
            [generation, token, to, from, body] => Some(Orphan {
                generation: generation.clone(),
                token: token.clone(),
                to: to.clone(),
                from: from.clone(),
                body: body.clone(),
            }),
            _ => None,
        })
    }
}

impl Window {
    /// Make a callback whose job ended unresolved an open attempt of the orphan sweep's (see
    /// `lua/window_adopt.lua`). Returns true when it was adopted now.
    pub async fn adopt(
        &self,
        job_id: &str,
        req: &crate::callbacks::callback::CallbackRequest,
    ) -> Result<bool, Error> {
        let k = self.keys(&req.run_id);
        let from = req.from.clone().unwrap_or_default();
        let args = [
            req.run_id.as_str(),
            job_id,
            &req.to,
            &from,
            &req.body,
            &ms(self.times.sent_ttl),
        ];
        let keys = self.laid_out(vec![k.claim, k.attempt, k.record], [self.index()]);
        if self.per_slot() {
            // first: an attempt adopted now is due now, and indexed before it exists
            self.index_add(&req.run_id, self.now()).await?;
        }
        let adopted: i64 = scripts()
            .window_adopt
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &keys,
                &args,
            )
            .await?;
        Ok(adopted == 1)
    }

    /// Settle an attempt whose send cannot be proven either way (escalated before): never resent.
    pub async fn settle_unknown(
        &self,
        run_id: &str,
        token: &str,
        reason: &str,
    ) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let args = [token, &ms(self.times.sent_ttl), run_id, reason];
        let keys = self.laid_out(vec![k.claim, k.attempt], [self.index()]);
        let settled: i64 = scripts()
            .window_settle_unknown
            .run_in(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                &keys,
                &args,
            )
            .await?;
        if self.per_slot() && settled == 1 {
            self.index_rem(run_id).await?;
        }
        Ok(settled == 1)
    }

    /// Mark the attempt's unknown outcome as escalated; true for the first caller only.
    pub async fn flag_escalated(&self, run_id: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let first: i64 = redis::cmd("HSETNX")
            .arg(self.keys(run_id).attempt)
            .arg("escalated")
            .arg(self.now())
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(first == 1)
    }

    /// Open attempts: how many, and the oldest one's start (ms on Redis's clock).
    pub async fn open_attempts(&self) -> Result<OpenAttempts, Error> {
        self.trips.add(1);
        let (count, runs): (u64, Vec<String>) = redis::pipe()
            .cmd("ZCARD")
            .arg(self.index())
            .cmd("ZRANGE")
            .arg(self.index())
            .arg(0)
            .arg(GAUGE_SAMPLE - 1)
            .query_async(&mut self.conn.clone())
            .await?;
        // The index is ordered by when to look, not by age: read the records' starts, in one
        // round trip, for up to GAUGE_SAMPLE runs (the oldest is almost always among the first
        // to be looked at, since an open attempt is looked at every sweep).
        if runs.is_empty() {
            return Ok(OpenAttempts {
                count,
                ..Default::default()
            });
        }
        let mut pipe = redis::pipe();
        for run in &runs {
            pipe.cmd("HMGET")
                .arg(self.keys(run).attempt)
                .arg("since")
                .arg("state");
        }
        self.trips.add(1);
        let rows: Vec<(Option<i64>, Option<String>)> =
            pipe.query_async(&mut self.conn.clone()).await?;
        let state_is = |want: &[&str]| {
            rows.iter()
                .filter(|(_, s)| s.as_deref().is_some_and(|s| want.contains(&s)))
                .count() as u64
        };
        Ok(OpenAttempts {
            count,
            oldest_since: rows.iter().filter_map(|(since, _)| *since).min(),
            retry: state_is(&["retry"]),
            in_doubt: state_is(&["ambiguous", "unknown"]),
        })
    }

    /// Come back to an open attempt at `at` (ms) rather than at its default deadline.
    pub async fn revisit_at(&self, run_id: &str, at: i64) -> Result<(), Error> {
        self.trips.add(1);
        redis::cmd("ZADD")
            .arg(self.index())
            .arg("XX")
            .arg(at)
            .arg(run_id)
            .query_async::<()>(&mut self.conn.clone())
            .await?;
        Ok(())
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
    Marked,
    /// Marked after the claim had changed hands (counted).
    Overrun,
    /// A found message is linked to another run: not taken.
    OtherRun,
}

/// The open-attempts gauges (states read from up to `GAUGE_SAMPLE` records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OpenAttempts {
    pub count: u64,
    /// When the oldest open attempt started (ms, Redis's clock).
    pub oldest_since: Option<i64>,
    /// Released for another attempt (`retry`): their jobs wait in delayed for the next one.
    pub retry: u64,
    /// An earlier send not proven either way (`ambiguous`, `unknown`): their jobs wait in
    /// delayed while lookups and receipts decide.
    pub in_doubt: u64,
}

/// An open attempt the sweep took: what its re-enqueued job needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Orphan {
    /// How many times it was swept (part of the new job's id).
    pub generation: String,
    pub token: String,
    pub to: String,
    pub from: String,
    pub body: String,
}

impl Orphan {
    /// The job id (`ringback-<by>:<token>:<generation>`) and the callback that resolving this
    /// orphan runs, `by` naming who took it (`sweep`, `drain`).
    pub fn job(
        self,
        by: &str,
        run_id: &str,
    ) -> (String, crate::callbacks::callback::CallbackRequest) {
        let job_id = format!("ringback-{by}:{}:{}", self.token, self.generation);
        let req = crate::callbacks::callback::CallbackRequest {
            run_id: run_id.to_string(),
            to: self.to,
            body: self.body,
            from: Some(self.from).filter(|f| !f.is_empty()),
        };
        (job_id, req)
    }
}

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}
