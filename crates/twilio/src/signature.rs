//! `X-Twilio-Signature`: base64(HMAC-SHA1(auth token, URL + Σ sorted(name + value))), computed
//! over the public URL Twilio called. Used by the simulator to sign status
//! callbacks and by the webhook to check them.

use base64::Engine;
use hmac::{KeyInit, Mac};

type HmacSha1 = hmac::Hmac<sha1::Sha1>;

/// Sign a form-encoded POST: `params` are the decoded form fields as received.
pub fn sign(auth_token: &str, url: &str, params: &[(String, String)]) -> String {
    let mut names: Vec<&str> = params.iter().map(|(k, _)| k.as_str()).collect();
    names.sort_unstable_by(|a, b| utf16_order(a, b));
    names.dedup();
    // HMAC-SHA1 accepts any key length, so this cannot fail.
    let mut mac =
        HmacSha1::new_from_slice(auth_token.as_bytes()).expect("HMAC takes any key length");
    mac.update(url.as_bytes());
    for name in names {
        // Multi-valued fields: each distinct value, sorted (as the official SDK does).
        let mut values: Vec<&str> = params
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect();
        values.sort_unstable_by(|a, b| utf16_order(a, b));
        values.dedup();
        for v in values {
            mac.update(name.as_bytes());
            mac.update(v.as_bytes());
        }
    }
    base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
}

/// JavaScript's default sort order (UTF-16 code units), which Twilio's SDKs sign with; it differs
/// from Rust's code-point order for characters outside the Basic Multilingual Plane.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Check a signature against every URL form Twilio's SDKs accept for the URL received (see
/// [`url_variants`]). Comparison is constant-time.
pub fn verify(auth_token: &str, url: &str, params: &[(String, String)], signature: &str) -> bool {
    url_variants(url).iter().any(|candidate| {
        constant_time_eq(
            sign(auth_token, candidate, params).as_bytes(),
            signature.as_bytes(),
        )
    })
}

/// The URL forms the official SDK validates a received URL as: without the
/// fragment; as received, with its port removed (any port: the SDK's `removePort`), or with the
/// scheme's default port added when it has none; each also with the apostrophes a WHATWG URL
/// parser escapes.
pub fn url_variants(url: &str) -> Vec<String> {
    let url = url.split('#').next().unwrap_or(url);
    let mut bases = vec![url.to_string()];
    if url.contains('\'') {
        bases.push(url.replace('\'', "%27"));
    }
    let mut out = vec![];
    for base in bases {
        for form in port_forms(&base) {
            if !out.contains(&form) {
                out.push(form);
            }
        }
    }
    out
}

/// `url`, and `url` without its port if it has one, or with the default port if it has none.
fn port_forms(url: &str) -> Vec<String> {
    let mut out = vec![url.to_string()];
    let Some((scheme, rest)) = url.split_once("://") else {
        return out;
    };
    let default_port = match scheme {
        "https" => "443",
        "http" => "80",
        _ => return out,
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let userinfo = &authority[..authority.len() - host.len()];
    match host.rsplit_once(':') {
        // an explicit port (IPv6 literals end with ']' when they carry none): also try without
        Some((h, port)) if !host.ends_with(']') && port.chars().all(|c| c.is_ascii_digit()) => {
            out.push(format!("{scheme}://{userinfo}{h}{tail}"))
        }
        // no port: also try with the scheme's default one
        _ => out.push(format!("{scheme}://{userinfo}{host}:{default_port}{tail}")),
    }
    out
}

/// Equal-length inputs are compared without an early exit.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn docs_params() -> Vec<(String, String)> {
        p(&[
            ("CallSid", "CA1234567890ABCDE"),
            ("Caller", "+12349013030"),
            ("Digits", "1234"),
            ("From", "+12349013030"),
            ("To", "+18005551212"),
        ])
    }

    #[test]
    fn twilio_docs_vector() {
        let url = "https://mycompany.com/myapp.php?foo=1&bar=2";
        assert_eq!(
            sign("12345", url, &docs_params()),
            "0/KCTR6DLpKmkAf8muzZqo1nDgQ="
        );
        assert_eq!(
            sign(
                "12345",
                "https://mycompany.com:443/myapp.php?foo=1&bar=2",
                &docs_params()
            ),
            "EpDEmp1PyjDYp77YxYU3GILBWzE="
        );
    }

    #[test]
    fn status_callback_vector() {
        let params = p(&[
            ("AccountSid", "ACaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            ("ApiVersion", "2010-04-01"),
            ("From", "+15017122661"),
            ("MessageSid", "SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            ("MessageStatus", "delivered"),
            ("SmsSid", "SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
            ("SmsStatus", "delivered"),
            ("To", "+15558675310"),
        ]);
        assert_eq!(
            sign(
                "test_auth_token",
                "https://example.com/twilio/status?tenant=42",
                &params
            ),
            "n2LfpDa/ct6gz3IZHOggxBVE/NI="
        );
    }

    #[test]
    fn verify_tolerates_default_port_both_ways_but_not_http() {
        let sig = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
        assert!(verify(
            "12345",
            "https://mycompany.com/myapp.php?foo=1&bar=2",
            &docs_params(),
            sig
        ));
        assert!(verify(
            "12345",
            "https://mycompany.com:443/myapp.php?foo=1&bar=2",
            &docs_params(),
            sig
        ));
        assert!(!verify(
            "12345",
            "http://mycompany.com/myapp.php?foo=1&bar=2",
            &docs_params(),
            sig
        ));
        assert!(!verify(
            "12346",
            "https://mycompany.com/myapp.php?foo=1&bar=2",
            &docs_params(),
            sig
        ));
        let with_port = "EpDEmp1PyjDYp77YxYU3GILBWzE=";
        assert!(verify(
            "12345",
            "https://mycompany.com/myapp.php?foo=1&bar=2",
            &docs_params(),
            with_port
        ));
    }

    #[test]
    fn url_variants_follow_the_sdk() {
        assert_eq!(
            url_variants("https://a.com/x?y=1#rc=5"),
            vec!["https://a.com/x?y=1", "https://a.com:443/x?y=1"]
        );
        assert_eq!(
            url_variants("http://a.com:80/x"),
            vec!["http://a.com:80/x", "http://a.com/x"]
        );
        assert_eq!(
            url_variants("http://127.0.0.1:3000/x"),
            vec!["http://127.0.0.1:3000/x", "http://127.0.0.1/x"]
        );
        assert!(
            url_variants("https://a.com/cb?n=O'Brien")
                .contains(&"https://a.com/cb?n=O%27Brien".to_string())
        );
    }
}
