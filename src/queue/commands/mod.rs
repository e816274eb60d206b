//! One typed function per Lua script: keys in header order, arguments packed in one place,
//! replies parsed into typed values and negative codes mapped to [`ScriptCode`].

use std::sync::{Arc, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::store::connection::Conn;
use crate::store::group_commit::{GroupCommit, IN_FLIGHT, IN_FLIGHT_STEP};
use redis::Value;

use crate::error::{Error, ScriptCode};
use crate::queue::job::{Job, KeepJobs};
use crate::store::keys::QueueKeys;
use crate::store::scripts::{LuaScript, RoundTrips, scripts};

/// Milliseconds since the Unix epoch, as BullMQ timestamps are: this process's clock. No window
/// decision uses it (the window scripts read Redis's `TIME`). `RINGBACK_CLOCK_SKEW_MS`, a test
/// and drill hook, shifts it, to prove exactly that.
pub fn now_ms() -> i64 {
    static SKEW: std::sync::LazyLock<i64> = std::sync::LazyLock::new(|| {
        std::env::var("RINGBACK_CLOCK_SKEW_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    });
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
        + *SKEW
}

/// What the worker passes to every script that may take a job (move_to_active, and the
/// fetch-next of the finishing scripts).
#[derive(Debug, Clone)]
pub struct FetchArgs {
    pub token: String,
    pub lock_ms: String,
    pub name: String,
    pub limiter_max: String,
    pub limiter_duration: String,
}

impl FetchArgs {
    /// The fetch arguments of a worker configured by `cfg`, taking jobs with lock `token`.
    pub fn new(cfg: &crate::queue::config::WorkerConfig, token: &str) -> Self {
        FetchArgs {
            token: token.to_string(),
            lock_ms: cfg.lock_duration.as_millis().to_string(),
            name: cfg.name.clone().unwrap_or_default(),
            limiter_max: cfg.limiter.map(|(m, _)| m.to_string()).unwrap_or_default(),
            limiter_duration: cfg
                .limiter
                .map(|(_, d)| d.as_millis().to_string())
                .unwrap_or_default(),
        }
    }
}

/// The answer of a fetch.
#[derive(Debug)]
pub enum Fetched {
    /// A job is ours now, locked with the token that fetched it.
    Job(Box<Job>),
    /// Rate limited: try again in this many ms.
    RateLimited(u64),
    /// Nothing ready; the next delayed job is due at this time (ms).
    NextDelayed(i64),
    /// Nothing ready (or the queue is paused or at its global concurrency).
    Empty,
}

/// How an attempt ends, as the finishing scripts record it.
#[derive(Debug, Clone)]
pub enum Finish {
    Completed {
        returnvalue: String,
    },
    /// Final failure (no retries left, unrecoverable, or deferred failure).
    Failed {
        reason: String,
        stacktrace: String,
    },
    /// Failed attempt, retried at once.
    RetryNow {
        reason: String,
        stacktrace: String,
        lifo: bool,
    },
    /// Failed attempt retried after `delay_ms` (uses an attempt), or a processor-requested delay
    /// (`skip_attempt`, no failure fields).
    Delay {
        delay_ms: u64,
        skip_attempt: bool,
        failure: Option<(String, String)>,
    },
}

/// The answer of a completion with a processor's step folded in.
#[derive(Debug)]
pub struct StepFinished {
    /// As [`Commands::finish`] answers.
    pub finished: Result<Fetched, ScriptCode>,
    /// The step's own answer.
    pub own: Value,
    /// What the step prepared for the fetched job (`Nil`: nothing).
    pub prepared: Value,
}

/// Redis commands of one queue, over the shared multiplexed connection.
#[derive(Clone)]
pub struct Commands {
    conn: Conn,
    keys: Arc<QueueKeys>,
    trips: Arc<RoundTrips>,
    /// Groups finishing calls that queue up together (started by the first that can group):
    /// plain finishes, and finishes with a processor's step (each with its own calls in flight).
    group: Arc<OnceLock<GroupCommit>>,
    step_group: Arc<OnceLock<GroupCommit>>,
}

impl Commands {
    pub fn new(conn: Conn, keys: QueueKeys, trips: Arc<RoundTrips>) -> Self {
        Self {
            conn,
            keys: Arc::new(keys),
            trips,
            group: Arc::default(),
            step_group: Arc::default(),
        }
    }

    pub fn keys(&self) -> &QueueKeys {
        &self.keys
    }

    pub fn round_trips(&self) -> &Arc<RoundTrips> {
        &self.trips
    }

    pub fn connection(&self) -> Conn {
        self.conn.clone()
    }

    /// KEYS 1–10 of every script that may take a job, in BullMQ's moveToActive order (wait,
    /// active, prioritized, events, stalled, limiter, delayed, paused, meta, pc), then `more`.
    fn fetch_keys(&self, more: &[String]) -> Vec<String> {
        let k = &self.keys;
        let mut keys = vec![
            k.wait(),
            k.active(),
            k.prioritized(),
            k.events(),
            k.stalled(),
            k.limiter(),
            k.delayed(),
            k.paused(),
            k.meta(),
            k.pc(),
        ];
        keys.extend_from_slice(more);
        keys
    }

    pub async fn move_to_active(&self, fetch: &FetchArgs) -> Result<Fetched, Error> {
        let k = &self.keys;
        let keys = self.fetch_keys(&[k.marker()]);
        let now = now_ms().to_string();
        let args = [
            k.base(),
            &now,
            &fetch.token,
            &fetch.lock_ms,
            &fetch.name,
            &fetch.limiter_max,
            &fetch.limiter_duration,
        ];
        let reply: Value = scripts()
            .move_to_active
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        parse_fetched("move_to_active", reply)
    }

    /// Record how an attempt ended. `fetch` asks the script to take the next job in the same
    /// round trip (BullMQ's fetch-next); the answer then carries it.
    pub async fn finish(
        &self,
        job: &Job,
        token: &str,
        finish: &Finish,
        keep: KeepJobs,
        metrics_max: Option<u32>,
        fetch: Option<&FetchArgs>,
    ) -> Result<Result<Fetched, ScriptCode>, Error> {
        match finish {
            Finish::Completed { .. } | Finish::Failed { .. } => {
                self.move_to_finished(job, token, finish, keep, metrics_max, fetch)
                    .await
            }
            Finish::RetryNow {
                reason,
                stacktrace,
                lifo,
            } => {
                let k = &self.keys;
                let keys = [
                    k.active(),
                    k.wait(),
                    k.paused(),
                    k.job(&job.id),
                    k.meta(),
                    k.events(),
                    k.delayed(),
                    k.prioritized(),
                    k.pc(),
                    k.marker(),
                    k.stalled(),
                ];
                let now = now_ms().to_string();
                let push = if *lifo { "RPUSH" } else { "LPUSH" };
                let args = [
                    k.base(),
                    &now,
                    push,
                    &job.id,
                    token,
                    "failedReason",
                    reason,
                    "stacktrace",
                    stacktrace,
                ];
                let reply: Value = scripts()
                    .retry_job
                    .run(&mut self.conn.clone(), &self.trips, &keys, &args)
                    .await?;
                Ok(code_or("retry_job", reply).map(|()| Fetched::Empty))
            }
            Finish::Delay {
                delay_ms,
                skip_attempt,
                failure,
            } => {
                let k = &self.keys;
                let keys = [
                    k.marker(),
                    k.active(),
                    k.prioritized(),
                    k.delayed(),
                    k.job(&job.id),
                    k.events(),
                    k.meta(),
                    k.stalled(),
                    k.wait(),
                    k.limiter(),
                    k.pc(),
                    k.paused(),
                ];
                let now = now_ms().to_string();
                let delay = delay_ms.to_string();
                let none = String::new();
                let f = fetch;
                let mut args: Vec<&str> = vec![
                    k.base(),
                    &now,
                    &job.id,
                    token,
                    &delay,
                    if *skip_attempt { "1" } else { "0" },
                    if fetch.is_some() { "1" } else { "0" },
                    f.map_or(&none, |f| &f.lock_ms),
                    f.map_or(&none, |f| &f.name),
                    f.map_or(&none, |f| &f.limiter_max),
                    f.map_or(&none, |f| &f.limiter_duration),
                ];
                if let Some((reason, stack)) = failure {
                    args.extend([
                        "failedReason",
                        reason.as_str(),
                        "stacktrace",
                        stack.as_str(),
                    ]);
                }
                let reply: Value = scripts()
                    .move_to_delayed
                    .run(&mut self.conn.clone(), &self.trips, &keys, &args)
                    .await?;
                match reply {
                    Value::Array(_) => parse_fetched("move_to_delayed", reply).map(Ok),
                    other => Ok(code_or("move_to_delayed", other).map(|()| Fetched::Empty)),
                }
            }
        }
    }

    /// The group commit of this queue's finishing calls, started by the first call that uses it.
    fn group(&self) -> &GroupCommit {
        self.group
            .get_or_init(|| GroupCommit::start(self.conn.clone(), self.trips.clone(), IN_FLIGHT))
    }

    /// The group commit of this queue's finishing calls with a processor's step.
    fn step_group(&self) -> &GroupCommit {
        self.step_group.get_or_init(|| {
            GroupCommit::start(self.conn.clone(), self.trips.clone(), IN_FLIGHT_STEP)
        })
    }

    async fn move_to_finished(
        &self,
        job: &Job,
        token: &str,
        finish: &Finish,
        keep: KeepJobs,
        metrics_max: Option<u32>,
        fetch: Option<&FetchArgs>,
    ) -> Result<Result<Fetched, ScriptCode>, Error> {
        let (script, keys, args) =
            self.finished_call(job, token, finish, keep, metrics_max, fetch, None);
        // grouped with other jobs' finishes that queue up at the same time (GroupCommit)
        let reply: Value = self
            .group()
            .run(script, &scripts().move_to_finished_batch, keys, args)
            .await?;
        finished_reply(script.name, reply)
    }

    /// Complete `job` with a processor's step folded in (`crate::queue::processor::FinishStep`):
    /// `script` runs move_to_finished's contract, then the step with `keys` and `args` appended.
    /// With a `batch` script, the call is grouped with other jobs' calls that queue up at the
    /// same time ([`GroupCommit`]). Returns the finish (as [`Commands::finish`]), the step's own
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
        step: (&'static LuaScript, &[String], &[String]),
        batch: Option<&'static LuaScript>,
    ) -> Result<StepFinished, Error> {
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
            own: items.next().unwrap_or(Value::Nil),
            prepared: items.next().unwrap_or(Value::Nil),
        })
    }

    /// The script, KEYS and ARGV of a completion or final failure (move_to_finished.lua's
    /// header), with a step's keys and arguments appended after them when given.
    /// (Public, hidden, for `benches/worker.rs`: it measures packing a finishing call.)
    #[doc(hidden)]
    #[allow(clippy::too_many_arguments)]
    pub fn finished_call<'a>(
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
        let mut keys = self.fetch_keys(&[
            k.finished(target),
            k.job(&job.id),
            k.metrics(target),
            k.marker(),
        ]);
        let f = fetch;
        let none = String::new();
        let mut args: Vec<String> = [
            job.id.as_str(),
            &now_ms().to_string(),
            field,
            value,
            target,
            if fetch.is_some() { "1" } else { "0" },
            k.base(),
            token,
            &keep.count.to_string(),
            &keep.age.map(|a| a.to_string()).unwrap_or_default(),
            &keep.limit.map(|a| a.to_string()).unwrap_or_default(),
            &job.opts.attempts.to_string(),
            &metrics_max.map(|m| m.to_string()).unwrap_or_default(),
            f.map_or(&none, |f| &f.lock_ms),
            f.map_or(&none, |f| &f.name),
            f.map_or(&none, |f| &f.limiter_max),
            f.map_or(&none, |f| &f.limiter_duration),
        ]
        .map(str::to_string)
        .to_vec();
        if let Some((script, more_keys, more_args)) = step {
            keys.extend_from_slice(more_keys);
            args.extend_from_slice(more_args);
            return (script, keys, args);
        }
        if let Some(stack) = stack {
            args.extend([
                "failedReason".to_string(),
                value.clone(),
                "stacktrace".to_string(),
                stack.clone(),
            ]);
        }
        (&scripts().move_to_finished, keys, args)
    }

    /// Renew the locks of `jobs` (id, token); returns the ids whose lock is no longer ours.
    pub async fn extend_locks(
        &self,
        jobs: &[(String, String)],
        lock_ms: u64,
    ) -> Result<Vec<String>, Error> {
        let k = &self.keys;
        let duration = lock_ms.to_string();
        let mut args: Vec<&str> = vec![k.base(), &duration];
        for (id, token) in jobs {
            args.push(id);
            args.push(token);
        }
        Ok(scripts()
            .extend_locks
            .run(&mut self.conn.clone(), &self.trips, &[k.stalled()], &args)
            .await?)
    }

    /// One stall sweep; returns the ids moved back to wait.
    pub async fn move_stalled_jobs_to_wait(
        &self,
        max_stalled: u32,
        stalled_interval_ms: u64,
    ) -> Result<Vec<String>, Error> {
        let k = &self.keys;
        let keys = [
            k.stalled(),
            k.wait(),
            k.active(),
            k.stalled_check(),
            k.meta(),
            k.paused(),
            k.marker(),
            k.events(),
            k.repeat(),
        ];
        let args = [
            max_stalled.to_string(),
            k.base().to_string(),
            now_ms().to_string(),
            stalled_interval_ms.to_string(),
        ];
        Ok(scripts()
            .move_stalled_jobs_to_wait
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?)
    }

    /// Add a standard job (as `Queue.add` stores it); a custom `job_id` that exists is not
    /// added again. Returns the job id and whether it was created.
    pub async fn add_job(
        &self,
        job_id: Option<&str>,
        name: &str,
        data: &str,
        opts: &str,
    ) -> Result<(String, bool), Error> {
        let k = &self.keys;
        let keys = [
            k.wait(),
            k.meta(),
            k.id(),
            k.events(),
            k.active(),
            k.marker(),
            k.paused(),
        ];
        let args = [
            k.base(),
            job_id.unwrap_or(""),
            name,
            data,
            opts,
            &now_ms().to_string(),
        ];
        let (id, created): (String, String) = scripts()
            .add_job
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        Ok((id, created == "created"))
    }

    /// Readiness: Redis answers, and every script is loaded (any missing one is loaded now).
    pub async fn ensure_scripts(&self) -> Result<(), Error> {
        let mut conn = self.conn.clone();
        let all = scripts().all();
        let hashes: Vec<&str> = all.iter().map(|s| s.hash()).collect();
        self.trips.add(1);
        let loaded: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(&hashes)
            .query_async(&mut conn)
            .await?;
        for (script, present) in all.iter().zip(&loaded) {
            if !present {
                script.load(&mut conn).await?;
            }
        }
        Ok(())
    }

    /// Create the next iteration of the job scheduler that produced `job` (at activation, as
    /// Node does). `now` is the iteration's timestamp; `cron_next` the next run of a cron
    /// scheduler (computed by `queue::cron`; `None` when there is none). Returns the script's
    /// verdict: "created", "duplicate", "done", "none", or "pattern" (a cron scheduler called
    /// without `cron_next`).
    pub async fn update_job_scheduler(
        &self,
        job: &Job,
        scheduler_id: &str,
        now: i64,
        cron_next: Option<i64>,
    ) -> Result<String, Error> {
        let k = &self.keys;
        let keys = [
            k.repeat(),
            k.delayed(),
            k.wait(),
            k.paused(),
            k.meta(),
            k.prioritized(),
            k.marker(),
            k.id(),
            k.events(),
            k.pc(),
            k.job(&job.id),
            k.active(),
        ];
        let args = [
            scheduler_id,
            &now.to_string(),
            k.base(),
            &job.id,
            &job.raw_opts,
            &job.data,
            &cron_next.map(|n| n.to_string()).unwrap_or_default(),
        ];
        let reply: Vec<String> = scripts()
            .update_job_scheduler
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        Ok(reply.into_iter().next().unwrap_or_default())
    }

    /// The queue's `meta.version` ("bullmq:5.81.5"), which names the cron dialect.
    pub async fn meta_version(&self) -> Result<Option<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("HGET")
            .arg(self.keys.meta())
            .arg("version")
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// How many jobs wait in the delayed set (a gauge; not counted as a queue round trip).
    pub async fn delayed_count(&self) -> Result<u64, Error> {
        Ok(redis::cmd("ZCARD")
            .arg(self.keys.delayed())
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Whether a job with this id exists in the queue (any state).
    pub async fn job_exists(&self, job_id: &str) -> Result<bool, Error> {
        self.trips.add(1);
        Ok(redis::cmd("EXISTS")
            .arg(self.keys.job(job_id))
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// A job's `data` field, if the job exists.
    pub async fn job_data(&self, job_id: &str) -> Result<Option<String>, Error> {
        self.trips.add(1);
        Ok(redis::cmd("HGET")
            .arg(self.keys.job(job_id))
            .arg("data")
            .query_async(&mut self.conn.clone())
            .await?)
    }

    /// Store a job's progress (any JSON) and emit the `progress` event.
    pub async fn update_progress(
        &self,
        job_id: &str,
        progress: &serde_json::Value,
    ) -> Result<(), Error> {
        let k = &self.keys;
        let keys = [k.job(job_id), k.events(), k.meta()];
        let args = [job_id.to_string(), crate::store::json::stringify(progress)];
        let code: i64 = scripts()
            .update_progress
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        code_or("update_progress", Value::Int(code)).map_err(|c| Error::Reply {
            script: "update_progress",
            detail: c.to_string(),
        })
    }

    /// Rate-limit the queue for `ms` (Node's `worker.rateLimit`): the `limiter` key, set as Node
    /// sets it.
    pub async fn set_rate_limit(&self, ms: u64) -> Result<(), Error> {
        self.trips.add(1);
        let () = redis::cmd("SET")
            .arg(self.keys.limiter())
            .arg(9_007_199_254_740_991_i64)
            .arg("PX")
            .arg(ms.max(1))
            .query_async(&mut self.conn.clone())
            .await?;
        Ok(())
    }

    /// Put a rate-limited job back to wait without using an attempt (Node's `RateLimitError`).
    /// Returns how long the limit still holds (ms).
    pub async fn move_limited_to_wait(&self, job_id: &str, token: &str) -> Result<u64, Error> {
        let k = &self.keys;
        let keys = [
            k.job(job_id),
            k.active(),
            k.wait(),
            k.stalled(),
            k.meta(),
            k.limiter(),
            k.prioritized(),
            k.marker(),
            k.events(),
            k.paused(),
        ];
        let args = [job_id, token];
        let code: i64 = scripts()
            .move_limited_to_wait
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        if code < 0 {
            return Err(Error::Reply {
                script: "move_limited_to_wait",
                detail: ScriptCode::from_code(code).to_string(),
            });
        }
        Ok(code as u64)
    }

    /// Add a child of `parent_id` (same queue), as Node's `Queue.add` with `opts.parent`.
    /// Returns the child's id.
    pub async fn add_child(
        &self,
        parent_id: &str,
        name: &str,
        data: &str,
        opts: &str,
    ) -> Result<String, Error> {
        let k = &self.keys;
        let parent_key = k.job(parent_id);
        let keys = [
            k.wait(),
            k.meta(),
            k.id(),
            k.events(),
            k.active(),
            k.marker(),
            k.paused(),
            parent_key.clone(),
            format!("{parent_key}:dependencies"),
        ];
        let queue_key = k.base().trim_end_matches(':').to_string();
        // Node keeps `parent` ({id, queue}) in the child's opts too
        let mut opts_value: serde_json::Value =
            serde_json::from_str(opts).map_err(|e| Error::Reply {
                script: "add_child",
                detail: format!("child opts are not JSON: {e}"),
            })?;
        if let Some(o) = opts_value.as_object_mut() {
            o.insert(
                "parent".into(),
                serde_json::json!({"id": parent_id, "queue": queue_key}),
            );
        }
        let opts = opts_value.to_string();
        let args = [
            k.base(),
            "",
            name,
            data,
            &opts,
            &now_ms().to_string(),
            parent_id,
            &queue_key,
        ];
        let reply: Value = scripts()
            .add_child
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        match reply {
            Value::Array(items) => match items.first() {
                Some(Value::BulkString(id)) => Ok(String::from_utf8_lossy(id).into_owned()),
                _ => Err(Error::Reply {
                    script: "add_child",
                    detail: format!("{items:?}"),
                }),
            },
            other => Err(Error::Reply {
                script: "add_child",
                detail: match other {
                    Value::Int(code) => ScriptCode::from_code(code).to_string(),
                    v => format!("{v:?}"),
                },
            }),
        }
    }

    /// Move an active job to `waiting-children` when it has pending children (Node's
    /// `job.moveToWaitingChildren`). `Ok(true)` moved; `Ok(false)` none pending (still active).
    pub async fn move_to_waiting_children(&self, job_id: &str, token: &str) -> Result<bool, Error> {
        let k = &self.keys;
        let job_key = k.job(job_id);
        let keys = [
            k.active(),
            k.waiting_children(),
            job_key.clone(),
            format!("{job_key}:dependencies"),
            format!("{job_key}:unsuccessful"),
            k.stalled(),
            k.events(),
        ];
        let args = [token.to_string(), now_ms().to_string(), job_id.to_string()];
        let code: i64 = scripts()
            .move_to_waiting_children
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        match code {
            0 => Ok(true),
            1 => Ok(false),
            c => Err(Error::Reply {
                script: "move_to_waiting_children",
                detail: ScriptCode::from_code(c).to_string(),
            }),
        }
    }

    /// Append a row to the job's log (`<job>:logs`), trimmed to the last `keep_logs` rows when
    /// set, as Node's `job.log()`. Returns the number of rows kept.
    pub async fn add_log(
        &self,
        job_id: &str,
        row: &str,
        keep_logs: Option<u64>,
    ) -> Result<i64, Error> {
        let k = &self.keys;
        let job_key = k.job(job_id);
        let keys = [job_key.clone(), format!("{job_key}:logs")];
        let args = [
            row.to_string(),
            keep_logs.map(|n| n.to_string()).unwrap_or_default(),
        ];
        let count: i64 = scripts()
            .add_log
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        if count < 0 {
            return Err(Error::Reply {
                script: "add_log",
                detail: ScriptCode::from_code(count).to_string(),
            });
        }
        Ok(count)
    }
}

fn code_or(script: &'static str, reply: Value) -> Result<(), ScriptCode> {
    match reply {
        Value::Int(0) => Ok(()),
        Value::Int(code) => Err(ScriptCode::from_code(code)),
        other => {
            tracing::error!(script, ?other, "unexpected script reply");
            Err(ScriptCode::Other(i64::MIN))
        }
    }
}

/// Parse BullMQ's 4-tuple `{fields|0, jobId|0, rateLimitTtl, nextDelayedMs}`.
/// move_to_finished's answer: 0, a negative code, or the next job's 4-tuple. (Public, hidden,
/// for `benches/worker.rs`: it measures parsing a finishing call's reply.)
#[doc(hidden)]
pub fn finished_reply(
    script: &'static str,
    reply: Value,
) -> Result<Result<Fetched, ScriptCode>, Error> {
    match reply {
        Value::Array(_) => parse_fetched(script, reply).map(Ok),
        other => Ok(code_or(script, other).map(|()| Fetched::Empty)),
    }
}

fn parse_fetched(script: &'static str, reply: Value) -> Result<Fetched, Error> {
    let bad = |detail: String| Error::Reply { script, detail };
    let Value::Array(mut items) = reply else {
        return Err(bad(format!("expected an array, got {reply:?}")));
    };
    if items.len() < 4 {
        return Err(bad(format!("expected 4 elements, got {}", items.len())));
    }
    let int = |v: &Value| match v {
        Value::Int(i) => *i,
        _ => 0,
    };
    let delayed = int(&items[3]);
    let ttl = int(&items[2]);
    let id = items.swap_remove(1);
    match (items.swap_remove(0), id) {
        (Value::Array(fields), Value::BulkString(id)) => {
            let text = |v: Value| match v {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                Value::SimpleString(s) => s,
                Value::Int(i) => i.to_string(),
                _ => String::new(),
            };
            let mut pairs = Vec::with_capacity(fields.len() / 2);
            let mut it = fields.into_iter();
            while let (Some(k), Some(v)) = (it.next(), it.next()) {
                pairs.push((text(k), text(v)));
            }
            let id = String::from_utf8_lossy(&id).into_owned();
            Ok(Fetched::Job(Box::new(Job::from_fields(id, pairs))))
        }
        _ if ttl > 0 => Ok(Fetched::RateLimited(ttl as u64)),
        _ if delayed > 0 => Ok(Fetched::NextDelayed(delayed)),
        _ => Ok(Fetched::Empty),
    }
}
