//! `ringback serve` before Redis answers: it listens at once (a supervisor sees a live process,
//! Twilio a 503 rather than a refused connection) and opens its routes when Redis answers.

use super::{ApiState, app};
use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `ringback serve` while it waits for Redis: listening at once lets a supervisor's
/// `/healthz` see a live process, and gives Twilio a 503 rather than a refused connection. Twilio
/// retries a status callback only when its URL asks (`#rc=…&rp=ct,rt,5xx`); a callback refused here is
/// otherwise lost, and the worker's reconciliation poll recovers its status.
#[derive(Debug)]
pub struct Startup {
    /// The Redis waited for, password masked.
    redis: String,
    router: std::sync::OnceLock<Router>,
    /// Requests answered 503 meanwhile (status callbacks among them): `/readyz` tells them.
    refused: std::sync::atomic::AtomicU64,
}

impl Startup {
    /// Waiting for the Redis `redis` describes (password masked), with no router yet.
    pub fn new(redis: String) -> Arc<Self> {
        Arc::new(Self {
            redis,
            router: Default::default(),
            refused: Default::default(),
        })
    }

    /// Redis answered: from now on every request goes to `app`.
    pub fn ready(&self, app: Router) {
        // set once; a second call (none is made) would keep the first router
        let _ = self.router.set(app);
    }
}

/// The router of `ringback serve` from its first instant: [`Startup`]'s answers until Redis is
/// up, then [`app`]'s.
pub fn app_starting(startup: Arc<Startup>) -> Router {
    Router::new().fallback(starting).with_state(startup)
}

pub(super) async fn starting(
    State(s): State<Arc<Startup>>,
    req: axum::extract::Request,
) -> Response {
    if let Some(app) = s.router.get() {
        return match tower::ServiceExt::oneshot(app.clone(), req).await {
            Ok(res) => res,
            Err(never) => match never {},
        };
    }
    let waiting = format!("not ready: waiting for Redis at {}", s.redis);
    match req.uri().path() {
        "/healthz" => "ok".into_response(),
        "/readyz" => {
            let refused = s.refused.load(std::sync::atomic::Ordering::Relaxed);
            let body = format!("{waiting}; {refused} requests refused meanwhile");
            (StatusCode::SERVICE_UNAVAILABLE, body).into_response()
        }
        _ => {
            s.refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            (
                StatusCode::SERVICE_UNAVAILABLE,
                [(header::RETRY_AFTER, "5")],
                Json(json!({"error": waiting})),
            )
                .into_response()
        }
    }
}

/// Wait for Redis (each failed attempt logged with its true wait), then build the state and
/// hand [`Startup`] the full router. Returns without it when `shutdown` fires first.
/// Records of a layout this build does not read stop serve before the API opens (the error is
/// returned, and `shutdown` cancelled): nothing is read or written.
pub async fn open_when_redis_answers(
    startup: Arc<Startup>,
    client: crate::store::connection::Client,
    claim_prefix: String,
    state: impl FnOnce(crate::store::connection::Conn) -> Arc<ApiState>,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<(), crate::error::Error> {
    let mut conn = match crate::store::connection::commands(&client).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(redis = %startup.redis, error = %e,
                "waiting for Redis: /healthz answers; /readyz and the API answer 503 until it does");
            match crate::store::connection::connect_until(&client, &shutdown).await {
                Ok(c) => c,
                Err(_) => return Ok(()),
            }
        }
    };
    // a connection Redis drops right after accepting it is waited out, never an exit
    let checked =
        match crate::callbacks::layout::check_at_start(&mut conn, &claim_prefix, &shutdown).await {
            Ok(_) => crate::callbacks::layout::probe_at_start(&mut conn, &shutdown).await,
            Err(e) => Err(e),
        };
    match checked {
        Ok(()) => {}
        Err(crate::error::Error::Stopped) => return Ok(()),
        Err(e) => {
            shutdown.cancel();
            return Err(e);
        }
    }
    startup.ready(app(state(conn)));
    tracing::info!(redis = %startup.redis, "redis answers: ready");
    Ok(())
}
