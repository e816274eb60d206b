//! The Twilio Messages client ringback uses in production: create, fetch and list, with every
//! create outcome classified in one place ([`classify_response`], [`classify_transport`]).
//!
//! Classification follows Twilio's advice to decide on the HTTP status first (docs/twilio.md): accepted (2xx), retry later (429, and 21611 "queue full": Twilio did not take the
//! message), auth refused (401, 403: Twilio refused *our* credentials and created nothing, a
//! fault of this worker's configuration, not of the message: the callback waits), permanent (other
//! 4xx: retrying cannot help), ambiguous (5xx, timeouts, a connection lost after the request was
//! sent: Twilio may have created the message, and there is no idempotency key, so it must be
//! reconciled, never blindly resent).
//!
//! Lookups read the recipient's whole list and keep what was created since their bound
//! ([`TwilioClient::list_messages_since`]), never filtering by `DateSent`: `date_sent` stays
//! null until a message leaves Twilio, so a `DateSent` filter (or a search that stops where a
//! list sorted by it reaches old messages) misses the very messages an ambiguous create may
//! have left queued.

use std::fmt;
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::message::{ApiError, Message, MessagePage, SenderForm, sender_form};

use crate::classify::{api_error, describe, error_code, outcome_code};
pub use crate::classify::{classify_response, classify_transport, refuses_credentials};
pub use crate::config::{Auth, Secret, Sender, TwilioConfig};
pub use crate::list::{ListFilter, MessageSearch, PageLimits};

/// One message to create.
#[derive(Debug, Clone, Default)]
pub struct CreateMessage {
    /// `To`: the recipient (E.164).
    pub to: String,
    /// `Body`: the text as ringback sends it.
    pub body: String,
    /// Overrides the configured sender's `From`.
    pub from: Option<String>,
    /// `StatusCallback`: where Twilio posts this message's receipts.
    pub status_callback: Option<String>,
    /// Overrides the configured `ValidityPeriod` (seconds): quiet hours cut it.
    pub validity_period: Option<u32>,
}

/// What became of a create.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome<T = Message> {
    /// Twilio took it: the message (or call) as Twilio answered it, with its SID.
    Accepted(Box<T>),
    /// Retrying cannot help (validation, opt-out, configuration of the message).
    Permanent(ApiError),
    /// Twilio refused this worker's credentials ([`refuses_credentials`]) and created nothing.
    /// Not a verdict on the message: it can be sent once the credentials work again.
    AuthRefused(ApiError),
    /// Twilio refused it for a fault of this deployment or of sending to its destination
    /// ([`super::blame`]) and created nothing: held until the fault is fixed, never failed.
    Held {
        /// Whose fault the refusal is, and what fixes it.
        blame: super::blame::Blame,
        /// Twilio's error body.
        error: ApiError,
    },
    /// Twilio did not take it; try again after `retry_after` (when Twilio said).
    RetryLater {
        /// Twilio's `Retry-After`, when it sent one.
        retry_after: Option<Duration>,
        /// Why, for the log and the run's record.
        reason: String,
        /// Twilio's error body, when there was one.
        error: Option<ApiError>,
    },
    /// Twilio may or may not have created it: reconcile before any resend.
    Ambiguous {
        /// Why, for the log and the run's record (a 5xx, a timeout, a connection lost).
        reason: String,
        /// Twilio's error body, when there was one.
        error: Option<ApiError>,
    },
}

impl<T> SendOutcome<T> {
    /// One word for the answer (`accepted`, `permanent`, `auth_refused`, `held`, `retry_later`,
    /// `ambiguous`), for a trace attribute.
    pub fn kind(&self) -> &'static str {
        match self {
            SendOutcome::Accepted(_) => "accepted",
            SendOutcome::Permanent(_) => "permanent",
            SendOutcome::AuthRefused(_) => "auth_refused",
            SendOutcome::Held { .. } => "held",
            SendOutcome::RetryLater { .. } => "retry_later",
            SendOutcome::Ambiguous { .. } => "ambiguous",
        }
    }
}

/// Failures of the fetch and list calls.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TwilioError {
    /// Twilio answered with an error body.
    #[error("{0}")]
    Api(ApiError),
    /// The request did not get an answer (connect, TLS, timeout); the message names its causes
    /// in a line, for the logs.
    #[error("request to Twilio failed: {}", describe(.0))]
    Transport(#[source] reqwest::Error),
    /// Twilio answered with a body ringback cannot read.
    #[error("unreadable answer from Twilio: {0}")]
    Decode(#[from] serde_json::Error),
    /// A list answer's `next_page_uri` points outside this account's message list: not
    /// followed (the URI carries the To number, so it is not repeated here).
    #[error("next_page_uri is not a page of this account's message list")]
    ForeignPage,
}

impl TwilioError {
    /// Twilio refused this worker's credentials ([`refuses_credentials`]): the lookup says
    /// nothing about the message, only that the configuration is at fault.
    pub fn is_auth_refused(&self) -> bool {
        matches!(self, Self::Api(e) if refuses_credentials(e))
    }
}

/// The Twilio Messages client: one HTTP client (shared connections) and the account's settings.
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
    /// A client for `config`'s account; fails only if the HTTP client cannot be built.
    pub fn new(config: TwilioConfig) -> Result<Self, TwilioError> {
        install_tls_provider();
        let http = reqwest::Client::builder()
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .user_agent(concat!("ringback/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(TwilioError::Transport)?;
        Ok(Self { http, config })
    }

    /// The settings it was made with.
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

    /// The HTTP client, shared by every call to Twilio.
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    pub(crate) fn authed(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
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
        // a job's own `from` may name a Messaging Service too: Twilio picks from its pool
        match (&msg.from, &self.config.sender) {
            (Some(sid), _) if sender_form(sid) == Some(SenderForm::MessagingService) => {
                form.push(("MessagingServiceSid", sid.clone()))
            }
            (Some(from), _) | (None, Sender::From(from)) => form.push(("From", from.clone())),
            (None, Sender::MessagingService(sid)) => {
                form.push(("MessagingServiceSid", sid.clone()))
            }
        }
        form.push(("Body", msg.body.clone()));
        if let Some(cb) = &msg.status_callback {
            form.push(("StatusCallback", cb.clone()));
        }
        if let Some(v) = msg.validity_period.or(self.config.validity_period) {
            form.push(("ValidityPeriod", v.to_string()));
        }
        form
    }

    /// `POST …/Messages.json`, classified.
    pub async fn create_message(&self, msg: &CreateMessage) -> SendOutcome {
        let req = self
            .authed(self.http.post(self.messages_url()))
            .form(&self.create_form(msg));
        let started = std::time::Instant::now();
        let outcome = match req.send().await {
            Err(e) => classify_transport(&e),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let retry_after = crate::classify::retry_after(resp.headers());
                match resp.bytes().await {
                    Ok(body) => match classify_response(status, retry_after, &body) {
                        SendOutcome::Permanent(e) => {
                            match super::blame::blame(&e, msg.from.is_some()) {
                                super::blame::Blame::Message => SendOutcome::Permanent(e),
                                blame => SendOutcome::Held { blame, error: e },
                            }
                        }
                        other => other,
                    },
                    // The status line arrived but the body did not: for a 2xx the message exists.
                    Err(e) => SendOutcome::Ambiguous {
                        reason: format!("HTTP {status}, body lost: {e}"),
                        error: None,
                    },
                }
            }
        };
        let telemetry = ringback_shared::telemetry::global();
        telemetry.twilio_call("create", started.elapsed());
        if let Some(code) = outcome_code(&outcome) {
            telemetry.twilio_error(code);
        }
        outcome
    }

    /// `GET …/Messages/{Sid}.json`.
    pub async fn fetch_message(&self, sid: &str) -> Result<Message, TwilioError> {
        let url = format!(
            "{}/2010-04-01/Accounts/{}/Messages/{sid}.json",
            self.config.api_base.trim_end_matches('/'),
            self.config.account_sid
        );
        self.get_json("fetch", self.authed(self.http.get(url)))
            .await
    }

    /// `GET …/Messages.json` filtered by `To`, `From` and `DateSent>` (first page only). A
    /// `DateSent` filter misses messages still queued; lookups use [`Self::list_messages_since`].
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
        self.get_json(
            "list",
            self.authed(self.http.get(self.messages_url()).query(&query)),
        )
        .await
    }

    /// Every message to `to` (and from `from`) created at or after `created_after`: lists by
    /// `To`/`From` with no date filter and follows `next_page_uri` to the end of the list, or
    /// until `limits.max_pages` pages were read (then [`MessageSearch::complete`] is false).
    /// Twilio promises no order for the list (its only date filter is on `DateSent`, null while a
    /// message is queued, and a list sorted by it may put the queued messages last), so no page
    /// ends the search early: a message still queued is found wherever the list puts it, at
    /// the cost of reading the recipient's whole history (1,000 messages a page by default), on
    /// the rare path of a send whose outcome is unknown. Twilio's `date_created` is to the
    /// second, so the bound is too; allow for clock skew between this host and Twilio in
    /// `created_after`.
    pub async fn list_messages_since(
        &self,
        to: &str,
        from: Option<&str>,
        created_after: DateTime<Utc>,
        limits: PageLimits,
    ) -> Result<MessageSearch, TwilioError> {
        let bound = created_after.timestamp();
        let mut query: Vec<(&str, String)> = vec![("To", to.to_string())];
        if let Some(from) = from {
            query.push(("From", from.to_string()));
        }
        query.push(("PageSize", limits.page_size.clamp(1, 1000).to_string()));
        let mut request = self.http.get(self.messages_url()).query(&query);
        let mut search = MessageSearch::default();
        while search.pages < limits.max_pages {
            let page: MessagePage = self.get_json("list", self.authed(request)).await?;
            search.pages += 1;
            search.messages.extend(
                page.messages
                    .into_iter()
                    .filter(|m| m.created_at().is_none_or(|t| t.timestamp() >= bound)),
            );
            let next = match page.next_page_uri {
                Some(uri) => uri,
                _ => {
                    search.complete = true;
                    break;
                }
            };
            request = self.http.get(self.page_url(&next)?);
        }
        Ok(search)
    }

    /// The absolute URL of a `next_page_uri`. Twilio sends it relative to the API base; it must
    /// stay on this account's message list, so credentials never follow a link elsewhere.
    fn page_url(&self, uri: &str) -> Result<String, TwilioError> {
        let base = self.config.api_base.trim_end_matches('/');
        let path = uri.strip_prefix(base).unwrap_or(uri);
        let list = format!(
            "/2010-04-01/Accounts/{}/Messages.json?",
            self.config.account_sid
        );
        if path.starts_with(&list) {
            Ok(format!("{base}{path}"))
        } else {
            Err(TwilioError::ForeignPage)
        }
    }

    pub(crate) async fn get_json<T: serde::de::DeserializeOwned>(
        &self,
        operation: &'static str,
        req: reqwest::RequestBuilder,
    ) -> Result<T, TwilioError> {
        let started = std::time::Instant::now();
        let result = self.get_json_timed(req).await;
        let telemetry = ringback_shared::telemetry::global();
        telemetry.twilio_call(operation, started.elapsed());
        match &result {
            Err(TwilioError::Api(e)) => telemetry.twilio_error(error_code(e)),
            Err(TwilioError::Transport(_)) => telemetry.twilio_error("transport".into()),
            _ => {}
        }
        result
    }

    /// Send `req` and read a 2xx answer's JSON; any other status is Twilio's error body.
    pub(crate) async fn send_json<T: serde::de::DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, TwilioError> {
        self.get_json_timed(req).await
    }

    async fn get_json_timed<T: serde::de::DeserializeOwned>(
        &self,
        req: reqwest::RequestBuilder,
    ) -> Result<T, TwilioError> {
        let resp = req.send().await.map_err(TwilioError::Transport)?;
        let status = resp.status().as_u16();
        let body = resp.bytes().await.map_err(TwilioError::Transport)?;
        if !(200..300).contains(&status) {
            return Err(TwilioError::Api(api_error(status, &body)));
        }
        Ok(serde_json::from_slice(&body)?)
    }
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
        for (status, code) in [(401, 20003), (403, 20403), (400, 20003)] {
            match classify_response(status, None, &body(code, status)) {
                SendOutcome::AuthRefused(e) => assert_eq!((e.status, e.code), (status, Some(code))),
                other => panic!("{status}/{code}: {other:?}"),
            }
        }
        // A gateway's bare 401 or 403 with no Twilio body is still a refusal.
        for status in [401, 403] {
            assert!(matches!(
                classify_response(status, None, b"<html>"),
                SendOutcome::AuthRefused(_)
            ));
        }
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
    fn lookup_errors_say_when_the_credentials_were_refused() {
        assert!(TwilioError::Api(ApiError::new(401, 20003, "Authenticate")).is_auth_refused());
        assert!(TwilioError::Api(ApiError::new(403, 20403, "Forbidden")).is_auth_refused());
        assert!(!TwilioError::Api(ApiError::new(404, 20404, "Not found")).is_auth_refused());
        assert!(!TwilioError::Api(ApiError::new(429, 20429, "Too Many")).is_auth_refused());
        assert!(!TwilioError::ForeignPage.is_auth_refused());
    }

    fn config(api_base: &str, token: &str) -> TwilioConfig {
        TwilioConfig {
            account_sid: "AC0".into(),
            auth: Auth::AuthToken(Secret::new(token)),
            sender: Sender::From("+15005550006".into()),
            api_base: api_base.into(),
            connect_timeout: Duration::from_secs(1),
            timeout: Duration::from_secs(1),
            validity_period: None,
        }
    }

    #[test]
    fn next_pages_stay_on_this_accounts_list() {
        let c = TwilioClient::new(config("https://api.twilio.com/", "t")).unwrap();
        let page =
            "/2010-04-01/Accounts/AC0/Messages.json?To=%2B1555&PageSize=2&Page=1&PageToken=PASM1";
        assert_eq!(
            c.page_url(page).unwrap(),
            format!("https://api.twilio.com{page}")
        );
        assert_eq!(
            c.page_url(&format!("https://api.twilio.com{page}"))
                .unwrap(),
            format!("https://api.twilio.com{page}")
        );
        for elsewhere in [
            format!("https://evil.example{page}"),
            "//evil.example/2010-04-01/Accounts/AC0/Messages.json?x".to_string(),
            "/2010-04-01/Accounts/AC1/Messages.json?PageToken=PASM1".to_string(),
            "/2010-04-01/Accounts/AC0/Calls.json?PageToken=PASM1".to_string(),
        ] {
            assert!(c.page_url(&elsewhere).is_err(), "{elsewhere}");
        }
    }

    #[test]
    fn secrets_never_print() {
        let c = config("http://127.0.0.1:1", "hunter2");
        assert!(!format!("{c:?}").contains("hunter2"));
        let client = TwilioClient::new(c).unwrap();
        assert!(!format!("{client:?}").contains("hunter2"));
    }
}
