//! Running the two long-lived commands with everything around them, so the binary only parses
//! flags and maps results to exit codes: the worker with its `/metrics` listener, orphan sweep
//! and reconciliation inside one shutdown; `serve` listening at once and opening its API when
//! Redis answers.

pub mod sms;

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::WorkerConfig;
use crate::callbacks::sms::{SmsConfig, SmsProcessor};
use crate::edge::cli::ServeConfig;
use crate::error::Error;
use crate::queue::calls::Calls;
use crate::queue::processor::Processor;
use crate::queue::worker::{Stopped, Worker};
use crate::settings::ConfigError;
use crate::store::keys::QueueKeys;

/// Why a run ended badly.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The worker's settings are refused when it is built.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The worker stopped on an error (Redis, a script) rather than on `shutdown`.
    #[error(transparent)]
    Worker(#[from] Error),
}

/// Run a worker until `shutdown`: its `/metrics` listener on `metrics` (when given), and, for the
/// SMS processor, the orphan sweep (never waiting for a job's permit) and the reconciliation;
/// waits for them within the grace period.
pub async fn worker<P: Processor>(
    config: WorkerConfig,
    processor: P,
    shutdown: CancellationToken,
    metrics: Option<SocketAddr>,
    sms: Option<SmsProcessor>,
) -> Result<Stopped, RunError> {
    let worker = Worker::new(config.clone(), processor)?;
    if let Some(addr) = metrics {
        serve_metrics(
            addr,
            &config,
            &worker,
            sms.as_ref().map(|p| p.stats()),
            &shutdown,
        )
        .await;
    }
    // The orphan sweep (with a free permit when there is one, never waiting for one) and the
    // reconciliation, inside the shutdown.
    let tracker = TaskTracker::new();
    if let Some(p) = &sms {
        sms::start(
            p,
            Some(worker.permits()),
            config.name.as_deref(),
            &shutdown,
            &tracker,
        );
    }
    tracker.close();
    let stopped = worker.run(shutdown).await;
    if tokio::time::timeout(config.shutdown_grace, tracker.wait())
        .await
        .is_err()
    {
        tracing::warn!("grace period over: the orphan sweep's attempt is left to its record");
    }
    Ok(stopped?)
}

/// Start the metrics listener; failing to bind is logged, not fatal (a worker that cannot be
/// observed still delivers).
async fn serve_metrics<P: Processor>(
    addr: SocketAddr,
    config: &WorkerConfig,
    worker: &Worker<P>,
    sms: Option<Arc<crate::callbacks::sms::SmsStats>>,
    shutdown: &CancellationToken,
) {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            tracing::error!(%addr, error = %e, "cannot listen for metrics; running without /metrics");
            return;
        }
    };
    let Ok(client) = crate::store::connection::client(&config.redis_url, &config.redis_tls) else {
        return;
    };
    let Ok(conn) = crate::queue::worker::connect_until(&client, shutdown).await else {
        return;
    };
    let metrics = Arc::new(crate::edge::metrics::Metrics::new(
        config.queue.clone(),
        worker.stats(),
        worker.round_trips(),
        Calls::new(
            conn,
            QueueKeys::new(&config.prefix, &config.queue),
            Default::default(),
        ),
        sms,
    ));
    tracing::info!(%addr, "metrics on /metrics, /healthz, /readyz");
    tokio::spawn(crate::edge::metrics::serve(
        listener,
        metrics,
        shutdown.clone(),
    ));
}

/// Serve the HTTP API on `listener` until `shutdown`: answering at once (503 until Redis
/// answers, see [`crate::edge::api::Startup`]), the full router from then on. `queue` is (prefix,
/// queue name). Records of a layout this build does not read stop it with
/// [`Error::Layout`] when Redis first answers.
pub async fn serve(
    listener: tokio::net::TcpListener,
    client: crate::store::connection::Client,
    queue: (String, String),
    sms: SmsConfig,
    serve: ServeConfig,
    shutdown: CancellationToken,
) -> Result<(), Error> {
    let claim_prefix = sms.claim_prefix.clone();
    let startup = crate::edge::api::Startup::new(crate::store::connection::describe(&client));
    let sweeping = shutdown.clone();
    let state = move |conn: crate::store::connection::Conn| {
        let (prefix, name) = &queue;
        let (receipts, escalator) = sms.after_send(conn.clone(), prefix, name);
        let mut replies = sms.replies(conn.clone(), prefix, name);
        if let Some(crash_at) = sms.crash_at {
            use crate::callbacks::sms::{CrashPoint, maybe_abort};
            replies = replies
                .with_crash_after_record(Arc::new(move || {
                    maybe_abort(Some(crash_at), CrashPoint::AfterReplyRecorded, "")
                }))
                .with_crash_after_ladder_webhook(Arc::new(move || {
                    maybe_abort(Some(crash_at), CrashPoint::LadderAfterWebhook, "")
                }));
        }
        let commands = Calls::new(conn, QueueKeys::new(prefix, name), Default::default());
        let mut state =
            crate::edge::api::ApiState::new(receipts, commands, name, escalator, replies, &serve);
        state.console.delivery_deadline = sms.delivery_deadline;
        state.voice = sms.ladder.voice.clone();
        state.webhook_overrides = sms
            .status_callback_url
            .as_deref()
            .map(crate::callbacks::ladder::settings::overrides)
            .unwrap_or_default()
            .to_string();
        let state = Arc::new(state);
        tokio::spawn(sweep_inbound(state.clone(), sweeping));
        state
    };
    let opening = tokio::spawn(crate::edge::api::open_when_redis_answers(
        startup.clone(),
        client,
        claim_prefix,
        state,
        shutdown.clone(),
    ));
    let serving = axum::serve(listener, crate::edge::api::app_starting(startup))
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .into_future();
    tokio::pin!(serving);
    let mut opening = opening;
    // Opening fails (a layout this build does not read) or panics: serve stops, rather than
    // answer 503 for ever; once open, it serves until shutdown.
    let failed = tokio::select! {
        // opening's outcome first: a refused layout also cancels `shutdown`, which ends serving
        biased;
        opened = &mut opening => match opened {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(e),
            Err(source) => Some(Error::Task { task: "opening the API", source }),
        },
        served = &mut serving => {
            if opening.is_finished()
                && let Ok(Err(e)) = (&mut opening).await
            {
                return Err(e);
            }
            return served.map_err(Error::Listener);
        }
    };
    if let Some(e) = failed {
        shutdown.cancel();
        let _ = serving.await;
        return Err(e);
    }
    serving.await.map_err(Error::Listener)
}

/// `serve`'s inbound sweep: every few seconds, the messages recorded whose later steps were cut
/// short (a crash, a Redis error) are finished ([`crate::callbacks::replies::Replies::finish_pending`]),
/// then the forwards due are sent again ([`crate::edge::api::inbound::forward_due`]).
async fn sweep_inbound(state: Arc<crate::edge::api::ApiState>, shutdown: CancellationToken) {
    loop {
        // the pending set's scores and the sweep's cut are on Redis's clock: read it first (at
        // start too, before the first message is scored), then every round
        let clock = state.replies.read_clock().await;
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(INBOUND_SWEEP_EVERY) => {}
        }
        if let Err(e) = clock {
            tracing::warn!(error = %e, "could not read Redis's clock for the inbound sweep; trying again");
            continue;
        }
        match state.replies.finish_pending().await {
            Ok(0) => {}
            Ok(n) => tracing::info!(
                finished = n,
                "inbound messages recorded earlier were finished"
            ),
            Err(e) => tracing::warn!(error = %e, "the inbound sweep failed; trying again"),
        }
        let now = state.replies.now();
        match state.replies.finish_keypads(now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(finished = n, "keypad answers kept earlier were finished"),
            Err(e) => tracing::warn!(error = %e, "the keypad sweep failed; trying again"),
        }
        match crate::edge::api::inbound::forward_due(&state, now).await {
            Ok(0) => {}
            Ok(n) => tracing::info!(forwarded = n, "inbound messages forwarded again"),
            Err(e) => tracing::warn!(error = %e, "the inbound forwards failed; trying again"),
        }
    }
}

/// How often `serve` finishes recorded inbound messages.
const INBOUND_SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(5);
