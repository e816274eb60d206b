//! The official Rust port's worker doing what the legacy Node worker does per callback: claim
//! `agent-callback:<runId>` with SET NX EX 600, create the message through Twilio's REST API
//! (the simulator in benchmarks), then SET XX "sent" EX 86400. Environment as the other bench
//! subjects: REDIS_URL, RINGBACK_QUEUE, RINGBACK_CONCURRENCY, TWILIO_ACCOUNT_SID,
//! TWILIO_AUTH_TOKEN, TWILIO_FROM, TWILIO_API_BASE. Stops on SIGTERM.

use std::sync::Arc;

use bullmq::worker::CancellationToken;
use bullmq::{Job, Worker, WorkerOptions};

fn env(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = env("REDIS_URL", "redis://127.0.0.1:6379");
    let queue = env("RINGBACK_QUEUE", "notify");
    let concurrency: usize = env("RINGBACK_CONCURRENCY", "1").parse()?;
    let redis = redis::Client::open(url.as_str())?
        .get_connection_manager()
        .await?;
    let http = reqwest::Client::new();
    let account = env("TWILIO_ACCOUNT_SID", "");
    let token = env("TWILIO_AUTH_TOKEN", "");
    let from = env("TWILIO_FROM", "");
    let messages = format!(
        "{}/2010-04-01/Accounts/{account}/Messages.json",
        env("TWILIO_API_BASE", "https://api.twilio.com")
    );
    let shared = Arc::new((redis, http, account, token, from, messages));
    let processor = move |job: Job, _cancel: CancellationToken| {
        let shared = shared.clone();
        async move {
            let (redis, http, account, token, from, messages) = &*shared;
            let data = job.data();
            let text = |k: &str| data.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let key = format!("agent-callback:{}", text("runId"));
            let mut redis = redis.clone();
            let claimed: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg("pending")
                .arg("NX")
                .arg("EX")
                .arg(600)
                .query_async(&mut redis)
                .await?;
            if claimed.is_none() {
                return Ok(serde_json::Value::Null);
            }
            let form = [("To", text("to")), ("From", from.clone()), ("Body", text("body"))];
            let resp = http
                .post(messages)
                .basic_auth(account, Some(token))
                .form(&form)
                .send()
                .await
                .map_err(|e| bullmq::Error::ProcessingError(e.to_string()))?;
            if !resp.status().is_success() {
                return Err(bullmq::Error::ProcessingError(format!("HTTP {}", resp.status())));
            }
            let _ = resp.bytes().await;
            let _: Option<String> = redis::cmd("SET")
                .arg(&key)
                .arg("sent")
                .arg("XX")
                .arg("EX")
                .arg(86400)
                .query_async(&mut redis)
                .await?;
            Ok(serde_json::Value::Null)
        }
    };
    let mut opts = WorkerOptions::default();
    opts.connection.url = url;
    opts.concurrency = concurrency;
    let worker = Worker::with_options(&queue, processor, opts).await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    term.recv().await;
    worker.close(5000).await?;
    Ok(())
}
