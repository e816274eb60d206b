//! Helpers of the HTTP API tests: signed status callbacks, send calls, the router's state.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Request;
use ringback::edge::api::ApiState;
use ringback::twilio::signature;

use super::RedisServer;

pub(crate) const TOKEN: &str = super::TWILIO_TOKEN;
pub(crate) const API_TOKEN: &str = super::API_TOKEN;
pub(crate) const PUBLIC: &str = super::PUBLIC_URL;
pub(crate) const SID: &str = "SM0123456789abcdef0123456789abcdef";

pub(crate) async fn state(server: &RedisServer, queue: &str) -> Arc<ApiState> {
    super::api_state(server, queue).await
}

pub(crate) fn form(params: &[(&str, &str)]) -> (Vec<(String, String)>, String) {
    let owned: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let body = serde_urlencoded::to_string(&owned).unwrap();
    (owned, body)
}

pub(crate) fn callback(path: &str, params: &[(&str, &str)], token: Option<&str>) -> Request<Body> {
    let (owned, body) = form(params);
    let sig = signature::sign(TOKEN, &format!("{PUBLIC}{path}"), &owned);
    let mut req = Request::post(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("X-Twilio-Signature", sig);
    if let Some(t) = token {
        req = req.header("I-Twilio-Idempotency-Token", t);
    }
    req.body(Body::from(body)).unwrap()
}

pub(crate) fn status_params<'a>(
    status: &'a str,
    extra: &[(&'a str, &'a str)],
) -> Vec<(&'a str, &'a str)> {
    let mut p = vec![
        ("MessageSid", SID),
        ("SmsSid", SID),
        ("MessageStatus", status),
        ("SmsStatus", status),
        ("AccountSid", "AC0123456789abcdef0123456789abcdef"),
    ];
    p.extend_from_slice(extra);
    p
}

pub(crate) async fn record(
    s: &ApiState,
    run: &str,
) -> ringback::callbacks::receipts::CallbackRecord {
    s.receipts.record(run, None).await.unwrap()
}

pub(crate) fn send_req(body: &str, token: Option<&str>) -> Request<Body> {
    let mut r = Request::post("/api/notify/send").header("content-type", "application/json");
    if let Some(t) = token {
        r = r.header("Authorization", format!("Bearer {t}"));
    }
    r.body(Body::from(body.to_string())).unwrap()
}
