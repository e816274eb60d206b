//! Group commit of finishing calls: when jobs finish while an earlier finishing call
//! is still on its way to Redis, their calls go together, as one call of the step script's batch
//! counterpart (`finish_sent_batch.lua` for `finish_sent.lua`).
//!
//! Nothing waits to fill a group: a call goes out at once when fewer than [`IN_FLIGHT`] calls
//! ([`IN_FLIGHT_STEP`] for finishes with a processor's step) are on their way, so a lone job
//! pays no latency; under load, calls queue behind the ones in flight and leave together. Redis
//! then runs one script for many jobs: its fixed cost per call (the script's prelude, its
//! arguments' tables, one `TIME`, the queue's meta, the events trim, the delayed promotion, the
//! marker) is paid once per group instead of once per job.
//!
//! A group's call is the same calls one after another, in one script (each job's part is exactly
//! its single call's KEYS/ARGV), so Node sees what those calls would leave. If the group's call
//! fails, each job's call is sent again on its own and its caller gets that call's own answer or
//! error, as without grouping. A failure does not say how much of the group ran: a connection
//! lost after Redis ran the call ran all of it, a Lua error mid-group ran the jobs before the
//! failing one (Redis keeps a script's writes up to an error), and only a refusal before the
//! script started (NOSCRIPT, LOADING, BUSY, READONLY, OOM at its first write) ran nothing. The
//! re-sends are safe whichever it was:
//! - a step's script answers a re-execution of a job's part as its first run did
//!   (`finish_sent.lua` keeps each part's answer under the part's own call id for the claim's
//!   freshness bound), so a job whose part already ran gets that part's answer;
//! - a plain `move_to_finished` run twice answers "lock missing" the second time (the job is
//!   finished; what the first run fetched waits in `active` for stall recovery): the same as a
//!   Node worker, whose ioredis client re-sends the commands of a lost connection after it
//!   reconnects. Keeping plain finishes' answers too would cost every job a write that Node's
//!   worker does not make; the caller counts it as a lost lock and stall recovery runs the
//!   fetched job (an SMS job's window then keeps it to one text).
//!
//! The group's call carries each job's part as a difference from the part before it
//! ([`batch_layout`]): jobs of one queue share most of their KEYS/ARGV (the queue's keys, the
//! options), and every argument costs Redis a string to parse, one to make for Lua and one more
//! for its collector (~60 ns each, measured with redis-benchmark): an SMS job's 55 strings
//! become 14.

use std::sync::Arc;

use redis::Value;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::connection::Conn;
use super::scripts::{LuaScript, RoundTrips};

/// Group calls in flight at once for plain finishes (no-op-like jobs: Redis is their bound, so
/// fewer, larger groups win). Measured (100,000 no-op jobs at concurrency 50, 3 interleaved
/// rounds): 2 → 1.38× Node median, 4 → 1.31×.
pub const IN_FLIGHT: usize = 2;

/// Group calls in flight at once for finishes with a processor's step (the SMS finish): its jobs
/// spend most of their time away (the Twilio call), and with two in flight Redis idled while
/// replies travelled back and the worker turned them into the next jobs' work. Measured (20,000
/// SMS jobs at concurrency 50, three interleaved rounds, Redis on its own core): 2 → 10,388
/// jobs/s median, 3 → 13,326, 4 → 15,153, 6 → 15,031 (0.19 calls per job against 0.14 at 4).
/// Unpinned, as `scripts/bench` runs (the OS places Redis, the worker and the simulator on the
/// two cores; `PIN=0 scripts/bench-ab`, five rounds): 4 → 9,836, 8 → 10,531 (ahead in all five
/// pairs), 16 → no better than 8; pinned again, 4 → 10,891, 8 → 11,840.
pub const IN_FLIGHT_STEP: usize = 8;

/// Most jobs in one group (a bound on one script's run time: ~40 µs of Redis per SMS job).
pub const MAX_GROUP: usize = 32;

/// One job's finishing call, waiting for its group.
struct Pending {
    script: &'static LuaScript,
    batch: &'static LuaScript,
    keys: Vec<String>,
    args: Vec<String>,
    reply: oneshot::Sender<redis::RedisResult<Value>>,
}

/// The grouping task's inbox; the task ends when the last handle is dropped.
#[derive(Debug)]
pub struct GroupCommit {
    tx: mpsc::UnboundedSender<Pending>,
}

impl GroupCommit {
    /// Start the grouping task on the current Tokio runtime, with at most `in_flight` group
    /// calls on their way at once ([`IN_FLIGHT`], [`IN_FLIGHT_STEP`]).
    pub fn start(conn: Conn, trips: Arc<RoundTrips>, in_flight: usize) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(group_calls(rx, conn, trips, in_flight.max(1)));
        Self { tx }
    }

    /// Run `script` with `keys`/`args`, grouped with other jobs' calls of the same script and
    /// layout into one call of `batch` when they queue up together. Answers `script`'s reply.
    pub async fn run(
        &self,
        script: &'static LuaScript,
        batch: &'static LuaScript,
        keys: Vec<String>,
        args: Vec<String>,
    ) -> redis::RedisResult<Value> {
        let (reply, answer) = oneshot::channel();
        let pending = Pending {
            script,
            batch,
            keys,
            args,
            reply,
        };
        if let Err(mpsc::error::SendError(p)) = self.tx.send(pending) {
            // the task is gone (the runtime is shutting down): answer as a dropped connection
            // would, so the caller treats it as any Redis error it may retry
            return Err(closed(p.script));
        }
        answer.await.unwrap_or_else(|_| Err(closed(script)))
    }
}

fn closed(script: &LuaScript) -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::Io,
        "group commit stopped",
        script.name.to_string(),
    ))
}

async fn group_calls(
    mut rx: mpsc::UnboundedReceiver<Pending>,
    conn: Conn,
    trips: Arc<RoundTrips>,
    in_flight: usize,
) {
    let in_flight = Arc::new(Semaphore::new(in_flight));
    loop {
        // a permit first: while all are out, calls queue here and form the next group
        let Ok(permit) = in_flight.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = rx.recv().await else {
            return;
        };
        let mut group = vec![first];
        while group.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(p) => group.push(p),
                Err(_) => break,
            }
        }
        let (conn, trips) = (conn.clone(), trips.clone());
        tokio::spawn(async move {
            for part in split(group) {
                send(&conn, &trips, part).await;
            }
            drop(permit);
        });
    }
}

/// Split a group into runs of one script and layout (in practice: all of it).
fn split(group: Vec<Pending>) -> Vec<Vec<Pending>> {
    let mut parts: Vec<Vec<Pending>> = Vec::new();
    for p in group {
        match parts.iter_mut().find(|part| {
            let q = &part[0];
            std::ptr::eq(q.batch, p.batch)
                && std::ptr::eq(q.script, p.script)
                && q.keys.len() == p.keys.len()
                && q.args.len() == p.args.len()
        }) {
            Some(part) => part.push(p),
            None => parts.push(vec![p]),
        }
    }
    parts
}

async fn send(conn: &Conn, trips: &RoundTrips, part: Vec<Pending>) {
    if part.len() == 1 {
        for p in part {
            let reply = p
                .script
                .run(&mut conn.clone(), trips, &p.keys, &p.args)
                .await;
            let _ = p.reply.send(reply);
        }
        return;
    }
    let (script, batch) = (part[0].script, part[0].batch);
    let n = part.len();
    let mut calls = Vec::with_capacity(n);
    let mut replies = Vec::with_capacity(n);
    for p in part {
        calls.push((p.keys, p.args));
        replies.push(p.reply);
    }
    let (keys, args) = batch_layout(&calls);
    let reply: redis::RedisResult<Value> = batch.run(&mut conn.clone(), trips, &keys, &args).await;
    match reply {
        Ok(Value::Array(items)) if items.len() == n => {
            for (reply, item) in replies.into_iter().zip(items) {
                let _ = reply.send(Ok(item));
            }
        }
        other => {
            tracing::warn!(script = batch.name, jobs = n, reply = ?other,
                "a grouped finishing call failed; sending each job's call on its own");
            for (reply, (k, a)) in replies.into_iter().zip(&calls) {
                let _ = reply.send(script.run(&mut conn.clone(), trips, k, a).await);
            }
        }
    }
}

/// One batch call's KEYS and ARGV for `calls` (each job's KEYS and ARGV as its single call takes
/// them; all of one length each), as the batch scripts read them (`batchParts` in
/// lua/include/finish.lua):
/// - ARGV[1..3]: the number of jobs, keys per job, arguments per job;
/// - the first job's KEYS and ARGV in full (KEYS[1..k], ARGV[4..3+a]);
/// - for each further job, in ARGV: which of its KEYS and ARGV differ from the job's before it,
///   as `"<key positions>|<argument positions>"` (1-based, comma-separated; `"|"` = none), then
///   those arguments in order; its differing keys follow in KEYS, in order.
pub fn batch_layout<S: AsRef<str>>(calls: &[(Vec<S>, Vec<S>)]) -> (Vec<String>, Vec<String>) {
    let Some((k0, a0)) = calls.first() else {
        return (vec![], vec!["0".into(), "0".into(), "0".into()]);
    };
    let owned = |v: &[S]| v.iter().map(|x| x.as_ref().to_string()).collect::<Vec<_>>();
    let mut keys = owned(k0);
    let mut args = vec![
        calls.len().to_string(),
        k0.len().to_string(),
        a0.len().to_string(),
    ];
    args.extend(owned(a0));
    for pair in calls.windows(2) {
        let ((pk, pa), (k, a)) = (&pair[0], &pair[1]);
        let changed = |was: &[S], now: &[S]| -> Vec<usize> {
            (0..now.len())
                .filter(|&i| was.get(i).map(AsRef::as_ref) != Some(now[i].as_ref()))
                .collect()
        };
        let (ck, ca) = (changed(pk, k), changed(pa, a));
        let list = |at: &[usize]| {
            at.iter()
                .map(|i| (i + 1).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        args.push(format!("{}|{}", list(&ck), list(&ca)));
        args.extend(ca.iter().map(|&i| a[i].as_ref().to_string()));
        keys.extend(ck.iter().map(|&i| k[i].as_ref().to_string()));
    }
    (keys, args)
}

#[cfg(test)]
mod tests {
    use super::batch_layout;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn later_jobs_carry_only_what_differs_from_the_job_before() {
        let calls = vec![
            (v(&["q:wait", "q:1"]), v(&["1", "x", "opts"])),
            (v(&["q:wait", "q:2"]), v(&["2", "x", "opts"])),
            (v(&["q:wait", "q:3"]), v(&["3", "y", "opts"])),
            (v(&["q:wait", "q:3"]), v(&["3", "y", "opts"])),
        ];
        let (keys, args) = batch_layout(&calls);
        assert_eq!(keys, v(&["q:wait", "q:1", "q:2", "q:3"]));
        assert_eq!(
            args,
            v(&[
                "4", "2", "3", "1", "x", "opts", "2|1", "2", "2|1,2", "3", "y", "|"
            ])
        );
        assert_eq!(batch_layout::<String>(&[]).1, v(&["0", "0", "0"]));
    }
}
