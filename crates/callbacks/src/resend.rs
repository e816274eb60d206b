//! `ringback resend <runId>`: the product path for a person who decided, after an escalation,
//! that the human must be texted after all. A text typed by hand elsewhere is invisible to the
//! window (a later resolution of the run would text again); this one goes through the window
//! under a run of its own, `<runId>:resend`: one fenced attempt, its MessageSid linked to that
//! run, idempotent (a second resend finds it sent). It is refused while ringback is still
//! resolving the run (ringback sends or escalates it itself) and when the run was delivered.
//! A question resent is open again under its code, so the answer to the resent text reaches
//! the run.

use crate::callback::CallbackRequest;
use crate::sms::SmsProcessor;
use ringback_queue::processor::Outcome;
use ringback_shared::error::Error;

/// The run a resend of `run_id` goes out under.
pub fn resend_run(run_id: &str) -> String {
    format!("{run_id}:resend")
}

/// What a resend did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resent {
    /// Twilio accepted the resend.
    Sent {
        /// The resend's MessageSid.
        sid: String,
    },
    /// An earlier resend of the run was sent: nothing sent now.
    AlreadyResent {
        /// The earlier resend's MessageSid; `None` when its record holds none.
        sid: Option<String>,
    },
    /// Twilio's answer was lost or asked to wait: the resend's attempt is open, and a running
    /// worker's sweep (or another `ringback resend`) resolves it, never sending twice.
    Pending {
        /// Why the attempt is still open, and what resolves it, for the person who ran it.
        why: String,
    },
    /// Twilio refused the resend for good (escalated under the resend's run).
    Refused {
        /// Twilio's reason for refusing the send.
        why: String,
    },
}

/// Why a resend was not attempted.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResendError {
    /// The run's record rules a resend out (still being resolved, delivered, never claimed).
    #[error("refusing to resend {run}: {why}")]
    Refused {
        /// The run asked to be resent.
        run: String,
        /// Why not, and where the run stands.
        why: String,
    },
    /// Redis failed while the run's records were read or its question reopened.
    #[error(transparent)]
    Redis(#[from] Error),
}

/// Resend `run_id`'s callback once, through the window, when its record allows it.
pub async fn resend(processor: &SmsProcessor, run_id: &str) -> Result<Resent, ResendError> {
    let refuse = |why: String| ResendError::Refused {
        run: run_id.to_string(),
        why,
    };
    let attempt = processor.window().attempt_record(run_id).await?;
    let record = processor
        .receipts()
        .record(run_id, Some(processor.queue_calls()))
        .await?;
    let attempt_state = attempt.get("state").map(String::as_str).unwrap_or("");
    match attempt_state {
        "claimed" | "ambiguous" | "retry" => {
            return Err(refuse(format!(
                "ringback is still resolving it (its attempt is {attempt_state}): it sends the callback or escalates it itself; `ringback status {run_id}` shows where it is"
            )));
        }
        "" if record.state == "queued" => {
            return Err(refuse(
                "its callback job is still waiting in the queue: a worker will send it".into(),
            ));
        }
        "" => {
            return Err(refuse(
                "ringback has no attempt record of it (never claimed, or older than RINGBACK_SENT_TTL_MS): there is no recipient and body to resend".into(),
            ));
        }
        _ => {}
    }
    match record.state.as_str() {
        "delivered" => {
            return Err(refuse(format!(
                "it was delivered ({}): nothing to resend",
                record
                    .message_sid
                    .as_deref()
                    .unwrap_or("no MessageSid recorded")
            )));
        }
        "accepted" | "sent" | "claimed" if !record.escalated => {
            return Err(refuse(format!(
                "Twilio accepted it ({}, {}) and it was not escalated: its delivery is still being followed",
                record.message_sid.as_deref().unwrap_or("-"),
                record.status.as_deref().unwrap_or(&record.state)
            )));
        }
        _ => {}
    }
    let (Some(to), Some(body)) = (attempt.get("to"), attempt.get("body")) else {
        return Err(refuse(
            "its attempt record holds no recipient and body".into(),
        ));
    };
    // a question sent again is open again, under its code (the resent text carries it when it
    // showed one): the person's answer to it reaches the run, however long ago it closed
    if let Some(q) = processor.replies().reads.question_of(run_id).await?
        && q.answered_by.is_none()
    {
        let mut reopen = CallbackRequest {
            run_id: run_id.to_string(),
            to: to.clone(),
            body: body.clone(),
            expect_reply: Some(crate::callback::DEFAULT_REPLY_WITHIN),
            ..Default::default()
        };
        processor.replies().ask(&mut reopen).await?;
    }
    // the resend keeps the callback's quiet hours: outside them it goes now, inside them its
    // attempt waits for their end and a running worker's sweep sends it then
    let facts = crate::window::SendFacts::read(
        attempt.get("urgent").map_or("", String::as_str),
        attempt.get("tz").map_or("", String::as_str),
        "",
    );
    let req = CallbackRequest {
        run_id: resend_run(run_id),
        to: to.clone(),
        body: body.clone(),
        from: attempt.get("from").filter(|f| !f.is_empty()).cloned(),
        urgent: facts.urgent,
        time_zone: facts.time_zone,
        ..Default::default()
    };
    let quiet_until = processor.quiet_until(&req);
    let outcome = processor
        .attempt(&format!("ringback-resend:{run_id}"), &req)
        .await;
    Ok(match outcome {
        Outcome::Completed(v) => {
            let sid = v["messageSid"].as_str().map(str::to_string);
            match (v["deduplicated"].as_bool(), sid) {
                (Some(false), Some(sid)) => Resent::Sent { sid },
                (_, sid) if v["status"] == "unknown" => Resent::Pending {
                    why: format!(
                        "an earlier resend's outcome is unknown and was escalated ({}): it is not sent again",
                        sid.as_deref().unwrap_or("no MessageSid")
                    ),
                },
                (_, sid) => Resent::AlreadyResent { sid },
            }
        }
        Outcome::DelayUntil(_) if quiet_until.is_some() => Resent::Pending {
            why: format!(
                "inside the callback's quiet hours: its attempt waits for their end ({}), when a running worker's sweep sends it",
                crate::quiet::iso(quiet_until.unwrap_or_default())
            ),
        },
        Outcome::DelayUntil(_) => Resent::Pending {
            why: "Twilio's answer was lost or asked to wait; the resend's attempt stays open and a running worker's sweep resolves it (or run this again)".into(),
        },
        Outcome::Failed(f) => Resent::Refused {
            why: f.message,
        },
    })
}
