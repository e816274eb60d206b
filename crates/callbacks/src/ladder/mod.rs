//! The escalation ladder, when a text is not enough: what a callback asks for and the steps it
//! climbs ([`plan`]: the job's `ladder` and `choices`, the deployment's defaults), and what a
//! call says and asks on the keypad ([`twiml`]). The ladder's state changes follow the design
//! `model/ladder.pml` checks: the next step claimed, the stop, the exhaustion with its
//! escalation, each in one script.

pub mod plan;
pub mod record;
pub mod twiml;
