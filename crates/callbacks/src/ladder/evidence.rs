//! Evidence of a ladder step's call whose create's answer was lost, or whose claim a Redis that
//! lost its last writes forgot: the call's status callback (kept in the record), then Twilio's
//! calls list for the person since the claim, from our caller ID. And the end of a call whose
//! final status callback never came: Twilio's own record of the call.

use ringback_shared::error::Error;
use ringback_twilio::PageLimits;

use super::climb::{Climber, Read};

/// How long after its create a call still ringing by the record is first fetched from Twilio:
/// most calls' final status has come by then. A fetch too early costs one request: Twilio says
/// the call goes on (ringing, or in the keypad's questions) and it is fetched again.
const SILENT_AFTER_MS: i64 = 30_000;

/// How long after a call ended by Twilio's record its end is taken: a key's post is made
/// while the call is still in progress (its answer is the call's next words), so by the end
/// it was made; this leaves room for its recording.
const SETTLED_AFTER_MS: i64 = 5_000;

/// How soon a call Twilio says is still going is fetched again.
const FETCH_AGAIN_MS: i64 = 10_000;

impl Climber {
    /// Look for step `k`'s call: its status callback, then Twilio's list for `to` since the
    /// claim (from our caller ID), passing over the calls confirmed as other steps'.
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
        // the step holds its number ([`LadderRecord::take_number`]): a call to it not confirmed
        // as another step's is this step's
        let others = self.record.others_calls(to, run, k).await?;
        match self
            .twilio
            .list_calls_since(to, after, PageLimits::default())
            .await
        {
            Ok(search) => {
                if let Some(c) = search.calls.iter().find(|c| {
                    c.from.as_deref().is_none_or(|f| f == from) && !others.contains(&c.sid)
                }) {
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

impl Climber {
    /// A ladder past its last step waits for its calls still ringing by the record; one whose
    /// final status callback never came (lost, or refused for good) is fetched from Twilio once
    /// it rang past its ring time, and its end kept as that callback would have kept it. Returns
    /// when to look again: `None` when an end was kept now (the ladder may run out at once),
    /// else the latest of `at` and the next fetch.
    pub(super) async fn silent_call_ends(
        &self,
        run: &str,
        read: &Read,
        steps: u32,
        now: i64,
        at: i64,
    ) -> Result<Option<i64>, Error> {
        let mut again = at;
        let mut kept = false;
        for k in 1..=steps {
            let Some(sid) = read.get(&format!("ringing:{k}")) else {
                continue;
            };
            let sent = read
                .get(&format!("sent:{k}"))
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(now);
            if now < sent + SILENT_AFTER_MS {
                continue;
            }
            let call = match self.twilio.fetch_call(sid).await {
                Ok(call) => call,
                Err(e) => {
                    tracing::warn!(run_id = %run, step = k, error = %e, "could not fetch a call still ringing by the record; will retry");
                    again = again.max(now + FETCH_AGAIN_MS);
                    continue;
                }
            };
            let status = call.status.as_deref().unwrap_or_default();
            let ended = call.ended_at().map(|t| t.timestamp_millis());
            if !super::call_ended(status) || ended.is_some_and(|t| now < t + SETTLED_AFTER_MS) {
                again = again.max(now + FETCH_AGAIN_MS);
                continue;
            }
            tracing::warn!(run_id = %run, step = k, %status, "a ladder call's final status never came; Twilio's record of the call ends it");
            self.record
                .call_status(run, k, sid, status, call.answered_by.as_deref(), None)
                .await?;
            kept = true;
        }
        Ok((!kept).then_some(again))
    }
}

/// What the evidence says of a step's call.
pub(super) enum Found {
    Call(String),
    None,
    Unsure,
}
