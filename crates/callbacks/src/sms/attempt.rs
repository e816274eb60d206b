//! One attempt of a callback: claim, resolve what an earlier attempt left, send or hold, and
//! the escalations an attempt makes on the way.

use super::{CrashPoint, SmsEvent, SmsProcessor, evidence, fused, hold, indistinct_reason};
use crate::callback::CallbackRequest;
use crate::escalation::EscalationKind;
use crate::window::{Claim, MarkSent, Marked, Unresolved};
use evidence::Resolution;
use ringback_queue::processor::{JobContext, Outcome};
use ringback_shared::clock::now_ms;
use ringback_shared::redact::redact;
use serde_json::json;
use std::time::Duration;

/// What the next claim of an attempt carries after an earlier attempt's send was found lost.
#[derive(Debug, Default)]
struct Anew {
    /// The lost attempt's token: the new claim replaces it in the same step.
    supersede: Option<String>,
    /// That attempt was escalated as still resolving: a send now is notified as resolved.
    escalated_before: bool,
}

/// Where a step leaves an attempt: done with an outcome, or claiming anew.
enum Next {
    Done(Outcome),
    ClaimAnew(Anew),
}

impl SmsProcessor {
    /// Run one attempt of a callback for `job_id` (a queue job, or the orphan sweep and the
    /// drain: what an attempt gives up stays open in the window either way).
    pub async fn attempt(&self, job_id: &str, req: &CallbackRequest) -> Outcome {
        self.attempt_in(job_id, req, None).await
    }

    /// [`SmsProcessor::attempt`] for a queue job: with its context, the attempt may start from
    /// the claim the previous job's finishing call made, and folds its own last write into this
    /// job's finishing call ([`fused`]).
    pub(super) async fn attempt_in(
        &self,
        job_id: &str,
        req: &CallbackRequest,
        ctx: Option<&JobContext>,
    ) -> Outcome {
        let mut prepared = self.prepared_claim(ctx, &req.run_id).await;
        let trace = ctx.map_or(&ringback_shared::trace::OFF, |c| c.trace());
        let ctx = self.fused_ctx(ctx);
        let mut anew = Anew::default();
        // At most: resolve an unknown send, find it unproven past the window, claim anew.
        for _ in 0..3 {
            let claim = self
                .claim_step(job_id, req, prepared.take(), &anew, trace)
                .await;
            match self.after_claim(req, claim, &anew, ctx, trace).await {
                Next::Done(outcome) => return outcome,
                Next::ClaimAnew(next) => anew = next,
            }
        }
        self.later(self.config.reconcile_poll)
    }

    /// Step 1: the run's claim, from the previous job's finishing call when it made one, else
    /// claimed now (replacing a lost attempt's in the same step when `anew` says so).
    async fn claim_step(
        &self,
        job_id: &str,
        req: &CallbackRequest,
        prepared: Option<Claim>,
        anew: &Anew,
        trace: &ringback_shared::trace::Step,
    ) -> Result<Claim, ringback_shared::error::Error> {
        let claiming = trace.child("claim");
        let claim = match prepared {
            Some(claim) => {
                claiming.event("claimed by the previous job's finishing call");
                Ok(claim)
            }
            None => {
                let token = uuid::Uuid::new_v4().simple().to_string();
                self.window
                    .claim_callback(
                        req,
                        &token,
                        anew.supersede.as_deref(),
                        job_id,
                        &self.worker_id,
                    )
                    .await
            }
        };
        claiming.attribute(
            "ringback.claim",
            match &claim {
                Err(_) => "error",
                Ok(Claim::Sent(_)) => "sent",
                Ok(Claim::Busy(_)) => "busy",
                Ok(Claim::Claimed { .. }) => "claimed",
                Ok(Claim::Unacknowledged { .. }) => "unacknowledged",
                Ok(Claim::Resolve(_)) => "resolve",
            },
        );
        claim
    }

    /// Step 2: what the claim says to do: complete a run already sent, wait for another
    /// attempt, send (or hold) our own claim, or resolve what an earlier attempt left.
    async fn after_claim(
        &self,
        req: &CallbackRequest,
        claim: Result<Claim, ringback_shared::error::Error>,
        anew: &Anew,
        ctx: Option<&JobContext>,
        trace: &ringback_shared::trace::Step,
    ) -> Next {
        Next::Done(match claim {
            Err(e) => {
                tracing::warn!(error = %e, "claim failed; will try again");
                self.later(self.config.retry_later_default)
            }
            Ok(Claim::Sent(sid)) => {
                // the text went out (this run's earlier attempt, or the legacy worker): its
                // ladder is part of what the run owes, also after a Redis that forgot it
                if let Err(e) = self.open_ladder_of_sent(req, sid.is_none()).await {
                    tracing::warn!(error = %e, "could not open a sent callback's ladder; will try again");
                    return Next::Done(self.later(self.config.retry_later_default));
                }
                self.stats.record(SmsEvent::Deduplicated);
                tracing::info!(sid = ?sid, "already sent; not sending again");
                if let Some(ctx) = ctx {
                    // nothing to write; the finishing call still claims the next job's run
                    ctx.finish_with(self.finish_step(
                        req,
                        fused::Mark::Nothing,
                        ctx.resent_within(),
                    ));
                }
                Outcome::Completed(
                    json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true}),
                )
            }
            Ok(Claim::Busy(ttl)) => {
                self.stats.record(SmsEvent::Busy);
                tracing::info!(
                    wait_ms = ttl.as_millis() as u64,
                    "another attempt holds the claim; waiting for it"
                );
                self.later(ttl + Duration::from_millis(50))
            }
            Ok(Claim::Claimed { token }) => self.send_claimed(req, &token, anew, ctx, trace).await,
            Ok(Claim::Unacknowledged { token, since }) => {
                let reason = "Redis's replicas did not acknowledge the claim in time, or its disk did not have it (RINGBACK_REDIS_WAIT_TIMEOUT_MS): a failover or a restart could lose it, so the text waits until they do";
                self.held(req, &token, since, reason).await
            }
            Ok(Claim::Resolve(u)) => return self.resolve_step(req, &u, anew).await,
        })
    }

    /// Step 3, our claim: quiet hours and deployment faults hold it; otherwise the text goes.
    async fn send_claimed(
        &self,
        req: &CallbackRequest,
        token: &str,
        anew: &Anew,
        ctx: Option<&JobContext>,
        trace: &ringback_shared::trace::Step,
    ) -> Outcome {
        self.crash(CrashPoint::AfterClaim, &req.run_id);
        // every path that sends passes here (a job, the sweep, drain, resend):
        // quiet hours hold on each, from what the record kept of the callback
        if let Some(opens) = self.quiet_until(req) {
            return self.quiet_hold(req, token, opens).await;
        }
        if let hold::Admit::Wait { since, reason } = self.stats.holds.admits(&req.to, now_ms()) {
            return self.held(req, token, since, &reason).await;
        }
        // the ladder opens before the text can go: a crash after the create leaves it open
        if let Err(e) = self.open_ladder(req).await {
            let reason = format!("could not open the run's escalation ladder: {e}");
            return self.give_back(req, token, &reason).await;
        }
        let outcome = self.send(req, token, ctx, trace).await;
        if anew.escalated_before && matches!(outcome, Outcome::Completed(_)) {
            self.notify_resolved(req, "sent", None).await;
        }
        outcome
    }

    /// Step 3, an earlier attempt's unknown send: found sent (marked, never sent again),
    /// still resolving, indistinct (escalated, then settled unknown), or lost (claim anew).
    async fn resolve_step(&self, req: &CallbackRequest, u: &Unresolved, anew: &Anew) -> Next {
        Next::Done(match self.resolve(req, u).await {
            Resolution::Sent(sid) => self.found_sent(req, u, &sid).await,
            // the claim call just touched the attempt: the sweep sees a resolver alive
            Resolution::Wait(d) => self.later(d),
            Resolution::Indistinct(found) => self.settle_indistinct(req, u, found).await,
            Resolution::Lost => {
                self.stats.record(SmsEvent::Lost);
                tracing::warn!(
                    "no evidence of an earlier send within the reconcile window; sending"
                );
                // the next claim replaces the attempt in the same step (no gap in the claim)
                return Next::ClaimAnew(Anew {
                    supersede: Some(u.token.clone()),
                    escalated_before: anew.escalated_before || u.escalated,
                });
            }
        })
    }

    /// An earlier attempt's send, found: marked sent as found, and the run completes.
    async fn found_sent(&self, req: &CallbackRequest, u: &Unresolved, sid: &str) -> Outcome {
        match self
            .window
            .mark_sent(&req.run_id, &u.token, sid, "queued", Marked::Found)
            .await
        {
            Err(e) => {
                tracing::warn!(error = %e, "could not record the reconciled send; will try again");
                return self.later(self.config.reconcile_poll);
            }
            Ok(MarkSent::OtherRun) => {
                tracing::warn!(%sid, "the message found is another run's; still resolving");
                return self.later(self.config.reconcile_poll);
            }
            Ok(_) => {}
        }
        if let Err(e) = self.open_ladder_of_sent(req, false).await {
            tracing::warn!(error = %e, "could not open a found callback's ladder; will try again");
            return self.later(self.config.reconcile_poll);
        }
        self.stats.record(SmsEvent::Reconciled);
        tracing::info!(%sid, "an earlier attempt's send was found; not sending again");
        if u.escalated {
            self.notify_resolved(req, "found-sent", Some(sid)).await;
        }
        Outcome::Completed(
            json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true, "reconciled": true}),
        )
    }

    /// A send that cannot be told apart from another message: settled `unknown`, only once a
    /// person has been told (an escalation that fails leaves the attempt open, and the next
    /// resolver tries again).
    async fn settle_indistinct(
        &self,
        req: &CallbackRequest,
        u: &Unresolved,
        found: evidence::LookAlikes,
    ) -> Outcome {
        let reason = indistinct_reason(found);
        if !self
            .escalate_unknown(req, u, &reason, EscalationKind::UnknownSettled)
            .await
        {
            return self.later(self.config.reconcile_poll);
        }
        match self
            .window
            .settle_unknown(&req.run_id, &u.token, &reason)
            .await
        {
            Ok(_) => {
                self.stats.record(SmsEvent::Unknown);
                Outcome::Completed(
                    json!({"runId": req.run_id, "messageSid": null, "status": "unknown", "deduplicated": false}),
                )
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not settle the unknown attempt; will try again");
                self.later(self.config.reconcile_poll)
            }
        }
    }

    /// Escalate an attempt whose outcome stays unknown; true once the escalation exists.
    ///
    /// The attempt's `escalated` flag is written only after the escalation exists (the
    /// escalator's own markers make a repeat harmless), so an escalation that met an error is
    /// tried again by the next resolver instead of being flagged as done.
    pub(super) async fn escalate_unknown(
        &self,
        req: &CallbackRequest,
        u: &Unresolved,
        reason: &str,
        kind: crate::escalation::EscalationKind,
    ) -> bool {
        if u.escalated && kind == crate::escalation::EscalationKind::Unknown {
            return true;
        }
        let e = crate::escalation::Escalation {
            run_id: req.run_id.clone(),
            reason: reason.to_string(),
            last_status: None,
            error_code: None,
            kind,
        };
        if let Err(err) = self.escalator.escalate(&e).await {
            tracing::error!(error = %err, "could not escalate an unknown send; will try again");
            return false;
        }
        if let Err(e) = self.window.flag_escalated(&req.run_id).await {
            tracing::warn!(error = %e, "could not flag the escalation (it exists); will look again");
        }
        true
    }

    /// Not sent for a step of ours that failed before the create (`reason`): the claim is
    /// released and the job comes back after `RINGBACK_RETRY_LATER_MS`.
    pub(super) async fn give_back(
        &self,
        req: &CallbackRequest,
        token: &str,
        reason: &str,
    ) -> Outcome {
        let wait = self.config.retry_later_default;
        if let Err(e) = self
            .window
            .release(&req.run_id, token, reason, "released", wait)
            .await
        {
            tracing::warn!(error = %e, "could not release the claim");
        }
        tracing::warn!(reason = %redact(reason), "not sent; retrying later");
        self.later(wait)
    }

    /// A callback a fault of this deployment (or of its destination) holds: Twilio is not
    /// called; the claim is released as `retry` (its fence kept, as after a 429), the job waits
    /// for the next probe without using an attempt; held past `RINGBACK_HOLD_ESCALATE_MS`, it
    /// is escalated once as `held`, and still sent once the fault is fixed.
    pub(super) async fn held(
        &self,
        req: &CallbackRequest,
        token: &str,
        since: i64,
        reason: &str,
    ) -> Outcome {
        self.stats.record(SmsEvent::Held);
        let wait = hold::PROBE_EVERY;
        // a held text's ladder climbs meanwhile: its calls go by the voice path
        if let Err(e) = self.open_ladder(req).await {
            tracing::warn!(error = %e, "could not open a held callback's ladder; the next probe tries again");
        }
        if let Err(e) = self
            .window
            .release(&req.run_id, token, reason, "released", wait)
            .await
        {
            tracing::warn!(error = %e, "could not release a held claim");
        }
        let held_for = now_ms() - since;
        if held_for >= self.config.hold_escalate.as_millis() as i64
            && !self.stats.holds.escalated(&req.run_id)
        {
            let e = crate::escalation::Escalation {
                run_id: req.run_id.clone(),
                reason: format!(
                    "held for {} s by a fault of this deployment: {reason}",
                    held_for / 1000
                ),
                last_status: None,
                error_code: None,
                kind: crate::escalation::EscalationKind::Held,
            };
            match self.escalator.escalate(&e).await {
                Ok(_) => self.stats.holds.note_escalated(&req.run_id),
                Err(err) => {
                    tracing::warn!(error = %err, "could not escalate a held callback; will try again")
                }
            }
        }
        self.later(wait)
    }

    /// A claim made inside the callback's quiet hours (or too close to their start): Twilio is
    /// not called; the claim is released as `retry` due when they end (`opens`, ms on Redis's
    /// clock), its fence kept, and the caller comes back then.
    pub(super) async fn quiet_hold(
        &self,
        req: &CallbackRequest,
        token: &str,
        opens: i64,
    ) -> Outcome {
        self.stats.record(SmsEvent::Quiet);
        let wait = Duration::from_millis((opens - self.window.now()).max(0) as u64)
            .max(self.config.retry_later_default);
        let reason = format!("{} {}", crate::quiet::HELD_REASON, crate::quiet::iso(opens));
        if let Err(e) = self
            .window
            .release(&req.run_id, token, &reason, "released", wait)
            .await
        {
            tracing::warn!(error = %e, "could not hand back a claim made inside quiet hours; the sweep resolves it");
        }
        tracing::info!(run_id = %req.run_id, opens_at = opens, "inside quiet hours; not sent until they end");
        Outcome::DelayUntil(self.window.to_local(opens))
    }

    /// Twilio refused a create for `blame`: hold, with the error line once per interval.
    pub(super) fn start_hold(
        &self,
        blame: ringback_twilio::blame::Blame,
        to: &str,
        e: &ringback_twilio::ApiError,
    ) -> (i64, String) {
        let meaning = e
            .code
            .and_then(ringback_twilio::blame::meaning)
            .unwrap_or("a refusal that is no verdict on the message");
        let reason = format!("{e} ({meaning})");
        let (since, log_due) = self.stats.holds.hold(blame, to, &reason, now_ms());
        if log_due {
            let scope = match blame {
                ringback_twilio::blame::Blame::Destination => "sending to this destination",
                _ => "this deployment",
            };
            tracing::error!(error = %redact(&reason), destination = %ringback_twilio::blame::destination_of(to), "Twilio refuses creates for a fault of {scope}: no callback is failed; holding them and probing every {} s until it is fixed", hold::PROBE_EVERY.as_secs());
        }
        (since, reason)
    }

    /// A run escalated as still resolving was resolved: the escalation queue hears of it.
    pub(super) async fn notify_resolved(
        &self,
        req: &CallbackRequest,
        how: &str,
        sid: Option<&str>,
    ) {
        if let Err(e) = self.escalator.resolved(&req.run_id, how, sid).await {
            tracing::warn!(error = %e, "could not queue the resolution notice of an escalated callback");
        }
    }

    /// Twilio created the message already failed (a 2xx whose status is terminal-failed): the
    /// record says so, and the run is escalated as undelivered.
    pub(super) async fn escalate_failed_create(
        &self,
        req: &CallbackRequest,
        m: &ringback_twilio::Message,
    ) {
        let status = m.status.as_deref().unwrap_or_default();
        if !crate::receipts::is_failed_status(status) {
            return;
        }
        let e = crate::escalation::Escalation {
            run_id: req.run_id.clone(),
            reason: format!("Twilio created the message already {status}"),
            last_status: Some(status.to_string()),
            error_code: m.error_code.map(|c| c.to_string()),
            kind: crate::escalation::EscalationKind::Undelivered,
        };
        if let Err(err) = self.escalator.escalate(&e).await {
            // the record shows the failed status: the reconciler's poll escalates it
            tracing::error!(error = %err, "could not escalate a message created failed; the poll will");
        }
    }
}
