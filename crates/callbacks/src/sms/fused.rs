//! The single-Redis finish: the sent marker rides on the job's completion, and the
//! completion's fetch claims the next job's run, so a steady stream of SMS jobs costs one Redis
//! call per job plus the Twilio call (`lua/finish_sent.lua`).
//!
//! The processor hands the worker a [`FinishStep`]; the worker runs it in place of
//! move_to_finished and gives the next job's [`JobContext`] the claim the call made for it. On a
//! Redis Cluster the run's keys live in other slots than the queue's, so the processor keeps the
//! separate calls there ([`SmsProcessor::with_fused_finish`]).

use std::time::Duration;

use super::config::SAFETY_MARGIN;
use super::crash::{self, CrashPoint};
use super::{SmsEvent, SmsProcessor};
use crate::callback::CallbackRequest;
use crate::window::Claim;
use ringback_queue::processor::{FinishStep, JobContext, Prepared, StepReply};
use ringback_shared::redact::mask;
use ringback_store::keys::WindowKeys;
use ringback_store::scripts::scripts;
use ringback_store::slots::Topology;

/// Where the runId goes in the key templates handed to `finish_sent.lua` (a runId never holds
/// control characters: `CallbackRequest::parse` refuses them), so `keys.rs` stays the one place
/// that names the window's keys.
const RUN_ID_SLOT: &str = "\u{1}";

/// What the finishing step writes for this job.
pub(super) enum Mark<'a> {
    /// Twilio accepted `sid` (status `status`) for this attempt (`token`): write the sent marker.
    Sent {
        token: &'a str,
        sid: &'a str,
        status: &'a str,
    },
    /// The run was already sent: nothing to write, only the next job's claim.
    Nothing,
}

impl SmsProcessor {
    /// Use the fused finish (default: on). It is used only where the window's own layout is
    /// [`Topology::Fused`] (one Redis): on a Redis Cluster (or with `RINGBACK_DRILL_PER_SLOT=1`)
    /// one script cannot reach both the queue's keys and a run's, and the separate calls stay.
    pub fn with_fused_finish(mut self, on: bool) -> Self {
        self.fused = on;
        self
    }

    /// The context to fold this job's finish into, when the fused finish is on. Off while the
    /// one endpoint has a replica to wait for (waits unset): the marker the fused finish writes
    /// inside the job's finishing call cannot wait for it, the separate durable write can.
    pub(super) fn fused_ctx<'c>(&self, ctx: Option<&'c JobContext>) -> Option<&'c JobContext> {
        ctx.filter(|_| {
            self.fused
                && self.window.topology() == Topology::Fused
                && !self.window.has_replica_now()
        })
    }

    /// The finishing step for a completed callback of `req`: `mark`, then the completion, then
    /// the claim of the next job's run. The script keeps its answer for a re-execution as long
    /// as the worker may send the call again (`resent_within`, [`JobContext::resent_within`]),
    /// and never less than the claim it prepared stays fresh.
    pub(super) fn finish_step(
        &self,
        req: &CallbackRequest,
        mark: Mark<'_>,
        resent_within: std::time::Duration,
    ) -> FinishStep {
        let k = self.window.keys(&req.run_id);
        let prefix = &self.config.claim_prefix;
        let times = self.window.times();
        let ms = |d: std::time::Duration| d.as_millis().to_string();
        let (flag, token, sid, status) = match mark {
            Mark::Sent { token, sid, status } => ("1", token, sid, status),
            Mark::Nothing => ("0", "", "", ""),
        };
        let template = WindowKeys::new(prefix, RUN_ID_SLOT);
        // finish_sent.lua's own part, after move_to_finished's KEYS[1..14] and ARGV[1..17]
        let call = scripts()
            .finish_sent
            .call_after(14, 17)
            .key("claim key (this run)", k.claim)
            .key("attempt record", k.attempt)
            .key(
                "open-attempts index",
                ringback_store::keys::open_attempts(prefix),
            )
            .key("message link", ringback_store::keys::message_link(sid))
            .key("callback record", k.record)
            .key(
                "its history",
                ringback_store::keys::callback_history(prefix, &req.run_id),
            )
            .key(
                "the reconcile set",
                ringback_store::keys::reconcile_schedule(prefix),
            )
            .key(
                "recent-runs index",
                ringback_store::keys::recent_runs(prefix),
            )
            .key(
                "where it is kept",
                ringback_store::keys::finish_record(
                    prefix,
                    &uuid::Uuid::new_v4().simple().to_string(),
                ),
            )
            .arg("\"1\" write the sent marker", flag)
            .arg("attempt token", token)
            .arg("MessageSid", sid)
            .arg("sent TTL (ms)", ms(times.sent_ttl))
            .arg("runId", &req.run_id)
            .arg("the status Twilio answered", status)
            .arg("poll the message after (ms)", ms(times.poll_after))
            .arg("claim key template", template.claim)
            .arg("attempt record template", template.attempt)
            .arg("callback record template", template.record)
            .arg("new attempt token", uuid::Uuid::new_v4().simple())
            .arg("worker id", &self.worker_id)
            .arg("pending TTL (ms)", ms(times.pending_ttl))
            .arg("hold (ms)", ms(times.hold))
            .arg("claim lease (ms)", ms(times.lease))
            .arg("recent-runs cap", ringback_store::keys::RECENT_RUNS_CAP)
            .arg(
                "how long the call's answer is kept",
                ms(resent_within.max(times.replay_for) + SAFETY_MARGIN),
            )
            .arg(
                "the callback job names",
                format!("\n{}\n", self.config.callback_job_names.join("\n")),
            );
        let done: Box<dyn FnOnce(StepReply) + Send> = match flag {
            "0" => Box::new(|_| {}),
            _ => {
                let (stats, crash_at) = (self.stats.clone(), self.config.crash_at);
                let (run_id, sid, to) = (req.run_id.clone(), sid.to_string(), mask(&req.to));
                Box::new(move |own| {
                    if own == StepReply::Number(1) {
                        crate::window::note_overrun();
                        tracing::warn!(%sid, "sent marker written after the claim changed hands (window overrun)");
                    }
                    crash::maybe_abort(crash_at, CrashPoint::AfterSentMarker, &run_id);
                    stats.record(SmsEvent::Sent);
                    tracing::info!(%sid, %to, "sent");
                })
            }
        };
        FinishStep {
            call,
            batch: Some(&scripts().finish_sent_batch),
            done,
            fresh_for: Some(times.replay_for),
        }
    }

    /// The claim the previous job's fused finish made for this job's run, if it made one for
    /// `run_id`. A claim for another run cannot happen (both sides read the same `runId`); if it
    /// did, it is handed back and `None` answered, so the attempt claims as usual.
    pub(super) async fn prepared_claim(
        &self,
        ctx: Option<&JobContext>,
        run_id: &str,
    ) -> Option<Claim> {
        let (claim_run, claim) = self.read_prepared(ctx?.prepared()?)?;
        if claim_run == run_id {
            return Some(claim);
        }
        tracing::warn!(prepared = %claim_run, "the prepared claim is another run's; handing it back");
        self.hand_back(
            &claim_run,
            &claim,
            self.config.retry_later_default,
            "claimed for a job that did not run",
        )
        .await;
        None
    }

    /// Give back a claim prepared for a job that will not send (it fails before the attempt):
    /// a fresh claim becomes `retry` (Twilio took nothing; the next attempt or the orphan sweep
    /// sends), anything else stays as the window left it.
    pub(super) async fn hand_back_prepared(&self, prepared: &Prepared) {
        if let Some((run_id, claim)) = self.read_prepared(prepared) {
            let reason = "claimed for a job that did not run";
            self.hand_back(&run_id, &claim, self.config.retry_later_default, reason)
                .await;
        }
    }

    /// Close a claim prepared for a job that is invalid (escalated, never texted): the
    /// attempt ends `send-failed` with `reason`, so no sweep sends it.
    pub(super) async fn close_prepared(&self, prepared: &Prepared, reason: &str) {
        if let Some((run_id, Claim::Claimed { token })) = self.read_prepared(prepared) {
            let reason = format!("invalid callback job: {reason}");
            if let Err(e) = self
                .window
                .release(&run_id, &token, &reason, "send-failed", Duration::ZERO)
                .await
            {
                tracing::warn!(error = %e, "could not close the claim of an invalid job");
            }
        }
    }

    /// Give back a claim prepared for a job that waits for its quiet hours to end: the
    /// attempt's `retry` is due when they end (`opens_at`, ms on Redis's clock), so the orphan
    /// sweep, which rebuilds the request from the attempt record alone, cannot send it inside
    /// them; the job itself comes back from delayed at the same time, and the window lets one
    /// of the two send.
    pub(super) async fn hand_back_prepared_until(&self, prepared: &Prepared, opens_at: i64) {
        if let Some((run_id, claim)) = self.read_prepared(prepared) {
            let wait = (opens_at - self.window.now()).max(0) as u64;
            let wait = Duration::from_millis(wait).max(self.config.retry_later_default);
            let reason = format!(
                "{} {}",
                crate::quiet::HELD_REASON,
                crate::quiet::iso(opens_at)
            );
            self.hand_back(&run_id, &claim, wait, &reason).await;
        }
    }

    async fn hand_back(&self, run_id: &str, claim: &Claim, retry_in: Duration, reason: &str) {
        if let Claim::Claimed { token } = claim
            && let Err(e) = self
                .window
                .release(run_id, token, reason, "released", retry_in)
                .await
        {
            tracing::warn!(error = %e, "could not hand back a prepared claim; the sweep resolves it");
        }
    }

    /// `finish_sent.lua`'s claim reply: window_claim's reply followed by the runId.
    fn read_prepared(&self, prepared: &Prepared) -> Option<(String, Claim)> {
        let (run_id, reply) = prepared.words().split_last()?;
        let run_id = run_id.clone();
        match self.window.read_claim(reply) {
            Ok(claim) => Some((run_id, claim)),
            Err(e) => {
                tracing::warn!(error = %e, "unreadable prepared claim; claiming as usual");
                None
            }
        }
    }
}
