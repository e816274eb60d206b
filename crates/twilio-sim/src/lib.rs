//! `ringback twilio-sim`: a stand-in for Twilio's Messages API on loopback, close enough to
//! drill every failure. Same REST shapes and error bodies as Twilio; validates what Twilio
//! validates; lists and pages as Twilio does ([`list`]: `date_sent` null until sent, cursor
//! paging); posts signed status callbacks; injects faults on demand ([`faults`]: create errors,
//! callback disorder, refused credentials, trial-account bodies); remembers every accepted
//! message (`GET /sim/messages`, `GET /sim/stats`).
//!
//! Calls too ([`voice`]): created with inline TwiML, rung through the outcomes a test asks for,
//! their status callbacks and keypad posts signed as Twilio signs them.
//!
//! Routes: `POST|GET /2010-04-01/Accounts/{AccountSid}/Messages.json`,
//! `GET /2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json`, `GET /sim/messages`,
//! `GET /sim/stats`, `GET /sim/arrivals` (bodies and arrival times in ms, for the latency
//! benchmark), `GET /sim/requests`, `GET|PUT /sim/faults`, `POST /sim/reset`.
//!
//! A tool beside the edge, never run in production: it speaks the provider's types
//! (`ringback_twilio`) and the shared modules only (`docs/architecture.md`).

pub mod callbacks;
mod create;
pub mod faults;
pub mod list;
pub mod server;
pub mod store;
pub mod voice;
pub mod webhook;

use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine;

use create::create;
#[cfg(test)]
use create::validate;
use faults::{Call, Faults};
use list::ListQuery;
use ringback_twilio::message::is_message_sid;
use ringback_twilio::{ApiError, Message, Secret};
use store::{RecordedRequest, Store};

/// Who the simulator is: the account it serves and the credentials it accepts.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The one account served (`AC…`): the Basic auth user, and the `{AccountSid}` in paths.
    pub account_sid: String,
    /// The account's auth token: the Basic auth password, and the key status callbacks are
    /// signed with (`X-Twilio-Signature`).
    pub auth_token: Secret,
    /// Extra API keys (`SK…`, secret) accepted for Basic auth.
    pub api_keys: Vec<(String, Secret)>,
}

/// Shared state of a running simulator.
#[derive(Debug)]
pub struct Simulator {
    /// The account and the credentials it accepts.
    pub config: SimConfig,
    /// Every accepted message, and the requests and arrivals the `/sim/*` routes show.
    pub store: Store,
    /// The fault rules in force, replaced whole by `PUT /sim/faults`.
    pub faults: Mutex<Faults>,
    /// Every call created ([`voice`]).
    pub calls: voice::Calls,
    http: reqwest::Client,
}

/// Marks a response the server must not send: the connection is dropped instead.
#[derive(Clone, Copy, Debug)]
pub struct DropConnection;

impl Simulator {
    /// A simulator with no messages, `faults` in force from now (their timers start here).
    pub fn new(config: SimConfig, faults: Faults) -> Arc<Self> {
        ringback_twilio::client::install_tls_provider();
        let http = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(15))
            .build()
            .unwrap_or_else(|_| reqwest::Client::new());
        Arc::new(Self {
            config,
            store: Store::default(),
            faults: Mutex::new(faults.arm(std::time::Instant::now())),
            calls: voice::Calls::default(),
            http,
        })
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The simulator's router (tests call it with `oneshot`, the server over TCP).
pub fn app(sim: Arc<Simulator>) -> Router {
    Router::new()
        .route(
            "/2010-04-01/Accounts/{account}/Messages.json",
            post(create).get(list),
        )
        .route(
            "/2010-04-01/Accounts/{account}/Messages/{sid_json}",
            get(fetch),
        )
        .route(
            "/2010-04-01/Accounts/{account}/Calls.json",
            post(voice::create).get(voice::list),
        )
        .route(
            "/2010-04-01/Accounts/{account}/Calls/{sid_json}",
            get(voice::fetch).post(voice::update),
        )
        .route("/sim/calls", get(voice::sim_calls))
        .route("/sim/messages", get(sim_messages))
        .route(
            "/sim/arrivals",
            get(|State(s): State<Arc<Simulator>>| async move { Json(s.store.arrivals()) }),
        )
        .route(
            "/sim/stats",
            get(|State(s): State<Arc<Simulator>>| async move { Json(s.store.stats()) }),
        )
        .route(
            "/sim/requests",
            get(|State(s): State<Arc<Simulator>>| async move { Json(s.store.requests()) }),
        )
        .route("/sim/faults", get(get_faults).put(put_faults))
        .route("/sim/reset", post(reset))
        .with_state(sim)
}

fn twilio_error(e: ApiError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::BAD_REQUEST);
    (status, Json(e)).into_response()
}

/// Basic auth against the account SID + token or an API key; the path's account must match.
/// While an `auth` fault covers `call`, every credential is refused (see [`faults`]).
fn authorize(
    sim: &Simulator,
    headers: &HeaderMap,
    account: &str,
    call: Call,
) -> Result<(), ApiError> {
    if sim.faults().refuses(call, std::time::Instant::now()) {
        return Err(ApiError::new(401, 20003, "Authenticate"));
    }
    let creds = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok());
    let ok = creds
        .as_deref()
        .and_then(|c| c.split_once(':'))
        .is_some_and(|(user, pass)| {
            (user == sim.config.account_sid && pass == sim.config.auth_token.expose())
                || sim
                    .config
                    .api_keys
                    .iter()
                    .any(|(sid, secret)| user == sid && pass == secret.expose())
        });
    if !ok {
        return Err(ApiError::new(401, 20003, "Authenticate"));
    }
    if account != sim.config.account_sid {
        return Err(ApiError::new(
            404,
            20404,
            format!(
                "The requested resource /2010-04-01/Accounts/{account}/Messages.json was not found"
            ),
        ));
    }
    Ok(())
}

fn record(
    sim: &Simulator,
    method: &str,
    path: String,
    query: &[(String, String)],
    form: &[(String, String)],
    headers: &HeaderMap,
) {
    sim.store.record(RecordedRequest {
        method: method.into(),
        path,
        query: query.to_vec(),
        form: form.to_vec(),
        content_type: headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        basic_auth: headers
            .get(header::AUTHORIZATION)
            .is_some_and(|v| v.as_bytes().starts_with(b"Basic ")),
    });
}

fn field<'a>(form: &'a [(String, String)], name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// Segments as Twilio bills them: GSM-7 160/153, otherwise UCS-2 70/67 characters.
fn segments(body: &str) -> usize {
    let n = body.chars().count();
    let gsm = body.chars().all(|c| c.is_ascii() && c != '`');
    let (single, multi) = if gsm { (160, 153) } else { (70, 67) };
    if n <= single { 1 } else { n.div_ceil(multi) }
}

/// A time as Twilio writes it in `date_created` and friends: RFC 2822 with a two-digit day
/// (`Wed, 02 Dec 2026 10:58:40 +0000`).
pub fn twilio_date(t: chrono::DateTime<chrono::Utc>) -> String {
    t.format("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

async fn fetch(
    State(sim): State<Arc<Simulator>>,
    Path((account, sid_json)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    record(
        &sim,
        "GET",
        format!("/2010-04-01/Accounts/{account}/Messages/{sid_json}"),
        &[],
        &[],
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Call::Fetch) {
        return twilio_error(e);
    }
    let sid = sid_json.strip_suffix(".json").unwrap_or(&sid_json);
    match sim.store.get(sid).filter(|_| is_message_sid(sid)) {
        Some(m) => Json(m).into_response(),
        None => twilio_error(ApiError::new(
            404,
            20404,
            format!(
                "The requested resource /2010-04-01/Accounts/{account}/Messages/{sid}.json was not found"
            ),
        )),
    }
}

/// The list call, filtered and paged as Twilio does it ([`list`]).
async fn list(
    State(sim): State<Arc<Simulator>>,
    Path(account): Path<String>,
    RawQuery(raw): RawQuery,
    headers: HeaderMap,
) -> Response {
    let query: Vec<(String, String)> =
        serde_urlencoded::from_str(raw.as_deref().unwrap_or("")).unwrap_or_default();
    record(
        &sim,
        "GET",
        format!("/2010-04-01/Accounts/{account}/Messages.json"),
        &query,
        &[],
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Call::List) {
        return twilio_error(e);
    }
    let query = match ListQuery::parse(&query) {
        Ok(q) => q,
        Err(e) => return twilio_error(e),
    };
    let (order, lag) = {
        let f = sim.faults();
        (f.list_order, f.list_lag_ms)
    };
    let matching = match lag {
        None => sim.store.list(|m| query.matches(m)),
        Some(lag) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            sim.store
                .list_arrived_by(now - lag as i64, |m| query.matches(m))
        }
    };
    Json(query.page_in(&account, matching, order)).into_response()
}

#[derive(serde::Deserialize)]
struct MessagesQuery {
    to: Option<String>,
}

async fn sim_messages(
    State(sim): State<Arc<Simulator>>,
    Query(q): Query<MessagesQuery>,
) -> Json<Vec<Message>> {
    Json(
        sim.store
            .all()
            .into_iter()
            .filter(|m| q.to.as_ref().is_none_or(|t| m.to.as_ref() == Some(t)))
            .collect(),
    )
}

async fn get_faults(State(sim): State<Arc<Simulator>>) -> Json<Faults> {
    Json(sim.faults().clone())
}

async fn put_faults(State(sim): State<Arc<Simulator>>, Json(faults): Json<Faults>) -> StatusCode {
    *sim.faults() = faults.arm(std::time::Instant::now());
    StatusCode::NO_CONTENT
}

async fn reset(State(sim): State<Arc<Simulator>>) -> StatusCode {
    sim.store.reset();
    sim.calls.reset();
    *sim.faults() = Faults::default();
    StatusCode::NO_CONTENT
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn dates_are_written_as_twilio_writes_them() {
        let t = chrono::DateTime::from_timestamp(1_796_209_120, 0).unwrap();
        assert_eq!(twilio_date(t), "Wed, 02 Dec 2026 10:58:40 +0000");
        assert!(chrono::DateTime::parse_from_rfc2822(&twilio_date(t)).is_ok());
    }

    #[test]
    fn rewrites_bodies_as_a_messaging_service_does() {
        let r = faults::Rewrite {
            smart_encoding: true,
            shorten_urls: true,
            append: Some(" STOP to end".into()),
            redact: false,
        };
        assert_eq!(
            r.apply("It\u{2019}s done \u{2014} see https://acme.dev/x\u{2026}"),
            "It's done - see https://twil.io/s1m STOP to end"
        );
        let redact = faults::Rewrite {
            redact: true,
            ..Default::default()
        };
        assert_eq!(redact.apply("secret"), "");
    }

    #[test]
    fn validates_what_twilio_validates() {
        let code = |form: &[(&str, &str)]| validate(&f(form)).err().and_then(|e| e.code);
        assert_eq!(
            code(&[("From", "+15005550006"), ("Body", "x")]),
            Some(21604)
        );
        assert_eq!(code(&[("To", "+15558675310"), ("Body", "x")]), Some(21603));
        assert_eq!(
            code(&[
                ("To", "5558675310"),
                ("From", "+15005550006"),
                ("Body", "x")
            ]),
            Some(21211)
        );
        assert_eq!(
            code(&[("To", "+15558675310"), ("From", "+15005550006")]),
            Some(21602)
        );
        let long = "x".repeat(1601);
        assert_eq!(
            code(&[
                ("To", "+15558675310"),
                ("From", "+15005550006"),
                ("Body", &long)
            ]),
            Some(21617)
        );
        assert_eq!(
            code(&[
                ("To", "+15558675310"),
                ("From", "+15005550006"),
                ("Body", &long[..1600])
            ]),
            None
        );
        assert_eq!(
            code(&[
                ("To", "+15558675310"),
                ("MessagingServiceSid", "MG123"),
                ("Body", "x")
            ]),
            Some(21701)
        );
        assert_eq!(
            code(&[("To", "+15558675310"), ("From", "ringback"), ("Body", "x")]),
            None
        );
    }

    #[test]
    fn counts_segments() {
        assert_eq!(segments(&"a".repeat(160)), 1);
        assert_eq!(segments(&"a".repeat(161)), 2);
        assert_eq!(segments(&"é".repeat(71)), 2);
    }
}
