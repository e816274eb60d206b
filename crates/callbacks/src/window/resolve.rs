//! Resolving open attempts: the attempt record, the sweep of orphans, adoption of a job that
//! ended unresolved, settling an unknown, the open-attempts gauges.

use super::{GAUGE_SAMPLE, OpenAttempts, Orphan, SendFacts, Window, ms};
use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::scripts::scripts;

impl Window {
    /// A run's attempt record as stored (empty when there is none): its `state`, `to`,
    /// `from`, `body`, … (`window_claim.lua`'s header names the fields).
    pub async fn attempt_record(
        &self,
        run_id: &str,
    ) -> Result<std::collections::HashMap<String, String>, Error> {
        Ok(redis::cmd("HGETALL")
            .arg(self.keys(run_id).attempt)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// The runId a MessageSid was sent for, when ringback recorded it.
    pub async fn run_of_message(&self, sid: &str) -> Result<Option<String>, Error> {
        Ok(redis::cmd("GET")
            .arg(ringback_store::keys::message_link(sid))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Runs whose attempt is still open past its deadline: maybe no live job is resolving them.
    /// (Read on this process's estimate of Redis's clock; `sweep` decides on Redis's own.)
    pub async fn overdue(&self, limit: usize) -> Result<Vec<String>, Error> {
        Ok(redis::cmd("ZRANGEBYSCORE")
            .arg(self.index())
            .arg("-inf")
            .arg(self.now())
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .round_trip(&mut self.conn.clone(), &self.trips)
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
        Ok(redis::cmd("ZRANGE")
            .arg(self.index())
            .arg(0)
            .arg(-1)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }
}

impl Window {
    pub(super) async fn sweep_script(
        &self,
        run_id: &str,
        force: bool,
    ) -> Result<Option<Orphan>, Error> {
        let k = self.keys(run_id);
        let force = if force { "1" } else { "" };
        let taken = if self.per_slot() {
            // the due check and the push, atomic on the index alone (window_index.lua)
            let push = (self.times.hold.as_millis() / 2).to_string();
            let at: Option<i64> = scripts()
                .window_index
                .call()
                .key("open-attempts index", self.index())
                .arg("\"take\" | \"drop\"", "take")
                .arg("runId", run_id)
                .arg("take: push (ms)", push)
                .arg("take: \"1\" = even if not due", force)
                .run_in(self.topology, &mut self.conn.clone(), &self.trips)
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
            .call()
            .key("claim key", k.claim)
            .key("attempt record", k.attempt)
            .key_if("open-attempts index", self.global(self.index()))
            .arg("runId", run_id)
            .arg("claim lease (ms)", ms(self.times.lease))
            .arg("hold (ms)", ms(self.times.hold))
            .arg("\"1\" = take it even if not due", force)
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        if let (Some(at), true) = (taken, reply.is_empty()) {
            // settled: drop it, unless a newer claim wrote the index since the take
            let _: i64 = scripts()
                .window_index
                .call()
                .key("open-attempts index", self.index())
                .arg("\"take\" | \"drop\"", "drop")
                .arg("runId", run_id)
                .arg("take: push (ms); drop: the time", at)
                .arg("take: \"1\" = even if not due", "")
                .run_in(self.topology, &mut self.conn.clone(), &self.trips)
                .await?;
        }
        Ok(match reply.as_slice() {
            [generation, token, to, from, body, urgent, tz, ask] => Some(Orphan {
                generation: generation.clone(),
                token: token.clone(),
                to: to.clone(),
                from: from.clone(),
                body: body.clone(),
                facts: SendFacts::read(urgent, tz, ask),
            }),
            _ => None,
        })
    }
}

ringback_store::coded_answer! {
    /// What `window_adopt.lua` made of a run whose job ended unresolved.
    pub enum Adoption("window_adopt.lua") {
        /// Adopted now: an open attempt of the orphan sweep's.
        Now = 1,
        /// Already open (indexed again).
        AlreadyOpen = 2,
        /// Nothing to do: sent, or failed for good.
        Nothing = 0,
    }
}

ringback_store::coded_answer! {
    /// What `window_settle_unknown.lua` did with an attempt whose send cannot be proven.
    pub enum Settlement("window_settle_unknown.lua") {
        /// Settled as unknown: never resent.
        Settled = 1,
        /// The claim belongs to someone else now: left alone.
        NotOurs = 0,
    }
}

impl Window {
    /// Make a callback whose job ended unresolved an open attempt of the orphan sweep's (see
    /// `lua/window_adopt.lua`). Returns true when it was adopted now.
    pub async fn adopt(
        &self,
        job_id: &str,
        req: &crate::callback::CallbackRequest,
    ) -> Result<bool, Error> {
        let k = self.keys(&req.run_id);
        if self.per_slot() {
            // first: an attempt adopted now is due now, and indexed before it exists
            self.index_add(&req.run_id, self.now()).await?;
        }
        let adopted: Adoption = scripts()
            .window_adopt
            .call()
            .key("claim key", k.claim)
            .key("attempt record", k.attempt)
            .key("callback record", k.record)
            .key_if("open-attempts index", self.global(self.index()))
            .arg("runId", &req.run_id)
            .arg("job id", job_id)
            .arg("to", &req.to)
            .arg("from", req.from.as_deref().unwrap_or(""))
            .arg("body", &req.body)
            .arg("record TTL (ms)", ms(self.times.sent_ttl))
            .arg("\"1\" = urgent", if req.urgent { "1" } else { "" })
            .arg("time zone", req.time_zone.as_deref().unwrap_or(""))
            .arg("question and ladder", req.kept_ask().unwrap_or_default())
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        Ok(adopted == Adoption::Now)
    }

    /// Settle an attempt whose send cannot be proven either way (escalated before): never resent.
    pub async fn settle_unknown(
        &self,
        run_id: &str,
        token: &str,
        reason: &str,
    ) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let settled: Settlement = scripts()
            .window_settle_unknown
            .call()
            .key("claim key", k.claim)
            .key("attempt record", k.attempt)
            .key_if("open-attempts index", self.global(self.index()))
            .arg("attempt token", token)
            .arg("sent TTL (ms)", ms(self.times.sent_ttl))
            .arg("runId", run_id)
            .arg("reason", reason)
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        if self.per_slot() && settled == Settlement::Settled {
            self.index_rem(run_id).await?;
        }
        Ok(settled == Settlement::Settled)
    }

    /// Mark the attempt's unknown outcome as escalated; true for the first caller only.
    pub async fn flag_escalated(&self, run_id: &str) -> Result<bool, Error> {
        let first: i64 = redis::cmd("HSETNX")
            .arg(self.keys(run_id).attempt)
            .arg("escalated")
            .arg(self.now())
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(first == 1)
    }

    /// Open attempts: how many, and the oldest one's start (ms on Redis's clock).
    pub async fn open_attempts(&self) -> Result<OpenAttempts, Error> {
        let (count, runs): (u64, Vec<String>) = redis::pipe()
            .cmd("ZCARD")
            .arg(self.index())
            .cmd("ZRANGE")
            .arg(self.index())
            .arg(0)
            .arg(GAUGE_SAMPLE - 1)
            .round_trip(&mut self.conn.clone(), &self.trips)
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
                .arg("state")
                .arg("error");
        }
        let rows: Vec<(Option<i64>, Option<String>, Option<String>)> =
            pipe.round_trip(&mut self.conn.clone(), &self.trips).await?;
        let state_is = |want: &[&str]| {
            rows.iter()
                .filter(|(_, s, _)| s.as_deref().is_some_and(|s| want.contains(&s)))
                .count() as u64
        };
        // an attempt waiting for its quiet hours to end is on time, however old: its age would
        // page the operator every night
        let quiet = |(_, state, error): &&(Option<i64>, Option<String>, Option<String>)| {
            state.as_deref() == Some("retry")
                && error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(crate::quiet::HELD_REASON))
        };
        Ok(OpenAttempts {
            count,
            oldest_since: rows
                .iter()
                .filter(|r| !quiet(r))
                .filter_map(|(since, _, _)| *since)
                .min(),
            retry: state_is(&["retry"]),
            in_doubt: state_is(&["ambiguous", "unknown"]),
        })
    }

    /// Come back to an open attempt at `at` (ms) rather than at its default deadline.
    pub async fn revisit_at(&self, run_id: &str, at: i64) -> Result<(), Error> {
        redis::cmd("ZADD")
            .arg(self.index())
            .arg("XX")
            .arg(at)
            .arg(run_id)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }
}
