//! Adding and reading jobs: add, children, schedulers, progress, logs, the queue's meta and
//! the scripts loaded on every node.

use super::*;
use crate::job::Job;
use redis::Value;
use ringback_shared::clock::now_ms;
use ringback_shared::error::{Error, ScriptCode};
use ringback_store::scripts::scripts;

impl Commands {
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

    /// [`Commands::add_job`] guarded by a once-marker (`once`, kept `life`), set in the same
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
        let mut keys = vec![
            k.wait(),
            k.meta(),
            k.id(),
            k.events(),
            k.active(),
            k.marker(),
            k.paused(),
        ];
        let mut args = vec![
            k.base().to_string(),
            job_id.unwrap_or("").to_string(),
            name.to_string(),
            data.to_string(),
            opts.to_string(),
            now_ms().to_string(),
        ];
        if let Some((key, life)) = once {
            keys.push(key.to_string());
            args.push(life.as_millis().max(1).to_string());
        }
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
        let args = [
            job_id.to_string(),
            ringback_store::json::stringify(progress),
        ];
        let code: i64 = scripts()
            .update_progress
            .run(&mut self.conn.clone(), &self.trips, &keys, &args)
            .await?;
        code_or("update_progress", Value::Int(code)).map_err(|c| Error::Reply {
            script: "update_progress",
            detail: c.to_string(),
        })
    }
}

impl Commands {
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
