//! cron-parser 4.x (shipped with bullmq 5.x): its parsing, and its search for the next run,
//! step by step as it walks (including its DST bookkeeping and its 10 000-step limit), so
//! the instant found and the patterns refused are the same as in Node.

use super::js::{self, Val, member, num_str, to_number};
use super::luxon::{DateTime, Unit, Zone, days_in_month};

const LOOP_LIMIT: u32 = 10_000;
const DAYS_IN_MONTH: [i64; 12] = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Second,
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

struct Constraint {
    min: f64,
    max: f64,
    l: bool,
}

const FIELDS: [Field; 6] = [
    Field::Second,
    Field::Minute,
    Field::Hour,
    Field::DayOfMonth,
    Field::Month,
    Field::DayOfWeek,
];

fn constraint(f: Field) -> Constraint {
    let (min, max, l) = match f {
        Field::Second | Field::Minute => (0.0, 59.0, false),
        Field::Hour => (0.0, 23.0, false),
        Field::DayOfMonth => (1.0, 31.0, true),
        Field::Month => (1.0, 12.0, false),
        Field::DayOfWeek => (0.0, 7.0, true),
    };
    Constraint { min, max, l }
}

/// A parsed expression.
#[derive(Debug, Clone)]
pub(super) struct Expr {
    second: Vec<Val>,
    minute: Vec<Val>,
    hour: Vec<Val>,
    dom: Vec<Val>,
    month: Vec<Val>,
    dow: Vec<Val>,
    nth: f64,
}

fn valid_chars(f: Field, v: &str) -> bool {
    !v.is_empty()
        && v.bytes().all(|b| {
            b.is_ascii_digit()
                || matches!(b, b',' | b'*' | b'/' | b'-')
                || (matches!(f, Field::DayOfMonth | Field::DayOfWeek) && matches!(b, b'?' | b'L'))
                || (f == Field::DayOfWeek && b == b'#')
        })
}

fn has_l(c: &Constraint, v: &Val) -> bool {
    c.l && matches!(v, Val::S(s) if s.contains('L'))
}

enum Parsed {
    List(Vec<f64>),
    Scalar(Val),
}

fn parse_field(f: Field, value: &str) -> Result<Vec<Val>, String> {
    let c = constraint(f);
    let mut value = match f {
        Field::Month => js::replace_aliases(value, js::month_alias)?,
        Field::DayOfWeek => js::replace_aliases(value, js::day_alias)?,
        _ => value.to_string(),
    };
    if !valid_chars(f, &value) {
        return Err(format!("Invalid characters, got value: {value}"));
    }
    let range = format!("{}-{}", num_str(c.min), num_str(c.max));
    if value.contains('*') {
        value = value.replace('*', &range);
    } else if value.contains('?') {
        value = value.replace('?', &range);
    }

    let parse_range = |val: &str, interval: &str| -> Result<Parsed, String> {
        let atoms: Vec<&str> = val.split('-').collect();
        if atoms.len() > 1 {
            if atoms[0].is_empty() {
                if atoms[1].is_empty() {
                    return Err(format!("Invalid range: {val}"));
                }
                return Ok(Parsed::Scalar(Val::N(to_number(val))));
            }
            let min = to_number(atoms[0]);
            let max = to_number(atoms[1]);
            if min.is_nan() || max.is_nan() || min < c.min || max > c.max {
                return Err(format!(
                    "Constraint error, got range {}-{} expected range {}-{}",
                    num_str(min),
                    num_str(max),
                    num_str(c.min),
                    num_str(c.max)
                ));
            } else if min > max {
                return Err(format!("Invalid range: {val}"));
            }
            let step = to_number(interval);
            let mut repeat_index = step;
            if repeat_index.is_nan() || repeat_index <= 0.0 {
                return Err(format!(
                    "Constraint error, cannot repeat at every {} time.",
                    num_str(repeat_index)
                ));
            }
            let mut stack: Vec<f64> = Vec::new();
            if f == Field::DayOfWeek && max % 7.0 == 0.0 {
                stack.push(0.0);
            }
            let mut index = min;
            while index <= max {
                let exists = stack.contains(&index);
                if !exists && repeat_index > 0.0 && repeat_index % step == 0.0 {
                    repeat_index = 1.0;
                    stack.push(index);
                } else {
                    repeat_index += 1.0;
                }
                index += 1.0;
            }
            return Ok(Parsed::List(stack));
        }
        let n = to_number(val);
        Ok(Parsed::Scalar(if n.is_nan() {
            Val::S(val.to_string())
        } else {
            Val::N(n)
        }))
    };
    let parse_repeat = |val: &str| -> Result<Parsed, String> {
        let atoms: Vec<&str> = val.split('/').collect();
        if atoms.len() > 2 {
            return Err(format!("Invalid repeat: {val}"));
        }
        if atoms.len() > 1 {
            let first = if !to_number(atoms[0]).is_nan() {
                format!("{}-{}", atoms[0], num_str(c.max))
            } else {
                atoms[0].to_string()
            };
            return parse_range(&first, atoms[1]);
        }
        parse_range(val, "1")
    };

    let mut stack: Vec<Val> = Vec::new();
    let atoms: Vec<&str> = value.split(',').collect();
    if atoms.iter().any(|a| a.is_empty()) {
        return Err("Invalid list value format".into());
    }
    for atom in atoms {
        match parse_repeat(atom)? {
            Parsed::List(list) => {
                for v in list {
                    if v.is_nan() || v < c.min || v > c.max {
                        return Err(format!(
                            "Constraint error, got value {} expected range {}-{}",
                            num_str(v),
                            num_str(c.min),
                            num_str(c.max)
                        ));
                    }
                    stack.push(Val::N(v));
                }
            }
            Parsed::Scalar(v) => {
                if has_l(&c, &v) {
                    stack.push(v);
                    continue;
                }
                let n = match &v {
                    Val::N(n) => *n,
                    Val::S(s) => to_number(s),
                };
                if n.is_nan() || n < c.min || n > c.max {
                    return Err(format!(
                        "Constraint error, got value {} expected range {}-{}",
                        v.js(),
                        num_str(c.min),
                        num_str(c.max)
                    ));
                }
                stack.push(Val::N(if f == Field::DayOfWeek { n % 7.0 } else { n }));
            }
        }
    }
    stack.sort_by(Val::sort_cmp);
    Ok(stack)
}

/// The `#` of the day-of-week field: the field without it, and the occurrence (0 = none).
fn parse_nth_day(val: &str) -> Result<(String, f64), String> {
    let atoms: Vec<&str> = val.split('#').collect();
    if atoms.len() > 1 {
        let nth = to_number(atoms[atoms.len() - 1]);
        for (ch, name) in [(',', ","), ('/', "/"), ('-', "-")] {
            if val.contains(ch) {
                return Err(format!(
                    "Constraint error, invalid dayOfWeek `#` and `{name}` special characters are incompatible"
                ));
            }
        }
        if atoms.len() > 2 || nth.is_nan() || !(1.0..=5.0).contains(&nth) {
            return Err("Constraint error, invalid dayOfWeek occurrence number (#)".into());
        }
        return Ok((atoms[0].to_string(), nth));
    }
    Ok((val.to_string(), 0.0))
}

/// `CronExpression.parse`: the fields, or Node's error message.
pub(super) fn parse(expression: &str) -> Result<Expr, String> {
    let expression = match expression {
        "@yearly" => "0 0 1 1 *",
        "@monthly" => "0 0 1 * *",
        "@weekly" => "0 0 * * 0",
        "@daily" => "0 0 * * *",
        "@hourly" => "0 * * * *",
        other => other,
    };
    let atoms = js::split_ws(expression);
    if atoms.len() > 6 {
        return Err("Invalid cron expression".into());
    }
    let defaults = ["0", "*", "*", "*", "*", "*"];
    let start = 6 - atoms.len();
    let mut fields: Vec<Vec<Val>> = Vec::with_capacity(6);
    let mut nth = 0.0;
    for (i, f) in FIELDS.iter().enumerate() {
        let value = if i < start { "" } else { atoms[i - start] };
        if value.is_empty() {
            fields.push(parse_field(*f, defaults[i])?);
        } else if *f == Field::DayOfWeek {
            let (v, n) = parse_nth_day(value)?;
            if n != 0.0 {
                nth = n;
            }
            fields.push(parse_field(*f, &v)?);
        } else {
            fields.push(parse_field(*f, value)?);
        }
    }
    let dow = fields.pop().unwrap_or_default();
    let month = fields.pop().unwrap_or_default();
    let mut dom = fields.pop().unwrap_or_default();
    let hour = fields.pop().unwrap_or_default();
    let minute = fields.pop().unwrap_or_default();
    let second = fields.pop().unwrap_or_default();
    // _handleMaxDaysInMonth
    if month.len() == 1 {
        let m = month[0].num().unwrap_or(1.0) as usize;
        let dim = DAYS_IN_MONTH[m.clamp(1, 12) - 1] as f64;
        if matches!(dom.first(), Some(Val::N(d)) if *d > dim) {
            return Err("Invalid explicit day of month definition".into());
        }
        dom.retain(|d| match d {
            Val::S(s) => s == "L",
            Val::N(n) => *n <= dim,
        });
        dom.sort_by(Val::sort_cmp);
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
pub(super) enum NoNext {
    OutOfRange,
    LoopLimit,
    BadLastWeekday(String),
}

struct Search<'a> {
    e: &'a Expr,
    dst_start: Option<i64>,
    dst_end: Option<i64>,
}

fn add_unit(d: &DateTime, unit: Unit) -> DateTime {
    match unit {
        Unit::Month => d.plus_calendar(1, 0).start_of(Unit::Month),
        Unit::Day => d.plus_calendar(0, 1).start_of(Unit::Day),
        Unit::Hour => {
            let n = d.plus_ms(3_600_000).start_of(Unit::Hour);
            if n.ts <= d.ts {
                n.plus_ms(3_600_000)
            } else {
                n
            }
        }
        Unit::Minute => {
            let n = d.plus_ms(60_000).start_of(Unit::Minute);
            if n.ts < d.ts { n.plus_ms(3_600_000) } else { n }
        }
        Unit::Second => {
            let n = d.plus_ms(1000).start_of(Unit::Second);
            if n.ts < d.ts { n.plus_ms(3_600_000) } else { n }
        }
    }
}

fn subtract_hour(d: &DateTime) -> DateTime {
    let n = d
        .plus_ms(-3_600_000)
        .end_of(Unit::Hour)
        .start_of(Unit::Second);
    if n.ts >= d.ts {
        n.plus_ms(-3_600_000)
    } else {
        n
    }
}

impl Search<'_> {
    fn shift(&mut self, d: &mut DateTime, unit: Unit) {
        if matches!(unit, Unit::Month | Unit::Day) {
            let prev = d.ts;
            *d = add_unit(d, unit);
            if prev == d.ts {
                if d.minute() == 0 && d.second() == 0 {
                    *d = add_unit(d, Unit::Hour);
                } else if d.minute() == 59 && d.second() == 59 {
                    *d = subtract_hour(d);
                }
            }
        } else {
            let previous = d.hour();
            *d = add_unit(d, unit);
            let current = d.hour();
            let diff = current - previous;
            if diff == 2 {
                if self.e.hour.len() != 24 {
                    self.dst_start = Some(current);
                }
            } else if diff == 0 && d.minute() == 0 && d.second() == 0 && self.e.hour.len() != 24 {
                self.dst_end = Some(current);
            }
        }
    }
}

fn has_l_in(values: &[Val]) -> bool {
    values
        .iter()
        .any(|v| matches!(v, Val::S(s) if s.contains('L')))
}

fn nth_day_match(d: &DateTime, nth: f64) -> bool {
    if nth < 6.0 {
        let date = d.day();
        if date < 8 && nth == 1.0 {
            return true;
        }
        let offset = if date % 7 != 0 { 1 } else { 0 };
        let adjusted = date - date % 7;
        return (adjusted / 7 + offset) as f64 == nth;
    }
    false
}

fn last_weekday_match(values: &[Val], d: &DateTime) -> Result<bool, NoNext> {
    for v in values {
        let Val::S(s) = v else { continue };
        if !s.contains('L') {
            continue;
        }
        let first = js::parse_int(&s[..s.chars().next().map_or(0, char::len_utf8)]);
        if first.is_nan() {
            return Err(NoNext::BadLastWeekday(format!(
                "Invalid last weekday of the month expression: {s}"
            )));
        }
        let weekday = (first % 7.0) as i64;
        let last_week = d.day() + 7 > days_in_month(d.year(), d.month());
        if d.weekday0() == weekday && last_week {
            return Ok(true);
        }
    }
    Ok(false)
}

/// `next()` from `current` (an instant in ms) within `end` (ms, when given) in `zone`.
pub(super) fn next(e: &Expr, current: i64, end: Option<i64>, zone: &Zone) -> Result<i64, NoNext> {
    let mut d = DateTime::from_millis(current, zone);
    let start_ts = d.ts;
    let mut s = Search {
        e,
        dst_start: None,
        dst_end: None,
    };
    let mut steps = 0;
    while steps < LOOP_LIMIT {
        steps += 1;
        if let Some(end) = end
            && end - d.ts < 0
        {
            return Err(NoNext::OutOfRange);
        }
        let c = d.c();
        let mut dom_match = member(&e.dom, c.day);
        if has_l_in(&e.dom) {
            dom_match = dom_match || c.day == days_in_month(c.year, c.month);
        }
        let mut dow_match = member(&e.dow, d.weekday0());
        if has_l_in(&e.dow) && !dow_match {
            dow_match = last_weekday_match(&e.dow, &d)?;
        }
        let dom_wild = e.dom.len() as i64 >= DAYS_IN_MONTH[(c.month - 1) as usize];
        let dow_wild = e.dow.len() == 8;
        let hour = c.hour;
        if !dom_match && (!dow_match || dow_wild) {
            s.shift(&mut d, Unit::Day);
            continue;
        }
        if !dom_wild && dow_wild && !dom_match {
            s.shift(&mut d, Unit::Day);
            continue;
        }
        if dom_wild && !dow_wild && !dow_match {
            s.shift(&mut d, Unit::Day);
            continue;
        }
        if e.nth > 0.0 && !nth_day_match(&d, e.nth) {
            s.shift(&mut d, Unit::Day);
            continue;
        }
        if !member(&e.month, c.month) {
            s.shift(&mut d, Unit::Month);
            continue;
        }
        if !member(&e.hour, hour) {
            if s.dst_start != Some(hour) {
                s.dst_start = None;
                s.shift(&mut d, Unit::Hour);
                continue;
            } else if !member(&e.hour, hour - 1) {
                d = add_unit(&d, Unit::Hour);
                continue;
            }
        } else if s.dst_end == Some(hour) {
            s.dst_end = None;
            s.shift(&mut d, Unit::Hour);
            continue;
        }
        if !member(&e.minute, c.minute) {
            s.shift(&mut d, Unit::Minute);
            continue;
        }
        if !member(&e.second, c.second) {
            s.shift(&mut d, Unit::Second);
            continue;
        }
        if start_ts == d.ts {
            s.shift(&mut d, Unit::Second);
            continue;
        }
        break;
    }
    if steps >= LOOP_LIMIT {
        return Err(NoNext::LoopLimit);
    }
    Ok(d.ts)
}
