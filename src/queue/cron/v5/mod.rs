//! cron-parser 5.x (shipped with bullmq 6.x): its parsing and validation, and its search for the
//! next run step by step (jumps to the nearest allowed value, DST start/end bookkeeping on the
//! date, the 10 000-step limit), so the instant found and the patterns refused match Node's.

use super::js::{self, Val, member, num_str, parse_int, to_number};
use super::luxon::{DateTime, Unit, Zone, is_leap};

const LOOP_LIMIT: u32 = 10_000;
const DAYS_IN_MONTH: [i64; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const MAX_FIELD_VALUES: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    fn bounds(self) -> (f64, f64, bool) {
        match self {
            Field::Second | Field::Minute => (0.0, 59.0, false),
            Field::Hour => (0.0, 23.0, false),
            Field::DayOfMonth => (1.0, 31.0, true),
            Field::Month => (1.0, 12.0, false),
            Field::DayOfWeek => (0.0, 7.0, true),
        }
    }
    fn unit_name(self) -> &'static str {
        match self {
            Field::Second => "Second",
            Field::Minute => "Minute",
            Field::Hour => "Hour",
            Field::DayOfMonth => "DayOfMonth",
            Field::Month => "Month",
            Field::DayOfWeek => "DayOfWeek",
        }
    }
    fn class_name(self) -> &'static str {
        match self {
            Field::Second => "CronSecond",
            Field::Minute => "CronMinute",
            Field::Hour => "CronHour",
            Field::DayOfMonth => "CronDayOfMonth",
            Field::Month => "CronMonth",
            Field::DayOfWeek => "CronDayOfWeek",
        }
    }
}

/// A parsed field: its sorted values, whether it is a wildcard, whether it uses `L`.
#[derive(Debug, Clone)]
pub struct CronField {
    values: Vec<Val>,
    wildcard: bool,
    has_last: bool,
}

impl CronField {
    fn new(f: Field, mut values: Vec<Val>, raw: &str) -> Result<CronField, String> {
        if values.is_empty() {
            return Err(format!(
                "{} Validation error, values contains no values",
                f.class_name()
            ));
        }
        values.sort_by(Val::sort_cmp);
        let wildcard = raw == "*" || raw == "?";
        let has_last =
            raw.contains('L') || values.iter().any(|v| matches!(v, Val::S(s) if s == "L"));
        let (min, max, l) = f.bounds();
        for v in &values {
            let ok = match v {
                Val::N(n) => *n >= min && *n <= max,
                Val::S(s) => l && last_char_value(s),
            };
            if !ok {
                let chars = if l { " or chars L" } else { "" };
                return Err(format!(
                    "{} Validation error, got value {} expected range {}-{}{chars}",
                    f.class_name(),
                    v.js(),
                    num_str(min),
                    num_str(max)
                ));
            }
        }
        for (i, v) in values.iter().enumerate() {
            if values.iter().position(|x| x == v) != Some(i) {
                return Err(format!(
                    "{} Validation error, duplicate values found: {}",
                    f.class_name(),
                    v.js()
                ));
            }
        }
        if f == Field::DayOfWeek && values.iter().any(|v| matches!(v, Val::S(s) if s == "L")) {
            return Err("CronDayOfWeek Validation error, unexpected standalone L".into());
        }
        Ok(CronField {
            values,
            wildcard,
            has_last,
        })
    }

    /// `findNearestValue` forward: the first value above `current`.
    fn nearest_after(&self, current: i64) -> Option<i64> {
        self.values.iter().find_map(|v| match v {
            Val::N(n) if *n > current as f64 => Some(*n as i64),
            _ => None,
        })
    }

    fn first_num(&self) -> i64 {
        match self.values.first() {
            Some(Val::N(n)) => *n as i64,
            _ => 0,
        }
    }
}

/// `/^\d{0,2}L$/`
fn last_char_value(s: &str) -> bool {
    let Some(digits) = s.strip_suffix('L') else {
        return false;
    };
    digits.len() <= 2 && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A parsed expression.
#[derive(Debug, Clone)]
pub struct Expr {
    second: CronField,
    minute: CronField,
    hour: CronField,
    dom: CronField,
    month: CronField,
    dow: CronField,
    nth: f64,
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
pub struct SeededRandom(u32);

impl SeededRandom {
    pub fn new(seed: Option<&str>) -> SeededRandom {
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
pub fn parse(expression: &str, hash_seed: Option<&str>) -> Result<Expr, String> {
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

/// Why `next()` threw (BullMQ then creates no next run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoNext {
    OutOfRange,
    LoopLimit,
}

/// cron-parser 5's `CronDate`: a luxon date plus its DST bookkeeping.
struct CronDate {
    d: DateTime,
    dst_start: Option<i64>,
    dst_landing: Option<i64>,
    dst_end: Option<i64>,
}

impl CronDate {
    fn invoke(&mut self, unit: Unit) {
        self.d = match unit {
            Unit::Month => self.d.plus_calendar(1, 0).start_of(Unit::Month),
            Unit::Day => self.d.plus_calendar(0, 1).start_of(Unit::Day),
            Unit::Hour => self.d.plus_ms(3_600_000).start_of(Unit::Hour),
            Unit::Minute => self.d.plus_ms(60_000).start_of(Unit::Minute),
            Unit::Second => self.d.plus_ms(1000),
        };
    }

    /// `applyDateOperation(Add, unit, hoursLength)`.
    fn apply(&mut self, unit: Unit, hours_len: usize) {
        if matches!(unit, Unit::Month | Unit::Day) {
            self.invoke(unit);
            return;
        }
        let previous_hour = self.d.hour();
        let previous_offset = self.d.o;
        self.invoke(unit);
        let current_hour = self.d.hour();
        let advance = (current_hour - previous_hour + 24) % 24;
        if self.d.o > previous_offset && advance >= 2 {
            if hours_len != 24 {
                self.dst_start = Some((previous_hour + 1) % 24);
                self.dst_landing = Some(current_hour);
            }
        } else if advance == 0 && self.d.minute() == 0 && self.d.second() == 0 && hours_len != 24 {
            self.dst_end = Some(current_hour);
        }
    }

    fn set_hms(&mut self, h: Option<i64>, m: Option<i64>, s: Option<i64>) {
        if let Some(h) = h {
            self.d = self.d.set(|c| c.hour = h);
        }
        if let Some(m) = m {
            self.d = self.d.set(|c| c.minute = m);
        }
        if let Some(s) = s {
            self.d = self.d.set(|c| c.second = s);
        }
    }
}

fn last_day_of_month(d: &DateTime) -> i64 {
    let c = d.c();
    if c.month == 2 {
        return if is_leap(c.year) { 29 } else { 28 };
    }
    DAYS_IN_MONTH[(c.month - 1) as usize]
}

struct Search<'a> {
    e: &'a Expr,
    dst_day_key: Option<(i64, i64, i64)>,
    dst_day: bool,
}

impl Search<'_> {
    fn match_day(&self, d: &DateTime) -> bool {
        let e = self.e;
        let c = d.c();
        let dom_wild = e.dom.wildcard;
        let dow_wild = e.dow.wildcard;
        let matched_dom =
            member(&e.dom.values, c.day) || (e.dom.has_last && c.day == last_day_of_month(d));
        let day = d.weekday0();
        let nth_ok = e.nth <= 0.0 || ((c.day as f64) / 7.0).ceil() == e.nth;
        let last_week = c.day > last_day_of_month(d) - 7;
        let matched_dow = (member(&e.dow.values, day) && nth_ok)
            || (e.dow.has_last
                && last_week
                && e.dow.values.iter().any(|v| {
                    let s = v.js();
                    let first = parse_int(&s[..s.chars().next().map_or(0, char::len_utf8)]);
                    day as f64 == first % 7.0
                }));
        (!dom_wild && !dow_wild && (matched_dom || matched_dow))
            || (matched_dom && dow_wild)
            || (dom_wild && !dow_wild && matched_dow)
    }

    fn is_dst_day(&mut self, d: &DateTime) -> bool {
        let c = d.c();
        let key = (c.year, c.month, c.day);
        if self.dst_day_key == Some(key) {
            return self.dst_day;
        }
        let start = d.start_of(Unit::Day);
        let end = d.end_of(Unit::Day);
        self.dst_day_key = Some(key);
        self.dst_day = start.o != end.o;
        self.dst_day
    }

    fn match_hour(&mut self, cd: &mut CronDate) -> bool {
        let e = self.e;
        let hours_len = e.hour.values.len();
        let current = cd.d.hour();
        let is_match = member(&e.hour.values, current);
        let is_dst_end = cd.dst_end == Some(current);
        if let (Some(start), Some(landing)) = (cd.dst_start, cd.dst_landing)
            && landing == current
        {
            let mut skipped = start;
            while skipped != current {
                if member(&e.hour.values, skipped) {
                    return true;
                }
                skipped = (skipped + 1) % 24;
            }
        }
        if is_dst_end {
            cd.dst_end = None;
            cd.apply(Unit::Hour, hours_len);
            return false;
        }
        if is_match {
            return true;
        }
        cd.dst_start = None;
        cd.dst_landing = None;
        let Some(next_hour) = e.hour.nearest_after(current) else {
            cd.apply(Unit::Day, hours_len);
            return false;
        };
        if self.is_dst_day(&cd.d) {
            let steps = next_hour - current;
            for _ in 0..steps {
                cd.apply(Unit::Hour, hours_len);
                if cd.d.hour() >= next_hour {
                    break;
                }
            }
        } else {
            cd.set_hms(Some(next_hour), None, None);
        }
        cd.set_hms(None, Some(e.minute.first_num()), Some(e.second.first_num()));
        false
    }
}

/// `next()` from `current` (ms), with `start`/`end` (ms) bounds, in `zone`.
pub fn next(
    e: &Expr,
    current: i64,
    start: Option<i64>,
    end: Option<i64>,
    zone: &Zone,
) -> Result<i64, NoNext> {
    // the constructor clamps the current date into [start, end]
    let current = match (start, end) {
        (Some(s), _) if current < s => s,
        (_, Some(e)) if current > e => e,
        _ => current,
    };
    let hours_len = e.hour.values.len();
    let mut cd = CronDate {
        d: DateTime::from_millis(current, zone),
        dst_start: None,
        dst_landing: None,
        dst_end: None,
    };
    let start_ts = cd.d.ts;
    if cd.d.millisecond() > 0 {
        cd.d = cd.d.set(|c| c.ms = 0);
        cd.apply(Unit::Second, hours_len);
    }
    let mut s = Search {
        e,
        dst_day_key: None,
        dst_day: false,
    };
    let mut steps = 0;
    loop {
        steps += 1;
        if steps >= LOOP_LIMIT {
            break;
        }
        let ts = cd.d.ts;
        if start.is_some_and(|s| ts < s) || end.is_some_and(|e| ts > e) {
            return Err(NoNext::OutOfRange);
        }
        let c = cd.d.c();
        if !member(&e.month.values, c.month) {
            cd.apply(Unit::Month, hours_len);
            continue;
        }
        if !s.match_day(&cd.d) {
            cd.apply(Unit::Day, hours_len);
            continue;
        }
        if !s.match_hour(&mut cd) {
            continue;
        }
        let c = cd.d.c();
        if !member(&e.minute.values, c.minute) {
            match e.minute.nearest_after(c.minute) {
                Some(m) => cd.set_hms(None, Some(m), Some(e.second.first_num())),
                None => {
                    cd.apply(Unit::Hour, hours_len);
                    cd.set_hms(None, Some(e.minute.first_num()), Some(e.second.first_num()));
                }
            }
            continue;
        }
        if !member(&e.second.values, c.second) {
            match e.second.nearest_after(c.second) {
                Some(sec) => cd.set_hms(None, None, Some(sec)),
                None => {
                    cd.apply(Unit::Minute, hours_len);
                    cd.set_hms(None, None, Some(e.second.first_num()));
                }
            }
            continue;
        }
        if start_ts == cd.d.ts {
            cd.apply(Unit::Second, hours_len);
            continue;
        }
        break;
    }
    if steps >= LOOP_LIMIT {
        return Err(NoNext::LoopLimit);
    }
    Ok(cd.d.ts)
}
