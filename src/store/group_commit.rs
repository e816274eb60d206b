//! Group commit of finishing calls (issue 12): when jobs finish while an earlier finishing call
//! is still on its way to Redis, their calls go together, as one call of the step script's batch
//! counterpart (`finish_sent_batch.lua` for `finish_sent.lua`).
//!
//! Nothing waits to fill a group: a call goes out at once when fewer than [`IN_FLIGHT`] calls
//! are on their way, so a lone job pays no latency; under load, calls queue behind the ones in
//! flight and leave together. Redis then runs one script for many jobs: its fixed cost per call
//! (the script's prelude, its arguments' tables, one `TIME`, the queue's meta, the events trim,
//! the delayed promotion, the marker) is paid once per group instead of once per job.
//!
//! A group's call is the same calls one after another, in one script (each job's part is laid
//! out exactly as its single call's KEYS/ARGV), so Node sees what those calls would leave. If the
//! group's call fails (a dropped connection, say), each job's call is sent again on its own and
//! its caller gets that call's own answer or error, as without grouping.

use std::sync::Arc;

use redis::Value;
use tokio::sync::{Semaphore, mpsc, oneshot};

use super::connection::Conn;
use super::scripts::{LuaScript, RoundTrips};

/// Group calls in flight at once (more would only queue in Redis; fewer would idle it while a
/// reply travels back).
pub const IN_FLIGHT: usize = 2;

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
pub struct GroupCommit {
    tx: mpsc::UnboundedSender<Pending>,
}

impl GroupCommit {
    /// Start the grouping task on the current Tokio runtime.
    pub fn start(conn: Conn, trips: Arc<RoundTrips>) -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(group_calls(rx, conn, trips));
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

async fn group_calls(mut rx: mpsc::UnboundedReceiver<Pending>, conn: Conn, trips: Arc<RoundTrips>) {
    let in_flight = Arc::new(Semaphore::new(IN_FLIGHT));
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
    let (n, nk, na) = (part.len(), part[0].keys.len(), part[0].args.len());
    // each job's KEYS and ARGV move into the group's (no copies: ~55 strings per SMS job)
    let mut keys = Vec::with_capacity(nk * n);
    let mut args = Vec::with_capacity(3 + na * n);
    args.extend([n.to_string(), nk.to_string(), na.to_string()]);
    let mut replies = Vec::with_capacity(n);
    for p in part {
        keys.extend(p.keys);
        args.extend(p.args);
        replies.push(p.reply);
    }
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
            for (i, reply) in replies.into_iter().enumerate() {
                let (k, a) = (
                    &keys[i * nk..(i + 1) * nk],
                    &args[3 + i * na..3 + (i + 1) * na],
                );
                let _ = reply.send(script.run(&mut conn.clone(), trips, k, a).await);
            }
        }
    }
}
