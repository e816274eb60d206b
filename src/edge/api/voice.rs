//! The ladder's calls talk back: the keypad answer (`POST /api/notify/webhook/voice`, the
//! `<Gather action>` of each call) and the call's status callbacks (`POST
//! /api/notify/webhook/call-status`), both signed by Twilio and checked as every webhook, both
//! naming the run and the step in their query.
//!
//! A key that answers (a choice's digit, or `1` to acknowledge) stops the ladder, once
//! (the first acknowledgement on any channel wins), and a question's answer lands once on the
//! replies queue (`via: "call"`), kept first so a crash of `serve` loses nothing
//! ([`crate::callbacks::replies::keypad`]); a wrong key is asked once more, then the call ends
//! unanswered.
//! A call that ends without a key (`no-answer`, `busy`, `failed`, an answering machine,
//! `completed` with no key) climbs the ladder at once. Repeats and statuses arriving after a
//! later one change nothing ([`crate::callbacks::ladder::record::LadderRecord::call_status`]).

use super::inbound::EMPTY_TWIML;
use super::{ApiState, AppError, refuse};
use std::sync::Arc;

use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::callbacks::ladder::plan::{Plan, choice_of};
use crate::callbacks::ladder::{call_ended, twiml};
use crate::callbacks::replies::keypad::Keypad;

fn xml(body: String) -> Response {
    (StatusCode::OK, [(header::CONTENT_TYPE, "text/xml")], body).into_response()
}

/// The run and step a ladder webhook's query names.
fn run_and_step(uri: &axum::http::Uri) -> Result<(String, u32, String), AppError> {
    let query: Vec<(String, String)> = uri
        .query()
        .and_then(|q| serde_urlencoded::from_str(q).ok())
        .unwrap_or_default();
    let field = |k: &str| super::webhook::form_field(&query, k).filter(|v| !v.is_empty());
    let run = field("run");
    let step = field("step").and_then(|s| s.parse::<u32>().ok());
    match (run, step) {
        (Some(run), Some(step)) => Ok((run, step, field("n").unwrap_or_default())),
        _ => Err(refuse(
            StatusCode::BAD_REQUEST,
            "the query names no ladder step (run, step)",
            Some("run"),
        )),
    }
}

pub(super) async fn webhook_voice(
    State(s): State<Arc<ApiState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, AppError> {
    let params = super::webhook::signed_form(&s, &uri, &headers, &body, "keypad answer")?;
    let (run, _step, n) = run_and_step(&uri)?;
    let field = |k: &str| super::webhook::form_field(&params, k).filter(|v| !v.is_empty());
    let call_sid = field("CallSid").unwrap_or_default();
    let digits = field("Digits").unwrap_or_default();
    let who = field("To").unwrap_or_default();
    let ladders = &s.escalator.ladders;
    let record = ladders.read(&run).await?;
    let Some(plan) = record
        .get("plan")
        .and_then(|p| serde_json::from_str::<Plan>(p).ok())
    else {
        return Ok(xml(twiml::goodbye("Goodbye.", &s.voice)));
    };
    let choice = if plan.choices.is_empty() {
        (digits.trim() == "1").then(|| "acknowledged".to_string())
    } else {
        choice_of(&plan.choices, &digits).map(|i| plan.choices[i].clone())
    };
    let Some(choice) = choice else {
        if n == "0" {
            let path = uri.path_and_query().map_or("", |p| p.as_str());
            let action = format!(
                "{}{}{}",
                s.public_url.trim_end_matches('/'),
                path.replace("&n=0", ""),
                s.webhook_overrides
            );
            return Ok(xml(twiml::ask_again(&plan.choices, &action, &s.voice)));
        }
        return Ok(xml(twiml::goodbye("Goodbye.", &s.voice)));
    };
    let keypad = Keypad {
        run_id: run.clone(),
        call_sid,
        choice,
        digits,
        who,
        question: plan.question,
    };
    let said = if s.replies.keypad(&keypad, s.replies.now()).await?.took() {
        "Thank you. Goodbye."
    } else {
        "Thank you. This was answered already. Goodbye."
    };
    Ok(xml(twiml::goodbye(said, &s.voice)))
}

pub(super) async fn webhook_call_status(
    State(s): State<Arc<ApiState>>,
    OriginalUri(uri): OriginalUri,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, AppError> {
    let params = super::webhook::signed_form(&s, &uri, &headers, &body, "call status callback")?;
    let (run, step, _) = run_and_step(&uri)?;
    let field = |k: &str| super::webhook::form_field(&params, k).filter(|v| !v.is_empty());
    let (Some(sid), Some(status)) = (field("CallSid"), field("CallStatus")) else {
        return Err(refuse(
            StatusCode::BAD_REQUEST,
            "CallSid or CallStatus is missing",
            Some("CallStatus"),
        ));
    };
    let answered_by = field("AnsweredBy");
    let ladders = &s.escalator.ladders;
    let applied = ladders
        .call_status(
            &run,
            step,
            &sid,
            &status,
            answered_by.as_deref(),
            field("SequenceNumber").and_then(|n| n.parse().ok()),
        )
        .await?;
    tracing::info!(run_id = %run, step, %status, applied = applied.applied, "call status callback");
    s.replies.ladder_webhook_recorded();
    // A repeat climbs too (climbing is idempotent): the first post may have been recorded by a
    // `serve` that died before it climbed. A key pressed on this call and kept by such a
    // `serve` is an answer, not "answered without a key": it is finished first.
    if call_ended(&status)
        && applied.state == "climbing"
        && applied.step == step
        && !s.replies.finish_keypads_of_call(&sid).await?
    {
        let why = match (status.as_str(), answered_by.as_deref()) {
            ("completed", Some(m)) if m.starts_with("machine") || m == "fax" => {
                "an answering machine took the call".to_string()
            }
            ("completed", _) => "the call was answered without a key".to_string(),
            (other, _) => format!("call {other}"),
        };
        crate::telemetry::global().ladder_step("call", "not_answered");
        ladders.climb(&run, Some(step), &why).await?;
    }
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/xml")],
        EMPTY_TWIML,
    )
        .into_response())
}
