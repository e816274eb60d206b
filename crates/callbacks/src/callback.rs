//! The callback job's data: `{"runId", "to", "body", "from"?}`, validated before anything is
//! claimed or sent. Bad data fails the job at once, unrecoverably, naming the field at fault,
//! and the job is escalated (`invalid`) so a person hears of it. A numeric runId is keyed as
//! the legacy worker keys it (JavaScript's `String(n)`).

use serde_json::Value;
use sha1::Digest;

use ringback_shared::redact::mask;
use ringback_twilio::message::{is_recipient, sender_form};

/// The options of a callback job, as the legacy `/api/notify/send` API enqueued them (the same
/// as `node-harness/lib/legacy.js`).
pub const CALLBACK_JOB_OPTS: &str = r#"{"attempts":5,"backoff":{"type":"exponential","delay":1000},"removeOnComplete":{"count":10000},"removeOnFail":{"count":10000}}"#;

/// The job name the legacy API uses.
pub const CALLBACK_JOB_NAME: &str = "agent-callback";

/// The longest runId texted: longer ones are producer bugs (escalated with the reason). A long
/// runId travels as its short key ([`short_key`]) in the StatusCallback URL and the fallback.
pub const MAX_RUN_ID: usize = 512;
/// The longest body texted, in characters: Twilio's limit for one message's body. Longer ones
/// fail as invalid.
pub const MAX_BODY: usize = 1600;

/// A runId whose URL-encoded form is longer than this travels as its short key
/// ([`short_key`]) where it would make an identifier or a URL long: the StatusCallback URL and
/// the fallback text's run.
pub const SHORT_KEY_OVER: usize = 128;

/// The short key of a long runId: `k` and the SHA-1 of the runId in hex (41 characters), or
/// `None` for a runId short enough to travel whole. SHA-1 here only names a run: the producer
/// chooses runIds, and one that forged a collision would only confuse its own receipts.
pub fn short_key(run_id: &str) -> Option<String> {
    let encoded = serde_urlencoded::to_string([("", run_id)]).unwrap_or_default();
    if encoded.len() <= SHORT_KEY_OVER + 1 {
        return None;
    }
    let digest = sha1::Sha1::digest(run_id.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!("k{hex}"))
}

/// `run_id` itself when short, else its [`short_key`].
pub fn short_name(run_id: &str) -> String {
    short_key(run_id).unwrap_or_else(|| run_id.to_string())
}

/// How long a question stays open when its job says `"expectReply": true` without
/// `"replyWithin"` (also the longest: the run's record lives `RINGBACK_SENT_TTL_MS`, 24 h by
/// default, and a question is cut to it).
pub const DEFAULT_REPLY_WITHIN: std::time::Duration = std::time::Duration::from_secs(86_400);

/// A validated callback request.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CallbackRequest {
    /// `"runId"`: the run's key for its claim, sent marker and record (a number as `String(n)`).
    pub run_id: String,
    /// `"to"`: the recipient, an E.164 number or a WhatsApp address (`whatsapp:+…`).
    pub to: String,
    /// The text sent: the producer's body, followed by the reply code when the run is a
    /// question that carries one ([`crate::replies`]).
    pub body: String,
    /// `"from"`: the sender for this run; `None` when absent or empty, and the deployment's
    /// sender (TWILIO_FROM or its Messaging Service) is used.
    pub from: Option<String>,
    /// `"expectReply": true`: the run is a question, open this long after it is first claimed
    /// (`"replyWithin"`, [`DEFAULT_REPLY_WITHIN`] when absent).
    pub expect_reply: Option<std::time::Duration>,
    /// `"urgent": true`: sent inside quiet hours.
    pub urgent: bool,
    /// `"timeZone"`: the IANA zone the quiet hours are read in for this run.
    pub time_zone: Option<String>,
    /// `"ladder"`: what the job asks of the escalation ladder ([`crate::ladder::plan`]).
    pub ladder: crate::ladder::plan::Ask,
    /// `"choices"`: a question's answers, each also a keypad digit (`1` for the first).
    pub choices: Vec<String>,
}

/// The runId of a job's data object, keyed as the legacy worker keys it (a number as
/// JavaScript's `String(n)`), or why it cannot be one.
fn run_id_of(obj: &serde_json::Map<String, Value>) -> Result<String, String> {
    let run_id = match obj.get("runId") {
        Some(Value::Number(n)) => js_number(n),
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => return Err("field `runId` is missing".into()),
        Some(other) => {
            return Err(format!(
                "field `runId` must be a string, got {}",
                kind(other)
            ));
        }
    };
    if run_id.is_empty() {
        return Err("field `runId` is empty".into());
    }
    if run_id.chars().count() > MAX_RUN_ID {
        return Err(format!(
            "field `runId` is longer than {MAX_RUN_ID} characters"
        ));
    }
    if run_id.chars().any(char::is_control) {
        return Err("field `runId` contains control characters".into());
    }
    Ok(run_id)
}

/// The runId of job data that breaks the contract elsewhere (a bad `to`, a missing `body`),
/// when it has a usable one: an invalid job is found by its runId, as any run is.
pub fn readable_run_id(data: &str) -> Option<String> {
    let v: Value = serde_json::from_str(data).ok()?;
    run_id_of(v.as_object()?).ok()
}

/// The exact digits of a numeric runId beyond 2^53, where JavaScript's double (and so the key,
/// [`js_number`]) may stand for another number too; `None` for every other runId. `key` is the
/// runId as keyed: the data is read again only when the key could be such a number.
pub fn exact_run_id(key: &str, data: &str) -> Option<String> {
    if !could_lose_digits(key) {
        return None;
    }
    let v: Value = serde_json::from_str(data).ok()?;
    match v.get("runId")? {
        Value::Number(n) if n.as_f64().is_some_and(|x| x.abs() >= BEYOND_DOUBLES) => {
            Some(n.to_string())
        }
        _ => None,
    }
}

/// Whether `key` (a runId as keyed) could be a number beyond 2^53, whose key stands for other
/// numbers too: 16 digits or more, or JavaScript's exponent form.
pub fn could_lose_digits(key: &str) -> bool {
    (key.len() >= 16 && key.bytes().all(|b| b.is_ascii_digit() || b == b'-')) || key.contains("e+")
}

/// 2^53: from here on a double holds only some of the integers.
const BEYOND_DOUBLES: f64 = 9_007_199_254_740_992.0;

impl CallbackRequest {
    /// Parse job data; the error says which field is wrong and how.
    pub fn parse(data: &str) -> Result<Self, String> {
        let v: Value =
            serde_json::from_str(data).map_err(|e| format!("job data is not JSON: {e}"))?;
        let obj = v
            .as_object()
            .ok_or("job data must be a JSON object {runId, to, body, from?}")?;
        let text = |name: &str| -> Result<Option<&str>, String> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.as_str())),
                Some(other) => Err(format!(
                    "field `{name}` must be a string, got {}",
                    kind(other)
                )),
            }
        };
        let run_id = run_id_of(obj)?;
        let run_id = run_id.as_str();
        let to = text("to")?.ok_or("field `to` is missing")?;
        if !is_recipient(to) {
            return Err(format!(
                "field `to` is neither an E.164 number (+ and up to 15 digits) nor a WhatsApp address (whatsapp:+…): {}",
                mask(to)
            ));
        }
        let body = text("body")?.ok_or("field `body` is missing")?;
        if body.trim().is_empty() {
            return Err("field `body` is empty".into());
        }
        if body.chars().count() > MAX_BODY {
            return Err(format!(
                "field `body` is longer than {MAX_BODY} characters ({})",
                body.chars().count()
            ));
        }
        let from = text("from")?.filter(|f| !f.is_empty());
        if from.is_some_and(|f| sender_form(f).is_none()) {
            return Err(
                "field `from` is not a sender Twilio takes: an E.164 number, a short code, an alphanumeric sender ID, a WhatsApp sender (whatsapp:+…) or a Messaging Service SID (MG…)".into(),
            );
        }
        let flag = |name: &str| -> Result<bool, String> {
            match obj.get(name) {
                None | Some(Value::Null) => Ok(false),
                Some(Value::Bool(b)) => Ok(*b),
                Some(other) => Err(format!(
                    "field `{name}` must be a boolean, got {}",
                    kind(other)
                )),
            }
        };
        let expect_reply = if flag("expectReply")? {
            let within = match text("replyWithin")? {
                None => DEFAULT_REPLY_WITHIN,
                Some(w) => parse_within(w)?,
            };
            let room = MAX_BODY - crate::replies::code::SUFFIX_MAX;
            if body.chars().count() > room {
                return Err(format!(
                    "field `body` is longer than {room} characters, the room a question leaves for its reply code ({})",
                    body.chars().count()
                ));
            }
            Some(within)
        } else {
            if obj.get("replyWithin").is_some_and(|v| !v.is_null()) {
                return Err(
                    "field `replyWithin` is set but `expectReply` is not true: say \"expectReply\": true for a question".into(),
                );
            }
            None
        };
        let urgent = flag("urgent")?;
        let time_zone = match text("timeZone")? {
            None => None,
            Some(zone) => {
                if jiff::tz::TimeZone::get(zone).is_err() {
                    return Err(format!(
                        "field `timeZone` is not a time zone of the IANA database (such as Europe/Paris): {zone:?}"
                    ));
                }
                Some(zone.to_string())
            }
        };
        let ladder = crate::ladder::plan::ask_of(obj).map_err(|e| e.join("; "))?;
        let choices = crate::ladder::plan::read_choices(obj, expect_reply.is_some())
            .map_err(|e| e.join("; "))?;
        Ok(Self {
            run_id: run_id.into(),
            to: to.into(),
            body: body.into(),
            from: from.map(str::to_string),
            expect_reply,
            urgent,
            time_zone,
            ladder,
            choices,
        })
    }
}

/// `"replyWithin"`: a whole number and a unit (`s`, `m`, `h`, `d`), such as `"24h"` or `"90m"`;
/// above zero. Cut to the record's life where the question opens.
pub fn parse_within(w: &str) -> Result<std::time::Duration, String> {
    parse_duration("replyWithin", w)
}

/// A duration field of the job data (`field`, named in the error), written as `replyWithin`
/// is: a whole number and a unit (`s`, `m`, `h`, `d`), above zero.
pub fn parse_duration(field: &str, w: &str) -> Result<std::time::Duration, String> {
    let bad = || {
        format!(
            "field `{field}` is not a duration such as \"24h\", \"90m\", \"30s\" or \"2d\": {w:?}"
        )
    };
    let w = w.trim();
    let split = w.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (n, unit) = w.split_at(split);
    let n: u64 = n.parse().map_err(|_| bad())?;
    let secs = match unit.trim() {
        "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        "d" => n.saturating_mul(86_400),
        _ => return Err(bad()),
    };
    if secs == 0 {
        return Err(format!("field `{field}` must be above zero: {w:?}"));
    }
    Ok(std::time::Duration::from_secs(secs))
}

/// A JSON number as JavaScript's `String(n)` writes it (the legacy worker's key for a numeric
/// runId): integers in full below 10^21, the shortest round-trip decimal otherwise, exponent
/// notation (`1e+21`, `1.5e-7`) outside [10^-6, 10^21), and `0` for -0.
pub fn js_number(n: &serde_json::Number) -> String {
    // JavaScript holds every number as a double: an integer beyond 2^53 is rounded when the
    // legacy worker parses the job's data (123456789012345678 becomes 123456789012345680), and
    // its claim key is that rounded number's text. Keyed any other way, the two fleets would
    // claim one run under two keys.
    let x = n.as_f64().unwrap_or(0.0);
    if x == 0.0 {
        return "0".into();
    }
    let a = x.abs();
    if (1e-6..1e21).contains(&a) {
        return format!("{x}");
    }
    // Rust writes `1.5e21` and `1e-7`; JavaScript `1.5e+21` and `1e-7`
    let e = format!("{x:e}");
    match e.split_once('e') {
        Some((m, exp)) if !exp.starts_with('-') => format!("{m}e+{exp}"),
        _ => e,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_a_good_request() {
        let r =
            CallbackRequest::parse(r#"{"runId":"r1","to":"+15558675310","body":"done","extra":1}"#)
                .unwrap();
        assert_eq!(
            (r.run_id.as_str(), r.to.as_str(), r.from),
            ("r1", "+15558675310", None)
        );
    }

    #[test]
    fn runids_the_legacy_worker_texts_are_texted() {
        let run = |id: &str| {
            CallbackRequest::parse(&format!(
                r#"{{"runId":{id},"to":"+15558675310","body":"x"}}"#
            ))
            .map(|r| r.run_id)
        };
        assert_eq!(run("42").unwrap(), "42");
        assert_eq!(run("-7").unwrap(), "-7");
        assert_eq!(run("1.5").unwrap(), "1.5");
        assert_eq!(run("1e21").unwrap(), "1e+21");
        assert_eq!(run("1.5e-7").unwrap(), "1.5e-7");
        assert_eq!(run("-0.0").unwrap(), "0");
        // beyond 2^53 JavaScript rounds to a double, and keys the run by that double's text
        assert_eq!(run("123456789012345678").unwrap(), "123456789012345680");
        assert_eq!(run("9007199254740993").unwrap(), "9007199254740992");
        assert_eq!(run("18446744073709551615").unwrap(), "18446744073709552000");
        assert_eq!(
            run("12345678901234567890123").unwrap(),
            "1.2345678901234568e+22"
        );
        let long = "r".repeat(186);
        assert_eq!(run(&format!("\"{long}\"")).unwrap(), long);
        for id in [r#""run 7 — ünïcode""#, r#""a:b:c""#, r#""q\"b\\s""#] {
            assert!(run(id).is_ok(), "{id}");
        }
        for id in ["true", "[1]", r#"{"a":1}"#] {
            assert!(run(id).unwrap_err().contains("must be a string"), "{id}");
        }
    }

    #[test]
    fn every_address_form_twilio_takes_is_texted() {
        let parse = |to: &str, from: &str| {
            CallbackRequest::parse(
                &serde_json::json!({"runId": "r", "to": to, "body": "x", "from": from}).to_string(),
            )
        };
        for (to, from) in [
            ("+15558675310", "+15005550006"),
            ("+15558675310", "12345"),
            ("+15558675310", "654321"),
            ("+15558675310", "Acme Ops"),
            ("+15558675310", "MG0123456789abcdef0123456789abcdef"),
            ("whatsapp:+15558675310", "whatsapp:+15005550006"),
            (
                "whatsapp:+447700900123",
                "MG0123456789abcdef0123456789abcdef",
            ),
        ] {
            let r = parse(to, from).unwrap_or_else(|e| panic!("{to} {from}: {e}"));
            assert_eq!((r.to.as_str(), r.from.as_deref()), (to, Some(from)));
        }
        for (to, from, field) in [
            ("whatsapp:15558675310", "", "`to`"),
            ("sms:+15558675310", "", "`to`"),
            ("+15558675310", "1234", "`from`"),
            ("+15558675310", "whatsapp:Acme", "`from`"),
            (
                "+15558675310",
                "MG0123456789abcdef0123456789abcdeX",
                "`from`",
            ),
        ] {
            let err = parse(to, from).unwrap_err();
            assert!(err.contains(field), "{to} {from}: {err}");
        }
    }

    #[test]
    fn questions_quiet_hours_and_urgency_are_read_and_checked() {
        let parse = |extra: &str| {
            CallbackRequest::parse(&format!(
                r#"{{"runId":"r","to":"+15558675310","body":"Approve?"{extra}}}"#
            ))
        };
        let q = parse(r#","expectReply":true,"replyWithin":"90m""#).unwrap();
        assert_eq!(q.expect_reply, Some(std::time::Duration::from_secs(5400)));
        let q = parse(r#","expectReply":true"#).unwrap();
        assert_eq!(q.expect_reply, Some(DEFAULT_REPLY_WITHIN));
        let plain = parse("").unwrap();
        assert_eq!(
            (plain.expect_reply, plain.urgent, plain.time_zone),
            (None, false, None)
        );
        let z = parse(r#","timeZone":"America/New_York","urgent":true"#).unwrap();
        assert_eq!(
            (z.urgent, z.time_zone.as_deref()),
            (true, Some("America/New_York"))
        );
        for (extra, field) in [
            (r#","expectReply":"yes""#, "`expectReply` must be a boolean"),
            (
                r#","expectReply":true,"replyWithin":"soon""#,
                "`replyWithin` is not a duration",
            ),
            (
                r#","expectReply":true,"replyWithin":"0h""#,
                "`replyWithin` must be above zero",
            ),
            (r#","replyWithin":"1h""#, "`expectReply` is not true"),
            (r#","urgent":1"#, "`urgent` must be a boolean"),
            (
                r#","timeZone":"Mars/Olympus""#,
                "`timeZone` is not a time zone",
            ),
        ] {
            let err = parse(extra).unwrap_err();
            assert!(err.contains(field), "{extra}: {err}");
        }
        let room = MAX_BODY - crate::replies::code::SUFFIX_MAX;
        let long = "b".repeat(room + 1);
        let err = CallbackRequest::parse(&format!(
            r#"{{"runId":"r","to":"+15558675310","body":"{long}","expectReply":true}}"#
        ))
        .unwrap_err();
        assert!(err.contains("room a question leaves"), "{err}");
    }

    #[test]
    fn long_runids_travel_as_a_short_key() {
        assert_eq!(short_key("run-42"), None);
        assert_eq!(short_key(&"r".repeat(SHORT_KEY_OVER)), None);
        let long = "r".repeat(SHORT_KEY_OVER + 1);
        let key = short_key(&long).unwrap();
        assert_eq!((key.len(), key.starts_with('k')), (41, true));
        assert_eq!(short_key(&long), Some(key.clone()), "stable");
        assert_ne!(short_key(&"s".repeat(SHORT_KEY_OVER + 1)), Some(key));
        // counted as it travels: 43 characters that each encode to 9 bytes are long
        assert!(short_key(&"ü".repeat(43)).is_some());
        assert_eq!(short_name("run-42"), "run-42");
    }

    #[test]
    fn names_the_field_at_fault() {
        let long_id = "x".repeat(MAX_RUN_ID + 1);
        let long_body = "b".repeat(1601);
        let cases = [
            ("{not json".to_string(), "not JSON"),
            ("[1]".to_string(), "JSON object"),
            (
                r#"{"to":"+15558675310","body":"x"}"#.to_string(),
                "`runId` is missing",
            ),
            (
                format!(r#"{{"runId":"{long_id}","to":"+15558675310","body":"x"}}"#),
                "`runId` is longer",
            ),
            (
                r#"{"runId":"r","to":"555-1234","body":"x"}"#.to_string(),
                "`to` is neither an E.164",
            ),
            (
                r#"{"runId":"r","to":15558675310,"body":"x"}"#.to_string(),
                "`to` must be a string",
            ),
            (
                r#"{"runId":"r","to":"+15558675310","body":"  "}"#.to_string(),
                "`body` is empty",
            ),
            (
                format!(r#"{{"runId":"r","to":"+15558675310","body":"{long_body}"}}"#),
                "`body` is longer",
            ),
            (
                r#"{"runId":"r","to":"+15558675310","body":"x","from":"not a sender!"}"#
                    .to_string(),
                "`from`",
            ),
        ];
        for (data, expected) in cases {
            let err = CallbackRequest::parse(&data).unwrap_err();
            assert!(err.contains(expected), "{data:.60}: {err}");
        }
    }
}
