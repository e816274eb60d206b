//! `ringback serve`: the HTTP API. One router, built by [`app`], so tests call it with `oneshot`
//! without a socket.
//!
//! - `POST /api/notify/webhook/status`: Twilio's status callback, signature-checked over the
//!   public URL Twilio called, applied to the run's callback record (ranked, repeats dropped).
//! - `GET /api/notify/callbacks/{runId}`: the callback record.
//! - `POST /api/notify/send`: the legacy API's enqueue call (bearer token).
//! - `GET /healthz`, `GET /readyz`.
//! - `GET /metrics`: responses by route and status (413s from the body limit included), status
//!   callbacks by outcome, sends enqueued, escalations, in Prometheus' text format. (The window
//!   overrun counter lives where sends happen: the worker's `/metrics`.)
//!
//! Before Redis first answers, [`app_starting`] stands in: the process listens at once,
//! `/healthz` answers, and `/readyz` and every other route answer 503 until
//! [`open_when_redis_answers`] hands over the full router.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use sha1::Digest;

use crate::callback::CallbackRequest;
use crate::callback::{CALLBACK_JOB_NAME, CALLBACK_JOB_OPTS};
use crate::commands::Commands;
use crate::escalation::{Escalation, Escalator};
use crate::receipts::{Receipts, Source, StatusUpdate};
use crate::twilio::Secret;
use crate::twilio::message::is_message_sid;
use crate::twilio::signature;

/// Twilio's callbacks are small; anything larger is refused with 413.
pub const WEBHOOK_BODY_LIMIT: usize = 64 * 1024;

/// What the handlers share.
pub struct ApiState {
    pub receipts: Receipts,
    /// The callback queue (for `/send`, and to tell a queued callback).
    pub queue: Commands,
    pub escalator: Escalator,
    /// The account's auth token: the key of `X-Twilio-Signature`.
    pub twilio_auth_token: Secret,
    /// The public base URL Twilio calls (scheme, host, port), e.g. `https://ringback.example.com`.
    pub public_url: String,
    /// Bearer token of `/api/notify/send` and `/api/notify/callbacks`.
    pub api_token: Secret,
    /// What `/metrics` reports.
    pub metrics: ApiMetrics,
}

/// Counters of `ringback serve`, read by `/metrics`. Label sets are small and bounded (routes
/// are the router's patterns, outcomes the receipt script's words).
#[derive(Default)]
pub struct ApiMetrics {
    responses: std::sync::Mutex<std::collections::BTreeMap<(String, u16), u64>>,
    callbacks: std::sync::Mutex<std::collections::BTreeMap<String, u64>>,
    sends_created: std::sync::atomic::AtomicU64,
    sends_repeated: std::sync::atomic::AtomicU64,
    escalations: std::sync::atomic::AtomicU64,
}

impl ApiMetrics {
    fn count<K: Ord>(map: &std::sync::Mutex<std::collections::BTreeMap<K, u64>>, key: K) {
        // a poisoned lock only means a panic elsewhere mid-increment: keep counting
        let mut m = map.lock().unwrap_or_else(|p| p.into_inner());
        *m.entry(key).or_insert(0) += 1;
    }

    /// The Prometheus text exposition of every counter.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        use std::sync::atomic::Ordering::Relaxed;
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# HELP ringback_http_responses_total Responses of ringback serve by route and status.\n\
             # TYPE ringback_http_responses_total counter"
        );
        for ((route, code), n) in self
            .responses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "ringback_http_responses_total{{route=\"{route}\",status=\"{code}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP ringback_status_callbacks_total Signed status callbacks by what they did to the record.\n\
             # TYPE ringback_status_callbacks_total counter"
        );
        for (outcome, n) in self
            .callbacks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
        {
            let _ = writeln!(
                out,
                "ringback_status_callbacks_total{{outcome=\"{outcome}\"}} {n}"
            );
        }
        let _ = writeln!(
            out,
            "# HELP ringback_sends_enqueued_total Legacy send calls by whether they enqueued a job.\n\
             # TYPE ringback_sends_enqueued_total counter\n\
             ringback_sends_enqueued_total{{created=\"true\"}} {}\n\
             ringback_sends_enqueued_total{{created=\"false\"}} {}",
            self.sends_created.load(Relaxed),
            self.sends_repeated.load(Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP ringback_escalations_total Failed deliveries escalated by status callbacks.\n\
             # TYPE ringback_escalations_total counter\n\
             ringback_escalations_total {}",
            self.escalations.load(Relaxed)
        );
        out
    }
}

/// Counts every response of a matched route by its pattern and status (a route layer: requests
/// that match no route, 404 and 405, are not counted).
async fn count_responses(
    State(s): State<Arc<ApiState>>,
    matched: Option<axum::extract::MatchedPath>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let route = matched.map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let res = next.run(req).await;
    ApiMetrics::count(&s.metrics.responses, (route, res.status().as_u16()));
    res
}

/// The API's one error type: a status and a JSON body; internal errors are logged once here.
pub enum AppError {
    Status(StatusCode, serde_json::Value),
    Internal(crate::error::Error),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Status(code, body) => (code, Json(body)).into_response(),
            // Redis down or failing over: a 503 says "try again", and a 5xx is what Twilio's
            // `#rp=5xx` retries on (a 500 would say the request itself broke something).
            AppError::Internal(e) if e.is_transient() => {
                tracing::warn!(error = %e, "redis unavailable; answered 503");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    [(header::RETRY_AFTER, "5")],
                    Json(json!({"error": "redis unavailable; retry later"})),
                )
                    .into_response()
            }
            AppError::Internal(e) => {
                tracing::error!(error = %e, "request failed");
                (
                    StatusCode::INTERNAL_SERVER_ERROR,
                    Json(json!({"error": "internal error"})),
                )
                    .into_response()
            }
        }
    }
}

impl From<crate::error::Error> for AppError {
    fn from(e: crate::error::Error) -> Self {
        AppError::Internal(e)
    }
}

fn refuse(code: StatusCode, error: impl Into<String>, field: Option<&str>) -> AppError {
    AppError::Status(code, json!({"error": error.into(), "field": field}))
}

/// The router.
pub fn app(state: Arc<ApiState>) -> Router {
    Router::new()
        .route(
            "/api/notify/webhook/status",
            post(webhook_status).layer(DefaultBodyLimit::max(WEBHOOK_BODY_LIMIT)),
        )
        .route("/api/notify/callbacks/{run_id}", get(callback_record))
        .route(
            "/api/notify/send",
            post(send).layer(DefaultBodyLimit::max(WEBHOOK_BODY_LIMIT)),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            count_responses,
        ))
        .with_state(state)
}

/// `ringback serve` while it waits for Redis (issue 9): listening at once lets a supervisor's
/// `/healthz` see a live process, and gives Twilio a 503 rather than a refused connection. Twilio
/// retries a status callback only when its URL asks (`#rc=…&rp=5xx`); a callback refused here is
/// otherwise lost, and the worker's reconciliation poll recovers its status.
pub struct Startup {
    /// The Redis waited for, password masked.
    redis: String,
    router: std::sync::OnceLock<Router>,
    /// Requests answered 503 meanwhile (status callbacks among them): `/readyz` tells them.
    refused: std::sync::atomic::AtomicU64,
}

impl Startup {
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

    pub fn is_ready(&self) -> bool {
        self.router.get().is_some()
    }
}

/// The router of `ringback serve` from its first instant: [`Startup`]'s answers until Redis is
/// up, then [`app`]'s.
pub fn app_starting(startup: Arc<Startup>) -> Router {
    Router::new().fallback(starting).with_state(startup)
}

async fn starting(State(s): State<Arc<Startup>>, req: axum::extract::Request) -> Response {
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
pub async fn open_when_redis_answers(
    startup: Arc<Startup>,
    client: redis::Client,
    state: impl FnOnce(redis::aio::ConnectionManager) -> Arc<ApiState>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let conn = match crate::connection::commands(&client).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(redis = %startup.redis, error = %e,
                "waiting for Redis: /healthz answers; /readyz and the API answer 503 until it does");
            match crate::connection::connect_until(&client, &shutdown).await {
                Ok(c) => c,
                Err(_) => return,
            }
        }
    };
    startup.ready(app(state(conn)));
    tracing::info!(redis = %startup.redis, "redis answers: ready");
}

async fn metrics(State(s): State<Arc<ApiState>>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        s.metrics.render(),
    )
}

async fn webhook_status(
    State(s): State<Arc<ApiState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<StatusCode, AppError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let text = std::str::from_utf8(&body).ok().filter(|_| is_form);
    let params: Vec<(String, String)> = text
        .and_then(|t| serde_urlencoded::from_str(t).ok())
        .ok_or_else(|| {
            refuse(
                StatusCode::BAD_REQUEST,
                "body is not a form-encoded UTF-8 status callback",
                None,
            )
        })?;
    let given = headers
        .get("X-Twilio-Signature")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    // The URL Twilio called: our public base (a proxy changes scheme and host) + the request target.
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("{}{path}", s.public_url.trim_end_matches('/'));
    if given.is_empty() || !signature::verify(s.twilio_auth_token.expose(), &url, &params, given) {
        tracing::warn!(%url, "status callback with a missing or wrong X-Twilio-Signature refused");
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "invalid X-Twilio-Signature",
            None,
        ));
    }
    let field = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    let sid = field("MessageSid")
        .or_else(|| field("SmsSid"))
        .unwrap_or_default();
    if !is_message_sid(&sid) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "MessageSid is missing or malformed",
            Some("MessageSid"),
        ));
    }
    let status = field("MessageStatus")
        .or_else(|| field("SmsStatus"))
        .unwrap_or_default();
    if status.is_empty() {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "MessageStatus is missing",
            Some("MessageStatus"),
        ));
    }
    let query: Vec<(String, String)> = uri
        .query()
        .and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default();
    let query_field = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let query_run = query_field("runId");
    let run_id = match query_run.filter(|r| !r.is_empty()) {
        Some(r) => r,
        None => match s.receipts.run_of(&sid).await? {
            Some(r) => r,
            None => {
                tracing::warn!(%sid, "status callback for a message of no known run; kept apart");
                format!("unattributed:{sid}")
            }
        },
    };
    let repeat_id = match headers
        .get("I-Twilio-Idempotency-Token")
        .and_then(|v| v.to_str().ok())
    {
        Some(token) if !token.is_empty() => format!("token:{token}"),
        _ => format!("params:{}", params_hash(&params)),
    };
    let update = StatusUpdate {
        run_id: run_id.clone(),
        sid,
        status: status.clone(),
        error_code: field("ErrorCode").filter(|c| !c.is_empty()),
        raw_dlr_done_date: field("RawDlrDoneDate").filter(|d| !d.is_empty()),
        source: Source::Webhook,
        repeat_id: Some(repeat_id),
        attempt: query_field("attempt").filter(|a| !a.is_empty()),
    };
    let applied = s.receipts.apply(&update).await?;
    tracing::info!(%run_id, %status, outcome = %applied.outcome, "status callback");
    ApiMetrics::count(&s.metrics.callbacks, applied.outcome.clone());
    if applied.newly_failed() {
        s.metrics
            .escalations
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        s.escalator
            .escalate(&Escalation {
                run_id,
                reason: format!("delivery {status}"),
                last_status: Some(status),
                error_code: update.error_code.clone(),
            })
            .await?;
    }
    Ok(StatusCode::OK)
}

/// A stable hash of the signed parameters, for repeats that carry no idempotency token.
fn params_hash(params: &[(String, String)]) -> String {
    let mut sorted: Vec<&(String, String)> = params.iter().collect();
    sorted.sort();
    let mut h = sha1::Sha1::new();
    for (k, v) in sorted {
        h.update(k.as_bytes());
        h.update([0]);
        h.update(v.as_bytes());
        h.update([0]);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn authorize(s: &ApiState, headers: &HeaderMap) -> Result<(), AppError> {
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if given.is_empty()
        || !signature::constant_time_eq(given.as_bytes(), s.api_token.expose().as_bytes())
    {
        return Err(refuse(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token",
            None,
        ));
    }
    Ok(())
}

async fn callback_record(
    State(s): State<Arc<ApiState>>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<crate::receipts::CallbackRecord>, AppError> {
    authorize(&s, &headers)?;
    Ok(Json(s.receipts.record(&run_id, Some(&s.queue)).await?))
}

async fn send(
    State(s): State<Arc<ApiState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, AppError> {
    authorize(&s, &headers)?;
    let text = std::str::from_utf8(&body)
        .map_err(|_| refuse(StatusCode::BAD_REQUEST, "body is not UTF-8", None))?;
    let req = CallbackRequest::parse(text).map_err(|e| {
        let field = e.split('`').nth(1).map(str::to_string);
        refuse(StatusCode::BAD_REQUEST, e, field.as_deref())
    })?;
    if req.run_id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "field `runId` must not be a plain integer: BullMQ reserves numeric job ids",
            Some("runId"),
        ));
    }
    let mut data = json!({"runId": req.run_id, "to": req.to, "body": req.body});
    if let Some(from) = &req.from {
        data["from"] = json!(from);
    }
    let (job_id, created) = s
        .queue
        .add_job(
            Some(&req.run_id),
            CALLBACK_JOB_NAME,
            &data.to_string(),
            CALLBACK_JOB_OPTS,
        )
        .await?;
    let counter = if created {
        &s.metrics.sends_created
    } else {
        &s.metrics.sends_repeated
    };
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"jobId": job_id, "created": created})),
    )
        .into_response())
}

async fn readyz(State(s): State<Arc<ApiState>>) -> Response {
    match s.queue.ensure_scripts().await {
        Ok(()) => (StatusCode::OK, "ready").into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("redis unreachable: {e}"),
        )
            .into_response(),
    }
}
