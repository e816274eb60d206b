//! Where a callback's escalation ladder opens (when its text goes, or is held by a fault of
//! this deployment) and the sweep that climbs it ([`crate::ladder::climb`]).

use super::SmsProcessor;
use crate::callback::CallbackRequest;
use crate::ladder::climb::Climber;
use crate::ladder::plan::Plan;
use ringback_shared::error::Error;

impl SmsProcessor {
    /// Open `req`'s ladder, if it climbs one (none: no Redis call). Once per run: a second
    /// open (a retry, a held text probed again) changes nothing.
    pub(super) async fn open_ladder(&self, req: &CallbackRequest) -> Result<(), Error> {
        let Some(ladder) = req.ladder.resolve(&self.config.ladder.defaults) else {
            return Ok(());
        };
        let plan = Plan::of(&ladder, req);
        let opened = self
            .escalator
            .ladders
            .start(
                &req.run_id,
                plan.steps.len() as u32,
                ladder.call_after,
                &plan,
            )
            .await?;
        if opened {
            tracing::info!(
                run_id = %req.run_id,
                steps = plan.steps.len(),
                call_after_s = ladder.call_after.as_secs(),
                "escalation ladder opened"
            );
        }
        Ok(())
    }

    /// A run found sent (its claim `sent`, its send found by its evidence, or a retry after a
    /// Redis that forgot): its ladder opens now if it has none, since the text it waits on
    /// went out. `legacy`: the legacy worker sent it (counted: its ladder opens only when
    /// ringback sees the run, later than asked).
    pub(super) async fn open_ladder_of_sent(
        &self,
        req: &CallbackRequest,
        legacy: bool,
    ) -> Result<(), Error> {
        if legacy && req.ladder.resolve(&self.config.ladder.defaults).is_some() {
            ringback_shared::telemetry::global().ladder_step("ladder", "legacy_sent");
            tracing::warn!(run_id = %req.run_id, "the legacy worker texted a callback that asks for a ladder; it opens now");
        }
        self.open_ladder(req).await
    }

    /// The ladder sweep of this worker: its Twilio client, queues and settings.
    pub fn climber(&self) -> Climber {
        let webhooks = self
            .config
            .status_callback_url
            .as_deref()
            .and_then(crate::ladder::settings::Webhooks::beside);
        // a call that takes keys may still be answered after the last due: the ladder waits for
        // it to end before it runs out
        let call_end_wait = if webhooks.is_some() {
            crate::ladder::record::CALL_END_WAIT
        } else {
            std::time::Duration::ZERO
        };
        Climber {
            record: self
                .escalator
                .ladders
                .clone()
                .with_call_end_wait(call_end_wait),
            twilio: self.twilio.clone(),
            callbacks: self.escalator.callbacks.clone(),
            callback_job_name: self.escalator.callback_job_name.clone(),
            escalator: self.escalator.clone(),
            replies: self.replies.clone(),
            config: crate::ladder::settings::LadderConfig {
                // the caller ID defaults to the texts' number, when they come from one
                voice_from: self.config.ladder.voice_from.clone().or_else(|| {
                    match &self.twilio.config().sender {
                        ringback_twilio::config::Sender::From(n)
                            if ringback_twilio::message::is_e164(n) =>
                        {
                            Some(n.clone())
                        }
                        _ => None,
                    }
                }),
                ..self.config.ladder.clone()
            },
            webhooks,
            lease: self.twilio.config().timeout + self.config.reconcile_window,
            quiet: self.config.quiet.clone(),
            crash_at: self.config.crash_at,
        }
    }
}
