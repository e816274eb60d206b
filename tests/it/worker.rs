//! The worker core against a real redis-server: finishing, retries, delays, removal, stalls,
//! lock loss, pause (v5 and v6 layouts), limits, shutdown and Redis restarts.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use common::{Add, RedisServer, add_job, config, events, job_hash, queue_name, wait_for};
use redis::AsyncCommands;
use ringback::queue::scripted::ScriptedProcessor;
use ringback::store::keys::QueueKeys;
use ringback::{Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

const T: Duration = Duration::from_secs(10);

struct Running {
    cancel: CancellationToken,
    handle: tokio::task::JoinHandle<Result<ringback::Stopped, ringback::Error>>,
}

impl Running {
    fn start(cfg: WorkerConfig) -> Self {
        let worker = Worker::new(cfg, ScriptedProcessor).expect("valid config");
        let cancel = CancellationToken::new();
        let handle = tokio::spawn(worker.run(cancel.clone()));
        Running { cancel, handle }
    }

    async fn stop(self) -> ringback::Stopped {
        self.cancel.cancel();
        self.handle.await.expect("worker task").expect("worker run")
    }
}

async fn state_of(
    c: &mut redis::aio::MultiplexedConnection,
    k: &QueueKeys,
    id: &str,
) -> Option<&'static str> {
    if c.zscore::<_, _, Option<f64>>(k.completed(), id)
        .await
        .unwrap()
        .is_some()
    {
        return Some("completed");
    }
    if c.zscore::<_, _, Option<f64>>(k.failed(), id)
        .await
        .unwrap()
        .is_some()
    {
        return Some("failed");
    }
    None
}

/// Wait until the job's lock exists (the job is running).
async fn locked(c: &redis::aio::MultiplexedConnection, k: &QueueKeys, id: &str, what: &str) {
    wait_for(T, what, || {
        let (mut c, k, id) = (c.clone(), k.clone(), id.to_string());
        async move {
            c.exists::<_, bool>(k.lock(&id))
                .await
                .unwrap()
                .then_some(())
        }
    })
    .await
}

async fn finished(
    c: &mut redis::aio::MultiplexedConnection,
    k: &QueueKeys,
    id: &str,
) -> &'static str {
    let (c2, k2, id2) = (c.clone(), k.clone(), id.to_string());
    wait_for(T, &format!("job {id} to finish"), move || {
        let (mut c, k, id) = (c2.clone(), k2.clone(), id2.clone());
        async move { state_of(&mut c, &k, &id).await }
    })
    .await
}

/// Add a job with `data` and `opts` (empty: the defaults); its id.
async fn add(
    c: &mut redis::aio::MultiplexedConnection,
    k: &QueueKeys,
    data: &str,
    opts: &str,
) -> String {
    add_job(
        c,
        k,
        Add {
            data,
            opts,
            ..Default::default()
        },
    )
    .await
}

#[tokio::test]
async fn completes_fails_and_retries_like_node() {
    let server = RedisServer::start();
    let q = queue_name("basic");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    // name, data, opts (empty: the defaults), the state the job ends in
    let jobs = [
        ("plain", "", "", "completed"),
        (
            "value",
            r#"{"script":["complete:{\"x\":1}"]}"#,
            "",
            "completed",
        ),
        (
            "retried",
            r#"{"script":["fail:boom","complete"]}"#,
            r#"{"attempts":2,"backoff":{"type":"fixed","delay":50}}"#,
            "completed",
        ),
        (
            "immediate",
            r#"{"script":["fail:once","complete"]}"#,
            r#"{"attempts":3}"#,
            "completed",
        ),
        (
            "failed",
            r#"{"script":["fail:boom"]}"#,
            r#"{"attempts":2}"#,
            "failed",
        ),
        (
            "unrec",
            r#"{"script":["unrecoverable:nope"]}"#,
            r#"{"attempts":5}"#,
            "failed",
        ),
        ("bad", "{not json", "", "failed"),
    ];
    let mut ids = HashMap::new();
    for (name, data, opts, _) in jobs {
        ids.insert(name, add(&mut c, &k, data, opts).await);
    }

    let w = Running::start(config(&server, &q));
    for (name, _, _, end) in jobs {
        let id = &ids[name];
        assert_eq!(finished(&mut c, &k, id).await, end, "job {id}");
    }
    w.stop().await;

    let h = job_hash(&mut c, &k, &ids["plain"]).await;
    assert_eq!(h["returnvalue"], "null");
    assert_eq!(h["atm"], "1");
    assert_eq!(h["ats"], "1");
    assert!(h["finishedOn"].parse::<i64>().unwrap() >= h["processedOn"].parse::<i64>().unwrap());
    assert_eq!(
        job_hash(&mut c, &k, &ids["value"]).await["returnvalue"],
        r#"{"x":1}"#
    );

    let h = job_hash(&mut c, &k, &ids["retried"]).await;
    assert_eq!(h["returnvalue"], r#"{"ok":true,"attempt":2}"#);
    assert_eq!(
        (h["atm"].as_str(), h["ats"].as_str(), h["delay"].as_str()),
        ("2", "2", "0")
    );
    assert_eq!(
        h["failedReason"], "boom",
        "the last failure stays recorded, as in Node"
    );
    assert_eq!(h["stacktrace"], r#"["Error: boom"]"#);
    assert_eq!(job_hash(&mut c, &k, &ids["immediate"]).await["atm"], "2");

    let h = job_hash(&mut c, &k, &ids["failed"]).await;
    assert_eq!(
        (h["failedReason"].as_str(), h["atm"].as_str()),
        ("boom", "2")
    );
    assert_eq!(h["stacktrace"], r#"["Error: boom","Error: boom"]"#);
    let h = job_hash(&mut c, &k, &ids["unrec"]).await;
    assert_eq!(
        (h["failedReason"].as_str(), h["atm"].as_str()),
        ("nope", "1")
    );
    let h = job_hash(&mut c, &k, &ids["bad"]).await;
    assert!(
        h["failedReason"].starts_with("job data is not valid JSON"),
        "{}",
        h["failedReason"]
    );
    assert_eq!(h["atm"], "1");

    let ev = events(&mut c, &k).await;
    let has = |e: &str, id: &str| ev.iter().any(|(a, b)| a == e && b == id);
    assert!(has("active", &ids["plain"]) && has("completed", &ids["plain"]));
    assert!(
        has("delayed", &ids["retried"]),
        "backoff retry goes through delayed"
    );
    assert!(
        ev.iter()
            .filter(|(e, id)| e == "waiting" && id == &ids["immediate"])
            .count()
            >= 1
    );
    assert!(has("failed", &ids["failed"]) && has("retries-exhausted", &ids["failed"]));
    assert!(
        has("failed", &ids["unrec"]) && !has("retries-exhausted", &ids["unrec"]),
        "1 of 5 attempts used"
    );
    assert!(ev.iter().any(|(e, _)| e == "drained"));
    let active: i64 = c.llen(k.active()).await.unwrap();
    assert_eq!(active, 0);
}

#[tokio::test]
async fn delays_priorities_lifo_and_removal() {
    let server = RedisServer::start();
    let q = queue_name("order");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    // name, data, opts (empty: the defaults), priority, delay (ms)
    let jobs = [
        ("delayed", "", "", 0, 300),
        (
            "self_delay",
            r#"{"script":["delay:200","complete"]}"#,
            "",
            0,
            0,
        ),
        ("low", "", "", 5, 0),
        ("high", "", "", 1, 0),
        ("plain", "", "", 0, 0),
        (
            "removed",
            "",
            r#"{"attempts":0,"removeOnComplete":true}"#,
            0,
            0,
        ),
    ];
    let mut ids = HashMap::new();
    for (name, data, opts, priority, delay_ms) in jobs {
        let job = Add {
            data,
            opts,
            priority,
            delay_ms,
            ..Default::default()
        };
        ids.insert(name, add_job(&mut c, &k, job).await);
    }

    let mut cfg = config(&server, &q);
    cfg.concurrency = 1;
    let w = Running::start(cfg);
    for name in ["delayed", "self_delay", "low", "high", "plain"] {
        assert_eq!(finished(&mut c, &k, &ids[name]).await, "completed");
    }
    let removed = &ids["removed"];
    let gone: HashMap<String, String> = c.hgetall(k.job(removed)).await.unwrap();
    wait_for(T, "removed job to vanish", || {
        let mut c = c.clone();
        let k = k.clone();
        let id = removed.clone();
        async move { (!c.exists::<_, bool>(k.job(&id)).await.unwrap()).then_some(()) }
    })
    .await;
    let _ = gone;
    w.stop().await;

    let h = job_hash(&mut c, &k, &ids["self_delay"]).await;
    assert_eq!(
        (h["atm"].as_str(), h["ats"].as_str()),
        ("1", "2"),
        "a processor delay uses no attempt"
    );
    // activation order: plain jobs before prioritized ones, priority 1 before 5
    let ev = events(&mut c, &k).await;
    let order: Vec<&String> = ev
        .iter()
        .filter(|(e, _)| e == "active")
        .map(|(_, id)| id)
        .collect();
    let pos = |id: &str| order.iter().position(|x| *x == id).unwrap();
    assert!(
        pos(&ids["plain"]) < pos(&ids["high"]) && pos(&ids["high"]) < pos(&ids["low"]),
        "{order:?}"
    );
    assert!(
        ev.iter()
            .any(|(e, id)| e == "waiting" && id == &ids["delayed"]),
        "promotion emits waiting"
    );
    assert!(
        ev.iter()
            .any(|(e, id)| e == "delayed" && id == &ids["self_delay"])
    );
}

#[tokio::test]
async fn keeps_only_what_remove_on_complete_allows() {
    let server = RedisServer::start();
    let q = queue_name("keep");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    let mut ids = vec![];
    for _ in 0..5 {
        ids.push(add(&mut c, &k, "", r#"{"attempts":0,"removeOnComplete":2}"#).await);
    }
    let mut cfg = config(&server, &q);
    cfg.concurrency = 1;
    let w = Running::start(cfg);
    wait_for(T, "all processed", || {
        let mut c = c.clone();
        let k = k.clone();
        async move {
            let wait: i64 = c.llen(k.wait()).await.unwrap();
            let active: i64 = c.llen(k.active()).await.unwrap();
            (wait == 0 && active == 0).then_some(())
        }
    })
    .await;
    w.stop().await;
    let kept: Vec<String> = c.zrange(k.completed(), 0, -1).await.unwrap();
    assert_eq!(kept, ids[3..].to_vec());
    assert!(!c.exists::<_, bool>(k.job(&ids[0])).await.unwrap());
}

#[tokio::test]
async fn stalled_job_is_recovered_then_failed_past_max_stalled_count() {
    let server = RedisServer::start();
    let q = queue_name("stall");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    // A job left in active without a lock, as a killed worker leaves it.
    let id = add_job(&mut c, &k, Add::default()).await;
    let _: () = redis::pipe()
        .rpoplpush(k.wait(), k.active())
        .hset(k.job(&id), "ats", 1)
        .query_async(&mut c)
        .await
        .unwrap();
    let mut cfg = config(&server, &q);
    cfg.max_stalled_count = 0;
    let w = Running::start(cfg);
    assert_eq!(finished(&mut c, &k, &id).await, "failed");
    w.stop().await;
    let h = job_hash(&mut c, &k, &id).await;
    assert_eq!(h["failedReason"], "job stalled more than allowable limit");
    assert_eq!(h["stc"], "1");
    assert!(
        !h.contains_key("defa"),
        "the deferred failure is cleared on final failure"
    );
    let ev = events(&mut c, &k).await;
    let stalled = ev
        .iter()
        .position(|(e, j)| e == "stalled" && j == &id)
        .expect("stalled event");
    assert_eq!(
        ev[stalled - 1],
        ("waiting".to_string(), id.clone()),
        "waiting (prev active) precedes stalled"
    );

    // With the default max of 1, the same situation runs the job again.
    let id2 = add_job(&mut c, &k, Add::default()).await;
    let _: () = redis::pipe()
        .rpoplpush(k.wait(), k.active())
        .query_async(&mut c)
        .await
        .unwrap();
    let w = Running::start(config(&server, &q));
    assert_eq!(finished(&mut c, &k, &id2).await, "completed");
    w.stop().await;
}

#[tokio::test]
async fn a_job_whose_lock_was_taken_is_left_alone() {
    let server = RedisServer::start();
    let q = queue_name("lock");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    let id = add(&mut c, &k, r#"{"script":["sleep:700"]}"#, "").await;
    let w = Running::start(config(&server, &q));
    locked(&c, &k, &id, "job active").await;
    // Another worker now owns it (as after a stall recovery and re-fetch).
    let _: () = c.set(k.lock(&id), "someone-else:1").await.unwrap();
    // A graceful stop waits for the running attempt, whose finishing call is then refused.
    let stopped = w.stop().await;
    assert_eq!(stopped.finished, 0, "the finishing call was refused");
    assert_eq!(state_of(&mut c, &k, &id).await, None);
    let lock: String = c.get(k.lock(&id)).await.unwrap();
    assert_eq!(lock, "someone-else:1");
    let active: Vec<String> = c.lrange(k.active(), 0, -1).await.unwrap();
    assert_eq!(active, vec![id]);
}

#[tokio::test]
async fn graceful_stop_finishes_running_jobs_and_abandons_at_the_deadline() {
    let server = RedisServer::start();
    let q = queue_name("stop");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    let short = add(&mut c, &k, r#"{"script":["sleep:400"]}"#, "").await;
    let w = Running::start(config(&server, &q));
    locked(&c, &k, &short, "job active").await;
    let queued = add_job(
        &mut c,
        &k,
        Add {
            delay_ms: 60_000,
            ..Default::default()
        },
    )
    .await;
    let stopped = w.stop().await;
    assert_eq!(
        stopped,
        ringback::Stopped {
            abandoned: 0,
            finished: 1
        }
    );
    assert_eq!(state_of(&mut c, &k, &short).await, Some("completed"));
    assert_eq!(state_of(&mut c, &k, &queued).await, None);

    let long = add(&mut c, &k, r#"{"script":["sleep:5000"]}"#, "").await;
    let mut cfg = config(&server, &q);
    cfg.shutdown_grace = Duration::from_millis(300);
    let w = Running::start(cfg);
    locked(&c, &k, &long, "long job active").await;
    let stopped = w.stop().await;
    assert_eq!(stopped.abandoned, 1);
    let active: Vec<String> = c.lrange(k.active(), 0, -1).await.unwrap();
    assert_eq!(
        active,
        vec![long],
        "left in active for stall recovery, not half-finished"
    );
}

#[tokio::test]
async fn paused_queue_waits_and_v5_promotions_go_to_the_paused_list() {
    let server = RedisServer::start();
    let q = queue_name("pause");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    // v6 pause: meta.paused, jobs stay in wait.
    let _: () = c.hset(k.meta(), "paused", 1).await.unwrap();
    let id = add_job(&mut c, &k, Add::default()).await;
    let w = Running::start(config(&server, &q));
    tokio::time::sleep(Duration::from_millis(400)).await; // a paused queue must stay untouched
    assert_eq!(state_of(&mut c, &k, &id).await, None);
    let waiting: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    assert_eq!(waiting, vec![id.clone()]);
    let _: () = c.hdel(k.meta(), "paused").await.unwrap();
    let _: () = c.zadd(k.marker(), "0", 0).await.unwrap();
    assert_eq!(finished(&mut c, &k, &id).await, "completed");

    // v5: a job whose backoff ends while the queue is paused is promoted into the `paused` list.
    let _: () = c.hset(k.meta(), "version", "bullmq:5.81.5").await.unwrap();
    let opts = r#"{"attempts":2,"backoff":{"type":"fixed","delay":300}}"#;
    add(&mut c, &k, r#"{"script":["fail:x"]}"#, opts).await;
    wait_for(T, "job in delayed after its failed attempt", || {
        let mut c = c.clone();
        let k = k.clone();
        async move { (c.zcard::<_, i64>(k.delayed()).await.unwrap() == 1).then_some(()) }
    })
    .await;
    let _: () = c.hset(k.meta(), "paused", 1).await.unwrap();
    wait_for(T, "promoted job in the v5 paused list", || {
        let mut c = c.clone();
        let k = k.clone();
        async move { (c.llen::<_, i64>(k.paused()).await.unwrap() == 1).then_some(()) }
    })
    .await;
    w.stop().await;
}

#[tokio::test]
async fn global_concurrency_and_rate_limit_from_meta() {
    let server = RedisServer::start();
    let q = queue_name("limits");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    let _: () = c
        .hset_multiple(
            k.meta(),
            &[("concurrency", "1"), ("max", "2"), ("duration", "500")],
        )
        .await
        .unwrap();
    let mut ids = vec![];
    for _ in 0..4 {
        ids.push(add(&mut c, &k, r#"{"script":["sleep:50"]}"#, "").await);
    }
    let mut cfg = config(&server, &q);
    cfg.concurrency = 4;
    let started = std::time::Instant::now();
    let w = Running::start(cfg);
    let mut max_active = 0;
    loop {
        let active: i64 = c.llen(k.active()).await.unwrap();
        max_active = max_active.max(active);
        let done: i64 = c.zcard(k.completed()).await.unwrap();
        if done == 4 {
            break;
        }
        assert!(started.elapsed() < T, "jobs did not finish");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    w.stop().await;
    assert_eq!(
        max_active, 1,
        "meta.concurrency caps active jobs across workers"
    );
    assert!(
        started.elapsed() >= Duration::from_millis(500),
        "2 jobs per 500 ms: 4 jobs need a second window"
    );
}

#[tokio::test]
async fn scripts_survive_a_flushed_cache_and_a_redis_restart() {
    let mut server = RedisServer::start();
    let q = queue_name("restart");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    let w = Running::start(config(&server, &q));
    let a = add_job(&mut c, &k, Add::default()).await;
    assert_eq!(finished(&mut c, &k, &a).await, "completed");

    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut c)
        .await
        .unwrap();
    let b = add(
        &mut c,
        &k,
        r#"{"script":["fail:x","complete"]}"#,
        r#"{"attempts":2}"#,
    )
    .await;
    assert_eq!(finished(&mut c, &k, &b).await, "completed");

    server.restart();
    let mut c = server.conn().await;
    let d = add_job(&mut c, &k, Add::default()).await;
    assert_eq!(finished(&mut c, &k, &d).await, "completed");
    w.stop().await;
}

#[tokio::test]
async fn every_script_runs_after_script_flush() {
    let server = RedisServer::start();
    let k = QueueKeys::new("bull", &queue_name("flush"));
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let trips = std::sync::Arc::new(ringback::store::scripts::RoundTrips::default());
    let cmds = ringback::queue::calls::Calls::new(conn, k.clone(), trips.clone());
    let mut c = server.conn().await;
    let _: () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut c)
        .await
        .unwrap();
    let fetch = ringback::queue::calls::FetchArgs {
        token: "t:1".into(),
        lock_ms: "1000".into(),
        name: String::new(),
        limiter_max: String::new(),
        limiter_duration: String::new(),
    };
    assert!(matches!(
        cmds.move_to_active(&fetch).await.unwrap(),
        ringback::queue::calls::Fetched::Empty
    ));
    assert_eq!(
        cmds.extend_locks(&[("1".into(), "t:1".into())], 1000)
            .await
            .unwrap(),
        vec!["1".to_string()]
    );
    assert!(
        cmds.move_stalled_jobs_to_wait(1, 1000)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        cmds.update_progress("nope", &serde_json::json!(5))
            .await
            .is_err(),
        "job missing is reported"
    );
    let job = ringback::Job::from_fields("nope".into(), vec![]);
    for finish in [
        ringback::queue::calls::Finish::Completed {
            returnvalue: "null".into(),
        },
        ringback::queue::calls::Finish::RetryNow {
            reason: "r".into(),
            stacktrace: "[]".into(),
            lifo: false,
        },
        ringback::queue::calls::Finish::Delay {
            delay_ms: 5,
            skip_attempt: true,
            failure: None,
        },
    ] {
        let r = cmds
            .finish(
                &job,
                "t:1",
                &finish,
                ringback::queue::job::KeepJobs::KEEP_ALL,
                None,
                None,
                None,
            )
            .await
            .unwrap();
        assert_eq!(r.unwrap_err(), ringback::ScriptCode::JobMissing);
    }
    // the fused SMS finish (one Redis): nothing to mark, no claim asked, the job is missing
    let mut step = ringback::store::scripts::scripts()
        .finish_sent
        .call_after(14, 17);
    for name in [
        "claim key (this run)",
        "attempt record",
        "open-attempts index",
        "message link",
        "callback record",
        "its history",
        "the reconcile set",
        "recent-runs index",
        "where it is kept",
    ] {
        step = step.key(name, format!("flush-step:{name}"));
    }
    step = step
        .arg("\"1\" write the sent marker", "0")
        .arg("attempt token", "")
        .arg("MessageSid", "")
        .arg("sent TTL (ms)", "1000");
    for name in [
        "runId",
        "the status Twilio answered",
        "poll the message after (ms)",
        "claim key template",
        "attempt record template",
        "callback record template",
        "new attempt token",
        "worker id",
        "pending TTL (ms)",
        "hold (ms)",
        "claim lease (ms)",
        "recent-runs cap",
    ] {
        step = step.arg(name, "");
    }
    step = step
        .arg("how long the call's answer is kept", "1000")
        .arg("the callback job names", "");
    let answer = cmds
        .complete_with_step(
            &job,
            "t:1",
            "null",
            ringback::queue::job::KeepJobs::KEEP_ALL,
            None,
            None,
            &step,
            None,
        )
        .await
        .unwrap();
    assert_eq!(
        answer.finished.unwrap_err(),
        ringback::ScriptCode::JobMissing
    );
    // the group commit's batch scripts: an empty group answers an empty list
    for batch in [
        &ringback::store::scripts::scripts().finish_sent_batch,
        &ringback::store::scripts::scripts().move_to_finished_batch,
    ] {
        let reply: Vec<redis::Value> = batch
            .run(
                &mut cmds.connection(),
                &trips,
                &[] as &[String],
                &["0", "22", "33"],
            )
            .await
            .unwrap();
        assert!(reply.is_empty(), "{}: {reply:?}", batch.name);
    }
    assert_eq!(
        cmds.update_job_scheduler(&job, "none", ringback::clock::now_ms(), None)
            .await
            .unwrap(),
        "none"
    );
    let (id, created) = cmds
        .add_job(Some("x1"), "n", "{}", r#"{"attempts":0}"#)
        .await
        .unwrap();
    assert!(created && id == "x1");
    assert_eq!(cmds.add_log("x1", "row", Some(5)).await.unwrap(), 1);
    // not active and not locked by this token: refused (-2), but the script ran
    assert!(cmds.move_limited_to_wait("x1", "t:1").await.is_err());
    let child = cmds
        .add_child("x1", "c", "{}", r#"{"attempts":0}"#)
        .await
        .unwrap();
    assert!(!child.is_empty());
    // a pending child, but x1 is not locked by this token: refused (-2)
    assert!(cmds.move_to_waiting_children("x1", "t:1").await.is_err());
    let window_conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let window = ringback::callbacks::window::Window::new(
        window_conn,
        trips.clone(),
        "agent-callback:".into(),
        ringback::callbacks::window::WindowTimes {
            pending_ttl: Duration::from_secs(5),
            lease: Duration::from_secs(30),
            sent_ttl: Duration::from_secs(60),
            hold: Duration::from_secs(10),
            poll_after: Duration::from_secs(60),
            replay_for: Duration::from_millis(500),
            lost_writes_window: Duration::from_secs(120),
        },
    );
    let claim = window
        .claim("f1", "tok", None, "1", "w", "+15558675310", "", "b")
        .await
        .unwrap();
    assert_eq!(
        claim,
        ringback::callbacks::window::Claim::Claimed {
            token: "tok".into()
        }
    );
    assert!(window.hold("f1", "tok", "unknown").await.unwrap());
    assert!(
        window
            .release("f1", "tok", "test", "send-failed", Duration::ZERO)
            .await
            .unwrap()
    );
    assert_eq!(
        window
            .mark_sent(
                "f2",
                "tok",
                "SM0",
                "queued",
                ringback::callbacks::window::Marked::Sent
            )
            .await
            .unwrap(),
        ringback::callbacks::window::MarkSent::Overrun,
        "no claim held: a window overrun"
    );
    let adopt = ringback::callbacks::callback::CallbackRequest {
        run_id: "f3".into(),
        to: "+15558675310".into(),
        body: "b".into(),
        from: None,
        ..Default::default()
    };
    assert!(window.adopt("j3", &adopt).await.unwrap(), "adopted");
    assert!(!window.adopt("j3", &adopt).await.unwrap(), "adopted once");
    assert!(
        window.settle_unknown("f4", "tok", "test").await.unwrap(),
        "no claim: settled"
    );
    assert_eq!(
        window.sweep("f1").await.unwrap(),
        None,
        "closed: nothing to sweep"
    );
    // the cluster layout's sweep takes an orphan with window_index.lua first
    let per_slot = window
        .clone()
        .with_topology(ringback::store::slots::Topology::PerSlot);
    assert_eq!(per_slot.sweep("f1").await.unwrap(), None);
    // the claim above recorded the identity: the note at start finds it unchanged
    assert_eq!(window.note_redis().await.unwrap(), 0);
    window
        .heartbeat("w1", "flush test", std::time::Duration::from_secs(3))
        .await
        .unwrap();
    assert_eq!(
        window.live_workers(Duration::from_secs(5)).await.unwrap(),
        ["flush test (w1)"]
    );
    let sms = ringback::callbacks::sms::SmsConfig::default();
    let (receipts, _) = sms.after_send(
        ringback::store::connection::commands(&client)
            .await
            .unwrap(),
        "bull",
        "flush",
    );
    let update = ringback::callbacks::receipts::StatusUpdate {
        run_id: "f2".into(),
        sid: "SM0".into(),
        status: "sent".into(),
        error_code: None,
        raw_dlr_done_date: None,
        source: ringback::callbacks::receipts::Source::Poll,
        repeat_id: None,
        attempt: None,
    };
    assert_eq!(receipts.apply(&update).await.unwrap().outcome, "applied");
    assert!(
        receipts
            .due_polls(10, Duration::from_secs(1))
            .await
            .unwrap()
            .is_empty()
    );
    // a question's answer claim handed over (replies): nothing to hand over here
    let taken: Option<String> = ringback::store::scripts::scripts()
        .question_answer_take
        .run(
            &mut c,
            &trips,
            &["ringback:question-answered:flush"],
            &["SMvoid", "SMnext", "1000"],
        )
        .await
        .unwrap();
    assert_eq!(taken, None);
    // the escalation ladder's eight: open, start a step, mark it, its call's status, climb,
    // adopt (nothing to take), stop, take its number
    let ladder = ["ringback:ladder:{flush}", "ringback:ladder-due:flush"];
    let s = ringback::store::scripts::scripts();
    let opened: i64 = s
        .ladder_start
        .run(
            &mut c,
            &trips,
            &ladder,
            &["flush", "1", "0", "60000", "{}", "0", "+15550000001"],
        )
        .await
        .unwrap();
    let advanced: Vec<String> = s
        .ladder_advance
        .run(
            &mut c,
            &trips,
            &[ladder[0], "ringback:redis-identity", ladder[1]],
            &["0", "t1", "0", "flush", "120000"],
        )
        .await
        .unwrap();
    let marked: String = s
        .ladder_mark
        .run(
            &mut c,
            &trips,
            &ladder[..1],
            &["1", "t1", "CAflush", "call"],
        )
        .await
        .unwrap();
    let status: Vec<String> = s
        .ladder_call_status
        .run(
            &mut c,
            &trips,
            &ladder[..1],
            &["1", "CAflush", "ringing", "2", "0", ""],
        )
        .await
        .unwrap();
    let climbed: Vec<String> = s
        .ladder_due
        .run(
            &mut c,
            &trips,
            &ladder,
            &["climb", "1", "call busy", "flush"],
        )
        .await
        .unwrap();
    let adopted: Vec<String> = s
        .ladder_adopt
        .run(&mut c, &trips, &ladder[..1], &["1", "t0", "t2", "1000"])
        .await
        .unwrap();
    let acked: Vec<String> = s
        .ladder_ack
        .run(&mut c, &trips, &ladder, &["reply", "flush", "+15550000001"])
        .await
        .unwrap();
    let took: String = s
        .ladder_number
        .run(
            &mut c,
            &trips,
            &[
                "ringback:ladder-number:{flush+15550000001}",
                "ringback:ladder-number-calls:{flush+15550000001}",
            ],
            &["take", "flush 1", "60000", "7200000"],
        )
        .await
        .unwrap();
    assert_eq!(took, "", "the number taken");
    assert!(opened > 0, "opened, due at {opened}");
    assert_eq!(
        (advanced[0].as_str(), marked.as_str(), status[0].as_str()),
        ("claimed", "marked", "1")
    );
    assert_eq!((climbed[0].as_str(), adopted[0].as_str()), ("kept", "gone"));
    assert_eq!(
        acked,
        vec!["stopped".to_string(), "0".into(), "CAflush".into()]
    );
    let loaded: Vec<bool> = redis::cmd("SCRIPT")
        .arg("EXISTS")
        .arg(
            ringback::store::scripts::scripts()
                .all()
                .iter()
                .map(|s| s.hash())
                .collect::<Vec<_>>(),
        )
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(
        loaded.iter().all(|l| *l),
        "every script was re-sent after NOSCRIPT: {loaded:?}"
    );
    // 27 of the scripts ran through `trips` (the queue's, the window's, the ladder's); the
    // receipt store counts its own. Each first call after the flush cost EVALSHA + EVAL.
    assert!(
        trips.get() >= 2 * 27,
        "a NOSCRIPT fallback costs one extra round trip: {}",
        trips.get()
    );
}

#[tokio::test]
async fn bad_configuration_is_refused_with_the_setting_named() {
    let cfg = WorkerConfig {
        concurrency: 0,
        ..Default::default()
    };
    let err = Worker::new(cfg, ScriptedProcessor).expect_err("refused");
    assert!(
        err.to_string().starts_with("RINGBACK_CONCURRENCY:"),
        "{err}"
    );
}

#[tokio::test]
async fn the_binary_reports_metrics_and_readiness() {
    let server = RedisServer::start();
    let q = queue_name("metrics");
    let k = QueueKeys::new("bull", &q);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    ringback::twilio::client::install_tls_provider();
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _child = KillOnDrop(
        std::process::Command::new(env!("CARGO_BIN_EXE_ringback"))
            .args(["worker", "--processor", "scripted"])
            .env("RINGBACK_DRILL", "1")
            .env("REDIS_URL", server.url())
            .env("RINGBACK_QUEUE", &q)
            .env("RINGBACK_METRICS_LISTEN", format!("127.0.0.1:{port}"))
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    let mut c = server.conn().await;
    let id = add_job(&mut c, &k, Add::default()).await;
    assert_eq!(finished(&mut c, &k, &id).await, "completed");
    let url = format!("http://127.0.0.1:{port}");
    let body = wait_for(T, "metrics to count the job", || {
        let url = url.clone();
        async move {
            let text = reqwest::get(format!("{url}/metrics"))
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            text.contains("ringback_attempts_finished_total{queue=")
                .then_some(text)
        }
    })
    .await;
    assert!(
        body.contains(&format!(
            "ringback_attempts_finished_total{{queue=\"{q}\"}} 1"
        )),
        "{body}"
    );
    assert!(body.contains("ringback_redis_round_trips_total"));
    // BullMQ's own OpenTelemetry job metrics, by the names its Prometheus exporter gives them
    let completed = body
        .lines()
        .find(|l| l.starts_with("bullmq_jobs_completed_total{"))
        .unwrap_or_else(|| panic!("no bullmq_jobs_completed_total: {body}"));
    assert!(
        completed.contains(&format!("bullmq_queue_name=\"{q}\""))
            && completed.contains("bullmq_job_state=\"completed\"")
            && completed.ends_with(" 1"),
        "{completed}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("bullmq_job_duration_seconds_count{")
                && l.contains("bullmq_job_state=\"completed\"")
                && l.ends_with(" 1")),
        "{body}"
    );
    let ready = reqwest::get(format!("{url}/readyz")).await.unwrap();
    assert_eq!(ready.status(), 200);
}

/// A scheduler row: its key, its hash's fields, its job's options, the state the job ends in.
type Scheduler<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str, &'a str);

#[tokio::test]
async fn every_and_cron_schedulers_get_their_next_iteration_and_unreadable_patterns_fail() {
    let server = RedisServer::start();
    let q = queue_name("sched");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    // Start early in a second: the every-1s scheduler's next iteration is due at the next whole
    // second, and this test (a fraction of one) must be done before it, or that iteration runs
    // too (count 3: seen about once in ten runs started at a random moment).
    let now = loop {
        let n = ringback::clock::now_ms();
        if n % 1000 < 100 {
            break n;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    let slot = now - now % 1000;
    // key, the scheduler's fields, its current iteration job's opts, the state that job ends in
    let schedulers: [Scheduler; 3] = [
        // A scheduler as upsertJobScheduler stores it, and its current iteration's job.
        (
            "every-1s",
            &[
                ("name", "tick"),
                ("data", "{}"),
                ("every", "1000"),
                ("ic", "1"),
            ],
            r#"{"repeat":{"every":1000,"count":1},"repeatJobKey":"every-1s","attempts":0}"#,
            "completed",
        ),
        // A cron scheduler's job.
        (
            "cron",
            &[("name", "c"), ("pattern", "* * * * *")],
            r#"{"repeat":{"pattern":"* * * * *"},"attempts":0}"#,
            "completed",
        ),
        // A cron scheduler whose pattern Node could not parse either (hand-made data).
        (
            "bad",
            &[("name", "b"), ("pattern", "61 * * * *")],
            r#"{"repeat":{"pattern":"61 * * * *"},"attempts":0}"#,
            "failed",
        ),
    ];
    let mut ids = HashMap::new();
    for (key, fields, opts, _) in schedulers {
        let _: () = redis::pipe()
            .hset_multiple(format!("{}:{key}", k.repeat()), fields)
            .zadd(k.repeat(), key, slot)
            .query_async(&mut c)
            .await
            .unwrap();
        let id = format!("repeat:{key}:{slot}");
        add_job(
            &mut c,
            &k,
            Add {
                id: Some(&id),
                opts,
                ..Default::default()
            },
        )
        .await;
        let _: () = c.hset(k.job(&id), "rjk", key).await.unwrap();
        ids.insert(key, id);
    }

    let w = Running::start(config(&server, &q));
    for (key, _, _, end) in schedulers {
        assert_eq!(finished(&mut c, &k, &ids[key]).await, end);
    }
    w.stop().await;
    // The next slot is slot + 1s, or a later aligned one when the worker started after it passed
    // (Node skips missed slots the same way).
    let next_slot: f64 = c.zscore(k.repeat(), "every-1s").await.unwrap();
    let next_slot = next_slot as i64;
    assert!(
        next_slot > slot && next_slot % 1000 == 0,
        "{slot} -> {next_slot}"
    );
    let next = format!("repeat:every-1s:{next_slot}");
    let h = job_hash(&mut c, &k, &next).await;
    assert_eq!(
        h.get("rjk").map(String::as_str),
        Some("every-1s"),
        "next iteration created: {h:?}"
    );
    let opts: serde_json::Value = serde_json::from_str(&h["opts"]).unwrap();
    assert_eq!(opts["repeat"]["count"], 2);
    assert_eq!(opts["jobId"].as_str(), Some(next.as_str()));
    let ic: String = c
        .hget(format!("{}:every-1s", k.repeat()), "ic")
        .await
        .unwrap();
    assert_eq!(ic, "2");
    // The cron scheduler's next run is the next whole minute (cron-parser 5: no meta.version).
    let cron_next: f64 = c.zscore(k.repeat(), "cron").await.unwrap();
    let cron_next = cron_next as i64;
    assert!(
        cron_next > now && cron_next % 60_000 == 0 && cron_next - now <= 60_000,
        "{now} -> {cron_next}"
    );
    let h = job_hash(&mut c, &k, &format!("repeat:cron:{cron_next}")).await;
    let opts: serde_json::Value = serde_json::from_str(&h["opts"]).unwrap();
    assert_eq!(opts["prevMillis"], cron_next, "{opts}");
    let reason: String = c.hget(k.job(&ids["bad"]), "failedReason").await.unwrap();
    assert!(
        reason.contains("Constraint error, got value 61 expected range 0-59"),
        "{reason}"
    );
}

#[tokio::test]
async fn works_over_tls_with_a_private_ca_and_a_client_certificate() {
    let server = RedisServer::start_tls(true);
    let q = queue_name("tls");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    add_job(
        &mut c,
        &k,
        Add {
            id: Some("1"),
            data: r#"{"script":["complete"]}"#,
            ..Default::default()
        },
    )
    .await;
    let tls = ringback::store::connection::RedisTls {
        ca_file: Some(common::tls_fixture("ca.crt")),
        client_cert: Some(common::tls_fixture("client.crt")),
        client_key: Some(common::tls_fixture("client.key")),
        ..Default::default()
    };
    let cfg = WorkerConfig {
        redis_url: server.tls_url(),
        redis_tls: tls.clone(),
        ..config(&server, &q)
    };
    cfg.validate().expect("a valid TLS configuration");
    let w = Running::start(cfg);
    assert_eq!(finished(&mut c, &k, "1").await, "completed");
    w.stop().await;

    // The server's certificate must chain to the CA we trust, and a server that requires a
    // client certificate refuses a connection without one.
    let connect = |tls: ringback::store::connection::RedisTls| {
        let url = server.tls_url();
        async move {
            let client = ringback::store::connection::client(&url, &tls)?;
            ringback::store::connection::commands(&client).await?;
            Ok::<_, ringback::Error>(())
        }
    };
    assert!(connect(tls.clone()).await.is_ok());
    let other_ca = ringback::store::connection::RedisTls {
        ca_file: Some(common::tls_fixture("other-ca.crt")),
        ..tls.clone()
    };
    let err = connect(other_ca).await.expect_err("an untrusted server");
    assert!(
        err.to_string().to_lowercase().contains("certificate"),
        "{err}"
    );
    let anonymous = ringback::store::connection::RedisTls {
        client_cert: None,
        client_key: None,
        ..tls
    };
    let refused = async {
        let client = ringback::store::connection::client(&server.tls_url(), &anonymous)?;
        let mut conn = ringback::store::connection::commands(&client).await?;
        redis::cmd("PING").query_async::<String>(&mut conn).await?;
        Ok::<_, ringback::Error>(())
    };
    assert!(refused.await.is_err(), "no client certificate, no service");
}

/// The `ringback worker` binary on `q` with the scripted processor, named `rb-names`, its stderr
/// in `log`.
fn named_worker(server: &RedisServer, q: &str, log: &std::path::Path) -> std::process::Child {
    std::process::Command::new(env!("CARGO_BIN_EXE_ringback"))
        .args(["worker", "--processor", "scripted"])
        .env("RINGBACK_DRILL", "1")
        .env("REDIS_URL", server.url())
        .env("RINGBACK_QUEUE", q)
        .env("RINGBACK_WORKER_NAME", "rb-names")
        .env("RINGBACK_METRICS_LISTEN", "off")
        .env("RINGBACK_DRAIN_DELAY_MS", "300")
        .env("NO_COLOR", "1")
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// The `id=` of the client named `name` in `CLIENT LIST`, if one is.
async fn client_named(c: &mut redis::aio::MultiplexedConnection, name: &str) -> Option<String> {
    let list: String = redis::cmd("CLIENT").arg("LIST").query_async(c).await.ok()?;
    list.lines()
        .find(|l| l.split(' ').any(|f| f == format!("name={name}")))
        .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
        .map(str::to_string)
}

/// `Queue.getWorkers()` reads the blocking connection's name: when Redis drops the worker's
/// connections, the connection it makes again carries the name again.
#[tokio::test]
async fn the_worker_names_its_connection_again_after_a_reconnect() {
    use base64::Engine;
    let server = RedisServer::start();
    let q = queue_name("names");
    let k = QueueKeys::new("bull", &q);
    let name = format!(
        "bull:{}:w:rb-names",
        base64::engine::general_purpose::STANDARD.encode(&q)
    );
    let dir = tempfile::tempdir().unwrap();
    let mut child = named_worker(&server, &q, &dir.path().join("worker.log"));
    let mut c = server.conn().await;
    let first = wait_for(T, "the worker's named connection", || {
        let (mut c, name) = (c.clone(), name.clone());
        async move { client_named(&mut c, &name).await }
    })
    .await;
    let () = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut c)
        .await
        .map(|_: i64| ())
        .unwrap();
    let again = wait_for(T, "the named connection to come back", || {
        let (mut c, name, first) = (c.clone(), name.clone(), first.clone());
        async move { client_named(&mut c, &name).await.filter(|id| *id != first) }
    })
    .await;
    assert_ne!(again, first);
    let id = add_job(&mut c, &k, Add::default()).await;
    assert_eq!(finished(&mut c, &k, &id).await, "completed");
    let _ = child.kill();
    let _ = child.wait();
}

/// A Redis that refuses `CLIENT SETNAME` (a managed service's ACL): the worker says so once,
/// reconnects included, and runs.
#[tokio::test]
async fn a_redis_that_refuses_client_setname_is_warned_about_once_and_the_worker_runs() {
    let server = RedisServer::start();
    let q = queue_name("noname");
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    let () = redis::cmd("ACL")
        .arg("SETUSER")
        .arg("default")
        .arg("-client|setname")
        .query_async(&mut c)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut child = named_worker(&server, &q, &log);
    let first = add_job(&mut c, &k, Add::default()).await;
    assert_eq!(finished(&mut c, &k, &first).await, "completed");
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("TYPE")
        .arg("normal")
        .arg("SKIPME")
        .arg("yes")
        .query_async(&mut c)
        .await
        .unwrap();
    let second = add_job(&mut c, &k, Add::default()).await;
    assert_eq!(finished(&mut c, &k, &second).await, "completed");
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        text.matches("Redis refuses CLIENT SETNAME").count(),
        1,
        "{text}"
    );
}
