//! cron-parser 5's parsing and validation: fields, ranges, steps, hashes (`H`), `L` and `#`,
//! so the patterns refused are Node's.

use super::{CronField, DAYS_IN_MONTH, Expr, Field, MAX_FIELD_VALUES};
use crate::cron::js::{self, Val, num_str, parse_int, to_number};

/// `/^\d{0,2}L$/`
pub(super) fn last_char_value(s: &str) -> bool {
    let Some(digits) = s.strip_suffix('L') else {
        return false;
    };
    digits.len() <= 2 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// cron-parser 5's `validChars`: only the field's characters, or anything around a
/// `H(a-b)` or `H/n` hash.
fn valid_chars(f: Field, v: &str) -> bool {
    let plain = !v.is_empty()
        && v.bytes().all(|b| {
            b.is_ascii_digit()
                || matches!(b, b'?' | b',' | b'*' | b'/' | b'-' | b'H')
                || (matches!(f, Field::DayOfMonth | Field::DayOfWeek) && b == b'L')
                || (f == Field::DayOfWeek && b == b'#')
        });
    plain
        || v.char_indices().any(|(i, c)| {
            c == 'H' && {
                let rest = &v[i + 1..];
                hash_range(rest).is_some() || hash_step(rest).is_some()
            }
        })
}

/// `(\d+-\d+)` at the start of `s`: (min, max, length).
fn hash_range(s: &str) -> Option<(f64, f64, usize)> {
    let inner = s.strip_prefix('(')?;
    let a = inner.bytes().take_while(u8::is_ascii_digit).count();
    if a == 0 || inner.as_bytes().get(a) != Some(&b'-') {
        return None;
    }
    let rest = &inner[a + 1..];
    let b = rest.bytes().take_while(u8::is_ascii_digit).count();
    if b == 0 || rest.as_bytes().get(b) != Some(&b')') {
        return None;
    }
    Some((
        parse_int(&inner[..a]),
        parse_int(&rest[..b]),
        1 + a + 1 + b + 1,
    ))
}

/// `/\d+` at the start of `s`: (step, length).
fn hash_step(s: &str) -> Option<(f64, usize)> {
    let rest = s.strip_prefix('/')?;
    let n = rest.bytes().take_while(u8::is_ascii_digit).count();
    (n > 0).then(|| (parse_int(&rest[..n]), 1 + n))
}

/// cron-parser 5's seeded random: mulberry32 seeded by xfnv1a of the seed, or a random seed.
pub(super) struct SeededRandom(u32);

impl SeededRandom {
    pub(super) fn new(seed: Option<&str>) -> SeededRandom {
        match seed {
            Some(s) if !s.is_empty() => {
                let mut h: u32 = 2_166_136_261;
                for unit in s.encode_utf16() {
                    h ^= u32::from(unit);
                    h = h.wrapping_mul(16_777_619);
                }
                SeededRandom(h)
            }
            _ => SeededRandom((rand::random::<f64>() * 10_000_000_000.0) as u64 as u32),
        }
    }

    fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x6d2b_79f5);
        let mut t = self.0;
        t = (t ^ (t >> 15)).wrapping_mul(t | 1);
        t ^= t.wrapping_add((t ^ (t >> 7)).wrapping_mul(t | 61));
        f64::from(t ^ (t >> 14)) / 4_294_967_296.0
    }
}

fn field_name(f: Field) -> &'static str {
    match f {
        Field::Second => "second",
        Field::Minute => "minute",
        Field::Hour => "hour",
        Field::DayOfMonth => "dayOfMonth",
        Field::Month => "month",
        Field::DayOfWeek => "dayOfWeek",
    }
}

fn hashed_value(rv: f64, min: f64, max: f64) -> f64 {
    (rv * (max - min + 1.0)).floor() + min
}

fn hashed_step(rv: f64, min: f64, max: f64, step: f64) -> String {
    let offset = (rv * step).floor();
    let mut values = Vec::new();
    let mut i = (min / step).floor() * step + offset;
    while i <= max {
        if i >= min {
            values.push(num_str(i));
        }
        i += step;
    }
    if values.is_empty() {
        return num_str(hashed_value(rv, min, max));
    }
    values.join(",")
}

/// `#parseHashed`: replace each `H`, `H(a-b)`, `H/n`, `H(a-b)/n` with values from `rv`.
fn parse_hashed(f: Field, value: &str, rv: f64) -> Result<String, String> {
    let (cmin, cmax, _) = f.bounds();
    let too_many = |count: f64| {
        (count > MAX_FIELD_VALUES as f64).then(|| {
            format!(
                "Constraint error, too many values in {} field, expected at most {MAX_FIELD_VALUES}",
                f.unit_name()
            )
        })
    };
    let range = |min: f64, max: f64| -> Result<(f64, f64), String> {
        if min > max {
            return Err(format!(
                "Invalid range: {}-{}, min > max",
                num_str(min),
                num_str(max)
            ));
        }
        let (lo, hi) = (min.max(cmin), max.min(cmax));
        if lo > hi {
            return Err(format!(
                "Invalid range: {}-{}, no usable value in the {} field",
                num_str(min),
                num_str(max),
                field_name(f)
            ));
        }
        Ok((lo, hi))
    };
    let mut out = String::new();
    let mut count = 0.0;
    let mut rest = value;
    while let Some(i) = rest.find('H') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let r = hash_range(after);
        let after_range = r.map_or(after, |(_, _, n)| &after[n..]);
        let s = hash_step(after_range);
        let (replacement, used) = match (r, s) {
            (Some((a, b, n)), Some((step, m))) => {
                if step <= 0.0 {
                    return Err(format!("Invalid step: {}, must be positive", num_str(step)));
                }
                let (lo, hi) = range(a, b)?;
                count += ((hi - lo + 1.0) / step).ceil();
                if let Some(e) = too_many(count) {
                    return Err(e);
                }
                (hashed_step(rv, lo, hi, step), n + m)
            }
            (Some((a, b, n)), None) => {
                let (lo, hi) = range(a, b)?;
                (num_str(hashed_value(rv, lo, hi)), n)
            }
            (None, Some((step, m))) => {
                if step <= 0.0 {
                    return Err(format!("Invalid step: {}, must be positive", num_str(step)));
                }
                count += ((cmax - cmin + 1.0) / step).ceil();
                if let Some(e) = too_many(count) {
                    return Err(e);
                }
                (hashed_step(rv, cmin, cmax, step), m)
            }
            (None, None) => (num_str(hashed_value(rv, cmin, cmax)), 0),
        };
        out.push_str(&replacement);
        rest = &after[used..];
    }
    out.push_str(rest);
    Ok(out)
}

enum Parsed {
    List(Vec<f64>),
    Scalar(Val),
}

fn parse_range(f: Field, val: &str, interval: f64) -> Result<Parsed, String> {
    let (cmin, cmax, _) = f.bounds();
    let atoms: Vec<&str> = val.split('-').collect();
    if atoms.len() <= 1 {
        let n = to_number(val);
        return Ok(Parsed::Scalar(if n.is_nan() {
            Val::S(val.to_string())
        } else {
            Val::N(n)
        }));
    }
    let min = parse_int(atoms[0]);
    let max = parse_int(atoms[1]);
    if min.is_nan() || max.is_nan() || min < cmin || max > cmax {
        return Err(format!(
            "Constraint error, got range {}-{} expected range {}-{}",
            num_str(min),
            num_str(max),
            num_str(cmin),
            num_str(cmax)
        ));
    }
    if min > max {
        return Err(format!(
            "Invalid range: {}-{}, min({}) > max({})",
            num_str(min),
            num_str(max),
            num_str(min),
            num_str(max)
        ));
    }
    if interval.is_nan() || interval <= 0.0 {
        return Err(format!(
            "Constraint error, cannot repeat at every {} time.",
            num_str(interval)
        ));
    }
    let mut stack = Vec::new();
    if f == Field::DayOfWeek && max % 7.0 == 0.0 && (max - min) % interval == 0.0 {
        stack.push(0.0);
    }
    let mut index = min;
    while index <= max {
        if !stack.contains(&index) {
            stack.push(index);
        }
        index += interval;
    }
    Ok(Parsed::List(stack))
}

fn parse_repeat(f: Field, val: &str) -> Result<Parsed, String> {
    let atoms: Vec<&str> = val.split('/').collect();
    if atoms.len() > 2 {
        return Err(format!("Invalid repeat: {val}"));
    }
    if atoms.len() == 2 {
        let first = if atoms[0].contains('-') {
            atoms[0].to_string()
        } else {
            format!("{}-{}", atoms[0], num_str(f.bounds().1))
        };
        return parse_range(f, &first, parse_int(atoms[1]));
    }
    parse_range(f, val, 1.0)
}

fn parse_field(f: Field, value: &str, rand: &mut SeededRandom) -> Result<Vec<Val>, String> {
    let (min, max, l) = f.bounds();
    let value = if matches!(f, Field::Month | Field::DayOfWeek) {
        js::replace_aliases(value, |w| js::month_alias(w).or_else(|| js::day_alias(w)))?
    } else {
        value.to_string()
    };
    if !valid_chars(f, &value) {
        return Err(format!("Invalid characters, got value: {value}"));
    }
    let range = format!("{}-{}", num_str(min), num_str(max));
    let value = value.replace(['*', '?'], &range);
    let rv = rand.next();
    let value = parse_hashed(f, &value, rv)?;
    let mut stack: Vec<Val> = Vec::new();
    for atom in value.split(',') {
        if stack.len() > MAX_FIELD_VALUES {
            return Err(format!(
                "Constraint error, too many values in {} field, expected at most {MAX_FIELD_VALUES}",
                f.unit_name()
            ));
        }
        if atom.is_empty() {
            return Err("Invalid list value format".into());
        }
        match parse_repeat(f, atom)? {
            Parsed::List(list) => stack.extend(list.into_iter().map(Val::N)),
            Parsed::Scalar(v) => {
                if l && v.js().contains('L') {
                    stack.push(v);
                    continue;
                }
                let n = parse_int(&v.js());
                if !(n >= min && n <= max) {
                    return Err(format!(
                        "Constraint error, got value {} expected range {}-{}",
                        v.js(),
                        num_str(min),
                        num_str(max)
                    ));
                }
                stack.push(if f == Field::DayOfWeek {
                    Val::N(n % 7.0)
                } else {
                    v
                });
            }
        }
    }
    Ok(stack)
}

fn parse_nth_day(val: &str) -> Result<(String, f64), String> {
    let atoms: Vec<&str> = val.split('#').collect();
    if atoms.len() <= 1 {
        return Ok((val.to_string(), 0.0));
    }
    let nth = to_number(atoms[atoms.len() - 1]);
    if let Some(ch) = val.chars().find(|c| matches!(c, ',' | '-' | '/')) {
        return Err(format!(
            "Constraint error, invalid dayOfWeek `#` and `{ch}` special characters are incompatible"
        ));
    }
    if !(atoms.len() <= 2 && !nth.is_nan() && (1.0..=5.0).contains(&nth)) {
        return Err("Constraint error, invalid dayOfWeek occurrence number (#)".into());
    }
    Ok((atoms[0].to_string(), nth))
}

/// `CronExpressionParser.parse` (not strict; `H` values from `hash_seed`, random without one):
/// the fields, or Node's error.
pub(crate) fn parse(expression: &str, hash_seed: Option<&str>) -> Result<Expr, String> {
    let mut rand = SeededRandom::new(hash_seed);
    let expression = match expression {
        "@yearly" | "@annually" => "0 0 0 1 1 *",
        "@monthly" => "0 0 0 1 * *",
        "@weekly" => "0 0 0 * * 0",
        "@daily" => "0 0 0 * * *",
        "@hourly" => "0 0 * * * *",
        "@minutely" => "0 * * * * *",
        "@secondly" => "* * * * * *",
        "@weekdays" => "0 0 0 * * 1-5",
        "@weekends" => "0 0 0 * * 0,6",
        "" => "0 * * * * *",
        other => other,
    };
    if expression.encode_utf16().count() > 1024 {
        return Err("Invalid cron expression, too long, expected at most 1024 characters".into());
    }
    let mut atoms = js::split_ws(expression);
    if atoms.len() > 6 {
        return Err("Invalid cron expression, too many fields".into());
    }
    let defaults = ["0", "*", "*", "*", "*", "*"];
    while atoms.len() < 6 {
        atoms.insert(0, defaults[5 - atoms.len()]);
    }
    // the defaults fill from the front: the k missing fields get defaults[0..k]
    let raw: Vec<&str> = atoms;
    let second = parse_field(Field::Second, raw[0], &mut rand)?;
    let minute = parse_field(Field::Minute, raw[1], &mut rand)?;
    let hour = parse_field(Field::Hour, raw[2], &mut rand)?;
    let month = parse_field(Field::Month, raw[4], &mut rand)?;
    let dom = parse_field(Field::DayOfMonth, raw[3], &mut rand)?;
    let (dow_raw, nth) = parse_nth_day(raw[5])?;
    let dow = parse_field(Field::DayOfWeek, &dow_raw, &mut rand)?;

    let second = CronField::new(Field::Second, second, raw[0])?;
    let minute = CronField::new(Field::Minute, minute, raw[1])?;
    let hour = CronField::new(Field::Hour, hour, raw[2])?;
    let dom = if month.len() == 1 {
        let dim = DAYS_IN_MONTH[(month[0].num().unwrap_or(1.0) as usize).clamp(1, 12) - 1] as f64;
        let days: Vec<Val> = dom
            .iter()
            .filter(|v| !matches!(v, Val::N(n) if *n > dim))
            .cloned()
            .collect();
        CronField::new(
            Field::DayOfMonth,
            if days.is_empty() { dom } else { days },
            raw[3],
        )?
    } else {
        CronField::new(Field::DayOfMonth, dom, raw[3])?
    };
    let month = CronField::new(Field::Month, month, raw[4])?;
    let dow = CronField::new(Field::DayOfWeek, dow, raw[5])?;
    if month.values.len() == 1 && !dom.has_last && dow.wildcard {
        let first = dom
            .values
            .first()
            .map(|v| parse_int(&v.js()))
            .unwrap_or(f64::NAN);
        let dim = DAYS_IN_MONTH[(month.first_num() as usize).clamp(1, 12) - 1] as f64;
        // NaN (no number first) fails the comparison too, as in JavaScript
        if first.is_nan() || first > dim {
            return Err("Invalid explicit day of month definition".into());
        }
    }
    Ok(Expr {
        second,
        minute,
        hour,
        dom,
        month,
        dow,
        nth,
    })
}
