//! JSON text as JavaScript's `JSON.stringify` writes it, for values Node tools read back
//! (`returnvalue`, `progress`). Only numbers differ from serde_json: JavaScript has one number
//! type, so `1.0` is written `1`, `-0` is `0`, integers beyond 2^53 lose their low digits, and
//! very large or small magnitudes use exponent form (`1e+21`, `1e-7`).

use serde_json::{Number, Value};

/// `JSON.stringify(value)`.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write(value, &mut out);
    out
}

fn write(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => {
            out.push_str(&serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into()))
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_else(|_| "\"\"".into()));
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

const SAFE: u64 = 1 << 53;

fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64()
        && i.unsigned_abs() <= SAFE
    {
        return i.to_string();
    }
    if let Some(u) = n.as_u64()
        && u <= SAFE
    {
        return u.to_string();
    }
    js_f64(n.as_f64().unwrap_or(0.0))
}

/// JavaScript's `Number.prototype.toString` for a finite double (NaN and infinities: `null`).
pub fn js_f64(x: f64) -> String {
    if !x.is_finite() {
        return "null".into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let abs = x.abs();
    if !(1e-6..1e21).contains(&abs) {
        let s = format!("{x:e}");
        return match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        };
    }
    // shortest round-trip digits, no exponent: what JavaScript prints in this range
    format!("{x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_as_javascript_writes_them() {
        let v: Value = serde_json::from_str(
            r#"[1, 1.0, -0.0, 1000.0, 0.1, 12345678901234567890, 1e21, 1e-7, 2.5, -3]"#,
        )
        .unwrap();
        assert_eq!(
            stringify(&v),
            "[1,1,0,1000,0.1,12345678901234567000,1e+21,1e-7,2.5,-3]"
        );
    }

    #[test]
    fn numbers_are_read_exactly_as_javascript_reads_them() {
        // found by tests/it/fuzz.rs: without serde_json's `float_roundtrip`, long numbers were read
        // one ulp off and written back differently from JSON.stringify (outputs from node)
        let v: Value = serde_json::from_str(
            "[15558675315315315315315315315315315315315315315315315315315315315315315315315315315315315315315315315315310, \
             0.30000000000000004, 9007199254740993, 1.7976931348623157e308, 5e-324]",
        )
        .unwrap();
        assert_eq!(
            stringify(&v),
            "[1.5558675315315315e+106,0.30000000000000004,9007199254740992,1.7976931348623157e+308,5e-324]"
        );
    }

    #[test]
    fn structure_and_strings_as_serde_writes_them() {
        let v: Value = serde_json::from_str(r#"{"b":"x\"y\n","a":[true,null,{"é":"✓"}]}"#).unwrap();
        assert_eq!(stringify(&v), r#"{"b":"x\"y\n","a":[true,null,{"é":"✓"}]}"#);
    }
}
