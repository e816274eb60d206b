//! A BullMQ job as the worker sees it: the job hash decoded, and the options that decide what
//! happens after an attempt (attempts, backoff, lifo, removeOnComplete/removeOnFail).
//!
//! Options are parsed leniently, as Node parses them: the stored `opts` is cjson output, where
//! large integers may be in exponent form and unknown fields abound.

use serde_json::Value;

/// One fetched job.
#[derive(Debug, Clone, Default)]
pub struct Job {
    /// The BullMQ job id: the last part of its hash key `<prefix>:<queue>:<id>`.
    pub id: String,
    /// The job name the producer gave it (`queue.add(name, …)`); empty if missing.
    pub name: String,
    /// The `data` field as stored (JSON text). Kept raw: a processor decides how to read it,
    /// and a job whose data is not JSON must still be failed cleanly.
    pub data: String,
    /// The parsed `opts` field: the options that decide retries and what is kept afterwards.
    pub opts: JobOptions,
    /// `atm`: attempts finished (failed attempts, plus the completing one).
    pub attempts_made: u32,
    /// `ats`: activations, including this one.
    pub attempts_started: u32,
    /// `stc`: stall recoveries.
    pub stalled_counter: u32,
    /// `timestamp`: when the producer added the job (ms since the epoch; 0 if missing).
    pub timestamp: i64,
    /// `processedOn`: when the current attempt started (ms since the epoch; 0 if never set).
    pub processed_on: i64,
    /// `defa`: a deferred failure set by stall recovery or a failed child; the job must fail
    /// with this reason without running.
    pub deferred_failure: Option<String>,
    /// Previous stack traces (JSON array of strings); each failure appends one.
    pub stacktrace: Vec<String>,
    /// Job-scheduler id (`rjk`), when a scheduler produced this job.
    pub scheduler_id: Option<String>,
    /// The stored `opts` text (a scheduler's next iteration is derived from it).
    pub raw_opts: String,
}

impl Job {
    /// Decode the flat `HGETALL` reply of a job hash.
    pub fn from_fields(id: String, fields: Vec<(String, String)>) -> Self {
        let mut job = Job {
            id,
            name: String::new(),
            data: "{}".into(),
            opts: JobOptions::default(),
            attempts_made: 0,
            attempts_started: 0,
            stalled_counter: 0,
            timestamp: 0,
            processed_on: 0,
            deferred_failure: None,
            stacktrace: Vec::new(),
            scheduler_id: None,
            raw_opts: "{}".into(),
        };
        let int = |v: &str| v.parse::<f64>().map(|f| f as i64).unwrap_or(0);
        // counters stored by anyone: negative reads as 0, too large as the largest count
        let count = |v: &str| u32::try_from(int(v).max(0)).unwrap_or(u32::MAX);
        for (k, v) in fields {
            match k.as_str() {
                "name" => job.name = v,
                "data" => job.data = v,
                "opts" => {
                    job.opts = JobOptions::parse(&v);
                    job.raw_opts = v;
                }
                "atm" => job.attempts_made = count(&v),
                // legacy name read by Node too, when `atm` is absent
                "attemptsMade" if job.attempts_made == 0 => job.attempts_made = count(&v),
                "ats" => job.attempts_started = count(&v),
                "stc" => job.stalled_counter = count(&v),
                "timestamp" => job.timestamp = int(&v),
                "processedOn" => job.processed_on = int(&v),
                "defa" => job.deferred_failure = Some(v),
                "stacktrace" => job.stacktrace = serde_json::from_str(&v).unwrap_or_default(),
                "rjk" => job.scheduler_id = Some(v),
                _ => {}
            }
        }
        job
    }

    /// The attempt number this run counts as (1-based), as Node's `attemptsMade + 1`.
    pub fn attempt(&self) -> u32 {
        // `atm` comes from Redis, written by anyone: never overflow on it
        self.attempts_made.saturating_add(1)
    }
}

/// The job options a worker must honour.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JobOptions {
    /// Total tries; 0 and 1 both mean one try.
    pub attempts: u32,
    /// How long to wait before retrying a failed attempt; `None` retries at once.
    pub backoff: Option<Backoff>,
    /// `lifo`: a retried job goes back to the front of wait instead of the back.
    pub lifo: bool,
    /// `removeOnComplete`: what to keep of completed jobs; `None` defers to the worker's default.
    pub remove_on_complete: Option<KeepJobs>,
    /// `removeOnFail`: what to keep of failed jobs; `None` defers to the worker's default.
    pub remove_on_fail: Option<KeepJobs>,
    /// Keep at most this many stack traces (`None` = all, `Some(0)` = none).
    pub stack_trace_limit: Option<usize>,
    /// Keep at most this many log rows (`keepLogs`, stored as `kl`; `None` = all).
    pub keep_logs: Option<u64>,
    /// Set when `opts` was present but not a JSON object.
    pub invalid: Option<String>,
    /// The trace context a producer with BullMQ's OpenTelemetry add-on stored (`tm`, a JSON
    /// carrier), and whether the job asks workers to omit it (`omc`).
    pub telemetry: Option<String>,
    /// `omc`: workers neither continue the trace in `telemetry` nor write a trace context back.
    pub omit_context: bool,
}

impl JobOptions {
    /// Decode the stored `opts` JSON leniently; text that is not a JSON object gives defaults
    /// with `invalid` set, so the job can be failed rather than run.
    pub fn parse(raw: &str) -> Self {
        let v: Value = match serde_json::from_str(raw) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) | Err(_) => {
                return JobOptions {
                    invalid: Some(format!("job opts is not a JSON object: {raw:.80}")),
                    ..Default::default()
                };
            }
        };
        JobOptions {
            attempts: v
                .get("attempts")
                .and_then(number)
                .map_or(0, |n| n.max(0.0) as u32),
            backoff: v.get("backoff").and_then(Backoff::parse),
            lifo: v.get("lifo").and_then(Value::as_bool).unwrap_or(false),
            remove_on_complete: v.get("removeOnComplete").and_then(KeepJobs::parse),
            remove_on_fail: v.get("removeOnFail").and_then(KeepJobs::parse),
            stack_trace_limit: v
                .get("stackTraceLimit")
                .and_then(number)
                .map(|n| n.max(0.0) as usize),
            // stored as `kl` (Node's short name), `keepLogs` when written by hand
            keep_logs: v
                .get("kl")
                .or_else(|| v.get("keepLogs"))
                .and_then(number)
                .map(|n| n.max(0.0) as u64),
            invalid: None,
            telemetry: v.get("tm").and_then(Value::as_str).map(str::to_string),
            omit_context: v.get("omc").and_then(Value::as_bool).unwrap_or(false),
        }
    }
}

/// Numbers as cjson writes them (`3`, `3.0`, `1.2345678901234e+14`), or numeric strings.
fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A retry backoff, as `classes/backoffs.js` computes it.
#[derive(Debug, Clone, PartialEq)]
pub enum Backoff {
    /// BullMQ's `fixed` backoff (or a bare number): the same delay before every retry.
    Fixed {
        /// Delay in ms before every retry.
        delay: f64,
        /// Fraction of the delay (0–1) that is randomised: the wait is drawn from
        /// `[delay × (1 − jitter), delay]`; 0 means no jitter.
        jitter: f64,
    },
    /// BullMQ's `exponential` backoff: the delay doubles with each failed attempt.
    Exponential {
        /// Base delay in ms; the retry after failed attempt n waits `delay × 2^(n−1)`.
        delay: f64,
        /// Fraction of the delay (0–1) that is randomised: the wait is drawn from
        /// `[delay × (1 − jitter), delay]`; 0 means no jitter.
        jitter: f64,
    },
    /// A custom strategy name: it lives in the producer's code, not ours.
    Custom(String),
}

impl Backoff {
    fn parse(v: &Value) -> Option<Self> {
        if let Some(delay) = number(v) {
            return Some(Backoff::Fixed { delay, jitter: 0.0 });
        }
        let obj = v.as_object()?;
        let delay = obj.get("delay").and_then(number).unwrap_or(0.0);
        let jitter = obj.get("jitter").and_then(number).unwrap_or(0.0);
        match obj.get("type").and_then(Value::as_str) {
            Some("fixed") => Some(Backoff::Fixed { delay, jitter }),
            Some("exponential") => Some(Backoff::Exponential { delay, jitter }),
            Some(other) => Some(Backoff::Custom(other.to_string())),
            None => None,
        }
    }

    /// Delay in ms before attempt `attempts_made + 1` is retried; `rand` in [0, 1).
    /// `Err` names a strategy we cannot compute.
    pub fn delay_ms(&self, attempts_made: u32, rand: f64) -> Result<u64, String> {
        let (max, jitter) = match self {
            Backoff::Fixed { delay, jitter } => (*delay, *jitter),
            Backoff::Exponential { delay, jitter } => {
                let exp = attempts_made.saturating_sub(1).min(62) as i32;
                ((2f64.powi(exp) * delay).round(), *jitter)
            }
            Backoff::Custom(name) => {
                return Err(format!(
                    "unknown backoff strategy {name:?}: custom strategies live in the producer's \
                     Node code and ringback cannot run them"
                ));
            }
        };
        let ms = if jitter > 0.0 {
            (rand * max * jitter + max * (1.0 - jitter)).floor()
        } else {
            max
        };
        Ok(if ms.is_finite() && ms > 0.0 {
            ms as u64
        } else {
            0
        })
    }
}

/// What to keep of finished jobs: BullMQ's `keepJobs` after `getKeepJobs` resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeepJobs {
    /// -1 keep all, 0 remove at once, n keep the newest n.
    pub count: i64,
    /// Remove jobs older than this many seconds.
    pub age: Option<u64>,
    /// At most this many removals by age per call (BullMQ's default 1000).
    pub limit: Option<u64>,
}

impl KeepJobs {
    /// Keep every finished job: no count or age bound (BullMQ's `false`, and the default).
    pub const KEEP_ALL: KeepJobs = KeepJobs {
        count: -1,
        age: None,
        limit: None,
    };

    /// `true` → remove, `false` → keep all, `n` → keep n, `{age, count, limit}` as given.
    pub fn parse(v: &Value) -> Option<Self> {
        match v {
            Value::Bool(true) => Some(KeepJobs {
                count: 0,
                age: None,
                limit: None,
            }),
            Value::Bool(false) => Some(Self::KEEP_ALL),
            Value::Object(o) => Some(KeepJobs {
                // an object without count keeps every job (count -1), bounded by age only
                count: o.get("count").and_then(number).map_or(-1, |n| n as i64),
                age: o.get("age").and_then(number).map(|n| n.max(0.0) as u64),
                limit: o.get("limit").and_then(number).map(|n| n.max(0.0) as u64),
            }),
            other => number(other).map(|n| KeepJobs {
                count: n as i64,
                age: None,
                limit: None,
            }),
        }
    }

    /// The job's own option wins over the worker's default; neither keeps all.
    pub fn resolve(job: Option<KeepJobs>, worker: Option<KeepJobs>) -> KeepJobs {
        job.or(worker).unwrap_or(Self::KEEP_ALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stored_options_leniently() {
        let o = JobOptions::parse(
            r#"{"attempts":3,"backoff":{"type":"exponential","delay":1000},"lifo":true,
               "removeOnComplete":true,"removeOnFail":{"age":60,"count":10},"delay":1.2345678901234e+14}"#,
        );
        assert_eq!(o.attempts, 3);
        assert_eq!(
            o.backoff,
            Some(Backoff::Exponential {
                delay: 1000.0,
                jitter: 0.0
            })
        );
        assert!(o.lifo);
        assert_eq!(
            o.remove_on_complete,
            Some(KeepJobs {
                count: 0,
                age: None,
                limit: None
            })
        );
        assert_eq!(
            o.remove_on_fail,
            Some(KeepJobs {
                count: 10,
                age: Some(60),
                limit: None
            })
        );
        assert!(JobOptions::parse("[1]").invalid.is_some());
    }

    #[test]
    fn backoff_matches_node_formulas() {
        let fixed = Backoff::parse(&serde_json::json!(500)).unwrap();
        assert_eq!(fixed.delay_ms(4, 0.3), Ok(500));
        let exp = Backoff::Exponential {
            delay: 100.0,
            jitter: 0.0,
        };
        assert_eq!(exp.delay_ms(1, 0.0), Ok(100));
        assert_eq!(exp.delay_ms(3, 0.0), Ok(400));
        // jitter 0.5 on 400: floor(rand*400*0.5 + 200)
        let j = Backoff::Exponential {
            delay: 100.0,
            jitter: 0.5,
        };
        assert_eq!(j.delay_ms(3, 0.0), Ok(200));
        assert_eq!(j.delay_ms(3, 0.999), Ok(399));
        assert!(Backoff::Custom("mine".into()).delay_ms(1, 0.0).is_err());
    }

    #[test]
    fn keep_jobs_resolution() {
        let job = KeepJobs::parse(&serde_json::json!(5));
        let worker = KeepJobs::parse(&serde_json::json!(true));
        assert_eq!(KeepJobs::resolve(job, worker).count, 5);
        assert_eq!(KeepJobs::resolve(None, worker).count, 0);
        assert_eq!(KeepJobs::resolve(None, None), KeepJobs::KEEP_ALL);
    }

    #[test]
    fn decodes_job_hash() {
        let f = |k: &str, v: &str| (k.to_string(), v.to_string());
        let job = Job::from_fields(
            "7".into(),
            vec![
                f("name", "agent-callback"),
                f("data", "{\"a\":1}"),
                f("opts", "{\"attempts\":2}"),
                f("atm", "1"),
                f("ats", "2"),
                f("defa", "job stalled more than allowable limit"),
                f("stacktrace", "[\"Error: x\"]"),
            ],
        );
        assert_eq!(job.attempt(), 2);
        assert_eq!(job.attempts_started, 2);
        assert_eq!(job.opts.attempts, 2);
        assert_eq!(job.stacktrace, vec!["Error: x".to_string()]);
        assert!(job.deferred_failure.is_some());
    }
}
