//! A benchmark subject, not a mode ringback ships: ringback's worker core (the same fetch,
//! locks, group commit and finishing scripts as `ringback worker`) running the legacy worker's
//! per-callback pattern, `SET agent-callback:<runId> pending NX EX 600` → `messages.create` →
//! `SET … sent XX EX 86400`, with no window, no attempt record and no receipts. It does exactly
//! the work the Node legacy worker and the official port's subject (`benches/official`) do, so
//! `scripts/bench sms` can show, in one run, what ringback's engine costs against theirs and what
//! the window costs on top. A crash between the create and the `SET XX` texts twice,
//! as it does for the legacy worker: that is why ringback never runs this way.
//!
//! Configured like `ringback worker` (`RINGBACK_*`, `REDIS_URL`, `TWILIO_*`).

use clap::Parser;
use ringback::edge::cli::{LogArgs, TwilioArgs, WorkerArgs, init_logging, shutdown_on_signals};
use ringback::twilio::{CreateMessage, SendOutcome, TwilioClient};
use ringback::{Job, JobContext, Outcome, Processor};

/// The allocator `ringback worker` runs with (src/bin/ringback/main.rs says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(about = "ringback's worker core running the legacy SET NX / create / SET XX pattern")]
struct Cli {
    #[command(flatten)]
    log: LogArgs,
    #[command(flatten)]
    worker: WorkerArgs,
    #[command(flatten)]
    twilio: TwilioArgs,
}

struct LegacyPattern {
    redis: ringback::store::connection::Conn,
    twilio: TwilioClient,
}

#[derive(serde::Deserialize)]
struct Request {
    #[serde(rename = "runId")]
    run_id: String,
    to: String,
    body: String,
    from: Option<String>,
}

impl Processor for LegacyPattern {
    async fn process(&self, job: &Job, _ctx: &JobContext) -> Outcome {
        let req: Request = match serde_json::from_str(&job.data) {
            Ok(r) => r,
            Err(e) => return Outcome::unrecoverable(format!("not a callback request: {e}")),
        };
        let key = format!("agent-callback:{}", req.run_id);
        let mut redis = self.redis.clone();
        let claimed: Result<Option<String>, _> = redis::cmd("SET")
            .arg(&key)
            .arg("pending")
            .arg("NX")
            .arg("EX")
            .arg(600)
            .query_async(&mut redis)
            .await;
        match claimed {
            Err(e) => return Outcome::fail(format!("claim: {e}")),
            Ok(None) => return Outcome::Completed(serde_json::Value::Null),
            Ok(Some(_)) => {}
        }
        let msg = CreateMessage {
            to: req.to,
            body: req.body,
            from: req.from.filter(|f| !f.is_empty()),
            status_callback: None,
            validity_period: None,
        };
        match self.twilio.create_message(&msg).await {
            SendOutcome::Accepted(_) => {}
            other => return Outcome::fail(format!("create: {other:?}")),
        }
        let sent: Result<Option<String>, _> = redis::cmd("SET")
            .arg(&key)
            .arg("sent")
            .arg("XX")
            .arg("EX")
            .arg(86_400)
            .query_async(&mut redis)
            .await;
        match sent {
            Err(e) => Outcome::fail(format!("sent marker: {e}")),
            Ok(_) => Outcome::Completed(serde_json::Value::Null),
        }
    }
}

/// One runtime thread, as `ringback worker` runs by default (`RINGBACK_THREADS`).
#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log.log_format);
    let (config, twilio) = match (cli.worker.to_config(), cli.twilio.to_config()) {
        (Ok(c), Ok(t)) => (c, t),
        (c, t) => {
            for e in [
                c.err().map(|e| e.to_string()),
                t.err().map(|e| e.to_string()),
            ]
            .into_iter()
            .flatten()
            {
                eprintln!("ringback: bad configuration: {e}");
            }
            return std::process::ExitCode::from(2);
        }
    };
    let setup = async {
        let client = ringback::store::connection::client(&config.redis_url, &config.redis_tls)
            .map_err(|e| e.to_string())?;
        let redis = ringback::store::connection::commands(client)
            .await
            .map_err(|e| e.to_string())?;
        let twilio = TwilioClient::new(twilio).map_err(|e| e.to_string())?;
        Ok::<_, String>(LegacyPattern { redis, twilio })
    };
    let processor = match setup.await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("ringback: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // the project's own runner (src/edge/run.rs), as `ringback worker` runs its processors
    match ringback::edge::run::worker(config, processor, shutdown_on_signals(), None, None).await {
        Ok(_) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ringback: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
