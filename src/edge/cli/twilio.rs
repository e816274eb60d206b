//! Twilio client settings (`TWILIO_*`).

use super::is_twilio_api;
use crate::settings::{ConfigError, ConfigErrors};
use clap::Args;
use std::time::Duration;

/// Twilio client settings (`TWILIO_*`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Twilio")]
pub struct TwilioArgs {
    /// The account's SID (`AC` and 32 hex digits).
    #[arg(long, env = "TWILIO_ACCOUNT_SID")]
    pub account_sid: Option<String>,
    /// The account's auth token (or set TWILIO_API_KEY and TWILIO_API_SECRET instead).
    #[arg(long, env = "TWILIO_AUTH_TOKEN", hide_env_values = true)]
    pub auth_token: Option<String>,
    /// An API key's SID (`SK…`), with TWILIO_API_SECRET, instead of the auth token.
    #[arg(long, env = "TWILIO_API_KEY")]
    pub api_key: Option<String>,
    /// The API key's secret.
    #[arg(long, env = "TWILIO_API_SECRET", hide_env_values = true)]
    pub api_secret: Option<String>,
    /// The sender: the account's E.164 number, short code or alphanumeric sender ID (or set
    /// TWILIO_MESSAGING_SERVICE_SID).
    #[arg(long = "twilio-from", env = "TWILIO_FROM")]
    pub from: Option<String>,
    /// A Messaging Service SID (`MG…`) to send from, instead of TWILIO_FROM.
    #[arg(long, env = "TWILIO_MESSAGING_SERVICE_SID")]
    pub messaging_service_sid: Option<String>,
    /// Twilio's REST API base (the simulator's URL in tests and drills).
    #[arg(
        long,
        env = "TWILIO_API_BASE",
        default_value = "https://api.twilio.com"
    )]
    pub api_base: String,
    /// Connect timeout of a Twilio request.
    #[arg(
        long = "twilio-connect-timeout-ms",
        env = "TWILIO_CONNECT_TIMEOUT_MS",
        default_value_t = 3_000
    )]
    pub connect_timeout_ms: u64,
    /// Total timeout of a Twilio request; RINGBACK_PENDING_TTL_MS must exceed it plus 2 s.
    #[arg(
        long = "twilio-timeout-ms",
        env = "TWILIO_TIMEOUT_MS",
        default_value_t = 8_000
    )]
    pub timeout_ms: u64,
    /// Seconds Twilio may queue a message (1–36000); default and upper bound: the delivery
    /// deadline.
    #[arg(long, env = "TWILIO_VALIDITY_PERIOD_S")]
    pub validity_period_s: Option<u32>,
}

/// A Twilio SID (`AC`, `SK`, `MG` and 32 hex digits) for `setting`, or why it is not one:
/// a placeholder from the docs always; a wrong shape against Twilio's own API (`live`), where
/// Twilio would refuse it; elsewhere (the simulator) the prefix and length only, so a test
/// double's SIDs stay valid.
fn sid_shape(
    setting: &'static str,
    sid: &str,
    prefix: &str,
    live: bool,
) -> Result<String, ConfigError> {
    if let Some(why) = crate::queue::config::placeholder(sid) {
        return Err(ConfigError::new(setting, format!("{why}: set your own")));
    }
    let digits = sid.strip_prefix(prefix).unwrap_or("");
    // `AC000…0`: the docs' simulator account, a SID no live account has
    if live
        && digits.len() == 32
        && digits.as_bytes()[0].is_ascii_hexdigit()
        && digits.bytes().all(|b| b == digits.as_bytes()[0])
    {
        return Err(ConfigError::new(
            setting,
            format!("{sid:?} is a placeholder (one digit repeated): set your own"),
        ));
    }
    let shaped = digits.len() == 32 && (!live || digits.bytes().all(|b| b.is_ascii_hexdigit()));
    if shaped {
        Ok(sid.to_string())
    } else {
        Err(ConfigError::new(
            setting,
            format!("malformed: {sid:?} is not {prefix} followed by 32 hex digits"),
        ))
    }
}

/// An auth token (32 hex digits) or an API key's secret (32 letters and digits) for
/// `setting`, or why it is not one; the shape is checked against Twilio's own API only.
fn secret_shape(
    setting: &'static str,
    secret: &str,
    live: bool,
    hex: bool,
) -> Result<String, ConfigError> {
    if crate::queue::config::placeholder(secret).is_some() {
        return Err(ConfigError::new(
            setting,
            "is a placeholder from the docs: set the secret Twilio's Console shows",
        ));
    }
    let fits = |b: u8| {
        if hex {
            b.is_ascii_hexdigit()
        } else {
            b.is_ascii_alphanumeric()
        }
    };
    if live && !(secret.len() == 32 && secret.bytes().all(fits)) {
        let shape = if hex {
            "32 hex digits"
        } else {
            "32 letters and digits"
        };
        return Err(ConfigError::new(
            setting,
            format!("malformed: Twilio's secret is {shape} (the value is not shown)"),
        ));
    }
    Ok(secret.to_string())
}

/// A North American number in area code 555, which is never assigned: the docs' example
/// numbers (`+15558675310`), never a real sender.
fn fictional_number(number: &str) -> bool {
    number
        .strip_prefix("whatsapp:")
        .unwrap_or(number)
        .starts_with("+1555")
}

impl TwilioArgs {
    /// The validated client settings, or every broken or missing setting at once.
    pub fn to_config(&self) -> Result<crate::twilio::TwilioConfig, ConfigErrors> {
        use crate::twilio::{Auth, Secret, Sender};
        let mut errors = ConfigErrors::default();
        let live = is_twilio_api(&self.api_base);
        let account_sid = errors.given(
            self.account_sid.as_deref(),
            "TWILIO_ACCOUNT_SID",
            "required: AC followed by 32 hex digits (the Console's Account Info)",
            |sid| sid_shape("TWILIO_ACCOUNT_SID", sid, "AC", live),
        );
        let auth = match (&self.api_key, &self.api_secret, &self.auth_token) {
            (Some(key), Some(secret), _) => {
                let key = errors.take(sid_shape("TWILIO_API_KEY", key, "SK", live));
                let secret = errors.take(secret_shape("TWILIO_API_SECRET", secret, live, false));
                key.zip(secret).map(|(sid, secret)| Auth::ApiKey {
                    sid,
                    secret: Secret::new(secret),
                })
            }
            (Some(_), None, _) => {
                errors.push(ConfigError::new(
                    "TWILIO_API_SECRET",
                    "required with TWILIO_API_KEY",
                ));
                None
            }
            (None, _, Some(token)) if !token.is_empty() => errors.take(
                secret_shape("TWILIO_AUTH_TOKEN", token, live, true)
                    .map(|t| Auth::AuthToken(Secret::new(t))),
            ),
            _ => {
                errors.push(ConfigError::new(
                    "TWILIO_AUTH_TOKEN",
                    "required (or TWILIO_API_KEY with TWILIO_API_SECRET)",
                ));
                None
            }
        };
        // An empty value (`TWILIO_FROM=` in an env file) is a setting left unset.
        let given = |v: &Option<String>| v.clone().filter(|v| !v.is_empty());
        let sender = match (&given(&self.from), &given(&self.messaging_service_sid)) {
            (Some(_), Some(_)) => Err(ConfigError::new(
                "TWILIO_FROM",
                "set TWILIO_FROM or TWILIO_MESSAGING_SERVICE_SID, not both",
            )),
            (Some(from), None) => {
                use crate::twilio::message::{SenderForm, is_test_credentials_number, sender_form};
                match sender_form(from) {
                    None => Err(ConfigError::new(
                        "TWILIO_FROM",
                        format!(
                            "{from:?} is not a sender Twilio accepts: an E.164 number (+15558675310), a short code, an alphanumeric sender ID (up to 11 letters, digits, spaces), a WhatsApp sender (whatsapp:+15558675310) or a Messaging Service SID (MG…)"
                        ),
                    )),
                    Some(_) if live && fictional_number(from) => Err(ConfigError::new(
                        "TWILIO_FROM",
                        format!(
                            "{from} is a fictional number from the docs (area code 555 is never assigned): set the account's own number or service"
                        ),
                    )),
                    Some(_) if is_test_credentials_number(from) && live => Err(ConfigError::new(
                        "TWILIO_FROM",
                        format!(
                            "{from} is one of Twilio's numbers for test credentials: a live account refuses every message from it; set the account's own number or service"
                        ),
                    )),
                    // Twilio accepts a service SID in `From`: it is one, and looked up as one.
                    Some(SenderForm::MessagingService) => {
                        sid_shape("TWILIO_FROM", from, "MG", live).map(Sender::MessagingService)
                    }
                    Some(_) => Ok(Sender::From(from.clone())),
                }
            }
            (None, Some(ms)) => sid_shape("TWILIO_MESSAGING_SERVICE_SID", ms, "MG", live)
                .map(Sender::MessagingService),
            (None, None) => Err(ConfigError::new(
                "TWILIO_FROM",
                "required (or TWILIO_MESSAGING_SERVICE_SID)",
            )),
        };
        let sender = errors.take(sender);
        if !(self.api_base.starts_with("https://") || self.api_base.starts_with("http://"))
            || crate::queue::config::url_host(&self.api_base).is_none()
        {
            errors.push(ConfigError::new(
                "TWILIO_API_BASE",
                format!(
                    "malformed: {:?} is not an http(s) URL with a host",
                    self.api_base
                ),
            ));
        }
        if self.timeout_ms == 0 || self.connect_timeout_ms == 0 {
            errors.push(ConfigError::new(
                "TWILIO_TIMEOUT_MS",
                "timeouts must be positive",
            ));
        }
        if let Some(v) = self.validity_period_s
            && !(1..=36_000).contains(&v)
        {
            errors.push(ConfigError::new(
                "TWILIO_VALIDITY_PERIOD_S",
                "must be between 1 and 36000",
            ));
        }
        let parts = account_sid.zip(auth).zip(sender);
        let ((account_sid, auth), sender) = errors.or(parts)?;
        Ok(crate::twilio::TwilioConfig {
            account_sid,
            auth,
            sender,
            api_base: self.api_base.clone(),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            timeout: Duration::from_millis(self.timeout_ms),
            validity_period: self.validity_period_s,
        })
    }

    /// The effective settings, secrets masked, for `check-config` (read even when invalid).
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let set = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".into());
        let secret = |v: &Option<String>| match v.as_deref() {
            Some(s) if !s.is_empty() => "*** (set)".to_string(),
            _ => "(not set)".to_string(),
        };
        let mut out = vec![
            ("TWILIO_ACCOUNT_SID", set(&self.account_sid)),
            ("TWILIO_AUTH_TOKEN", secret(&self.auth_token)),
        ];
        if self.api_key.is_some() || self.api_secret.is_some() {
            out.push(("TWILIO_API_KEY", set(&self.api_key)));
            out.push(("TWILIO_API_SECRET", secret(&self.api_secret)));
        }
        if self.messaging_service_sid.is_some() {
            out.push((
                "TWILIO_MESSAGING_SERVICE_SID",
                set(&self.messaging_service_sid),
            ));
        }
        if self.from.is_some() || self.messaging_service_sid.is_none() {
            // a sender number is not a secret: it is the account's own public number
            out.push(("TWILIO_FROM", set(&self.from)));
        }
        out.push(("TWILIO_API_BASE", self.api_base.clone()));
        out.push((
            "TWILIO_CONNECT_TIMEOUT_MS",
            self.connect_timeout_ms.to_string(),
        ));
        out.push(("TWILIO_TIMEOUT_MS", self.timeout_ms.to_string()));
        if let Some(v) = self.validity_period_s {
            out.push(("TWILIO_VALIDITY_PERIOD_S", v.to_string()));
        }
        out
    }
}
