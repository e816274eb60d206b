//! Evidence of an unknown send: whether an attempt whose outcome is unknown reached Twilio,
//! from a receipt or the list call, and the verdict the processor acts on.

use std::time::Duration;

use super::{LOOKBACK, SmsProcessor};
use crate::callback::CallbackRequest;
use crate::twilio::Sender;
use crate::window::Unresolved;

impl SmsProcessor {
    /// Look for proof that an unknown send reached Twilio: a receipt, then every page of the
    /// list call back to the lookback. A lookup that keeps failing past
    /// `RINGBACK_UNKNOWN_ESCALATE_MS` is escalated once; nothing is resent without a complete
    /// lookup that found nothing for the whole reconcile window.
    pub(super) async fn resolve(&self, req: &CallbackRequest, u: &Unresolved) -> Resolution {
        if let Some(sid) = &u.receipt_sid {
            return Resolution::Sent(sid.clone());
        }
        let from = match (&self.twilio.config().sender, u.from.is_empty()) {
            (_, false) => Some(u.from.clone()),
            (Sender::From(f), true) => Some(f.clone()),
            (Sender::MessagingService(_), true) => None,
        };
        let now = self.window.now();
        let unknown_for = now - u.since;
        let failed = |what: String| {
            let reason = format!(
                "the send's outcome is unknown and Twilio lookups keep failing ({what}): the callback may or may not have been sent"
            );
            (
                reason,
                unknown_for >= self.config.unknown_escalate.as_millis() as i64,
            )
        };
        let created_after =
            chrono::DateTime::from_timestamp_millis(u.since - LOOKBACK.as_millis() as i64)
                .unwrap_or_default();
        let search = self
            .twilio
            .list_messages_since(&u.to, from.as_deref(), created_after, Default::default())
            .await;
        let messages = match search {
            Ok(found) if found.complete => {
                self.auth_ok();
                found.messages
            }
            Ok(_) => {
                let (reason, due) = failed("more pages than a lookup reads".into());
                if due {
                    self.escalate_unknown(req, u, &reason).await;
                }
                return Resolution::Wait(self.config.reconcile_poll);
            }
            Err(e) => {
                if e.is_auth_refused() {
                    self.auth_refused("list", &e);
                }
                tracing::warn!(error = %e, run_id = %req.run_id, "lookup failed; will try again");
                let (reason, due) = failed(e.to_string());
                if due {
                    self.escalate_unknown(req, u, &reason).await;
                }
                return Resolution::Wait(self.config.reconcile_poll);
            }
        };
        let mut candidates = vec![];
        for m in messages {
            if !same_body(m.body.as_deref(), &u.body) {
                continue;
            }
            // A message ringback linked to another run (sent or receipted) is not this run's.
            match self.window.run_of_message(&m.sid).await {
                Ok(Some(other)) if other != req.run_id => continue,
                Ok(Some(_)) => return Resolution::Sent(m.sid),
                Ok(None) => candidates.push(m.sid),
                Err(e) => {
                    tracing::warn!(error = %e, "lookup failed; will try again");
                    return Resolution::Wait(self.config.reconcile_poll);
                }
            }
        }
        match candidates.len() {
            0 => {}
            1 => return Resolution::Sent(candidates.remove(0)),
            n => return Resolution::Indistinct(n),
        }
        let open_until = u.since + self.config.reconcile_window.as_millis() as i64;
        if now >= open_until {
            Resolution::Lost
        } else {
            Resolution::Wait(
                Duration::from_millis((open_until - now) as u64).min(self.config.reconcile_poll),
            )
        }
    }
}

/// Whether Twilio's stored body is the one sent: equal, or equal after the prefix Twilio adds to
/// a trial account's messages (a lookup must not miss a send because Twilio changed its body).
pub(super) fn same_body(stored: Option<&str>, sent: &str) -> bool {
    let Some(stored) = stored else { return false };
    stored == sent || stored.strip_prefix(TRIAL_PREFIX) == Some(sent)
}

/// What Twilio prefixes to a trial account's message bodies.
const TRIAL_PREFIX: &str = "Sent from your Twilio trial account - ";

/// What an unknown send's evidence says.
pub(super) enum Resolution {
    Sent(String),
    Wait(Duration),
    /// Several unlinked messages match: cannot tell which (if any) is this run's.
    Indistinct(usize),
    Lost,
}
