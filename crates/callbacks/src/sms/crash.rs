//! Drill hooks: `RINGBACK_CRASH_AT` aborts the process at a window point (only with
//! `RINGBACK_DRILL=1`), so drills and tests can prove recovery from each.

use ringback_shared::settings::ConfigError;

/// Points where `RINGBACK_CRASH_AT` aborts the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    /// The claim is ours; Twilio has not been called.
    AfterClaim,
    /// Twilio accepted the message; nothing recorded it yet.
    AfterProviderAccept,
    /// The sent marker is written. On a single Redis the same call also completed the job and
    /// may have fetched and claimed the next one (`finish_sent.lua`), so the point is right after
    /// that call; with separate calls, between the marker and the completion. (It merges the
    /// former `before-complete`, which nothing separated from it; that name still parses.)
    AfterSentMarker,
    /// `serve`: an inbound message is recorded with its match; the replies queue has no job
    /// for it yet.
    AfterReplyRecorded,
    /// A ladder step is claimed; its text or call is not sent yet.
    LadderAfterClaim,
    /// A ladder step's call was created (or its text's job added); nothing marked it yet.
    LadderAfterCreate,
    /// `serve`: a ladder webhook is recorded (a key pressed kept, a call status ranked); its
    /// acknowledgement or climb is not done yet.
    LadderAfterWebhook,
}

/// `RINGBACK_CRASH_AT=<point>[:<probability>]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrashAt {
    /// Where the process aborts.
    pub point: CrashPoint,
    /// The chance of aborting each time the point is reached, within 0..=1 (1 when omitted).
    pub probability: f64,
}

impl std::str::FromStr for CrashAt {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| {
            ConfigError::new(
                "RINGBACK_CRASH_AT",
                format!("{why}: {s:?} (expected <point>[:<probability>])"),
            )
        };
        let (point, p) = s.split_once(':').unwrap_or((s, "1"));
        let point = match point {
            "after-claim" => CrashPoint::AfterClaim,
            "after-provider-accept" => CrashPoint::AfterProviderAccept,
            "after-sent-marker" | "before-complete" => CrashPoint::AfterSentMarker,
            "after-reply-recorded" => CrashPoint::AfterReplyRecorded,
            "ladder-after-claim" => CrashPoint::LadderAfterClaim,
            "ladder-after-create" => CrashPoint::LadderAfterCreate,
            "ladder-after-webhook" => CrashPoint::LadderAfterWebhook,
            _ => {
                return Err(bad(
                    "unknown point (after-claim, after-provider-accept, after-sent-marker, after-reply-recorded, ladder-after-claim, ladder-after-create, ladder-after-webhook)",
                ));
            }
        };
        let probability: f64 = p.parse().map_err(|_| bad("probability is not a number"))?;
        if !(0.0..=1.0).contains(&probability) {
            return Err(bad("probability must be within 0..=1"));
        }
        Ok(CrashAt { point, probability })
    }
}

/// Abort the process when `crash_at` names `point` (with its probability): a drill.
pub fn maybe_abort(crash_at: Option<CrashAt>, point: CrashPoint, run_id: &str) {
    if let Some(c) = crash_at
        && c.point == point
        && rand::random::<f64>() < c.probability
    {
        tracing::error!(
            ?point,
            run_id,
            "RINGBACK_CRASH_AT: aborting the process now (drill)"
        );
        std::process::abort();
    }
}
