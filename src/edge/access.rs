//! Who may call `ringback serve`'s API, and how much: bearer tokens by role (compared in
//! constant time with `subtle`), the destination allowlist and the rate limits of
//! `POST /api/notify/send` (GCRA through `governor`, in memory per replica).
//!
//! The legacy caller's `RINGBACK_API_TOKEN` may read and send, and is never refused by the
//! allowlist or a rate limit unless `RINGBACK_SEND_LIMITS_LEGACY=true`: that caller never
//! retries, so a refusal would be a lost callback. The narrower tokens are optional:
//! `RINGBACK_READ_TOKEN` reads records only, `RINGBACK_SEND_TOKEN` sends only (and is limited).

use std::num::NonZeroU32;
use std::time::Duration;

use axum::http::{HeaderMap, header};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use subtle::ConstantTimeEq;

use crate::settings::{ConfigError, ConfigErrors};
use crate::twilio::Secret;

/// What a bearer token may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// `RINGBACK_API_TOKEN`: the legacy caller; reads and sends.
    Legacy,
    /// `RINGBACK_SEND_TOKEN`: sends only.
    Send,
    /// `RINGBACK_READ_TOKEN`: reads only.
    Read,
}

impl Role {
    /// The role's name in logs and console sessions: `legacy`, `send` or `read`.
    pub fn label(self) -> &'static str {
        match self {
            Role::Legacy => "legacy",
            Role::Send => "send",
            Role::Read => "read",
        }
    }
    /// May read callback records (`GET /api/notify/callbacks/{runId}`) and sign in to the console.
    pub fn may_read(self) -> bool {
        matches!(self, Role::Legacy | Role::Read)
    }
    /// May enqueue callbacks through `POST /api/notify/send`.
    pub fn may_send(self) -> bool {
        matches!(self, Role::Legacy | Role::Send)
    }
}

/// The API's tokens.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// `RINGBACK_API_TOKEN`: reads and sends; the send policy spares it unless told otherwise.
    pub legacy: Secret,
    /// `RINGBACK_SEND_TOKEN`: sends only; `None` when unset.
    pub send: Option<Secret>,
    /// `RINGBACK_READ_TOKEN`: reads only; `None` when unset.
    pub read: Option<Secret>,
}

/// Equal in constant time for equal lengths (a length difference is not a secret worth hiding:
/// tokens have a fixed length).
pub fn same_secret(given: &[u8], expected: &[u8]) -> bool {
    !expected.is_empty() && bool::from(given.ct_eq(expected))
}

impl Tokens {
    /// The legacy token alone, with no send or read token.
    pub fn new(legacy: Secret) -> Self {
        Self {
            legacy,
            send: None,
            read: None,
        }
    }

    /// The role of the request's `Authorization: Bearer …`, if it carries a known token. Every
    /// token is compared, so the time taken does not say which one matched.
    pub fn role_of(&self, headers: &HeaderMap) -> Option<Role> {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("")
            .as_bytes();
        self.role_of_token(given)
    }

    /// The role of a bare token (no `Bearer ` prefix), `None` when empty or unknown. Every
    /// token is compared, so the time taken does not say which one matched.
    pub fn role_of_token(&self, given: &[u8]) -> Option<Role> {
        if given.is_empty() {
            return None;
        }
        let check = |s: &Option<Secret>| {
            s.as_ref()
                .is_some_and(|s| same_secret(given, s.expose().as_bytes()))
        };
        let (legacy, send, read) = (
            same_secret(given, self.legacy.expose().as_bytes()),
            check(&self.send),
            check(&self.read),
        );
        if legacy {
            Some(Role::Legacy)
        } else if send {
            Some(Role::Send)
        } else if read {
            Some(Role::Read)
        } else {
            None
        }
    }
}

/// A rate: so many per period (`60/min`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Requests allowed per period; also the burst allowed at once.
    pub count: NonZeroU32,
    /// The period the count refills evenly over: 1 s, 1 min or 1 h.
    pub per: Duration,
}

impl Rate {
    /// `N/s`, `N/min` or `N/h`, N ≥ 1.
    pub fn parse(s: &str) -> Result<Rate, String> {
        let (n, unit) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}`: expected N/s, N/min or N/h"))?;
        let count = n
            .trim()
            .parse::<u32>()
            .ok()
            .and_then(NonZeroU32::new)
            .ok_or_else(|| format!("`{s}`: N must be a whole number ≥ 1"))?;
        let per = match unit.trim() {
            "s" | "sec" => Duration::from_secs(1),
            "min" | "m" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            other => return Err(format!("`{s}`: unknown period `{other}` (s, min or h)")),
        };
        Ok(Rate { count, per })
    }

    fn quota(self) -> Quota {
        // A burst of `count`, refilled evenly over `per`.
        let each = self.per / self.count.get();
        Quota::with_period(each.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(self.count))
            .allow_burst(self.count)
    }
}

/// One entry of the destination allowlist: a whole number, or a prefix ending in `*`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Exactly this +E.164 number.
    Number(String),
    /// Every number starting with this +E.164 prefix (stored without its `*`).
    Prefix(String),
}

impl Allowed {
    fn matches(&self, to: &str) -> bool {
        match self {
            Allowed::Number(n) => n == to,
            Allowed::Prefix(p) => to.starts_with(p.as_str()),
        }
    }
}

/// Settings of the send policy, as configured.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SendPolicyConfig {
    /// Empty: every destination.
    pub allow_to: Vec<Allowed>,
    /// `RINGBACK_SEND_RATE_PER_TOKEN`: sends per token; `None` (unset or `off`): no limit.
    pub per_token: Option<Rate>,
    /// `RINGBACK_SEND_RATE_PER_DESTINATION`: sends per `to` number; `None`: no limit.
    pub per_destination: Option<Rate>,
    /// Apply the allowlist and limits to `RINGBACK_API_TOKEN` too.
    pub limit_legacy: bool,
}

impl SendPolicyConfig {
    /// From the environment's strings; every broken setting named.
    pub fn parse(
        allow_to: Option<&str>,
        per_token: Option<&str>,
        per_destination: Option<&str>,
        limit_legacy: bool,
    ) -> Result<Self, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        let mut allowed = vec![];
        for entry in allow_to
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
        {
            let (digits, entry) = match entry.strip_suffix('*') {
                Some(p) => (p, Allowed::Prefix(p.to_string())),
                None => (entry, Allowed::Number(entry.to_string())),
            };
            let ok = digits.starts_with('+')
                && digits.len() >= 2
                && digits[1..].bytes().all(|b| b.is_ascii_digit());
            if ok {
                allowed.push(entry);
            } else {
                errors.push(ConfigError::new(
                    "RINGBACK_SEND_ALLOW_TO",
                    format!("`{entry:?}`: expected +E.164 numbers or prefixes ending in *, comma-separated"),
                ));
            }
        }
        let mut rate = |name: &'static str, v: Option<&str>| match v.map(str::trim) {
            None | Some("") | Some("off") => None,
            Some(v) => match Rate::parse(v) {
                Ok(r) => Some(r),
                Err(e) => {
                    errors.push(ConfigError::new(name, e));
                    None
                }
            },
        };
        let per_token = rate("RINGBACK_SEND_RATE_PER_TOKEN", per_token);
        let per_destination = rate("RINGBACK_SEND_RATE_PER_DESTINATION", per_destination);
        errors.or(Some(()))?;
        Ok(Self {
            allow_to: allowed,
            per_token,
            per_destination,
            limit_legacy,
        })
    }
}

/// Why a send was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The destination is not on the allowlist.
    NotAllowed,
    /// Over a limit; try again after this long.
    RateLimited {
        /// The limit that refused, `token` or `destination`: the metric's `scope` label.
        scope: &'static str,
        /// How long until a send would pass, rounded up to whole seconds for `Retry-After`.
        retry_after: Duration,
    },
}

/// The send policy, running.
pub struct SendPolicy {
    config: SendPolicyConfig,
    per_token: Option<DefaultKeyedRateLimiter<Role>>,
    per_destination: Option<DefaultKeyedRateLimiter<String>>,
}

impl std::fmt::Debug for SendPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendPolicy")
            .field("config", &self.config)
            .finish()
    }
}

impl Default for SendPolicy {
    fn default() -> Self {
        Self::new(SendPolicyConfig::default())
    }
}

impl SendPolicy {
    /// The policy of `config`, with an empty in-memory rate limiter for each rate it sets.
    pub fn new(config: SendPolicyConfig) -> Self {
        Self {
            per_token: config.per_token.map(|r| RateLimiter::keyed(r.quota())),
            per_destination: config
                .per_destination
                .map(|r| RateLimiter::keyed(r.quota())),
            config,
        }
    }

    /// May `role` send to `to` now? A refusal by one limit does not use up the other's budget
    /// beyond the one request (checks run allowlist, token, destination, in that order).
    pub fn check(&self, role: Role, to: &str) -> Result<(), Refusal> {
        if role == Role::Legacy && !self.config.limit_legacy {
            return Ok(());
        }
        if !self.config.allow_to.is_empty() && !self.config.allow_to.iter().any(|a| a.matches(to)) {
            return Err(Refusal::NotAllowed);
        }
        let wait = |not_until: governor::NotUntil<_>| {
            let d = not_until.wait_time_from(DefaultClock::default().now());
            // Retry-After is whole seconds: round up so a client waiting that long succeeds.
            Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
        };
        if let Some(l) = &self.per_token {
            l.check_key(&role).map_err(|n| Refusal::RateLimited {
                scope: "token",
                retry_after: wait(n),
            })?;
        }
        if let Some(l) = &self.per_destination {
            l.check_key(&to.to_string())
                .map_err(|n| Refusal::RateLimited {
                    scope: "destination",
                    retry_after: wait(n),
                })?;
            if l.len() > 100_000 {
                l.retain_recent();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Tokens {
        Tokens {
            legacy: Secret::new("legacy-token-0123456789"),
            send: Some(Secret::new("send-token-0123456789")),
            read: Some(Secret::new("read-token-0123456789")),
        }
    }

    #[test]
    fn each_token_has_its_role_and_nothing_else_matches() {
        let t = tokens();
        assert_eq!(
            t.role_of_token(b"legacy-token-0123456789"),
            Some(Role::Legacy)
        );
        assert_eq!(t.role_of_token(b"send-token-0123456789"), Some(Role::Send));
        assert_eq!(t.role_of_token(b"read-token-0123456789"), Some(Role::Read));
        assert_eq!(t.role_of_token(b"read-token-012345678"), None);
        assert_eq!(t.role_of_token(b""), None);
        assert!(Role::Read.may_read() && !Role::Read.may_send());
        assert!(Role::Send.may_send() && !Role::Send.may_read());
        assert!(Role::Legacy.may_send() && Role::Legacy.may_read());
        let none = Tokens::new(Secret::new("legacy-token-0123456789"));
        assert_eq!(none.role_of_token(b"read-token-0123456789"), None);
    }

    #[test]
    fn rates_parse_and_bad_settings_are_all_named() {
        assert_eq!(
            Rate::parse("60/min").unwrap(),
            Rate {
                count: NonZeroU32::new(60).unwrap(),
                per: Duration::from_secs(60)
            }
        );
        assert!(Rate::parse("0/min").is_err());
        assert!(Rate::parse("5/day").is_err());
        let e = SendPolicyConfig::parse(Some("+1555*, 12345"), Some("x"), Some("3/h"), false)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("RINGBACK_SEND_ALLOW_TO") && e.contains("12345"),
            "{e}"
        );
        assert!(e.contains("RINGBACK_SEND_RATE_PER_TOKEN"), "{e}");
        assert!(!e.contains("PER_DESTINATION"), "{e}");
    }

    #[test]
    fn the_allowlist_and_limits_spare_the_legacy_token_unless_asked() {
        let config = SendPolicyConfig::parse(
            Some("+1555*,+447700900123"),
            Some("2/min"),
            Some("1/h"),
            false,
        )
        .unwrap();
        let p = SendPolicy::new(config.clone());
        assert_eq!(
            p.check(Role::Send, "+16005550000"),
            Err(Refusal::NotAllowed)
        );
        assert_eq!(p.check(Role::Send, "+15550000001"), Ok(()));
        assert_eq!(p.check(Role::Send, "+447700900123"), Ok(()));
        match p.check(Role::Send, "+15550000002") {
            Err(Refusal::RateLimited {
                scope: "token",
                retry_after,
            }) => {
                assert!(
                    retry_after >= Duration::from_secs(1) && retry_after <= Duration::from_secs(30),
                    "{retry_after:?}"
                )
            }
            other => panic!("{other:?}"),
        }
        for _ in 0..10 {
            assert_eq!(p.check(Role::Legacy, "+16005550000"), Ok(()));
        }
        let strict = SendPolicy::new(SendPolicyConfig {
            limit_legacy: true,
            per_token: None,
            ..config
        });
        assert_eq!(
            strict.check(Role::Legacy, "+16005550000"),
            Err(Refusal::NotAllowed)
        );
        assert_eq!(strict.check(Role::Legacy, "+15550000001"), Ok(()));
        match strict.check(Role::Legacy, "+15550000001") {
            Err(Refusal::RateLimited {
                scope: "destination",
                retry_after,
            }) => {
                assert!(retry_after > Duration::from_secs(3000), "{retry_after:?}")
            }
            other => panic!("{other:?}"),
        }
    }
}
