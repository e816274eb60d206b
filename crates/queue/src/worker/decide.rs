//! An outcome turned into the finishing call, as Node's `handleCompleted` / `moveToFailed` do.

use crate::calls::Finish;
use crate::job::Job;
use crate::processor::{Failure, Outcome};
use ringback_shared::clock::now_ms;

/// Turn an outcome into the finishing call, as Node's `handleCompleted` / `moveToFailed` do.
pub fn decide(job: &Job, outcome: Outcome, rand: f64) -> Finish {
    match outcome {
        Outcome::Completed(value) => Finish::Completed {
            returnvalue: ringback_store::json::stringify(&value),
        },
        Outcome::DelayUntil(at) => Finish::Delay {
            delay_ms: (at - now_ms()).max(0) as u64,
            skip_attempt: true,
            failure: None,
        },
        Outcome::Failed(failure) => decide_failure(job, &failure, rand),
    }
}

fn decide_failure(job: &Job, failure: &Failure, rand: f64) -> Finish {
    let mut traces = job.stacktrace.clone();
    traces.push(failure.stack_entry());
    match job.opts.stack_trace_limit {
        Some(limit) if traces.len() > limit => {
            traces.drain(..traces.len() - limit);
        }
        _ => {}
    }
    let stacktrace = serde_json::Value::from(traces).to_string();
    let mut reason = failure.message.clone();
    if !failure.unrecoverable && job.attempt() < job.opts.attempts {
        match job
            .opts
            .backoff
            .as_ref()
            .map(|b| b.delay_ms(job.attempt(), rand))
        {
            None | Some(Ok(0)) => {
                return Finish::RetryNow {
                    reason,
                    stacktrace,
                    lifo: job.opts.lifo,
                };
            }
            Some(Ok(delay_ms)) => {
                return Finish::Delay {
                    delay_ms,
                    skip_attempt: false,
                    failure: Some((reason, stacktrace)),
                };
            }
            Some(Err(problem)) => reason = format!("{reason} (not retried: {problem})"),
        }
    }
    Finish::Failed { reason, stacktrace }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{Backoff, JobOptions};
    use crate::worker::attempt::precheck;

    fn job(attempts: u32, made: u32, backoff: Option<Backoff>) -> Job {
        let mut j = Job::from_fields("1".into(), vec![]);
        j.opts = JobOptions {
            attempts,
            backoff,
            ..Default::default()
        };
        j.attempts_made = made;
        j
    }

    #[test]
    fn retries_while_attempts_remain() {
        let f = decide(&job(3, 0, None), Outcome::fail("boom"), 0.0);
        assert!(matches!(f, Finish::RetryNow { ref reason, .. } if reason == "boom"));
        let b = Some(Backoff::Fixed {
            delay: 100.0,
            jitter: 0.0,
        });
        let f = decide(&job(3, 1, b.clone()), Outcome::fail("boom"), 0.0);
        assert!(matches!(
            f,
            Finish::Delay {
                delay_ms: 100,
                skip_attempt: false,
                ..
            }
        ));
        let f = decide(&job(3, 2, b), Outcome::fail("boom"), 0.0);
        assert!(matches!(f, Finish::Failed { .. }));
    }

    #[test]
    fn unrecoverable_skips_retries_and_stack_accumulates() {
        let mut j = job(5, 0, None);
        j.stacktrace = vec!["Error: earlier".into()];
        match decide(&j, Outcome::unrecoverable("nope"), 0.0) {
            Finish::Failed { reason, stacktrace } => {
                assert_eq!(reason, "nope");
                assert_eq!(
                    stacktrace,
                    r#"["Error: earlier","UnrecoverableError: nope"]"#
                );
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bad_data_and_deferred_failure_fail_without_running() {
        let mut j = job(1, 0, None);
        j.data = "{not json".into();
        assert!(matches!(
            precheck(&j),
            Some(Outcome::Failed(Failure {
                unrecoverable: true,
                ..
            }))
        ));
        j.data = "{}".into();
        assert_eq!(precheck(&j), None);
        j.deferred_failure = Some("job stalled more than allowable limit".into());
        assert_eq!(
            precheck(&j),
            Some(Outcome::unrecoverable(
                "job stalled more than allowable limit"
            ))
        );
    }
}
