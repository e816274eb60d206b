//! What one status callback costs Redis (the webhook's target: one call per callback that
//! carries its runId, ≤ 20 µs of Redis CPU). Not a pass/fail test: run it by hand,
//! `cargo test --release --test webhook_cost -- --ignored --nocapture` (`WEBHOOK_RUNS=n`, default
//! 2,000 runs × 3 callbacks), and it prints round trips, Redis commands and Redis main-thread CPU
//! per callback, read from the server (`INFO cpu`, `INFO stats`) around the measured requests.

use crate::common;

use std::sync::Arc;
use std::time::Instant;

use axum::http::StatusCode;
use common::api::*;
use common::{RedisServer, queue_name};
use tower::ServiceExt;

async fn info(c: &mut redis::aio::MultiplexedConnection, section: &str, field: &str) -> f64 {
    let text: String = redis::cmd("INFO")
        .arg(section)
        .query_async(c)
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("INFO {section} has no {field}"))
}

async fn redis_cpu(c: &mut redis::aio::MultiplexedConnection) -> f64 {
    info(c, "cpu", "used_cpu_user_main_thread").await
        + info(c, "cpu", "used_cpu_sys_main_thread").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement: run by hand with --ignored --nocapture"]
async fn webhook_redis_cost() {
    let runs: usize = std::env::var("WEBHOOK_RUNS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2000);
    let server = RedisServer::start();
    let q = queue_name("webhook-cost");
    let state = state(&server, &q).await;
    let router = ringback::edge::api::app(state.clone());
    let sid = |i: usize| format!("SM{i:032x}");
    // the send path's records first (not measured): each run's message marked sent
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let window = ringback::callbacks::window::Window::new(
        conn,
        Default::default(),
        "agent-callback:".into(),
        ringback::callbacks::window::WindowTimes {
            pending_ttl: std::time::Duration::from_secs(60),
            lease: std::time::Duration::from_secs(600),
            sent_ttl: std::time::Duration::from_secs(3600),
            hold: std::time::Duration::from_secs(120),
            poll_after: std::time::Duration::from_secs(60),
            replay_for: std::time::Duration::from_millis(500),
            lost_writes_window: std::time::Duration::from_secs(120),
        },
    );
    for i in 0..runs {
        let run = format!("w{i}");
        let claim = window
            .claim(&run, "t", None, "j", "w", "+15558675310", "", "b")
            .await
            .unwrap();
        assert!(matches!(
            claim,
            ringback::callbacks::window::Claim::Claimed { .. }
        ));
        window
            .mark_sent(
                &run,
                "t",
                &sid(i),
                "queued",
                ringback::callbacks::window::Marked::Sent,
            )
            .await
            .unwrap();
    }
    let requests: Vec<_> = (0..runs)
        .flat_map(|i| {
            ["queued", "sent", "delivered"].map(|status| {
                let path = format!("/api/notify/webhook/status?runId=w{i}&attempt=t");
                let s = sid(i);
                let params = [
                    ("MessageSid", s.as_str()),
                    ("SmsSid", s.as_str()),
                    ("MessageStatus", status),
                    ("SmsStatus", status),
                    ("AccountSid", "AC0123456789abcdef0123456789abcdef"),
                ];
                callback(&path, &params, Some(&format!("tok-{i}-{status}")))
            })
        })
        .collect();
    let n = requests.len();
    let mut c = server.conn().await;
    let trips0 = state.receipts.round_trips();
    let cmds0 = info(&mut c, "stats", "total_commands_processed").await;
    let cpu0 = redis_cpu(&mut c).await;
    let started = Instant::now();
    // 50 at a time, in order per run (each run's three statuses in one task)
    let router = Arc::new(router);
    let mut tasks = tokio::task::JoinSet::new();
    let mut chunks = requests.into_iter().collect::<Vec<_>>();
    let per = n.div_ceil(50);
    while !chunks.is_empty() {
        let batch: Vec<_> = chunks.drain(..per.min(chunks.len())).collect();
        let router = router.clone();
        tasks.spawn(async move {
            for req in batch {
                let resp = (*router).clone().oneshot(req).await.unwrap();
                assert_eq!(resp.status(), StatusCode::OK);
            }
        });
    }
    while let Some(t) = tasks.join_next().await {
        t.unwrap();
    }
    let took = started.elapsed();
    let cpu = redis_cpu(&mut c).await - cpu0;
    // (the five INFO calls of the reading itself are in it: negligible)
    let cmds = info(&mut c, "stats", "total_commands_processed").await - cmds0;
    let trips = state.receipts.round_trips() - trips0;
    println!(
        "webhook: {n} status callbacks (runId in the URL) in {:.2} s: {:.0}/s in-process; \
         {:.2} Redis round trips, {:.1} Redis commands (inside scripts included), \
         {:.1} µs Redis main-thread CPU per callback",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64(),
        trips as f64 / n as f64,
        cmds / n as f64,
        cpu * 1e6 / n as f64,
    );
    let record = record(&state, "w0").await;
    assert_eq!(record.status.as_deref(), Some("delivered"));
}
