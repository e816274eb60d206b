//! `ringback drain`: before a rollback to the legacy worker alone, resolve every open attempt
//! (receipt, lookup, reconcile window, send), so no callback ringback may have sent is left
//! unresolved for the legacy worker to drop or to send again. It refuses while live ringback
//! workers still consume the queue (they would go on claiming), naming them, checked on Redis's
//! clock before every round, so a worker started during the drain stops it too; it ends when no
//! attempt is open, or at its deadline with the attempts still open listed and escalated.
//! Redis trouble that passes (a dropped connection, writes held by a failover) is waited out
//! within the deadline, as the worker waits it out: a drain is what an operator runs when
//! things are already going wrong.

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::sms::SmsProcessor;
use ringback_queue::processor::Outcome;
use ringback_shared::error::Error;

pub use crate::window::alive_within;

/// How far back a worker's lapsed liveness window makes `drain` wait one more window: past a
/// minute, a worker that has not beaten is dead (Redis does not pause that long unnoticed).
const LAPSED_LOOKBACK: Duration = Duration::from_secs(60);

/// What a drain did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DrainReport {
    /// Runs resolved: sent, found sent, or failed for good (and escalated).
    pub resolved: Vec<String>,
    /// Callback jobs the stall limit had failed, adopted and resolved.
    pub adopted: usize,
    /// Runs still open at the deadline (escalated: they may or may not have been sent).
    pub still_open: Vec<String>,
    /// Stopped by a signal between two attempts (the open attempts stay open).
    pub interrupted: bool,
    /// Escalation ladders that still climbed, ended and escalated (`rollback`) on request.
    pub ladders_ended: Vec<String>,
    /// How long the drain took, in milliseconds.
    pub elapsed_ms: u64,
}

/// What the drain does with escalation ladders that still climb once the workers are gone
/// (only workers climb them: after a rollback nobody would call, nor tell anyone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ladders {
    /// Refuse while any climbs ([`DrainError::LaddersClimbing`]).
    Refuse,
    /// End each one and escalate it once (kind `rollback`), so a person is told
    /// (`--end-ladders`).
    End,
}

/// Why a drain did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DrainError {
    /// Live ringback workers still consume the queue, each as `name (worker id)`.
    #[error(
        "refusing to drain: live ringback workers still consume the queue ({}); stop them first",
        .0.join(", ")
    )]
    LiveWorkers(Vec<String>),
    /// Escalation ladders still climb and no worker is alive to climb them.
    #[error(
        "refusing to drain: {0} escalation ladder(s) still climb and no ringback worker is alive to climb them (their calls and next people would never come); let a worker finish them, or run `ringback drain --end-ladders` to end each and escalate it (kind rollback)"
    )]
    LaddersClimbing(usize),
    /// A Redis error that does not pass, or a passing one still failing at the deadline.
    #[error(transparent)]
    Redis(#[from] Error),
}

/// The first pause after a Redis error the drain waits out; it doubles to [`LONGEST_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const LONGEST_BACKOFF: Duration = Duration::from_secs(5);

/// Whether the drain goes on after a round.
enum Round {
    Done,
    Again,
}

/// A Redis error inside the drain: a transient one (a connection dropped or killed, a command
/// held past its timeout by a failover or a paused Redis) is waited out, backing off, as
/// long as the drain's deadline and `cancel` allow, and the round starts again from its
/// liveness check (the live-workers refusal is asked afresh once Redis answers); an attempt
/// the lost reply may have taken is the sweep's to find again, as for any orphan. Any other
/// error, or a transient one past the deadline, ends the drain with it.
async fn wait_out(
    e: Error,
    backoff: &mut Duration,
    started: Instant,
    timeout: Duration,
    cancel: &tokio_util::sync::CancellationToken,
    progress: &mut impl FnMut(&str),
) -> Result<(), DrainError> {
    if !e.is_transient() || started.elapsed() >= timeout || cancel.is_cancelled() {
        return Err(DrainError::Redis(e));
    }
    progress(&format!(
        "drain: redis did not answer ({e}); trying again in {} ms",
        backoff.as_millis()
    ));
    tokio::select! {
        _ = cancel.cancelled() => {}
        _ = tokio::time::sleep(*backoff) => {}
    }
    *backoff = (*backoff * 2).min(LONGEST_BACKOFF);
    Ok(())
}

/// One round: refuse beside a live worker (or climbing ladders, unless asked to end them), adopt what the stall limit failed, resolve each
/// open attempt; at the deadline, escalate what is still open.
async fn round(
    processor: &SmsProcessor,
    ladders: Ladders,
    report: &mut DrainReport,
    started: Instant,
    timeout: Duration,
    cancel: &tokio_util::sync::CancellationToken,
    progress: &mut impl FnMut(&str),
) -> Result<Round, DrainError> {
    let window = processor.window();
    // throughout, not only at the start: a worker that starts meanwhile (a unit's
    // `Restart=`, an autoscaler) would go on claiming behind the drain's back
    let live = window
        .live_workers(alive_within(processor.sweep_interval()))
        .await?;
    if !live.is_empty() {
        return Err(DrainError::LiveWorkers(live));
    }
    let climbing = processor.escalator().ladders.climbing().await?;
    if !climbing.is_empty() && ladders == Ladders::Refuse {
        return Err(DrainError::LaddersClimbing(climbing.len()));
    }
    report.adopted += crate::orphans::adopt_stall_failures(processor).await?;
    let open = window.open_runs().await?;
    if open.is_empty() {
        // the attempts are resolved: a ladder their sends opened is ended with the others
        for run in climbing {
            end_ladder(processor, &run).await?;
            report.ladders_ended.push(run);
        }
        return Ok(Round::Done);
    }
    if cancel.is_cancelled() {
        report.still_open = open;
        report.interrupted = true;
        return Ok(Round::Done);
    }
    if started.elapsed() >= timeout {
        for run in &open {
            let e = gave_up_on(window, run).await;
            if let Err(err) = processor.escalator().escalate(&e).await {
                tracing::error!(run_id = %run, error = %err, "could not escalate");
            }
        }
        report.still_open = open;
        return Ok(Round::Done);
    }
    progress(&format!(
        "drain: {} open attempt(s), {} resolved so far, {} s elapsed",
        open.len(),
        report.resolved.len(),
        started.elapsed().as_secs()
    ));
    for run_id in open {
        if cancel.is_cancelled() {
            break;
        }
        let asked = crate::orphans::job_asks(processor, &run_id).await?;
        let Some(orphan) = window.take(&run_id).await? else {
            continue;
        };
        let (job_id, req) = orphan.job("drain", &run_id);
        let req = crate::orphans::with_asks(req, asked);
        match processor.attempt(&job_id, &req).await {
            Outcome::Completed(_) | Outcome::Failed(_) => report.resolved.push(run_id),
            Outcome::DelayUntil(at) => window.revisit_at(&run_id, window.to_redis(at)).await?,
        }
    }
    Ok(Round::Again)
}

/// A climbing ladder after a rollback: escalated once (`rollback`: a person is told that its
/// next calls and texts will not come), then stopped and its ringing calls ended. Escalated
/// first: a crash between leaves it climbing, and the next drain escalates nothing twice.
async fn end_ladder(processor: &SmsProcessor, run: &str) -> Result<(), Error> {
    use crate::escalation::{Escalation, EscalationKind};
    let ladders = &processor.escalator().ladders;
    processor
        .escalator()
        .escalate(&Escalation {
            run_id: run.to_string(),
            reason: "its escalation ladder was still climbing when ringback was rolled back (`ringback drain --end-ladders`): no further call or text of it will come".into(),
            last_status: None,
            error_code: None,
            kind: EscalationKind::Rollback,
        })
        .await?;
    let ack = ladders
        .ack(run, crate::ladder::record::Channel::Drain, "ringback drain")
        .await?;
    if let crate::ladder::record::Ack::Stopped(ringing) = ack {
        ringback_shared::telemetry::global().ladder_step("ladder", "ended_by_drain");
        ladders.hang_up_later(&ringing).await?;
        processor.climber().hang_up().await?;
    }
    Ok(())
}

/// Drain until no attempt is open, `timeout`, or `cancel` (checked between attempts, never
/// inside one: a send is never cut between Twilio's answer and its sent marker); escalation
/// ladders still climbing refuse it or are ended, as `ladders` says; `progress` gets one line
/// per round.
pub async fn drain(
    processor: &SmsProcessor,
    timeout: Duration,
    cancel: &tokio_util::sync::CancellationToken,
    ladders: Ladders,
    mut progress: impl FnMut(&str),
) -> Result<DrainReport, DrainError> {
    let window = processor.window();
    let started = Instant::now();
    let mut report = DrainReport::default();
    let mut backoff = FIRST_BACKOFF;
    // a worker whose window ended a moment ago may only have been kept from beating (Redis
    // paused past its window answers the drain before the worker's queued beat, a starved
    // host): one more of its windows tells it from a dead one
    let (lapsed, longest) = loop {
        match window.lapsed_workers(LAPSED_LOOKBACK).await {
            Ok(found) => break found,
            Err(e) => wait_out(e, &mut backoff, started, timeout, cancel, &mut progress).await?,
        }
    };
    if lapsed > 0 {
        progress(&format!(
            "drain: {lapsed} worker(s) stopped beating in the last {} s; waiting {} s for a live one to beat again",
            LAPSED_LOOKBACK.as_secs(),
            longest.as_secs_f64().ceil()
        ));
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = tokio::time::sleep(longest) => {}
        }
    }
    loop {
        match round(
            processor,
            ladders,
            &mut report,
            started,
            timeout,
            cancel,
            &mut progress,
        )
        .await
        {
            Ok(Round::Done) => break,
            Ok(Round::Again) => backoff = FIRST_BACKOFF,
            Err(DrainError::Redis(e)) => {
                wait_out(e, &mut backoff, started, timeout, cancel, &mut progress).await?;
                continue;
            }
            Err(refused) => return Err(refused),
        }
        tokio::select! {
            _ = cancel.cancelled() => {}
            _ = tokio::time::sleep(processor.sweep_interval().min(Duration::from_secs(1))) => {}
        }
    }
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// The escalation of a run still open when `drain` gives up, saying what is known of it. An
/// attempt in `retry` was never sent (Twilio created nothing: a deployment fault holds it, or
/// Twilio asked to wait): escalated `held`, not "may have been sent", and the person is told
/// that the legacy worker skips its job while the claim lives. Any other state may have been
/// sent: escalated `drain`.
async fn gave_up_on(window: &crate::window::Window, run: &str) -> crate::escalation::Escalation {
    use crate::escalation::{Escalation, EscalationKind};
    let attempt = window.attempt_record(run).await.unwrap_or_default();
    if attempt.get("state").map(String::as_str) == Some("retry") {
        if let Some(until) = attempt
            .get("error")
            .and_then(|e| e.strip_prefix(crate::quiet::HELD_REASON))
        {
            return Escalation {
                run_id: run.to_string(),
                reason: format!(
                    "not sent: it waits for its quiet hours to end ({}), and `ringback drain` gave up before then; a legacy worker skips its job while the claim lives (RINGBACK_CLAIM_LEASE_MS), so text the person when the quiet hours end",
                    until.trim()
                ),
                last_status: None,
                error_code: None,
                kind: EscalationKind::Held,
            };
        }
        let why = attempt
            .get("error")
            .map(|e| format!(" ({e})"))
            .unwrap_or_default();
        return Escalation {
            run_id: run.to_string(),
            reason: format!(
                "not sent: Twilio created nothing for it{why}, and `ringback drain` gave up before it could send it; a legacy worker skips its job while the claim lives (RINGBACK_CLAIM_LEASE_MS), so text the person once the fault is fixed"
            ),
            last_status: None,
            error_code: None,
            kind: EscalationKind::Held,
        };
    }
    Escalation {
        run_id: run.to_string(),
        reason: "still unresolved when `ringback drain` gave up: the callback may or may not have been sent".into(),
        last_status: None,
        error_code: None,
        kind: EscalationKind::Drain,
    }
}
