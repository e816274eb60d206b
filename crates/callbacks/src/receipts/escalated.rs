//! Whether and how a run was escalated: the markers that make each escalation happen once,
//! for longer than the run's record lives.

use super::{ESCALATED_MARKER_LIVES, Receipts};

use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::keys::{self, WindowKeys};

impl Receipts {
    /// Mark the run escalated; true only the first time (exactly once). A run escalated before
    /// any status (a send that failed, a run settled as unknown) has no record yet: the flag
    /// starts one, which then gets the record TTL here (it would otherwise never expire: only a
    /// status gives a record its TTL).
    pub async fn mark_escalated(&self, run_id: &str, reason: &str) -> Result<bool, Error> {
        let record = WindowKeys::new(&self.claim_prefix, run_id).record;
        let (first, ttl): (i64, i64) = redis::pipe()
            .cmd("HSETNX")
            .arg(&record)
            .arg("escalated")
            .arg(format!("{}:{reason}", now_ms()))
            .cmd("PTTL")
            .arg(&record)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        if ttl == -1 {
            redis::cmd("PEXPIRE")
                .arg(&record)
                .arg(self.times.record_ttl.as_millis() as u64)
                .round_trip::<()>(&mut self.conn.clone(), &self.trips)
                .await?;
        }
        Ok(first == 1)
    }
}

impl Receipts {
    /// A numeric runId beyond 2^53 is keyed as JavaScript keys it (the double, which stands
    /// for other numbers too): the exact digits of the run that owns `run_id`'s key, as the
    /// first run to reach it recorded them; `None` for every other runId (no round trip).
    pub async fn exact_digits(&self, run_id: &str) -> Result<Option<String>, Error> {
        if !crate::callback::could_lose_digits(run_id) {
            return Ok(None);
        }
        Ok(redis::cmd("GET")
            .arg(ringback_store::keys::run_number(&self.claim_prefix, run_id))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// The run a fallback text's run tells of (its record's `fallback_of`), or `None` for any
    /// other run.
    pub async fn fallback_of(&self, run_id: &str) -> Result<Option<String>, Error> {
        Ok(redis::cmd("HGET")
            .arg(WindowKeys::new(&self.claim_prefix, run_id).record)
            .arg("fallback_of")
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Tie a fallback text's run to the run it tells of: each record names the other
    /// (`fallback`, `fallback_of`), and the fallback's run is noted so the console lists it
    /// under its run, not as a run of its own. Written when the fallback is asked for, before
    /// anything of it is claimed.
    pub async fn note_fallback(&self, run_id: &str, fallback_run: &str) -> Result<(), Error> {
        let ttl = self.times.record_ttl.as_millis().max(1) as u64;
        let now = now_ms();
        let parent = WindowKeys::new(&self.claim_prefix, run_id).record;
        let own = WindowKeys::new(&self.claim_prefix, fallback_run).record;
        let fallbacks = keys::fallback_runs(&self.claim_prefix);
        redis::pipe()
            .cmd("HSET")
            .arg(&parent)
            .arg("fallback")
            .arg(fallback_run)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&parent)
            .arg(ttl)
            .arg("NX")
            .ignore()
            .cmd("HSET")
            .arg(&own)
            .arg("fallback_of")
            .arg(run_id)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&own)
            .arg(ttl)
            .arg("NX")
            .ignore()
            .cmd("ZADD")
            .arg(&fallbacks)
            .arg(now)
            .arg(fallback_run)
            .ignore()
            .cmd("ZREMRANGEBYSCORE")
            .arg(&fallbacks)
            .arg("-inf")
            .arg(now - ttl as i64)
            .ignore()
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }
}

impl Receipts {
    /// Make an invalid job's run findable by its runId, everywhere a run is: its record names
    /// the job (`invalid_job`, so the run's page shows the job's BullMQ state) and the
    /// escalation (`escalated`, as every escalated run's does), and the run joins the recent
    /// runs the console lists (kept at its first time there). The escalation itself stays
    /// under the job's id (`escalation:job:<jobId>`): a runId is not the job's identity.
    pub async fn mark_invalid(
        &self,
        run_id: &str,
        job_id: &str,
        reason: &str,
    ) -> Result<(), Error> {
        self.mark_escalated(run_id, reason).await?;
        redis::cmd("HSET")
            .arg(WindowKeys::new(&self.claim_prefix, run_id).record)
            .arg("invalid_job")
            .arg(job_id)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        let now = now_ms();
        let recent = keys::recent_runs(&self.claim_prefix);
        redis::pipe()
            .cmd("ZADD")
            .arg(&recent)
            .arg("NX")
            .arg(now)
            .arg(run_id)
            .ignore()
            .cmd("ZREMRANGEBYRANK")
            .arg(&recent)
            .arg(0)
            .arg(-(keys::RECENT_RUNS_CAP as i64) - 1)
            .ignore()
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }
}

impl Receipts {
    /// Whether this run's escalation was already created (its marker outlives the record).
    pub async fn was_escalated(&self, run_id: &str) -> Result<bool, Error> {
        let n: i64 = redis::cmd("EXISTS")
            .arg(keys::escalated_marker(&self.claim_prefix, run_id))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(n == 1)
    }

    /// Remember that this run's escalation of `kind` exists, for [`ESCALATED_MARKER_LIVES`]
    /// times the record's lifetime; true when this call wrote the kind's marker first.
    pub async fn remember_escalated(&self, run_id: &str, kind: &str) -> Result<bool, Error> {
        let ttl = self.times.record_ttl.as_millis().max(1) as u64 * ESCALATED_MARKER_LIVES;
        let (_, first): ((), Option<String>) = redis::pipe()
            .cmd("SET")
            .arg(keys::escalated_marker(&self.claim_prefix, run_id))
            .arg(now_ms())
            .arg("PX")
            .arg(ttl)
            .cmd("SET")
            .arg(keys::escalated_kind_marker(
                &self.claim_prefix,
                run_id,
                kind,
            ))
            .arg(now_ms())
            .arg("PX")
            .arg(ttl)
            .arg("NX")
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(first.is_some())
    }

    /// Whether this run's escalation of `kind` exists.
    pub async fn was_escalated_as(&self, run_id: &str, kind: &str) -> Result<bool, Error> {
        let n: i64 = redis::cmd("EXISTS")
            .arg(keys::escalated_kind_marker(
                &self.claim_prefix,
                run_id,
                kind,
            ))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(n == 1)
    }
}
