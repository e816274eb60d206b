//! cron-parser 5.x (shipped with bullmq 6.x): its parsing and validation, and its search for the
//! next run step by step (jumps to the nearest allowed value, DST start/end bookkeeping on the
//! date, the 10 000-step limit), so the instant found and the patterns refused match Node's.

use crate::cron::js::{Val, num_str};

mod next;
mod parse;

pub(super) use next::next;
use parse::last_char_value;
pub(super) use parse::parse;

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
pub(super) struct CronField {
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

/// A parsed expression.
#[derive(Debug, Clone)]
pub(super) struct Expr {
    second: CronField,
    minute: CronField,
    hour: CronField,
    dom: CronField,
    month: CronField,
    dow: CronField,
    nth: f64,
}

/// Why `next()` threw (BullMQ then creates no next run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum NoNext {
    OutOfRange,
    LoopLimit,
}
