//! The live ringback workers: heartbeats on Redis's clock, read by `ringback drain`.

use super::{Window, ms};
use ringback_shared::error::Error;
use ringback_store::scripts::scripts;
use std::time::Duration;

impl Window {
    /// Say this ringback worker (`worker_id`, a readable `name`) is alive now, and for
    /// `alive_for` (three of its own heartbeat intervals: [`alive_within`]) unless it beats again.
    pub async fn heartbeat(
        &self,
        worker_id: &str,
        name: &str,
        alive_for: Duration,
    ) -> Result<(), Error> {
        let member = format!("{name} ({worker_id})");
        let _: i64 = self
            .workers_script("beat", &member, Some(ms(alive_for)))
            .await?;
        Ok(())
    }

    /// Forget this worker's heartbeat (a clean stop).
    pub async fn heartbeat_stop(&self, worker_id: &str, name: &str) -> Result<(), Error> {
        let member = format!("{name} ({worker_id})");
        let _: i64 = self.workers_script("stop", &member, None).await?;
        Ok(())
    }

    /// Ringback workers alive now on Redis's clock (as the heartbeats are scored: one clock for
    /// every host): each by the window it advertised with its beat, and a worker that
    /// advertises none (an earlier version) by a beat younger than `within`.
    pub async fn live_workers(&self, within: Duration) -> Result<Vec<String>, Error> {
        self.workers_script("live", &ms(within), None).await
    }

    /// Workers whose liveness window ended less than `within` ago, and the longest of their
    /// windows: dead, or kept from beating (Redis paused past their window, the host starved)
    /// and about to beat again.
    pub async fn lapsed_workers(&self, within: Duration) -> Result<(usize, Duration), Error> {
        let (count, longest): (usize, u64) =
            self.workers_script("lapsed", &ms(within), None).await?;
        Ok((count, Duration::from_millis(longest)))
    }

    /// `op` on the heartbeats: `subject` is a beat's or stop's member, or how far back a
    /// `live` or `lapsed` question looks (ms); `alive_for` a beat's life (ms).
    pub(super) async fn workers_script<T: redis::FromRedisValue>(
        &self,
        op: &str,
        subject: &str,
        alive_for: Option<String>,
    ) -> Result<T, Error> {
        let call = scripts()
            .window_workers
            .call()
            .key("the heartbeats", self.workers())
            .key("the same members", self.workers_until())
            .arg("\"beat\" | \"stop\"", op)
            .arg("beat, stop: the member", subject);
        let call = match alive_for {
            Some(ms) => call.arg("beat: how long", ms),
            None => call,
        };
        Ok(call
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?)
    }

    pub(super) fn workers(&self) -> String {
        ringback_store::keys::ringback_workers(&self.claim_prefix)
    }

    fn workers_until(&self) -> String {
        ringback_store::keys::ringback_workers_until(&self.claim_prefix)
    }
}

/// How long a heartbeat keeps a ringback worker alive: three of its heartbeat intervals (the
/// orphan sweep's), at least 3 s. Each worker advertises its own with each beat.
pub fn alive_within(interval: Duration) -> Duration {
    (interval * 3).max(Duration::from_secs(3))
}
