//! What tests and benchmarks reach below the queue's public face, behind the `test-support`
//! feature (the root package's dev-dependencies turn it on): packing and reading a finishing
//! call, which the worker does inside `Calls` and benchmarks measure alone.

use redis::Value;

use crate::calls::{Calls, FetchArgs, Fetched, Finish};
use crate::job::{Job, KeepJobs};
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::scripts::LuaScript;

/// The script, KEYS and ARGV of a completion or final failure of `job`, as the worker sends it
/// (move_to_finished.lua's header), with a step's script, keys and arguments after them when
/// given.
#[allow(clippy::too_many_arguments)]
pub fn finished_call<'a>(
    calls: &'a Calls,
    job: &Job,
    token: &'a str,
    finish: &'a Finish,
    keep: KeepJobs,
    metrics_max: Option<u32>,
    fetch: Option<&'a FetchArgs>,
    step: Option<(&'static LuaScript, &[String], &[String])>,
) -> (&'static LuaScript, Vec<String>, Vec<String>) {
    calls.finished_call(job, token, finish, keep, metrics_max, fetch, step)
}

/// move_to_finished's answer read as the worker reads it: 0, a negative code, or the next
/// job's 4-tuple.
pub fn finished_reply(
    script: &'static str,
    reply: Value,
) -> Result<Result<Fetched, ScriptCode>, Error> {
    crate::calls::finished_reply(script, reply)
}
