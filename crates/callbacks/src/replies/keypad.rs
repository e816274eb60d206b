//! A key pressed on a ladder's call, made safe under `serve` crashes as an inbound message is:
//! kept first (a pending entry), then it acknowledges the ladder and, for a question, lands
//! once as its answer (`via: "call"`, first answer wins); `serve`'s sweep finishes an entry a
//! crash cut short, [`PENDING_GRACE`] after it came. Each step is safe to repeat.

use serde::{Deserialize, Serialize};

use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_store::keys;

use super::answers::Claimed;
use super::{PENDING_GRACE, Replies};
use crate::ladder::record::{Ack, Channel};

/// A keypad answer as the call's `<Gather>` posted it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Keypad {
    /// The run whose ladder called.
    pub run_id: String,
    /// The call (`CallSid`).
    pub call_sid: String,
    /// The choice the key names (`acknowledged` for a plain callback).
    pub choice: String,
    /// The keys pressed.
    pub digits: String,
    /// The person called.
    pub who: String,
    /// The run is a question: the key is its answer.
    pub question: bool,
}

/// What [`Replies::keypad`] did with a key pressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyed {
    /// What the ladder's acknowledgement said.
    pub ack: Ack,
    /// The key is its question's answer (the first one); false for a plain callback.
    pub answered: bool,
    /// Another message claimed the question's answer and may still be recorded: the key stays
    /// kept, and the sweep finishes it once that settles.
    pub unsettled: bool,
}

impl Keyed {
    /// The key did what the person meant: it stopped the ladder, or answered the question.
    pub fn took(&self) -> bool {
        self.answered || self.unsettled || matches!(self.ack, Ack::Stopped(_))
    }
}

impl Replies {
    /// What a key pressed did: the ladder's acknowledgement, and for a question whether the
    /// key is its answer (the first one).
    pub async fn keypad(&self, k: &Keypad, at: i64) -> Result<Keyed, Error> {
        self.keep_keypad(k, at).await?;
        self.ladder_webhook_recorded();
        let keyed = self.finish_keypad(k).await?;
        if !keyed.unsettled {
            let _: () = redis::cmd("ZREM")
                .arg(keys::keypad_pending(&self.claim_prefix))
                .arg(member(k))
                .query_async(&mut self.conn())
                .await?;
        }
        Ok(keyed)
    }

    /// Tests (`test-support`): keep a keypad answer as a handler does first, and stop there (as
    /// a crash of `serve` would).
    #[cfg(any(test, feature = "test-support"))]
    pub async fn keep_keypad_only(&self, k: &Keypad, at: i64) -> Result<(), Error> {
        self.keep_keypad(k, at).await
    }

    async fn keep_keypad(&self, k: &Keypad, at: i64) -> Result<(), Error> {
        // NX: a repeat of the post keeps the first arrival's time
        let _: () = redis::cmd("ZADD")
            .arg(keys::keypad_pending(&self.claim_prefix))
            .arg("NX")
            .arg(at)
            .arg(member(k))
            .query_async(&mut self.conn())
            .await?;
        Ok(())
    }

    /// The ladder acknowledged (the calls still ringing left for a worker to end, this one
    /// aside: its answer ends it), then the question's answer.
    async fn finish_keypad(&self, k: &Keypad) -> Result<Keyed, Error> {
        let ack = self
            .ladders
            .ack(&k.run_id, Channel::Keypad, &mask(&k.who))
            .await?;
        if let Ack::Stopped(ringing) = &ack {
            let telemetry = ringback_shared::telemetry::global();
            telemetry.ladder_step("call", "answered");
            telemetry.ladder_step("ladder", "acknowledged");
            tracing::info!(run_id = %k.run_id, "a keypad answer acknowledged the ladder; it stops");
            let others: Vec<String> = ringing
                .iter()
                .filter(|c| **c != k.call_sid)
                .cloned()
                .collect();
            self.ladders.hang_up_later(&others).await?;
        }
        let claimed = if k.question {
            Some(
                self.keypad_answer(&k.run_id, &k.call_sid, &k.choice, &k.digits, &k.who)
                    .await?,
            )
        } else {
            None
        };
        if claimed == Some(Claimed::Another) {
            tracing::info!(run_id = %k.run_id, "keypad answer after the question's first answer: a late reply");
        }
        Ok(Keyed {
            ack,
            answered: claimed == Some(Claimed::Ours),
            unsettled: claimed == Some(Claimed::Unsettled),
        })
    }

    /// `serve`'s sweep: finish the keypad answers kept before `now` less [`PENDING_GRACE`]
    /// whose handler was cut short. How many it finished.
    pub async fn finish_keypads(&self, now: i64) -> Result<usize, Error> {
        let pending = keys::keypad_pending(&self.claim_prefix);
        let entries = self
            .due_members(&pending, now - PENDING_GRACE.as_millis() as i64, 100)
            .await?;
        Ok(self.finish_entries(entries, |_| true).await?.len())
    }

    /// The call `call_sid` ended: a key pressed on it whose handler was cut short (a `serve`
    /// that crashed between keeping the answer and acknowledging) is finished now, before the
    /// call's end is taken for "answered without a key". True when one was.
    pub async fn finish_keypads_of_call(&self, call_sid: &str) -> Result<bool, Error> {
        let pending = keys::keypad_pending(&self.claim_prefix);
        let entries = self.due_members(&pending, i64::MAX, 1000).await?;
        let done = self
            .finish_entries(entries, |k| k.call_sid == call_sid)
            .await?;
        Ok(!done.is_empty())
    }

    /// Finish the pending `entries` that `pick` chooses (an unreadable one is dropped); their
    /// acknowledgements.
    async fn finish_entries(
        &self,
        entries: Vec<String>,
        pick: impl Fn(&Keypad) -> bool,
    ) -> Result<Vec<Keyed>, Error> {
        let pending = keys::keypad_pending(&self.claim_prefix);
        let mut done = vec![];
        for entry in entries {
            let keypad = serde_json::from_str::<Keypad>(&entry).ok();
            match &keypad {
                Some(k) if pick(k) => {
                    let keyed = self.finish_keypad(k).await?;
                    let unsettled = keyed.unsettled;
                    done.push(keyed);
                    if unsettled {
                        continue;
                    }
                }
                Some(_) => continue,
                None => {}
            }
            let _: () = redis::cmd("ZREM")
                .arg(&pending)
                .arg(&entry)
                .query_async(&mut self.conn())
                .await?;
        }
        Ok(done)
    }
}

/// The pending entry of `k`: the same for every post of the same key press.
fn member(k: &Keypad) -> String {
    serde_json::to_string(k).unwrap_or_default()
}
