//! A ladder's end when nobody acknowledged: its escalation and its question's `no-answer`.

use ringback_shared::error::Error;
use ringback_shared::redact::mask;

use super::climb::{Climber, Read};
use super::plan::Plan;
use crate::escalation::{Escalation, EscalationKind};

impl Climber {
    /// An exhausted ladder: its escalation (once), the question's `no-answer` (once, when its
    /// `replyWithin` is over too), then out of the schedule.
    pub(super) async fn exhausted(
        &self,
        run: &str,
        read: &Read,
        plan: &Plan,
        now: i64,
    ) -> Result<(), Error> {
        if read.get("escalate").is_some() {
            let tried: Vec<String> = plan
                .steps
                .iter()
                .map(|s| format!("{} {}", s.channel, mask(&s.to)))
                .collect();
            self.escalator
                .escalate(&Escalation {
                    run_id: run.to_string(),
                    reason: format!(
                        "nobody acknowledged: texted {}, then {}",
                        mask(&plan.recipient),
                        tried.join(", ")
                    ),
                    last_status: None,
                    error_code: None,
                    kind: EscalationKind::Unacknowledged,
                })
                .await?;
            self.record.escalated(run).await?;
            ringback_shared::telemetry::global().ladder_step("ladder", "unacknowledged");
        }
        if plan.question && read.get("no_answer").is_none() {
            match self.replies.reads.question_of(run).await? {
                Some(q) if q.answered_by.is_some() => {
                    self.record.note(run, "no_answer", "answered").await?
                }
                Some(q) if q.until > now => return self.record.reindex(run, q.until).await,
                _ => {
                    // a key still kept, or an answer still being recorded, is waited for
                    if !self
                        .replies
                        .no_answer(run, Some(&plan.recipient), plan.steps.len())
                        .await?
                    {
                        let again = now + crate::replies::PENDING_GRACE.as_millis() as i64;
                        return self.record.reindex(run, again).await;
                    }
                    self.record.note(run, "no_answer", "added").await?;
                }
            }
        }
        self.record.unindex(run).await
    }
}
