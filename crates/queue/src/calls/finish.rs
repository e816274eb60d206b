//! Fetching a job, and finishing one: `move_to_finished` (alone, grouped, or with a processor's
//! step), which also fetches the next job in the same call.

use super::{
    Calls, FetchArgs, Fetched, Finish, StepFinished, code_or, finished_reply, parse_fetched,
};
use crate::job::{Job, KeepJobs};
use crate::processor::{Prepared, StepReply};
use redis::Value;
use ringback_shared::clock::now_ms;
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::call::Call;
use ringback_store::group_commit::{GroupCommit, IN_FLIGHT, IN_FLIGHT_STEP};
use ringback_store::scripts::{LuaScript, scripts};

impl Calls {
    /// Take the next ready job and lock it with `fetch.token` (BullMQ's moveToActive): promotes
    /// due delayed jobs first, and answers rate limited or empty when no job can be taken.
    pub async fn move_to_active(&self, fetch: &FetchArgs) -> Result<Fetched, Error> {
        let k = &self.keys;
        let reply: Value = self
            .fetch_keys(scripts().move_to_active.call())
            .key("marker", k.marker())
            .arg("key prefix", k.base())
            .arg("now (ms)", now_ms())
            .arg("lock token", &fetch.token)
            .arg("lock duration (ms)", &fetch.lock_ms)
            .arg("worker name", &fetch.name)
            .arg("limiter max", &fetch.limiter_max)
            .arg("limiter duration ms", &fetch.limiter_duration)
            .run(&mut self.conn.clone(), &self.trips)
            .await?;
        parse_fetched("move_to_active", reply)
    }

    /// Record how an attempt ended. `fetch` asks the script to take the next job in the same
    /// round trip (BullMQ's fetch-next); the answer then carries it. `tm`, written on the job
    /// with a failure (the trace context of the span that recorded it), as a Node worker with
    /// BullMQ's OpenTelemetry add-on writes it.
    #[expect(
        clippy::too_many_arguments,
        reason = "moveToFinished's inputs, one argument each, as BullMQ's own call takes them"
    )]
    pub async fn finish(
        &self,
        job: &Job,
        token: &str,
        finish: &Finish,
        keep: KeepJobs,
        metrics_max: Option<u32>,
        fetch: Option<&FetchArgs>,
        tm: Option<&str>,
    ) -> Result<Result<Fetched, ScriptCode>, Error> {
        match finish {
            Finish::Completed { .. } | Finish::Failed { .. } => {
                self.move_to_finished(job, token, finish, keep, metrics_max, fetch, tm)
                    .await
            }
            Finish::RetryNow {
                reason,
                stacktrace,
                lifo,
            } => {
                let k = &self.keys;
                let fields = failure_fields(reason, stacktrace, tm);
                let reply: Value = scripts()
                    .retry_job
                    .call()
                    .key("active", k.active())
                    .key("wait", k.wait())
                    .key("paused", k.paused())
                    .key("job key", k.job(&job.id))
                    .key("meta", k.meta())
                    .key("events", k.events())
                    .key("delayed", k.delayed())
                    .key("prioritized", k.prioritized())
                    .key("pc", k.pc())
                    .key("marker", k.marker())
                    .key("stalled", k.stalled())
                    .arg("key prefix", k.base())
                    .arg("now (ms)", now_ms())
                    .arg("push command", if *lifo { "RPUSH" } else { "LPUSH" })
                    .arg("jobId", &job.id)
                    .arg("lock token", token)
                    .rest("field/value pairs", fields)
                    .run(&mut self.conn.clone(), &self.trips)
                    .await?;
                Ok(code_or("retry_job", reply).map(|()| Fetched::Empty))
            }
            Finish::Delay {
                delay_ms,
                skip_attempt,
                failure,
            } => {
                let k = &self.keys;
                let fields = failure
                    .as_ref()
                    .map(|(reason, stack)| failure_fields(reason, stack, tm))
                    .unwrap_or_default();
                let f = fetch;
                let reply: Value = scripts()
                    .move_to_delayed
                    .call()
                    .key("marker", k.marker())
                    .key("active", k.active())
                    .key("prioritized", k.prioritized())
                    .key("delayed", k.delayed())
                    .key("job key", k.job(&job.id))
                    .key("events", k.events())
                    .key("meta", k.meta())
                    .key("stalled", k.stalled())
                    .key("wait", k.wait())
                    .key("limiter", k.limiter())
                    .key("pc", k.pc())
                    .key("paused", k.paused())
                    .arg("key prefix", k.base())
                    .arg("now (ms)", now_ms())
                    .arg("jobId", &job.id)
                    .arg("lock token", token)
                    .arg("delay (ms)", delay_ms)
                    .arg("skip attempt", if *skip_attempt { "1" } else { "0" })
                    .arg("fetch next", if f.is_some() { "1" } else { "0" })
                    .arg("lock duration (ms)", f.map_or("", |f| &f.lock_ms))
                    .arg("worker name", f.map_or("", |f| &f.name))
                    .arg("limiter max", f.map_or("", |f| &f.limiter_max))
                    .arg("limiter duration", f.map_or("", |f| &f.limiter_duration))
                    .rest("field/value pairs", fields)
                    .run(&mut self.conn.clone(), &self.trips)
                    .await?;
                match reply {
                    Value::Array(_) => parse_fetched("move_to_delayed", reply).map(Ok),
                    other => Ok(code_or("move_to_delayed", other).map(|()| Fetched::Empty)),
                }
            }
        }
    }

    /// The group commit of this queue's finishing calls, started by the first call that uses it.
    pub(super) fn group(&self) -> &GroupCommit {
        self.group
            .get_or_init(|| GroupCommit::start(self.conn.clone(), self.trips.clone(), IN_FLIGHT))
    }

    /// The group commit of this queue's finishing calls with a processor's step.
    pub(super) fn step_group(&self) -> &GroupCommit {
        self.step_group.get_or_init(|| {
            GroupCommit::start(self.conn.clone(), self.trips.clone(), IN_FLIGHT_STEP)
        })
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "moveToFinished's inputs, one argument each, as BullMQ's own call takes them"
    )]
    pub(super) async fn move_to_finished(
        &self,
        job: &Job,
        token: &str,
        finish: &Finish,
        keep: KeepJobs,
        metrics_max: Option<u32>,
        fetch: Option<&FetchArgs>,
        tm: Option<&str>,
    ) -> Result<Result<Fetched, ScriptCode>, Error> {
        let (script, keys, mut args) =
            self.finished_call(job, token, finish, keep, metrics_max, fetch, None);
        if let (Finish::Failed { .. }, Some(tm)) = (finish, tm) {
            args.extend(["tm".to_string(), tm.to_string()]);
        }
        // grouped with other jobs' finishes that queue up at the same time (GroupCommit)
        let reply: Value = self
            .group()
            .run(script, &scripts().move_to_finished_batch, keys, args)
            .await?;
        finished_reply(script.name, reply)
    }

    /// Complete `job` with a processor's step folded in (`crate::processor::FinishStep`):
    /// `script` runs move_to_finished's contract, then the step with `keys` and `args` appended.
    /// With a `batch` script, the call is grouped with other jobs' calls that queue up at the
    /// same time ([`GroupCommit`]). Returns the finish (as [`Calls::finish`]), the step's own
    /// answer and what it prepared for the fetched job.
    #[allow(clippy::too_many_arguments)]
    pub async fn complete_with_step(
        &self,
        job: &Job,
        token: &str,
        returnvalue: &str,
        keep: KeepJobs,
        metrics_max: Option<u32>,
        fetch: Option<&FetchArgs>,
        step: &Call<'static>,
        batch: Option<&'static LuaScript>,
    ) -> Result<StepFinished, Error> {
        let step = (step.script(), step.keys(), step.args());
        let finish = Finish::Completed {
            returnvalue: returnvalue.to_string(),
        };
        let (script, keys, args) =
            self.finished_call(job, token, &finish, keep, metrics_max, fetch, Some(step));
        let reply: Value = match batch {
            Some(batch) => self.step_group().run(script, batch, keys, args).await?,
            None => {
                script
                    .run(&mut self.conn.clone(), &self.trips, &keys, &args)
                    .await?
            }
        };
        let bad = |detail: String| Error::Reply {
            script: script.name,
            detail,
        };
        let Value::Array(items) = reply else {
            return Err(bad(format!(
                "expected {{finish, own, next}}, got {reply:?}"
            )));
        };
        let mut items = items.into_iter();
        let finished = finished_reply(script.name, items.next().unwrap_or(Value::Nil))?;
        Ok(StepFinished {
            finished,
            own: step_reply(items.next().unwrap_or(Value::Nil)),
            prepared: prepared(script.name, items.next().unwrap_or(Value::Nil)),
        })
    }

    /// The script, KEYS and ARGV of a completion or final failure (move_to_finished.lua's
    /// header), with a step's keys and arguments appended after them when given.
    /// (Benchmarks measure it through `test_support`.)
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn finished_call<'a>(
        &'a self,
        job: &Job,
        token: &'a str,
        finish: &'a Finish,
        keep: KeepJobs,
        metrics_max: Option<u32>,
        fetch: Option<&'a FetchArgs>,
        step: Option<(&'static LuaScript, &[String], &[String])>,
    ) -> (&'static LuaScript, Vec<String>, Vec<String>) {
        let k = &self.keys;
        let (target, field, value, stack) = match finish {
            Finish::Completed { returnvalue } => ("completed", "returnvalue", returnvalue, None),
            Finish::Failed { reason, stacktrace } => {
                ("failed", "failedReason", reason, Some(stacktrace))
            }
            _ => unreachable!("move_to_finished only takes Completed or Failed"),
        };
        let f = fetch;
        let call = self
            .fetch_keys(scripts().move_to_finished.call())
            .key("completed | failed", k.finished(target))
            .key("job key", k.job(&job.id))
            .key("metrics:<target>", k.metrics(target))
            .key("marker", k.marker())
            .arg("jobId", &job.id)
            .arg("now (ms)", now_ms())
            .arg("\"returnvalue\" | \"failedReason\"", field)
            .arg("the return value", value)
            .arg("\"completed\" | \"failed\"", target)
            .arg("fetch next", if f.is_some() { "1" } else { "0" })
            .arg("key prefix", k.base())
            .arg("lock token", token)
            .arg("keep count", keep.count)
            .arg(
                "keep age in seconds",
                keep.age.map(|a| a.to_string()).unwrap_or_default(),
            )
            .arg(
                "keep limit per call",
                keep.limit.map(|a| a.to_string()).unwrap_or_default(),
            )
            .arg("attempts", job.opts.attempts)
            .arg(
                "max metrics data points",
                metrics_max.map(|m| m.to_string()).unwrap_or_default(),
            )
            .arg("lock duration (ms)", f.map_or("", |f| &f.lock_ms))
            .arg("worker name", f.map_or("", |f| &f.name))
            .arg("limiter max", f.map_or("", |f| &f.limiter_max))
            .arg("limiter duration", f.map_or("", |f| &f.limiter_duration));
        if let Some((script, more_keys, more_args)) = step {
            // the step's script takes move_to_finished's contract first, then its own part
            let (keys, args) = call.into_parts();
            let (mut keys, mut args) = script
                .call()
                .keys_as("move_to_finished.lua", keys)
                .args_as("move_to_finished.lua", args)
                .into_parts();
            keys.extend_from_slice(more_keys);
            args.extend_from_slice(more_args);
            return (script, keys, args);
        }
        // a completion writes no fields; `tm` follows in the caller, grouped or not
        let fields = stack.map_or_else(Vec::new, |stack| failure_fields(value, stack, None));
        let (keys, args) = call.rest("field/value pairs", fields).into_parts();
        (&scripts().move_to_finished, keys, args)
    }
}

/// The fields a failing script writes on the job first: `failedReason`, `stacktrace` and, when
/// the failure was recorded inside a trace, `tm` (as BullMQ's OpenTelemetry add-on writes it).
fn failure_fields(reason: &str, stacktrace: &str, tm: Option<&str>) -> Vec<String> {
    let mut fields = vec![
        "failedReason".to_string(),
        reason.to_string(),
        "stacktrace".to_string(),
        stacktrace.to_string(),
    ];
    if let Some(tm) = tm {
        fields.extend(["tm".to_string(), tm.to_string()]);
    }
    fields
}

/// A step's own answer in the worker's terms.
fn step_reply(v: Value) -> StepReply {
    match v {
        Value::Nil | Value::Boolean(false) => StepReply::Nothing,
        Value::Int(n) => StepReply::Number(n),
        other => match redis::from_redis_value::<Vec<String>>(other) {
            Ok(words) => StepReply::Words(words),
            Err(_) => StepReply::Nothing,
        },
    }
}

/// What a step prepared for the fetched job: strings, or nothing (`nil`, `false`, an empty
/// list). An answer of another shape is logged and taken as nothing: the fetched job's
/// processor then does its first step itself.
fn prepared(script: &'static str, v: Value) -> Option<Prepared> {
    match v {
        Value::Nil | Value::Boolean(false) => None,
        other => match redis::from_redis_value::<Vec<String>>(other) {
            Ok(words) => Prepared::new(words),
            Err(e) => {
                tracing::warn!(script, error = %e, "unreadable preparation; the job runs without it");
                None
            }
        },
    }
}
