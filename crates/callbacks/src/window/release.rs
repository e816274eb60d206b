//! Giving a claim back (`release`: retry or send-failed) or holding it while a send's outcome
//! is unknown (`hold`).

use super::{Window, ms};
use ringback_shared::error::Error;
use ringback_store::scripts::scripts;
use std::time::Duration;

ringback_store::coded_answer! {
    /// What `window_release.lua` did with the claim.
    pub enum Released("window_release.lua") {
        /// Given back (`released`) or closed (`send-failed`).
        Done = 1,
        /// The claim was not ours: left alone.
        NotOurs = 0,
    }
}

ringback_store::coded_answer! {
    /// What `window_hold.lua` did with the claim.
    pub enum Hold("window_hold.lua") {
        /// Kept, its attempt held while the send is resolved.
        Kept = 1,
        /// The claim belongs to someone else now: left alone.
        NotOurs = 0,
    }
}

impl Window {
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
        let released: Released = scripts()
            .window_release
            .call()
            .key("claim key", k.claim)
            .key("attempt record", k.attempt)
            .key_if("open-attempts index", self.global(self.index()))
            .arg("attempt token", token)
            .arg("retry in (ms)", &retry_in)
            .arg("reason", reason)
            .arg("\"released\" | \"send-failed\"", state)
            .arg("runId", run_id)
            .arg("claim lease (ms)", ms(self.times.lease))
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        if self.per_slot() && released == Released::Done {
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
        Ok(released == Released::Done)
    }

    /// Keep our claim while an unknown send is resolved.
    pub async fn hold(&self, run_id: &str, token: &str, reason: &str) -> Result<bool, Error> {
        let k = self.keys(run_id);
        let held: Hold = scripts()
            .window_hold
            .call()
            .key("claim key", k.claim)
            .key("attempt record", k.attempt)
            .key_if("open-attempts index", self.global(self.index()))
            .arg("attempt token", token)
            .arg("claim lease (ms)", ms(self.times.lease))
            .arg("hold (ms)", ms(self.times.hold))
            .arg("reason", reason)
            .arg("runId", run_id)
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        if self.per_slot() && held == Hold::Kept {
            self.index_add(run_id, self.now() + self.times.hold.as_millis() as i64 / 2)
                .await?;
        }
        Ok(held == Hold::Kept)
    }
}
