//! The SMS processor: texts the human exactly once per `runId`, whatever crashes in between.
//!
//! Each attempt goes through the window ([`crate::callbacks::window`]): claim, send through Twilio, mark
//! sent, complete. A claim already `sent` completes without sending; a claim held by another
//! attempt delays the job until it expires (never drops it, unlike the legacy
//! `if (!claimed) return;`). Twilio's answer decides the rest: permanent → release and fail
//! unrecoverably; retry later → release and delay; ambiguous → hold the claim and resolve
//! (receipt, then a lookup with the list call, then the reconcile window) before any resend.

use std::time::Duration;

use serde_json::json;

use crate::callbacks::callback::CallbackRequest;
use crate::callbacks::escalation::EscalationKind;
use crate::callbacks::window::{Claim, MarkSent, Marked, Unresolved, Window};
use crate::queue::commands::now_ms;
use crate::queue::job::Job;
use crate::queue::processor::{JobContext, Outcome, Processor};
use crate::redact::{mask, redact};
use crate::twilio::{CreateMessage, SendOutcome, TwilioClient};
use std::sync::atomic::Ordering;

mod config;
mod crash;
mod evidence;
mod fused;
pub mod hold;
mod stats;

pub use config::{
    LOOKBACK, LegacyFleet, MAX_VALIDITY_S, SAFETY_MARGIN, SmsConfig, validity_period,
};
pub use crash::{CrashAt, CrashPoint};
use evidence::Resolution;
pub use stats::{SmsEvent, SmsStats};

/// The processor. Cheap to clone per job: Redis and HTTP clients are shared handles.
#[derive(Clone)]
pub struct SmsProcessor {
    stats: std::sync::Arc<SmsStats>,
    config: SmsConfig,
    window: Window,
    twilio: TwilioClient,
    receipts: crate::callbacks::receipts::Receipts,
    escalator: crate::callbacks::escalation::Escalator,
    worker_id: String,
    /// Fold the sent marker and the next claim into the job's finishing call ([`fused`]).
    fused: bool,
    /// Twilio's answers to this process's creates, shared by every clone ([`evidence`]).
    answers: std::sync::Arc<evidence::Answers>,
}

impl SmsProcessor {
    /// `prefix`/`queue`: the callback queue (escalation jobs go to `<queue>-escalations` unless
    /// configured otherwise; fallback texts go to the callback queue).
    pub fn new(
        config: SmsConfig,
        conn: crate::store::connection::Conn,
        twilio: TwilioClient,
        prefix: &str,
        queue: &str,
    ) -> Self {
        let is_cluster = conn.is_cluster();
        let waits = conn.waits_for_replicas();
        let window = Window::new(
            conn.clone(),
            Default::default(),
            config.claim_prefix.clone(),
            config.times(twilio.config().timeout),
        );
        let (receipts, escalator) = config.after_send(conn, prefix, queue);
        Self {
            stats: Default::default(),
            config,
            window,
            twilio,
            receipts,
            escalator,
            worker_id: uuid::Uuid::new_v4().to_string(),
            // never on a cluster, whatever the window's layout says (one script, two slots);
            // never with an explicit replica wait: the fused finish writes the sent marker and
            // the next run's claim inside the job's finishing call, which carries no `WAIT`,
            // while the window's own calls send theirs in the same pipeline
            fused: !is_cluster && !waits,
            answers: Default::default(),
        }
    }

    /// The attempt counters (shared by every clone).
    pub fn stats(&self) -> std::sync::Arc<SmsStats> {
        self.stats.clone()
    }

    pub fn receipts(&self) -> &crate::callbacks::receipts::Receipts {
        &self.receipts
    }

    pub fn escalator(&self) -> &crate::callbacks::escalation::Escalator {
        &self.escalator
    }

    /// The reconciliation poller for the receipts this processor's sends expect.
    pub fn reconciler(&self) -> crate::callbacks::reconcile::Reconciler {
        crate::callbacks::reconcile::Reconciler {
            receipts: self.receipts.clone(),
            twilio: self.twilio.clone(),
            escalator: self.escalator.clone(),
            delivery_deadline: self.config.delivery_deadline,
        }
    }

    pub fn window(&self) -> &Window {
        &self.window
    }

    /// This process's worker id (on attempt records).
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// How often the orphan sweep runs.
    pub fn sweep_interval(&self) -> Duration {
        self.config.reconcile_poll
    }

    /// Commands on the callback queue (for the scan of its failed set).
    /// How long a sent message may go without a final receipt before it is escalated.
    pub fn delivery_deadline(&self) -> Duration {
        self.config.delivery_deadline
    }

    pub fn queue_commands(&self) -> &crate::queue::commands::Commands {
        &self.escalator.callbacks
    }

    fn crash(&self, point: CrashPoint, run_id: &str) {
        crash::maybe_abort(self.config.crash_at, point, run_id);
    }

    /// The StatusCallback URL: the run and the attempt token, so a receipt names the attempt
    /// that sent.
    fn status_callback(&self, run_id: &str, token: &str) -> Option<String> {
        self.config
            .status_callback_url
            .as_deref()
            .map(|url| status_callback_url(url, run_id, token))
    }

    /// A job delay of `d`, on Redis's clock (as the window last read it).
    fn later(&self, d: Duration) -> Outcome {
        Outcome::DelayUntil(self.window.now() + d.as_millis() as i64)
    }

    /// Twilio refused this worker's credentials: a configuration fault, not a verdict on the
    /// callback. Counted, readiness turns false, one error line per interval.
    fn auth_refused(&self, what: &str, e: &dyn std::fmt::Display) {
        self.stats.record(SmsEvent::AuthRefused);
        let now = now_ms();
        let since = &self.stats.auth_refused_since;
        let _ = since.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        let last = self.stats.auth_logged_at.load(Ordering::Relaxed);
        if now - last >= AUTH_LOG_EVERY.as_millis() as i64
            && self
                .stats
                .auth_logged_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::error!(error = %e, "Twilio refused this worker's credentials on {what}: no callback is failed or burned; retrying until they work (check TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN or TWILIO_API_KEY/SECRET)");
        }
    }

    fn auth_ok(&self) {
        if self.stats.auth_refused_since.swap(0, Ordering::Relaxed) != 0 {
            self.stats.auth_logged_at.store(0, Ordering::Relaxed);
            tracing::info!("Twilio accepts this worker's credentials again");
        }
    }

    /// Run one attempt of a callback for `job_id` (a queue job, or the orphan sweep and the
    /// drain: what an attempt gives up stays open in the window either way).
    pub async fn attempt(&self, job_id: &str, req: &CallbackRequest) -> Outcome {
        self.attempt_in(job_id, req, None).await
    }

    /// [`SmsProcessor::attempt`] for a queue job: with its context, the attempt may start from
    /// the claim the previous job's finishing call made, and folds its own last write into this
    /// job's finishing call ([`fused`]).
    async fn attempt_in(
        &self,
        job_id: &str,
        req: &CallbackRequest,
        ctx: Option<&JobContext>,
    ) -> Outcome {
        let from = req.from.clone().unwrap_or_default();
        let mut supersede: Option<String> = None;
        // an attempt escalated as still resolving was proven never sent: its resend is notified
        let mut escalated_before = false;
        let mut prepared = self.prepared_claim(ctx, &req.run_id).await;
        let ctx = self.fused_ctx(ctx);
        // At most: resolve an unknown send, find it unproven past the window, claim anew.
        for _ in 0..3 {
            let token = uuid::Uuid::new_v4().simple().to_string();
            let claim = match prepared.take() {
                Some(claim) => Ok(claim),
                None => {
                    self.window
                        .claim(
                            &req.run_id,
                            &token,
                            supersede.as_deref(),
                            job_id,
                            &self.worker_id,
                            &req.to,
                            &from,
                            &req.body,
                        )
                        .await
                }
            };
            match claim {
                Err(e) => {
                    tracing::warn!(error = %e, "claim failed; will try again");
                    return self.later(self.config.retry_later_default);
                }
                Ok(Claim::Sent(sid)) => {
                    self.stats.record(SmsEvent::Deduplicated);
                    tracing::info!(sid = ?sid, "already sent; not sending again");
                    if let Some(ctx) = ctx {
                        // nothing to write; the finishing call still claims the next job's run
                        ctx.finish_with(self.finish_step(req, fused::Mark::Nothing));
                    }
                    return Outcome::Completed(
                        json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true}),
                    );
                }
                Ok(Claim::Busy(ttl)) => {
                    self.stats.record(SmsEvent::Busy);
                    tracing::info!(
                        wait_ms = ttl.as_millis() as u64,
                        "another attempt holds the claim; waiting for it"
                    );
                    return self.later(ttl + Duration::from_millis(50));
                }
                Ok(Claim::Claimed { token }) => {
                    self.crash(CrashPoint::AfterClaim, &req.run_id);
                    if let hold::Admit::Wait { since, reason } =
                        self.stats.holds.admits(&req.to, now_ms())
                    {
                        return self.held(req, &token, since, &reason).await;
                    }
                    let outcome = self.send(req, &token, ctx).await;
                    if escalated_before && matches!(outcome, Outcome::Completed(_)) {
                        self.notify_resolved(req, "sent", None).await;
                    }
                    return outcome;
                }
                Ok(Claim::Resolve(u)) => match self.resolve(req, &u).await {
                    Resolution::Sent(sid) => {
                        match self
                            .window
                            .mark_sent(&req.run_id, &u.token, &sid, "queued", Marked::Found)
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
                        self.stats.record(SmsEvent::Reconciled);
                        tracing::info!(%sid, "an earlier attempt's send was found; not sending again");
                        if u.escalated {
                            self.notify_resolved(req, "found-sent", Some(&sid)).await;
                        }
                        return Outcome::Completed(
                            json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true, "reconciled": true}),
                        );
                    }
                    // the claim call just touched the attempt: the sweep sees a resolver alive
                    Resolution::Wait(d) => return self.later(d),
                    Resolution::Indistinct(found) => {
                        let reason = indistinct_reason(found);
                        // settled only once a person has been told: an escalation that
                        // fails leaves the attempt open, and the next resolver tries again
                        if !self
                            .escalate_unknown(req, &u, &reason, EscalationKind::UnknownSettled)
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
                                return Outcome::Completed(
                                    json!({"runId": req.run_id, "messageSid": null, "status": "unknown", "deduplicated": false}),
                                );
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "could not settle the unknown attempt; will try again");
                                return self.later(self.config.reconcile_poll);
                            }
                        }
                    }
                    Resolution::Lost => {
                        self.stats.record(SmsEvent::Lost);
                        tracing::warn!(
                            "no evidence of an earlier send within the reconcile window; sending"
                        );
                        // the next claim replaces the attempt in the same step (no gap in the claim)
                        supersede = Some(u.token.clone());
                        escalated_before |= u.escalated;
                    }
                },
            }
        }
        self.later(self.config.reconcile_poll)
    }

    /// Escalate an attempt whose outcome stays unknown; true once the escalation exists.
    ///
    /// The attempt's `escalated` flag is written only after the escalation exists (the
    /// escalator's own markers make a repeat harmless), so an escalation that met an error is
    /// tried again by the next resolver instead of being flagged as done.
    async fn escalate_unknown(
        &self,
        req: &CallbackRequest,
        u: &Unresolved,
        reason: &str,
        kind: crate::callbacks::escalation::EscalationKind,
    ) -> bool {
        if u.escalated && kind == crate::callbacks::escalation::EscalationKind::Unknown {
            return true;
        }
        let e = crate::callbacks::escalation::Escalation {
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

    /// A callback a fault of this deployment (or of its destination) holds: Twilio is not
    /// called; the claim is released as `retry` (its fence kept, as after a 429), the job waits
    /// for the next probe without using an attempt; held past `RINGBACK_HOLD_ESCALATE_MS`, it
    /// is escalated once as `held`, and still sent once the fault is fixed.
    async fn held(&self, req: &CallbackRequest, token: &str, since: i64, reason: &str) -> Outcome {
        self.stats.record(SmsEvent::Held);
        let wait = hold::PROBE_EVERY;
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
            let e = crate::callbacks::escalation::Escalation {
                run_id: req.run_id.clone(),
                reason: format!(
                    "held for {} s by a fault of this deployment: {reason}",
                    held_for / 1000
                ),
                last_status: None,
                error_code: None,
                kind: crate::callbacks::escalation::EscalationKind::Held,
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

    /// Twilio refused a create for `blame`: hold, with the error line once per interval.
    fn start_hold(
        &self,
        blame: crate::twilio::blame::Blame,
        to: &str,
        e: &crate::twilio::ApiError,
    ) -> (i64, String) {
        let meaning = e
            .code
            .and_then(crate::twilio::blame::meaning)
            .unwrap_or("a refusal that is no verdict on the message");
        let reason = format!("{e} ({meaning})");
        let (since, log_due) = self.stats.holds.hold(blame, to, &reason, now_ms());
        if log_due {
            let scope = match blame {
                crate::twilio::blame::Blame::Destination => "sending to this destination",
                _ => "this deployment",
            };
            tracing::error!(error = %redact(&reason), destination = %crate::twilio::blame::destination_of(to), "Twilio refuses creates for a fault of {scope}: no callback is failed; holding them and probing every {} s until it is fixed", hold::PROBE_EVERY.as_secs());
        }
        (since, reason)
    }

    /// A run escalated as still resolving was resolved: the escalation queue hears of it.
    async fn notify_resolved(&self, req: &CallbackRequest, how: &str, sid: Option<&str>) {
        if let Err(e) = self.escalator.resolved(&req.run_id, how, sid).await {
            tracing::warn!(error = %e, "could not queue the resolution notice of an escalated callback");
        }
    }

    /// Twilio created the message already failed (a 2xx whose status is terminal-failed): the
    /// record says so, and the run is escalated as undelivered.
    async fn escalate_failed_create(&self, req: &CallbackRequest, m: &crate::twilio::Message) {
        let status = m.status.as_deref().unwrap_or_default();
        if !crate::callbacks::receipts::is_failed_status(status) {
            return;
        }
        let e = crate::callbacks::escalation::Escalation {
            run_id: req.run_id.clone(),
            reason: format!("Twilio created the message already {status}"),
            last_status: Some(status.to_string()),
            error_code: m.error_code.map(|c| c.to_string()),
            kind: crate::callbacks::escalation::EscalationKind::Undelivered,
        };
        if let Err(err) = self.escalator.escalate(&e).await {
            // the record shows the failed status: the reconciler's poll escalates it
            tracing::error!(error = %err, "could not escalate a message created failed; the poll will");
        }
    }

    /// `ctx`: the fused finish's job context (the sent marker then rides on the completion).
    async fn send(&self, req: &CallbackRequest, token: &str, ctx: Option<&JobContext>) -> Outcome {
        // a long runId's receipts name it by its short key: the link is written before Twilio
        // can send one (nothing is sent until it is)
        if self.config.status_callback_url.is_some()
            && let Some(key) = crate::callbacks::callback::short_key(&req.run_id)
            && let Err(e) = self.receipts.link_short_key(&key, &req.run_id).await
        {
            let wait = self.config.retry_later_default;
            let reason = format!("could not link the run's short key: {e}");
            if let Err(e) = self
                .window
                .release(&req.run_id, token, &reason, "released", wait)
                .await
            {
                tracing::warn!(error = %e, "could not release the claim");
            }
            tracing::warn!(reason = %redact(&reason), "not sent; retrying later");
            return self.later(wait);
        }
        let msg = CreateMessage {
            to: req.to.clone(),
            body: req.body.clone(),
            from: req.from.clone(),
            status_callback: self.status_callback(&req.run_id, token),
        };
        match self.twilio.create_message(&msg).await {
            SendOutcome::Accepted(m) => {
                self.auth_ok();
                self.crash(CrashPoint::AfterProviderAccept, &req.run_id);
                self.answers.remember(token, &m.sid);
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
                    ctx.finish_with(self.finish_step(req, mark));
                    return Outcome::Completed(json!({
                        "runId": req.run_id, "messageSid": m.sid, "status": m.status, "deduplicated": false,
                    }));
                }
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
                    self.start_hold(crate::twilio::blame::Blame::Deployment, &req.to, &e);
                self.held(req, token, since, &reason).await
            }
            SendOutcome::Permanent(e) => {
                self.auth_ok();
                self.stats.record(SmsEvent::Permanent);
                // Escalate before closing the run: a crash in between leaves the attempt open
                // (the sweep resolves it), never a closed run nobody was told of (model: F2).
                let escalation = crate::callbacks::escalation::Escalation {
                    run_id: req.run_id.clone(),
                    reason: format!("send failed permanently: {e}"),
                    last_status: None,
                    error_code: e.code.map(|c| c.to_string()),
                    kind: crate::callbacks::escalation::EscalationKind::Permanent,
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

/// Why an attempt with unlinked look-alikes is settled unknown, for the escalation and record.
fn indistinct_reason(found: evidence::LookAlikes) -> String {
    let what = match (found.found, found.redacted) {
        (1, 0) => "a message to this recipient with this body".to_string(),
        (1, 1) => "a message to this recipient whose body Twilio redacted".to_string(),
        (n, 0) => format!("{n} messages to this recipient with this body"),
        (n, r) => format!("{n} messages to this recipient with this body ({r} redacted)"),
    };
    format!(
        "the send's answer was lost and {what} exists that no receipt links to this run (it may be this run's, or another run's or sender's): the callback may have been sent, and is not sent again"
    )
}

/// `url` with the run and the attempt token in its query. The query goes before any
/// `#rc=…&rp=…` fragment: that part is Twilio's own connection overrides, which must stay last.
/// A long runId goes as its short key (`runKey`, [`crate::callbacks::callback::short_key`]).
fn status_callback_url(url: &str, run_id: &str, token: &str) -> String {
    let (base, fragment) = url.split_at(url.find('#').unwrap_or(url.len()));
    let sep = if base.contains('?') { '&' } else { '?' };
    let run = match crate::callbacks::callback::short_key(run_id) {
        Some(key) => ("runKey", key),
        None => ("runId", run_id.to_string()),
    };
    let encoded: String =
        serde_urlencoded::to_string([(run.0, run.1.as_str()), ("attempt", token)])
            .unwrap_or_default();
    format!("{base}{sep}{encoded}{fragment}")
}

/// How long a job of another name goes back to delayed before a worker fetches it again: long
/// enough that ringback does not spin on a queue it shares with the worker that handles it.
const OTHER_JOB_DELAY: Duration = Duration::from_secs(5);
/// How many distinct other job names are logged (each once): a producer inventing names must
/// not grow the set without bound.
const OTHER_NAMES_LOGGED: usize = 64;

/// While Twilio refuses the credentials: how often a callback tries again, and the error line.
const AUTH_RETRY: Duration = Duration::from_secs(5);
const AUTH_LOG_EVERY: Duration = Duration::from_secs(30);

impl Processor for SmsProcessor {
    async fn process(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let req = match CallbackRequest::parse(&job.data) {
            Ok(r) => r,
            Err(reason) => {
                if let Some(prepared) = ctx.prepared() {
                    self.hand_back_prepared(prepared).await;
                }
                if !self.escalate_invalid(job, &reason).await {
                    return self.later(self.config.retry_later_default);
                }
                return Outcome::unrecoverable(format!("invalid callback job: {reason}"));
            }
        };
        let span = tracing::info_span!("callback", run_id = %req.run_id);
        tracing::Instrument::instrument(self.attempt_in(&job.id, &req, Some(ctx)), span).await
    }

    fn declines(&self, job: &Job) -> Option<Duration> {
        if self.config.callback_job_names.contains(&job.name) {
            return None;
        }
        self.stats.record(SmsEvent::OtherJob);
        let first =
            self.stats.other_names.lock().is_ok_and(|mut seen| {
                seen.len() < OTHER_NAMES_LOGGED && seen.insert(job.name.clone())
            });
        if first {
            tracing::warn!(job = %job.id, name = %job.name, callbacks = ?self.config.callback_job_names,
                "a job of a name that is not a callback's (RINGBACK_CALLBACK_JOB_NAMES): left for the worker that handles it, back in {} s", OTHER_JOB_DELAY.as_secs());
        }
        Some(OTHER_JOB_DELAY)
    }

    async fn unprepared(&self, _job: &Job, prepared: redis::Value) {
        self.hand_back_prepared(&prepared).await;
    }

    async fn unreadable(&self, job: &Job, reason: &str) -> bool {
        self.escalate_invalid(job, reason).await
    }
}

impl SmsProcessor {
    /// A job ringback will not text: a person hears of it (escalated `invalid`, with the reason,
    /// under `escalation:job:<jobId>`) before it fails; false when the escalation failed (the
    /// job is kept and tried again).
    async fn escalate_invalid(&self, job: &Job, reason: &str) -> bool {
        let e = crate::callbacks::escalation::Escalation {
            run_id: format!("job:{}", job.id),
            reason: format!("invalid callback job {}: {reason}", job.id),
            last_status: None,
            error_code: None,
            kind: crate::callbacks::escalation::EscalationKind::Invalid,
        };
        if let Err(err) = self.escalator.escalate(&e).await {
            tracing::warn!(error = %err, job = %job.id, "could not escalate an invalid callback job; will try again");
            return false;
        }
        self.stats.record(SmsEvent::Invalid);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_callback_keeps_twilios_fragment_last() {
        assert_eq!(
            status_callback_url("https://h/cb#rc=5&rp=5xx", "r", "t"),
            "https://h/cb?runId=r&attempt=t#rc=5&rp=5xx"
        );
        assert_eq!(
            status_callback_url("https://h/cb?x=1", "r", "t"),
            "https://h/cb?x=1&runId=r&attempt=t"
        );
        let long = "r".repeat(400);
        let key = crate::callbacks::callback::short_key(&long).unwrap();
        assert_eq!(
            status_callback_url("https://h/cb", &long, "t"),
            format!("https://h/cb?runKey={key}&attempt=t")
        );
    }

    #[test]
    fn crash_points_parse() {
        assert_eq!(
            "after-claim".parse::<CrashAt>().unwrap(),
            CrashAt {
                point: CrashPoint::AfterClaim,
                probability: 1.0
            }
        );
        assert_eq!(
            "before-complete:0.5"
                .parse::<CrashAt>()
                .unwrap()
                .probability,
            0.5
        );
        assert!("sometime".parse::<CrashAt>().is_err());
        assert!("after-claim:2".parse::<CrashAt>().is_err());
    }

    #[test]
    fn invariants_refuse_a_pending_ttl_shorter_than_a_call() {
        let lock = (Duration::from_secs(30), Duration::from_secs(30));
        let ok = SmsConfig {
            status_callback_url: Some("https://ringback.test/api/notify/webhook/status".into()),
            ..SmsConfig::default()
        };
        assert!(
            ok.validate(Duration::from_secs(8), lock.0, lock.1)
                .unwrap()
                .is_empty(),
            "defaults hold and warn of nothing"
        );
        let no_receipts = SmsConfig::default()
            .validate(Duration::from_secs(8), lock.0, lock.1)
            .unwrap();
        assert!(
            no_receipts[0].starts_with("RINGBACK_STATUS_CALLBACK_URL is not set"),
            "{no_receipts:?}"
        );
        let err = ok
            .validate(Duration::from_secs(13), lock.0, lock.1)
            .unwrap_err();
        assert_eq!(err.setting, "RINGBACK_PENDING_TTL_MS");
        let short_sent = SmsConfig {
            sent_ttl: Duration::from_secs(10),
            ..SmsConfig::default()
        };
        assert_eq!(
            short_sent
                .validate(Duration::from_secs(1), lock.0, lock.1)
                .unwrap_err()
                .setting,
            "RINGBACK_SENT_TTL_MS"
        );
        let short_lease = SmsConfig {
            claim_lease: Duration::from_secs(100),
            ..SmsConfig::default()
        };
        assert_eq!(
            short_lease
                .validate(Duration::from_secs(8), lock.0, lock.1)
                .unwrap_err()
                .setting,
            "RINGBACK_CLAIM_LEASE_MS",
            "30 s lock + 2 × 30 s sweep + 15 s claim = 105 s: a 100 s lease could lapse before stall recovery"
        );
    }
}
