//! The hardened HTTP API: tokens by role, the send allowlist and rate limits, the
//! secondary signing key during a rotation, escalations that stay once after the record is
//! gone, `/readyz` and `/metrics` without internal error text, and the metric families of
//! `serve` (this binary's own, so the process-wide families only count its tests, one at a
//! time under `METRICS_LOCK`).

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::api::*;
use common::{RedisServer, queue_name};
use redis::AsyncCommands;
use ringback::edge::api::app;
use ringback::store::keys::QueueKeys;
use ringback::twilio::{Secret, signature};
use tower::ServiceExt;

const READ_TOKEN: &str = "read-token-0123456789";
const SEND_TOKEN: &str = "send-token-0123456789";

fn serve_with(
    f: impl FnOnce(&mut ringback::edge::cli::ServeConfig),
) -> ringback::edge::cli::ServeConfig {
    let mut c = common::serve_config();
    c.tokens.read = Some(Secret::new(READ_TOKEN));
    c.tokens.send = Some(Secret::new(SEND_TOKEN));
    f(&mut c);
    c
}

async fn call(
    router: &axum::Router,
    req: Request<Body>,
) -> (StatusCode, axum::http::HeaderMap, String) {
    let resp = router.clone().oneshot(req).await.unwrap();
    let (status, headers) = (resp.status(), resp.headers().clone());
    let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (status, headers, String::from_utf8_lossy(&body).into_owned())
}

fn get(path: &str, token: Option<&str>) -> Request<Body> {
    let mut r = Request::get(path);
    if let Some(t) = token {
        r = r.header("Authorization", format!("Bearer {t}"));
    }
    r.body(Body::empty()).unwrap()
}

fn send_body(run: &str, to: &str) -> String {
    format!(r#"{{"runId":"{run}","to":"{to}","body":"Run {run} finished"}}"#)
}

#[tokio::test]
async fn each_token_does_what_its_role_allows() {
    let _alone = METRICS_LOCK.lock().await;
    let server = RedisServer::start();
    let q = queue_name("roles");
    let router = app(common::api_state_with(&server, &q, serve_with(|_| {})).await);
    let record = "/api/notify/callbacks/run-1";
    assert_eq!(
        call(&router, get(record, Some(READ_TOKEN))).await.0,
        StatusCode::OK
    );
    assert_eq!(
        call(&router, get(record, Some(API_TOKEN))).await.0,
        StatusCode::OK
    );
    let (code, _, body) = call(&router, get(record, Some(SEND_TOKEN))).await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains("may not read"), "{body}");
    assert_eq!(
        call(&router, get(record, Some("not-a-token-0123456789")))
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        call(&router, get(record, None)).await.0,
        StatusCode::UNAUTHORIZED
    );

    let (code, _, body) = call(
        &router,
        send_req(&send_body("run-2", "+15558675310"), Some(READ_TOKEN)),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(
        call(
            &router,
            send_req(&send_body("run-3", "+15558675310"), Some(SEND_TOKEN))
        )
        .await
        .0,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        call(
            &router,
            send_req(&send_body("run-4", "+15558675310"), Some(API_TOKEN))
        )
        .await
        .0,
        StatusCode::ACCEPTED
    );
    let mut c = server.conn().await;
    let waiting: Vec<String> = c
        .lrange(QueueKeys::new("bull", &q).wait(), 0, -1)
        .await
        .unwrap();
    assert_eq!(
        waiting.len(),
        2,
        "only the two allowed sends enqueued: {waiting:?}"
    );
}

#[tokio::test]
async fn the_allowlist_and_rate_limits_refuse_with_429_and_spare_the_legacy_caller() {
    let _alone = METRICS_LOCK.lock().await;
    let server = RedisServer::start();
    let q = queue_name("limits");
    let serve = serve_with(|c| {
        c.send_policy = ringback::edge::access::SendPolicyConfig::parse(
            Some("+1555*"),
            Some("3/min"),
            Some("2/h"),
            false,
        )
        .unwrap();
    });
    let router = app(common::api_state_with(&server, &q, serve).await);
    let before = scrape(&router).await;
    let (code, _, body) = call(
        &router,
        send_req(&send_body("a0", "+447700900123"), Some(SEND_TOKEN)),
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert!(body.contains(r#""field":"to""#), "{body}");
    // per destination: 2 an hour
    for run in ["a1", "a2"] {
        assert_eq!(
            call(
                &router,
                send_req(&send_body(run, "+15550000001"), Some(SEND_TOKEN))
            )
            .await
            .0,
            StatusCode::ACCEPTED
        );
    }
    let (code, headers, body) = call(
        &router,
        send_req(&send_body("a3", "+15550000001"), Some(SEND_TOKEN)),
    )
    .await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(
        (1000..=1800).contains(&retry),
        "half an hour for the next of 2/h: {retry}"
    );
    assert!(body.contains("destination"), "{body}");
    // per token: 3 a minute (a1, a2, a3 used them; a3 was refused by the destination limit
    // after the token's check passed)
    let (code, headers, body) = call(
        &router,
        send_req(&send_body("a4", "+15550000002"), Some(SEND_TOKEN)),
    )
    .await;
    assert_eq!(code, StatusCode::TOO_MANY_REQUESTS, "{body}");
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "{retry}");
    assert!(body.contains("token"), "{body}");
    // The legacy caller: never refused by either, unless asked for.
    for i in 0..6 {
        let (code, _, body) = call(
            &router,
            send_req(
                &send_body(&format!("l{i}"), "+447700900123"),
                Some(API_TOKEN),
            ),
        )
        .await;
        assert_eq!(code, StatusCode::ACCEPTED, "{body}");
    }
    let after = scrape(&router).await;
    let series =
        |scope: &str| format!(r#"ringback_rate_limited_total{{queue="{q}",scope="{scope}"}}"#);
    assert_eq!(
        value(&after, &series("token")) - value(&before, &series("token")),
        1.0
    );
    assert_eq!(
        value(&after, &series("destination")) - value(&before, &series("destination")),
        1.0
    );
    let mut c = server.conn().await;
    let waiting: Vec<String> = c
        .lrange(QueueKeys::new("bull", &q).wait(), 0, -1)
        .await
        .unwrap();
    assert_eq!(
        waiting.len(),
        2 + 6,
        "refused sends enqueue nothing: {waiting:?}"
    );
}

#[tokio::test]
async fn a_rotation_accepts_both_signing_tokens_and_no_other() {
    let _alone = METRICS_LOCK.lock().await;
    let server = RedisServer::start();
    let q = queue_name("rotation");
    let serve =
        serve_with(|c| c.twilio_auth_token_secondary = Some(Secret::new("the-new-twilio-token")));
    let router = app(common::api_state_with(&server, &q, serve).await);
    let path = "/api/notify/webhook/status?runId=rot1";
    let signed_with = |key: &str, status: &str| {
        let (owned, body) = form(&status_params(status, &[]));
        let sig = signature::sign(key, &format!("{PUBLIC}{path}"), &owned);
        Request::post(path)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("X-Twilio-Signature", sig)
            .body(Body::from(body))
            .unwrap()
    };
    assert_eq!(
        call(&router, signed_with(TOKEN, "sent")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        call(&router, signed_with("the-new-twilio-token", "delivered"))
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        call(&router, signed_with("some-other-token", "failed"))
            .await
            .0,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn a_replayed_failure_after_the_record_expired_escalates_nothing() {
    let _alone = METRICS_LOCK.lock().await;
    let server = RedisServer::start();
    let q = queue_name("replay");
    let s = common::api_state(&server, &q).await;
    let router = app(s.clone());
    let path = "/api/notify/webhook/status?runId=rp1";
    let failed = || {
        callback(
            path,
            &status_params("undelivered", &[("ErrorCode", "30003")]),
            Some("tok-1"),
        )
    };
    assert_eq!(call(&router, failed()).await.0, StatusCode::OK);
    assert!(record(&s, "rp1").await.escalated);
    let esc = QueueKeys::new("bull", &format!("{q}-escalations"));
    let mut c = server.conn().await;
    let jobs: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    assert_eq!(jobs, vec!["escalation:rp1".to_string()]);
    // Days later: the record (with its repeat markers, fields of it) and the escalation job are
    // gone; a replay of the signed callback arrives (same signature, same idempotency token).
    let w = ringback::store::keys::WindowKeys::new("agent-callback:", "rp1");
    let seen: Vec<String> = c.hkeys(&w.record).await.unwrap();
    assert!(
        seen.iter().any(|f| f == "seen:token:tok-1"),
        "the repeat marker is a field of the record: {seen:?}"
    );
    let mut del = redis::cmd("DEL");
    del.arg(&w.record)
        .arg(ringback::store::keys::callback_history(
            "agent-callback:",
            "rp1",
        ))
        .arg(esc.job("escalation:rp1"))
        .arg(esc.wait());
    let _: () = del.query_async(&mut c).await.unwrap();
    assert_eq!(call(&router, failed()).await.0, StatusCode::OK);
    let jobs: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    assert!(jobs.is_empty(), "escalated again: {jobs:?}");
}

#[tokio::test]
async fn readyz_and_metrics_show_no_internal_error_text() {
    let _alone = METRICS_LOCK.lock().await;
    let mut server = RedisServer::start();
    let q = queue_name("ready");
    let router = app(common::api_state(&server, &q).await);
    assert_eq!(call(&router, get("/readyz", None)).await.0, StatusCode::OK);
    server.kill();
    let (code, _, body) = call(&router, get("/readyz", None)).await;
    assert_eq!(
        (code, body.as_str()),
        (StatusCode::SERVICE_UNAVAILABLE, "redis unreachable")
    );
    let (code, _, text) = call(&router, get("/metrics", None)).await;
    assert_eq!(code, StatusCode::OK);
    assert!(
        text.contains(&format!("ringback_ready{{queue=\"{q}\"}} 0")),
        "{text}"
    );
    for leak in ["Connection refused", "os error", "127.0.0.1", "redis://"] {
        assert!(!text.contains(leak), "`{leak}` in /metrics:\n{text}");
    }
}

#[tokio::test]
async fn every_route_has_the_body_limit_inside_the_router() {
    let _alone = METRICS_LOCK.lock().await;
    let server = RedisServer::start();
    let router = app(common::api_state(&server, &queue_name("limit")).await);
    let huge = format!(
        r#"{{"runId":"big","to":"+15558675310","body":"{}"}}"#,
        "x".repeat(70 * 1024)
    );
    assert_eq!(
        call(&router, send_req(&huge, Some(API_TOKEN))).await.0,
        StatusCode::PAYLOAD_TOO_LARGE
    );
}

async fn scrape(router: &axum::Router) -> String {
    let (code, _, text) = call(router, get("/metrics", None)).await;
    assert_eq!(code, StatusCode::OK);
    text
}

/// A series' value in a scrape (0 when absent).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

/// Tests of this binary that read or move the process's metric families.
static METRICS_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test]
async fn metrics_count_responses_callbacks_sends_and_escalations() {
    let _alone = METRICS_LOCK.lock().await;
    let server = RedisServer::start();
    let q = queue_name("metrics");
    let s = state(&server, &q).await;
    let router = app(s.clone());
    // The families are the process's, and other tests in this binary count too: compare
    // scrapes, and let no other test of this binary run a status callback meanwhile.
    let before = scrape(&router).await;
    let path = "/api/notify/webhook/status?runId=m1";
    let status = |req: Request<Body>| {
        let router = router.clone();
        async move { router.oneshot(req).await.unwrap().status() }
    };
    let (_, body) = form(&status_params("sent", &[]));
    let unsigned = Request::post(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(status(unsigned).await, StatusCode::FORBIDDEN);
    let huge = "x".repeat(70 * 1024);
    let big = callback(path, &status_params("sent", &[("Padding", &huge)]), None);
    assert_eq!(status(big).await, StatusCode::PAYLOAD_TOO_LARGE);
    for token in ["t1", "t1"] {
        let sent = callback(path, &status_params("sent", &[]), Some(token));
        assert_eq!(status(sent).await, StatusCode::OK);
    }
    let failed = callback(
        path,
        &status_params("undelivered", &[("ErrorCode", "30003")]),
        Some("t2"),
    );
    assert_eq!(status(failed).await, StatusCode::OK);
    let good = r#"{"runId":"run-m","to":"+15558675310","body":"Run m finished"}"#;
    for _ in 0..2 {
        assert_eq!(
            status(send_req(good, Some(API_TOKEN))).await,
            StatusCode::ACCEPTED
        );
    }

    let text = scrape(&router).await;
    let wq = format!(r#"queue="{q}","#);
    for (series, delta) in [
        (
            r#"ringback_http_responses_total{Q route="/api/notify/webhook/status",status="403"}"#,
            1.0,
        ),
        (
            r#"ringback_http_responses_total{Q route="/api/notify/webhook/status",status="413"}"#,
            1.0,
        ),
        (
            r#"ringback_http_responses_total{Q route="/api/notify/webhook/status",status="200"}"#,
            3.0,
        ),
        (
            r#"ringback_http_responses_total{Q route="/api/notify/send",status="202"}"#,
            2.0,
        ),
        (
            r#"ringback_status_callbacks_total{Q outcome="applied"}"#,
            2.0,
        ),
        (
            r#"ringback_status_callbacks_total{Q outcome="repeat"}"#,
            1.0,
        ),
        (r#"ringback_sends_enqueued_total{Q created="true"}"#, 1.0),
        (r#"ringback_sends_enqueued_total{Q created="false"}"#, 1.0),
        (r#"ringback_escalations_total{Q reason="undelivered"}"#, 1.0),
        (r#"ringback_bad_signatures_total{queue="Q"}"#, 1.0),
    ] {
        let series = series
            .replace("Q ", &wq)
            .replace("\"Q\"", &format!("\"{q}\""));
        assert_eq!(
            value(&text, &series) - value(&before, &series),
            delta,
            "`{series}` in:\n{text}"
        );
    }
    assert!(
        text.contains(&format!("ringback_ready{{queue=\"{q}\"}} 1")),
        "{text}"
    );
}
