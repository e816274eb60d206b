//! A processor driven by job data, so interop tests and drills can make a job behave as they
//! need. The same processor exists in Node (`node-harness/lib/scripted-processor.js`).
//!
//! Data `{"script": ["fail:boom", "complete"]}`: the action for an activation is entry
//! `min(attemptsStarted, len) - 1` (so the last entry repeats; activation counts stalls and
//! delays too). Actions: `complete` (returns `{"ok":true,"attempt":N}`), `complete:<json>`,
//! `fail:<msg>`, `unrecoverable:<msg>`, `sleep:<ms>` (then complete), `delay:<ms>` (run again
//! later without using an attempt), `progress:<json>` (report progress, then complete),
//! `logs:<n>` (write log rows `row 1`..`row n`, then complete), `ratelimit:<ms>` (rate-limit the
//! queue; the job goes back to wait without using an attempt), `children:<n>` (add n children
//! that complete, then wait for them in waiting-children), `crash` (abort the process at
//! once, as kill -9 would).
//! No `script`: complete with `null`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::job::Job;
use crate::processor::{JobContext, Outcome, Processor};
use ringback_shared::clock::now_ms;

/// A processor whose job data scripts what each activation does (see the module docs),
/// for interop tests and drills; it matches Node's `scripted-processor.js`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ScriptedProcessor;

/// One parsed script action.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// `complete` or `complete:<json>`: complete with the given value, or
    /// `{"ok":true,"attempt":N}` when none is given (`None`).
    Complete(Option<Value>),
    /// `fail:<msg>`: fail the attempt with this message (retried while attempts remain).
    Fail(String),
    /// `unrecoverable:<msg>`: fail with this message, skipping any retries left.
    Unrecoverable(String),
    /// `sleep:<ms>`: wait this many ms, then complete.
    Sleep(u64),
    /// `delay:<ms>`: run again this many ms later without using an attempt.
    Delay(u64),
    /// `progress:<json>`: report this progress, then complete.
    Progress(Value),
    /// `logs:<n>`: write log rows `row 1`..`row n`, then complete.
    Logs(u64),
    /// `ratelimit:<ms>`: rate-limit the queue for this many ms; the job goes back to wait.
    RateLimit(u64),
    /// `children:<n>`: add n children that complete, then wait for them in waiting-children.
    Children(u64),
    /// `crash`: abort the process at once, as kill -9 would, leaving the job to stall recovery.
    Crash,
}

impl Action {
    /// Parse one entry (`verb` or `verb:<arg>`); the error says why the entry is unusable.
    pub fn parse(s: &str) -> Result<Self, String> {
        let (verb, arg) = match s.split_once(':') {
            Some((v, a)) => (v, Some(a)),
            None => (s, None),
        };
        let ms = |a: Option<&str>| {
            a.and_then(|a| a.parse::<u64>().ok())
                .ok_or_else(|| format!("{verb} needs a number of ms: {s:?}"))
        };
        match verb {
            "complete" => match arg {
                None => Ok(Action::Complete(None)),
                Some(a) => serde_json::from_str(a)
                    .map(|v| Action::Complete(Some(v)))
                    .map_err(|e| format!("complete:<json> is not JSON: {e}")),
            },
            "fail" => Ok(Action::Fail(arg.unwrap_or("").to_string())),
            "unrecoverable" => Ok(Action::Unrecoverable(arg.unwrap_or("").to_string())),
            "sleep" => ms(arg).map(Action::Sleep),
            "delay" => ms(arg).map(Action::Delay),
            "ratelimit" => ms(arg).map(Action::RateLimit),
            "children" => arg
                .and_then(|a| a.parse::<u64>().ok())
                .map(Action::Children)
                .ok_or_else(|| format!("children needs a number of children: {s:?}")),
            "progress" => serde_json::from_str(arg.unwrap_or(""))
                .map(Action::Progress)
                .map_err(|e| format!("progress:<json> is not JSON: {e}")),
            "logs" => arg
                .and_then(|a| a.parse::<u64>().ok())
                .map(Action::Logs)
                .ok_or_else(|| format!("logs needs a number of rows: {s:?}")),
            "crash" => Ok(Action::Crash),
            _ => Err(format!("unknown script action {s:?}")),
        }
    }
}

/// The action this activation of `job` takes, or why the script is unusable.
pub fn action_for(job: &Job) -> Result<Option<Action>, String> {
    let data: Value =
        serde_json::from_str(&job.data).map_err(|e| format!("data is not JSON: {e}"))?;
    let Some(script) = data.get("script") else {
        return Ok(None);
    };
    let steps = script
        .as_array()
        .ok_or("script must be an array of strings")?;
    if steps.is_empty() {
        return Ok(None);
    }
    let activation = if job.attempts_started > 0 {
        job.attempts_started
    } else {
        job.attempt()
    };
    let index = (activation as usize).min(steps.len()) - 1;
    let step = steps[index]
        .as_str()
        .ok_or("script entries must be strings")?;
    Action::parse(step).map(Some)
}

impl Processor for ScriptedProcessor {
    async fn process(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let completed = || Outcome::Completed(json!({"ok": true, "attempt": job.attempt()}));
        match action_for(job) {
            Err(problem) => Outcome::fail(problem),
            Ok(None) => Outcome::Completed(Value::Null),
            Ok(Some(action)) => match action {
                Action::Complete(None) => completed(),
                Action::Complete(Some(v)) => Outcome::Completed(v),
                Action::Fail(m) => Outcome::fail(m),
                Action::Unrecoverable(m) => Outcome::unrecoverable(m),
                Action::Sleep(ms) => {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    completed()
                }
                Action::Delay(ms) => Outcome::DelayUntil(now_ms() + ms as i64),
                Action::Progress(p) => match ctx.update_progress(&p).await {
                    Ok(()) => completed(),
                    Err(e) => Outcome::fail(format!("updateProgress failed: {e}")),
                },
                Action::RateLimit(ms) => ctx.rate_limit(ms).await,
                Action::Children(n) => {
                    for i in 1..=n {
                        let data = format!(r#"{{"script":["complete"],"n":{i}}}"#);
                        if let Err(e) = ctx.add_child("child", &data, r#"{"attempts":0}"#).await {
                            return Outcome::fail(format!("adding a child failed: {e}"));
                        }
                    }
                    match ctx.wait_for_children().await {
                        Ok(Some(outcome)) => outcome,
                        Ok(None) => completed(),
                        Err(e) => Outcome::fail(format!("moveToWaitingChildren failed: {e}")),
                    }
                }
                Action::Logs(n) => {
                    for i in 1..=n {
                        if let Err(e) = ctx.log(&format!("row {i}")).await {
                            return Outcome::fail(format!("log failed: {e}"));
                        }
                    }
                    completed()
                }
                Action::Crash => {
                    tracing::error!(job_id = %job.id, "scripted crash: aborting the process");
                    std::process::abort()
                }
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(data: &str, ats: u32) -> Job {
        let mut j = Job::from_fields("1".into(), vec![("data".into(), data.into())]);
        j.attempts_started = ats;
        j
    }

    #[test]
    fn picks_entry_by_activation_and_repeats_the_last() {
        let d = r#"{"script":["fail:boom","complete"]}"#;
        assert_eq!(
            action_for(&job(d, 1)),
            Ok(Some(Action::Fail("boom".into())))
        );
        assert_eq!(action_for(&job(d, 2)), Ok(Some(Action::Complete(None))));
        assert_eq!(action_for(&job(d, 9)), Ok(Some(Action::Complete(None))));
        assert_eq!(action_for(&job("{}", 1)), Ok(None));
    }

    #[test]
    fn parses_every_action() {
        assert_eq!(
            Action::parse(r#"complete:{"x":1}"#),
            Ok(Action::Complete(Some(json!({"x":1}))))
        );
        assert_eq!(Action::parse("fail:a:b"), Ok(Action::Fail("a:b".into())));
        assert_eq!(Action::parse("sleep:10"), Ok(Action::Sleep(10)));
        assert_eq!(Action::parse("delay:5"), Ok(Action::Delay(5)));
        assert_eq!(Action::parse("crash"), Ok(Action::Crash));
        assert_eq!(
            Action::parse(r#"progress:{"pct":5}"#),
            Ok(Action::Progress(json!({"pct":5})))
        );
        assert_eq!(Action::parse("logs:3"), Ok(Action::Logs(3)));
        assert_eq!(Action::parse("ratelimit:50"), Ok(Action::RateLimit(50)));
        assert_eq!(Action::parse("children:2"), Ok(Action::Children(2)));
        assert!(Action::parse("logs:x").is_err());
        assert!(Action::parse("sleep:x").is_err());
        assert!(Action::parse("dance").is_err());
    }
}
