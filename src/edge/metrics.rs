//! The worker's own small HTTP listener (`--metrics-listen`): `/metrics` in Prometheus' text
//! format, `/healthz`, `/readyz`. Counters are read from the worker and the window; nothing is
//! computed per scrape beyond formatting.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use crate::commands::Commands;
use crate::scripts::RoundTrips;
use crate::worker::WorkerStats;

/// What `/metrics` reports.
pub struct Metrics {
    pub queue: String,
    pub stats: Arc<WorkerStats>,
    pub trips: Arc<RoundTrips>,
    /// For `/readyz`.
    pub commands: Commands,
    /// The SMS processor's attempt counters, when it is the processor.
    pub sms: Option<Arc<crate::sms::SmsStats>>,
}

pub fn app(m: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(m)
}

async fn metrics(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    let q = &m.queue;
    let line = |name: &str, kind: &str, help: &str, v: u64| {
        format!("# HELP {name} {help}\n# TYPE {name} {kind}\n{name}{{queue=\"{q}\"}} {v}\n")
    };
    let body = [
        line(
            "ringback_attempts_finished_total",
            "counter",
            "Attempts whose outcome was recorded.",
            m.stats.finished.load(Ordering::Relaxed),
        ),
        line(
            "ringback_lock_lost_total",
            "counter",
            "Finishing calls refused: the lock was no longer ours.",
            m.stats.lock_lost.load(Ordering::Relaxed),
        ),
        line(
            "ringback_attempts_running",
            "gauge",
            "Attempts running now.",
            m.stats.running.load(Ordering::Relaxed),
        ),
        line(
            "ringback_redis_round_trips_total",
            "counter",
            "Redis round trips of the queue core.",
            m.trips.get(),
        ),
        line(
            "ringback_window_overruns_total",
            "counter",
            "Sent markers written after the claim had expired or changed hands.",
            crate::window::window_overruns(),
        ),
    ]
    .concat();
    let body = match &m.sms {
        Some(sms) => body + &sms.render(q),
        None => body,
    };
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], body)
}

async fn readyz(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    if let Some(why) = m.sms.as_ref().and_then(|s| s.not_ready()) {
        return (StatusCode::SERVICE_UNAVAILABLE, why);
    }
    match m.commands.ensure_scripts().await {
        Ok(_) => (StatusCode::OK, "ready".to_string()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("redis unreachable: {e}"),
        ),
    }
}

/// Serve until `cancel`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    m: Arc<Metrics>,
    cancel: tokio_util::sync::CancellationToken,
) {
    if let Err(e) = axum::serve(listener, app(m))
        .with_graceful_shutdown(cancel.cancelled_owned())
        .await
    {
        tracing::error!(error = %e, "metrics listener failed");
    }
}
