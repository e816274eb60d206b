//! A create as Twilio answers it: the validation Twilio does (in its codes), the faults the
//! test asked for, and the message stored with the body as the account rewrites it.

use super::{
    DropConnection, Simulator, authorize, callbacks, field, record, segments, twilio_date,
    twilio_error,
};
use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::faults::{Call, CreateFault, TRIAL_PREFIX};
use ringback_twilio::message::{WHATSAPP, is_e164, is_recipient};
use ringback_twilio::{ApiError, Message};

/// An alphanumeric sender ID: 1–11 letters, digits and spaces, at least one letter.
pub(super) fn is_alphanumeric_sender(s: &str) -> bool {
    (1..=11).contains(&s.len())
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == ' ')
        && s.chars().any(|c| c.is_ascii_alphabetic())
}

/// Twilio's validation of a create, in Twilio's codes.
pub(super) fn validate(form: &[(String, String)]) -> Result<(), ApiError> {
    let to = field(form, "To").unwrap_or("");
    if to.is_empty() {
        return Err(ApiError::new(
            400,
            21604,
            "A 'To' phone number is required.",
        ));
    }
    let from = field(form, "From");
    let service = field(form, "MessagingServiceSid");
    if from.is_none_or(str::is_empty) && service.is_none_or(str::is_empty) {
        return Err(ApiError::new(
            400,
            21603,
            "A 'From' phone number is required.",
        ));
    }
    if !is_recipient(to) {
        return Err(ApiError::new(
            400,
            21211,
            format!("The 'To' number {to} is not a valid phone number."),
        ));
    }
    if let Some(from) = from.filter(|f| !f.is_empty())
        && !is_e164(from.strip_prefix(WHATSAPP).unwrap_or(from))
        && !is_alphanumeric_sender(from)
        && !(from.len() <= 8 && from.chars().all(|c| c.is_ascii_digit()))
    {
        return Err(ApiError::new(
            400,
            21212,
            format!(
                "The 'From' number {from} is not a valid phone number, shortcode, or alphanumeric sender ID."
            ),
        ));
    }
    if let Some(sid) = service.filter(|s| !s.is_empty())
        && !(sid.len() == 34
            && sid.starts_with("MG")
            && sid[2..].bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err(ApiError::new(
            400,
            21701,
            format!("The Messaging Service Sid {sid} is invalid."),
        ));
    }
    let body = field(form, "Body").unwrap_or("");
    if body.is_empty() && field(form, "MediaUrl").is_none() && field(form, "ContentSid").is_none() {
        return Err(ApiError::new(400, 21602, "Message body is required."));
    }
    if body.chars().count() > 1600 {
        return Err(ApiError::new(
            400,
            21617,
            "The concatenated message body exceeds the 1600 character limit.",
        ));
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
    if let Some(v) = field(form, "ValidityPeriod")
        && v.parse::<u32>().map_or(true, |n| !(1..=36000).contains(&n))
    {
        // Our reference has no code for this case; 21623 is the simulator's choice.
        return Err(ApiError::new(
            400,
            21623,
            "ValidityPeriod must be an integer between 1 and 36000.",
        ));
    }
    Ok(())
}

fn new_sid() -> String {
    format!("SM{}", uuid::Uuid::new_v4().simple())
}

pub(super) async fn create(
    State(sim): State<Arc<Simulator>>,
    Path(account): Path<String>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let form: Vec<(String, String)> = match serde_urlencoded::from_bytes(&body) {
        Ok(f) => f,
        Err(_) => {
            return twilio_error(ApiError::new(
                400,
                21100,
                "Unable to parse the request body.",
            ));
        }
    };
    record(
        &sim,
        "POST",
        format!("/2010-04-01/Accounts/{account}/Messages.json"),
        &[],
        &form,
        &headers,
    );
    if let Err(e) = authorize(&sim, &headers, &account, Call::Create) {
        return twilio_error(e);
    }
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return twilio_error(ApiError::new(
            415,
            20415,
            "Unsupported Media Type: use application/x-www-form-urlencoded",
        ));
    }
    if let Err(e) = validate(&form) {
        return twilio_error(e);
    }
    let to = field(&form, "To").unwrap_or_default().to_string();
    let fault = sim.faults().take_create(&to, rand::random::<f64>());
    if let Some(refused) = refusal(fault.as_ref()).await {
        return refused;
    }
    let failed = match &fault {
        Some(CreateFault::CreatedFailed { error_code }) => Some(*error_code),
        _ => None,
    };
    let created = accept(&sim, &account, &form, failed);
    answer_created(fault, created).await
}

/// The answer of a create that `fault` refuses before anything is created (an error, a 429, a
/// 5xx or a timeout that took nothing); `None` when the resource is created. Message and call
/// creates share it.
pub(crate) async fn refusal(fault: Option<&CreateFault>) -> Option<Response> {
    Some(match fault? {
        CreateFault::Permanent {
            code,
            status,
            message,
        } => {
            let msg = message
                .clone()
                .unwrap_or_else(|| format!("Simulated Twilio error {code}"));
            twilio_error(ApiError::new(*status, *code, msg))
        }
        CreateFault::RateLimited { retry_after_s } => {
            let mut r = twilio_error(ApiError::new(429, 20429, "Too Many Requests"));
            if let Ok(v) = retry_after_s.to_string().parse() {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
        CreateFault::ServerError {
            status,
            created: false,
        } => twilio_error(ApiError::new(*status, 20500, "Internal Server Error")),
        CreateFault::Slow {
            delay_ms,
            created: false,
        } => {
            // the request times out at the client before Twilio took it: nothing is created
            tokio::time::sleep(std::time::Duration::from_millis(*delay_ms)).await;
            twilio_error(ApiError::new(504, 20504, "Gateway Timeout"))
        }
        _ => return None,
    })
}

/// The answer of a create that made `created` under `fault`: 201, or a 5xx hiding it, a late
/// 201, or the connection dropped before any answer. Message and call creates share it.
pub(crate) async fn answer_created(
    fault: Option<CreateFault>,
    created: impl serde::Serialize,
) -> Response {
    match fault {
        Some(CreateFault::ServerError { status, .. }) => {
            twilio_error(ApiError::new(status, 20500, "Internal Server Error"))
        }
        Some(CreateFault::Slow { delay_ms, .. }) => {
            tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
            (StatusCode::CREATED, Json(created)).into_response()
        }
        Some(CreateFault::CreateThenDrop) => {
            let mut r = StatusCode::CREATED.into_response();
            r.extensions_mut().insert(DropConnection);
            r
        }
        _ => (StatusCode::CREATED, Json(created)).into_response(),
    }
}

/// Store a new message and start its status callbacks; `failed`: created already failed with
/// that error code.
fn accept(
    sim: &Arc<Simulator>,
    account: &str,
    form: &[(String, String)],
    failed: Option<i64>,
) -> Message {
    let sid = new_sid();
    let now = twilio_date(chrono::Utc::now());
    let faults = sim.faults();
    let sent_body = field(form, "Body").unwrap_or_default().to_string();
    let body = faults.rewrite.apply(&sent_body);
    let body = if faults.trial_prefix {
        format!("{TRIAL_PREFIX}{body}")
    } else {
        body
    };
    let pool = faults.service_pool.clone();
    drop(faults);
    let service = field(form, "MessagingServiceSid")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let from = field(form, "From")
        .filter(|s| !s.is_empty())
        .map(str::to_string);
    let message = Message {
        sid: sid.clone(),
        account_sid: Some(account.to_string()),
        api_version: Some("2010-04-01".into()),
        num_segments: Some(if service.is_some() {
            "0".into()
        } else {
            segments(&body).to_string()
        }),
        body: Some(body),
        date_created: Some(now.clone()),
        date_sent: None,
        date_updated: Some(now),
        direction: Some("outbound-api".into()),
        error_code: None,
        error_message: None,
        from: from.or_else(|| {
            service.as_ref().map(|_| {
                let i = rand::random_range(0..pool.len().max(1));
                pool.get(i)
                    .cloned()
                    .unwrap_or_else(|| "+15005550006".into())
            })
        }),
        status: Some(
            if service.is_some() {
                "accepted"
            } else {
                "queued"
            }
            .into(),
        ),
        messaging_service_sid: service,
        num_media: Some("0".into()),
        price: None,
        price_unit: Some("USD".into()),
        to: field(form, "To").map(str::to_string),
        uri: Some(format!(
            "/2010-04-01/Accounts/{account}/Messages/{sid}.json"
        )),
        subresource_uris: Some(serde_json::json!({
            "media": format!("/2010-04-01/Accounts/{account}/Messages/{sid}/Media.json"),
            "feedback": format!("/2010-04-01/Accounts/{account}/Messages/{sid}/Feedback.json"),
        })),
    };
    let mut message = message;
    if let Some(code) = failed {
        message.status = Some("failed".into());
        message.error_code = Some(code);
        message.error_message = Some("Message filtered".into());
    }
    sim.store.insert_sent(message.clone(), sent_body);
    let mut rule = sim
        .faults()
        .take_callbacks(message.to.as_deref().unwrap_or(""), rand::random::<f64>());
    if let Some(code) = failed {
        rule.final_status = Some("failed".into());
        rule.error_code = Some(code);
    }
    let callback = field(form, "StatusCallback").map(str::to_string);
    if let Some(url) = &callback {
        sim.store.set_status_callback(&message.sid, url);
    }
    tokio::spawn(callbacks::deliver(sim.clone(), sid, callback, rule));
    message
}
