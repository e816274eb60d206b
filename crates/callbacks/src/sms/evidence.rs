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
        // Twilio answered this process for this very attempt, but its marker was never written
        // (Redis refused it, or the call's reply was lost): that answer is proof.
        if let Some(sid) = self.answers.get(&u.token) {
            return Resolution::Sent(sid);
        }
        // Redis lost writes: the attempt that sent may be this process's, under another token
        if u.after_loss
            && let Some(sid) = self.answers.of_run(&req.run_id)
        {
            return Resolution::Sent(sid);
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
        // The earliest this run's message can have been created: its own attempt's claim, or
        // the legacy lookback before a claim taken over from a writer with no record; less the
        // skew between Redis's clock and Twilio's (`date_created` is to the second).
        let earliest = u.since
            - if u.taken {
                LOOKBACK.as_millis() as i64
            } else {
                0
            }
            - CLOCK_SKEW.as_millis() as i64;
        let created_after = chrono::DateTime::from_timestamp_millis(earliest).unwrap_or_default();
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
        // ringback's own attempt creates nothing after its claim's pending TTL (the window's
        // invariant: the create call ends before it), so a later message is not its; a claim
        // taken over has no such bound (the legacy worker's call may still have been running).
        let latest = (!u.taken)
            .then(|| (u.since + (self.config.pending_ttl + CLOCK_SKEW).as_millis() as i64) / 1000);
        let senders = self.deployment_senders(&u.from);
        let mut look_alikes = LookAlikes::default();
        for m in messages {
            if m.direction
                .as_deref()
                .is_some_and(|d| d.starts_with("inbound"))
            {
                continue;
            }
            if let (Some(latest), Some(created)) = (latest, m.created_at())
                && created.timestamp() > latest
            {
                continue;
            }
            // a sender this deployment never uses did not send this run's text
            if let Some(senders) = &senders
                && !senders.iter().any(|s| {
                    m.from.as_deref() == Some(s.as_str())
                        || m.messaging_service_sid.as_deref() == Some(s.as_str())
                })
            {
                continue;
            }
            let redacted = match body_match(m.body.as_deref(), &u.body) {
                BodyMatch::No => continue,
                BodyMatch::Redacted => true,
                BodyMatch::Yes => false,
            };
            // A message ringback linked to this run (its send marked, or a receipt that named
            // the run) is proof; one linked to another run is not this run's.
            match self.window.run_of_message(&m.sid).await {
                Ok(Some(other)) if other != req.run_id => continue,
                Ok(Some(_)) => return Resolution::Sent(m.sid),
                Ok(None) => {
                    look_alikes.found += 1;
                    look_alikes.redacted += usize::from(redacted);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "lookup failed; will try again");
                    return Resolution::Wait(self.config.reconcile_poll);
                }
            }
        }
        let open_until = u.since + self.config.reconcile_window.as_millis() as i64;
        let wait = || {
            Resolution::Wait(
                Duration::from_millis((open_until - now).max(0) as u64)
                    .min(self.config.reconcile_poll),
            )
        };
        if look_alikes.found > 0 {
            // An unlinked look-alike may be this run's text or another's (the legacy worker's
            // for another run, another sender of the account): never a reason to send again, and
            // never taken as this run's on its own. Only a receipt naming this run proves it: one
            // may still come while the reconcile window is open.
            if self.config.status_callback_url.is_some() && now < open_until {
                return wait();
            }
            return Resolution::Indistinct(look_alikes);
        }
        if now >= open_until {
            Resolution::Lost
        } else {
            wait()
        }
    }

    /// Every sender this deployment's texts can come from, when `RINGBACK_SENDERS` lists them:
    /// those, the configured sender and the run's own. `None`: every sender of the account.
    fn deployment_senders(&self, run_from: &str) -> Option<Vec<String>> {
        if self.config.senders.is_empty() {
            return None;
        }
        let mut senders = self.config.senders.clone();
        senders.push(self.twilio.config().sender.value().to_string());
        if !run_from.is_empty() {
            senders.push(run_from.to_string());
        }
        Some(senders)
    }
}

/// Twilio's answers to this process's creates, by attempt token, kept after the sent marker
/// was asked for: when the marker is lost (Redis refused the write, or its reply was lost and
/// the job's finishing call never answered), this process's next resolution of the attempt
/// still knows its MessageSid. Another process does not, and goes by receipts and lookups.
#[derive(Debug, Default)]
pub(super) struct Answers {
    inner: std::sync::Mutex<(
        std::collections::HashMap<String, String>,
        std::collections::VecDeque<String>,
    )>,
}

impl Answers {
    /// How many answers are kept (the oldest forgotten first): far more than a process has in
    /// flight, about 100 bytes each.
    const KEEP: usize = 8192;

    /// Keep Twilio's answer `sid` to attempt `token` of run `run_id`, found again by either.
    pub(super) fn remember(&self, token: &str, run_id: &str, sid: &str) {
        let mut g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let (by_token, order) = &mut *g;
        for key in [token.to_string(), Self::run_key(run_id)] {
            if by_token.insert(key.clone(), sid.to_string()).is_none() {
                order.push_back(key);
            }
        }
        while order.len() > Self::KEEP {
            if let Some(old) = order.pop_front() {
                by_token.remove(&old);
            }
        }
    }

    pub(super) fn get(&self, token: &str) -> Option<String> {
        let g = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        g.0.get(token).cloned()
    }

    /// The last answer this process kept for any attempt of `run_id` (a token is a UUID, so
    /// the two kinds of key never meet).
    pub(super) fn of_run(&self, run_id: &str) -> Option<String> {
        self.get(&Self::run_key(run_id))
    }

    fn run_key(run_id: &str) -> String {
        format!("run:{run_id}")
    }
}

/// How far Redis's clock and Twilio's may disagree when a lookup bounds `date_created`.
pub(super) const CLOCK_SKEW: Duration = Duration::from_secs(30);

/// The messages a lookup could not rule out: the right recipient, a sender this deployment
/// uses, created inside the window, a body that is this run's under a documented transform (or
/// unreadable), and linked to no run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct LookAlikes {
    pub found: usize,
    /// Of those, with an empty or missing body (message redaction).
    pub redacted: usize,
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
/// | the legacy worker's copy of a question | the body without ringback's reply-code suffix | compared without it |
pub(super) fn body_match(stored: Option<&str>, sent: &str) -> BodyMatch {
    let Some(stored) = stored.filter(|s| !s.trim().is_empty()) else {
        return BodyMatch::Redacted;
    };
    // a question's text carries its reply code; the legacy worker sends the job's body as the
    // producer wrote it, without the code: the same run's text
    if let Some(asked) = crate::replies::code::without_suffix(sent)
        && body_match(Some(stored), asked) == BodyMatch::Yes
    {
        return BodyMatch::Yes;
    }
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
    /// Unlinked look-alike messages and no receipt: cannot tell whether one is this run's.
    Indistinct(LookAlikes),
    Lost,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_legacy_workers_copy_of_a_question_is_the_runs_text() {
        let asked = format!("Roll back api-7?{}", crate::replies::code::suffix("K7"));
        // the legacy worker sent the job's body, without ringback's reply code
        assert_eq!(body_match(Some("Roll back api-7?"), &asked), BodyMatch::Yes);
        assert_eq!(
            body_match(
                Some("Sent from your Twilio trial account - Roll back api-7?"),
                &asked
            ),
            BodyMatch::Yes
        );
        assert_eq!(body_match(Some(&asked), &asked), BodyMatch::Yes);
        assert_eq!(body_match(Some("Roll back api-8?"), &asked), BodyMatch::No);
    }

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
