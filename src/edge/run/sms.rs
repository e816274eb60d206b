//! Wires a running SMS worker's parts: the processor (its own Redis connection for the window,
//! and the Twilio client), the orphan sweep and the receipt reconciliation beside it. Process
//! wiring lives in `edge::run` alone; the callbacks floor only provides the parts.

use std::time::Duration;

use crate::callbacks::sms::{SmsConfig, SmsProcessor};
use ringback_twilio::TwilioClient;

/// Build the SMS processor (its own Redis connection for the window, retrying until Redis
/// answers or `shutdown`, waiting for replicas per `redis_wait` after a claim and a sent
/// marker; the Twilio client). [`start`] runs its background work.
#[allow(clippy::too_many_arguments)]
pub async fn connect(
    redis_url: &str,
    redis_tls: &ringback_store::connection::RedisTls,
    redis_wait: ringback_store::replicas::ReplicaWait,
    prefix: &str,
    queue: &str,
    config: SmsConfig,
    twilio: ringback_twilio::TwilioConfig,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<SmsProcessor, ringback_shared::error::Error> {
    let client = ringback_store::connection::client(redis_url, redis_tls)?.with_wait(redis_wait);
    let mut conn = ringback_queue::worker::connect_until(&client, shutdown).await?;
    crate::callbacks::layout::check_at_start(&mut conn, &config.claim_prefix, shutdown).await?;
    crate::callbacks::layout::probe_at_start(&mut conn, shutdown).await?;
    conn.look_at_replicas().await;
    if conn.has_replica_now() {
        tracing::info!(
            "Redis has a connected replica: every claim and sent marker waits for one (RINGBACK_REDIS_WAIT_REPLICAS unset), and the fused finish is off while it does"
        );
    }
    let twilio = TwilioClient::new(twilio)
        .map_err(|e| ringback_shared::error::Error::Twilio(Box::new(e)))?;
    let processor = SmsProcessor::new(config, conn, twilio, prefix, queue);
    // Redis's clock before the first index write: in the Cluster layout a claim writes its
    // index entry itself, at a time on Redis's clock as this process knows it (an hour-behind
    // host would otherwise index its first attempts an hour in the past)
    if let Err(e) = processor.window().learn_clock().await {
        tracing::debug!(error = %e, "Redis's clock not read at start; the first claim's reply gives it");
    }
    // which Redis serves each identity key, before the first claim (bounded: a shard down at
    // start leaves its slots to their first claims, as the sweep's own note would)
    match tokio::time::timeout(
        NOTE_AT_START_FOR,
        processor.window().note_redis_before_work(),
    )
    .await
    {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "Redis identity not noted at start; the sweep notes it")
        }
        Err(_) => tracing::debug!("Redis identity still being noted at start; the sweep notes it"),
    }
    Ok(processor)
}

/// How long a worker waits at start for the Redis identity of every slot to be noted.
const NOTE_AT_START_FOR: Duration = Duration::from_secs(15);

/// How often a worker looks for ladders whose next step is due.
const LADDER_SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Start the orphan sweep (inside the worker's concurrency limit, `permits`) and the receipt
/// reconciliation and the ladder sweep on `tracker`, until `shutdown`; the heartbeat names the worker `name`
/// (`RINGBACK_WORKER_NAME`), else the host: the caller waits on the tracker, so an attempt
/// the sweep started finishes (sent marker written) before the process exits.
pub fn start(
    processor: &SmsProcessor,
    permits: Option<std::sync::Arc<tokio::sync::Semaphore>>,
    name: Option<&str>,
    shutdown: &tokio_util::sync::CancellationToken,
    tracker: &tokio_util::task::TaskTracker,
) {
    tracker.spawn(crate::callbacks::orphans::run(
        processor.clone(),
        processor.sweep_interval(),
        crate::callbacks::orphans::worker_name(name),
        permits,
        shutdown.clone(),
    ));
    tracker.spawn(
        processor
            .reconciler()
            .run(Duration::from_secs(1), shutdown.clone()),
    );
    tracker.spawn(
        processor
            .climber()
            .run(LADDER_SWEEP_EVERY, shutdown.clone()),
    );
}
