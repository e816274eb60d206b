//! Turning a claim into the long-lived `sent` marker: `Window::mark_sent`, and on a Redis
//! Cluster the MessageSid link and the poll schedule written around it.

use super::{MarkSent, Marked, WINDOW_OVERRUNS, Window, ms};
use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::scripts::scripts;
use std::sync::atomic::Ordering;

ringback_store::coded_answer! {
    /// What `window_mark_sent.lua` wrote.
    enum MarkCode("window_mark_sent.lua") {
        /// Marked within the window.
        Marked = 0,
        /// Marked after a window overrun (the claim had changed hands).
        Overrun = 1,
        /// Refused: the message is another run's.
        Refused = 2,
    }
}

impl Window {
    /// Record that `sid` was sent for the run (Twilio answered this attempt, or a lookup found it)
    /// with `status`, and start the callback record with it (one call).
    pub async fn mark_sent(
        &self,
        run_id: &str,
        token: &str,
        sid: &str,
        status: &str,
        how: Marked,
    ) -> Result<MarkSent, Error> {
        let k = self.keys(run_id);
        let kind = match how {
            Marked::Sent => "sent",
            Marked::Found => "found",
        };
        let history = ringback_store::keys::callback_history(&self.claim_prefix, run_id);
        let link = ringback_store::keys::message_link(sid);
        let claim_key = k.claim.clone();
        let call = scripts().window_mark_sent.call();
        let call = if self.per_slot() {
            if how == Marked::Found && self.linked_elsewhere(&link, run_id).await? {
                return Ok(MarkSent::OtherRun);
            }
            self.link_and_schedule(run_id, sid, &link).await?;
            call.keys_as(
                "the Cluster layout",
                [k.claim, k.attempt, k.record, history],
            )
        } else {
            call.key("claim key", k.claim)
                .key("attempt record", k.attempt)
                .key("open-attempts index", self.index())
                .key("message link", link)
                .key("callback record", k.record)
                .key("its history", history)
                .key(
                    "the reconcile schedule",
                    ringback_store::keys::reconcile_schedule(&self.claim_prefix),
                )
        };
        // a short wait is counted and logged where it came back; the text is out either way
        let (code, _durability): (MarkCode, _) = call
            .arg("attempt token", token)
            .arg("MessageSid", sid)
            .arg("sent TTL (ms)", ms(self.times.sent_ttl))
            .arg("runId", run_id)
            .arg("the status Twilio answered", status)
            .arg("look the message up", ms(self.times.poll_after))
            .arg("\"sent\"", kind)
            .run_durably(
                self.topology,
                &mut self.conn.clone(),
                &self.trips,
                ringback_store::scripts::WaitOn {
                    key: &claim_key,
                    survive: ringback_store::scripts::Survive::Failover,
                },
            )
            .await?;
        if self.per_slot() && code != MarkCode::Refused {
            self.index_rem(run_id).await?;
        }
        Ok(match code {
            MarkCode::Marked => MarkSent::Marked,
            MarkCode::Overrun => {
                WINDOW_OVERRUNS.fetch_add(1, Ordering::Relaxed);
                MarkSent::Overrun
            }
            MarkCode::Refused => MarkSent::OtherRun,
        })
    }

    /// PerSlot mode: whether the MessageSid is already linked to another run (a lookup never
    /// takes another run's message).
    pub(super) async fn linked_elsewhere(&self, link: &str, run_id: &str) -> Result<bool, Error> {
        let owner: Option<String> = redis::cmd("GET")
            .arg(link)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(owner.is_some_and(|o| o != run_id))
    }

    /// PerSlot mode, before the sent marker: the MessageSid link and the message's poll (each
    /// its own slot). Written first, so a cut before the marker leaves the reconciler the way to
    /// the run's record (module docs).
    pub(super) async fn link_and_schedule(
        &self,
        run_id: &str,
        sid: &str,
        link: &str,
    ) -> Result<(), Error> {
        redis::cmd("SET")
            .arg(link)
            .arg(run_id)
            .arg("PX")
            .arg(ms(self.times.sent_ttl))
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        redis::cmd("ZADD")
            .arg(ringback_store::keys::reconcile_schedule(&self.claim_prefix))
            .arg(self.now() + self.times.poll_after.as_millis() as i64)
            .arg(sid)
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }
}
