//! Date arithmetic as cron-parser does it through luxon: an instant plus the offset it is shown
//! at, calendar steps resolved back to an instant with luxon's offset guess (`fixOffset`), so
//! steps into a DST gap or overlap land on the same instant as in Node.

use jiff::tz::TimeZone;

const MS_PER_DAY: i64 = 86_400_000;

/// A time zone as luxon normalizes one: a fixed offset (`utc`, `UTC+3`) or an IANA zone.
#[derive(Debug, Clone)]
pub enum Zone {
    /// A fixed offset from UTC in seconds (east positive); `utc` and `gmt` are `Fixed(0)`.
    Fixed(i64),
    /// A named IANA zone (`Europe/Paris`), whose offset follows its DST rules.
    Iana(TimeZone),
}

impl Zone {
    /// luxon's `normalizeZone` for a string; `None` when luxon would make the date invalid.
    pub fn from_name(name: &str) -> Option<Zone> {
        let lower = name.to_ascii_lowercase();
        match lower.as_str() {
            "utc" | "gmt" => return Some(Zone::Fixed(0)),
            "local" | "system" | "default" => return Some(Zone::system()),
            _ => {}
        }
        if let Some(offset) = fixed_specifier(&lower) {
            return Some(Zone::Fixed(offset));
        }
        if name.is_empty() {
            return None;
        }
        TimeZone::get(name).ok().map(Zone::Iana)
    }

    /// The zone of this process (the `TZ` variable or /etc/localtime), as Node's local zone.
    pub fn system() -> Zone {
        match TimeZone::try_system() {
            Ok(tz) => Zone::Iana(tz),
            Err(_) => Zone::Fixed(0),
        }
    }

    /// Offset from UTC in seconds at the instant `ts` (ms), as luxon reads it (whole seconds).
    pub fn offset(&self, ts: i64) -> i64 {
        match self {
            Zone::Fixed(o) => *o,
            Zone::Iana(tz) => {
                let secs = ts.div_euclid(1000);
                match jiff::Timestamp::from_second(secs) {
                    Ok(t) => i64::from(tz.to_offset(t).seconds()),
                    Err(_) => 0,
                }
            }
        }
    }
}

/// luxon's `FixedOffsetZone.parseSpecifier`: `utc+5`, `utc-03:30` (lower-cased input).
fn fixed_specifier(lower: &str) -> Option<i64> {
    let rest = lower.strip_prefix("utc")?;
    if rest.is_empty() {
        return Some(0);
    }
    let (sign, rest) = match rest.as_bytes().first()? {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return None,
    };
    let (h, m) = match rest.split_once(':') {
        Some((h, m)) => (h, Some(m)),
        None => (rest, None),
    };
    if h.is_empty() || h.len() > 2 || !h.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let minutes = match m {
        Some(m) if m.len() == 2 && m.bytes().all(|b| b.is_ascii_digit()) => {
            m.parse::<i64>().ok()?
        }
        Some(_) => return None,
        None => 0,
    };
    let hours: i64 = h.parse().ok()?;
    Some(sign * (hours * 3600 + minutes * 60))
}

/// Days from 1970-01-01 to year-month-day (proleptic Gregorian; month 1..=12).
pub fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Whether `y` is a Gregorian leap year (every 4th year, except centuries not divisible by 400).
pub fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

/// luxon's `daysInMonth`, which accepts an overflowing month (13 = January next year).
pub fn days_in_month(year: i64, month: i64) -> i64 {
    let m = (month - 1).rem_euclid(12) + 1;
    let y = year + (month - m) / 12;
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Local calendar fields (JavaScript `Date.UTC` arguments, overflow allowed).
#[derive(Debug, Clone, Copy)]
pub struct Civil {
    /// Calendar year (proleptic Gregorian; astronomical numbering, so 0 is 1 BC).
    pub year: i64,
    /// Month, 1 = January (13 overflows into January of the next year).
    pub month: i64,
    /// Day of the month, 1-based (0 or past the month's end overflows into its neighbours).
    pub day: i64,
    /// Hours, normally 0..=23.
    pub hour: i64,
    /// Minutes, normally 0..=59.
    pub minute: i64,
    /// Seconds, normally 0..=59.
    pub second: i64,
    /// Milliseconds, normally 0..=999.
    pub ms: i64,
}

impl Civil {
    /// `Date.UTC(...)`: every field may overflow into the next.
    fn local_ts(&self) -> i64 {
        let m0 = self.month - 1;
        let year = self.year + m0.div_euclid(12);
        let month = m0.rem_euclid(12) + 1;
        let days = days_from_civil(year, month, 1) + self.day - 1;
        days * MS_PER_DAY
            + self.hour * 3_600_000
            + self.minute * 60_000
            + self.second * 1000
            + self.ms
    }

    fn from_local_ts(local: i64) -> Civil {
        let days = local.div_euclid(MS_PER_DAY);
        let rem = local.rem_euclid(MS_PER_DAY);
        let (year, month, day) = civil_from_days(days);
        Civil {
            year,
            month,
            day,
            hour: rem / 3_600_000,
            minute: rem / 60_000 % 60,
            second: rem / 1000 % 60,
            ms: rem % 1000,
        }
    }
}

/// luxon's `fixOffset`: the instant for local time `local` given an offset guess `o` (seconds).
fn fix_offset(local: i64, o: i64, zone: &Zone) -> (i64, i64) {
    let mut guess = local - o * 1000;
    let o2 = zone.offset(guess);
    if o == o2 {
        return (guess, o);
    }
    guess -= (o2 - o) * 1000;
    let o3 = zone.offset(guess);
    if o2 == o3 {
        return (guess, o2);
    }
    (local - o2.min(o3) * 1000, o2.max(o3))
}

/// The units luxon's `startOf`/`endOf` take here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A calendar month (starts at local midnight on the 1st).
    Month,
    /// A calendar day (starts at local midnight).
    Day,
    /// An hour.
    Hour,
    /// A minute.
    Minute,
    /// A second.
    Second,
}

/// A luxon `DateTime`: an instant (ms) shown at offset `o` (seconds) in `zone`.
#[derive(Debug, Clone)]
pub struct DateTime {
    /// The instant, in ms since the Unix epoch (UTC).
    pub ts: i64,
    /// The offset from UTC the instant is shown at, in seconds (east positive).
    pub o: i64,
    zone: Zone,
}

impl DateTime {
    /// The instant `ts` (ms since the epoch) shown in `zone`, at the offset the zone has then.
    pub fn from_millis(ts: i64, zone: &Zone) -> DateTime {
        DateTime {
            ts,
            o: zone.offset(ts),
            zone: zone.clone(),
        }
    }

    /// The local calendar fields of this instant at offset `o`.
    pub fn c(&self) -> Civil {
        Civil::from_local_ts(self.ts + self.o * 1000)
    }

    /// The local calendar year.
    pub fn year(&self) -> i64 {
        self.c().year
    }
    /// The local month, 1 = January.
    pub fn month(&self) -> i64 {
        self.c().month
    }
    /// The local day of the month, 1-based.
    pub fn day(&self) -> i64 {
        self.c().day
    }
    /// The local hour, 0..=23.
    pub fn hour(&self) -> i64 {
        self.c().hour
    }
    /// The local minute, 0..=59.
    pub fn minute(&self) -> i64 {
        self.c().minute
    }
    /// The local second, 0..=59.
    pub fn second(&self) -> i64 {
        self.c().second
    }
    /// The local millisecond, 0..=999.
    pub fn millisecond(&self) -> i64 {
        self.c().ms
    }
    /// JavaScript `getDay()`: 0 = Sunday.
    pub fn weekday0(&self) -> i64 {
        let days = (self.ts + self.o * 1000).div_euclid(MS_PER_DAY);
        (days + 4).rem_euclid(7)
    }

    /// `plus({ months, days })`: calendar arithmetic, resolved with the current offset as guess.
    pub fn plus_calendar(&self, months: i64, days: i64) -> DateTime {
        let c = self.c();
        let year = c.year;
        let month = c.month + months;
        let day = c.day.min(days_in_month(year, month)) + days;
        let local = Civil {
            year,
            month,
            day,
            ..c
        }
        .local_ts();
        let (ts, o) = fix_offset(local, self.o, &self.zone);
        DateTime {
            ts,
            o,
            zone: self.zone.clone(),
        }
    }

    /// `plus({ hours | minutes | seconds | milliseconds })`: absolute time.
    pub fn plus_ms(&self, ms: i64) -> DateTime {
        let ts = self.ts + ms;
        DateTime {
            ts,
            o: self.zone.offset(ts),
            zone: self.zone.clone(),
        }
    }

    /// `set({...})` of local fields, resolved with the current offset as guess.
    pub fn set(&self, f: impl FnOnce(&mut Civil)) -> DateTime {
        let mut c = self.c();
        f(&mut c);
        let (ts, o) = fix_offset(c.local_ts(), self.o, &self.zone);
        DateTime {
            ts,
            o,
            zone: self.zone.clone(),
        }
    }

    /// luxon's `startOf(unit)`: every local field below `unit` reset (day to 1, the rest to 0),
    /// resolved with the current offset as guess.
    pub fn start_of(&self, unit: Unit) -> DateTime {
        self.set(|c| {
            if unit == Unit::Month {
                c.day = 1;
            }
            if matches!(unit, Unit::Month | Unit::Day) {
                c.hour = 0;
            }
            if matches!(unit, Unit::Month | Unit::Day | Unit::Hour) {
                c.minute = 0;
            }
            if unit != Unit::Second {
                c.second = 0;
            }
            c.ms = 0;
        })
    }

    /// `endOf(unit)`: `plus(1 unit).startOf(unit).minus(1 ms)`.
    pub fn end_of(&self, unit: Unit) -> DateTime {
        let next = match unit {
            Unit::Month => self.plus_calendar(1, 0),
            Unit::Day => self.plus_calendar(0, 1),
            Unit::Hour => self.plus_ms(3_600_000),
            Unit::Minute => self.plus_ms(60_000),
            Unit::Second => self.plus_ms(1000),
        };
        next.start_of(unit).plus_ms(-1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        for days in [-800_000, -1, 0, 1, 59, 365, 11_016, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }

    #[test]
    fn fixed_specifiers() {
        assert_eq!(fixed_specifier("utc+5"), Some(5 * 3600));
        assert_eq!(fixed_specifier("utc-03:30"), Some(-(3 * 3600 + 1800)));
        assert_eq!(fixed_specifier("utc+123"), None);
    }

    #[test]
    fn start_of_day_in_a_gap_lands_after_it() {
        // America/Sao_Paulo skipped midnight on 2018-11-04 (00:00 -> 01:00).
        let zone = Zone::from_name("America/Sao_Paulo").expect("zone");
        let noon = DateTime::from_millis(1_541_343_600_000, &zone); // 2018-11-04T12:00-02:00
        let start = noon.start_of(Unit::Day);
        assert_eq!(start.hour(), 1);
        assert_eq!(start.ts, 1_541_300_400_000);
    }
}
