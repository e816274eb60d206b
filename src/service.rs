//! Wires a running SMS worker's parts: the processor (its own Redis connection for the window,
//! and the Twilio client), the orphan sweep and the receipt reconciliation beside it. The top
//! floor: it imports the pieces, none of them imports it.

use std::time::Duration;

use crate::sms::{SmsConfig, SmsProcessor};
use crate::twilio::TwilioClient;

/// Build the SMS processor (its own Redis connection for the window, retrying until Redis
/// answers or `shutdown`; the Twilio client) and start the orphan sweep and the receipt
/// reconciliation beside it, until `shutdown`.
pub async fn connect(
    redis_url: &str,
    redis_tls: &crate::connection::RedisTls,
    prefix: &str,
    queue: &str,
    config: SmsConfig,
    twilio: crate::twilio::TwilioConfig,
    shutdown: &tokio_util::sync::CancellationToken,
) -> Result<SmsProcessor, crate::error::Error> {
    let client = crate::connection::client(redis_url, redis_tls)?;
    let conn = crate::worker::connect_until(&client, shutdown).await?;
    let twilio =
        TwilioClient::new(twilio).map_err(|e| crate::error::Error::Twilio(e.to_string()))?;
    let sweep_every = config.reconcile_poll;
    let processor = SmsProcessor::new(config, conn, twilio, prefix, queue);
    tokio::spawn(crate::orphans::run(
        processor.clone(),
        sweep_every,
        shutdown.clone(),
    ));
    tokio::spawn(
        processor
            .reconciler()
            .run(Duration::from_secs(1), shutdown.clone()),
    );
    Ok(processor)
}
