//! Claiming a run for an attempt: `Window::claim`, its reply, and (on a Redis Cluster) the
//! global writes the claim script leaves to its caller.

use super::{Claim, SendFacts, Unresolved, Window, may_resend, ms};
use ringback_shared::error::Error;
use ringback_store::command::RoundTrip;
use ringback_store::scripts::scripts;
use std::time::Duration;

impl Window {
    /// Claim `run_id` for a new attempt (`token`), or say why not. `supersede` is the token of
    /// an attempt the caller resolved as never sent: it is replaced in the same step.
    #[allow(clippy::too_many_arguments)]
    pub async fn claim(
        &self,
        run_id: &str,
        token: &str,
        supersede: Option<&str>,
        job_id: &str,
        worker_id: &str,
        to: &str,
        from: &str,
        body: &str,
    ) -> Result<Claim, Error> {
        let facts = SendFacts::default();
        self.claim_in(
            run_id, token, supersede, job_id, worker_id, to, from, body, &facts,
        )
        .await
    }

    /// [`Window::claim`] for callback `req`: the attempt record also keeps what a send decision
    /// needs beyond the text (urgent, the time zone), for the paths that rebuild the request
    /// from the record alone (the orphan sweep, drain, resend).
    pub async fn claim_callback(
        &self,
        req: &crate::callback::CallbackRequest,
        token: &str,
        supersede: Option<&str>,
        job_id: &str,
        worker_id: &str,
    ) -> Result<Claim, Error> {
        let from = req.from.clone().unwrap_or_default();
        let facts = SendFacts::of(req);
        self.claim_in(
            &req.run_id,
            token,
            supersede,
            job_id,
            worker_id,
            &req.to,
            &from,
            &req.body,
            &facts,
        )
        .await
    }

    #[allow(clippy::too_many_arguments)]
    async fn claim_in(
        &self,
        run_id: &str,
        token: &str,
        supersede: Option<&str>,
        job_id: &str,
        worker_id: &str,
        to: &str,
        from: &str,
        body: &str,
        facts: &SendFacts,
    ) -> Result<Claim, Error> {
        let k = self.keys(run_id);
        let claim_key = k.claim.clone();
        let identity = self.identity_of(&k.claim);
        let recent_runs = ringback_store::keys::recent_runs(&self.claim_prefix);
        // A lost reply is sent again with the same token: the script answers its own earlier
        // claim as "claimed" (window_claim.lua), and an answer later than the freshness bound
        // from the first send starts no send.
        let first_sent = tokio::time::Instant::now();
        let mut delay = Duration::from_millis(20);
        let (reply, durability): (Vec<String>, _) = loop {
            let due = if self.per_slot() {
                // the intent first: an attempt this claim opens is indexed before it exists; the
                // script opens none once the intent is due (a sweep may take and drop it then)
                let due = self.now() + self.times.pending_ttl.as_millis() as i64;
                self.index_add(run_id, due).await?;
                due.to_string()
            } else {
                String::new()
            };
            // PerSlot (a cluster): the claim's WAIT rides in its pipeline, before any send
            match scripts()
                .window_claim
                .call()
                .key("claim key", k.claim.clone())
                .key("attempt record", k.attempt.clone())
                .key("callback record", k.record.clone())
                .key("the Redis identity", identity.clone())
                .key_if("open-attempts index", self.global(self.index()))
                .key_if("recent-runs index", self.global(recent_runs.clone()))
                .arg("new attempt token", token)
                .arg("job id", job_id)
                .arg("worker id", worker_id)
                .arg("supersede", supersede.unwrap_or(""))
                .arg("pending TTL (ms)", ms(self.times.pending_ttl))
                .arg("hold (ms)", ms(self.times.hold))
                .arg("record TTL (ms)", ms(self.times.sent_ttl))
                .arg("to", to)
                .arg("from", from)
                .arg("body", body)
                .arg("runId", run_id)
                .arg("claim lease (ms)", ms(self.times.lease))
                .arg("recent-runs cap", ringback_store::keys::RECENT_RUNS_CAP)
                .arg("(cluster layout only)", due)
                .arg("\"1\" = urgent", if facts.urgent { "1" } else { "" })
                .arg(
                    "the callback's time zone",
                    facts.time_zone.as_deref().unwrap_or(""),
                )
                .arg("the lost-writes window", ms(self.times.lost_writes_window))
                .arg(
                    "the callback's question and ladder",
                    facts.ask.as_deref().unwrap_or(""),
                )
                .run_durably(
                    self.topology,
                    &mut self.conn.clone(),
                    &self.trips,
                    ringback_store::scripts::WaitOn {
                        key: &claim_key,
                        survive: ringback_store::scripts::Survive::Restart,
                    },
                )
                .await
            {
                Ok(reply) => break reply,
                Err(e)
                    if may_resend(&e) && first_sent.elapsed() + delay < self.times.replay_for =>
                {
                    tracing::debug!(error = %e, "claim call failed; sending it again");
                    tokio::time::sleep(delay).await;
                    delay *= 2;
                }
                Err(e) => return Err(e.into()),
            }
        };
        let mut claim = self.read_claim(&reply)?;
        if durability.short() {
            if let Claim::Claimed { token } = claim {
                let now = ringback_shared::clock::now_ms();
                let since = match self.unacknowledged_since.compare_exchange(
                    0,
                    now,
                    std::sync::atomic::Ordering::AcqRel,
                    std::sync::atomic::Ordering::Acquire,
                ) {
                    Ok(_) => now,
                    Err(earlier) => earlier,
                };
                tracing::warn!(
                    wanted = durability.wanted,
                    acked = durability.acked,
                    on_disk = !durability.fsync_wanted || durability.fsynced,
                    "replicas did not acknowledge the claim in time, or the disk did not have it: holding the send (a failover or a restart now could lose the claim, and the retried job would text again)"
                );
                claim = Claim::Unacknowledged { token, since };
            }
        } else {
            // acknowledged, or nothing to wait for: a streak of unacknowledged claims ended (a
            // later one starts its own, so its escalation bound counts from then)
            self.unacknowledged_since
                .store(0, std::sync::atomic::Ordering::Release);
        }
        if let Claim::Claimed { token } = &claim
            && first_sent.elapsed() > self.times.replay_for
        {
            tracing::warn!(
                elapsed_ms = first_sent.elapsed().as_millis() as u64,
                "the claim answered too late to send on; giving it back"
            );
            self.release(
                run_id,
                token,
                "claim answered too late",
                "released",
                Duration::ZERO,
            )
            .await?;
            claim = Claim::Busy(Duration::ZERO);
        }
        if self.per_slot() {
            let redis_now = reply
                .last()
                .and_then(|n| n.parse::<i64>().ok())
                .unwrap_or_else(|| self.now());
            self.after_claim(run_id, &claim, redis_now).await?;
        }
        Ok(claim)
    }

    /// A claim's reply (`window_claim.lua`'s, also the claim a fused finish made for the job it
    /// fetched, on one Redis only) as a [`Claim`]; notes Redis's clock from it.
    pub fn read_claim(&self, reply: &[String]) -> Result<Claim, Error> {
        let bad = || Error::Reply {
            script: "window_claim",
            detail: format!("{reply:?}"),
        };
        let get = |i: usize| reply.get(i).cloned().ok_or_else(bad);
        self.saw_redis_now(reply.last());
        let claim = match reply.first().map(String::as_str) {
            Some("sent") => Claim::Sent(Some(get(1)?).filter(|s| !s.is_empty())),
            Some("busy") => Claim::Busy(Duration::from_millis(
                get(1)?.parse::<i64>().unwrap_or(0).max(0) as u64,
            )),
            Some("claimed") => Claim::Claimed { token: get(1)? },
            Some("resolve") => Claim::Resolve(Unresolved {
                token: get(1)?,
                since: get(2)?.parse().unwrap_or_else(|_| self.now()),
                to: get(3)?,
                from: get(4)?,
                body: get(5)?,
                receipt_sid: Some(get(6)?).filter(|s| !s.is_empty()),
                escalated: !get(7)?.is_empty(),
                taken: matches!(get(8)?.as_str(), "taken" | "lost"),
                after_loss: get(8)? == "lost",
            }),
            _ => return Err(bad()),
        };
        // said once per window: a Cluster's slots each notice their shard's change on their own
        let window = self.times.lost_writes_window.as_millis() as i64;
        let last = self.loss_logged.load(std::sync::atomic::Ordering::Acquire);
        if let Claim::Resolve(u) = &claim
            && u.after_loss
            && (u.since - last).abs() >= window.max(1)
            && self
                .loss_logged
                .compare_exchange(
                    last,
                    u.since,
                    std::sync::atomic::Ordering::AcqRel,
                    std::sync::atomic::Ordering::Acquire,
                )
                .is_ok()
        {
            tracing::warn!(
                noticed_at_ms = u.since,
                window_ms = self.times.lost_writes_window.as_millis() as u64,
                "Redis is not the one that acknowledged ringback's writes (a restart, a failover): it may have lost the last ones, so each callback claimed afresh in this window looks for its text at Twilio before sending"
            );
        }
        Ok(claim)
    }

    /// PerSlot mode: the global writes the claim script left to its caller (module docs).
    pub(super) async fn after_claim(
        &self,
        run_id: &str,
        claim: &Claim,
        redis_now: i64,
    ) -> Result<(), Error> {
        match claim {
            Claim::Sent(_) => self.index_rem(run_id).await,
            Claim::Busy(left) => {
                // the intent moved the live attempt's time on: put its deadline back
                self.index_add(run_id, redis_now + left.as_millis() as i64)
                    .await
            }
            Claim::Resolve(_) => {
                self.index_add(run_id, redis_now + self.times.hold.as_millis() as i64 / 2)
                    .await
            }
            Claim::Claimed { .. } | Claim::Unacknowledged { .. } => {
                // the console's newest-first list, trimmed to its cap in the same call
                let recent = ringback_store::keys::recent_runs(&self.claim_prefix);
                redis::pipe()
                    .cmd("ZADD")
                    .arg(&recent)
                    .arg(redis_now)
                    .arg(run_id)
                    .ignore()
                    .cmd("ZREMRANGEBYRANK")
                    .arg(&recent)
                    .arg(0)
                    .arg(-(ringback_store::keys::RECENT_RUNS_CAP as i64) - 1)
                    .ignore()
                    .round_trip::<()>(&mut self.conn.clone(), &self.trips)
                    .await?;
                Ok(())
            }
        }
    }
}
