//! The claim/sent window around `messages.create`: claim before the provider call, turn the
//! claim into a long-lived `sent` marker after Twilio accepted, release it when Twilio did not
//! take the message, hold it while a send's outcome is unknown. Each step is one Lua script over
//! the claim key (shared with the legacy Node worker) and ringback's durable attempt record.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use redis::aio::ConnectionManager;

use crate::commands::now_ms;
use crate::error::Error;
use crate::keys::WindowKeys;
use crate::scripts::{RoundTrips, scripts};

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
}

/// Settings of the window.
#[derive(Debug, Clone)]
pub struct WindowTimes {
    pub pending_ttl: Duration,
    pub sent_ttl: Duration,
    /// How long the claim is held while an unknown send is resolved.
    pub hold: Duration,
    /// When a sent message with no terminal receipt is looked up.
    pub poll_after: Duration,
}

/// Times a sent marker was written after the claim had expired or changed hands.
static WINDOW_OVERRUNS: AtomicU64 = AtomicU64::new(0);

pub fn window_overruns() -> u64 {
    WINDOW_OVERRUNS.load(Ordering::Relaxed)
}

/// The window's Redis operations.
#[derive(Clone)]
pub struct Window {
    conn: ConnectionManager,
    trips: Arc<RoundTrips>,
    claim_prefix: String,
    times: WindowTimes,
}

impl Window {
    pub fn new(
        conn: ConnectionManager,
        trips: Arc<RoundTrips>,
        claim_prefix: String,
        times: WindowTimes,
    ) -> Self {
        Self {
            conn,
            trips,
            claim_prefix,
            times,
        }
    }

    pub fn keys(&self, run_id: &str) -> WindowKeys {
        WindowKeys::new(&self.claim_prefix, run_id)
    }

    fn index(&self) -> String {
        crate::keys::open_attempts(&self.claim_prefix)
    }

    /// Claim `run_id` for a new attempt (`token`), or say why not.
    #[allow(clippy::too_many_arguments)]
    pub async fn claim(
        &self,
        run_id: &str,
        token: &str,
        job_id: &str,
        worker_id: &str,
        to: &str,
        from: &str,
        body: &str,
    ) -> Result<Claim, Error> {
        let now = now_ms().to_string();
        let args = [
            token,
            job_id,
            worker_id,
            &now,
            &ms(self.times.pending_ttl),
            &ms(self.times.hold),
            &ms(self.times.sent_ttl),
            to,
            from,
            body,
            run_id,
        ];
        let k = self.keys(run_id);
        let keys = [k.claim, k.attempt, k.record, self.index()];
        let reply: Vec<String> = scripts()
            .window_claim
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        let bad = || Error::Reply {
            script: "window_claim",
            detail: format!("{reply:?}"),
        };
        let get = |i: usize| reply.get(i).cloned().ok_or_else(bad);
        Ok(match reply.first().map(String::as_str) {
            Some("sent") => Claim::Sent(Some(get(1)?).filter(|s| !s.is_empty())),
            Some("busy") => Claim::Busy(Duration::from_millis(
                get(1)?.parse::<i64>().unwrap_or(0).max(0) as u64,
            )),
            Some("claimed") => Claim::Claimed { token: get(1)? },
            Some("resolve") => Claim::Resolve(Unresolved {
                token: get(1)?,
                since: get(2)?.parse().unwrap_or_else(|_| now_ms()),
                to: get(3)?,
                from: get(4)?,
                body: get(5)?,
                receipt_sid: Some(get(6)?).filter(|s| !s.is_empty()),
            }),
            _ => return Err(bad()),
        })
    }

    /// Record that Twilio accepted `sid` with `status`, and start the callback record with it (one
    /// call). Returns true when this was a window overrun.
    pub async fn mark_sent(
        &self,
        run_id: &str,
        token: &str,
        sid: &str,
        status: &str,
    ) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let now = now_ms();
        let next_poll = (now + self.times.poll_after.as_millis() as i64).to_string();
        let args = [
            token,
            sid,
            &now.to_string(),
            &ms(self.times.sent_ttl),
            run_id,
            status,
            &next_poll,
        ];
        let keys = [
            k.claim,
            k.attempt,
            self.index(),
            crate::keys::message_link(sid),
            k.record,
            crate::keys::callback_history(&self.claim_prefix, run_id),
            crate::keys::reconcile_schedule(&self.claim_prefix),
        ];
        let overrun: i64 = scripts()
            .window_mark_sent
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        if overrun == 1 {
            WINDOW_OVERRUNS.fetch_add(1, Ordering::Relaxed);
        }
        Ok(overrun == 1)
    }

    /// Give up our claim (compare-and-delete); `state` is "released" or "send-failed".
    pub async fn release(
        &self,
        run_id: &str,
        token: &str,
        reason: &str,
        state: &str,
    ) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let args = [token, &now_ms().to_string(), reason, state, run_id];
        let keys = [k.claim, k.attempt, self.index()];
        let released: i64 = scripts()
            .window_release
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        Ok(released == 1)
    }

    /// Keep our claim while an unknown send is resolved.
    pub async fn hold(&self, run_id: &str, token: &str, reason: &str) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let args = [
            token,
            &now_ms().to_string(),
            &ms(self.times.hold),
            reason,
            run_id,
        ];
        let keys = [k.claim, k.attempt, self.index()];
        let held: i64 = scripts()
            .window_hold
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        Ok(held == 1)
    }

    /// The runId a MessageSid was sent for, when ringback recorded it.
    pub async fn run_of_message(&self, sid: &str) -> Result<Option<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("GET")
            .arg(crate::keys::message_link(sid))
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Runs whose attempt is still open past its deadline: maybe no live job is resolving them.
    pub async fn overdue(&self, limit: usize) -> Result<Vec<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("ZRANGEBYSCORE")
            .arg(self.index())
            .arg("-inf")
            .arg(now_ms())
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Take an overdue open attempt for re-enqueueing: its claim is re-fenced and its deadline
    /// pushed on. `None` when it was not overdue after all, or is settled.
    pub async fn sweep(&self, run_id: &str) -> Result<Option<Orphan>, Error> {
        let k = self.keys(run_id);
        let args = [run_id, &now_ms().to_string(), &ms(self.times.hold)];
        let keys = [k.claim, k.attempt, self.index()];
        let reply: Vec<String> = scripts()
            .window_sweep
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
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

fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}
