//! The one place that builds Redis key names: BullMQ's `<prefix>:<queue>:<suffix>` layout.
//!
//! The prefix is a plain value, so a hash-tagged prefix such as `{bull}` keeps every key of a
//! queue in one Redis Cluster slot.

/// Key names of one BullMQ queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueKeys {
    /// `<prefix>:<queue>:`, the "key prefix" BullMQ scripts append job ids to.
    base: String,
}

macro_rules! queue_key {
    ($($(#[$doc:meta])* $name:ident => $suffix:literal),* $(,)?) => {
        $($(#[$doc])* pub fn $name(&self) -> String { format!("{}{}", self.base, $suffix) })*
    };
}

impl QueueKeys {
    /// Keys of `queue` under `prefix` (BullMQ's default is `bull`), both given without colons.
    pub fn new(prefix: &str, queue: &str) -> Self {
        Self {
            base: format!("{prefix}:{queue}:"),
        }
    }

    /// `<prefix>:<queue>:` with its trailing colon.
    pub fn base(&self) -> &str {
        &self.base
    }

    queue_key! {
        /// LIST of ready job ids (consumed from the right).
        wait => "wait",
        /// LIST of job ids being processed.
        active => "active",
        /// LIST where v5 queues park jobs while paused.
        paused => "paused",
        /// ZSET of ready jobs with a priority.
        prioritized => "prioritized",
        /// Priority counter.
        pc => "pc",
        /// ZSET of delayed jobs, score `due_ms * 4096 + seq`.
        delayed => "delayed",
        /// ZSET that wakes workers: member "0" (work) and "1" (next delayed due time).
        marker => "marker",
        /// ZSET of completed job ids, scored by finish time (ms).
        completed => "completed",
        /// ZSET of failed job ids, scored by finish time (ms).
        failed => "failed",
        /// SET of jobs suspected stalled by the previous sweep.
        stalled => "stalled",
        /// Throttle of the queue-wide stall sweep.
        stalled_check => "stalled-check",
        /// Rate-limit counter of jobs taken this window; at the limit, workers wait out its PTTL.
        limiter => "limiter",
        /// HASH of queue settings: `paused`, `version`, `opts.maxLenEvents`, and the like.
        meta => "meta",
        /// STREAM of queue events (`added`, `completed`, `failed`…) that QueueEvents reads.
        events => "events",
        /// Job-scheduler ZSET.
        repeat => "repeat",
        /// Counter (`INCR`) that hands out ids to jobs added without one.
        id => "id",
        /// ZSET of parent jobs waiting for their child jobs to finish.
        waiting_children => "waiting-children",
    }

    /// The job hash.
    pub fn job(&self, id: &str) -> String {
        format!("{}{id}", self.base)
    }

    /// The job's lock string.
    pub fn lock(&self, id: &str) -> String {
        format!("{}{id}:lock", self.base)
    }

    /// `metrics:completed` or `metrics:failed`.
    pub fn metrics(&self, target: &str) -> String {
        format!("{}metrics:{target}", self.base)
    }

    /// The finished set for a target ("completed" | "failed").
    pub fn finished(&self, target: &str) -> String {
        format!("{}{target}", self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_bullmq_layout() {
        let k = QueueKeys::new("bull", "notify");
        assert_eq!(k.wait(), "bull:notify:wait");
        assert_eq!(k.stalled_check(), "bull:notify:stalled-check");
        assert_eq!(k.job("42"), "bull:notify:42");
        assert_eq!(k.lock("a:b"), "bull:notify:a:b:lock");
        assert_eq!(k.metrics("failed"), "bull:notify:metrics:failed");
    }

    #[test]
    fn hash_tagged_prefix_is_kept_verbatim() {
        let k = QueueKeys::new("{bull}", "notify");
        assert_eq!(k.base(), "{bull}:notify:");
        assert_eq!(k.marker(), "{bull}:notify:marker");
    }
}

/// Keys of the claim/sent window for one callback run. The claim key is shared with the legacy
/// Node worker (`agent-callback:<runId>` by default), so its name is fixed; ringback's own keys
/// put the claim key in a hash tag (or, when it holds braces, a tag of the same slot before it:
/// [`crate::slots::slot_tag`]), so all of them live in the claim key's Redis Cluster slot and
/// one Lua script may touch them together, whatever the runId holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowKeys {
    /// `<claim prefix><runId>`: `pending…` while an attempt may be talking to Twilio, `sent…` after.
    pub claim: String,
    /// `ringback:attempt:{<claim>}`: the durable record of the last attempt (outlives the claim).
    pub attempt: String,
    /// `ringback:callback:{<claim>}`: the callback's delivery record (status webhooks, polls).
    pub record: String,
}

impl WindowKeys {
    /// Keys of the run `run_id`; `claim_prefix` is the Node worker's (`agent-callback:` default).
    pub fn new(claim_prefix: &str, run_id: &str) -> Self {
        let claim = format!("{claim_prefix}{run_id}");
        let tag = crate::slots::slot_tag(&claim);
        Self {
            attempt: format!("ringback:attempt:{tag}"),
            record: format!("ringback:callback:{tag}"),
            claim,
        }
    }
}

/// The hash tag of a run's own keys: `{<claim>}`, or for a claim key with braces a tag of its
/// slot followed by the claim key ([`crate::slots::slot_tag`]).
fn run_tag(claim_prefix: &str, run_id: &str) -> String {
    crate::slots::slot_tag(&format!("{claim_prefix}{run_id}"))
}

/// The callback record's history list, in the claim key's slot.
pub fn callback_history(claim_prefix: &str, run_id: &str) -> String {
    format!(
        "ringback:callback-history:{}",
        run_tag(claim_prefix, run_id)
    )
}

/// `ringback:ladder:{<claim>}`: where a run's escalation ladder stands (`callbacks::ladder`).
pub fn ladder(claim_prefix: &str, run_id: &str) -> String {
    format!("ringback:ladder:{}", run_tag(claim_prefix, run_id))
}

/// ZSET runId → when the run's ladder may start its next step (the ladder sweep's schedule;
/// shared by all runs, as [`open_attempts`]).
pub fn ladder_due(claim_prefix: &str) -> String {
    format!("ringback:ladder-due:{claim_prefix}")
}

/// ZSET runId → when the run's question's `replyWithin` ends: the sweep that adds its
/// `no-answer` job when nobody answered.
pub fn questions_due(claim_prefix: &str) -> String {
    format!("ringback:questions-due:{claim_prefix}")
}

/// ZSET of keypad answers kept and not yet finished (JSON → when they came, ms): `serve`'s
/// sweep finishes one a crash cut short.
pub fn keypad_pending(claim_prefix: &str) -> String {
    format!("ringback:keypad-pending:{claim_prefix}")
}

/// SET of the runs whose ladder has reached `number` (texted or called): a message from it
/// acknowledges them.
pub fn ladder_people(claim_prefix: &str, number: &str) -> String {
    format!("ringback:ladder-people:{claim_prefix}:{number}")
}

/// The run whose ladder a step's text belongs to, kept beside the text's own run.
pub fn ladder_step_of(claim_prefix: &str, step_run: &str) -> String {
    format!(
        "ringback:ladder-step-of:{}",
        run_tag(claim_prefix, step_run)
    )
}

/// SET of ladder calls still ringing after their ladder stopped: a worker with Twilio's
/// credentials ends them.
pub fn ladder_hangups(claim_prefix: &str) -> String {
    format!("ringback:ladder-hangups:{claim_prefix}")
}

/// The ladder step whose call to `number` is unconfirmed (`ladder_number.lua`), in the slot of
/// the number's own tag, as [`ladder_number_calls`].
pub fn ladder_number(claim_prefix: &str, number: &str) -> String {
    format!(
        "ringback:ladder-number:{}",
        crate::slots::slot_tag(&format!("{claim_prefix}{number}"))
    )
}

/// ZSET of the ladder calls to `number` confirmed as a step's (CallSid → when, ms): the
/// evidence of another step's unconfirmed call passes over them.
pub fn ladder_number_calls(claim_prefix: &str, number: &str) -> String {
    format!(
        "ringback:ladder-number-calls:{}",
        crate::slots::slot_tag(&format!("{claim_prefix}{number}"))
    )
}

/// The calls placed to `number` in the hour `hour` (hours since the epoch): the cap's count.
pub fn ladder_calls(claim_prefix: &str, number: &str, hour: i64) -> String {
    format!("ringback:ladder-calls:{claim_prefix}:{number}:{hour}")
}

/// `ringback:run-number:{<claim>}`: the exact digits of the numeric runId beyond 2^53 that first
/// took this claim key (JavaScript keys such a number by the nearest double, so two runs can
/// share one key): `callbacks/window/number.rs`.
pub fn run_number(claim_prefix: &str, run_id: &str) -> String {
    format!("ringback:run-number:{}", run_tag(claim_prefix, run_id))
}

/// `ringback:escalated:{<claim>}`: set once a run's escalation exists, kept several times the
/// record's lifetime, so a replayed status callback never escalates (or texts the fallback
/// number) again after the record and the escalation jobs are gone.
pub fn escalated_marker(claim_prefix: &str, run_id: &str) -> String {
    format!("ringback:escalated:{}", run_tag(claim_prefix, run_id))
}

/// `ringback:escalated:{<claim>}:<kind>`: set once the run's escalation of this kind exists
/// (written after its jobs, with the run's marker; same lifetime).
pub fn escalated_kind_marker(claim_prefix: &str, run_id: &str, kind: &str) -> String {
    format!("{}:{kind}", escalated_marker(claim_prefix, run_id))
}

/// `ringback:redis-identity`: the server identity (INFO's `run_id`) of the Redis that
/// acknowledged ringback's writes, and when a change was last noticed (`window.lua`'s
/// `redisLost`, which names it too: the fused finish reads it undeclared). One per Redis; on a
/// Cluster one per hash slot ([`redis_identity_of_slot`]).
pub fn redis_identity() -> String {
    "ringback:redis-identity".to_string()
}

/// `ringback:redis-identity:{<tag of the slot>}`: [`redis_identity`] for the keys of one hash
/// slot. A Cluster's shards fail over (and restart) one by one, and a claim script may only
/// touch its run's slot: each claim compares the identity kept in its own slot with the server
/// that now serves it. A slot moved to another master by a reshard carries the old master's
/// identity with it, and its claims look first for one window (a false alarm that costs a
/// lookup, never a text).
pub fn redis_identity_of_slot(slot: u16) -> String {
    format!(
        "ringback:redis-identity:{{{}}}",
        crate::slots::tag_of_slot(slot)
    )
}

/// ZSET MessageSid → when to look the message up (reconciliation of missing callbacks).
pub fn reconcile_schedule(claim_prefix: &str) -> String {
    format!("ringback:reconcile:{claim_prefix}")
}

/// ZSET runId → when the orphan sweep must look at the run's open attempt. Shared by all runs,
/// so under Redis Cluster it lives in another slot than the per-run keys: in `PerSlot` mode it
/// is written by separate calls around the per-run script (`window.rs` says in which order, and
/// how the index is repaired after a cut).
pub fn open_attempts(claim_prefix: &str) -> String {
    format!("ringback:open-attempts:{claim_prefix}")
}

/// ZSET fallback text's run → when it was asked for (ms): the runs the console shows as part
/// of the run they tell of, never as runs of their own (kept as long as a record lives).
pub fn fallback_runs(claim_prefix: &str) -> String {
    format!("ringback:fallback-runs:{claim_prefix}")
}

/// ZSET runId → when its latest fresh attempt was claimed (ms), capped at
/// [`RECENT_RUNS_CAP`]: the operators' console lists runs newest first from it. Like
/// [`open_attempts`] it is global to the claim prefix, so under Redis Cluster it lives in another
/// slot than the per-run keys `window_claim.lua` writes with it: a separate call there.
pub fn recent_runs(claim_prefix: &str) -> String {
    format!("ringback:recent-runs:{claim_prefix}")
}

/// How many runs [`recent_runs`] keeps, about (the oldest are dropped past it; a single-Redis
/// claim trims on about one new run in 16, see `window_claim.lua`).
pub const RECENT_RUNS_CAP: usize = 20_000;

/// ZSET of live ringback workers (name → last heartbeat, ms): `ringback drain` refuses while
/// one is alive.
pub fn ringback_workers(claim_prefix: &str) -> String {
    format!("ringback:workers:{claim_prefix}")
}

/// ZSET of the same workers → until when each is alive (ms): its beat plus the window it
/// advertises. In the slot of [`ringback_workers`] (one script writes both).
pub fn ringback_workers_until(claim_prefix: &str) -> String {
    format!(
        "ringback:workers-until:{}",
        crate::slots::slot_tag(&ringback_workers(claim_prefix))
    )
}

/// Where the scan of a queue's failed set for stall-limit failures got to (a finishedOn score).
pub fn stall_scan_cursor(queue_base: &str) -> String {
    format!("ringback:stall-scan:{{{queue_base}}}")
}

/// `ringback:run-key:<claim prefix><short key>` → the long runId the key names
/// (`ringback_callbacks::callback::short_key`), for a status callback whose URL carries the key.
pub fn run_key_link(claim_prefix: &str, short_key: &str) -> String {
    format!("ringback:run-key:{claim_prefix}{short_key}")
}

/// The kept answer of one fused finishing call (`finish_sent.lua`), for a re-send of the same
/// call after its reply was lost; it lives for seconds.
pub fn finish_record(claim_prefix: &str, call_id: &str) -> String {
    format!("ringback:finished:{claim_prefix}{call_id}")
}

/// `ringback:layout:<claim prefix>` → the record layout written beside the queue
/// (`ringback_callbacks::layout`).
pub fn record_layout(claim_prefix: &str) -> String {
    format!("ringback:layout:{claim_prefix}")
}

/// `ringback:message:<MessageSid>` → the runId it was sent for.
pub fn message_link(sid: &str) -> String {
    format!("ringback:message:{sid}")
}

/// `ringback:question:{<claim>}` → the question a run asks (its reply code, recipient, until
/// when it is open): fixed before the run's first claim, so every attempt sends the same body.
pub fn question(claim_prefix: &str, run_id: &str) -> String {
    format!("ringback:question:{}", run_tag(claim_prefix, run_id))
}

/// `ringback:question-answered:{<claim>}` → the MessageSid of the question's first answer
/// (`SET NX` when the answer is decided).
pub fn question_answered(claim_prefix: &str, run_id: &str) -> String {
    format!(
        "ringback:question-answered:{}",
        run_tag(claim_prefix, run_id)
    )
}

/// `ringback:replies:{<claim>}`: HASH MessageSid → a reply to the run (its sender masked), kept
/// as long as the run's record.
pub fn run_replies(claim_prefix: &str, run_id: &str) -> String {
    format!("ringback:replies:{}", run_tag(claim_prefix, run_id))
}

/// `ringback:questions:<claim prefix><number>`: HASH runId → an open question to the number
/// (code, open until, an excerpt), read when a reply from the number arrives.
pub fn open_questions(claim_prefix: &str, number: &str) -> String {
    format!("ringback:questions:{claim_prefix}{number}")
}

/// `ringback:inbound:<claim prefix><MessageSid>` → an inbound message as recorded, with the
/// run it was matched to: the first arrival decides; Twilio's retries read it back.
pub fn inbound(claim_prefix: &str, sid: &str) -> String {
    format!("ringback:inbound:{claim_prefix}{sid}")
}

/// ZSET MessageSid → when it was recorded: inbound messages recorded and not yet through
/// every step (the replies queue, the run's record); `serve`'s sweep finishes them.
pub fn inbound_pending(claim_prefix: &str) -> String {
    format!("ringback:inbound-pending:{claim_prefix}")
}

/// ZSET MessageSid → when its next forward is due: inbound messages to forward
/// (`RINGBACK_INBOUND_FORWARD_URL`) that the forward URL has not yet accepted.
pub fn inbound_forwards(claim_prefix: &str) -> String {
    format!("ringback:inbound-forwards:{claim_prefix}")
}

/// ZSET of inbound messages that matched no question (masked), scored by arrival, trimmed to
/// the retention.
pub fn inbound_unmatched(claim_prefix: &str) -> String {
    format!("ringback:inbound-unmatched:{claim_prefix}")
}

/// The replies queue's per-MessageSid marker, in the queue's own slot so one script adds the
/// job and sets it: a message is enqueued once, also after its job was removed.
pub fn reply_enqueued(replies: &QueueKeys, sid: &str) -> String {
    let base = replies.base().trim_end_matches(':');
    format!(
        "ringback:reply-enqueued:{}:{sid}",
        crate::slots::slot_tag(base)
    )
}

/// HASH `<sender>\n<number>` → what Twilio said of the number's opt-out from the sender (a
/// 21610 refusal, or an inbound message's `OptOutType`).
pub fn opt_outs(claim_prefix: &str) -> String {
    format!("ringback:opt-outs:{claim_prefix}")
}

#[cfg(test)]
mod window_tests {
    use super::WindowKeys;

    #[test]
    fn window_keys_share_the_claim_keys_slot() {
        let k = WindowKeys::new("agent-callback:", "run-1");
        assert_eq!(k.claim, "agent-callback:run-1");
        assert_eq!(k.attempt, "ringback:attempt:{agent-callback:run-1}");
        assert_eq!(k.record, "ringback:callback:{agent-callback:run-1}");
    }
}
