//! Twilio's Calls API, simulated: a call created with its TwiML inline, fetched, listed by
//! number, ended by `Status=completed`; it then rings and ends as the `calls` fault rules say
//! (answered with keypad digits, not answered, busy, failed, an answering machine), posting
//! signed status callbacks (in order, shuffled or twice) and the `<Gather>` post with the
//! chosen digits ([`progress`]). Creates take the `call_create` fault rules, the same faults a
//! message create takes (5xx, 429, an answer dropped after the create).
//!
//! Routes: `POST|GET /2010-04-01/Accounts/{AccountSid}/Calls.json`,
//! `GET|POST /2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json`, `GET /sim/calls`.

pub mod progress;

use std::sync::{Arc, Mutex};

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};

use super::create::{answer_created, refusal};
use super::faults::{Call as Request, Match};
use super::{Simulator, authorize, field, record, twilio_date, twilio_error};
use ringback_twilio::ApiError;
use ringback_twilio::call::{Call, CallPage, is_call_sid};
use ringback_twilio::message::is_e164;

/// How a call to a number goes, once created (`calls` in the fault rules; the first rule that
/// matches applies; none: answered, and `1` pressed).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRule {
    /// Which calls it applies to (by number, rate or uses left), flattened into the rule.
    #[serde(flatten)]
    pub when: Match,
    /// `answered` (default), `no-answer`, `busy`, `failed`, or `machine` (an answering machine
    /// picks up: `AnsweredBy=machine_end_beep`, no keypad post).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The keys pressed at the `<Gather>` (default `1`); empty: nothing pressed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digits: Option<String>,
    /// Press the keys at the second `<Gather>` only (the first times out).
    #[serde(default)]
    pub second_gather: bool,
    /// Send the status callbacks in a random order.
    #[serde(default)]
    pub shuffled: bool,
    /// Send each status callback (and the keypad post) twice, as a retry would.
    #[serde(default)]
    pub duplicate: bool,
    /// Send no status callbacks (the call still progresses; fetch and list show it).
    #[serde(default)]
    pub no_callbacks: bool,
    /// Wait this long before each step (ringing, answering, pressing, ending); 20 ms when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step_ms: Option<u64>,
}

/// Every call created, in order, behind one lock; emptied by `POST /sim/reset`.
#[derive(Debug, Default)]
pub struct Calls {
    inner: Mutex<Vec<SimCall>>,
}

/// A call as the simulator keeps it: the resource, and what Twilio keeps beside it.
#[derive(Debug, Clone, Serialize)]
pub struct SimCall {
    /// The resource as fetch answers it.
    pub call: Call,
    /// The TwiML it was created with.
    pub twiml: String,
    /// Its `StatusCallback`, if any.
    pub status_callback: Option<String>,
    /// Keypad posts made for it (the digits of each).
    pub gathered: Vec<String>,
    /// The next status callback's `SequenceNumber` (from 0, per call, as Twilio numbers them).
    #[serde(skip)]
    pub(crate) sequence: u32,
}

impl Calls {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<SimCall>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every call, oldest first.
    pub fn all(&self) -> Vec<SimCall> {
        self.lock().clone()
    }

    /// The calls made to `to`.
    pub fn to(&self, to: &str) -> Vec<SimCall> {
        self.lock()
            .iter()
            .filter(|c| c.call.to.as_deref() == Some(to))
            .cloned()
            .collect()
    }

    /// The call with this sid, as it is now.
    pub fn get(&self, sid: &str) -> Option<SimCall> {
        self.lock().iter().find(|c| c.call.sid == sid).cloned()
    }

    /// Change the call with this sid; false when there is none.
    pub fn update(&self, sid: &str, f: impl FnOnce(&mut SimCall)) -> bool {
        match self.lock().iter_mut().find(|c| c.call.sid == sid) {
            Some(c) => {
                f(c);
                true
            }
            None => false,
        }
    }

    /// Forget every call.
    pub fn reset(&self) {
        self.lock().clear();
    }
}

/// A call's status is one it cannot leave.
pub(crate) fn ended(status: Option<&str>) -> bool {
    matches!(
        status,
        Some("completed" | "busy" | "no-answer" | "failed" | "canceled")
    )
}

/// Twilio's validation of a call's create, in Twilio's codes.
fn validate(form: &[(String, String)]) -> Result<(), ApiError> {
    let to = field(form, "To").unwrap_or("");
    let from = field(form, "From").unwrap_or("");
    if to.is_empty() {
        return Err(ApiError::new(400, 21201, "No 'To' number is specified"));
    }
    if from.is_empty() {
        return Err(ApiError::new(400, 21213, "No 'From' number is specified"));
    }
    if !is_e164(to) {
        return Err(ApiError::new(
            400,
            21211,
            format!("Invalid 'To' Phone Number: {to}"),
        ));
    }
    if !is_e164(from) {
        return Err(ApiError::new(
            400,
            21212,
            format!("Invalid 'From' Phone Number: {from}"),
        ));
    }
    let twiml = field(form, "Twiml").unwrap_or("");
    if twiml.is_empty() && field(form, "Url").is_none() && field(form, "ApplicationSid").is_none() {
        return Err(ApiError::new(
            400,
            21200,
            "Either Url, Twiml or ApplicationSid is required",
        ));
    }
    if twiml.chars().count() > 4000 {
        return Err(ApiError::new(
            400,
            21200,
            "Twiml exceeds the maximum of 4000 characters",
        ));
    }
    for (k, v) in form {
        if k == "StatusCallbackEvent"
            && !matches!(
                v.as_str(),
                "initiated" | "ringing" | "answered" | "completed"
            )
        {
            return Err(ApiError::new(
                400,
                21626,
                format!("Invalid StatusCallbackEvent: {v}"),
            ));
        }
    }
    if let Some(cb) = field(form, "StatusCallback")
        && !(cb.starts_with("http://") || cb.starts_with("https://"))
    {
        return Err(ApiError::new(
            400,
            21609,
            format!("The StatusCallback URL {cb} is not a valid URL."),
        ));
    }
    Ok(())
}

fn form_of(body: &[u8]) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_bytes(body)
        .map_err(|_| ApiError::new(400, 21100, "Unable to parse the request body."))
}

fn not_found(account: &str, sid: &str) -> Response {
    twilio_error(ApiError::new(
        404,
        20404,
        format!(
            "The requested resource /2010-04-01/Accounts/{account}/Calls/{sid}.json was not found"
        ),
    ))
}

/// `POST …/Calls.json`.
pub(crate) async fn create(
    State(sim): State<Arc<Simulator>>,
    Path(account): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form = match form_of(&body) {
        Ok(f) => f,
        Err(e) => return twilio_error(e),
    };
    record(
        &sim,
        "POST",
        format!("/2010-04-01/Accounts/{account}/Calls.json"),
        &[],
        &form,
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Request::Create) {
        return twilio_error(e);
    }
    if let Err(e) = validate(&form) {
        return twilio_error(e);
    }
    let to = field(&form, "To").unwrap_or_default().to_string();
    let fault = sim.faults().take_call_create(&to, rand::random::<f64>());
    if let Some(refused) = refusal(fault.as_ref()).await {
        return refused;
    }
    let call = accept(&sim, &account, &form);
    answer_created(fault, call).await
}

/// Store a new call and start it ringing.
fn accept(sim: &Arc<Simulator>, account: &str, form: &[(String, String)]) -> Call {
    let sid = format!("CA{}", uuid::Uuid::new_v4().simple());
    let now = twilio_date(chrono::Utc::now());
    let call = Call {
        sid: sid.clone(),
        account_sid: Some(account.to_string()),
        status: Some("queued".into()),
        to: field(form, "To").map(str::to_string),
        from: field(form, "From").map(str::to_string),
        direction: Some("outbound-api".into()),
        answered_by: None,
        date_created: Some(now.clone()),
        date_updated: Some(now),
        start_time: None,
        end_time: None,
        duration: None,
        price: None,
        price_unit: Some("USD".into()),
        api_version: Some("2010-04-01".into()),
        uri: Some(format!("/2010-04-01/Accounts/{account}/Calls/{sid}.json")),
    };
    let rule = sim
        .faults()
        .take_call(call.to.as_deref().unwrap_or(""), rand::random::<f64>());
    let machine_detection = field(form, "MachineDetection").is_some();
    sim.calls
        .inner
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(SimCall {
            call: call.clone(),
            twiml: field(form, "Twiml").unwrap_or_default().to_string(),
            status_callback: field(form, "StatusCallback").map(str::to_string),
            gathered: vec![],
            sequence: 0,
        });
    tokio::spawn(progress::run(sim.clone(), sid, rule, machine_detection));
    call
}

/// `GET …/Calls/{Sid}.json`.
pub(crate) async fn fetch(
    State(sim): State<Arc<Simulator>>,
    Path((account, sid_json)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    record(
        &sim,
        "GET",
        format!("/2010-04-01/Accounts/{account}/Calls/{sid_json}"),
        &[],
        &[],
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Request::Fetch) {
        return twilio_error(e);
    }
    let sid = sid_json.strip_suffix(".json").unwrap_or(&sid_json);
    match sim.calls.get(sid).filter(|_| is_call_sid(sid)) {
        Some(c) => Json(c.call).into_response(),
        None => not_found(&account, sid),
    }
}

/// `POST …/Calls/{Sid}.json`: `Status=completed` ends a call that rings or is in progress
/// (`canceled` one still queued or ringing); a call already over is refused, 21220.
pub(crate) async fn update(
    State(sim): State<Arc<Simulator>>,
    Path((account, sid_json)): Path<(String, String)>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form = match form_of(&body) {
        Ok(f) => f,
        Err(e) => return twilio_error(e),
    };
    record(
        &sim,
        "POST",
        format!("/2010-04-01/Accounts/{account}/Calls/{sid_json}"),
        &[],
        &form,
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Request::Create) {
        return twilio_error(e);
    }
    let sid = sid_json.strip_suffix(".json").unwrap_or(&sid_json);
    let Some(current) = sim.calls.get(sid).filter(|_| is_call_sid(sid)) else {
        return not_found(&account, sid);
    };
    let wanted = field(&form, "Status").unwrap_or("");
    if !matches!(wanted, "completed" | "canceled") {
        return twilio_error(ApiError::new(
            400,
            21218,
            format!("Invalid Status: {wanted}"),
        ));
    }
    let status = current.call.status.as_deref();
    if ended(status) || (wanted == "canceled" && status == Some("in-progress")) {
        return twilio_error(ApiError::new(
            400,
            21220,
            "Unable to update record: Call is not in-progress",
        ));
    }
    let final_status = if status == Some("in-progress") {
        "completed"
    } else {
        wanted
    };
    progress::end(&sim, sid, final_status).await;
    match sim.calls.get(sid) {
        Some(c) => Json(c.call).into_response(),
        None => not_found(&account, sid),
    }
}

/// `GET …/Calls.json`, filtered by `To`, `From` and `Status`, newest first, paged by
/// `PageSize` with a `PageToken` cursor.
pub(crate) async fn list(
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
        format!("/2010-04-01/Accounts/{account}/Calls.json"),
        &query,
        &[],
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Request::List) {
        return twilio_error(e);
    }
    let get = |name: &str| {
        query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    };
    let page_size = match get("PageSize").map(str::parse::<usize>) {
        None => 50,
        Some(Ok(n)) if (1..=1000).contains(&n) => n,
        Some(_) => {
            return twilio_error(ApiError::new(
                400,
                20001,
                "PageSize must be between 1 and 1000",
            ));
        }
    };
    let offset: usize = get("PageToken")
        .and_then(|t| t.strip_prefix("PO"))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let mut calls: Vec<Call> = sim
        .calls
        .all()
        .into_iter()
        .rev()
        .map(|c| c.call)
        .filter(|c| get("To").is_none_or(|t| c.to.as_deref() == Some(t)))
        .filter(|c| get("From").is_none_or(|f| c.from.as_deref() == Some(f)))
        .filter(|c| get("Status").is_none_or(|s| c.status.as_deref() == Some(s)))
        .collect();
    let total = calls.len();
    let end = offset.saturating_add(page_size).min(total);
    let page: Vec<Call> = calls.drain(offset.min(total)..end).collect();
    let mut next = None;
    if end < total {
        let mut q: Vec<(String, String)> = query
            .iter()
            .filter(|(k, _)| k != "PageToken" && k != "Page")
            .cloned()
            .collect();
        q.push(("PageToken".into(), format!("PO{end}")));
        next = Some(format!(
            "/2010-04-01/Accounts/{account}/Calls.json?{}",
            serde_urlencoded::to_string(&q).unwrap_or_default()
        ));
    }
    Json(CallPage {
        calls: page,
        next_page_uri: next,
        page_size: page_size as i64,
    })
    .into_response()
}

/// `GET /sim/calls`: every call, with its TwiML and keypad posts.
pub(crate) async fn sim_calls(State(sim): State<Arc<Simulator>>) -> Json<Vec<SimCall>> {
    Json(sim.calls.all())
}
