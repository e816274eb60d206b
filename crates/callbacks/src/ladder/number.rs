//! One unconfirmed ladder call per number at a time (`ladder_number.lua`): a call step takes
//! its number before it looks for its call or creates it, and gives it back with the call's
//! SID once confirmed (or with none once the step settled without a call). Two ladders that
//! reach one on-call number then never take each other's call for their own: while a step's
//! call is unconfirmed no other call to the number is created, and the calls it finds in
//! Twilio's list are its own or confirmed as another step's.

use std::time::Duration;

use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::keys;
use ringback_store::scripts::scripts;

use super::climb::{Climber, Read};
use super::plan::Plan;
use super::record::{LadderRecord, Marked};

/// How long a confirmed call is kept among its number's calls: longer than any step's
/// evidence looks back (the lease and the lost-writes window).
const CONFIRMED_FOR: Duration = Duration::from_secs(2 * 3600);

/// How long a step holds its number at most, when its holder never gives it back (a sender
/// gone for good with no sweep after it): the claim is adopted and resolved well inside it.
pub const NUMBER_HOLD: Duration = Duration::from_secs(600);

impl LadderRecord {
    /// `ladder_number.lua`'s `op` ("take" or "give") for step `k` of `run_id` on `number`;
    /// `arg`: a take's hold (ms) or a give's SID.
    async fn number_script<T: redis::FromRedisValue>(
        &self,
        number: &str,
        op: &str,
        run_id: &str,
        k: u32,
        arg: &str,
    ) -> Result<T, Error> {
        Ok(scripts()
            .ladder_number
            .call()
            .key(
                "the number's call claim",
                keys::ladder_number(&self.claim_prefix, number),
            )
            .key(
                "the number's confirmed calls",
                keys::ladder_number_calls(&self.claim_prefix, number),
            )
            .arg("\"take\" | \"give\"", op)
            .arg("the step", format!("{run_id} {k}"))
            .arg("take: the hold (ms) | give: the confirmed call's SID", arg)
            .arg(
                "how long a confirmed call is kept (ms)",
                CONFIRMED_FOR.as_millis().to_string(),
            )
            .run_in(self.topology, &mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Take `number` for step `k` of `run_id`; `Err(holder)` names the step holding it
    /// (`<runId> <step>`).
    pub async fn take_number(
        &self,
        number: &str,
        run_id: &str,
        k: u32,
    ) -> Result<Result<(), String>, Error> {
        let hold = NUMBER_HOLD.as_millis().to_string();
        let holder: String = self.number_script(number, "take", run_id, k, &hold).await?;
        Ok(if holder.is_empty() {
            Ok(())
        } else {
            Err(holder)
        })
    }

    /// Give `number` back from step `k` of `run_id`, its call `sid` (kept among the number's
    /// confirmed calls) or none.
    pub async fn give_number(
        &self,
        number: &str,
        run_id: &str,
        k: u32,
        sid: Option<&str>,
    ) -> Result<(), Error> {
        let _: i64 = self
            .number_script(number, "give", run_id, k, sid.unwrap_or_default())
            .await?;
        Ok(())
    }

    /// Step `k`'s number was given back: no visit gives it again.
    pub async fn given(&self, run_id: &str, k: u32) -> Result<(), Error> {
        redis::cmd("HDEL")
            .arg(keys::ladder(&self.claim_prefix, run_id))
            .arg(format!("give:{k}"))
            .round_trip::<()>(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(())
    }

    /// The calls to `number` confirmed as another step's than step `k` of `run_id`, by SID.
    pub async fn others_calls(
        &self,
        number: &str,
        run_id: &str,
        k: u32,
    ) -> Result<std::collections::HashSet<String>, Error> {
        let members: Vec<String> = redis::cmd("ZRANGE")
            .arg(keys::ladder_number_calls(&self.claim_prefix, number))
            .arg(0)
            .arg(-1)
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?;
        let me = format!("{run_id} {k}");
        Ok(members
            .into_iter()
            .filter_map(|m| {
                let (sid, step) = m.split_once(' ')?;
                (step != me).then(|| sid.to_string())
            })
            .collect())
    }
}

impl Climber {
    /// Take `number` for step `k` of `run`. A holder whose step is marked already (its sender
    /// stopped between the mark and the give) is given back on its behalf, with its call, and
    /// the take tried again; `false`: another step's call to the number is unconfirmed.
    pub(super) async fn take_number(&self, number: &str, run: &str, k: u32) -> Result<bool, Error> {
        let holder = match self.record.take_number(number, run, k).await? {
            Ok(()) => return Ok(true),
            Err(holder) => holder,
        };
        let Some((their_run, their_k)) = holder
            .rsplit_once(' ')
            .and_then(|(r, k)| Some((r.to_string(), k.parse::<u32>().ok()?)))
        else {
            return Ok(false);
        };
        let theirs = self.record.read(&their_run).await?;
        let Some(mark) = theirs
            .get(&format!("claim:{their_k}"))
            .filter(|c| !c.starts_with("pending:"))
        else {
            return Ok(false);
        };
        let sid = mark
            .strip_prefix("sent:")
            .filter(|sid| ringback_twilio::call::is_call_sid(sid));
        tracing::info!(run_id = %run, step = k, holder = %holder, "the number's holder was marked and never gave it back; given back on its behalf");
        self.give_number(&their_run, their_k, number, sid).await?;
        Ok(self.record.take_number(number, run, k).await?.is_ok())
    }

    /// Step `k` marked with its number not given back yet (its sender stopped between the
    /// two): give it back now, with the step's call.
    pub(super) async fn give_back_left(
        &self,
        run: &str,
        read: &Read,
        plan: &Plan,
        k: u32,
    ) -> Result<(), Error> {
        if read.get(&format!("give:{k}")).is_none() {
            return Ok(());
        }
        let Some(step) = plan.step(k) else {
            return Ok(());
        };
        let sid = read
            .get(&format!("claim:{k}"))
            .and_then(|c| c.strip_prefix("sent:"))
            .filter(|sid| ringback_twilio::call::is_call_sid(sid));
        self.give_number(run, k, &step.to, sid).await
    }

    /// Give step `k`'s number back (with its call `sid`, kept among the number's confirmed
    /// calls), then clear the step's `give:<k>`.
    pub(super) async fn give_number(
        &self,
        run: &str,
        k: u32,
        to: &str,
        sid: Option<&str>,
    ) -> Result<(), Error> {
        self.record.give_number(to, run, k, sid).await?;
        self.record.given(run, k).await
    }

    /// A step's call to `to` is `sid`: mark it and give its number back with it; a call made
    /// after the stop is ended.
    pub(super) async fn marked(
        &self,
        run: &str,
        k: u32,
        token: &str,
        to: &str,
        sid: &str,
    ) -> Result<(), Error> {
        let marked = self.record.mark(run, k, token, sid, true, true).await?;
        if marked != Marked::NotOurs {
            self.give_number(run, k, to, Some(sid)).await?;
        }
        match marked {
            Marked::Marked => Ok(()),
            Marked::End => {
                tracing::info!(run_id = %run, step = k, "the person acknowledged meanwhile; ending the call");
                self.record.hang_up_later(&[sid.to_string()]).await?;
                self.hang_up().await
            }
            Marked::NotOurs => {
                tracing::warn!(run_id = %run, step = k, "ladder step's claim changed hands; its call stands");
                Ok(())
            }
        }
    }
}
