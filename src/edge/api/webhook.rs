//! The status webhook: a signed receipt checked, ranked into its run's record, counted, and
//! escalated when the record ends failed.

use super::{ApiState, AppError, refuse};
use std::sync::Arc;

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, header};
use sha1::Digest;

use crate::callbacks::escalation::Escalation;
use crate::callbacks::receipts::{Source, StatusUpdate};
use crate::twilio::Secret;
use crate::twilio::message::is_message_sid;
use crate::twilio::signature;

/// The first value of `name` in a decoded form or query string.
pub(super) fn form_field(params: &[(String, String)], name: &str) -> Option<String> {
    params
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
}

/// The form parameters of a request Twilio signed: form-encoded UTF-8, and its
/// `X-Twilio-Signature` made over the public URL Twilio called with the account's auth token
/// (or, during a rotation, the secondary one). `what` names the webhook in the refusal's log.
pub(super) fn signed_form(
    s: &ApiState,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &[u8],
    what: &str,
) -> Result<Vec<(String, String)>, AppError> {
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let text = std::str::from_utf8(body).ok().filter(|_| is_form);
    let params: Vec<(String, String)> = text
        .and_then(|t| serde_urlencoded::from_str(t).ok())
        .ok_or_else(|| {
            refuse(
                StatusCode::BAD_REQUEST,
                format!("body is not a form-encoded UTF-8 {what}"),
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
                "{what} with a missing or wrong X-Twilio-Signature refused (logged at most every 30 s; ringback_bad_signatures_total counts them all)");
        });
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "invalid X-Twilio-Signature",
            None,
        ));
    }
    Ok(params)
}

pub(super) async fn webhook_status(
    State(s): State<Arc<ApiState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<StatusCode, AppError> {
    let params = signed_form(&s, &uri, &headers, &body, "status callback")?;
    let field = |k: &str| form_field(&params, k);
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
    let query_field = |name: &str| form_field(&query, name);
    // with traces on, a span of its own trace, linked to the run's (its `traceparent` rode in
    // the StatusCallback URL): a receipt minutes or hours later does not stretch the run's trace
    let span = crate::trace::linked("status callback", query_field("tp").as_deref());
    span.attribute("ringback.message.status", status.clone());
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
    span.attribute("ringback.receipt.outcome", applied.outcome.clone());
    applied.count_delivery_error(update.error_code.as_deref());
    tracing::info!(%run_id, %status, outcome = %applied.outcome, "status callback");
    crate::telemetry::global()
        .status_callbacks
        .get_or_create(&crate::telemetry::OutcomeLabel {
            outcome: applied.outcome.clone(),
        })
        .inc();
    // a delivered text acknowledges its ladder where no answer was asked (idempotent: a
    // repeat finds the ladder stopped)
    if applied.status == "delivered" && applied.ladder {
        s.escalator.delivered(&run_id).await?;
    }
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
pub(super) fn params_hash(params: &[(String, String)]) -> String {
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
