//! The group commit's scripts: one `finish_sent_batch` call leaves exactly what the
//! same `finish_sent` calls one after another leave — every key Node reads (jobs, lists, sets,
//! events, marker) and every key of the window (claims, attempt records, callback records and
//! history, the indexes) — and one `move_to_finished_batch` call what the same
//! `move_to_finished` calls leave, on a real redis-server, two identical queues side by side.

use crate::common;

use std::collections::BTreeMap;

use common::{Add, RedisServer, add_job};
use redis::AsyncCommands;
use ringback::queue::calls::{Calls, FetchArgs, Fetched, Finish};
use ringback::queue::job::KeepJobs;
use ringback::store::group_commit::batch_layout;
use ringback::store::keys::{QueueKeys, WindowKeys};
use ringback::store::scripts::{RoundTrips, scripts};

const FINISHING: usize = 3;
const WAITING: usize = 5;
/// The worker's clock in every call's ARGV[2], the same on both sides.
const NOW: &str = "1764567890123";

/// One side: its queue `q<side>` and claim prefix `<side>:`, jobs added and three of them taken.
struct Side {
    cmds: Calls,
    prefix: String,
    active: Vec<(ringback::Job, String)>,
}

async fn side(server: &RedisServer, name: &str) -> Side {
    let keys = QueueKeys::new("bull", &format!("q{name}"));
    let mut c = server.conn().await;
    for i in 0..FINISHING + WAITING {
        let data = serde_json::json!({"runId": format!("run{i}"), "to": "+15550001111",
            "body": format!("Run run{i} finished")})
        .to_string();
        add_job(
            &mut c,
            &keys,
            Add {
                id: Some(&format!("{}", i + 1)),
                data: &data,
                opts: r#"{"attempts":3}"#,
                ..Default::default()
            },
        )
        .await;
    }
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let cmds = Calls::new(conn, keys, Default::default());
    let mut active = vec![];
    for i in 0..FINISHING {
        let token = format!("t:{i}");
        match cmds.move_to_active(&fetch(&token)).await.unwrap() {
            Fetched::Job(job) => active.push((*job, token)),
            other => panic!("{other:?}"),
        }
    }
    Side {
        cmds,
        prefix: format!("{name}:"),
        active,
    }
}

fn fetch(token: &str) -> FetchArgs {
    FetchArgs {
        token: token.into(),
        lock_ms: "30000".into(),
        name: "w".into(),
        limiter_max: String::new(),
        limiter_duration: String::new(),
    }
}

/// Each finishing job's finish_sent KEYS and ARGV: its run's sent marker, its completion, the
/// next job's fetch and that job's claim (laid out as crates/callbacks/src/sms/fused.rs does); or,
/// without `step`, its plain move_to_finished KEYS and ARGV (completion and fetch).
fn calls(s: &Side, step: bool) -> Vec<(Vec<String>, Vec<String>)> {
    let p = &s.prefix;
    s.active
        .iter()
        .enumerate()
        .map(|(i, (job, token))| {
            let run = format!("run{}", job.id.parse::<usize>().unwrap() - 1);
            let sid = format!("SM{}{i}", p.trim_end_matches(':'));
            let k = WindowKeys::new(p, &run);
            let step_keys = [
                k.claim,
                k.attempt,
                ringback::store::keys::open_attempts(p),
                ringback::store::keys::message_link(&sid),
                k.record,
                ringback::store::keys::callback_history(p, &run),
                ringback::store::keys::reconcile_schedule(p),
                ringback::store::keys::recent_runs(p),
            ];
            let t = WindowKeys::new(p, "\u{1}");
            let step_args: Vec<String> = [
                "1",
                &format!("old{i}"),
                &sid,
                "86400000",
                &run,
                "queued",
                "60000",
                &t.claim,
                &t.attempt,
                &t.record,
                &format!("new{i}"),
                "worker-1",
                "30000",
                "60000",
                "600000",
                "20000",
                "5000",
                "\nagent-callback\n",
            ]
            .map(str::to_string)
            .to_vec();
            let finish = Finish::Completed {
                returnvalue: format!("{{\"n\":{i}}}"),
            };
            let fetch = fetch(token);
            let (_, keys, mut args) = ringback::queue::test_support::finished_call(
                &s.cmds,
                job,
                token,
                &finish,
                KeepJobs::KEEP_ALL,
                None,
                Some(&fetch),
                step.then_some((&scripts().finish_sent, &step_keys[..], &step_args[..])),
            );
            args[1] = NOW.to_string();
            (keys, args)
        })
        .collect()
}

/// Everything in Redis that belongs to `side`, with the side's name taken out of key names and
/// values, and Redis's own times (the window's) and stream ids masked.
async fn dump(c: &mut redis::aio::MultiplexedConnection, side: &str) -> BTreeMap<String, String> {
    let all: Vec<String> = c.keys("*").await.unwrap();
    let ts = regex::Regex::new(r"1[0-9]{12}(\.[0-9]+)?").unwrap();
    let norm = |v: &str| ts.replace_all(&v.replace(side, "SIDE"), "<t>").to_string();
    let mut out = BTreeMap::new();
    for key in all.into_iter().filter(|k| k.contains(side)) {
        let kind: String = redis::cmd("TYPE").arg(&key).query_async(c).await.unwrap();
        let value = match kind.as_str() {
            "string" => c.get::<_, String>(&key).await.unwrap(),
            "hash" => {
                let h: BTreeMap<String, String> = c.hgetall(&key).await.unwrap();
                format!("{h:?}")
            }
            "list" => format!(
                "{:?}",
                c.lrange::<_, Vec<String>>(&key, 0, -1).await.unwrap()
            ),
            "set" => {
                let mut m: Vec<String> = c.smembers(&key).await.unwrap();
                m.sort();
                format!("{m:?}")
            }
            "zset" => {
                let z: Vec<(String, f64)> = c.zrange_withscores(&key, 0, -1).await.unwrap();
                format!("{z:?}")
            }
            "stream" => {
                let r: redis::streams::StreamRangeReply = c.xrange_all(&key).await.unwrap();
                let entries: Vec<BTreeMap<String, String>> = r
                    .ids
                    .iter()
                    .map(|e| {
                        e.map
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.clone(),
                                    redis::from_redis_value::<String>(v.clone()).unwrap(),
                                )
                            })
                            .collect()
                    })
                    .collect();
                format!("{entries:?}")
            }
            other => panic!("{key}: {other}"),
        };
        out.insert(norm(&key), norm(&value));
    }
    out
}

#[tokio::test]
async fn one_batch_call_leaves_what_the_same_calls_in_turn_leave() {
    let server = RedisServer::start();
    let (a, b) = (side(&server, "alpha").await, side(&server, "bravo").await);
    let mut conn = a.cmds.connection();
    let trips = RoundTrips::default();

    // alpha: one call for the three finishes
    let parts = calls(&a, true);
    let (nk, na) = (parts[0].0.len(), parts[0].1.len());
    let (keys, args) = batch_layout(&parts);
    // each later job sends only what differs from the job before it
    assert!(
        keys.len() < nk * FINISHING && args.len() < 3 + na * FINISHING,
        "{keys:?} {args:?}"
    );
    let batch: Vec<redis::Value> = scripts()
        .finish_sent_batch
        .run(&mut conn, &trips, &keys, &args)
        .await
        .unwrap();
    // bravo: the same three finishes, one call each
    let mut single = vec![];
    for (k, v) in calls(&b, true) {
        let reply: redis::Value = scripts()
            .finish_sent
            .run(&mut conn, &trips, &k, &v)
            .await
            .unwrap();
        single.push(reply);
    }
    assert_eq!(batch.len(), FINISHING);
    let shape = |v: &redis::Value| {
        format!("{v:?}")
            .replace("alpha", "SIDE")
            .replace("bravo", "SIDE")
    };
    let ts = regex::Regex::new(r"1[0-9]{12}").unwrap();
    for (x, y) in batch.iter().zip(&single) {
        assert_eq!(
            ts.replace_all(&shape(x), "<t>"),
            ts.replace_all(&shape(y), "<t>"),
            "each job's reply"
        );
        // every finishing job fetched a next job and claimed its run
        let redis::Value::Array(parts) = x else {
            panic!("{x:?}")
        };
        assert!(
            matches!(&parts[2], redis::Value::Array(c) if !c.is_empty()),
            "{x:?}"
        );
    }

    let mut c = server.conn().await;
    let (da, db) = (dump(&mut c, "alpha").await, dump(&mut c, "bravo").await);
    assert!(da.len() > 20, "{da:#?}");
    assert_eq!(da, db);

    // a layout that does not match its counts is refused, and nothing is written
    let err = scripts()
        .finish_sent_batch
        .run::<_, redis::Value, _, _>(&mut conn, &trips, &keys[..nk], &args)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("layout"), "{err}");
    // so is a job's spec naming a position past its layout
    let mut bad = args.clone();
    let spec = 3 + na; // the second job's spec (0-based: after ARGV[1..3] and the first job's)
    assert!(bad[spec].contains('|'), "{bad:?}");
    bad[spec] = format!("{}|", nk + 1);
    let err = scripts()
        .finish_sent_batch
        .run::<_, redis::Value, _, _>(&mut conn, &trips, &keys, &bad)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("bad spec"), "{err}");
    assert_eq!(
        dump(&mut c, "alpha").await,
        da,
        "nothing written by a refused layout"
    );
}

#[tokio::test]
async fn one_plain_batch_call_leaves_what_the_same_calls_in_turn_leave() {
    let server = RedisServer::start();
    let (a, b) = (side(&server, "alpha").await, side(&server, "bravo").await);
    let mut conn = a.cmds.connection();
    let trips = RoundTrips::default();
    let (keys, args) = batch_layout(&calls(&a, false));
    let batch: Vec<redis::Value> = scripts()
        .move_to_finished_batch
        .run(&mut conn, &trips, &keys, &args)
        .await
        .unwrap();
    let mut single = vec![];
    for (k, v) in calls(&b, false) {
        let reply: redis::Value = scripts()
            .move_to_finished
            .run(&mut conn, &trips, &k, &v)
            .await
            .unwrap();
        single.push(reply);
    }
    let ts = regex::Regex::new(r"1[0-9]{12}").unwrap();
    let shape = |v: &redis::Value| {
        let s = format!("{v:?}")
            .replace("alpha", "SIDE")
            .replace("bravo", "SIDE");
        ts.replace_all(&s, "<t>").to_string()
    };
    assert_eq!(
        batch.iter().map(shape).collect::<Vec<_>>(),
        single.iter().map(shape).collect::<Vec<_>>()
    );
    assert!(
        batch.iter().all(|r| matches!(r, redis::Value::Array(_))),
        "each finish fetched a next job: {batch:?}"
    );
    let mut c = server.conn().await;
    let (da, db) = (dump(&mut c, "alpha").await, dump(&mut c, "bravo").await);
    assert!(da.len() > 10, "{da:#?}");
    assert_eq!(da, db);
}

/// A group's call that fails (here: a "batch" script that cannot run the group) is not the
/// jobs' answer: each job's own call is sent on its own, and each caller gets that call's answer.
#[tokio::test]
async fn a_failed_group_call_sends_each_job_on_its_own() {
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let cmds = Calls::new(
        conn.clone(),
        QueueKeys::new("bull", "qfallback"),
        Default::default(),
    );
    cmds.ensure_scripts().await.unwrap();
    let trips = std::sync::Arc::new(RoundTrips::default());
    let group = std::sync::Arc::new(ringback::store::group_commit::GroupCommit::start(
        conn,
        trips.clone(),
        ringback::store::group_commit::IN_FLIGHT,
    ));
    let finish = Finish::Completed {
        returnvalue: "null".into(),
    };
    let mut tasks = vec![];
    for i in 0..10 {
        // finishes of jobs that do not exist: move_to_finished answers -1 (job missing)
        let job = ringback::Job::from_fields(format!("missing{i}"), vec![]);
        let (script, keys, args) = ringback::queue::test_support::finished_call(
            &cmds,
            &job,
            "t",
            &finish,
            KeepJobs::KEEP_ALL,
            None,
            None,
            None,
        );
        let group = group.clone();
        // window_index is no batch script: the group's call answers no list of replies
        tasks.push(tokio::spawn(async move {
            group.run(script, &scripts().window_index, keys, args).await
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap().unwrap(), redis::Value::Int(-1));
    }
    // the ten calls queued while the task was not running: one group call, then ten on their own
    assert_eq!(
        trips.get(),
        11,
        "one failed group call, then one call per job"
    );
}
