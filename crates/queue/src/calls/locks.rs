//! Locks, stalls and the rate limit: lock renewal, stall recovery, `worker.rateLimit`.

use super::Calls;
use ringback_shared::clock::now_ms;
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::command::RoundTrip;
use ringback_store::scripts::scripts;

impl Calls {
    /// Renew the locks of `jobs` (id, token); returns the ids whose lock is no longer ours.
    pub async fn extend_locks(
        &self,
        jobs: &[(String, String)],
        lock_ms: u64,
    ) -> Result<Vec<String>, Error> {
        let k = &self.keys;
        Ok(scripts()
            .extend_locks
            .call()
            .key("stalled", k.stalled())
            .arg("key prefix", k.base())
            .arg("lock duration (ms)", lock_ms)
            .rest(
                "pairs: jobId, token",
                jobs.iter()
                    .flat_map(|(id, token)| [id.clone(), token.clone()]),
            )
            .run(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// One stall sweep; returns the ids moved back to wait.
    pub async fn move_stalled_jobs_to_wait(
        &self,
        max_stalled: u32,
        stalled_interval_ms: u64,
    ) -> Result<Vec<String>, Error> {
        let k = &self.keys;
        Ok(scripts()
            .move_stalled_jobs_to_wait
            .call()
            .key("stalled", k.stalled())
            .key("wait", k.wait())
            .key("active", k.active())
            .key("stalled-check", k.stalled_check())
            .key("meta", k.meta())
            .key("paused", k.paused())
            .key("marker", k.marker())
            .key("events", k.events())
            .key("repeat", k.repeat())
            .arg("maxStalledCount", max_stalled)
            .arg("key prefix", k.base())
            .arg("now (ms)", now_ms())
            .arg("stalledInterval (ms)", stalled_interval_ms)
            .run(&mut self.conn.clone(), &self.trips)
            .await?)
    }
}

impl Calls {
    /// Rate-limit the queue for `ms` (Node's `worker.rateLimit`): the `limiter` key, set as Node
    /// sets it.
    pub async fn set_rate_limit(&self, ms: u64) -> Result<(), Error> {
        let () = redis::cmd("SET")
            .arg(self.keys.limiter())
            .arg(9_007_199_254_740_991_i64)
            .arg("PX")
            .arg(ms.max(1))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// Put a rate-limited job back to wait without using an attempt (Node's `RateLimitError`).
    /// Returns how long the limit still holds (ms).
    pub async fn move_limited_to_wait(&self, job_id: &str, token: &str) -> Result<u64, Error> {
        let k = &self.keys;
        let code: i64 = scripts()
            .move_limited_to_wait
            .call()
            .key("job key", k.job(job_id))
            .key("active", k.active())
            .key("wait", k.wait())
            .key("stalled", k.stalled())
            .key("meta", k.meta())
            .key("limiter", k.limiter())
            .key("prioritized", k.prioritized())
            .key("marker", k.marker())
            .key("events", k.events())
            .key("paused", k.paused())
            .arg("job id", job_id)
            .arg("lock token", token)
            .run(&mut self.conn.clone(), &self.trips)
            .await?;
        if code < 0 {
            return Err(Error::Reply {
                script: "move_limited_to_wait",
                detail: ScriptCode::from_code(code).to_string(),
            });
        }
        Ok(code as u64)
    }
}
