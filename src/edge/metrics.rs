//! Prometheus exposition, one registry for the worker (`--metrics-listen`: `/metrics`,
//! `/healthz`, `/readyz`) and for `ringback serve`'s `/metrics`: the process's labelled families
//! ([`crate::telemetry`]) and the counters a worker instance keeps, read at scrape time, encoded
//! by `prometheus-client` (label values escaped by the library) with a `queue` label on every
//! series. Nothing is computed per scrape beyond a readiness check; the Redis-derived gauges
//! (open attempts, delayed, receipts) are refreshed by the sweep.
//!
//! `/readyz` and `/metrics` never show internal error text: a reason names the part that is not
//! ready; the error itself goes to the log, at most once per [`READY_LOG_EVERY`].

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;

use crate::callbacks::sms::{SmsEvent, SmsStats};
use crate::queue::calls::Calls;
use crate::queue::worker::WorkerStats;
use crate::store::scripts::RoundTrips;

/// Readiness failures are logged at most this often (milliseconds).
pub const READY_LOG_EVERY: i64 = 30_000;

/// The exposition: the process's families, then `collectors`, each series labelled `queue`.
pub fn encode(queue: &str, collectors: Vec<Box<dyn Collector>>) -> String {
    let mut registry = Registry::with_labels(std::iter::once((
        Cow::Borrowed("queue"),
        Cow::Owned(queue.to_string()),
    )));
    let t = crate::telemetry::global().clone();
    registry.register(
        "ringback_twilio_request_duration_seconds",
        "Twilio API calls by operation (create, fetch, list), answered or not",
        t.twilio_seconds,
    );
    registry.register(
        "ringback_twilio_errors",
        "Twilio API calls that failed, by Twilio error code (http_<status> without one; connect, no_answer, transport without an answer)",
        t.twilio_errors,
    );
    registry.register(
        "ringback_delivery_errors",
        "Messages whose delivery ended failed (failed, undelivered), by the error code Twilio reported; once per message",
        t.delivery_errors,
    );
    registry.register(
        "ringback_escalations",
        "Escalations this process created, by reason",
        t.escalations,
    );
    registry.register(
        "ringback_ladder_steps",
        "Escalation ladders' steps by channel and outcome (call placed, skipped, answered, not_answered; text queued), and their ends (ladder acknowledged, unacknowledged)",
        t.ladder_steps,
    );
    registry.register(
        "ringback_http_responses",
        "Responses of ringback serve by route and status",
        t.http_responses,
    );
    registry.register(
        "ringback_status_callbacks",
        "Signed status callbacks by what they did to the record",
        t.status_callbacks,
    );
    registry.register(
        "ringback_inbound_messages",
        "Signed inbound messages by what they answered (answer, late, ambiguous, unmatched, opt_out) or repeat",
        t.inbound_messages,
    );
    registry.register(
        "ringback_inbound_forwards",
        "Forwards of inbound messages that answered no question, by outcome (ok, refused, error)",
        t.inbound_forwards,
    );
    registry.register(
        "ringback_sends_enqueued",
        "Legacy send calls by whether they enqueued a job",
        t.sends_enqueued,
    );
    registry.register(
        "ringback_bad_signatures",
        "Status callbacks and inbound messages refused for a missing or wrong signature",
        t.bad_signatures,
    );
    registry.register(
        "ringback_rate_limited",
        "Send calls refused by a rate limit, by scope (token, destination)",
        t.rate_limited,
    );
    registry.register(
        "ringback_redis_errors",
        "Script calls Redis refused or did not answer, by script and kind (oom, readonly, io, timeout, ...)",
        t.redis_errors,
    );
    for (name, help, family) in [
        (
            "bullmq_jobs_completed",
            "Number of jobs completed (BullMQ's bullmq.jobs.completed)",
            t.bullmq_completed,
        ),
        (
            "bullmq_jobs_failed",
            "Number of jobs failed (BullMQ's bullmq.jobs.failed)",
            t.bullmq_failed,
        ),
        (
            "bullmq_jobs_delayed",
            "Number of jobs delayed (BullMQ's bullmq.jobs.delayed)",
            t.bullmq_delayed,
        ),
        (
            "bullmq_jobs_retried",
            "Number of jobs retried (BullMQ's bullmq.jobs.retried)",
            t.bullmq_retried,
        ),
    ] {
        registry.register(name, help, family);
    }
    registry.register(
        "bullmq_job_duration_seconds",
        "Job processing duration (BullMQ's bullmq.job.duration, in seconds)",
        t.bullmq_duration,
    );
    for c in collectors {
        registry.register_collector(c);
    }
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry) {
        tracing::error!(error = %e, "metrics could not be encoded");
    }
    out
}

/// The `Content-Type` of [`encode`]'s output.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

fn counter(enc: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> fmt::Result {
    let c = ConstCounter::new(v);
    c.encode(enc.encode_descriptor(name, help, None, MetricType::Counter)?)
}

fn gauge(enc: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> fmt::Result {
    ConstGauge::new(v).encode(enc.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

/// `ringback_ready`: 1 when `/readyz` says ready.
#[derive(Debug)]
pub struct Ready(pub bool);

impl Collector for Ready {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        gauge(
            &mut enc,
            "ringback_ready",
            "1 when /readyz answers ready, 0 when not.",
            f64::from(u8::from(self.0)),
        )
    }
}

/// A worker's own counters.
#[derive(Debug)]
pub struct WorkerCollector {
    /// The worker's counters: attempts finished and running, locks lost.
    pub stats: Arc<WorkerStats>,
    /// Redis round trips of the queue core.
    pub trips: Arc<RoundTrips>,
}

impl Collector for WorkerCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = &self.stats;
        counter(
            &mut enc,
            "ringback_attempts_finished",
            "Attempts whose outcome was recorded.",
            s.finished.load(Ordering::Relaxed),
        )?;
        counter(
            &mut enc,
            "ringback_lock_lost",
            "Finishing calls refused: the lock was no longer ours.",
            s.lock_lost.load(Ordering::Relaxed),
        )?;
        gauge(
            &mut enc,
            "ringback_attempts_running",
            "Attempts running now.",
            s.running.load(Ordering::Relaxed) as f64,
        )?;
        counter(
            &mut enc,
            "ringback_redis_round_trips",
            "Redis round trips of the queue core (divide by attempts finished for trips per job).",
            self.trips.get(),
        )?;
        counter(
            &mut enc,
            "ringback_window_overruns",
            "Sent markers written after the claim had expired or changed hands.",
            crate::callbacks::window::window_overruns(),
        )?;
        counter(
            &mut enc,
            "ringback_replica_wait_timeouts",
            "Claims and sent markers whose WAIT came back with fewer replicas than asked for (a failover then could lose them).",
            crate::store::replicas::replica_wait_timeouts(),
        )?;
        gauge(
            &mut enc,
            "ringback_redis_replicas_silent",
            "Replicas connected to the Redis endpoint that have not acknowledged its writes within 10 s, as last read: writes do not wait for them, and a failover to one could lose the latest writes.",
            crate::store::replicas::silent_replicas() as f64,
        )?;
        counter(
            &mut enc,
            "ringback_aof_wait_timeouts",
            "Claims not in Redis's append-only file on disk in time (WAITAOF, RINGBACK_REDIS_WAIT_AOF): each one's send was held.",
            crate::store::replicas::aof_wait_timeouts(),
        )
    }
}

/// The SMS processor's counters and the gauges the sweep refreshes from Redis (so every replica
/// reports the same values).
#[derive(Debug)]
pub struct SmsCollector(pub Arc<SmsStats>);

impl Collector for SmsCollector {
    fn encode(&self, mut enc: DescriptorEncoder) -> fmt::Result {
        let s = &self.0;
        {
            let mut family = enc.encode_descriptor(
                "ringback_sms_attempts",
                "Callback attempts by what they did.",
                None,
                MetricType::Counter,
            )?;
            for e in SmsEvent::ALL {
                ConstCounter::new(s.get(e))
                    .encode(family.encode_family(&[("outcome", e.label())])?)?;
            }
        }
        let load = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed) as f64;
        gauge(
            &mut enc,
            "ringback_open_attempts",
            "Callback attempts whose outcome is not resolved yet (from Redis).",
            load(&s.open_attempts),
        )?;
        gauge(
            &mut enc,
            "ringback_open_attempt_oldest_age_seconds",
            "Age of the oldest unresolved attempt (from Redis).",
            load(&s.oldest_open_ms) / 1000.0,
        )?;
        gauge(
            &mut enc,
            "ringback_twilio_auth_refused",
            "1 while Twilio refuses this worker's credentials.",
            f64::from(u8::from(s.auth_refused_since.load(Ordering::Relaxed) != 0)),
        )?;
        gauge(
            &mut enc,
            "ringback_deployment_fault",
            "1 while Twilio refuses creates for a fault of this deployment (a sender the account does not own, a missing Messaging Service): every callback is held, none failed.",
            f64::from(u8::from(s.holds.deployment().is_some())),
        )?;
        gauge(
            &mut enc,
            "ringback_other_jobs_oldest_wait_seconds",
            "Age of the oldest job of a name not a callback's (RINGBACK_CALLBACK_JOB_NAMES) this worker handed back in the last minute: one that keeps coming back has no worker of its own taking it.",
            s.oldest_other_job_ms() as f64 / 1000.0,
        )?;
        gauge(
            &mut enc,
            "ringback_destinations_held",
            "Destinations (country calling codes) whose callbacks are held because Twilio refuses to text them from this account (geo permissions, a trial account).",
            s.holds.destinations_held() as f64,
        )?;
        {
            let delayed = load(&s.delayed);
            let retry = load(&s.open_retry);
            let in_doubt = load(&s.open_in_doubt);
            let mut family = enc.encode_descriptor(
                "ringback_delayed_callbacks",
                "Jobs waiting in the delayed set, by why: retry (released for another attempt), in_doubt (an earlier send being resolved), other (backoff, or delayed by the producer).",
                None,
                MetricType::Gauge,
            )?;
            for (reason, v) in [
                ("retry", retry),
                ("in_doubt", in_doubt),
                ("other", (delayed - retry - in_doubt).max(0.0)),
            ] {
                ConstGauge::new(v).encode(family.encode_family(&[("reason", reason)])?)?;
            }
        }
        gauge(
            &mut enc,
            "ringback_reconcile_backlog",
            "Sent messages waiting for their final receipt.",
            load(&s.reconcile_backlog),
        )?;
        gauge(
            &mut enc,
            "ringback_receipts_missing",
            "Of those, sent longer ago than the delivery deadline (sampled).",
            load(&s.receipts_missing),
        )
    }
}

/// What the worker's `/metrics` reports.
#[derive(Debug)]
pub struct Metrics {
    /// The queue's name: the `queue` label on every series.
    pub queue: String,
    /// The worker's counters: attempts finished and running, locks lost.
    pub stats: Arc<WorkerStats>,
    /// Redis round trips of the queue core.
    pub trips: Arc<RoundTrips>,
    /// For `/readyz`.
    pub commands: Calls,
    /// The SMS processor's attempt counters, when it is the processor.
    pub sms: Option<Arc<SmsStats>>,
    /// When a readiness failure was last logged (ms).
    pub logged_at: AtomicI64,
}

impl Metrics {
    /// The worker's metrics from its counters; `sms` only for the SMS processor.
    pub fn new(
        queue: String,
        stats: Arc<WorkerStats>,
        trips: Arc<RoundTrips>,
        commands: Calls,
        sms: Option<Arc<SmsStats>>,
    ) -> Self {
        Self {
            queue,
            stats,
            trips,
            commands,
            sms,
            logged_at: AtomicI64::new(0),
        }
    }

    /// Why the worker is not ready (a reason for people, no internal error text), or `None`.
    async fn not_ready(&self) -> Option<String> {
        if let Some(why) = self.sms.as_ref().and_then(|s| s.not_ready()) {
            return Some(why);
        }
        match self.commands.ensure_scripts().await {
            Ok(_) => None,
            Err(e) => {
                log_rarely(&self.logged_at, |elapsed| {
                    tracing::warn!(error = %e, suppressed_for_ms = elapsed, "not ready: redis unreachable");
                });
                Some("redis unreachable".into())
            }
        }
    }
}

/// Run `log` unless it ran in the last [`READY_LOG_EVERY`] ms (per `at`).
pub fn log_rarely(at: &AtomicI64, log: impl FnOnce(i64)) {
    let now = crate::clock::now_ms();
    let last = at.load(Ordering::Relaxed);
    if now - last >= READY_LOG_EVERY
        && at
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        log(if last == 0 { 0 } else { now - last });
    }
}

/// The worker's router: `/metrics`, `/healthz` and `/readyz`.
pub fn app(m: Arc<Metrics>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(m)
}

async fn metrics(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    let ready = m.not_ready().await.is_none();
    let mut collectors: Vec<Box<dyn Collector>> = vec![
        Box::new(Ready(ready)),
        Box::new(WorkerCollector {
            stats: m.stats.clone(),
            trips: m.trips.clone(),
        }),
    ];
    if let Some(sms) = &m.sms {
        collectors.push(Box::new(SmsCollector(sms.clone())));
    }
    (
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        encode(&m.queue, collectors),
    )
}

async fn readyz(State(m): State<Arc<Metrics>>) -> impl IntoResponse {
    match m.not_ready().await {
        None => (StatusCode::OK, "ready".to_string()),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, why),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_are_escaped_and_every_series_names_the_queue() {
        let text = encode("we\"ird\\queue\nname", vec![Box::new(Ready(true))]);
        assert!(
            text.contains(r#"ringback_ready{queue="we\"ird\\queue\nname"} 1"#),
            "{text}"
        );
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            assert!(line.contains("queue=\""), "{line}");
        }
    }

    #[test]
    fn repeated_warnings_are_logged_once_per_period() {
        let at = AtomicI64::new(0);
        let mut logged = 0;
        for _ in 0..1000 {
            log_rarely(&at, |_| logged += 1);
        }
        assert_eq!(
            logged, 1,
            "a flood writes one line per {READY_LOG_EVERY} ms"
        );
        at.store(crate::clock::now_ms() - READY_LOG_EVERY, Ordering::Relaxed);
        log_rarely(&at, |_| logged += 1);
        assert_eq!(logged, 2, "and the next one once the period is over");
    }

    #[test]
    fn counters_end_in_total_and_families_are_typed() {
        crate::telemetry::global().twilio_error("21211".into());
        crate::telemetry::global().twilio_call("create", std::time::Duration::from_millis(120));
        let text = encode("q", vec![]);
        assert!(
            text.contains("# TYPE ringback_twilio_errors_total counter"),
            "{text}"
        );
        assert!(
            text.contains(r#"ringback_twilio_errors_total{queue="q",code="21211"}"#),
            "{text}"
        );
        assert!(
            text.contains("# TYPE ringback_twilio_request_duration_seconds histogram"),
            "{text}"
        );
        assert!(
            text.contains(r#"ringback_twilio_request_duration_seconds_bucket{queue="q",operation="create",le="0.16"}"#),
            "{text}"
        );
    }
}
