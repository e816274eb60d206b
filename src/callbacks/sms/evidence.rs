//! Evidence of an unknown send: whether an attempt whose outcome is unknown reached Twilio,
//! from a receipt or the list call, and the verdict the processor acts on.

use std::time::Duration;

use super::{LOOKBACK, SmsProcessor};
use crate::callback::CallbackRequest;
use crate::escalation::EscalationKind;
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
        // Every sender of the account: a Messaging Service picks its number from a pool, the
        // legacy worker may have sent from another number, and `TWILIO_FROM` may be a service.
        let search = self
            .twilio
            .list_messages_since(&u.to, None, created_after, Default::default())
            .await;
        let messages = match search {
            Ok(found) if found.complete => {
                self.auth_ok();
                found.messages
            }
            Ok(_) => {
                let (reason, due) = failed("more pages than a lookup reads".into());
                if due {
                    self.escalate_unknown(req, u, &reason, EscalationKind::Unknown)
                        .await;
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
                    self.escalate_unknown(req, u, &reason, EscalationKind::Unknown)
                        .await;
                }
                return Resolution::Wait(self.config.reconcile_poll);
            }
        };
        let mut candidates = vec![];
        let mut redacted = 0;
        for m in messages {
            if m.direction
                .as_deref()
                .is_some_and(|d| d.starts_with("inbound"))
            {
                continue;
            }
            match body_match(m.body.as_deref(), &u.body) {
                BodyMatch::No => continue,
                BodyMatch::Redacted => redacted += 1,
                BodyMatch::Yes => {}
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
        // One readable look-alike is taken as this run's; a stored body nobody can read (message
        // redaction) is never proof and never a reason to send again.
        match (candidates.len(), redacted) {
            (0, _) => {}
            (1, 0) => return Resolution::Sent(candidates.remove(0)),
            (n, _) => return Resolution::Indistinct(n),
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

/// How a stored body compares with the one sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BodyMatch {
    /// The same, or the sent body after a transform Twilio documents.
    Yes,
    /// Empty or missing (message redaction): cannot be told either way.
    Redacted,
    /// No documented transform maps the sent body to this one.
    No,
}

/// Whether Twilio's stored body may be the one sent. A lookup must not miss a send because
/// Twilio changed its body, so each documented transform is undone or allowed for:
///
/// | transform | what Twilio stores | how it is compared |
/// |---|---|---|
/// | trial account | `Sent from your Twilio trial account - ` + body | prefix removed |
/// | Smart Encoding | typographic punctuation as GSM-7 look-alikes (`’` → `'`, `—` → `-`, `…` → `...`) | both sides mapped |
/// | link shortening | each URL replaced by a short link | every URL compared as "a URL" |
/// | appended text | opt-out or compliance text after the body | the stored body may continue after the sent one |
/// | whitespace | runs of spaces and line breaks normalised | runs compared as one space, ends trimmed |
/// | redaction | an empty body | [`BodyMatch::Redacted`] |
pub(super) fn body_match(stored: Option<&str>, sent: &str) -> BodyMatch {
    let Some(stored) = stored.filter(|s| !s.trim().is_empty()) else {
        return BodyMatch::Redacted;
    };
    if stored == sent || stored.strip_prefix(TRIAL_PREFIX) == Some(sent) {
        return BodyMatch::Yes;
    }
    let stored = canonical(stored.strip_prefix(TRIAL_PREFIX).unwrap_or(stored));
    let sent = canonical(sent);
    let appended = stored
        .strip_prefix(sent.as_str())
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(' '));
    if !sent.is_empty() && appended {
        BodyMatch::Yes
    } else {
        BodyMatch::No
    }
}

/// A body as the comparison sees it: Smart Encoding's map applied, each URL as `<url>`,
/// whitespace runs as one space, the ends trimmed.
fn canonical(body: &str) -> String {
    let mut mapped = String::with_capacity(body.len());
    for c in body.chars() {
        match smart_encoded(c) {
            Some(s) => mapped.push_str(s),
            None => mapped.push(c),
        }
    }
    mapped
        .split_whitespace()
        .map(|word| {
            if word.contains("://") || word.starts_with("www.") {
                "<url>"
            } else {
                word
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Smart Encoding's replacements: Unicode punctuation Twilio swaps for GSM-7 look-alikes.
fn smart_encoded(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{02BC}'
        | '\u{FF07}' => "'",
        '\u{201C}' | '\u{201D}' | '\u{201E}' | '\u{201F}' | '\u{2033}' | '\u{FF02}'
        | '\u{00AB}' | '\u{00BB}' => "\"",
        '\u{2010}' | '\u{2011}' | '\u{2012}' | '\u{2013}' | '\u{2014}' | '\u{2015}'
        | '\u{2212}' | '\u{FF0D}' => "-",
        '\u{2026}' => "...",
        '\u{00A0}' | '\u{2002}' | '\u{2003}' | '\u{2009}' | '\u{200A}' | '\u{202F}'
        | '\u{205F}' | '\u{3000}' => " ",
        '\u{200B}' | '\u{200C}' | '\u{200D}' | '\u{2060}' | '\u{FEFF}' => "",
        '\u{2022}' => "-",
        '\u{FF0C}' => ",",
        '\u{FF1A}' => ":",
        '\u{FF1B}' => ";",
        _ => return None,
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_documented_transform_is_recognised() {
        let sent = "Run 42 done \u{2014} approve the rollback\u{2019}s plan\u{2026} https://acme.dev/runs/42?x=1";
        let cases = [
            ("as sent", sent.to_string()),
            ("trial prefix", format!("{TRIAL_PREFIX}{sent}")),
            (
                "Smart Encoding",
                "Run 42 done - approve the rollback's plan... https://acme.dev/runs/42?x=1".into(),
            ),
            (
                "link shortening",
                "Run 42 done \u{2014} approve the rollback\u{2019}s plan\u{2026} https://twil.io/a1B2".into(),
            ),
            ("appended text", format!("{sent}\nReply STOP to opt out.")),
            (
                "whitespace",
                "Run 42  done \u{2014} approve\nthe rollback\u{2019}s plan\u{2026} https://acme.dev/runs/42?x=1 ".into(),
            ),
            (
                "all at once",
                format!(
                    "{TRIAL_PREFIX}Run 42 done - approve the rollback's plan... https://twil.io/x Reply STOP to stop"
                ),
            ),
        ];
        for (what, stored) in cases {
            assert_eq!(
                body_match(Some(&stored), sent),
                BodyMatch::Yes,
                "{what}: {stored:?}"
            );
        }
        for stored in [None, Some(""), Some("  ")] {
            assert_eq!(body_match(stored, sent), BodyMatch::Redacted, "{stored:?}");
        }
        for other in [
            "Run 43 done \u{2014} approve the rollback\u{2019}s plan\u{2026} https://acme.dev/runs/43",
            "Run 42 done",
            "Run 42 done - approve the rollback's planet... https://acme.dev/runs/42?x=1",
        ] {
            assert_eq!(body_match(Some(other), sent), BodyMatch::No, "{other:?}");
        }
    }
}
