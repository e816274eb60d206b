//! `ringback serve`: the HTTP API. One router, built by [`app`], so tests call it with `oneshot`
//! without a socket.
//!
//! - `POST /api/notify/webhook/status`: Twilio's status callback, signature-checked over the
//!   public URL Twilio called, applied to the run's callback record (ranked, repeats dropped).
//! - `POST /api/notify/webhook/inbound`: Twilio's incoming-message webhook, signed the same way:
//!   the human's replies ([`crate::callbacks::replies`]).
//! - `POST /api/notify/webhook/voice`, `POST /api/notify/webhook/call-status`: the ladder's
//!   calls, their keypad answers and status callbacks ([`voice`]).
//! - `GET /api/notify/callbacks/{runId}`: the callback record.
//! - `POST /api/notify/send`: the legacy API's enqueue call (bearer token).
//! - `GET /healthz`, `GET /readyz`.
//! - `/console/…`: the operators' read-only pages ([`crate::edge::console`]).
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
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::callbacks::callback::CALLBACK_JOB_OPTS;
use crate::callbacks::callback::CallbackRequest;
use crate::callbacks::escalation::Escalator;
use crate::callbacks::receipts::Receipts;
use crate::edge::access::{Refusal, Role, SendPolicy, Tokens};
use crate::queue::calls::Calls;
use crate::twilio::Secret;

pub mod inbound;
mod startup;
mod voice;
mod webhook;

use inbound::webhook_inbound;
pub use startup::{Startup, app_starting, open_when_redis_answers};
use webhook::webhook_status;

/// Twilio's callbacks are small; anything larger is refused with 413.
pub const WEBHOOK_BODY_LIMIT: usize = 64 * 1024;

/// What the handlers share.
#[derive(Debug)]
pub struct ApiState {
    /// The callback records: status callbacks are applied to them, `/callbacks` reads them.
    pub receipts: Receipts,
    /// The callback queue (for `/send`, and to tell a queued callback).
    pub queue: Calls,
    /// The queue's name: the `queue` label of `/metrics`.
    pub queue_name: String,
    /// Escalates runs whose delivery ended failed; also names the job `/send` enqueues.
    pub escalator: Escalator,
    /// The account's auth token: the key of `X-Twilio-Signature`.
    pub twilio_auth_token: Secret,
    /// During a rotation, the other accepted key (`TWILIO_AUTH_TOKEN_SECONDARY`).
    pub twilio_auth_token_secondary: Option<Secret>,
    /// The public base URL Twilio calls (scheme, host, port), e.g. `https://ringback.example.com`.
    pub public_url: String,
    /// Bearer tokens by role.
    pub tokens: Tokens,
    /// The allowlist and rate limits of `/api/notify/send`.
    pub send_policy: SendPolicy,
    /// When a refused signature, and a readiness failure, were last logged (ms).
    pub logged: LoggedAt,
    /// The operators' console: its settings and session key.
    pub console: crate::edge::console::Console,
    /// Questions, inbound messages, the replies queue and opt-outs.
    pub replies: crate::callbacks::replies::Replies,
    /// Where inbound messages that answer no question are forwarded
    /// (`RINGBACK_INBOUND_FORWARD_URL`).
    pub inbound_forward: Option<String>,
    /// The client of the forwards.
    pub http: reqwest::Client,
    /// What the ladder's calls speak in (`RINGBACK_VOICE`, `RINGBACK_VOICE_LANGUAGE`).
    pub voice: crate::callbacks::ladder::twiml::Voice,
    /// The connection overrides (`#rc=…&rp=…`) of `RINGBACK_STATUS_CALLBACK_URL`, which the
    /// keypad's second ask carries as the first did ("" without them).
    pub webhook_overrides: String,
}

/// Rate-limited logging: when each kind of repeated warning was last written (ms).
#[derive(Debug, Default)]
pub struct LoggedAt {
    /// Last log of a webhook refused for a missing or wrong `X-Twilio-Signature` (ms).
    pub bad_signature: std::sync::atomic::AtomicI64,
    /// Last log of `/readyz` or `/metrics` finding Redis unreachable (ms).
    pub not_ready: std::sync::atomic::AtomicI64,
}

impl ApiState {
    /// The state from its parts and `serve`'s validated settings.
    pub fn new(
        receipts: Receipts,
        queue: Calls,
        queue_name: &str,
        escalator: Escalator,
        replies: crate::callbacks::replies::Replies,
        serve: &crate::edge::cli::ServeConfig,
    ) -> Self {
        Self {
            replies: replies.with_forwarding(serve.inbound_forward.is_some()),
            inbound_forward: serve.inbound_forward.clone(),
            http: {
                crate::twilio::client::install_tls_provider();
                reqwest::Client::builder()
                    .connect_timeout(std::time::Duration::from_secs(2))
                    .build()
                    .unwrap_or_default()
            },
            voice: Default::default(),
            webhook_overrides: String::new(),
            receipts,
            queue,
            queue_name: queue_name.to_string(),
            escalator,
            twilio_auth_token: serve.twilio_auth_token.clone(),
            twilio_auth_token_secondary: serve.twilio_auth_token_secondary.clone(),
            public_url: serve.public_url.clone(),
            tokens: serve.tokens.clone(),
            send_policy: SendPolicy::new(serve.send_policy.clone()),
            logged: Default::default(),
            console: crate::edge::console::Console::new(
                serve.drill_reports.clone(),
                crate::callbacks::sms::SmsConfig::default().delivery_deadline,
                serve.public_url.starts_with("https://"),
            ),
        }
    }
}

/// Counts every response of a matched route by its pattern and status (a route layer: requests
/// that match no route, 404 and 405, are not counted).
async fn count_responses(
    State(_): State<Arc<ApiState>>,
    matched: Option<axum::extract::MatchedPath>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let route = matched.map_or_else(|| "unmatched".to_string(), |m| m.as_str().to_string());
    let res = next.run(req).await;
    crate::telemetry::global()
        .http_responses
        .get_or_create(&crate::telemetry::RouteLabels {
            route,
            status: res.status().as_u16(),
        })
        .inc();
    res
}

/// The API's one error type: a status and a JSON body; internal errors are logged once here.
#[derive(Debug)]
pub enum AppError {
    /// A refusal: this status, with a JSON body of `error` and the `field` to blame, if any.
    Status(StatusCode, serde_json::Value),
    /// A failure inside: 503 with `Retry-After: 5` when Redis is unavailable, else 500.
    Internal(crate::error::Error),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        match self {
            AppError::Status(code, body) => (code, Json(body)).into_response(),
            // Redis down or failing over: a 503 says "try again", and a 5xx is what Twilio's
            // `#rp=ct,rt,5xx` retries on (a 500 would say the request itself broke something).
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

/// How long one request may take before it is answered 503 (Redis calls included): a 5xx,
/// which Twilio's webhooks retry (`#rc=…&rp=ct,rt,5xx`, as the docs configure them), before Twilio's
/// own 15 s timeout. A 4xx here would lose an inbound reply or a status callback for good
/// while Redis is slow (a failover, a fork).
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The router, with its limits inside it (every embedder gets them): a body limit on every
/// route, and [`REQUEST_TIMEOUT`].
pub fn app(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/api/notify/webhook/status", post(webhook_status))
        .route("/api/notify/webhook/inbound", post(webhook_inbound))
        .route("/api/notify/webhook/voice", post(voice::webhook_voice))
        .route(
            "/api/notify/webhook/call-status",
            post(voice::webhook_call_status),
        )
        .route("/api/notify/callbacks/{run_id}", get(callback_record))
        .route("/api/notify/send", post(send))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .merge(crate::edge::console::routes())
        .route_layer(axum::middleware::from_fn_with_state(
            state.clone(),
            count_responses,
        ))
        .layer(DefaultBodyLimit::max(WEBHOOK_BODY_LIMIT))
        .layer(tower_http::timeout::TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            REQUEST_TIMEOUT,
        ))
        .with_state(state)
}

async fn metrics(State(s): State<Arc<ApiState>>) -> impl IntoResponse {
    let ready = not_ready(&s).await.is_none();
    (
        [(header::CONTENT_TYPE, crate::edge::metrics::CONTENT_TYPE)],
        crate::edge::metrics::encode(
            &s.queue_name,
            vec![Box::new(crate::edge::metrics::Ready(ready))],
        ),
    )
}

/// The caller's role; 401 without a known token, 403 when the role may not do `what`.
fn authorize(
    s: &ApiState,
    headers: &HeaderMap,
    may: fn(Role) -> bool,
    what: &str,
) -> Result<Role, AppError> {
    let role = s.tokens.role_of(headers).ok_or_else(|| {
        refuse(
            StatusCode::UNAUTHORIZED,
            "missing or wrong bearer token",
            None,
        )
    })?;
    if !may(role) {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            format!("this token may not {what}"),
            None,
        ));
    }
    Ok(role)
}

async fn callback_record(
    State(s): State<Arc<ApiState>>,
    Path(run_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, AppError> {
    authorize(&s, &headers, Role::may_read, "read callback records")?;
    let record = s.receipts.record(&run_id, Some(&s.queue)).await?;
    let mut out = serde_json::to_value(record).unwrap_or_default();
    // a question's code and until when it is open, and the replies it received
    if let Some(q) = s.replies.reads.question_of(&run_id).await? {
        out["question"] = json!({"code": q.code, "shown": q.shown, "openUntil": q.until, "answeredBy": q.answered_by});
        out["replies"] =
            serde_json::to_value(s.replies.reads.replies_of(&run_id).await?).unwrap_or_default();
    }
    Ok(Json(out))
}

async fn send(
    State(s): State<Arc<ApiState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, AppError> {
    let role = authorize(&s, &headers, Role::may_send, "send")?;
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
    match s.send_policy.check(role, &req.to) {
        Ok(()) => {}
        Err(Refusal::NotAllowed) => {
            return Err(refuse(
                StatusCode::FORBIDDEN,
                "destination `to` is not on RINGBACK_SEND_ALLOW_TO",
                Some("to"),
            ));
        }
        Err(Refusal::RateLimited { scope, retry_after }) => {
            crate::telemetry::global()
                .rate_limited
                .get_or_create(&crate::telemetry::ScopeLabel { scope })
                .inc();
            let secs = retry_after.as_secs().max(1);
            return Ok((
                StatusCode::TOO_MANY_REQUESTS,
                [(header::RETRY_AFTER, secs.to_string())],
                Json(json!({
                    "error": format!("rate limit per {scope} reached; retry after {secs} s"),
                    "field": if scope == "destination" { Some("to") } else { None },
                })),
            )
                .into_response());
        }
    }
    // the job carries everything the caller sent, as a producer's job data does (`ladder`,
    // `choices`, `"ladder": false` included): the worker reads it as it reads any job
    let mut data: serde_json::Value = serde_json::from_str(text).unwrap_or_else(|_| json!({}));
    data["runId"] = json!(req.run_id);
    let (job_id, created) = s
        .queue
        .add_job(
            Some(&req.run_id),
            &s.escalator.callback_job_name,
            &data.to_string(),
            CALLBACK_JOB_OPTS,
        )
        .await?;
    crate::telemetry::global()
        .sends_enqueued
        .get_or_create(&crate::telemetry::CreatedLabel {
            created: if created { "true" } else { "false" },
        })
        .inc();
    Ok((
        StatusCode::ACCEPTED,
        Json(json!({"jobId": job_id, "created": created})),
    )
        .into_response())
}

/// Why `serve` is not ready, for people (no internal error text; the error is logged, rarely).
async fn not_ready(s: &ApiState) -> Option<&'static str> {
    match s.queue.ensure_scripts().await {
        Ok(()) => None,
        Err(e) => {
            crate::edge::metrics::log_rarely(&s.logged.not_ready, |_| {
                tracing::warn!(error = %e, "not ready: redis unreachable");
            });
            Some("redis unreachable")
        }
    }
}

async fn readyz(State(s): State<Arc<ApiState>>) -> Response {
    match not_ready(&s).await {
        None => (StatusCode::OK, "ready").into_response(),
        Some(why) => (StatusCode::SERVICE_UNAVAILABLE, why).into_response(),
    }
}
