//! Benchmarks: pure CPU on the per-job hot path (decoding a fetched job, deciding an outcome),
//! and the worker end to end against a real redis-server (jobs/s and Redis round trips per
//! job at concurrency 50). The side-by-side run against the Node worker is `scripts/bench`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ringback::commands::Finish;
use ringback::keys::QueueKeys;
use ringback::processor::{JobContext, Outcome, Processor};
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
        b.iter(|| ringback::worker::decide(&job, Outcome::fail("provider said no"), 0.5))
    });
    g.bench_function("decide_completed", |b| {
        b.iter(|| {
            let f = ringback::worker::decide(
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
        b.iter(|| ringback::callback::CallbackRequest::parse(std::hint::black_box(data)).unwrap())
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
        b.iter(|| ringback::metrics::encode("agent-callback", vec![]))
    });
    g.finish();
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
