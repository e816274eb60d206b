//! Where a run's ladder stands, in Redis, changed by one script per step of the design
//! `model/ladder.pml` checks: open it (`ladder_start.lua`), start the next step or end it
//! exhausted (`ladder_advance.lua`), record a step's send (`ladder_mark.lua`), stop it at the
//! first acknowledgement (`ladder_ack.lua`). Each step's send stays inside its own claim: only
//! the caller [`Advance::Claimed`] answered may create it.
//!
//! On a Redis Cluster the due index (global) is written by calls of its own, ordered so a cut
//! between two calls loses no ladder: a new ladder is indexed before its record is written, and
//! later changes re-index after their script. Whatever a cut leaves, the ladder sweep repairs
//! from what [`LadderRecord::advance`] answers: [`Advance::None`], [`Advance::Over`] and
//! [`Advance::Stopped`] take the run out of the index, [`Advance::Early`] puts it back at its
//! due time. An exhausted ladder stays indexed until its escalation is added (the sweep adds it,
//! clears `escalate`, then takes the run out): a crash between loses no escalation.

use std::sync::Arc;
use std::time::Duration;

use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::connection::Conn;
use ringback_store::keys;
use ringback_store::scripts::{RoundTrips, scripts};
use ringback_store::slots::Topology;

/// What [`LadderRecord::advance`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Advance {
    /// Step `step` is the caller's to send, under `token`.
    Claimed {
        /// The step started (1 for the first after the text).
        step: u32,
        /// Its claim's token, for [`LadderRecord::mark`].
        token: String,
        /// The Redis behind the record changed at this time (ms), within the lost-writes
        /// window: it may have forgotten this step claimed and sent, so nothing is sent now; the
        /// step is adopted once the lease is over, its send looked for first.
        lost: Option<i64>,
    },
    /// Past the last step: the ladder is exhausted and its escalation due (`escalate` in the
    /// record until [`LadderRecord::escalated`]).
    Exhausted,
    /// The step's wait is not over: due at this time (ms, Redis's clock).
    Early(i64),
    /// Someone else started a step since the caller read it: the last step started.
    Moved(u32),
    /// The person acknowledged: no step starts.
    Stopped,
    /// The ladder ended exhausted before.
    Over,
    /// The run has no ladder.
    None,
}

/// What [`LadderRecord::mark`] answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marked {
    /// The send is recorded.
    Marked,
    /// A call created after the ladder stopped: hang it up.
    End,
    /// The step's claim is another's (or gone): nothing written.
    NotOurs,
}

/// What [`LadderRecord::ack`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ack {
    /// This acknowledgement stopped the ladder; these calls still ring (hang them up).
    Stopped(Vec<String>),
    /// The ladder had ended before (`stopped` or `exhausted`): the first one stands.
    Late(String),
    /// A delivered receipt of a question: only an answer acknowledges it.
    Asked,
    /// The run has no ladder.
    None,
}

/// What [`LadderRecord::adopt`] did with a step's claim whose sender is gone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Adopted {
    /// The claim is the caller's now: look for the step's send from `since` (ms); send it
    /// only when none is found and the ladder still climbs (`stopped` false).
    Adopted {
        /// When the step was first claimed (ms, Redis's clock).
        since: i64,
        /// The ladder stopped: a call found is marked (and ended), none found closes the
        /// claim unsent.
        stopped: bool,
    },
    /// The sender's lease runs until this time (ms, Redis's clock).
    Young(i64),
    /// Not that claim any more (marked, or taken by another).
    Gone,
}

pub use super::call_status::CallStatusApplied;

/// How an acknowledgement came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A text answering the callback or a later step's text.
    Reply,
    /// A key pressed on a ladder's call.
    Keypad,
    /// A delivered receipt, where no answer was asked.
    Delivered,
    /// `ringback drain --end-ladders`: no person; the ladder ends with its workers.
    Drain,
}

impl Channel {
    fn word(self) -> &'static str {
        match self {
            Channel::Reply => "reply",
            Channel::Keypad => "keypad",
            Channel::Delivered => "delivered",
            Channel::Drain => "drain",
        }
    }
}

/// The ladders of one deployment, over one Redis connection.
#[derive(Debug, Clone)]
pub struct LadderRecord {
    pub(super) conn: Conn,
    pub(super) trips: Arc<RoundTrips>,
    pub(super) claim_prefix: String,
    pub(super) topology: Topology,
    pub(super) record_ttl: Duration,
    /// How long after the Redis behind a record changed a step claimed looks for its send
    /// first (the window's lost-writes window).
    lost_writes: Duration,
    /// How long after a call's create the ladder waits for that call's end before running out
    /// ([`CALL_END_WAIT`] where calls take keys; zero: it runs out at its last due).
    call_end_wait: Duration,
}

/// How long a ladder that reached its end waits for a call still ringing (or a create still
/// unresolved) to end: Twilio rings a call for 60 s, the keypad's questions take about a
/// minute more, and a status callback may be retried for 15 s. A key pressed on that call
/// still acknowledges; past the bound, a call whose end never came no longer holds it.
pub const CALL_END_WAIT: Duration = Duration::from_secs(180);

pub(super) fn ms(d: Duration) -> String {
    d.as_millis().to_string()
}

fn bad(script: &'static str, reply: &[String]) -> Error {
    Error::Reply {
        script,
        detail: format!("{reply:?}"),
    }
}

impl LadderRecord {
    /// Ladders under `claim_prefix`, laid out for `topology`, each kept `record_ttl`.
    pub fn new(
        conn: Conn,
        trips: Arc<RoundTrips>,
        claim_prefix: &str,
        topology: Topology,
        record_ttl: Duration,
    ) -> Self {
        Self {
            conn,
            trips,
            claim_prefix: claim_prefix.to_string(),
            topology,
            record_ttl,
            lost_writes: Duration::ZERO,
            call_end_wait: Duration::ZERO,
        }
    }

    /// The same records, a step claimed within `window` after the Redis changed looking for
    /// its send first.
    pub fn with_lost_writes_window(mut self, window: Duration) -> Self {
        self.lost_writes = window;
        self
    }

    /// The same records, a ladder past its last step waiting up to `wait` after a call's create
    /// for that call to end before it runs out.
    pub fn with_call_end_wait(mut self, wait: Duration) -> Self {
        self.call_end_wait = wait;
        self
    }

    /// The identity key a step's claim compares (the window's, of the record's slot on a
    /// Cluster).
    fn identity_of(&self, record: &str) -> String {
        if self.topology.per_slot() {
            keys::redis_identity_of_slot(ringback_store::slots::slot(record.as_bytes()))
        } else {
            keys::redis_identity()
        }
    }

    /// The due index where one script may write it (one Redis); on a Cluster it is its own call.
    fn due_index(&self) -> Option<String> {
        (!self.topology.per_slot()).then(|| keys::ladder_due(&self.claim_prefix))
    }

    async fn index(&self, run_id: &str, at: Option<i64>) -> Result<(), Error> {
        if !self.topology.per_slot() {
            return Ok(());
        }
        let key = keys::ladder_due(&self.claim_prefix);
        let cmd = match at {
            Some(at) => redis::cmd("ZADD").arg(&key).arg(at).arg(run_id).clone(),
            None => redis::cmd("ZREM").arg(&key).arg(run_id).clone(),
        };
        cmd.round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// Open `run_id`'s ladder of `steps` steps after the text, the first due in `first_wait`.
    /// True when this call opened it (a second open changes nothing). On a Cluster the run is
    /// indexed first, due at once (a cut after it leaves an entry the sweep repairs, never a
    /// ladder it cannot see), then at the due time the script read on Redis's clock.
    pub async fn start(
        &self,
        run_id: &str,
        steps: u32,
        first_wait: Duration,
        plan: &super::plan::Plan,
    ) -> Result<bool, Error> {
        if self.topology.per_slot() {
            // NX: a second open leaves the first one's due time alone
            redis::cmd("ZADD")
                .arg(keys::ladder_due(&self.claim_prefix))
                .arg("NX")
                .arg(0)
                .arg(run_id)
                .round_trip::<()>(&mut self.conn.clone(), &self.trips)
                .await?;
        }
        let due: i64 = scripts()
            .ladder_start
            .call()
            .key("ladder record", keys::ladder(&self.claim_prefix, run_id))
            .key_if("ladder due index", self.due_index())
            .arg("runId", run_id)
            .arg("steps after the text", steps)
            .arg("the first step's wait (ms, from now)", ms(first_wait))
            .arg("record TTL (ms)", ms(self.record_ttl))
            .arg(
                "the plan: the steps and what they say (JSON, read by the ladder sweep)",
                serde_json::to_string(plan).unwrap_or_default(),
            )
            .arg(
                "\"1\" when the run is a question (a delivered receipt then acknowledges nothing)",
                if plan.question { "1" } else { "0" },
            )
            .arg(
                "the recipient (the number the text went to)",
                &plan.recipient,
            )
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        if due > 0 {
            self.reached(run_id, &plan.recipient).await?;
            self.index(run_id, Some(due)).await?;
        }
        Ok(due > 0)
    }

    /// Start the step after `read` (the last step the caller saw started; 0 for the text),
    /// waiting `wait` before the one after it; or end the ladder exhausted past its last step.
    pub async fn advance(&self, run_id: &str, read: u32, wait: Duration) -> Result<Advance, Error> {
        let token = uuid::Uuid::new_v4().simple().to_string();
        let record = keys::ladder(&self.claim_prefix, run_id);
        let reply: Vec<String> = scripts()
            .ladder_advance
            .call()
            .key("ladder record", record.clone())
            .key(
                "the Redis identity (window_claim.lua's KEYS[4], of the record's slot on a Cluster)",
                self.identity_of(&record),
            )
            .key_if("ladder due index", self.due_index())
            .arg("the step the caller read (0: the text)", read)
            .arg("the new step's token", &token)
            .arg("the new step's wait (ms, from now)", ms(wait))
            .arg("runId", run_id)
            .arg(
                "the lost-writes window (ms; window_claim.lua's ARGV[17])",
                ms(self.lost_writes),
            )
            .arg(
                "how long after a call's create the ladder waits for its end before running out (ms;",
                ms(self.call_end_wait),
            )
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        let number = |i: usize| reply.get(i).and_then(|n| n.parse::<i64>().ok());
        let step = |i: usize| number(i).and_then(|n| u32::try_from(n).ok());
        let out = match reply.first().map(String::as_str) {
            Some("claimed") => Advance::Claimed {
                step: step(1).ok_or_else(|| bad("ladder_advance", &reply))?,
                token: reply
                    .get(2)
                    .cloned()
                    .ok_or_else(|| bad("ladder_advance", &reply))?,
                lost: number(4).filter(|at| *at > 0),
            },
            Some("exhausted") => Advance::Exhausted,
            Some("early") => {
                Advance::Early(number(1).ok_or_else(|| bad("ladder_advance", &reply))?)
            }
            Some("moved") => Advance::Moved(step(1).ok_or_else(|| bad("ladder_advance", &reply))?),
            Some("stopped") => Advance::Stopped,
            Some("over") => Advance::Over,
            Some("none") => Advance::None,
            _ => return Err(bad("ladder_advance", &reply)),
        };
        match &out {
            // on Redis's clock, as the script wrote it in the record
            Advance::Claimed { .. } => {
                let due = number(3).ok_or_else(|| bad("ladder_advance", &reply))?;
                self.index(run_id, Some(due)).await?
            }
            // left indexed: the sweep adds the escalation, then takes it out
            Advance::Exhausted => {}
            _ => {}
        }
        Ok(out)
    }

    /// Record the send of `step` (claimed under `token`) as `sid`; `call` for a voice call;
    /// `holds_number` for a call step holding its number (`give:<step>` kept until
    /// [`LadderRecord::given`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn mark(
        &self,
        run_id: &str,
        step: u32,
        token: &str,
        sid: &str,
        call: bool,
        holds_number: bool,
    ) -> Result<Marked, Error> {
        let reply: String = scripts()
            .ladder_mark
            .call()
            .key("ladder record", keys::ladder(&self.claim_prefix, run_id))
            .arg("step", step)
            .arg("the step's token", token)
            .arg("sid (the MessageSid or CallSid)", sid)
            .arg("\"call\" | \"text\"", if call { "call" } else { "text" })
            .arg(
                "\"1\" = the step holds its number",
                if holds_number { "1" } else { "" },
            )
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        match reply.as_str() {
            "marked" => Ok(Marked::Marked),
            "end" => Ok(Marked::End),
            "not-ours" => Ok(Marked::NotOurs),
            _ => Err(bad("ladder_mark", &[reply])),
        }
    }

    /// The person acknowledged, `how`, from `who`: stop the ladder if it climbs.
    pub async fn ack(&self, run_id: &str, how: Channel, who: &str) -> Result<Ack, Error> {
        let reply: Vec<String> = scripts()
            .ladder_ack
            .call()
            .key("ladder record", keys::ladder(&self.claim_prefix, run_id))
            .key_if("ladder due index", self.due_index())
            .arg(
                "how: \"reply\" | \"keypad\" | \"delivered\" | \"drain\"",
                how.word(),
            )
            .arg("runId", run_id)
            .arg("who (the number that acknowledged)", who)
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        let mut pending = 0;
        let out = match reply.split_first() {
            Some((first, rest)) if first == "stopped" => {
                let (at, ringing) = rest
                    .split_first()
                    .ok_or_else(|| bad("ladder_ack", &reply))?;
                pending = at.parse::<i64>().map_err(|_| bad("ladder_ack", &reply))?;
                Ack::Stopped(ringing.to_vec())
            }
            Some((first, rest)) if first == "late" => Ack::Late(
                rest.first()
                    .cloned()
                    .ok_or_else(|| bad("ladder_ack", &reply))?,
            ),
            Some((first, _)) if first == "none" => Ack::None,
            Some((first, _)) if first == "asked" => Ack::Asked,
            _ => return Err(bad("ladder_ack", &reply)),
        };
        // a step left unmarked keeps the run indexed: the sweep resolves it
        if matches!(out, Ack::Stopped(_)) {
            self.index(run_id, (pending > 0).then_some(pending)).await?;
        }
        Ok(out)
    }

    /// Move the next step sooner: the step the caller read (`None`: whichever stands) failed
    /// to reach its person, `why`. True when the ladder is now due.
    pub async fn climb(&self, run_id: &str, read: Option<u32>, why: &str) -> Result<bool, Error> {
        self.due(run_id, "climb", read, why).await
    }

    /// Move the next step (after `read`) later, to `at` (ms, Redis's clock): its person is in
    /// quiet hours.
    pub async fn defer(&self, run_id: &str, read: u32, at: i64) -> Result<bool, Error> {
        self.due(run_id, "defer", Some(read), &at.to_string()).await
    }

    async fn due(
        &self,
        run_id: &str,
        how: &str,
        read: Option<u32>,
        what: &str,
    ) -> Result<bool, Error> {
        let reply: Vec<String> = scripts()
            .ladder_due
            .call()
            .key("ladder record", keys::ladder(&self.claim_prefix, run_id))
            .key_if("ladder due index", self.due_index())
            .arg("\"climb\" | \"defer\"", how)
            .arg(
                "the step the caller read (\"\" for climb: whichever step stands)",
                read.map(|r| r.to_string()).unwrap_or_default(),
            )
            .arg(
                "defer: the new due time (ms, Redis's clock); climb: why (kept on the record)",
                what,
            )
            .arg("runId", run_id)
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        match reply.first().map(String::as_str) {
            Some("moved") => {
                let at = reply
                    .get(1)
                    .and_then(|d| d.parse::<i64>().ok())
                    .ok_or_else(|| bad("ladder_due", &reply))?;
                self.index(run_id, Some(at)).await?;
                Ok(true)
            }
            Some("kept") => Ok(how == "climb"),
            Some("over" | "none") => Ok(false),
            _ => Err(bad("ladder_due", &reply)),
        }
    }

    /// Take over step `step`'s claim, read as `pending:<read_token>`, when its sender's
    /// `lease` is over; the new token is `token`.
    pub async fn adopt(
        &self,
        run_id: &str,
        step: u32,
        read_token: &str,
        token: &str,
        lease: Duration,
    ) -> Result<Adopted, Error> {
        let reply: Vec<String> = scripts()
            .ladder_adopt
            .call()
            .key("ladder record", keys::ladder(&self.claim_prefix, run_id))
            .arg("step", step)
            .arg("the token the caller read", read_token)
            .arg("the adopter's token", token)
            .arg("the lease (ms)", ms(lease))
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?;
        let at = |i: usize| {
            reply
                .get(i)
                .and_then(|d| d.parse::<i64>().ok())
                .ok_or_else(|| bad("ladder_adopt", &reply))
        };
        match reply.first().map(String::as_str) {
            Some("adopted") => Ok(Adopted::Adopted {
                since: at(1)?,
                stopped: reply.get(2).is_some_and(|s| s == "stopped"),
            }),
            Some("young") => Ok(Adopted::Young(at(1)?)),
            Some("gone") => Ok(Adopted::Gone),
            _ => Err(bad("ladder_adopt", &reply)),
        }
    }
}
