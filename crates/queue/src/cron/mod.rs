//! Cron schedules as BullMQ computes them: the next run of a job scheduler or repeatable job
//! with a `pattern`, by the cron-parser major the queue's BullMQ release ships (4.x for bullmq
//! 5, 5.x for bullmq 6), with its options (`tz`, `utc` for 4.x, `startDate`, `endDate`,
//! `immediately`, `hashSeed` for 5.x's `H`). Our own port of both parsers: no crate computes what cron-parser computes
//! (its day-of-month/day-of-week rule, its DST steps, what it accepts), see docs/compatibility.md,
//! "Schedules: cron and every".

mod js;
pub mod luxon;
mod v4;
mod v5;

pub use luxon::Zone;

/// Which cron-parser does the computing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// cron-parser 4.x, shipped with bullmq 5.
    CronParser4,
    /// cron-parser 5.x, shipped with bullmq 6.
    CronParser5,
}

impl Dialect {
    /// From the queue's `meta.version` ("bullmq:5.81.5"); bullmq 6 when absent or unreadable.
    pub fn for_meta_version(version: Option<&str>) -> Dialect {
        let major = version
            .and_then(|v| v.rsplit(':').next())
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        match major {
            Some(m) if m < 6 => Dialect::CronParser4,
            _ => Dialect::CronParser5,
        }
    }
}

/// A pattern or option Node refuses (its `parse` throws: BullMQ then schedules nothing).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    /// The cron pattern does not parse under the queue's cron-parser.
    #[error("cron pattern {pattern:?} refused: {reason}")]
    Pattern {
        /// The pattern as the job's `repeat` options give it.
        pattern: String,
        /// What the parser objects to, in words.
        reason: String,
    },
    /// The `tz` option names no zone luxon knows (the zone name as given).
    #[error("time zone {0:?} is not known")]
    Zone(String),
    /// A `startDate` or `endDate` that is neither epoch milliseconds nor an ISO 8601 instant.
    #[error(
        "{field} {value} is not a date ringback can read (use epoch milliseconds or an ISO 8601 instant)"
    )]
    Date {
        /// The option's name: `startDate` or `endDate`.
        field: &'static str,
        /// The value as stored (a JSON value's text for non-strings).
        value: String,
    },
}

/// The repeat options that decide a cron schedule's next run.
#[derive(Debug, Clone, Default)]
pub struct Schedule {
    /// The cron pattern (`pattern`, or the older `cron`), as the job's repeat options give it.
    pub pattern: String,
    /// The zone to compute in: an IANA name or a luxon offset (`UTC+3`); `None`: the local zone.
    pub tz: Option<String>,
    /// cron-parser 4 only: compute in UTC (5.x ignores it).
    pub utc: bool,
    /// `startDate` (ms since the epoch): no run before it; `None` when absent, empty or 0.
    pub start_date: Option<i64>,
    /// `endDate` (ms since the epoch): no run after it; `None` when absent, empty or 0.
    pub end_date: Option<i64>,
    /// `immediately`: the first run is now rather than at the pattern's next match.
    pub immediately: bool,
    /// cron-parser 5's `hashSeed` for `H` values (random per computation without it, as in Node).
    pub hash_seed: Option<String>,
}

impl Schedule {
    /// Read from a job's `opts.repeat` (as stored by Node).
    pub fn from_repeat(repeat: &serde_json::Value) -> Result<Option<Schedule>, CronError> {
        let Some(pattern) = repeat
            .get("pattern")
            .or_else(|| repeat.get("cron"))
            .and_then(|p| p.as_str())
        else {
            return Ok(None);
        };
        let truthy = |k: &str| match repeat.get(k) {
            None | Some(serde_json::Value::Null) => false,
            Some(serde_json::Value::Bool(b)) => *b,
            Some(serde_json::Value::Number(n)) => n.as_f64().is_some_and(|v| v != 0.0),
            Some(serde_json::Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        };
        let tz = match repeat.get("tz") {
            Some(serde_json::Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => None,
        };
        Ok(Some(Schedule {
            pattern: pattern.to_string(),
            tz,
            utc: truthy("utc"),
            start_date: date_of(repeat.get("startDate"), "startDate")?,
            end_date: date_of(repeat.get("endDate"), "endDate")?,
            immediately: truthy("immediately"),
            hash_seed: repeat
                .get("hashSeed")
                .and_then(|s| s.as_str())
                .map(str::to_string),
        }))
    }
}

fn date_of(v: Option<&serde_json::Value>, field: &'static str) -> Result<Option<i64>, CronError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::Number(n)) => match n.as_f64() {
            Some(0.0) => Ok(None),
            Some(ms) => Ok(Some(ms as i64)),
            None => Ok(None),
        },
        Some(serde_json::Value::String(s)) if s.is_empty() => Ok(None),
        Some(serde_json::Value::String(s)) => s
            .parse::<jiff::Timestamp>()
            .map(|t| Some(t.as_millisecond()))
            .map_err(|_| CronError::Date {
                field,
                value: s.clone(),
            }),
        Some(other) => Err(CronError::Date {
            field,
            value: other.to_string(),
        }),
    }
}

/// Whether Node accepts the pattern (its `parse` does not throw); the reason when it does not.
pub fn validate(dialect: Dialect, pattern: &str) -> Result<(), String> {
    match dialect {
        Dialect::CronParser4 => v4::parse(pattern).map(|_| ()),
        Dialect::CronParser5 => v5::parse(pattern, None).map(|_| ()),
    }
}

/// The zone a schedule is computed in (`local` when it names none).
pub fn zone_of(dialect: Dialect, s: &Schedule, local: &Zone) -> Result<Zone, CronError> {
    let name = match dialect {
        Dialect::CronParser4 if s.utc => Some("UTC"),
        _ => s.tz.as_deref(),
    };
    match name {
        None => Ok(local.clone()),
        Some(n) => Zone::from_name(n).ok_or_else(|| CronError::Zone(n.to_string())),
    }
}

/// BullMQ's `getNextMillis` / `defaultRepeatStrategy` for a pattern: the next run after
/// `millis` (or after `startDate` when later), `now` when `immediately`; `None` when
/// cron-parser finds none (past `endDate`, or its step limit).
pub fn next_millis(
    dialect: Dialect,
    s: &Schedule,
    millis: i64,
    now: i64,
    local: &Zone,
) -> Result<Option<i64>, CronError> {
    let current = match s.start_date {
        Some(start) if start > millis => start,
        _ => millis,
    };
    let refused = |reason: String| CronError::Pattern {
        pattern: s.pattern.clone(),
        reason,
    };
    let zone = zone_of(dialect, s, local)?;
    match dialect {
        Dialect::CronParser4 => {
            let expr = v4::parse(&s.pattern).map_err(refused)?;
            if s.immediately {
                return Ok(Some(now));
            }
            Ok(v4::next(&expr, current, s.end_date, &zone).ok())
        }
        Dialect::CronParser5 => {
            let expr = v5::parse(&s.pattern, s.hash_seed.as_deref()).map_err(refused)?;
            if s.immediately {
                return Ok(Some(now));
            }
            Ok(v5::next(&expr, current, s.start_date, s.end_date, &zone).ok())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sched(pattern: &str, tz: &str) -> Schedule {
        Schedule {
            pattern: pattern.into(),
            tz: Some(tz.into()),
            ..Schedule::default()
        }
    }

    #[test]
    fn every_second_and_every_minute() {
        let utc = Zone::Fixed(0);
        for d in [Dialect::CronParser4, Dialect::CronParser5] {
            let s = sched("* * * * * *", "UTC");
            assert_eq!(next_millis(d, &s, 1_000_500, 0, &utc), Ok(Some(1_001_000)));
            let s = sched("*/5 * * * *", "UTC");
            assert_eq!(next_millis(d, &s, 60_000, 0, &utc), Ok(Some(300_000)));
        }
    }

    #[test]
    fn dialect_from_meta_version() {
        assert_eq!(
            Dialect::for_meta_version(Some("bullmq:5.81.5")),
            Dialect::CronParser4
        );
        assert_eq!(
            Dialect::for_meta_version(Some("bullmq:6.7.0")),
            Dialect::CronParser5
        );
        assert_eq!(Dialect::for_meta_version(None), Dialect::CronParser5);
    }

    #[test]
    fn the_majors_disagree_where_node_does() {
        // 4.x accepts a repeated value and an empty-looking day of week; 5.x refuses them.
        assert!(validate(Dialect::CronParser4, "1,1 * * * *").is_ok());
        assert!(validate(Dialect::CronParser5, "1,1 * * * *").is_err());
        assert!(validate(Dialect::CronParser4, "0 0 30 2 *").is_err());
        assert!(validate(Dialect::CronParser5, "0 0 30 2 *").is_err());
    }
}
