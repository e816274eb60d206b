//! The Twilio Messages client ringback uses in production: create, fetch and list, with every
//! create outcome classified in one place ([`classify_response`], [`classify_transport`]).
//!
//! Classification follows Twilio's advice to decide on the HTTP status first (twilio.md §1.3,
//! §1.4): accepted (2xx), retry later (429, and 21611 "queue full": Twilio did not take the
//! message), permanent (other 4xx: retrying cannot help), ambiguous (5xx, timeouts, a connection
//! lost after the request was sent: Twilio may have created the message, and there is no
//! idempotency key, so it must be reconciled, never blindly resent).

use std::fmt;
use std::time::Duration;

use crate::twilio::message::{ApiError, Message, MessagePage};

/// A secret that never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// How we authenticate: the account's auth token, or an API key (`SK…`) and its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Auth {
    AuthToken(Secret),
    ApiKey { sid: String, secret: Secret },
}

/// Who the message comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    From(String),
    MessagingService(String),
}

/// Client settings (`TWILIO_*`).
#[derive(Debug, Clone)]
pub struct TwilioConfig {
    pub account_sid: String,
    pub auth: Auth,
    pub sender: Sender,
    /// `https://api.twilio.com`, or the simulator's address.
    pub api_base: String,
    pub connect_timeout: Duration,
    /// Total time for one request; past it the create is ambiguous.
    pub timeout: Duration,
    /// Seconds Twilio may queue the message (1–36000); `None` leaves Twilio's default.
    pub validity_period: Option<u32>,
}

/// One message to create.
#[derive(Debug, Clone, Default)]
pub struct CreateMessage {
    pub to: String,
    pub body: String,
    /// Overrides the configured sender's `From`.
    pub from: Option<String>,
    pub status_callback: Option<String>,
}

/// What became of a create.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// Twilio took it: the message and its SID.
    Accepted(Box<Message>),
    /// Retrying cannot help (validation, opt-out, auth, configuration).
    Permanent(ApiError),
    /// Twilio did not take it; try again after `retry_after` (when Twilio said).
    RetryLater {
        retry_after: Option<Duration>,
        reason: String,
        error: Option<ApiError>,
    },
    /// Twilio refused this worker's credentials (401/403): nothing was created, and the fault is
    /// the configuration's, not the message's.
    AuthRefused(ApiError),
    /// Twilio may or may not have created it: reconcile before any resend.
    Ambiguous {
        reason: String,
        error: Option<ApiError>,
    },
}

/// Failures of the fetch and list calls.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TwilioError {
    #[error("{0}")]
    Api(ApiError),
    #[error("request to Twilio failed: {0}")]
    Transport(String),
    #[error("unreadable answer from Twilio: {0}")]
    Decode(String),
}

impl TwilioError {
    /// Twilio refused the credentials (401/403).
    pub fn is_auth_refused(&self) -> bool {
        matches!(self, TwilioError::Api(e) if e.status == 401 || e.status == 403)
    }
}

/// The messages a lookup read, and whether it read back to the time asked for.
#[derive(Debug, Clone, Default)]
pub struct Found {
    pub messages: Vec<Message>,
    /// False when the page limit stopped the search before the time bound.
    pub complete: bool,
}

/// Filters of the list call, for reconciliation.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub to: Option<String>,
    pub from: Option<String>,
    /// `DateSent>` as `YYYY-MM-DD` (Twilio filters by day).
    pub date_sent_after: Option<String>,
    pub page_size: Option<u32>,
}

#[derive(Clone)]
pub struct TwilioClient {
    http: reqwest::Client,
    config: TwilioConfig,
}

impl fmt::Debug for TwilioClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TwilioClient")
            .field("config", &self.config)
            .finish()
    }
}

/// Install the process-wide TLS crypto provider once (reqwest is built without a default one).
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

impl TwilioClient {
    pub fn new(config: TwilioConfig) -> Result<Self, TwilioError> {
        install_tls_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .user_agent(concat!("ringback/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| TwilioError::Transport(e.to_string()))?;
        Ok(Self { http, config })
    }

    pub fn config(&self) -> &TwilioConfig {
        &self.config
    }

    fn messages_url(&self) -> String {
        format!(
            "{}/2010-04-01/Accounts/{}/Messages.json",
            self.config.api_base.trim_end_matches('/'),
            self.config.account_sid
        )
    }

    fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let (user, pass) = match &self.config.auth {
            Auth::AuthToken(token) => (self.config.account_sid.as_str(), token.expose()),
            Auth::ApiKey { sid, secret } => (sid.as_str(), secret.expose()),
        };
        req.basic_auth(user, Some(pass))
            .header("Accept", "application/json")
    }

    /// The form fields a create sends, in Twilio's parameter names.
    pub fn create_form(&self, msg: &CreateMessage) -> Vec<(&'static str, String)> {
        let mut form = vec![("To", msg.to.clone())];
        match (&msg.from, &self.config.sender) {
            (Some(from), _) | (None, Sender::From(from)) => form.push(("From", from.clone())),
            (None, Sender::MessagingService(sid)) => {
                form.push(("MessagingServiceSid", sid.clone()))
            }
        }
        form.push(("Body", msg.body.clone()));
        if let Some(cb) = &msg.status_callback {
            form.push(("StatusCallback", cb.clone()));
        }
        if let Some(v) = self.config.validity_period {
            form.push(("ValidityPeriod", v.to_string()));
        }
        form
    }

    /// `POST …/Messages.json`, classified.
    pub async fn create_message(&self, msg: &CreateMessage) -> SendOutcome {
        let req = self
            .authed(self.http.post(self.messages_url()))
            .form(&self.create_form(msg));
        match req.send().await {
            Err(e) => classify_transport(&e),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get("Retry-After")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .map(Duration::from_secs);
                match resp.bytes().await {
                    Ok(body) => classify_response(status, retry_after, &body),
                    // The status line arrived but the body did not: for a 2xx the message exists.
                    Err(e) => SendOutcome::Ambiguous {
                        reason: format!("HTTP {status}, body lost: {e}"),
                        error: None,
                    },
                }
            }
        }
    }

    /// `GET …/Messages/{Sid}.json`.
    pub async fn fetch_message(&self, sid: &str) -> Result<Message, TwilioError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages/{sid}.json",
            self.config.api_base.trim_end_matches('/'),
            self.config.account_sid
        );
        self.get_json(self.authed(self.http.get(url))).await
    }

    /// `GET …/Messages.json` filtered by `To`, `From` and `DateSent>` (first page).
    pub async fn list_messages(&self, filter: &ListFilter) -> Result<MessagePage, TwilioError> {
        let mut query: Vec<(&str, String)> = vec![];
        if let Some(to) = &filter.to {
            query.push(("To", to.clone()));
        }
        if let Some(from) = &filter.from {
            query.push(("From", from.clone()));
        }
        if let Some(d) = &filter.date_sent_after {
            query.push(("DateSent>", d.clone()));
        }
        query.push(("PageSize", filter.page_size.unwrap_or(50).to_string()));
        self.get_json(self.authed(self.http.get(self.messages_url()).query(&query)))
            .await
    }

    /// Every message to `to` (from `from`) created at or after `created_after` (ms), newest
    /// first, following `next_page_uri` for up to `max_pages` pages. No `DateSent` filter: a
    /// message still queued has no `date_sent` and such a filter would miss it.
    pub async fn list_messages_since(
        &self,
        to: &str,
        from: Option<&str>,
        created_after: i64,
        max_pages: usize,
    ) -> Result<Found, TwilioError> {
        let mut found = Found::default();
        let mut page = self
            .list_messages(&ListFilter {
                to: Some(to.to_string()),
                from: from.map(str::to_string),
                date_sent_after: None,
                page_size: Some(50),
            })
            .await?;
        for _ in 0..max_pages {
            let mut older = false;
            for m in std::mem::take(&mut page.messages) {
                let created = m
                    .date_created
                    .as_deref()
                    .and_then(|d| chrono::DateTime::parse_from_rfc2822(d).ok())
                    .map(|d| d.timestamp_millis());
                if created.is_some_and(|c| c < created_after) {
                    older = true;
                    continue;
                }
                found.messages.push(m);
            }
            let next = page.next_page_uri.clone().filter(|u| !u.is_empty());
            let Some(next) = next.filter(|_| !older) else {
                found.complete = true;
                return Ok(found);
            };
            let url = format!("{}{next}", self.config.api_base.trim_end_matches('/'));
            page = self.get_json(self.authed(self.http.get(url))).await?;
        }
        Ok(found)
    }

    async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, TwilioError> {
        let resp = req
            .send()
            .await
            .map_err(|e| TwilioError::Transport(describe(&e)))?;
        let status = resp.status().as_u16();
        let body = resp
            .bytes()
            .await
            .map_err(|e| TwilioError::Transport(describe(&e)))?;
        if !(200..300).contains(&status) {
            return Err(TwilioError::Api(api_error(status, &body)));
        }
        serde_json::from_slice(&body).map_err(|e| TwilioError::Decode(e.to_string()))
    }
}

/// Twilio's error body, or a stand-in when the body is not Twilio's JSON (gateway errors).
fn api_error(status: u16, body: &[u8]) -> ApiError {
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

/// Classify an HTTP answer to a create. The status decides; the code refines 400s only where
/// Twilio documents that the message was not taken (21611, queue full).
pub fn classify_response(status: u16, retry_after: Option<Duration>, body: &[u8]) -> SendOutcome {
    match status {
        200..=299 => match serde_json::from_slice::<Message>(body) {
            Ok(m) if !m.sid.is_empty() => SendOutcome::Accepted(Box::new(m)),
            _ => SendOutcome::Ambiguous {
                reason: format!("HTTP {status} with an unreadable message body"),
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
        401 | 403 => SendOutcome::AuthRefused(api_error(status, body)),
        400..=499 => {
            let e = api_error(status, body);
            if e.code == Some(21611) {
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
pub fn classify_transport(e: &reqwest::Error) -> SendOutcome {
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
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(code: i64, status: u16) -> Vec<u8> {
        serde_json::to_vec(&ApiError::new(status, code, "x")).unwrap()
    }

    #[test]
    fn classification_decides_on_status_first() {
        let ok = br#"{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"}"#;
        assert!(matches!(
            classify_response(201, None, ok),
            SendOutcome::Accepted(_)
        ));
        assert!(matches!(
            classify_response(201, None, b"<html>"),
            SendOutcome::Ambiguous { .. }
        ));
        for code in [21211, 21610, 21614, 21612, 21408, 21606, 21212] {
            assert!(
                matches!(
                    classify_response(400, None, &body(code, 400)),
                    SendOutcome::Permanent(_)
                ),
                "{code}"
            );
        }
        assert!(matches!(
            classify_response(401, None, &body(20003, 401)),
            SendOutcome::AuthRefused(_)
        ));
        match classify_response(429, Some(Duration::from_secs(3)), &body(20429, 429)) {
            SendOutcome::RetryLater { retry_after, .. } => {
                assert_eq!(retry_after, Some(Duration::from_secs(3)))
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            classify_response(400, None, &body(21611, 400)),
            SendOutcome::RetryLater { .. }
        ));
        for status in [500, 502, 503, 504] {
            assert!(matches!(
                classify_response(status, None, b"gateway"),
                SendOutcome::Ambiguous { .. }
            ));
        }
    }

    #[test]
    fn secrets_never_print() {
        let c = TwilioConfig {
            account_sid: "AC0".into(),
            auth: Auth::AuthToken(Secret::new("hunter2")),
            sender: Sender::From("+15005550006".into()),
            api_base: "http://127.0.0.1:1".into(),
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            validity_period: None,
        };
        assert!(!format!("{c:?}").contains("hunter2"));
        let client = TwilioClient::new(c).unwrap();
        assert!(!format!("{client:?}").contains("hunter2"));
    }
}
