//! Forwards: inbound messages that answer no question (and opt-out keywords) go on to whatever
//! handled the number's inbound messages before (`RINGBACK_INBOUND_FORWARD_URL`), at least
//! once. A message to forward is scheduled by each arrival that finds it unrecorded (before
//! recording it, so a crash right after the record still leaves it scheduled; due a grace
//! period after the latest such arrival), with its whole signed form kept in the record; `serve` forwards it in the request and takes it off the schedule once the URL
//! accepts it (a 2xx). One the URL refused, or that a crash cut short, is forwarded again by
//! `serve`'s sweep every [`FORWARD_RETRY`] until it is accepted or its record is past the
//! retention. At least once, not exactly once: a forward accepted and cut short before it left
//! the schedule is sent again, as Twilio itself re-sends a webhook it got no answer to.

use std::time::Duration;

use super::Recorded;
use ringback_shared::error::Error;
use ringback_store::connection::Conn;
use ringback_store::keys;

/// How long after a refused or failed forward it is tried again.
pub const FORWARD_RETRY: Duration = Duration::from_secs(60);

/// The schedule of inbound messages still to forward.
#[derive(Clone, Debug)]
pub struct Forwards {
    conn: Conn,
    claim_prefix: String,
}

impl Forwards {
    /// The schedule of the deployment `claim_prefix` names (`ringback:inbound-forwards:<prefix>`).
    pub fn new(conn: Conn, claim_prefix: &str) -> Self {
        Self {
            conn,
            claim_prefix: claim_prefix.into(),
        }
    }

    fn key(&self) -> String {
        keys::inbound_forwards(&self.claim_prefix)
    }

    /// Forward `sid` at `due` (ms), or later if it is already due later (GT): the latest
    /// arrival's due time stands, so the sweep never takes it while that arrival's handler may
    /// still be about to record it.
    pub(super) async fn schedule(&self, sid: &str, due: i64) -> Result<(), Error> {
        self.at(sid, due, "GT").await
    }

    /// The URL accepted `sid`: not forwarded again.
    pub async fn done(&self, sid: &str) -> Result<(), Error> {
        let _: () = redis::cmd("ZREM")
            .arg(self.key())
            .arg(sid)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// The URL refused `sid` or could not be reached: try again at `due` (ms).
    pub async fn later(&self, sid: &str, due: i64) -> Result<(), Error> {
        self.at(sid, due, "XX").await
    }

    async fn at(&self, sid: &str, due: i64, only: &str) -> Result<(), Error> {
        let _: () = redis::cmd("ZADD")
            .arg(self.key())
            .arg(only)
            .arg(due)
            .arg(sid)
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Up to `limit` messages whose forward is due at `now` (ms), as recorded. One whose record
    /// is gone (past the retention) is dropped from the schedule, with a warning.
    pub async fn due(&self, now: i64, limit: usize) -> Result<Vec<Recorded>, Error> {
        let sids: Vec<String> = redis::cmd("ZRANGEBYSCORE")
            .arg(self.key())
            .arg("-inf")
            .arg(now)
            .arg("LIMIT")
            .arg(0)
            .arg(limit)
            .query_async(&mut self.conn.clone())
            .await?;
        let mut out = Vec::with_capacity(sids.len());
        for sid in sids {
            let v: Option<String> = redis::cmd("GET")
                .arg(keys::inbound(&self.claim_prefix, &sid))
                .query_async(&mut self.conn.clone())
                .await?;
            match v.and_then(|v| serde_json::from_str::<Recorded>(&v).ok()) {
                Some(r) if !r.inbound.form.is_empty() => out.push(r),
                _ => {
                    tracing::warn!(%sid, "an inbound message to forward has no record (past the retention, or never recorded); not forwarded");
                    self.done(&sid).await?;
                }
            }
        }
        Ok(out)
    }
}
