//! The client's settings: credentials (a secret that never prints), the sender, the API's
//! address and timeouts.

use std::fmt;
use std::time::Duration;

/// A secret that never prints.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap `s`; from here on it prints as `***` in `Debug`.
    pub fn new(s: impl Into<String>) -> Self {
        Self(s.into())
    }
    /// The secret in clear, only where it is used: a Basic auth header, a signature check.
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
    /// Basic auth as the account SID with its auth token (`TWILIO_AUTH_TOKEN`).
    AuthToken(Secret),
    /// Basic auth as an API key (`TWILIO_API_KEY`, `TWILIO_API_SECRET`), revocable on its own.
    ApiKey {
        /// The key's SID (`SK…`), the Basic auth user.
        sid: String,
        /// The key's secret, the Basic auth password.
        secret: Secret,
    },
}

/// Who the message comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sender {
    /// A number, short code or alphanumeric sender ID, sent as `From` (`TWILIO_FROM`).
    From(String),
    /// A Messaging Service SID (`MG…`), sent as `MessagingServiceSid`: Twilio picks the number.
    MessagingService(String),
}

impl Sender {
    /// The number, short code, sender ID or service SID, as a message's `from` or
    /// `messaging_service_sid` names it.
    pub fn value(&self) -> &str {
        match self {
            Sender::From(v) | Sender::MessagingService(v) => v,
        }
    }
}

/// Client settings (`TWILIO_*`).
#[derive(Debug, Clone)]
pub struct TwilioConfig {
    /// The account (`AC…`) whose Messages API is called; in every request path.
    pub account_sid: String,
    /// The credentials every request carries.
    pub auth: Auth,
    /// Who every message comes from.
    pub sender: Sender,
    /// `https://api.twilio.com`, or the simulator's address.
    pub api_base: String,
    /// Time to open the connection (`TWILIO_CONNECT_TIMEOUT_MS`, 3 s by default).
    pub connect_timeout: Duration,
    /// Total time for one request; past it the create is ambiguous.
    pub timeout: Duration,
    /// Seconds Twilio may queue the message (1–36000); `None` leaves Twilio's default.
    pub validity_period: Option<u32>,
}
