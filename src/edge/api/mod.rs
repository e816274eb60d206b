//! `ringback serve`: the HTTP API. One router, built by [`app`], so tests call it with `oneshot`
//! without a socket.
//!
//! - `POST /api/notify/webhook/status`: Twilio's status callback, signature-checked over the
//!   public URL Twilio called, applied to the run's callback record (ranked, repeats dropped).
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
use axum::extract::{DefaultBodyLimit, OriginalUri, Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;
use sha1::Digest;

use crate::callbacks::callback::CALLBACK_JOB_OPTS;
use crate::callbacks::callback::CallbackRequest;
use crate::callbacks::escalation::{Escalation, Escalator};
use crate::callbacks::receipts::{Receipts, Source, StatusUpdate};
use crate::edge::access::{Refusal, Role, SendPolicy, Tokens};
use crate::queue::commands::Commands;
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
    /// The queue's name: the `queue` label of `/metrics`.
    pub queue_name: String,
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
    /// The operators' console (issue 17): its settings and session key.
    pub console: crate::edge::console::Console,
}

/// Rate-limited logging: when each kind of repeated warning was last written (ms).
#[derive(Debug, Default)]
pub struct LoggedAt {
    pub bad_signature: std::sync::atomic::AtomicI64,
    pub not_ready: std::sync::atomic::AtomicI64,
}

impl ApiState {
    /// The state from its parts and `serve`'s validated settings.
    pub fn new(
        receipts: Receipts,
        queue: Commands,
        queue_name: &str,
        escalator: Escalator,
        serve: &crate::edge::cli::ServeConfig,
    ) -> Self {
        Self {
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

/// How long one request may take before it is answered 408 (Redis calls included).
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// The router, with its limits inside it (every embedder gets them): a body limit on every
/// route, and [`REQUEST_TIMEOUT`].
pub fn app(state: Arc<ApiState>) -> Router {
    Router::new()
        .route("/api/notify/webhook/status", post(webhook_status))
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
            StatusCode::REQUEST_TIMEOUT,
            REQUEST_TIMEOUT,
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
    client: crate::store::connection::Client,
    state: impl FnOnce(crate::store::connection::Conn) -> Arc<ApiState>,
    shutdown: tokio_util::sync::CancellationToken,
) {
    let conn = match crate::store::connection::commands(&client).await {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(redis = %startup.redis, error = %e,
                "waiting for Redis: /healthz answers; /readyz and the API answer 503 until it does");
            match crate::store::connection::connect_until(&client, &shutdown).await {
                Ok(c) => c,
                Err(_) => return,
            }
        }
    };
    startup.ready(app(state(conn)));
    tracing::info!(redis = %startup.redis, "redis answers: ready");
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
    let signed_by = |key: &Secret| signature::verify(key.expose(), &url, &params, given);
    let valid = !given.is_empty()
        && (signed_by(&s.twilio_auth_token)
            || s.twilio_auth_token_secondary
                .as_ref()
                .is_some_and(signed_by));
    if !valid {
        let telemetry = crate::telemetry::global();
        telemetry.bad_signatures.inc();
        crate::edge::metrics::log_rarely(&s.logged.bad_signature, |_| {
            tracing::warn!(%url, refused_so_far = telemetry.bad_signatures.get(),
                "status callback with a missing or wrong X-Twilio-Signature refused (logged at most every 30 s; ringback_bad_signatures_total counts them all)");
        });
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
    // a long runId travels as its short key (`runKey`), linked before the create
    let query_run = match query_field("runKey").filter(|k| !k.is_empty()) {
        Some(key) => s.receipts.run_of_short_key(&key).await?,
        None => query_field("runId"),
    };
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
    applied.count_delivery_error(update.error_code.as_deref());
    tracing::info!(%run_id, %status, outcome = %applied.outcome, "status callback");
    crate::telemetry::global()
        .status_callbacks
        .get_or_create(&crate::telemetry::OutcomeLabel {
            outcome: applied.outcome.clone(),
        })
        .inc();
    // Whatever the outcome (a repeat of a callback whose escalation was cut short, or a
    // status the record already had): a record that ends failed is escalated, idempotently.
    if applied.ends_failed() {
        s.escalator
            .escalate(&Escalation {
                run_id,
                reason: format!("delivery {}", applied.status),
                last_status: Some(applied.status.clone()),
                error_code: update.error_code.clone(),
                kind: crate::callbacks::escalation::EscalationKind::Undelivered,
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
) -> Result<Json<crate::callbacks::receipts::CallbackRecord>, AppError> {
    authorize(&s, &headers, Role::may_read, "read callback records")?;
    Ok(Json(s.receipts.record(&run_id, Some(&s.queue)).await?))
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
    let mut data = json!({"runId": req.run_id, "to": req.to, "body": req.body});
    if let Some(from) = &req.from {
        data["from"] = json!(from);
    }
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
