//! Whether and how a run was escalated: the markers that make each escalation happen once,
//! for longer than the run's record lives.

use super::*;

use crate::error::Error;
use crate::queue::commands::now_ms;
use crate::store::keys::{self, WindowKeys};

impl Receipts {
    /// Mark the run escalated; true only the first time (exactly once). A run escalated before
    /// any status (a send that failed, a run settled as unknown) has no record yet: the flag
    /// starts one, which then gets the record TTL here (it would otherwise never expire: only a
    /// status gives a record its TTL).
    pub async fn mark_escalated(&self, run_id: &str, reason: &str) -> Result<bool, Error> {
        let record = WindowKeys::new(&self.claim_prefix, run_id).record;
        self.trips.add(1);
        let (first, ttl): (i64, i64) = redis::pipe()
            .cmd("HSETNX")
            .arg(&record)
            .arg("escalated")
            .arg(format!("{}:{reason}", now_ms()))
            .cmd("PTTL")
            .arg(&record)
            .query_async(&mut self.conn.clone())
            .await?;
        if ttl == -1 {
            self.trips.add(1);
            redis::cmd("PEXPIRE")
                .arg(&record)
                .arg(self.times.record_ttl.as_millis() as u64)
                .query_async::<()>(&mut self.conn.clone())
                .await?;
        }
        Ok(first == 1)
    }
}

impl Receipts {
    /// Whether this run's escalation was already created (its marker outlives the record).
    pub async fn was_escalated(&self, run_id: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let n: i64 = redis::cmd("EXISTS")
            .arg(keys::escalated_marker(&self.claim_prefix, run_id))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(n == 1)
    }

    /// Remember that this run's escalation of `kind` exists, for [`ESCALATED_MARKER_LIVES`]
    /// times the record's lifetime; true when this call wrote the kind's marker first.
    pub async fn remember_escalated(&self, run_id: &str, kind: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let ttl = self.times.record_ttl.as_millis().max(1) as u64 * ESCALATED_MARKER_LIVES;
        let (_, first): ((), Option<String>) = redis::pipe()
            .cmd("SET")
            .arg(keys::escalated_marker(&self.claim_prefix, run_id))
            .arg(now_ms())
            .arg("PX")
            .arg(ttl)
            .cmd("SET")
            .arg(keys::escalated_kind_marker(
                &self.claim_prefix,
                run_id,
                kind,
            ))
            .arg(now_ms())
            .arg("PX")
            .arg(ttl)
            .arg("NX")
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(first.is_some())
    }

    /// Whether this run's escalation of `kind` exists.
    pub async fn was_escalated_as(&self, run_id: &str, kind: &str) -> Result<bool, Error> {
        self.trips.add(1);
        let n: i64 = redis::cmd("EXISTS")
            .arg(keys::escalated_kind_marker(
                &self.claim_prefix,
                run_id,
                kind,
            ))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(n == 1)
    }
}
