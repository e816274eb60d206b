//! Benchmarks: pure CPU on the per-job hot path (decoding a fetched job, deciding an outcome,
//! packing a finishing script call and parsing its reply, a status callback's form and
//! signature), and the worker end to end against a real redis-server (jobs/s and Redis round trips per
//! job at concurrency 50). The side-by-side run against the Node worker is `scripts/bench`.

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use redis::Value;
use ringback::queue::calls::{Calls, FetchArgs, Fetched, Finish};
use ringback::queue::job::KeepJobs;
use ringback::queue::processor::{JobContext, Outcome, Processor};
use ringback::store::keys::{QueueKeys, WindowKeys};
use ringback::store::scripts::{By, scripts};
use ringback::{Job, Worker};
use tokio_util::sync::CancellationToken;

fn job_fields() -> Vec<(String, String)> {
    [
        ("name", "agent-callback"),
        ("data", r#"{"runId":"run-123","to":"+15005550006","body":"Build finished: 3 actions need you"}"#),
        ("opts", r#"{"attempts":5,"backoff":{"type":"exponential","delay":1000},"removeOnComplete":{"count":1000}}"#),
        ("timestamp", "1764500000000"),
        ("delay", "0"),
        ("priority", "0"),
        ("processedOn", "1764500000100"),
        ("ats", "1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

fn cpu(c: &mut Criterion) {
    let mut g = c.benchmark_group("cpu");
    g.throughput(Throughput::Elements(1));
    g.bench_function("decode_job", |b| {
        b.iter(|| Job::from_fields("42".into(), std::hint::black_box(job_fields())))
    });
    let job = Job::from_fields("42".into(), job_fields());
    g.bench_function("decide_failure", |b| {
        b.iter(|| ringback::queue::worker::decide(&job, Outcome::fail("provider said no"), 0.5))
    });
    g.bench_function("decide_completed", |b| {
        b.iter(|| {
            let f = ringback::queue::worker::decide(
                &job,
                Outcome::Completed(serde_json::json!({"ok": true})),
                0.5,
            );
            assert!(matches!(f, Finish::Completed { .. }));
        })
    });
    let data =
        r#"{"runId":"run-123","to":"+15005550006","body":"Build finished: 3 actions need you"}"#;
    g.bench_function("parse_callback", |b| {
        b.iter(|| {
            ringback::callbacks::callback::CallbackRequest::parse(std::hint::black_box(data))
                .unwrap()
        })
    });
    // A status callback as Twilio sends it: form parsing, then the signature check.
    let form = "AccountSid=AC0123456789abcdef0123456789abcdef&ApiVersion=2010-04-01&From=%2B15005550006&MessageSid=SM0123456789abcdef0123456789abcdef&MessageStatus=delivered&SmsSid=SM0123456789abcdef0123456789abcdef&SmsStatus=delivered&To=%2B15558675310";
    g.bench_function("parse_status_form", |b| {
        b.iter(|| {
            serde_urlencoded::from_str::<Vec<(String, String)>>(std::hint::black_box(form)).unwrap()
        })
    });
    let params: Vec<(String, String)> = serde_urlencoded::from_str(form).unwrap();
    let url = "https://ringback.example.com/api/notify/webhook/status?runId=run-123&attempt=t1";
    let sig = ringback::twilio::signature::sign("auth-token", url, &params);
    g.bench_function("verify_signature", |b| {
        b.iter(|| {
            assert!(ringback::twilio::signature::verify(
                "auth-token",
                url,
                std::hint::black_box(&params),
                &sig
            ))
        })
    });
    g.bench_function("encode_metrics", |b| {
        b.iter(|| ringback::edge::metrics::encode("agent-callback", vec![]))
    });
    finishing_call(&mut g);
    g.finish();
}

/// The finishing call of an SMS job, packed and parsed: the EVALSHA invocation as `Calls`
/// builds it (move_to_finished alone, and with the fused finish_sent step appended) down to the
/// bytes on the wire, and the replies that come back (the next job's 4-tuple, the prepared
/// claim). `Calls` and `Window` want a connection, so a Redis is started; nothing measured
/// here talks to it.
fn finishing_call(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    let server = common::RedisServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = rt
        .block_on(ringback::store::connection::commands(&client))
        .unwrap();
    let cmds = Calls::new(
        conn.clone(),
        QueueKeys::new("bull", "agent-callback"),
        Default::default(),
    );
    let job = Job::from_fields("42".into(), job_fields());
    let token = "3f0c9a4e-6c1b-4c59-9a51-8d0f3b0e2a17:7";
    let finish = Finish::Completed {
        returnvalue: r#"{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued"}"#.into(),
    };
    let keep = KeepJobs {
        count: 1000,
        age: None,
        limit: None,
    };
    let fetch = FetchArgs {
        token: token.into(),
        lock_ms: "30000".into(),
        name: String::new(),
        limiter_max: String::new(),
        limiter_duration: String::new(),
    };
    // what the worker does per finishing call: KEYS and ARGV as `Calls` builds them (a step's
    // appended), then the EVALSHA command down to its bytes on the wire
    type Step<'a> = Option<(
        &'static ringback::store::scripts::LuaScript,
        &'a [String],
        &'a [String],
    )>;
    let pack = |step: Step<'_>| {
        let (script, keys, args) = ringback::queue::test_support::finished_call(
            &cmds,
            std::hint::black_box(&job),
            token,
            &finish,
            keep,
            None,
            Some(&fetch),
            step,
        );
        script.command(By::Hash, &keys, &args).get_packed_command()
    };
    g.bench_function("pack_finish_args", |b| b.iter(|| pack(None)));
    // finish_sent's own keys and arguments (KEYS[15..22], ARGV[18..33]), as the SMS processor
    // hands them over; `Calls` appends them to move_to_finished's
    let prefix = "agent-callback:";
    let run = WindowKeys::new(prefix, "run-123");
    let sid = "SM0123456789abcdef0123456789abcdef";
    let step_keys = vec![
        run.claim,
        run.attempt,
        ringback::store::keys::open_attempts(prefix),
        ringback::store::keys::message_link(sid),
        run.record,
        ringback::store::keys::callback_history(prefix, "run-123"),
        ringback::store::keys::reconcile_schedule(prefix),
        ringback::store::keys::recent_runs(prefix),
    ];
    let template = WindowKeys::new(prefix, "\u{1}");
    let step_args: Vec<String> = [
        "1",
        token,
        sid,
        "86400000",
        "run-123",
        "queued",
        "60000",
        &template.claim,
        &template.attempt,
        &template.record,
        "9b2f4c1d8e7a4b3c9d0e1f2a3b4c5d6e",
        "worker-7f3a",
        "60000",
        "120000",
        "600000",
        "20000",
    ]
    .map(str::to_string)
    .to_vec();
    g.bench_function("pack_finish_sent_args", |b| {
        b.iter(|| pack(Some((&scripts().finish_sent, &step_keys, &step_args))))
    });
    // a group of ten SMS finishes as the group commit sends it: each later job as what differs
    // from the one before (its job, tokens, sid, run), packed into one finish_sent_batch call
    let (_, keys, args) = ringback::queue::test_support::finished_call(
        &cmds,
        &job,
        token,
        &finish,
        keep,
        None,
        Some(&fetch),
        Some((&scripts().finish_sent, &step_keys, &step_args)),
    );
    let group: Vec<(Vec<String>, Vec<String>)> = (0..10)
        .map(|i| {
            let vary = |v: &[String]| -> Vec<String> {
                v.iter()
                    .map(|x| {
                        x.replace("42", &format!("4{i}"))
                            .replace("run-123", &format!("run-12{i}"))
                            .replace("0123456789abcdef", &format!("0123456789abcde{i}"))
                    })
                    .collect()
            };
            (vary(&keys), vary(&args))
        })
        .collect();
    g.bench_function("pack_group_of_10_finish_sent", |b| {
        b.iter(|| {
            let (keys, args) =
                ringback::store::group_commit::batch_layout(std::hint::black_box(&group));
            scripts()
                .finish_sent_batch
                .command(By::Hash, &keys, &args)
                .get_packed_command()
        })
    });
    // move_to_finished's answer with the next job: {fields, id, 0, 0}
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    let fields = job_fields()
        .iter()
        .flat_map(|(k, v)| [bulk(k), bulk(v)])
        .collect();
    let reply = Value::Array(vec![
        Value::Array(fields),
        bulk("43"),
        Value::Int(0),
        Value::Int(0),
    ]);
    g.bench_function("parse_finish_reply", |b| {
        b.iter_batched(
            || reply.clone(),
            |reply| {
                let fetched =
                    ringback::queue::test_support::finished_reply("move_to_finished", reply);
                assert!(matches!(fetched, Ok(Ok(Fetched::Job(_)))));
            },
            BatchSize::SmallInput,
        )
    });
    // the claim finish_sent made for the fetched job: window_claim's reply, then the runId
    let window = ringback::callbacks::window::Window::new(
        conn,
        Default::default(),
        prefix.into(),
        ringback::callbacks::window::WindowTimes {
            pending_ttl: Duration::from_secs(60),
            lease: Duration::from_secs(600),
            sent_ttl: Duration::from_secs(86_400),
            hold: Duration::from_secs(120),
            poll_after: Duration::from_secs(60),
            replay_for: Duration::from_millis(500),
            lost_writes_window: Duration::from_secs(120),
        },
    );
    let claim = Value::Array(
        [
            "claimed",
            "9b2f4c1d8e7a4b3c9d0e1f2a3b4c5d6e",
            "1764500000123",
            "run-124",
        ]
        .map(bulk)
        .to_vec(),
    );
    g.bench_function("parse_claim_reply", |b| {
        b.iter_batched(
            || claim.clone(),
            |claim| {
                let mut reply: Vec<String> = redis::from_redis_value(claim).unwrap();
                let _run_id = reply.pop();
                let claim = window.read_claim(&reply).unwrap();
                assert!(matches!(
                    claim,
                    ringback::callbacks::window::Claim::Claimed { .. }
                ));
            },
            BatchSize::SmallInput,
        )
    });
    drop(server);
}

/// Completes at once: measures the worker and Redis, not the work.
struct Noop;
impl Processor for Noop {
    async fn process(&self, _job: &Job, _ctx: &JobContext) -> Outcome {
        Outcome::Completed(serde_json::Value::Null)
    }
}

const JOBS: u64 = 2_000;

fn end_to_end(c: &mut Criterion) {
    let server = common::RedisServer::start();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut g = c.benchmark_group("worker");
    g.throughput(Throughput::Elements(JOBS));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let mut trips_per_job = vec![];
    g.bench_function("noop_concurrency_50", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let queue = common::queue_name("bench");
                    let keys = QueueKeys::new("bull", &queue);
                    let mut conn = server.conn().await;
                    for _ in 0..JOBS {
                        common::add_job(
                            &mut conn,
                            &keys,
                            common::Add {
                                opts: r#"{"attempts":0,"removeOnComplete":{"count":1000}}"#,
                                ..Default::default()
                            },
                        )
                        .await;
                    }
                    let mut cfg = common::config(&server, &queue);
                    cfg.concurrency = 50;
                    let worker = Worker::new(cfg, Noop).unwrap();
                    let trips = worker.round_trips();
                    let cancel = CancellationToken::new();
                    let start = Instant::now();
                    let handle = tokio::spawn(worker.run(cancel.clone()));
                    loop {
                        let done: u64 = redis::cmd("ZCARD")
                            .arg(keys.completed())
                            .query_async(&mut conn)
                            .await
                            .unwrap();
                        let left: u64 = redis::cmd("LLEN")
                            .arg(keys.wait())
                            .query_async(&mut conn)
                            .await
                            .unwrap();
                        let active: u64 = redis::cmd("LLEN")
                            .arg(keys.active())
                            .query_async(&mut conn)
                            .await
                            .unwrap();
                        if left == 0 && active == 0 && done >= 1000 {
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    total += start.elapsed();
                    cancel.cancel();
                    let _ = handle.await;
                    trips_per_job.push(trips.get() as f64 / JOBS as f64);
                }
                total
            })
        })
    });
    g.finish();
    if !trips_per_job.is_empty() {
        let mean = trips_per_job.iter().sum::<f64>() / trips_per_job.len() as f64;
        println!(
            "worker/noop_concurrency_50: {mean:.2} Redis round trips per job (scripts + blocking waits)"
        );
    }
}

criterion_group!(benches, cpu, end_to_end);
criterion_main!(benches);
