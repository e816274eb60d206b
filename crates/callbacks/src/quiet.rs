//! Quiet hours: a callback that is not urgent waits in BullMQ's `delayed` set while the human's
//! night lasts (`RINGBACK_QUIET_HOURS` in `RINGBACK_QUIET_HOURS_TZ`, or the job's `timeZone`),
//! and is sent when the window opens. Times are civil times of the zone, read through the zone
//! database (jiff): a window starts or ends at the first moment the zone's clock reads its
//! time or later, so a time inside a skipped hour is the moment the clocks jump (02:30 on a
//! spring-forward night is 03:00, when the clock first reads past it: a job held to then and
//! one arriving then agree), and a repeated time is its first occurrence.

use jiff::civil::Time;
use jiff::tz::TimeZone;

use ringback_shared::settings::ConfigError;

/// `22:00-08:00`: from the first time (inclusive) to the second (exclusive), across midnight
/// when the second is earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuietHours {
    /// Minutes after midnight.
    start: u16,
    end: u16,
}

impl std::str::FromStr for QuietHours {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let bad = || {
            ConfigError::new(
                "RINGBACK_QUIET_HOURS",
                format!("{s:?} is not a window such as 22:00-08:00 (HH:MM-HH:MM, 24-hour clock)"),
            )
        };
        let minutes = |hm: &str| -> Option<u16> {
            let (h, m) = hm.trim().split_once(':')?;
            let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
            (h < 24 && m < 60 && hm.trim().len() == 5).then_some(h * 60 + m)
        };
        let (a, b) = s.split_once('-').ok_or_else(bad)?;
        let (start, end) = (minutes(a).ok_or_else(bad)?, minutes(b).ok_or_else(bad)?);
        if start == end {
            return Err(ConfigError::new(
                "RINGBACK_QUIET_HOURS",
                format!("{s:?} is empty (it starts when it ends); leave it unset for none"),
            ));
        }
        Ok(Self { start, end })
    }
}

impl std::fmt::Display for QuietHours {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hm = |m: u16| format!("{:02}:{:02}", m / 60, m % 60);
        write!(f, "{}-{}", hm(self.start), hm(self.end))
    }
}

/// The quiet hours and the zone they are read in unless a job names its own.
#[derive(Debug, Clone)]
pub struct Quiet {
    /// `RINGBACK_QUIET_HOURS`: the nightly window non-urgent callbacks wait out.
    pub hours: QuietHours,
    /// `RINGBACK_QUIET_HOURS_TZ`: the zone the hours are read in for a job without `timeZone`.
    pub zone: TimeZone,
    /// The IANA name of [`Quiet::zone`] as configured (such as `Europe/Paris`).
    pub zone_name: String,
}

impl Quiet {
    /// The zone a run's hours are read in: the job's `timeZone` (checked when the job was read),
    /// else the configured one.
    fn zone_of(&self, job_zone: Option<&str>) -> TimeZone {
        job_zone
            .and_then(|z| TimeZone::get(z).ok())
            .unwrap_or_else(|| self.zone.clone())
    }

    /// When the quiet window that holds `now_ms` opens again (ms), or `None` outside it.
    pub fn opens_at(&self, now_ms: i64, job_zone: Option<&str>) -> Option<i64> {
        let zone = self.zone_of(job_zone);
        let now = jiff::Timestamp::from_millisecond(now_ms)
            .ok()?
            .to_zoned_datetime(zone.clone());
        let m = minute_of(now.time());
        let (start, end) = (self.hours.start, self.hours.end);
        let inside = if start < end {
            (start..end).contains(&m)
        } else {
            m >= start || m < end
        };
        if !inside {
            return None;
        }
        // the end on the same date, or on the next one for a window across midnight entered
        // before midnight
        let date = if start > end && m >= start {
            now.date().tomorrow().ok()?
        } else {
            now.date()
        };
        // the end read as its first occurrence may already be past in a repeated hour (the
        // second 01:15 of a fall-back night for a window ending 01:30): then it has ended
        at(date, self.hours.end, &zone).filter(|&end| end > now_ms)
    }

    /// When the next quiet window starts after `now_ms` (ms), for a moment outside one: the
    /// `ValidityPeriod` of a send is cut to it, so a text Twilio queued does not arrive at night.
    pub fn next_start(&self, now_ms: i64, job_zone: Option<&str>) -> Option<i64> {
        let zone = self.zone_of(job_zone);
        let now = jiff::Timestamp::from_millisecond(now_ms)
            .ok()?
            .to_zoned_datetime(zone.clone());
        let date = if minute_of(now.time()) < self.hours.start {
            now.date()
        } else {
            now.date().tomorrow().ok()?
        };
        at(date, self.hours.start, &zone)
    }
}

/// The shortest `ValidityPeriod` a text outside quiet hours is sent with: closer than this to
/// their start, it waits for their end instead. Twilio fails a message still queued when its
/// validity runs out (30036, an `undelivered` page) and a sender's queue drains at its rate (a
/// long code's one message a second is 600 messages in 10 minutes), so a shorter validity
/// turns a busy evening queue into pages.
pub const MIN_VALIDITY_S: i64 = 600;

impl Quiet {
    /// Until when (ms) a callback that is not urgent waits at `now_ms`: the end of the quiet
    /// window that holds it, or of the next one when it starts within [`MIN_VALIDITY_S`];
    /// `None` when it may be sent now.
    pub fn waits_until(&self, now_ms: i64, job_zone: Option<&str>) -> Option<i64> {
        if let Some(opens) = self.opens_at(now_ms, job_zone) {
            return Some(opens);
        }
        let starts = self.next_start(now_ms, job_zone)?;
        if starts - now_ms >= MIN_VALIDITY_S * 1000 {
            return None;
        }
        self.opens_at(starts, job_zone)
    }

    /// The `ValidityPeriod` (s) of a send at `now_ms`: until the next quiet window starts, never
    /// longer than `configured` (Twilio's 10 hours when unset), at least Twilio's 1 s.
    pub fn validity(
        &self,
        now_ms: i64,
        job_zone: Option<&str>,
        configured: Option<u32>,
    ) -> Option<u32> {
        let starts = self.next_start(now_ms, job_zone)?;
        let max = configured.unwrap_or(crate::sms::MAX_VALIDITY_S as u32);
        let secs = ((starts - now_ms) / 1000).clamp(1, i64::from(max));
        Some(secs as u32)
    }
}

fn minute_of(t: Time) -> u16 {
    t.hour() as u16 * 60 + t.minute() as u16
}

/// The first moment the clock of `zone` reads `minutes` after midnight on `date`, or later
/// (ms): a repeated time is its first occurrence; a time the zone skips is the end of the gap
/// (the transition), where the wall clock the window is judged by first passes it.
fn at(date: jiff::civil::Date, minutes: u16, zone: &TimeZone) -> Option<i64> {
    let t = Time::new((minutes / 60) as i8, (minutes % 60) as i8, 0, 0).ok()?;
    let ambiguous = zone.to_ambiguous_timestamp(date.to_datetime(t));
    let gap = matches!(ambiguous.offset(), jiff::tz::AmbiguousOffset::Gap { .. });
    // the earlier reading: in a gap, with the offset after it, a moment before the transition
    let earlier = ambiguous.earlier().ok()?;
    if gap {
        let jump = zone.following(earlier).next()?;
        return Some(jump.timestamp().as_millisecond());
    }
    Some(earlier.as_millisecond())
}

/// The reason an attempt record gives for a callback waiting for its quiet hours to end, followed
/// by when they end (`drain` and `status` read it).
pub const HELD_REASON: &str = "inside quiet hours: not sent until";

/// `ms` (Unix time) as an RFC 3339 instant, for a reason or a log line.
pub fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map_or_else(|_| ms.to_string(), |t| t.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quiet(hours: &str, zone: &str) -> Quiet {
        Quiet {
            hours: hours.parse().unwrap(),
            zone: TimeZone::get(zone).unwrap(),
            zone_name: zone.into(),
        }
    }

    fn ms(rfc3339: &str) -> i64 {
        rfc3339.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn windows_parse_and_refuse_with_the_setting_named() {
        assert_eq!(
            "22:00-08:00".parse::<QuietHours>().unwrap().to_string(),
            "22:00-08:00"
        );
        for bad in ["22-08", "25:00-08:00", "22:00", "22:00-22:00", "9:00-17:00"] {
            let e = bad.parse::<QuietHours>().unwrap_err();
            assert_eq!(e.setting, "RINGBACK_QUIET_HOURS", "{bad}");
        }
    }

    #[test]
    fn closer_than_the_minimum_validity_to_quiet_hours_a_text_waits_for_their_end() {
        let q = quiet("22:00-08:00", "UTC");
        // 21:55: five minutes of validity would fail a queued text (30036): it waits until 08:00
        assert_eq!(
            q.waits_until(ms("2026-12-04T21:55:00Z"), None),
            Some(ms("2026-12-05T08:00:00Z"))
        );
        // 21:40: twenty minutes, sent now with a validity of 1,200 s
        assert_eq!(q.waits_until(ms("2026-12-04T21:40:00Z"), None), None);
        assert_eq!(
            q.validity(ms("2026-12-04T21:40:00Z"), None, None),
            Some(1200)
        );
        // inside: the window's own end
        assert_eq!(
            q.waits_until(ms("2026-12-04T23:00:00Z"), None),
            Some(ms("2026-12-05T08:00:00Z"))
        );
        // a job's zone: 21:55 in Tokyo is 12:55Z
        assert_eq!(
            q.waits_until(ms("2026-12-04T12:55:00Z"), Some("Asia/Tokyo")),
            Some(ms("2026-12-04T23:00:00Z"))
        );
    }

    #[test]
    fn a_night_across_midnight_opens_in_the_morning_of_its_zone() {
        let q = quiet("22:00-08:00", "Europe/Paris");
        // 03:00 in Paris (CET, UTC+1) → 08:00 Paris = 07:00Z
        assert_eq!(
            q.opens_at(ms("2026-12-04T02:00:00Z"), None),
            Some(ms("2026-12-04T07:00:00Z"))
        );
        // 23:30 Paris → the next morning
        assert_eq!(
            q.opens_at(ms("2026-12-04T22:30:00Z"), None),
            Some(ms("2026-12-05T07:00:00Z"))
        );
        // noon: open, and the night starts at 22:00 Paris
        assert_eq!(q.opens_at(ms("2026-12-04T11:00:00Z"), None), None);
        assert_eq!(
            q.next_start(ms("2026-12-04T11:00:00Z"), None),
            Some(ms("2026-12-04T21:00:00Z"))
        );
        // a job's own zone wins: 03:00Z is 22:00 in New York (EST), the night's first minute
        assert_eq!(
            q.opens_at(ms("2026-12-04T03:00:00Z"), Some("America/New_York")),
            Some(ms("2026-12-04T13:00:00Z"))
        );
    }

    #[test]
    fn a_send_expires_in_twilios_queue_before_the_night() {
        let q = quiet("22:00-08:00", "Europe/Paris");
        // 20:30 Paris: 90 minutes until the night
        assert_eq!(
            q.validity(ms("2026-12-04T19:30:00Z"), None, None),
            Some(5400)
        );
        // never longer than the configured period
        assert_eq!(
            q.validity(ms("2026-12-04T19:30:00Z"), None, Some(600)),
            Some(600)
        );
        // 08:00 Paris: 14 hours away, cut to Twilio's 10
        assert_eq!(
            q.validity(ms("2026-12-04T07:00:00Z"), None, None),
            Some(36_000)
        );
        // half a second before the night: Twilio's least, 1 s
        assert_eq!(
            q.validity(ms("2026-12-04T20:59:59.500Z"), None, None),
            Some(1)
        );
    }

    #[test]
    fn daylight_saving_is_the_zone_databases() {
        let q = quiet("01:00-02:30", "America/New_York");
        // 2026-03-08: clocks jump from 02:00 EST to 03:00 EDT (07:00Z); 02:30 does not exist:
        // the window ends when the clock first reads past it, at the jump
        assert_eq!(
            q.opens_at(ms("2026-03-08T06:30:00Z"), None),
            Some(ms("2026-03-08T07:00:00Z"))
        );
        // so a job held to then and one arriving just after agree: 03:10 EDT is outside
        assert_eq!(q.opens_at(ms("2026-03-08T07:10:00Z"), None), None);
        // a window starting in the gap starts at the jump too (03:00 EDT reads past 02:30)
        let early = quiet("02:30-06:00", "America/New_York");
        assert_eq!(
            early.next_start(ms("2026-03-08T05:00:00Z"), None),
            Some(ms("2026-03-08T07:00:00Z"))
        );
        assert_eq!(
            early.opens_at(ms("2026-03-08T07:00:00Z"), None),
            Some(ms("2026-03-08T10:00:00Z"))
        );
        // 2026-11-01: 01:00-02:00 happens twice; 01:30 EDT (05:30Z) is inside, and 02:30 EST
        // is 07:30Z
        assert_eq!(
            q.opens_at(ms("2026-11-01T05:30:00Z"), None),
            Some(ms("2026-11-01T07:30:00Z"))
        );
        // a window ending in the hour a fall-back night repeats: over once its first
        // occurrence is past (01:15 EST, the second one, is 06:15Z; 01:30 EDT was 05:30Z)
        let late = quiet("22:00-01:30", "America/New_York");
        assert_eq!(
            late.opens_at(ms("2026-11-01T05:15:00Z"), None),
            Some(ms("2026-11-01T05:30:00Z"))
        );
        assert_eq!(late.opens_at(ms("2026-11-01T06:15:00Z"), None), None);
        // a daytime window in summer time: 12:00-13:00 EDT = 16:00-17:00Z
        let lunch = quiet("12:00-13:00", "America/New_York");
        assert_eq!(
            lunch.opens_at(ms("2026-07-01T16:10:00Z"), None),
            Some(ms("2026-07-01T17:00:00Z"))
        );
        assert_eq!(lunch.opens_at(ms("2026-07-01T17:00:00Z"), None), None);
    }
}
