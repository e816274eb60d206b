//! The on-Redis record layout: the shape of the records ringback keeps beside BullMQ's keys
//! (claims, sent markers, attempt records, receipts, escalation markers, links). BullMQ's own
//! keys follow BullMQ; these follow ringback, and a rolling upgrade may run two versions of
//! ringback on one Redis only while both read the layout written there.
//!
//! The layout is written once, at `ringback:layout:<claim prefix>`, by the first process that
//! finds it missing; a process that finds another one refuses to start (exit 2; `serve` stops
//! when Redis first answers, before its API opens), naming the key and both layouts, before it
//! reads or writes a record it might misread. A new layout comes
//! with an upgrade note (`CHANGELOG.md`) saying how to move the records or drain them first.

use ringback_shared::error::Error;
use ringback_store::connection::Conn;

/// The layout this build writes.
pub const RECORD_LAYOUT: u32 = 1;

/// The layouts this build reads (and then leaves as they are).
pub const READS: &[u32] = &[RECORD_LAYOUT];

/// [`check`] at start: Redis may drop the connection it just accepted or hold the first write
/// past the command timeout (a failover, a restart, a client kill), so a transient error is
/// waited out as an unreachable Redis is (backing off to 5 s), never a failed start; a layout
/// this build does not read is the error it is. `Error::Stopped` when `shutdown` comes first.
pub async fn check_at_start(
    conn: &mut Conn,
    claim_prefix: &str,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<u32, Error> {
    let mut delay = std::time::Duration::from_millis(100);
    loop {
        match check(conn, claim_prefix).await {
            Err(e) if e.is_transient() => {
                tracing::warn!(error = %e, retry_ms = delay.as_millis() as u64, "redis unavailable at start");
                tokio::select! {
                    _ = shutdown.cancelled() => return Err(Error::Stopped),
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(std::time::Duration::from_secs(5));
            }
            done => return done,
        }
    }
}

/// What this Redis refuses of the commands ringback relies on ([`ringback_store::probe`]), asked
/// at start after the layout: each refusal is logged with its cost; one ringback cannot run
/// without is the error. Connection trouble is waited out as at [`check_at_start`].
pub async fn probe_at_start(
    conn: &mut Conn,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<(), Error> {
    let mut delay = std::time::Duration::from_millis(100);
    let explicit_wait = conn.waits_for_replicas();
    let wait_aof = conn.waits_for_aof();
    let found = loop {
        match ringback_store::probe::probe(conn, explicit_wait, wait_aof).await {
            Ok(found) => break found,
            Err(e) => {
                let e = Error::from(e);
                if !e.is_transient() {
                    return Err(e);
                }
                tokio::select! {
                    _ = shutdown.cancelled() => return Err(Error::Stopped),
                    _ = tokio::time::sleep(delay) => {}
                }
                delay = (delay * 2).min(std::time::Duration::from_secs(5));
            }
        }
    };
    for line in found.warnings() {
        tracing::warn!("{line}");
    }
    match found.fatal() {
        Some(r) => Err(Error::Refused {
            command: r.command,
            cost: r.cost,
            answer: r.error.clone(),
        }),
        None => Ok(()),
    }
}

/// Reads the layout written for `claim_prefix`, writing this build's when none is; an error
/// naming the key when it is one this build does not read.
pub async fn check(conn: &mut Conn, claim_prefix: &str) -> Result<u32, Error> {
    let key = ringback_store::keys::record_layout(claim_prefix);
    // SET NX, then GET: `SET … NX GET` needs Redis 7, and a layout once written never changes
    let wrote: Option<String> = redis::cmd("SET")
        .arg(&key)
        .arg(RECORD_LAYOUT)
        .arg("NX")
        .query_async(conn)
        .await?;
    if wrote.is_some() {
        return Ok(RECORD_LAYOUT);
    }
    let found: Option<String> = redis::cmd("GET").arg(&key).query_async(conn).await?;
    let Some(found) = found else {
        return Ok(RECORD_LAYOUT);
    };
    match found.trim().parse::<u32>() {
        Ok(n) if READS.contains(&n) => Ok(n),
        _ => Err(Error::Layout {
            key,
            found,
            reads: RECORD_LAYOUT,
        }),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_build_reads_what_it_writes() {
        assert!(super::READS.contains(&super::RECORD_LAYOUT));
    }
}
