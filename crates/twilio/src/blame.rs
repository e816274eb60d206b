//! Whose fault a refused create is. Twilio answers a create it will not take with an error
//! code; most are verdicts on the message (an opted-out number, an invalid `To`), but some are
//! faults of this deployment (a sender the account does not own, a Messaging Service that does
//! not exist) or of one destination (a region the account may not text). A deployment's fault
//! is no reason to fail a callback: fixing the account must bring the whole backlog back. The
//! table is Twilio's meaning for each code (<https://www.twilio.com/docs/api/errors/>); a code
//! not in it is taken as a verdict on the message, as before.

use super::ApiError;

/// Who is at fault for a refused create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blame {
    /// The message itself (its number, its body): retrying cannot help; escalated, failed.
    Message,
    /// Sending to this destination (its number or region) from this account: held for that
    /// destination only, until a probe gets through.
    Destination,
    /// This deployment's configuration (sender, account, service, URLs): every callback is
    /// held, readiness false, until a probe gets through.
    Deployment,
}

/// Twilio's refusals with their blame and meaning.
pub const REFUSALS: &[(i64, Blame, &str)] = &[
    (
        20404,
        Blame::Deployment,
        "the account, sender or Messaging Service named does not exist",
    ),
    (
        21212,
        Blame::Deployment,
        "the From is not a valid phone number, short code or alphanumeric sender (the job's own `from`: the message's)",
    ),
    (
        21609,
        Blame::Deployment,
        "the StatusCallback URL is not a valid URL",
    ),
    (
        21659,
        Blame::Deployment,
        "the From is not a Twilio number or short code of this account",
    ),
    (
        21660,
        Blame::Deployment,
        "the From does not belong to this account",
    ),
    (
        21701,
        Blame::Deployment,
        "the Messaging Service does not exist",
    ),
    (
        21703,
        Blame::Deployment,
        "the Messaging Service has no sender available",
    ),
    (
        21704,
        Blame::Deployment,
        "the Messaging Service contains no senders",
    ),
    (
        21408,
        Blame::Destination,
        "SMS to the To's region is not enabled for this account (geo permissions)",
    ),
    (
        21606,
        Blame::Destination,
        "the From cannot send to this destination",
    ),
    (
        21608,
        Blame::Destination,
        "a trial account may text verified numbers only",
    ),
    (
        21612,
        Blame::Destination,
        "the To cannot be reached from this From",
    ),
    (
        21610,
        Blame::Message,
        "the recipient opted out (STOP) of this sender",
    ),
    (21211, Blame::Message, "the To is not a valid phone number"),
    (21614, Blame::Message, "the To is not a mobile number"),
    (21617, Blame::Message, "the body exceeds 1,600 characters"),
    (21635, Blame::Message, "the To is a landline"),
];

/// The blame for `e`; `job_from`: the sender came from the job's own `from`, so a refused
/// sender is that job's, not the deployment's.
pub fn blame(e: &ApiError, job_from: bool) -> Blame {
    let Some(code) = e.code else {
        return Blame::Message;
    };
    match REFUSALS.iter().find(|(c, ..)| *c == code) {
        Some((21212, ..)) if job_from => Blame::Message,
        Some((_, b, _)) => *b,
        None => Blame::Message,
    }
}

/// Twilio's meaning of `code` in [`REFUSALS`].
pub fn meaning(code: i64) -> Option<&'static str> {
    REFUSALS.iter().find(|(c, ..)| *c == code).map(|(.., m)| *m)
}

/// The destination a [`Blame::Destination`] refusal holds: the To's country calling code
/// (a region's geo permission covers every number in it), or the whole To when it is not E.164.
/// ITU codes are prefix-free: 1 and 7 are one digit; 20, 27, 30–34, 36, 39, 40, 41, 43–49,
/// 51–58, 60–66, 81, 82, 84, 86, 90–95 and 98 are two; every other is three.
pub fn destination_of(to: &str) -> String {
    // a channel's destinations are held apart from SMS's: `whatsapp:+1`
    let (channel, number) = match to.strip_prefix(crate::message::WHATSAPP) {
        Some(n) => (crate::message::WHATSAPP, n),
        None => ("", to),
    };
    let Some(digits) = number.strip_prefix('+').filter(|d| d.len() > 3) else {
        return to.to_string();
    };
    let two: u32 = digits[..2].parse().unwrap_or(0);
    let len = match digits.as_bytes()[0] {
        b'1' | b'7' => 1,
        _ if matches!(two, 20 | 27 | 30..=34 | 36 | 39 | 40 | 41 | 43..=49 | 51..=58 | 60..=66
            | 81 | 82 | 84 | 86 | 90..=95 | 98) =>
        {
            2
        }
        _ => 3,
    };
    format!("{channel}+{}", &digits[..len])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_blamed_as_twilio_means_them() {
        let e = |code| ApiError::new(400, code, "x");
        assert_eq!(blame(&e(21212), false), Blame::Deployment);
        assert_eq!(blame(&e(21212), true), Blame::Message, "the job's own from");
        assert_eq!(blame(&e(21408), false), Blame::Destination);
        assert_eq!(blame(&e(21610), false), Blame::Message);
        assert_eq!(
            blame(&e(99999), false),
            Blame::Message,
            "unknown: as before"
        );
        assert!(meaning(21408).is_some_and(|m| m.contains("region")));
    }

    #[test]
    fn a_destination_is_its_country_calling_code() {
        assert_eq!(destination_of("+15558675310"), "+1");
        assert_eq!(destination_of("+447700900123"), "+44");
        assert_eq!(destination_of("+35312345678"), "+353");
        assert_eq!(destination_of("+4915112345678"), "+49");
        assert_eq!(destination_of("+2348012345678"), "+234");
        assert_eq!(destination_of("whatsapp:+1555"), "whatsapp:+1");
        assert_eq!(destination_of("whatsapp:+447700900123"), "whatsapp:+44");
    }
}
