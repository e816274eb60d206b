//! cron-parser 5's search for the next run, step by step: jumps to the nearest allowed value,
//! DST start/end bookkeeping on the date, the 10 000-step limit.

use super::{DAYS_IN_MONTH, Expr, LOOP_LIMIT, NoNext};
use crate::cron::js::{member, parse_int};
use crate::cron::luxon::{DateTime, Unit, Zone, is_leap};

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
pub(crate) fn next(
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
