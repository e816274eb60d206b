//! Every create outcome classified in one place: by HTTP status first, then by Twilio's
//! code; the `code` label of the error counters.

use crate::call::Call;
use crate::client::SendOutcome;
use crate::message::{ApiError, Message};
use std::time::Duration;

/// A resource a create answers with: a message or a call, each named by its sid.
pub trait Created: serde::de::DeserializeOwned {
    /// Twilio's id of it (empty when the body did not carry one).
    fn sid(&self) -> &str;
}

impl Created for Message {
    fn sid(&self) -> &str {
        &self.sid
    }
}

impl Created for Call {
    fn sid(&self) -> &str {
        &self.sid
    }
}

/// Twilio's `Retry-After` (seconds), when it sent one.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    headers
        .get("Retry-After")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_secs)
}

/// The `code` label of `ringback_twilio_errors_total`: Twilio's code, else `http_<status>`.
pub(crate) fn error_code(e: &ApiError) -> String {
    match e.code {
        Some(code) => code.to_string(),
        None if e.status == 0 => "request".into(),
        None => format!("http_{}", e.status),
    }
}

/// The error label of a create's outcome, if it failed: Twilio's code, or how the call failed
/// when no answer came (`connect`, `no_answer`: a timeout or a cut connection).
pub(crate) fn outcome_code<T>(o: &SendOutcome<T>) -> Option<String> {
    match o {
        SendOutcome::Accepted(_) => None,
        SendOutcome::Permanent(e)
        | SendOutcome::AuthRefused(e)
        | SendOutcome::Held { error: e, .. } => Some(error_code(e)),
        SendOutcome::RetryLater { error: Some(e), .. }
        | SendOutcome::Ambiguous { error: Some(e), .. } => Some(error_code(e)),
        SendOutcome::RetryLater { error: None, .. } => Some("connect".into()),
        SendOutcome::Ambiguous { error: None, .. } => Some("no_answer".into()),
    }
}

/// Twilio's error body, or a stand-in when the body is not Twilio's JSON (gateway errors).
pub(super) fn api_error(status: u16, body: &[u8]) -> ApiError {
    serde_json::from_slice::<ApiError>(body)
        .map(|mut e| {
            e.status = status;
            e
        })
        .unwrap_or_else(|_| ApiError {
            code: None,
            message: format!("[HTTP {status}] Failed to execute request"),
            more_info: None,
            status,
        })
}

/// Whether Twilio refused this worker's credentials or permissions rather than the request:
/// HTTP 401 and 403, and the codes Twilio uses for it whatever the status. Kept small on
/// purpose (Twilio: decide on the status, codes change):
/// - 20003 "Authenticate" / "Permission Denied": wrong or rotated auth token, deleted API key,
///   a key of another region, a suspended or closed account
///   (<https://www.twilio.com/docs/api/errors/20003>);
/// - 20403 "403 Forbidden" (Twilio's 204XX forbidden errors); test credentials used on anything
///   but create also get 403 (<https://www.twilio.com/docs/iam/test-credentials>).
pub fn refuses_credentials(e: &ApiError) -> bool {
    matches!(e.status, 401 | 403) || matches!(e.code, Some(20003 | 20403))
}

/// Classify an HTTP answer to a create. The status decides; the code refines 4xx only where
/// Twilio documents that the message was not taken (21611, queue full) or that the credentials
/// were refused ([`refuses_credentials`]).
pub fn classify_response(status: u16, retry_after: Option<Duration>, body: &[u8]) -> SendOutcome {
    classify_answer(status, retry_after, body)
}

/// [`classify_response`] for a create of any resource ([`Created`]): a message, a call.
pub fn classify_answer<T: Created>(
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
) -> SendOutcome<T> {
    match status {
        200..=299 => match serde_json::from_slice::<T>(body) {
            Ok(m) if !m.sid().is_empty() => SendOutcome::Accepted(Box::new(m)),
            _ => SendOutcome::Ambiguous {
                reason: format!("HTTP {status} with an unreadable body"),
                error: None,
            },
        },
        429 => {
            let e = api_error(status, body);
            SendOutcome::RetryLater {
                retry_after,
                reason: e.to_string(),
                error: Some(e),
            }
        }
        400..=499 => {
            let e = api_error(status, body);
            if refuses_credentials(&e) {
                SendOutcome::AuthRefused(e)
            } else if e.code == Some(21611) {
                SendOutcome::RetryLater {
                    retry_after,
                    reason: e.to_string(),
                    error: Some(e),
                }
            } else {
                SendOutcome::Permanent(e)
            }
        }
        _ => {
            let e = api_error(status, body);
            SendOutcome::Ambiguous {
                reason: e.to_string(),
                error: Some(e),
            }
        }
    }
}

/// Classify a create that got no HTTP answer. Only a failure to connect proves Twilio never saw
/// the request; anything after that (timeout, reset, EOF) is ambiguous.
pub fn classify_transport<T>(e: &reqwest::Error) -> SendOutcome<T> {
    let reason = describe(e);
    if e.is_connect() && !e.is_timeout() {
        SendOutcome::RetryLater {
            retry_after: None,
            reason: format!("could not connect: {reason}"),
            error: None,
        }
    } else if e.is_builder() {
        SendOutcome::Permanent(ApiError {
            code: None,
            message: format!("request could not be built: {reason}"),
            more_info: None,
            status: 0,
        })
    } else {
        SendOutcome::Ambiguous {
            reason,
            error: None,
        }
    }
}

/// The error text with its causes (our URLs carry no secrets:
/// credentials ride in the Authorization header).
pub(crate) fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
