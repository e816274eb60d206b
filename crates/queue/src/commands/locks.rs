//! Locks, stalls and the rate limit: lock renewal, stall recovery, `worker.rateLimit`.

use super::*;
use ringback_shared::clock::now_ms;
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::scripts::scripts;

impl Commands {
    /// Renew the locks of `jobs` (id, token); returns the ids whose lock is no longer ours.
    pub async fn extend_locks(
        &self,
        jobs: &[(String, String)],
        lock_ms: u64,
    ) -> Result<Vec<String>, Error> {
        let k = &self.keys;
        let duration = lock_ms.to_string();
        let mut args: Vec<&str> = vec![k.base(), &duration];
        for (id, token) in jobs {
            args.push(id);
            args.push(token);
        }
        Ok(scripts()
            .extend_locks
            .run(&mut self.conn.clone(), &self.trips, &[k.stalled()], &args)
            .await?)
    }

    /// One stall sweep; returns the ids moved back to wait.
    pub async fn move_stalled_jobs_to_wait(
        &self,
        max_stalled: u32,
        stalled_interval_ms: u64,
    ) -> Result<Vec<String>, Error> {
        let k = &self.keys;
        let keys = [
            k.stalled(),
            k.wait(),
            k.active(),
            k.stalled_check(),
            k.meta(),
            k.paused(),
            k.marker(),
            k.events(),
            k.repeat(),
        ];
        let args = [
            max_stalled.to_string(),
            k.base().to_string(),
            now_ms().to_string(),
            stalled_interval_ms.to_string(),
        ];
        Ok(scripts()
            .move_stalled_jobs_to_wait
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?)
    }
}

impl Commands {
    /// Rate-limit the queue for `ms` (Node's `worker.rateLimit`): the `limiter` key, set as Node
    /// sets it.
    pub async fn set_rate_limit(&self, ms: u64) -> Result<(), Error> {
        self.trips.add(1);
        let () = redis::cmd("SET")
            .arg(self.keys.limiter())
            .arg(9_007_199_254_740_991_i64)
            .arg("PX")
            .arg(ms.max(1))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Put a rate-limited job back to wait without using an attempt (Node's `RateLimitError`).
    /// Returns how long the limit still holds (ms).
    pub async fn move_limited_to_wait(&self, job_id: &str, token: &str) -> Result<u64, Error> {
        let k = &self.keys;
        let keys = [
            k.job(job_id),
            k.active(),
            k.wait(),
            k.stalled(),
            k.meta(),
            k.limiter(),
            k.prioritized(),
            k.marker(),
            k.events(),
            k.paused(),
        ];
        let args = [job_id, token];
        let code: i64 = scripts()
            .move_limited_to_wait
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
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
