//! The operators' console of `ringback serve`: a read-only page for people, at
//! `/console`, answering "did my callback reach me, and if not, why?".
//!
//! - `/console/callbacks`: the most recent runs, newest first (the recent-runs index
//!   `window_claim.lua` writes), searchable by runId, filterable by state, paged.
//! - `/console/runs/{runId}`: one run's timeline (enqueued, claimed, sent, every receipt in
//!   arrival order judged against the status ranking, polls, escalation) and its BullMQ job.
//! - `/console/now`: open attempts, unknown sends, the day's escalations, receipts missing past
//!   the delivery deadline, texts sent and delivered per minute over the last hour.
//! - `/console/drills`: the latest `ringback drill … --json` reports in `RINGBACK_DRILL_REPORTS`.
//!
//! Who may look: a reading token (`RINGBACK_READ_TOKEN` or `RINGBACK_API_TOKEN`), posted once
//! to the sign-in form (a signed session cookie follows, [`session`]) or sent as
//! `Authorization: Bearer`; never in a URL. Every answer carries a strict
//! Content-Security-Policy; everything the pages use is served from here (no script at all).
//!
//! It uses the floors below (records, keys, the access tokens) and nothing uses it but
//! [`crate::edge::api::app`], which merges [`routes`].

pub mod drills;
mod now;
pub mod pages;
pub mod session;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::Markup;

use crate::callbacks::runs;
use crate::clock::now_ms;
use crate::edge::api::ApiState;
use session::{Caller, Sessions};

/// The policy every console answer carries: nothing but this origin's stylesheet and images,
/// no script, no framing, forms only to this origin.
pub const CSP: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; \
                       frame-ancestors 'none'; base-uri 'none'";

/// Longest runId the console looks up (the longest a callback job may carry).
pub const MAX_RUN_ID: usize = crate::callbacks::callback::MAX_RUN_ID;

/// Runs per Callbacks page.
pub const PAGE_SIZE: usize = 50;

/// Runs read per round trip when a filter or a search scans the index.
const SCAN_BATCH: usize = 1000;

/// The console's settings and its session key.
#[derive(Debug)]
pub struct Console {
    /// `RINGBACK_DRILL_REPORTS`: where drill reports are saved.
    pub drill_reports: Option<PathBuf>,
    /// `RINGBACK_DELIVERY_DEADLINE_MS`: a receipt is missing past it.
    pub delivery_deadline: Duration,
    /// The signed session cookies of people signed in.
    pub sessions: Sessions,
}

impl Console {
    /// `secure`: the console is reached over https (its cookie is marked `Secure`).
    pub fn new(drill_reports: Option<PathBuf>, delivery_deadline: Duration, secure: bool) -> Self {
        Self {
            drill_reports,
            delivery_deadline,
            sessions: Sessions::new(secure),
        }
    }
}

/// The console's routes, for [`crate::edge::api::app`] to merge.
pub fn routes() -> Router<Arc<ApiState>> {
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::to("/console/callbacks") }),
        )
        .route(
            "/console/",
            get(|| async { Redirect::to("/console/callbacks") }),
        )
        .route("/console/login", get(login_form).post(login))
        .route("/console/logout", post(logout))
        .route("/console/callbacks", get(callbacks))
        .route("/console/runs/{run_id}", get(run))
        .route("/console/now", get(now::now))
        .route("/console/drills", get(drills))
        .route("/console/inbound", get(inbound))
        .route("/console/static/console.css", get(css))
        .layer(axum::middleware::map_response(protect))
}

/// Headers on every console answer.
async fn protect(mut res: Response) -> Response {
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    res
}

fn html(code: StatusCode, m: Markup) -> Response {
    (code, Html(m.into_string())).into_response()
}

/// `None` when the caller may read, else the page that says why not.
fn refused(s: &ApiState, headers: &HeaderMap) -> Option<Response> {
    match s.console.sessions.caller(&s.tokens, headers, now_ms()) {
        Caller::Reader(_) => None,
        Caller::Anonymous => Some(html(
            StatusCode::UNAUTHORIZED,
            pages::login(Some("Sign in to see the console.")),
        )),
        Caller::WrongToken => Some(html(
            StatusCode::UNAUTHORIZED,
            pages::login(Some("That token is not one of this server's tokens.")),
        )),
        Caller::NotAllowed(_) => Some(html(
            StatusCode::FORBIDDEN,
            pages::message(
                "Not allowed",
                "This token may send but not read: sign in with RINGBACK_READ_TOKEN or RINGBACK_API_TOKEN.",
                false,
            ),
        )),
    }
}

/// Redis away or failing: a page that says so (the error is logged once, never shown).
fn unavailable(e: crate::error::Error) -> Response {
    tracing::warn!(error = %e, "console: redis read failed");
    let mut res = html(
        StatusCode::SERVICE_UNAVAILABLE,
        pages::message(
            "Redis unavailable",
            "The records could not be read just now; try again in a few seconds.",
            true,
        ),
    );
    res.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    res
}

fn reads(s: &ApiState) -> runs::Reads {
    runs::Reads::new(
        s.queue.connection(),
        s.receipts.claim_prefix(),
        s.queue.keys().clone(),
    )
}

async fn css() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=300"),
        ],
        pages::CSS,
    )
        .into_response()
}

async fn login_form(State(s): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    match s.console.sessions.caller(&s.tokens, &headers, now_ms()) {
        Caller::Reader(_) => Redirect::to("/console/callbacks").into_response(),
        _ => html(StatusCode::OK, pages::login(None)),
    }
}

async fn login(
    State(s): State<Arc<ApiState>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    if !session::same_origin(&headers) {
        return html(
            StatusCode::FORBIDDEN,
            pages::login(Some(
                "Sign-in refused: the form was posted from another site.",
            )),
        );
    }
    let form: Vec<(String, String)> = std::str::from_utf8(&body)
        .ok()
        .and_then(|b| serde_urlencoded::from_str(b).ok())
        .unwrap_or_default();
    let token = form
        .iter()
        .find(|(k, _)| k == "token")
        .map(|(_, v)| v.trim())
        .unwrap_or("");
    match s.tokens.role_of_token(token.as_bytes()) {
        Some(role) if role.may_read() => {
            let value = s.console.sessions.issue(role, now_ms());
            tracing::info!(role = role.label(), "console: signed in");
            (
                StatusCode::SEE_OTHER,
                [
                    (header::SET_COOKIE, s.console.sessions.set_cookie(&value)),
                    (header::LOCATION, "/console/callbacks".to_string()),
                ],
            )
                .into_response()
        }
        Some(_) => html(
            StatusCode::FORBIDDEN,
            pages::login(Some(
                "This token may send but not read: use RINGBACK_READ_TOKEN or RINGBACK_API_TOKEN.",
            )),
        ),
        None => html(
            StatusCode::UNAUTHORIZED,
            pages::login(Some("Wrong token: it is not one of this server's tokens.")),
        ),
    }
}

async fn logout(State(s): State<Arc<ApiState>>) -> Response {
    (
        StatusCode::SEE_OTHER,
        [
            (header::SET_COOKIE, s.console.sessions.clear_cookie()),
            (header::LOCATION, "/console/login".to_string()),
        ],
    )
        .into_response()
}

#[derive(Debug, serde::Deserialize)]
struct ListParams {
    q: Option<String>,
    state: Option<String>,
    page: Option<String>,
}

async fn callbacks(
    State(s): State<Arc<ApiState>>,
    headers: HeaderMap,
    params: Result<Query<ListParams>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Some(page) = refused(&s, &headers) {
        return page;
    }
    let Ok(Query(p)) = params else {
        return html(
            StatusCode::BAD_REQUEST,
            pages::message(
                "Bad search",
                "This address's query could not be read: use the search form.",
                true,
            ),
        );
    };
    let q = p.q.unwrap_or_default().trim().to_string();
    if q.chars().count() > MAX_RUN_ID {
        return html(
            StatusCode::BAD_REQUEST,
            pages::message(
                "Search too long",
                &format!(
                    "A runId has at most {MAX_RUN_ID} characters; this search has {}.",
                    q.chars().count()
                ),
                true,
            ),
        );
    }
    let state = p.state.unwrap_or_default();
    if !state.is_empty() && !runs::FILTERS.contains(&state.as_str()) {
        return html(
            StatusCode::BAD_REQUEST,
            pages::message(
                "Unknown state",
                &format!("Filter by one of: {}.", runs::FILTERS.join(", ")),
                true,
            ),
        );
    }
    let page = p
        .page
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, 100_000);
    let query = pages::ListQuery { q, state, page };
    match list(&reads(&s), &query).await {
        Ok((rows, total, indexed)) => {
            let pages_n = total.div_ceil(PAGE_SIZE);
            html(
                StatusCode::OK,
                pages::callbacks(&query, &rows, total, pages_n, indexed),
            )
        }
        Err(e) => unavailable(e),
    }
}

/// The page's rows, how many match, and how many runs the index holds.
async fn list(
    r: &runs::Reads,
    query: &pages::ListQuery,
) -> Result<(Vec<runs::RunRow>, usize, u64), crate::error::Error> {
    r.hide_fallbacks().await?;
    let indexed = r.recent_count().await?;
    let skip = (query.page - 1) * PAGE_SIZE;
    if query.q.is_empty() && query.state.is_empty() {
        let ids = r
            .recent_ids(skip as isize, (skip + PAGE_SIZE) as isize - 1)
            .await?;
        return Ok((r.rows(&ids).await?, indexed as usize, indexed));
    }
    // A search or a filter: walk the index newest first. A search narrows by id before any
    // record is read; a filter reads each run's line in batches of SCAN_BATCH.
    let mut matched = 0usize;
    let mut page = vec![];
    let mut start = 0isize;
    loop {
        let mut ids = r.recent_ids(start, start + SCAN_BATCH as isize - 1).await?;
        let end = ids.len() < SCAN_BATCH;
        start += SCAN_BATCH as isize;
        if !query.q.is_empty() {
            ids.retain(|(id, _)| id.contains(query.q.as_str()));
        }
        let rows = if query.state.is_empty() {
            // ids only: read the records of the page's rows alone
            let keep: Vec<(String, i64)> = ids
                .iter()
                .enumerate()
                .filter(|(i, _)| (matched + i) >= skip && (matched + i) < skip + PAGE_SIZE)
                .map(|(_, id)| id.clone())
                .collect();
            matched += ids.len();
            page.extend(r.rows(&keep).await?);
            vec![]
        } else {
            r.rows(&ids).await?
        };
        for row in rows.into_iter().filter(|row| row.matches(&query.state)) {
            if matched >= skip && matched < skip + PAGE_SIZE {
                page.push(row);
            }
            matched += 1;
        }
        if end {
            break;
        }
    }
    Ok((page, matched, indexed))
}

async fn run(
    State(s): State<Arc<ApiState>>,
    headers: HeaderMap,
    run_id: Result<Path<String>, axum::extract::rejection::PathRejection>,
) -> Response {
    if let Some(page) = refused(&s, &headers) {
        return page;
    }
    let Ok(Path(run_id)) = run_id else {
        return html(
            StatusCode::BAD_REQUEST,
            pages::message(
                "Bad run id",
                "The run id in this address is not valid UTF-8.",
                true,
            ),
        );
    };
    let n = run_id.chars().count();
    if n == 0 || n > MAX_RUN_ID {
        let shown: String = run_id.chars().take(40).collect();
        return html(
            StatusCode::BAD_REQUEST,
            pages::message(
                "Bad run id",
                &format!(
                    "A runId has 1 to {MAX_RUN_ID} characters; this one has {n} (it starts “{shown}”)."
                ),
                true,
            ),
        );
    }
    match run_detail(&s, &run_id).await {
        Ok(d) if d.known => html(StatusCode::OK, pages::run(&d, now_ms())),
        Ok(_) => html(
            StatusCode::NOT_FOUND,
            pages::message(
                "Unknown run",
                &format!(
                    "Nothing is recorded for run “{run_id}”: never sent through this queue, or its records expired (RINGBACK_SENT_TTL_MS)."
                ),
                true,
            ),
        ),
        Err(e) => unavailable(e),
    }
}

/// A run's records, its question and its replies with the replies-queue job of each.
async fn run_detail(s: &ApiState, run_id: &str) -> Result<runs::RunDetail, crate::error::Error> {
    let reads = reads(s);
    let mut d = reads.run(run_id).await?;
    d.question = s.replies.reads.question_of(run_id).await?;
    for r in s.replies.reads.replies_of(run_id).await? {
        let job = match &r.job_id {
            Some(id) => reads.job_in(s.replies.queue.keys(), id).await?,
            None => None,
        };
        d.replies.push((r, job));
    }
    d.known |= d.question.is_some();
    Ok(d)
}

/// The inbound messages that answered no question, and the opt-outs Twilio reported.
async fn inbound(State(s): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    if let Some(page) = refused(&s, &headers) {
        return page;
    }
    let read = async {
        Ok::<_, crate::error::Error>((
            s.replies.reads.unmatched(200).await?,
            s.replies.opt_outs.list().await?,
        ))
    };
    match read.await {
        Ok((unmatched, opt_outs)) => html(StatusCode::OK, pages::inbound(&unmatched, &opt_outs)),
        Err(e) => unavailable(e),
    }
}

async fn drills(State(s): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    if let Some(page) = refused(&s, &headers) {
        return page;
    }
    let dir = s.console.drill_reports.clone();
    let files = match &dir {
        Some(d) => {
            let d = d.clone();
            tokio::task::spawn_blocking(move || drills::latest(&d))
                .await
                .unwrap_or_else(|e| Err(format!("reading the reports failed: {e}")))
        }
        None => Ok(vec![]),
    };
    let shown = dir.as_ref().map(|d| d.display().to_string());
    html(StatusCode::OK, pages::drills(shown.as_deref(), files))
}
