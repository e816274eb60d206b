//! Personal data out of logs: phone numbers keep their last four digits, URL passwords are
//! masked (STYLE: numbers, bodies and tokens never appear in logs in full).

/// A phone number for logs and failure reasons: the last 4 digits only.
pub fn mask(number: &str) -> String {
    let n = number.chars().count();
    if n <= 4 {
        "****".into()
    } else {
        format!(
            "{}{}",
            "*".repeat(n - 4),
            number.chars().skip(n - 4).collect::<String>()
        )
    }
}

/// Text for logs with every phone number in it masked (Twilio's messages quote numbers in full:
/// "The 'To' number +15558675310 is not a valid phone number.").
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '+' && chars.peek().is_some_and(|d| d.is_ascii_digit()) {
            let mut number = String::from("+");
            while let Some(d) = chars.peek().copied().filter(char::is_ascii_digit) {
                number.push(d);
                chars.next();
            }
            out.push_str(&mask(&number));
        } else {
            out.push(c);
        }
    }
    out
}

/// A Redis URL for output with its password masked: `redis://user:secret@host` →
/// `redis://user:***@host`; `?pass=` (unix sockets) likewise.
pub fn url(url: &str) -> String {
    let mut out = match (url.find("://"), url.rfind('@')) {
        (Some(s), Some(at)) if at > s => match url[s + 3..at].split_once(':') {
            Some((user, _)) => format!("{}{user}:***{}", &url[..s + 3], &url[at..]),
            None => url.to_string(),
        },
        _ => url.to_string(),
    };
    if let Some(q) = out.find('?') {
        let masked: Vec<String> = out[q + 1..]
            .split('&')
            .map(|kv| match kv.split_once('=') {
                Some((key @ ("pass" | "password"), _)) => format!("{key}=***"),
                _ => kv.to_string(),
            })
            .collect();
        out = format!("{}?{}", &out[..q], masked.join("&"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_numbers() {
        assert_eq!(mask("+15558675310"), "********5310");
        assert_eq!(
            redact("The 'To' number +15558675310 is not a valid phone number. Code +1"),
            "The 'To' number ********5310 is not a valid phone number. Code ****"
        );
    }

    #[test]
    fn masks_url_passwords() {
        assert_eq!(url("redis://:s3cret@h:6379"), "redis://:***@h:6379");
        assert_eq!(url("rediss://u:p@ss@h:1/0"), "rediss://u:***@h:1/0");
        assert_eq!(url("redis://h:6379"), "redis://h:6379");
        assert_eq!(
            url("unix:///r.sock?db=1&pass=s3cret"),
            "unix:///r.sock?db=1&pass=***"
        );
    }
}
