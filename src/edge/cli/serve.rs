//! Settings of `ringback serve`.

use crate::settings::{ConfigError, ConfigErrors};
use clap::Args;

/// Settings of `ringback serve`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "HTTP API (serve)")]
pub struct ServeArgs {
    /// The address serve listens on (loopback unless RINGBACK_ALLOW_PUBLIC_BIND=true).
    #[arg(long, env = "RINGBACK_LISTEN", default_value = "127.0.0.1:3000")]
    pub listen: std::net::SocketAddr,
    /// Bind to a non-loopback address (behind a proxy that terminates TLS).
    #[arg(long, env = "RINGBACK_ALLOW_PUBLIC_BIND", default_value_t = false)]
    pub allow_public_bind: bool,
    /// The base URL Twilio calls (scheme, host, port): signatures are checked over it.
    #[arg(long, env = "RINGBACK_PUBLIC_URL")]
    pub public_url: Option<String>,
    /// Bearer token of /api/notify/send and /api/notify/callbacks.
    #[arg(long, env = "RINGBACK_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// The Twilio auth token status callbacks are signed with.
    #[arg(long = "auth-token", env = "TWILIO_AUTH_TOKEN", hide_env_values = true)]
    pub twilio_auth_token: Option<String>,
    /// During a Twilio auth-token rotation: the other token signatures may be made with.
    #[arg(
        long = "auth-token-secondary",
        env = "TWILIO_AUTH_TOKEN_SECONDARY",
        hide_env_values = true
    )]
    pub twilio_auth_token_secondary: Option<String>,
    /// Optional bearer token that reads callback records only.
    #[arg(long, env = "RINGBACK_READ_TOKEN", hide_env_values = true)]
    pub read_token: Option<String>,
    /// Optional bearer token that sends only (the allowlist and rate limits apply to it).
    #[arg(long, env = "RINGBACK_SEND_TOKEN", hide_env_values = true)]
    pub send_token: Option<String>,
    /// Destinations `/api/notify/send` accepts: +E.164 numbers, or prefixes ending in `*`,
    /// comma-separated (default: every destination).
    #[arg(long, env = "RINGBACK_SEND_ALLOW_TO")]
    pub send_allow_to: Option<String>,
    /// Sends per token: `N/s`, `N/min` or `N/h` (default off).
    #[arg(long, env = "RINGBACK_SEND_RATE_PER_TOKEN")]
    pub send_rate_per_token: Option<String>,
    /// Sends per destination number: `N/s`, `N/min` or `N/h` (default off).
    #[arg(long, env = "RINGBACK_SEND_RATE_PER_DESTINATION")]
    pub send_rate_per_destination: Option<String>,
    /// Apply the allowlist and the rate limits to RINGBACK_API_TOKEN too (the legacy caller
    /// never retries: a refusal is a lost callback).
    #[arg(long, env = "RINGBACK_SEND_LIMITS_LEGACY", default_value_t = false)]
    pub send_limits_legacy: bool,
    /// The directory of saved `ringback drill … --json` reports the console shows.
    #[arg(long, env = "RINGBACK_DRILL_REPORTS")]
    pub drill_reports: Option<std::path::PathBuf>,
    /// Where inbound messages that answer no question are forwarded (form-encoded, signed
    /// again for this URL with TWILIO_AUTH_TOKEN): the app that handled the number's inbound
    /// messages before. Its TwiML answer is relayed; a message it does not accept (2xx) is
    /// forwarded again every minute. Unset: they are kept only.
    #[arg(long, env = "RINGBACK_INBOUND_FORWARD_URL")]
    pub inbound_forward_url: Option<String>,
}

/// What `ringback serve` needs, validated.
#[derive(Debug)]
pub struct ServeConfig {
    /// `RINGBACK_LISTEN`: loopback unless `RINGBACK_ALLOW_PUBLIC_BIND=true`.
    pub listen: std::net::SocketAddr,
    /// `RINGBACK_PUBLIC_URL`: the http(s) base URL Twilio calls, over which signatures are
    /// checked; never a placeholder from the docs.
    pub public_url: String,
    /// `TWILIO_AUTH_TOKEN`: the key of `X-Twilio-Signature`.
    pub twilio_auth_token: crate::twilio::Secret,
    /// `TWILIO_AUTH_TOKEN_SECONDARY`: the other accepted key during a rotation; `None`
    /// when unset or empty.
    pub twilio_auth_token_secondary: Option<crate::twilio::Secret>,
    /// The API's bearer tokens (`RINGBACK_API_TOKEN`, `RINGBACK_SEND_TOKEN`,
    /// `RINGBACK_READ_TOKEN`).
    pub tokens: crate::edge::access::Tokens,
    /// The allowlist and rate limits of `/api/notify/send` (`RINGBACK_SEND_*`).
    pub send_policy: crate::edge::access::SendPolicyConfig,
    /// `RINGBACK_DRILL_REPORTS`: the console's drill reports (an existing directory).
    pub drill_reports: Option<std::path::PathBuf>,
    /// `RINGBACK_INBOUND_FORWARD_URL`.
    pub inbound_forward: Option<String>,
}

/// The public base URL, or why it is not one Twilio can call: no http(s) scheme, no host, a
/// placeholder or a documentation host.
fn public_url(url: &str) -> Result<String, ConfigError> {
    let bad = |problem: String| ConfigError::new("RINGBACK_PUBLIC_URL", problem);
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(bad(format!("malformed: {url:?} is not an http(s) URL")));
    }
    if crate::queue::config::url_host(url).is_none() {
        return Err(bad(format!("malformed: {url:?} has no host")));
    }
    if let Some(why) = crate::queue::config::placeholder(url) {
        return Err(bad(format!(
            "{why}: set the URL Twilio calls, as Twilio sees it"
        )));
    }
    Ok(url.to_string())
}

/// A bearer token of at least 16 characters that is not a placeholder from the docs.
fn own_token(setting: &'static str, token: &str) -> Result<String, ConfigError> {
    if crate::queue::config::placeholder(token).is_some() {
        return Err(ConfigError::new(
            setting,
            "is a placeholder from the docs: set a secret of your own (openssl rand -hex 32)",
        ));
    }
    if token.len() < 16 {
        return Err(ConfigError::new(
            setting,
            "malformed: at least 16 characters (openssl rand -hex 32)",
        ));
    }
    Ok(token.to_string())
}

impl ServeArgs {
    /// What `serve` needs; every broken or missing setting at once.
    pub fn to_config(&self) -> Result<ServeConfig, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        if !self.listen.ip().is_loopback() && !self.allow_public_bind {
            errors.push(ConfigError::new(
                "RINGBACK_LISTEN",
                "binds to loopback unless RINGBACK_ALLOW_PUBLIC_BIND=true (put a TLS proxy in front)",
            ));
        }
        let public_url = errors.given(
            self.public_url.as_deref(),
            "RINGBACK_PUBLIC_URL",
            "required: the http(s) base URL Twilio calls",
            public_url,
        );
        let api_token = errors.given(
            self.api_token.as_deref(),
            "RINGBACK_API_TOKEN",
            "required, at least 16 characters (openssl rand -hex 32)",
            |t| own_token("RINGBACK_API_TOKEN", t),
        );
        let twilio_auth_token = errors.given(
            self.twilio_auth_token.as_deref(),
            "TWILIO_AUTH_TOKEN",
            "required to check X-Twilio-Signature",
            |t| match crate::queue::config::placeholder(t) {
                Some(_) => Err(ConfigError::new(
                    "TWILIO_AUTH_TOKEN",
                    "is a placeholder from the docs: set the auth token Twilio's Console shows",
                )),
                None => Ok(t.to_string()),
            },
        );
        let token = |name: &'static str, v: &Option<String>, errors: &mut ConfigErrors| match v {
            None => None,
            Some(t) if t.is_empty() => None,
            Some(t) => errors
                .take(own_token(name, t))
                .map(crate::twilio::Secret::new),
        };
        let read = token("RINGBACK_READ_TOKEN", &self.read_token, &mut errors);
        let send = token("RINGBACK_SEND_TOKEN", &self.send_token, &mut errors);
        let given = [&self.api_token, &self.read_token, &self.send_token];
        let set: Vec<&String> = given
            .iter()
            .filter_map(|t| t.as_ref())
            .filter(|t| !t.is_empty())
            .collect();
        if (1..set.len()).any(|i| set[..i].contains(&set[i])) {
            errors.push(ConfigError::new(
                "RINGBACK_READ_TOKEN",
                "RINGBACK_API_TOKEN, RINGBACK_READ_TOKEN and RINGBACK_SEND_TOKEN must differ",
            ));
        }
        let secondary = self
            .twilio_auth_token_secondary
            .clone()
            .filter(|t| !t.is_empty())
            .map(crate::twilio::Secret::new);
        let policy = errors.take(crate::edge::access::SendPolicyConfig::parse(
            self.send_allow_to.as_deref(),
            self.send_rate_per_token.as_deref(),
            self.send_rate_per_destination.as_deref(),
            self.send_limits_legacy,
        ));
        let drill_reports = self
            .drill_reports
            .clone()
            .filter(|d| !d.as_os_str().is_empty());
        if let Some(d) = drill_reports.as_ref().filter(|d| !d.is_dir()) {
            errors.push(ConfigError::new(
                "RINGBACK_DRILL_REPORTS",
                format!("{}: not a directory (create it, or unset it)", d.display()),
            ));
        }
        let inbound_forward = self.inbound_forward_url.clone().filter(|u| !u.is_empty());
        if let Some(u) = inbound_forward.as_deref() {
            let problem = if !(u.starts_with("https://") || u.starts_with("http://"))
                || crate::queue::config::url_host(u).is_none()
            {
                Some(format!(
                    "malformed: {u:?} is not an http(s) URL with a host"
                ))
            } else {
                crate::queue::config::placeholder(u)
            };
            if let Some(problem) = problem {
                errors.push(ConfigError::new("RINGBACK_INBOUND_FORWARD_URL", problem));
            }
        }
        let parts = public_url.zip(api_token).zip(twilio_auth_token).zip(policy);
        let (((public_url, api_token), twilio_auth_token), send_policy) = errors.or(parts)?;
        Ok(ServeConfig {
            listen: self.listen,
            public_url,
            twilio_auth_token: crate::twilio::Secret::new(twilio_auth_token),
            twilio_auth_token_secondary: secondary,
            tokens: crate::edge::access::Tokens {
                legacy: crate::twilio::Secret::new(api_token),
                send,
                read,
            },
            send_policy,
            drill_reports,
            inbound_forward,
        })
    }

    /// The effective settings, tokens masked, for `check-config` (read even when invalid).
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let secret = |v: &Option<String>| match v.as_deref() {
            Some(s) if !s.is_empty() => "*** (set)".to_string(),
            _ => "(not set)".to_string(),
        };
        let set = |v: &Option<String>| v.clone().unwrap_or_else(|| "(not set)".into());
        let mut out = vec![
            ("RINGBACK_LISTEN", self.listen.to_string()),
            (
                "RINGBACK_ALLOW_PUBLIC_BIND",
                self.allow_public_bind.to_string(),
            ),
            ("RINGBACK_PUBLIC_URL", set(&self.public_url)),
            ("RINGBACK_API_TOKEN", secret(&self.api_token)),
            ("TWILIO_AUTH_TOKEN", secret(&self.twilio_auth_token)),
        ];
        for (name, v) in [
            (
                "TWILIO_AUTH_TOKEN_SECONDARY",
                &self.twilio_auth_token_secondary,
            ),
            ("RINGBACK_READ_TOKEN", &self.read_token),
            ("RINGBACK_SEND_TOKEN", &self.send_token),
        ] {
            if v.is_some() {
                out.push((name, secret(v)));
            }
        }
        for (name, v) in [
            ("RINGBACK_SEND_ALLOW_TO", &self.send_allow_to),
            ("RINGBACK_SEND_RATE_PER_TOKEN", &self.send_rate_per_token),
            (
                "RINGBACK_SEND_RATE_PER_DESTINATION",
                &self.send_rate_per_destination,
            ),
        ] {
            if let Some(v) = v {
                out.push((name, v.clone()));
            }
        }
        out.push((
            "RINGBACK_SEND_LIMITS_LEGACY",
            self.send_limits_legacy.to_string(),
        ));
        if let Some(d) = &self.drill_reports {
            out.push(("RINGBACK_DRILL_REPORTS", d.display().to_string()));
        }
        out
    }

    /// The rules between serve's settings, each with its verdict.
    pub fn invariants(&self) -> Vec<crate::settings::Invariant> {
        use crate::settings::{Invariant, Severity};
        let tokens: Vec<&String> = [&self.api_token, &self.read_token, &self.send_token]
            .into_iter()
            .flatten()
            .filter(|t| !t.is_empty())
            .collect();
        vec![
            Invariant::new(
                "RINGBACK_LISTEN",
                self.listen.ip().is_loopback() || self.allow_public_bind,
                Severity::Error,
                format!(
                    "RINGBACK_LISTEN ({}) is loopback, or RINGBACK_ALLOW_PUBLIC_BIND=true",
                    self.listen
                ),
                "binds to loopback unless RINGBACK_ALLOW_PUBLIC_BIND=true (put a TLS proxy in front)",
            ),
            Invariant::new(
                "RINGBACK_READ_TOKEN",
                !(1..tokens.len()).any(|i| tokens[..i].contains(&tokens[i])),
                Severity::Error,
                "RINGBACK_API_TOKEN, RINGBACK_READ_TOKEN and RINGBACK_SEND_TOKEN differ",
                "RINGBACK_API_TOKEN, RINGBACK_READ_TOKEN and RINGBACK_SEND_TOKEN must differ",
            ),
        ]
    }
}
