//! The live ringback workers: heartbeats on Redis's clock, read by `ringback drain`.

use super::*;
use crate::error::Error;
use crate::store::scripts::scripts;
use std::time::Duration;

impl Window {
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

    pub(super) async fn workers_script<T: redis::FromRedisValue>(
        &self,
        args: &[&str],
    ) -> Result<T, Error> {
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

    pub(super) fn workers(&self) -> String {
        crate::store::keys::ringback_workers(&self.claim_prefix)
    }
}
