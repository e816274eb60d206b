//! The inbound webhook: Twilio posts each message the human sends to the number (or the
//! Messaging Service) here. Signed and checked as status callbacks are; answered with an empty
//! TwiML `<Response/>`, so ringback itself never texts back from this route (Twilio answers
//! STOP, START and HELP on its own). The message is handed to [`crate::callbacks::replies`];
//! one that answers no question is forwarded, signed again for its URL, to whatever handled
//! inbound messages before (`RINGBACK_INBOUND_FORWARD_URL`), whose TwiML answer is relayed; one
//! the URL did not accept is forwarded again by `serve`'s sweep ([`forward_due`]).

use super::{ApiState, AppError, refuse};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, header};

use crate::callbacks::replies::{Inbound, Match, Media};
use crate::twilio::message::is_message_sid;

/// An empty TwiML answer: nothing is sent back.
pub const EMPTY_TWIML: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Response/>"#;

/// How long a forward may take: Twilio waits 15 s for the whole webhook.
const FORWARD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// The most media links one message carries (Twilio's limit).
const MAX_MEDIA: usize = 10;

fn twiml(body: String) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/xml")], body).into_response()
}

pub(super) async fn webhook_inbound(
    State(s): State<Arc<ApiState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, AppError> {
    let params = super::webhook::signed_form(&s, &uri, &headers, &body, "inbound message")?;
    let field = |k: &str| super::webhook::form_field(&params, k).filter(|v| !v.is_empty());
    let sid = field("MessageSid")
        .or_else(|| field("SmsMessageSid"))
        .or_else(|| field("SmsSid"))
        .unwrap_or_default();
    if !is_message_sid(&sid) {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "MessageSid is missing or malformed",
            Some("MessageSid"),
        ));
    }
    let Some(from) = field("From") else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "From is missing",
            Some("From"),
        ));
    };
    let media_count: usize = field("NumMedia")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
        .min(MAX_MEDIA);
    let media = (0..media_count)
        .filter_map(|i| {
            Some(Media {
                url: field(&format!("MediaUrl{i}"))?,
                content_type: field(&format!("MediaContentType{i}")),
            })
        })
        .collect();
    let inbound = Inbound {
        message_sid: sid.clone(),
        from,
        to: field("To").unwrap_or_default(),
        text: field("Body").unwrap_or_default(),
        media,
        messaging_service_sid: field("MessagingServiceSid"),
        opt_out_type: field("OptOutType"),
        received_at: s.replies.now(),
        form: params.clone(),
    };
    let received = s.replies.receive(inbound).await?;
    crate::telemetry::global()
        .inbound_messages
        .get_or_create(&crate::telemetry::OutcomeLabel {
            outcome: if received.repeat {
                "repeat".into()
            } else {
                received.matched.label().into()
            },
        })
        .inc();
    tracing::info!(%sid, matched = received.matched.label(), repeat = received.repeat, job = %received.job_id, "inbound message");
    if let (true, Some(url)) = (
        received.matched.forwarded() && !received.repeat,
        s.inbound_forward.as_deref(),
    ) && let Forwarded::Accepted(answer) = forward_to(&s, url, &params).await
    {
        s.replies.forwards.done(&sid).await?;
        // never a reply to an opt-out keyword: Twilio answers those itself
        if let Some(answer) = answer.filter(|_| received.matched == Match::Unmatched) {
            return Ok(twiml(answer));
        }
    }
    Ok(twiml(EMPTY_TWIML.into()))
}

/// What became of a forward.
enum Forwarded {
    /// The URL answered 2xx, with its TwiML answer when it gave one.
    Accepted(Option<String>),
    /// Refused or unreachable: the sweep tries again.
    NotYet,
}

/// `serve`'s sweep: forward again each message whose forward is due (refused, unreachable, or
/// cut short by a crash) as of `now` (ms); one still not accepted is tried again
/// [`FORWARD_RETRY`] later. Returns how many the URL accepted.
///
/// [`FORWARD_RETRY`]: crate::callbacks::replies::forwards::FORWARD_RETRY
pub async fn forward_due(s: &ApiState, now: i64) -> Result<usize, crate::error::Error> {
    let Some(url) = s.inbound_forward.as_deref() else {
        return Ok(0);
    };
    let forwards = &s.replies.forwards;
    let mut accepted = 0;
    for r in forwards.due(now, 100).await? {
        let sid = &r.inbound.message_sid;
        match forward_to(s, url, &r.inbound.form).await {
            Forwarded::Accepted(_) => {
                forwards.done(sid).await?;
                accepted += 1;
            }
            Forwarded::NotYet => {
                let retry = crate::callbacks::replies::forwards::FORWARD_RETRY;
                forwards.later(sid, now + retry.as_millis() as i64).await?;
            }
        }
    }
    Ok(accepted)
}

/// POST the message's parameters to `url`, signed for it with the account's auth token (so the
/// Node app's `twilio.webhook()` check passes); its TwiML answer when it gave one.
async fn forward_to(s: &ApiState, url: &str, params: &[(String, String)]) -> Forwarded {
    let signature = crate::twilio::signature::sign(s.twilio_auth_token.expose(), url, params);
    let sent = s
        .http
        .post(url)
        .header("X-Twilio-Signature", signature)
        .form(params)
        .timeout(FORWARD_TIMEOUT)
        .send()
        .await;
    let outcome = |o: &str| {
        crate::telemetry::global()
            .inbound_forwards
            .get_or_create(&crate::telemetry::OutcomeLabel { outcome: o.into() })
            .inc();
    };
    match sent {
        Ok(resp) if resp.status().is_success() => {
            outcome("ok");
            let xml = resp
                .headers()
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.contains("xml"));
            let text = resp.text().await.ok();
            Forwarded::Accepted(text.filter(|t| xml && t.contains("<Response")))
        }
        Ok(resp) => {
            outcome("refused");
            tracing::warn!(%url, status = resp.status().as_u16(), "the inbound forward was refused; forwarded again later");
            Forwarded::NotYet
        }
        Err(e) => {
            outcome("error");
            tracing::warn!(%url, error = %e, "the inbound forward failed; forwarded again later");
            Forwarded::NotYet
        }
    }
}
