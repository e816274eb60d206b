//! A numeric runId beyond 2^53, and the one claim key two such runs can share.
//!
//! The legacy worker keys a numeric runId by JavaScript's `String(n)` of the double it parsed,
//! and ringback keys it the same way, or the fleets would claim one run under two keys. Beyond
//! 2^53 that double stands for many integers: 123456789012345677 and 123456789012345679 both
//! key `…680`. The first run to reach a key records its exact digits beside it; a second run
//! with other digits is not the same run, and is escalated naming both instead of being
//! completed as a duplicate in silence.

use super::Window;
use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;

impl Window {
    /// Records `exact` (a numeric runId's digits) as the run that owns `run_id`'s claim key,
    /// unless another run already does: then the other run's digits. Kept as long as a sent
    /// marker. One round trip, taken only for numbers beyond 2^53.
    pub async fn number_owner(&self, run_id: &str, exact: &str) -> Result<Option<String>, Error> {
        let key = ringback_store::keys::run_number(&self.claim_prefix, run_id);
        let (owner,): (Option<String>,) = redis::pipe()
            .cmd("SET")
            .arg(&key)
            .arg(exact)
            .arg("NX")
            .arg("PX")
            .arg(self.times.sent_ttl.as_millis() as u64)
            .ignore()
            .cmd("GET")
            .arg(&key)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(owner.filter(|o| o != exact))
    }
}
