//! Adding and reading jobs: add, children, schedulers, progress, logs, the queue's meta and
//! the scripts loaded on every node.

use super::{Calls, code_or};
use crate::job::Job;
use redis::Value;
use ringback_shared::clock::now_ms;
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::call::Call;
use ringback_store::command::RoundTrip;
use ringback_store::scripts::scripts;

impl Calls {
    /// The seven queue keys every adding script takes first (`add_job.lua`, `add_child.lua`).
    fn adding<'s>(&self, call: Call<'s>) -> Call<'s> {
        let k = &self.keys;
        call.key("wait", k.wait())
            .key("meta", k.meta())
            .key("id", k.id())
            .key("events", k.events())
            .key("active", k.active())
            .key("marker", k.marker())
            .key("paused", k.paused())
    }
}

impl Calls {
    /// Add a standard job (as `Queue.add` stores it); a custom `job_id` that exists is not
    /// added again. Returns the job id and whether it was created.
    pub async fn add_job(
        &self,
        job_id: Option<&str>,
        name: &str,
        data: &str,
        opts: &str,
    ) -> Result<(String, bool), Error> {
        self.add_job_guarded(job_id, name, data, opts, None).await
    }

    /// [`Calls::add_job`] guarded by a once-marker (`once`, kept `life`), set in the same
    /// script: while it exists the job is not added again, also after the job was removed.
    /// `once` must live in the queue's slot (`ringback_store::keys::reply_enqueued`).
    pub async fn add_job_once(
        &self,
        job_id: Option<&str>,
        name: &str,
        data: &str,
        opts: &str,
        once: &str,
        life: std::time::Duration,
    ) -> Result<(String, bool), Error> {
        self.add_job_guarded(job_id, name, data, opts, Some((once, life)))
            .await
    }

    async fn add_job_guarded(
        &self,
        job_id: Option<&str>,
        name: &str,
        data: &str,
        opts: &str,
        once: Option<(&str, std::time::Duration)>,
    ) -> Result<(String, bool), Error> {
        let k = &self.keys;
        let call = self
            .adding(scripts().add_job.call())
            .key_if(
                "(optional) a once-marker",
                once.map(|(key, _)| key.to_string()),
            )
            .arg("key prefix", k.base())
            .arg("job id", job_id.unwrap_or(""))
            .arg("job name", name)
            .arg("data (JSON)", data)
            .arg("opts (JSON", opts)
            .arg("timestamp (ms)", now_ms());
        let call = match once {
            Some((_, life)) => call.arg("the once-marker's life (ms)", life.as_millis().max(1)),
            None => call,
        };
        let (id, created): (String, String) = call.run(&mut self.conn.clone(), &self.trips).await?;
        Ok((id, created == "created"))
    }

    /// Readiness: Redis answers, and every script is loaded (any missing one is loaded now).
    pub async fn ensure_scripts(&self) -> Result<(), Error> {
        let mut conn = self.conn.clone();
        let all = scripts().all();
        let hashes: Vec<&str> = all.iter().map(|s| s.hash()).collect();
        let loaded: Vec<bool> = redis::cmd("SCRIPT")
            .arg("EXISTS")
            .arg(&hashes)
            .round_trip(&mut conn, &self.trips)
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
        let reply: Vec<String> = scripts()
            .update_job_scheduler
            .call()
            .key("repeat", k.repeat())
            .key("delayed", k.delayed())
            .key("wait", k.wait())
            .key("paused", k.paused())
            .key("meta", k.meta())
            .key("prioritized", k.prioritized())
            .key("marker", k.marker())
            .key("id", k.id())
            .key("events", k.events())
            .key("pc", k.pc())
            .key("the producing job's key", k.job(&job.id))
            .key("active", k.active())
            .arg("scheduler id", scheduler_id)
            .arg("now (ms)", now)
            .arg("key prefix", k.base())
            .arg("the producing job's id", &job.id)
            .arg("the producing job's stored opts", &job.raw_opts)
            .arg("the producing job's data", &job.data)
            .arg(
                "a cron scheduler's next run",
                cron_next.map(|n| n.to_string()).unwrap_or_default(),
            )
            .run(&mut self.conn.clone(), &self.trips)
            .await?;
        Ok(reply.into_iter().next().unwrap_or_default())
    }

    /// The queue's `meta.version` ("bullmq:5.81.5"), which names the cron dialect.
    pub async fn meta_version(&self) -> Result<Option<String>, Error> {
        Ok(redis::cmd("HGET")
            .arg(self.keys.meta())
            .arg("version")
            .round_trip(&mut self.conn.clone(), &self.trips)
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
        Ok(redis::cmd("EXISTS")
            .arg(self.keys.job(job_id))
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// A job's `data` field, if the job exists.
    pub async fn job_data(&self, job_id: &str) -> Result<Option<String>, Error> {
        Ok(redis::cmd("HGET")
            .arg(self.keys.job(job_id))
            .arg("data")
            .round_trip(&mut self.conn.clone(), &self.trips)
            .await?)
    }

    /// Store a job's progress (any JSON) and emit the `progress` event.
    pub async fn update_progress(
        &self,
        job_id: &str,
        progress: &serde_json::Value,
    ) -> Result<(), Error> {
        let k = &self.keys;
        let code: i64 = scripts()
            .update_progress
            .call()
            .key("job key", k.job(job_id))
            .key("events", k.events())
            .key("meta", k.meta())
            .arg("jobId", job_id)
            .arg(
                "progress as JSON",
                ringback_store::json::stringify(progress),
            )
            .run(&mut self.conn.clone(), &self.trips)
            .await?;
        code_or("update_progress", Value::Int(code)).map_err(|c| Error::Reply {
            script: "update_progress",
            detail: c.to_string(),
        })
    }
}

impl Calls {
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
        let reply: Value = self
            .adding(scripts().add_child.call())
            .key("the parent's job key", parent_key.clone())
            .key(
                "the parent's dependencies key",
                format!("{parent_key}:dependencies"),
            )
            .arg("key prefix", k.base())
            .arg("job id", "")
            .arg("job name", name)
            .arg("data (JSON)", data)
            .arg("opts (JSON", opts_value)
            .arg("timestamp (ms)", now_ms())
            .arg("the parent's id", parent_id)
            .arg("the parent's queue key", &queue_key)
            .run(&mut self.conn.clone(), &self.trips)
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
        let code: i64 = scripts()
            .move_to_waiting_children
            .call()
            .key("active", k.active())
            .key("waiting-children", k.waiting_children())
            .key("job key", job_key.clone())
            .key(
                "the job's dependencies key",
                format!("{job_key}:dependencies"),
            )
            .key(
                "the job's unsuccessful key",
                format!("{job_key}:unsuccessful"),
            )
            .key("stalled", k.stalled())
            .key("events", k.events())
            .arg("lock token", token)
            .arg("timestamp (ms)", now_ms())
            .arg("job id", job_id)
            .run(&mut self.conn.clone(), &self.trips)
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
        let job_key = self.keys.job(job_id);
        let count: i64 = scripts()
            .add_log
            .call()
            .key("job key", job_key.clone())
            .key("the job's logs key", format!("{job_key}:logs"))
            .arg("the row", row)
            .arg(
                "keepLogs",
                keep_logs.map(|n| n.to_string()).unwrap_or_default(),
            )
            .run(&mut self.conn.clone(), &self.trips)
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
