//! The escalation ladder, when a text is not enough: what a callback asks for and the steps it
//! climbs ([`plan`]: the job's `ladder` and `choices`, the deployment's defaults), and what a
//! call says and asks on the keypad ([`twiml`]). The ladder's state changes follow the design
//! `model/ladder.pml` checks: the next step claimed, the stop, the exhaustion with its
//! escalation, each in one script.

mod call_status;
pub mod climb;
mod evidence;
mod exhausted;
mod index;
pub mod number;
pub mod plan;
pub mod record;
pub mod settings;
pub mod twiml;
pub mod view;

/// Whether a call status is final (the call no longer rings).
pub fn call_ended(status: &str) -> bool {
    matches!(
        status,
        "completed" | "busy" | "no-answer" | "failed" | "canceled"
    )
}

/// The runId of step `k`'s text of `run_id`'s ladder: a run of its own, through the window.
pub fn step_run(run_id: &str, k: u32) -> String {
    format!("{}:ladder:{k}", crate::callback::short_name(run_id))
}

/// Whether `run_id` is named as a step's text ([`step_run`]); the ladder's record of it
/// (`LadderRecord::step_of`) says whether it is one.
pub fn may_be_step_run(run_id: &str) -> bool {
    run_id
        .rsplit_once(":ladder:")
        .is_some_and(|(_, k)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}
