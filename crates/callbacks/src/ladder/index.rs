//! The indexes around the ladders' records: the due schedule the sweep reads, the people each
//! ladder reached (a message from them acknowledges it), the runs of the steps' texts, the
//! calls a stop left ringing, and the calls placed to each number this hour (the cap).

use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::keys;

use super::record::{LadderRecord, ms};

impl LadderRecord {
    /// The ladder has reached `number` (texted or called): a message from it acknowledges the
    /// run's ladder. Kept as long as ladders are.
    pub async fn reached(&self, run_id: &str, number: &str) -> Result<(), Error> {
        let key = keys::ladder_people(&self.claim_prefix, number);
        redis::pipe()
            .cmd("SADD")
            .arg(&key)
            .arg(run_id)
            .ignore()
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(ms(self.record_ttl))
            .ignore()
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// The runs whose ladder reached `number`.
    pub async fn runs_reaching(&self, number: &str) -> Result<Vec<String>, Error> {
        Ok(redis::cmd("SMEMBERS")
            .arg(keys::ladder_people(&self.claim_prefix, number))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// `step_run` is a step's text of `run_id`'s ladder: its receipts and failures are the
    /// ladder's.
    pub async fn note_step_run(&self, step_run: &str, run_id: &str) -> Result<(), Error> {
        redis::cmd("SET")
            .arg(keys::ladder_step_of(&self.claim_prefix, step_run))
            .arg(run_id)
            .arg("PX")
            .arg(ms(self.record_ttl))
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// The run whose ladder `run_id` is a step's text of, if it is one. Only a runId the
    /// ladder names as its steps' ([`super::step_run`]) is looked up: every other receipt
    /// costs nothing.
    pub async fn step_of(&self, run_id: &str) -> Result<Option<String>, Error> {
        if !super::may_be_step_run(run_id) {
            return Ok(None);
        }
        Ok(redis::cmd("GET")
            .arg(keys::ladder_step_of(&self.claim_prefix, run_id))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Calls to end (ringing after their ladder stopped), for a worker with Twilio's
    /// credentials.
    pub async fn hang_up_later(&self, sids: &[String]) -> Result<(), Error> {
        if sids.is_empty() {
            return Ok(());
        }
        redis::cmd("SADD")
            .arg(keys::ladder_hangups(&self.claim_prefix))
            .arg(sids)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// The calls waiting to be ended.
    pub async fn hangups(&self) -> Result<Vec<String>, Error> {
        Ok(redis::cmd("SRANDMEMBER")
            .arg(keys::ladder_hangups(&self.claim_prefix))
            .arg(50)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Call `sid` is ended (or was).
    pub async fn hung_up(&self, sid: &str) -> Result<(), Error> {
        redis::cmd("SREM")
            .arg(keys::ladder_hangups(&self.claim_prefix))
            .arg(sid)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// Count one more call to `number` this hour (Redis's clock `now`, ms): the count.
    pub async fn count_call(&self, number: &str, now: i64) -> Result<u64, Error> {
        let hour = now.div_euclid(3_600_000);
        let key = keys::ladder_calls(&self.claim_prefix, number, hour);
        let (n,): (u64,) = redis::pipe()
            .cmd("INCR")
            .arg(&key)
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(7_200_000)
            .ignore()
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(n)
    }

    /// The runs whose ladder step is due by `now` (ms, Redis's clock), at most `limit`.
    pub async fn due_runs(&self, now: i64, limit: usize) -> Result<Vec<String>, Error> {
        Ok(redis::cmd("ZRANGE")
            .arg(keys::ladder_due(&self.claim_prefix))
            .arg("-inf")
            .arg(now)
            .arg("BYSCORE")
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// The runs whose ladder still climbs (every run of the due index whose record says
    /// `climbing`), for `ringback drain`.
    pub async fn climbing(&self) -> Result<Vec<String>, Error> {
        let runs: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys::ladder_due(&self.claim_prefix))
            .arg(0)
            .arg(-1)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        let mut climbing = vec![];
        for run in runs {
            let state: Option<String> = redis::cmd("HGET")
                .arg(keys::ladder(&self.claim_prefix, &run))
                .arg("state")
                .round_trip(&mut self.conn.clone(), &self.trips)
                .await?;
            if state.as_deref() == Some("climbing") {
                climbing.push(run);
            }
        }
        Ok(climbing)
    }

    /// Take `run_id` out of the due index (its ladder ended, or it has none).
    pub async fn unindex(&self, run_id: &str) -> Result<(), Error> {
        redis::cmd("ZREM")
            .arg(keys::ladder_due(&self.claim_prefix))
            .arg(run_id)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// Put `run_id` back in the due index at `at` (ms, Redis's clock).
    pub async fn reindex(&self, run_id: &str, at: i64) -> Result<(), Error> {
        redis::cmd("ZADD")
            .arg(keys::ladder_due(&self.claim_prefix))
            .arg(at)
            .arg(run_id)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }
    /// The escalation of an exhausted ladder was added: clear `escalate`. True when this call
    /// cleared it.
    pub async fn escalated(&self, run_id: &str) -> Result<bool, Error> {
        let n: i64 = redis::cmd("HDEL")
            .arg(keys::ladder(&self.claim_prefix, run_id))
            .arg("escalate")
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(n == 1)
    }

    /// The ladder's record as stored (empty: none), for status pages and tests.
    pub async fn read(
        &self,
        run_id: &str,
    ) -> Result<std::collections::HashMap<String, String>, Error> {
        Ok(redis::cmd("HGETALL")
            .arg(keys::ladder(&self.claim_prefix, run_id))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Keep `value` under `field` of `run_id`'s ladder (the sweep's notes: `no_answer`).
    pub async fn note(&self, run_id: &str, field: &str, value: &str) -> Result<(), Error> {
        redis::cmd("HSET")
            .arg(keys::ladder(&self.claim_prefix, run_id))
            .arg(field)
            .arg(value)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }
}
