//! Twilio's message resource and error body, as the REST API returns them (spec
//! `api.v2010.account.message`; every field nullable; unknown fields ignored).

use serde::{Deserialize, Serialize};

/// A message as Twilio describes it (create, fetch and list answers; the simulator's store).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Message {
    /// Twilio's id of the message (`SM` and 32 hex digits; `MM` for MMS): fetch it by this.
    pub sid: String,
    /// The account (`AC…`) that created the message.
    #[serde(default, deserialize_with = "any_scalar")]
    pub account_sid: Option<String>,
    /// The API version that handled the create (`2010-04-01`).
    #[serde(default, deserialize_with = "any_scalar")]
    pub api_version: Option<String>,
    /// The text as Twilio stored it (a trial prefix or a service's rewrites included);
    /// empty when redacted.
    #[serde(default)]
    pub body: Option<String>,
    /// When Twilio created the message, RFC 2822 in GMT, to the second.
    #[serde(default)]
    pub date_created: Option<String>,
    /// When Twilio handed the message to the carrier (RFC 2822, GMT); `None` while still
    /// queued or sending, and for a message that failed before leaving.
    #[serde(default)]
    pub date_sent: Option<String>,
    /// When the message resource last changed (RFC 2822, GMT).
    #[serde(default, deserialize_with = "any_scalar")]
    pub date_updated: Option<String>,
    /// `outbound-api` for a text ringback sends; `inbound`, `outbound-reply` and
    /// `outbound-call` for others in the same list.
    #[serde(default)]
    pub direction: Option<String>,
    /// Twilio's error code when the status is `failed` or `undelivered` (30003:
    /// unreachable handset, 30007: carrier filtering); `None` otherwise.
    #[serde(default)]
    pub error_code: Option<i64>,
    /// Twilio's text for `error_code`; usually `None` even when a code is set.
    #[serde(default, deserialize_with = "any_scalar")]
    pub error_message: Option<String>,
    /// The sender as Twilio used it: a number, short code or sender ID; with a Messaging
    /// Service, the number it picked (`None` until it has).
    #[serde(default)]
    pub from: Option<String>,
    /// The Messaging Service (`MG…`) the message was sent through; `None` without one.
    #[serde(default)]
    pub messaging_service_sid: Option<String>,
    /// How many media files the message carries (`"0"` for SMS).
    #[serde(default, deserialize_with = "any_scalar")]
    pub num_media: Option<String>,
    /// How many SMS segments Twilio split the body into, each billed (160 GSM-7 or 70
    /// UCS-2 characters for one, 153 or 67 each when split).
    #[serde(default, deserialize_with = "any_scalar")]
    pub num_segments: Option<String>,
    /// What the message cost, negative, in `price_unit`; `None` until Twilio has priced it.
    #[serde(default, deserialize_with = "any_scalar")]
    pub price: Option<String>,
    /// The currency of `price` (ISO 4217, `USD`).
    #[serde(default, deserialize_with = "any_scalar")]
    pub price_unit: Option<String>,
    /// Twilio's delivery status: `queued`, `sending`, `sent`, `delivered`, `undelivered`,
    /// `failed`… ([`status_rank`] orders them).
    #[serde(default)]
    pub status: Option<String>,
    /// The recipient's number (E.164) or channel address.
    #[serde(default)]
    pub to: Option<String>,
    /// This message's path, relative to the API base (`/2010-04-01/Accounts/…/SM….json`).
    #[serde(default, deserialize_with = "any_scalar")]
    pub uri: Option<String>,
    /// Paths of the message's subresources (`media`, `feedback`), unread by ringback.
    #[serde(default)]
    pub subresource_uris: Option<serde_json::Value>,
}

/// A field ringback does not read: whatever JSON Twilio sends there decodes (a string as is,
/// a number or a boolean as its text, null as none), so a type the spec changes or a value it
/// types loosely never fails the call that carried it.
pub(crate) fn any_scalar<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<String>, D::Error> {
    use serde::Deserialize;
    Ok(match serde_json::Value::deserialize(d)? {
        serde_json::Value::Null => None,
        serde_json::Value::String(s) => Some(s),
        other => Some(other.to_string()),
    })
}

impl Message {
    /// `date_created` as a time (Twilio writes RFC 2822, to the second).
    pub fn created_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        rfc2822(self.date_created.as_deref())
    }

    /// `date_sent` as a time: `None` until the message has left Twilio.
    pub fn sent_at(&self) -> Option<chrono::DateTime<chrono::Utc>> {
        rfc2822(self.date_sent.as_deref())
    }
}

fn rfc2822(v: Option<&str>) -> Option<chrono::DateTime<chrono::Utc>> {
    v.and_then(|d| chrono::DateTime::parse_from_rfc2822(d).ok())
        .map(|d| d.with_timezone(&chrono::Utc))
}

/// A page of the list call (spec `ListMessageResponse`; its counters are plain integers, so
/// they decode as `i64`: an empty page's `"end": -1` is valid, and ringback reads none of them). The URIs are relative to the API base
/// (`/2010-04-01/Accounts/…/Messages.json?…&PageToken=PA…`); `next_page_uri` is null on the last
/// page.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct MessagePage {
    /// The messages of this page, in the list's order.
    pub messages: Vec<Message>,
    /// This page's number, from 0.
    #[serde(default)]
    pub page: i64,
    /// How many messages a full page holds (the `PageSize` asked for).
    #[serde(default)]
    pub page_size: i64,
    /// Index in the whole list of this page's first message.
    #[serde(default)]
    pub start: i64,
    /// Index in the whole list of this page's last message; -1 on an empty page.
    #[serde(default)]
    pub end: i64,
    /// This page's own path and query, relative to the API base.
    #[serde(default, deserialize_with = "any_scalar")]
    pub uri: Option<String>,
    /// Path of the list's first page, relative to the API base.
    #[serde(default)]
    pub first_page_uri: Option<String>,
    /// Path of the next page (with its `PageToken`); `None` on the last page.
    #[serde(default)]
    pub next_page_uri: Option<String>,
    /// Path of the previous page; `None` on the first page.
    #[serde(default)]
    pub previous_page_uri: Option<String>,
}

/// Twilio's error body: `{"code", "message", "more_info", "status"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// Twilio's error code (21211, 20003, 20429…); `None` when the body was not Twilio's JSON.
    #[serde(default)]
    pub code: Option<i64>,
    /// Twilio's text for the error, as a person reads it.
    #[serde(default)]
    pub message: String,
    /// Link to the code's page in Twilio's docs (`https://www.twilio.com/docs/errors/<code>`).
    #[serde(default)]
    pub more_info: Option<String>,
    /// The HTTP status of the answer (the status line wins over the body's); 0: no answer.
    #[serde(default)]
    pub status: u16,
}

impl ApiError {
    /// An error as Twilio writes it: `code` with its docs link in `more_info`.
    pub fn new(status: u16, code: i64, message: impl Into<String>) -> Self {
        Self {
            code: Some(code),
            message: message.into(),
            more_info: Some(format!("https://www.twilio.com/docs/errors/{code}")),
            status,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.code {
            Some(code) => write!(f, "Twilio {code} (HTTP {}): {}", self.status, self.message),
            None => write!(f, "Twilio HTTP {}: {}", self.status, self.message),
        }
    }
}

/// Message statuses in the order they can follow each other; a record never moves to a lower
/// rank. `None` for statuses outside outbound messaging.
pub fn status_rank(status: &str) -> Option<u8> {
    Some(match status {
        "accepted" | "scheduled" | "queued" => 0,
        "sending" => 1,
        "sent" => 2,
        "delivered" | "undelivered" | "failed" | "canceled" | "partially_delivered" => 3,
        "read" => 4,
        _ => return None,
    })
}

/// `SM` or `MM` followed by 32 hex digits.
pub fn is_message_sid(s: &str) -> bool {
    s.len() == 34
        && (s.starts_with("SM") || s.starts_with("MM"))
        && s[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// E.164: `+`, a non-zero digit, up to 15 digits in all.
pub fn is_e164(s: &str) -> bool {
    let digits = s.strip_prefix('+').unwrap_or("");
    (2..=15).contains(&digits.len())
        && digits.bytes().all(|b| b.is_ascii_digit())
        && !digits.starts_with('0')
}

/// A recipient Twilio's Messages API takes in `To`: an E.164 number, or a WhatsApp address
/// (`whatsapp:` + an E.164 number).
pub fn is_recipient(to: &str) -> bool {
    is_e164(to.strip_prefix(WHATSAPP).unwrap_or(to))
}

/// The channel prefix of a WhatsApp address, in `To` and `From`.
pub const WHATSAPP: &str = "whatsapp:";

/// What a configured `TWILIO_FROM` is, by Twilio's forms of sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SenderForm {
    /// An E.164 number.
    Number,
    /// A short code: 5 or 6 digits.
    ShortCode,
    /// An alphanumeric sender ID: 1–11 letters, digits and spaces, at least one letter.
    Alphanumeric,
    /// A Messaging Service SID (`MG` + 32 hex digits): sent as `MessagingServiceSid`.
    MessagingService,
    /// A WhatsApp sender: `whatsapp:` + an E.164 number.
    WhatsApp,
}

/// The form of `from`, or `None` when Twilio would refuse it (21212).
pub fn sender_form(from: &str) -> Option<SenderForm> {
    let hex32 = |s: &str| s.len() == 32 && s.bytes().all(|b| b.is_ascii_hexdigit());
    if is_e164(from) {
        Some(SenderForm::Number)
    } else if from.strip_prefix(WHATSAPP).is_some_and(is_e164) {
        Some(SenderForm::WhatsApp)
    } else if (5..=6).contains(&from.len()) && from.bytes().all(|b| b.is_ascii_digit()) {
        Some(SenderForm::ShortCode)
    } else if from.strip_prefix("MG").is_some_and(hex32) {
        Some(SenderForm::MessagingService)
    } else if (1..=11).contains(&from.len())
        && from.bytes().all(|b| b.is_ascii_alphanumeric() || b == b' ')
        && from.bytes().any(|b| b.is_ascii_alphabetic())
    {
        Some(SenderForm::Alphanumeric)
    } else {
        None
    }
}

/// Twilio's magic numbers for test credentials (`+15005550000`–`+15005550009`): they work only
/// with test credentials, so a live account refuses every message from them.
pub fn is_test_credentials_number(from: &str) -> bool {
    from.strip_prefix("+1500555000")
        .is_some_and(|d| d.len() == 1 && d.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_ringback_does_not_read_never_fail_a_decode() {
        let m: Message = serde_json::from_str(
            r#"{"sid":"SM1","status":"sent","to":"+15558675310","body":"hi",
                "num_segments":1,"num_media":0,"price":-0.0079,"price_unit":null,
                "api_version":"2010-04-01","uri":true,"error_code":null,
                "date_updated":"Wed, 02 Dec 2026 10:00:00 +0000","some_new_field":{"a":1}}"#,
        )
        .unwrap();
        assert_eq!(m.num_segments.as_deref(), Some("1"));
        assert_eq!(m.price.as_deref(), Some("-0.0079"));
        assert_eq!(m.price_unit, None);
        assert_eq!(m.status.as_deref(), Some("sent"));
    }

    #[test]
    fn sender_forms_are_twilios() {
        assert_eq!(sender_form("+15558675310"), Some(SenderForm::Number));
        assert_eq!(sender_form("12345"), Some(SenderForm::ShortCode));
        assert_eq!(sender_form("Ringback"), Some(SenderForm::Alphanumeric));
        assert_eq!(
            sender_form("MG0123456789abcdef0123456789abcdef"),
            Some(SenderForm::MessagingService)
        );
        for bad in [
            "",
            "5558675310",
            "+0123",
            "A very long sender",
            "1234",
            "Ring-back",
            "1234567",
        ] {
            assert_eq!(sender_form(bad), None, "{bad:?}");
        }
        assert!(is_test_credentials_number("+15005550006"));
        assert!(
            !is_test_credentials_number("+15005550106")
                && !is_test_credentials_number("+1500555000")
                && !is_test_credentials_number("+150055500012")
        );
    }

    #[test]
    fn parses_a_create_answer_with_unknown_fields() {
        let m: Message = serde_json::from_str(
            r#"{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued","to":"+15558675310",
                "error_code":null,"tags":{"x":1},"subresource_uris":{"media":"/x"}}"#,
        )
        .unwrap();
        assert_eq!(m.status.as_deref(), Some("queued"));
        assert!(is_message_sid(&m.sid));
    }

    #[test]
    fn decodes_every_page_the_spec_allows() {
        let page: MessagePage = serde_json::from_str(
            r#"{"messages":[],"page":0,"page_size":100,"start":0,"end":-1,"next_page_uri":null,
                "uri":"/x","first_page_uri":"/x","previous_page_uri":null}"#,
        )
        .unwrap();
        assert_eq!(page.end, -1);
        assert!(page.messages.is_empty());
    }

    #[test]
    fn ranks_and_formats() {
        assert!(status_rank("queued") < status_rank("sent"));
        assert!(status_rank("delivered") < status_rank("read"));
        assert_eq!(status_rank("receiving"), None);
        assert!(is_e164("+15558675310"));
        assert!(!is_e164("15558675310") && !is_e164("+0123") && !is_e164("+1555x"));
        assert!(is_message_sid("MM0123456789abcdef0123456789abcdef"));
        assert!(!is_message_sid("SM123"));
    }
}
