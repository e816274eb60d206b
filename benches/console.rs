//! The console's pages with 10,000 runs recorded: each page's p50 and p95 over 200 requests
//! through the router (`oneshot`, no socket) against a real redis-server. The runs are recorded
//! through the real scripts (tests/it/common/console.rs). Run by hand: `scripts/bench-console`
//! (RUNS=… to change the count); the figures are in docs/benchmarks.md, "The console".

#[path = "../tests/it/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::http::{Request, StatusCode};
use tower::ServiceExt;

const READ_TOKEN: &str = "read-token-0123456789";
const SAMPLES: usize = 200;

fn main() {
    let runs: usize = std::env::var("RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(bench(runs));
}

async fn bench(runs: usize) {
    let server = common::RedisServer::start();
    let reports = tempfile::tempdir().expect("temp dir");
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/drill-stall-report.json"
        ),
        reports.path().join("stall.json"),
    )
    .expect("report");
    let mut serve = common::serve_config();
    serve.tokens.read = Some(ringback::twilio::Secret::new(READ_TOKEN));
    serve.drill_reports = Some(reports.path().to_path_buf());
    let state = common::api_state_with(&server, &common::queue_name("console-bench"), serve).await;

    let t0 = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for worker in 0..32 {
        let state = state.clone();
        tasks.spawn(async move {
            let window = common::console::window(&state);
            for n in (worker..runs).step_by(32) {
                let run = format!("run-{n:05}");
                let to = format!("+1555{n:07}");
                // 90 % delivered, 5 % undelivered, 3 % open attempts, 2 % callbacks out of order
                let (sent, statuses): (bool, &[&str]) = match n % 100 {
                    0..90 => (true, &["sent", "delivered"]),
                    90..95 => (true, &["sent", "undelivered"]),
                    95..98 => (false, &[]),
                    _ => (true, &["delivered", "sent"]),
                };
                common::console::record_run(&state, &window, n, &run, &to, sent, statuses).await;
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.expect("recording task");
    }
    println!(
        "recorded {runs} runs through the real scripts in {:.1} s",
        t0.elapsed().as_secs_f64()
    );

    let router = ringback::edge::api::app(state);
    let mid = format!("/console/runs/run-{:05}", runs / 2);
    let pages = [
        ("Callbacks, page 1", "/console/callbacks".to_string()),
        (
            "Callbacks, page 100",
            "/console/callbacks?page=100".to_string(),
        ),
        (
            "Callbacks, state=undelivered",
            "/console/callbacks?state=undelivered".to_string(),
        ),
        (
            "Callbacks, search runId",
            "/console/callbacks?q=run-0424".to_string(),
        ),
        ("One run", mid),
        ("Now", "/console/now".to_string()),
        ("Drills", "/console/drills".to_string()),
    ];
    println!("{runs} runs recorded; {SAMPLES} requests per page, one at a time");
    println!("| page | p50 | p95 | max |");
    println!("|---|---|---|---|");
    for (name, path) in pages {
        let mut times = Vec::with_capacity(SAMPLES);
        for i in 0..SAMPLES + 10 {
            let req = Request::get(&path)
                .header("authorization", format!("Bearer {READ_TOKEN}"))
                .body(Body::empty())
                .expect("request");
            let t = Instant::now();
            let res = router.clone().oneshot(req).await.expect("answer");
            let status = res.status();
            let body = axum::body::to_bytes(res.into_body(), 1 << 24)
                .await
                .expect("body");
            let took = t.elapsed();
            assert_eq!(
                status,
                StatusCode::OK,
                "{path}: {}",
                String::from_utf8_lossy(&body)
            );
            if i >= 10 {
                times.push(took);
            }
        }
        times.sort();
        let at =
            |q: f64| times[((times.len() as f64 * q).ceil() as usize).clamp(1, times.len()) - 1];
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!(
            "| {name} | {} | {} | {} |",
            ms(at(0.50)),
            ms(at(0.95)),
            ms(at(1.0))
        );
    }
}
