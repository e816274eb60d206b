//! Evidence of a ladder step's call whose create's answer was lost, or whose claim a Redis that
//! lost its last writes forgot: the call's status callback (kept in the record), then Twilio's
//! calls list for the person since the claim, from our caller ID.

use ringback_shared::error::Error;
use ringback_twilio::PageLimits;

use super::climb::Climber;

impl Climber {
    /// Look for step `k`'s call: its status callback, then Twilio's list for `to` since the
    /// claim (from our caller ID).
    pub(super) async fn find_call(
        &self,
        run: &str,
        k: u32,
        to: &str,
        from: &str,
        since: i64,
    ) -> Result<Found, Error> {
        let fields = self.record.read(run).await?;
        if let Some(sid) = fields.get(&format!("callsid:{k}")) {
            return Ok(Found::Call(sid.clone()));
        }
        let Some(after) = chrono::DateTime::from_timestamp_millis(since - 1000) else {
            return Ok(Found::Unsure);
        };
        match self
            .twilio
            .list_calls_since(to, after, PageLimits::default())
            .await
        {
            Ok(search) => {
                if let Some(c) = search
                    .calls
                    .iter()
                    .find(|c| c.from.as_deref().is_none_or(|f| f == from))
                {
                    return Ok(Found::Call(c.sid.clone()));
                }
                Ok(if search.complete {
                    Found::None
                } else {
                    Found::Unsure
                })
            }
            Err(e) => {
                tracing::warn!(run_id = %run, step = k, error = %e, "calls list failed; the step waits");
                Ok(Found::Unsure)
            }
        }
    }
}

/// What the evidence says of a step's call.
pub(super) enum Found {
    Call(String),
    None,
    Unsure,
}
