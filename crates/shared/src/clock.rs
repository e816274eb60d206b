//! The process clock, one place for every floor: BullMQ's timestamps are this process's
//! milliseconds since the Unix epoch; the window's decisions read Redis's clock instead.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, as BullMQ timestamps are: this process's clock. No window
/// decision uses it (the window scripts read Redis's `TIME`). `RINGBACK_CLOCK_SKEW_MS`, a test
/// and drill hook, shifts it, to prove exactly that.
pub fn now_ms() -> i64 {
    static SKEW: std::sync::LazyLock<i64> = std::sync::LazyLock::new(|| {
        std::env::var("RINGBACK_CLOCK_SKEW_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
        + *SKEW
}
