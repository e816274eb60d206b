//! The callback window: exactly one text per run. The job's data, the claim/sent window over the
//! claim key shared with the legacy worker, the SMS processor, the orphan sweep, delivery
//! receipts, reconciliation, escalation, `ringback drain` and `ringback resend`, the runs as the console reads them; the edge wires
//! them into a process. A `Processor` of [`ringback_queue`]; talks to Twilio through the provider floor's
//! client ([`ringback_twilio`]). May use the shared modules, [`ringback_store`], [`ringback_twilio`]
//! and [`ringback_queue`]; nothing of the edge or the simulator (`docs/architecture.md`).

pub mod callback;
pub mod drain;
pub mod escalation;
pub mod kept_ask;
pub mod ladder;
pub mod layout;
pub mod orphans;
pub mod quiet;
pub mod receipts;
pub mod reconcile;
pub mod replies;
pub mod resend;
pub mod runs;
pub mod sms;
pub mod window;
