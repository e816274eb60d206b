//! The JavaScript coercions cron-parser's parsing relies on (`+str`, `parseInt`, number to
//! string), and the value a parsed field holds (a number, or a string such as `L` or `5L`).

use std::cmp::Ordering;

/// JavaScript `Number(str)` for the strings a cron field can hold (no whitespace inside).
pub(super) fn to_number(s: &str) -> f64 {
    let t = s.trim();
    if t.is_empty() {
        return 0.0;
    }
    let (neg, digits) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return f64::NAN;
    }
    if digits.bytes().filter(|&b| b == b'.').count() > 1 || digits == "." {
        return f64::NAN;
    }
    match digits.parse::<f64>() {
        Ok(v) if neg => -v,
        Ok(v) => v,
        Err(_) => f64::NAN,
    }
}

/// JavaScript `parseInt(str, 10)`: leading sign and digits, NaN when there are none.
pub(super) fn parse_int(s: &str) -> f64 {
    let t = s.trim_start();
    let (neg, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = rest.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 {
        return f64::NAN;
    }
    let v: f64 = rest[..end].parse().unwrap_or(f64::NAN);
    if neg { -v } else { v }
}

/// JavaScript's `String(number)` for the numbers in error messages.
pub(super) fn num_str(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if v == v.trunc() && v.abs() < 1e21 {
        format!("{}", v as i128)
    } else {
        format!("{v}")
    }
}

/// One value of a parsed field.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Val {
    N(f64),
    S(String),
}

impl Val {
    pub(super) fn js(&self) -> String {
        match self {
            Val::N(v) => num_str(*v),
            Val::S(s) => s.clone(),
        }
    }

    pub(super) fn num(&self) -> Option<f64> {
        match self {
            Val::N(v) => Some(*v),
            Val::S(_) => None,
        }
    }

    /// cron-parser's sort: numbers ascending, then strings.
    pub(super) fn sort_cmp(a: &Val, b: &Val) -> Ordering {
        match (a, b) {
            (Val::N(x), Val::N(y)) => x.partial_cmp(y).unwrap_or(Ordering::Equal),
            (Val::N(_), Val::S(_)) => Ordering::Less,
            (Val::S(_), Val::N(_)) => Ordering::Greater,
            (Val::S(x), Val::S(y)) => x.cmp(y),
        }
    }
}

/// Whether the number `v` is among the values (strict equality, as `===`).
pub(super) fn member(values: &[Val], v: i64) -> bool {
    values
        .iter()
        .any(|x| matches!(x, Val::N(n) if *n == v as f64))
}

/// Replace three-letter aliases (`jan`, `mon`) left to right, as `/[a-z]{3}/gi` does.
pub(super) fn replace_aliases(
    value: &str,
    lookup: impl Fn(&str) -> Option<i64>,
) -> Result<String, String> {
    let bytes = value.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < bytes.len() {
        if i + 3 <= bytes.len() && bytes[i..i + 3].iter().all(u8::is_ascii_alphabetic) {
            let word = value[i..i + 3].to_ascii_lowercase();
            match lookup(&word) {
                Some(n) => out.push_str(&n.to_string()),
                None => return Err(format!("Validation error, cannot resolve alias \"{word}\"")),
            }
            i += 3;
        } else {
            let ch = value[i..].chars().next().unwrap_or(' ');
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    Ok(out)
}

pub(super) fn month_alias(w: &str) -> Option<i64> {
    let months = [
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    months.iter().position(|m| *m == w).map(|i| i as i64 + 1)
}

pub(super) fn day_alias(w: &str) -> Option<i64> {
    let days = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    days.iter().position(|d| *d == w).map(|i| i as i64)
}

/// JavaScript's `String.prototype.split(/\s+/)` after `trim()`.
pub(super) fn split_ws(s: &str) -> Vec<&str> {
    let t = s.trim_matches(is_js_space);
    if t.is_empty() {
        return vec![""];
    }
    t.split(is_js_space).filter(|p| !p.is_empty()).collect()
}

fn is_js_space(c: char) -> bool {
    c.is_whitespace() || c == '\u{feff}'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coercions_match_javascript() {
        assert_eq!(to_number(""), 0.0);
        assert_eq!(to_number("-5"), -5.0);
        assert!(to_number("1-2").is_nan());
        assert!(to_number("L").is_nan());
        assert_eq!(parse_int("12L"), 12.0);
        assert!(parse_int("").is_nan());
        assert_eq!(num_str(f64::NAN), "NaN");
        assert_eq!(num_str(-59.0), "-59");
    }

    #[test]
    fn aliases_are_replaced_left_to_right() {
        assert_eq!(replace_aliases("mon-fri", day_alias).as_deref(), Ok("1-5"));
        assert!(replace_aliases("mond", day_alias).is_ok());
        assert!(replace_aliases("foo", day_alias).is_err());
    }
}
