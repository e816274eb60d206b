//! The ladder sweep: every worker looks at the ladders whose next step is due and climbs them,
//! one script call deciding who starts each step ([`LadderRecord::advance`]); the step's send
//! stays inside its claim.
//!
//! - **A text step** is a callback of its own (runId `<run>:ladder:<k>`), added to the
//!   callback queue under that id: the claim/sent window texts it exactly once, quiet hours
//!   and opt-outs hold for it as for any text, and its failures climb the ladder instead of
//!   escalating.
//! - **A call step** is created here, its answer classified as a text's: accepted, marked
//!   (a call created after the person acknowledged is ended at once); refused for good, skipped
//!   and the ladder climbs; an answer lost or "try later", left claimed: once the sender's lease
//!   is over (the create's timeout and the reconcile window), whoever sweeps takes the claim
//!   ([`LadderRecord::adopt`]) and looks for the call (its status callback named the step, then
//!   Twilio's calls list for the number since the claim) before creating it, never blind.
//! - **Past the last step** the ladder is exhausted: one `unacknowledged` escalation, and for a
//!   question one `no-answer` job on the replies queue once its `replyWithin` has passed too.
//! - **Quiet hours** hold every step in its person's zone unless the callback is urgent: the
//!   step waits for the hours to end. **Calls are capped** per number per hour: past the cap a
//!   call step is skipped, recorded, and the ladder climbs on.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::json;

use super::evidence::Found;
use super::plan::Plan;
use super::record::{Adopted, Advance, LadderRecord, Marked};
use super::settings::LadderConfig;
use crate::callback::CALLBACK_JOB_OPTS;
use crate::escalation::Escalator;
use ringback_queue::calls::Calls;
use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_twilio::call::CreateCall;
use ringback_twilio::{SendOutcome, TwilioClient};

/// Ladders looked at per round.
const PER_ROUND: usize = 50;

/// Climbs the ladders: the sweep of due ladders, the sends of their steps, their ends; and the
/// questions whose time is over unanswered ([`crate::replies::Replies::sweep_unanswered`]).
#[derive(Clone, Debug)]
pub struct Climber {
    /// The ladders' records.
    pub record: LadderRecord,
    /// Twilio, for the calls.
    pub twilio: TwilioClient,
    /// The callback queue (a text step is a callback job) and its job name.
    pub callbacks: Calls,
    /// The callback job name.
    pub callback_job_name: String,
    /// The escalations (`unacknowledged`).
    pub escalator: Escalator,
    /// The replies queue (`no-answer`).
    pub replies: crate::replies::Replies,
    /// The deployment's settings.
    pub config: LadderConfig,
    /// `serve`'s webhooks (`…/api/notify/webhook`); `None`: calls take no keypad answer.
    pub webhooks: Option<super::settings::Webhooks>,
    /// How long a step's sender holds its claim before another may take it.
    pub lease: Duration,
    /// Quiet hours, when set.
    pub quiet: Option<crate::quiet::Quiet>,
    /// Drills: abort at a ladder point (`RINGBACK_CRASH_AT`, drill mode only).
    pub crash_at: Option<crate::sms::CrashAt>,
}

/// A ladder's record as read.
pub(super) struct Read {
    fields: HashMap<String, String>,
}

impl Read {
    pub(super) fn get(&self, f: &str) -> Option<&str> {
        self.fields.get(f).map(String::as_str)
    }
    fn num(&self, f: &str) -> Option<i64> {
        self.get(f).and_then(|v| v.parse().ok())
    }
    fn plan(&self) -> Option<Plan> {
        serde_json::from_str(self.get("plan")?).ok()
    }
}

impl Climber {
    /// Climb until `cancel`, a round every `every`.
    pub async fn run(self, every: Duration, cancel: tokio_util::sync::CancellationToken) {
        loop {
            if let Err(e) = self.round().await {
                tracing::warn!(error = %e, "ladder sweep failed; will retry");
            }
            tokio::select! {
                _ = cancel.cancelled() => break,
                _ = tokio::time::sleep(every) => {}
            }
        }
    }

    /// One round: end the calls a stop left ringing, then climb every due ladder. The runs
    /// looked at.
    pub async fn round(&self) -> Result<usize, Error> {
        self.hang_up().await?;
        // Redis's clock, read once a round; the steps below read it from here
        self.replies.read_clock().await?;
        let now = self.replies.now();
        self.replies.sweep_unanswered(now).await?;
        let due = self.record.due_runs(now, PER_ROUND).await?;
        for run in &due {
            if let Err(e) = self.visit(run, now).await {
                tracing::warn!(run_id = %run, error = %e, "ladder step failed; will retry");
            }
        }
        Ok(due.len())
    }

    /// End the calls a stop left ringing (kept by [`LadderRecord::hang_up_later`]).
    pub async fn hang_up(&self) -> Result<(), Error> {
        for sid in self.record.hangups().await? {
            match self.twilio.end_call(&sid).await {
                Ok(_) => {
                    tracing::info!(%sid, "ladder call ended: the person acknowledged");
                    self.record.hung_up(&sid).await?;
                }
                // an ended call cannot be ended (21220): nothing rings
                Err(ringback_twilio::TwilioError::Api(e)) if e.code == Some(21220) => {
                    self.record.hung_up(&sid).await?
                }
                Err(e) => {
                    tracing::warn!(%sid, error = %e, "could not end a ladder call; will retry")
                }
            }
        }
        Ok(())
    }

    /// Look at one due ladder: adopt its orphaned steps, start the next one (or end it).
    async fn visit(&self, run: &str, now: i64) -> Result<(), Error> {
        let read = Read {
            fields: self.record.read(run).await?,
        };
        let Some(state) = read.get("state") else {
            return self.record.unindex(run).await;
        };
        let Some(plan) = read.plan() else {
            tracing::error!(run_id = %run, "ladder record without its plan; left alone");
            return self.record.unindex(run).await;
        };
        // a step claimed and unmarked, whatever the state: its send is looked for and resolved
        let step = read.num("step").unwrap_or(0) as u32;
        let mut unmarked = false;
        for k in 1..=step {
            self.give_back_left(run, &read, &plan, k).await?;
            if let Some(token) = read
                .get(&format!("claim:{k}"))
                .and_then(|c| c.strip_prefix("pending:"))
            {
                unmarked = true;
                self.adopt(run, &plan, k, token).await?;
            }
        }
        // an ended ladder with a step still unmarked (its lease not over) is looked at again
        let again = || async {
            if unmarked {
                self.record
                    .reindex(run, now + self.lease.as_millis() as i64 + 500)
                    .await
            } else {
                Ok(())
            }
        };
        if state == "exhausted" {
            self.exhausted(run, &read, &plan, now).await?;
            return again().await;
        }
        if state != "climbing" {
            self.record.unindex(run).await?;
            return again().await;
        }
        // a step still unmarked is looked at again when its lease ends, not only at the due
        let due = read.num("due").unwrap_or(0);
        if due > now {
            let lease_end = now + self.lease.as_millis() as i64 + 500;
            let at = if unmarked { due.min(lease_end) } else { due };
            return self.record.reindex(run, at).await;
        }
        if let Some(next) = plan.step(step + 1)
            && let Some(opens) = self.quiet_until(&plan, &next.to, now)
        {
            tracing::info!(run_id = %run, step = step + 1, "ladder step waits for quiet hours to end");
            self.record.defer(run, step, opens).await?;
            return again().await;
        }
        let wait = Duration::from_millis(plan.step_wait_ms);
        match self.record.advance(run, step, wait).await? {
            Advance::Claimed {
                step: k,
                token,
                lost,
            } => {
                self.crash(crate::sms::CrashPoint::LadderAfterClaim, run);
                if lost.is_some() {
                    // a Redis that lost its last writes may have forgotten this step claimed,
                    // and its first sender may still be creating the call: the step is left to
                    // adoption once the lease is over, which looks for its send first
                    tracing::warn!(run_id = %run, step = k, "the Redis changed within the lost-writes window; the step's send is looked for before anything is sent");
                    let at = self.replies.now() + self.lease.as_millis() as i64 + 500;
                    return self.record.reindex(run, at).await;
                }
                self.send(run, &plan, k, &token, None).await
            }
            Advance::Exhausted => {
                let read = Read {
                    fields: self.record.read(run).await?,
                };
                self.exhausted(run, &read, &plan, now).await?;
                again().await
            }
            // past the last step, waiting for a call to end: one whose end never came is
            // looked up
            Advance::Early(at) if step as usize >= plan.steps.len() => {
                let at = self
                    .silent_call_ends(run, &read, step, now, at)
                    .await?
                    .unwrap_or(now);
                self.record.reindex(run, at).await
            }
            Advance::Early(at) => self.record.reindex(run, at).await,
            Advance::Moved(_) => Ok(()),
            Advance::Stopped | Advance::Over | Advance::None => {
                self.record.unindex(run).await?;
                again().await
            }
        }
    }

    fn crash(&self, point: crate::sms::CrashPoint, run: &str) {
        crate::sms::maybe_abort(self.crash_at, point, run);
    }

    /// When quiet hours hold `to`'s step: their end (ms, Redis's clock).
    fn quiet_until(&self, plan: &Plan, to: &str, now: i64) -> Option<i64> {
        let quiet = self.quiet.as_ref().filter(|_| !plan.urgent)?;
        quiet.waits_until(now, plan.zone_of(to))
    }

    /// Step `k`'s claim is `pending:<token>`: when its sender's lease is over, take it, look
    /// for its send, and send it only when none is found.
    async fn adopt(&self, run: &str, plan: &Plan, k: u32, token: &str) -> Result<(), Error> {
        let mine = uuid::Uuid::new_v4().simple().to_string();
        match self.record.adopt(run, k, token, &mine, self.lease).await? {
            Adopted::Adopted { since, stopped } => {
                tracing::warn!(run_id = %run, step = k, stopped, "ladder step's sender is gone; resolving it");
                self.send(run, plan, k, &mine, Some((since, stopped))).await
            }
            Adopted::Young(_) | Adopted::Gone => Ok(()),
        }
    }

    /// Send step `k` (claimed under `token`); `adopted`: a taken-over claim, first claimed
    /// then (ms), whose send is looked for first, and whether its ladder stopped since (then
    /// nothing is created).
    async fn send(
        &self,
        run: &str,
        plan: &Plan,
        k: u32,
        token: &str,
        adopted: Option<(i64, bool)>,
    ) -> Result<(), Error> {
        let Some(step) = plan.step(k) else {
            return Ok(());
        };
        self.record.reached(run, &step.to).await?;
        if plan.question && step.to != plan.recipient {
            let left = plan.steps.len().saturating_sub(k as usize) as u32 + 1;
            let open_for = Duration::from_millis(plan.step_wait_ms) * left;
            self.replies.share_question(run, &step.to, open_for).await?;
        }
        if step.channel == "text" {
            if let Some((_, true)) = adopted {
                // after the stop no job is added; one added before is the window's, sent once,
                // and the step records it
                let step_run = super::step_run(run, k);
                let added = self.callbacks.job_data(&step_run).await?.is_some();
                let sent = if added {
                    format!("run:{step_run}")
                } else {
                    "none:stopped".to_string()
                };
                self.record.mark(run, k, token, &sent, false, false).await?;
                return Ok(());
            }
            return self.text(run, plan, k, token, &step.to).await;
        }
        let Some(from) = self.config.voice_from.as_deref() else {
            return self
                .skip(
                    run,
                    plan,
                    k,
                    token,
                    "no-caller-id",
                    "no number to call from (RINGBACK_VOICE_FROM)",
                )
                .await;
        };
        // one unconfirmed call per number: while another ladder's call to it is unconfirmed,
        // this step neither looks for its call nor creates one (it is resolved by adoption
        // once its lease is over), so the call it finds or makes is its own
        if !self.take_number(&step.to, run, k).await? {
            tracing::info!(run_id = %run, step = k, "another ladder's call to this number is unconfirmed; the step waits for it");
            let at = self.replies.now() + self.lease.as_millis() as i64 + 500;
            return self.record.reindex(run, at).await;
        }
        if let Some((since, stopped)) = adopted {
            match self.find_call(run, k, &step.to, from, since).await? {
                Found::Call(sid) => return self.marked(run, k, token, &step.to, &sid).await,
                Found::Unsure => return Ok(()),
                Found::None if stopped => {
                    let marked = self
                        .record
                        .mark(run, k, token, "none:stopped", false, true)
                        .await?;
                    if marked != Marked::NotOurs {
                        self.give_number(run, k, &step.to, None).await?;
                    }
                    return Ok(());
                }
                Found::None => {}
            }
        }
        let now = self.replies.now();
        let placed = self.record.count_call(&step.to, now).await?;
        if placed > u64::from(self.config.calls_per_hour) {
            return self
                .skip(
                    run,
                    plan,
                    k,
                    token,
                    "cap",
                    &format!(
                        "{} calls to {} this hour: over RINGBACK_CALLS_PER_HOUR",
                        placed - 1,
                        mask(&step.to)
                    ),
                )
                .await;
        }
        let twiml = match &self.webhooks {
            Some(hooks) => super::twiml::call(
                &plan.body,
                &plan.choices,
                &hooks.step("voice", run, k),
                &self.config.voice,
            ),
            None => super::twiml::say_only(&plan.body, &self.config.voice),
        };
        let call = CreateCall {
            to: step.to.clone(),
            from: from.to_string(),
            twiml,
            status_callback: self
                .webhooks
                .as_ref()
                .map(|hooks| hooks.step("call-status", run, k)),
            machine_detection: self.config.machine_detection,
            ring_for: None,
        };
        match self.twilio.create_call(&call).await {
            SendOutcome::Accepted(c) => {
                self.crash(crate::sms::CrashPoint::LadderAfterCreate, run);
                ringback_shared::telemetry::global().ladder_step("call", "placed");
                tracing::info!(run_id = %run, step = k, sid = %c.sid, "ladder call placed");
                self.marked(run, k, token, &step.to, &c.sid).await
            }
            SendOutcome::Permanent(e) | SendOutcome::AuthRefused(e) => {
                let code = e.code.map_or("refused".to_string(), |c| c.to_string());
                self.skip(
                    run,
                    plan,
                    k,
                    token,
                    &code,
                    &format!("Twilio refused the call: {e}"),
                )
                .await
            }
            SendOutcome::Held { error, .. } => {
                let code = error.code.map_or("held".to_string(), |c| c.to_string());
                self.skip(
                    run,
                    plan,
                    k,
                    token,
                    &code,
                    &format!("Twilio refused the call: {error}"),
                )
                .await
            }
            SendOutcome::RetryLater { reason, .. } | SendOutcome::Ambiguous { reason, .. } => {
                // left claimed: past the lease, the sweep looks for it before creating it (the
                // run is looked at again then, not only when its next step is due)
                tracing::warn!(run_id = %run, step = k, reason = %reason, "ladder call not confirmed; resolved once its lease is over");
                let at = self.replies.now() + self.lease.as_millis() as i64 + 500;
                self.record.reindex(run, at).await
            }
        }
    }

    /// Skip step `k` (recorded as `none:<what>`; a call step's number given back), and climb
    /// on at once.
    async fn skip(
        &self,
        run: &str,
        plan: &Plan,
        k: u32,
        token: &str,
        what: &str,
        why: &str,
    ) -> Result<(), Error> {
        tracing::warn!(run_id = %run, step = k, reason = %why, "ladder step skipped");
        ringback_shared::telemetry::global().ladder_step("call", "skipped");
        let marked = self
            .record
            .mark(run, k, token, &format!("none:{what}"), false, true)
            .await?;
        if marked != Marked::NotOurs
            && let Some(step) = plan.step(k)
        {
            self.give_number(run, k, &step.to, None).await?;
        }
        self.record.climb(run, Some(k), why).await?;
        Ok(())
    }

    /// Step `k` is a text: a callback job of its own, through the window.
    async fn text(
        &self,
        run: &str,
        plan: &Plan,
        k: u32,
        token: &str,
        to: &str,
    ) -> Result<(), Error> {
        let step_run = super::step_run(run, k);
        self.record.note_step_run(&step_run, run).await?;
        let body: String = format!(
            "ringback: {} has not answered this yet. {}",
            mask(&plan.recipient),
            plan.body
        )
        .chars()
        .take(crate::callback::MAX_BODY)
        .collect();
        let data = json!({
            "runId": step_run, "to": to, "body": body, "urgent": plan.urgent, "ladder": false,
            "ladderOf": run,
        });
        self.callbacks
            .add_job(
                Some(&step_run),
                &self.callback_job_name,
                &data.to_string(),
                CALLBACK_JOB_OPTS,
            )
            .await?;
        self.crash(crate::sms::CrashPoint::LadderAfterCreate, run);
        ringback_shared::telemetry::global().ladder_step("text", "queued");
        match self
            .record
            .mark(run, k, token, &format!("run:{step_run}"), false, false)
            .await?
        {
            Marked::NotOurs => {
                tracing::warn!(run_id = %run, step = k, "ladder step's claim changed hands")
            }
            Marked::Marked | Marked::End => {}
        }
        Ok(())
    }
}
