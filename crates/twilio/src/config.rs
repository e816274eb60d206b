//! The client's settings: credentials (a secret that never prints), the sender, the API's
//! address and timeouts.

use std::fmt;
use std::time::Duration;

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
