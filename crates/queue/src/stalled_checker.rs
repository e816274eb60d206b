//! Recovers jobs whose worker died: runs the two-phase stall sweep at start and then every
//! `stalledInterval`, as every Node worker does. The sweep throttles
//! itself queue-wide, so many workers cost one effective sweep per interval.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::calls::Calls;

/// Sweep now and then every `interval` until `cancel`: stalled jobs go back to wait, or fail
/// once stalled more than `max_stalled` times. A failed sweep is logged and tried again.
pub async fn run(calls: Calls, max_stalled: u32, interval: Duration, cancel: CancellationToken) {
    loop {
        match calls
            .move_stalled_jobs_to_wait(max_stalled, interval.as_millis() as u64)
            .await
        {
            Ok(ids) if !ids.is_empty() => {
                tracing::warn!(queue = %calls.keys().base(), jobs = ?ids, "stalled jobs moved back to wait")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "stall sweep failed; will retry"),
        }
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
