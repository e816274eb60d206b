//! The provider call and what each of Twilio's answers makes of the claim.

use super::{AUTH_RETRY, CrashPoint, SmsEvent, SmsProcessor, fused};
use crate::callback::CallbackRequest;
use crate::replies::optouts::OPTED_OUT;
use crate::window::{MarkSent, Marked};
use ringback_queue::processor::{JobContext, Outcome};
use ringback_shared::clock::now_ms;
use ringback_shared::redact::{mask, redact};
use ringback_twilio::{CreateMessage, SendOutcome};
use serde_json::json;
use std::time::Duration;

impl SmsProcessor {
    /// `ctx`: the fused finish's job context (the sent marker then rides on the completion).
    /// `trace`: the job's span, parent of the call's and the marker's.
    pub(super) async fn send(
        &self,
        req: &CallbackRequest,
        token: &str,
        ctx: Option<&JobContext>,
        trace: &ringback_shared::trace::Step,
    ) -> Outcome {
        // a long runId's receipts name it by its short key: the link is written before Twilio
        // can send one (nothing is sent until it is)
        if self.config.status_callback_url.is_some()
            && let Some(key) = crate::callback::short_key(&req.run_id)
            && let Err(e) = self.receipts.link_short_key(&key, &req.run_id).await
        {
            let reason = format!("could not link the run's short key: {e}");
            return self.give_back(req, token, &reason).await;
        }
        let msg = CreateMessage {
            to: req.to.clone(),
            body: req.body.clone(),
            from: req.from.clone(),
            status_callback: self.status_callback(
                &req.run_id,
                token,
                trace.traceparent().as_deref(),
            ),
            validity_period: self.validity_before_quiet(req),
        };
        // no number or body in the span: the call's outcome only
        let call = trace.child("twilio messages.create");
        let answer = self.twilio.create_message(&msg).await;
        call.attribute("ringback.twilio.outcome", answer.kind());
        drop(call);
        match answer {
            SendOutcome::Accepted(m) => {
                self.auth_ok();
                self.crash(CrashPoint::AfterProviderAccept, &req.run_id);
                self.answers.remember(token, &req.run_id, &m.sid);
                self.replies
                    .opt_outs
                    .sent(req.from.as_deref().unwrap_or(&self.sender), &req.to)
                    .await;
                let (hold_ended, escalated_held) = self.stats.holds.accepted(&req.run_id, &req.to);
                if hold_ended {
                    tracing::info!(
                        "Twilio takes creates again: the held callbacks go out from now on"
                    );
                }
                if escalated_held {
                    self.notify_resolved(req, "sent", Some(&m.sid)).await;
                }
                self.escalate_failed_create(req, &m).await;
                let status = m.status.as_deref().unwrap_or("queued");
                if let Some(ctx) = ctx {
                    // The marker is written by the job's finishing call, first and whatever the
                    // lock says; if that call never answers, the attempt record still says
                    // `claimed` and the next attempt finds this message (receipt or lookup).
                    let mark = fused::Mark::Sent {
                        token,
                        sid: &m.sid,
                        status,
                    };
                    ctx.finish_with(self.finish_step(req, mark, ctx.resent_within()));
                    trace.event("sent marker rides on the finishing call");
                    return Outcome::Completed(json!({
                        "runId": req.run_id, "messageSid": m.sid, "status": m.status, "deduplicated": false,
                    }));
                }
                let marking = trace.child("sent marker");
                let mut delay = Duration::from_millis(50);
                let mut marked = false;
                for _ in 0..6 {
                    match self
                        .window
                        .mark_sent(&req.run_id, token, &m.sid, status, Marked::Sent)
                        .await
                    {
                        Ok(done) => {
                            if done == MarkSent::Overrun {
                                tracing::warn!(sid = %m.sid, "sent marker written after the claim changed hands (window overrun)");
                            }
                            marked = true;
                            break;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "could not write the sent marker; retrying");
                            tokio::time::sleep(delay).await;
                            delay *= 2;
                        }
                    }
                }
                if !marked {
                    marking.error("not written");
                }
                drop(marking);
                if !marked {
                    // The attempt record still says "claimed" and the claim (a lease) stands: the
                    // next attempt or the sweep resolves it by receipt or lookup and finds this
                    // message, so nothing is sent twice.
                    return self.later(self.config.reconcile_poll);
                }
                self.crash(CrashPoint::AfterSentMarker, &req.run_id);
                self.stats.record(SmsEvent::Sent);
                tracing::info!(sid = %m.sid, to = %mask(&req.to), "sent");
                Outcome::Completed(json!({
                    "runId": req.run_id, "messageSid": m.sid, "status": m.status, "deduplicated": false,
                }))
            }
            SendOutcome::AuthRefused(e) => {
                // Twilio created nothing: keep the claim and the callback (retry), use no attempt.
                self.auth_refused("create", &e);
                let wait = self.config.retry_later_default.max(AUTH_RETRY);
                if let Err(re) = self
                    .window
                    .release(&req.run_id, token, &e.to_string(), "released", wait)
                    .await
                {
                    tracing::warn!(error = %re, "could not release the claim");
                }
                self.later(wait)
            }
            SendOutcome::Held { blame, error } => {
                self.auth_ok();
                let (since, reason) = self.start_hold(blame, &req.to, &error);
                self.held(req, token, since, &reason).await
            }
            SendOutcome::Permanent(e)
                if e.code
                    .is_some_and(|code| self.stats.holds.burst(code, &req.to, now_ms())) =>
            {
                // the same refusal from many destinations at once: the deployment's
                self.auth_ok();
                let (since, reason) =
                    self.start_hold(ringback_twilio::blame::Blame::Deployment, &req.to, &e);
                self.held(req, token, since, &reason).await
            }
            SendOutcome::Permanent(e) => {
                self.auth_ok();
                self.stats.record(SmsEvent::Permanent);
                let sender = req.from.as_deref().unwrap_or(&self.sender);
                let reason = if e.code == Some(OPTED_OUT as i64) {
                    // Twilio is authoritative: kept to say why, never to skip a later send
                    if let Err(err) = self.replies.opt_outs.record(sender, &req.to, "21610").await {
                        tracing::warn!(error = %err, "could not record an opt-out");
                    }
                    format!(
                        "the recipient opted out of texts from {sender} (they replied STOP; Twilio refuses every text to them until they reply START): {e}"
                    )
                } else {
                    format!("send failed permanently: {e}")
                };
                if req.expect_reply.is_some()
                    && let Err(err) = self.replies.withdraw(&req.run_id, &req.to).await
                {
                    tracing::warn!(error = %err, "could not close the question of a refused text");
                }
                // Escalate before closing the run: a crash in between leaves the attempt open
                // (the sweep resolves it), never a closed run nobody was told of (model: F2).
                let escalation = crate::escalation::Escalation {
                    run_id: req.run_id.clone(),
                    reason,
                    last_status: None,
                    error_code: e.code.map(|c| c.to_string()),
                    kind: crate::escalation::EscalationKind::Permanent,
                };
                if let Err(err) = self.escalator.escalate(&escalation).await {
                    tracing::error!(error = %err, "could not escalate a permanent send failure; will try again");
                    return self.later(self.config.retry_later_default);
                }
                if let Err(re) = self
                    .window
                    .release(
                        &req.run_id,
                        token,
                        &e.to_string(),
                        "send-failed",
                        Duration::ZERO,
                    )
                    .await
                {
                    tracing::warn!(error = %re, "could not release the claim after a permanent failure");
                }
                Outcome::unrecoverable(format!("{e}; not retried: Twilio refused the message"))
            }
            SendOutcome::RetryLater {
                retry_after,
                reason,
                ..
            } => {
                self.stats.record(SmsEvent::RetryLater);
                let wait = retry_after.unwrap_or(self.config.retry_later_default);
                if let Err(e) = self
                    .window
                    .release(&req.run_id, token, &reason, "released", wait)
                    .await
                {
                    tracing::warn!(error = %e, "could not release the claim");
                }
                tracing::info!(reason = %redact(&reason), wait_ms = wait.as_millis() as u64, "Twilio did not take the message; retrying later");
                self.later(wait)
            }
            SendOutcome::Ambiguous { reason, .. } => {
                self.stats.record(SmsEvent::Ambiguous);
                tracing::warn!(reason = %redact(&reason), "Twilio may or may not have the message; holding the claim to reconcile");
                if let Err(e) = self.window.hold(&req.run_id, token, &reason).await {
                    tracing::warn!(error = %e, "could not hold the claim; the attempt record resolves it");
                }
                self.later(self.config.reconcile_poll)
            }
        }
    }
}
