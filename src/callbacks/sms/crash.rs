//! Drill hooks: `RINGBACK_CRASH_AT` aborts the process at a window point (only with
//! `RINGBACK_DRILL=1`), so drills and tests can prove recovery from each.

use crate::error::ConfigError;

/// Points where `RINGBACK_CRASH_AT` aborts the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    AfterClaim,
    AfterProviderAccept,
    AfterSentMarker,
    BeforeComplete,
}

/// `RINGBACK_CRASH_AT=<point>[:<probability>]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrashAt {
    pub point: CrashPoint,
    pub probability: f64,
}

impl std::str::FromStr for CrashAt {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| {
            ConfigError::new(
                "RINGBACK_CRASH_AT",
                format!("{why}: {s:?} (expected <point>[:<probability>])"),
            )
        };
        let (point, p) = s.split_once(':').unwrap_or((s, "1"));
        let point = match point {
            "after-claim" => CrashPoint::AfterClaim,
            "after-provider-accept" => CrashPoint::AfterProviderAccept,
            "after-sent-marker" => CrashPoint::AfterSentMarker,
            "before-complete" => CrashPoint::BeforeComplete,
            _ => {
                return Err(bad(
                    "unknown point (after-claim, after-provider-accept, after-sent-marker, before-complete)",
                ));
            }
        };
        let probability: f64 = p.parse().map_err(|_| bad("probability is not a number"))?;
        if !(0.0..=1.0).contains(&probability) {
            return Err(bad("probability must be within 0..=1"));
        }
        Ok(CrashAt { point, probability })
    }
}
