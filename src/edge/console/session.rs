//! Who may look at the console: a session cookie that is not the token. Signing in posts a
//! token once; the console answers with `ringback_console=v1.<expires>.<nonce>.<role>.<mac>`,
//! an HMAC-SHA1 over the rest under a key drawn at random when the process starts. The token
//! never travels again and never sits in a URL, a log or the browser's storage; a restart (a new
//! key) signs everyone out. `Authorization: Bearer <read token>` works too, for scripts.

use std::time::Duration;

use axum::http::{HeaderMap, header};
use hmac::{KeyInit, Mac};

use crate::edge::access::{Role, Tokens};

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// The cookie's name.
pub const COOKIE: &str = "ringback_console";

/// How long a session lasts.
pub const SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);

/// The process's session key.
pub struct Sessions {
    key: [u8; 32],
    /// Mark the cookie `Secure` (the console is reached over https).
    secure: bool,
}

impl std::fmt::Debug for Sessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("secure", &self.secure)
            .finish_non_exhaustive()
    }
}

/// Who is asking, as far as the console can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caller {
    /// A bearer token or a session of a role that may read.
    Reader(Role),
    /// A known token (or session) whose role may not read: the send-only token.
    NotAllowed(Role),
    /// A bearer token that matches no token.
    WrongToken,
    /// Neither a bearer token nor a valid session (none, expired, forged, or from before a
    /// restart).
    Anonymous,
}

impl Sessions {
    /// A fresh random key; `secure` marks cookies `Secure`.
    pub fn new(secure: bool) -> Self {
        Self {
            key: rand::random::<[u8; 32]>(),
            secure,
        }
    }

    fn mac(&self, payload: &str) -> HmacSha1 {
        let mut mac = HmacSha1::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(payload.as_bytes());
        mac
    }

    /// A signed session value for `role`, valid until `now_ms + SESSION_LIFETIME`.
    pub fn issue(&self, role: Role, now_ms: i64) -> String {
        let expires = now_ms + SESSION_LIFETIME.as_millis() as i64;
        let nonce: String = rand::random::<[u8; 12]>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let payload = format!("v1.{expires}.{nonce}.{}", role.label());
        let tag: String = self
            .mac(&payload)
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{payload}.{tag}")
    }

    /// The role a session value was issued for, if it is ours and has not expired.
    pub fn verify(&self, value: &str, now_ms: i64) -> Option<Role> {
        let (payload, tag) = value.rsplit_once('.')?;
        let tag = decode_hex(tag)?;
        self.mac(payload).verify_slice(&tag).ok()?;
        let mut parts = payload.split('.');
        let (v, expires, _nonce, role) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if v != "v1" || parts.next().is_some() || expires.parse::<i64>().ok()? <= now_ms {
            return None;
        }
        match role {
            "read" => Some(Role::Read),
            "legacy" => Some(Role::Legacy),
            "send" => Some(Role::Send),
            _ => None,
        }
    }

    /// `Set-Cookie` for a new session.
    pub fn set_cookie(&self, value: &str) -> String {
        format!(
            "{COOKIE}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={}{}",
            SESSION_LIFETIME.as_secs(),
            if self.secure { "; Secure" } else { "" }
        )
    }

    /// `Set-Cookie` that ends the session in the browser.
    pub fn clear_cookie(&self) -> String {
        format!(
            "{COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0{}",
            if self.secure { "; Secure" } else { "" }
        )
    }

    /// Who is asking: a bearer token wins over a cookie; a wrong bearer token is said so.
    pub fn caller(&self, tokens: &Tokens, headers: &HeaderMap, now_ms: i64) -> Caller {
        let as_caller = |role: Role| {
            if role.may_read() {
                Caller::Reader(role)
            } else {
                Caller::NotAllowed(role)
            }
        };
        if headers.contains_key(header::AUTHORIZATION) {
            return tokens
                .role_of(headers)
                .map_or(Caller::WrongToken, as_caller);
        }
        let session = headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|c| c.trim().split_once('='))
            .filter(|(name, _)| *name == COOKIE)
            .find_map(|(_, value)| self.verify(value, now_ms));
        session.map_or(Caller::Anonymous, as_caller)
    }
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

/// A form post comes from this console, not another site (login CSRF): a browser's
/// `Sec-Fetch-Site` says so; without it, its `Origin` names the host asked. (A browser sends
/// `Origin: null` under some referrer policies, so fetch metadata is asked first; a client
/// that sends neither, like curl, is not a browser another site can drive.)
pub fn same_origin(headers: &HeaderMap) -> bool {
    let get = |h: &str| headers.get(h).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site") {
        return site == "same-origin" || site == "none";
    }
    match (get("origin"), get("host")) {
        (Some(origin), Some(host)) => origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host)),
        (Some(_), None) => false,
        (None, _) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn a_session_is_ours_unexpired_and_untampered() {
        let s = Sessions::new(false);
        let v = s.issue(Role::Read, 1_000);
        assert_eq!(s.verify(&v, 2_000), Some(Role::Read));
        let later = 1_000 + SESSION_LIFETIME.as_millis() as i64;
        assert_eq!(s.verify(&v, later), None, "expired");
        let forged = v.replace(".read.", ".legacy.");
        assert_eq!(s.verify(&forged, 2_000), None, "role changed");
        assert_eq!(
            Sessions::new(false).verify(&v, 2_000),
            None,
            "another process's key"
        );
        assert_eq!(s.verify("v1.9999999999999.x.read.zz", 2_000), None);
        assert_eq!(s.verify("", 2_000), None);
    }

    #[test]
    fn bearer_wins_and_a_wrong_one_is_named() {
        let tokens = Tokens {
            legacy: crate::twilio::Secret::new("legacy-token-0123456789"),
            send: Some(crate::twilio::Secret::new("send-token-0123456789")),
            read: Some(crate::twilio::Secret::new("read-token-0123456789")),
        };
        let s = Sessions::new(true);
        let mut h = HeaderMap::new();
        assert_eq!(s.caller(&tokens, &h, 0), Caller::Anonymous);
        let cookie = format!("a=b; {COOKIE}={}", s.issue(Role::Read, 0));
        h.insert(header::COOKIE, HeaderValue::from_str(&cookie).unwrap());
        assert_eq!(s.caller(&tokens, &h, 1), Caller::Reader(Role::Read));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer nope"),
        );
        assert_eq!(s.caller(&tokens, &h, 1), Caller::WrongToken);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer send-token-0123456789"),
        );
        assert_eq!(s.caller(&tokens, &h, 1), Caller::NotAllowed(Role::Send));
        assert!(s.set_cookie("x").contains("; Secure"));
        assert!(s.set_cookie("x").contains("HttpOnly; SameSite=Strict"));
    }

    #[test]
    fn cross_site_posts_are_told_apart() {
        let mut h = HeaderMap::new();
        assert!(same_origin(&h));
        h.insert("host", HeaderValue::from_static("127.0.0.1:3000"));
        h.insert("origin", HeaderValue::from_static("http://127.0.0.1:3000"));
        assert!(same_origin(&h));
        h.insert("origin", HeaderValue::from_static("https://evil.example"));
        assert!(!same_origin(&h));
        h.insert("origin", HeaderValue::from_static("null"));
        assert!(!same_origin(&h));
        h.insert("sec-fetch-site", HeaderValue::from_static("same-origin"));
        assert!(same_origin(&h), "fetch metadata first: Origin may be null");
        h.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(!same_origin(&h));
    }
}
