//! A ladder call's status callbacks (`initiated`, `ringing`, `in-progress`, a final one), kept
//! on the run's record ranked (`ladder_call_status.lua`): shuffled and repeated, they change it
//! once each, in order.

use ringback_shared::error::Error;
use ringback_store::keys;
use ringback_store::scripts::scripts;

use super::record::LadderRecord;

/// What [`LadderRecord::call_status`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallStatusApplied {
    /// The status was newer than the one kept.
    pub applied: bool,
    /// The ladder's state (`climbing`, `stopped`, `exhausted`; empty: no ladder).
    pub state: String,
    /// The ladder's last started step.
    pub step: u32,
}

impl LadderRecord {
    /// Keep a status callback of step `step`'s call, ranked by status, then `SequenceNumber`.
    pub async fn call_status(
        &self,
        run_id: &str,
        step: u32,
        sid: &str,
        status: &str,
        answered_by: Option<&str>,
        sequence: Option<u32>,
    ) -> Result<CallStatusApplied, Error> {
        // by status, then by Twilio's `SequenceNumber` (which counts a call's callbacks): a
        // repeat ranks equal, an earlier callback arriving late ranks lower
        let rank = u64::from(ringback_twilio::call::call_status_rank(status).unwrap_or(0)) * 1000
            + u64::from(sequence.unwrap_or(0).min(999));
        let reply: Vec<String> = scripts()
            .ladder_call_status
            .call()
            .key("ladder record", keys::ladder(&self.claim_prefix, run_id))
            .arg("step", step)
            .arg("CallSid", sid)
            .arg("CallStatus", status)
            .arg(
                "its rank (higher is later; final statuses rank highest)",
                rank,
            )
            .arg(
                "\"1\" when the status is final",
                if super::call_ended(status) { "1" } else { "0" },
            )
            .arg(
                "AnsweredBy (\"\" when Twilio gave none)",
                answered_by.unwrap_or_default(),
            )
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        Ok(CallStatusApplied {
            applied: reply.first().is_some_and(|a| a == "1"),
            state: reply.get(1).cloned().unwrap_or_default(),
            step: reply.get(2).and_then(|s| s.parse().ok()).unwrap_or(0),
        })
    }
}
