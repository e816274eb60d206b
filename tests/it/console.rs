//! The operators' console (`/console`), through the router with `oneshot` against a real
//! redis-server: who may look (sign-in, session cookie, bearer, wrong and send-only tokens),
//! the Content-Security-Policy on every answer, hostile and unknown runIds, the callbacks list
//! (search, filter, paging) and a run whose callbacks came out of order.

use crate::common;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use common::console::{record_run, window};
use common::{RedisServer, queue_name};
use ringback::edge::api::app;
use tower::ServiceExt;

const READ_TOKEN: &str = "read-token-0123456789";
const SEND_TOKEN: &str = "send-token-0123456789";

async fn state(server: &RedisServer, test: &str) -> std::sync::Arc<ringback::edge::api::ApiState> {
    let mut serve = common::serve_config();
    serve.public_url = "http://127.0.0.1:3000".into();
    serve.tokens.read = Some(ringback::twilio::Secret::new(READ_TOKEN));
    serve.tokens.send = Some(ringback::twilio::Secret::new(SEND_TOKEN));
    common::api_state_with(server, &queue_name(test), serve).await
}

async fn call(router: &axum::Router, req: Request<Body>) -> (Response<Body>, String) {
    let res = router.clone().oneshot(req).await.unwrap();
    let (parts, body) = res.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 22).await.unwrap();
    (
        Response::from_parts(parts, Body::empty()),
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

fn get(path: &str, auth: Option<&str>) -> Request<Body> {
    let mut r = Request::get(path);
    if let Some(a) = auth {
        r = r.header("authorization", a);
    }
    r.body(Body::empty()).unwrap()
}

fn bearer(t: &str) -> String {
    format!("Bearer {t}")
}

/// Every console answer carries the policy and no script or outside asset.
fn assert_protected(res: &Response<Body>, body: &str) {
    let csp = res
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    assert!(csp.contains("default-src 'none'"), "CSP: {csp:?}");
    assert!(
        !csp.contains("unsafe-inline") && !csp.contains("script-src"),
        "{csp}"
    );
    assert_eq!(res.headers()["x-content-type-options"], "nosniff");
    assert_eq!(res.headers()["x-frame-options"], "DENY");
    let lower = body.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "a script in the page: {body}");
    assert!(
        !lower.contains(" style="),
        "an inline style in the page: {body}"
    );
    assert!(
        !lower.contains("src=\"http") && !lower.contains("href=\"http"),
        "an outside asset: {body}"
    );
}

#[tokio::test]
async fn sign_in_sets_a_session_that_is_not_the_token_and_wrong_tokens_get_a_clear_page() {
    let server = RedisServer::start();
    let s = state(&server, "console-auth").await;
    let router = app(s.clone());

    // nobody: the sign-in form, 401
    let (res, body) = call(&router, get("/console/callbacks", None)).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(body.contains("Sign in to see the console"), "{body}");
    assert_protected(&res, &body);

    // a wrong bearer token, and the send-only one
    let (res, body) = call(
        &router,
        get("/console/now", Some(&bearer("not-a-token-at-all"))),
    )
    .await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(body.contains("not one of this server"), "{body}");
    assert!(
        !body.contains("not-a-token-at-all"),
        "the wrong token is echoed"
    );
    let (res, body) = call(&router, get("/console/now", Some(&bearer(SEND_TOKEN)))).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(body.contains("may send but not read"), "{body}");
    assert_protected(&res, &body);

    // the read token as a bearer
    let (res, body) = call(&router, get("/console/now", Some(&bearer(READ_TOKEN)))).await;
    assert_eq!(res.status(), StatusCode::OK, "{body}");
    assert_protected(&res, &body);

    // sign in: a wrong token is refused, nothing set
    let post = |token: &str, origin: Option<&str>| {
        let mut r = Request::post("/console/login")
            .header("content-type", "application/x-www-form-urlencoded")
            .header("host", "127.0.0.1:3000");
        if let Some(o) = origin {
            r = r.header("origin", o);
        }
        r.body(Body::from(format!("token={token}"))).unwrap()
    };
    let (res, body) = call(&router, post("wrong-token-0123456789", None)).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(res.headers().get("set-cookie").is_none());
    assert!(
        body.contains("Wrong token") && !body.contains("wrong-token-0123456789"),
        "{body}"
    );
    let (res, _) = call(&router, post(SEND_TOKEN, None)).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get("set-cookie").is_none());
    // a form posted from another site
    let (res, _) = call(&router, post(READ_TOKEN, Some("https://evil.example"))).await;
    assert_eq!(res.status(), StatusCode::FORBIDDEN);
    assert!(res.headers().get("set-cookie").is_none());

    // the read token: a session cookie, HttpOnly and SameSite=Strict, not the token
    let (res, _) = call(&router, post(READ_TOKEN, Some("http://127.0.0.1:3000"))).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert_eq!(res.headers()["location"], "/console/callbacks");
    let set = res.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.contains("HttpOnly")
            && set.contains("SameSite=Strict")
            && set.contains("Path=/console"),
        "{set}"
    );
    assert!(
        !set.contains("Secure"),
        "the test's public URL is http: {set}"
    );
    assert!(!set.contains(READ_TOKEN), "the cookie is the token: {set}");
    let cookie = set.split(';').next().unwrap().to_string();
    let with_cookie = |path: &str, cookie: &str| {
        Request::get(path)
            .header("cookie", cookie)
            .body(Body::empty())
            .unwrap()
    };
    let (res, body) = call(&router, with_cookie("/console/callbacks", &cookie)).await;
    assert_eq!(res.status(), StatusCode::OK, "{body}");
    assert!(!body.contains(READ_TOKEN));

    // a tampered cookie (another role, or another signature) is nobody
    let tampered = cookie.replace(".read.", ".legacy.");
    let (res, _) = call(&router, with_cookie("/console/callbacks", &tampered)).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    let mut forged = cookie.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == '0' { '1' } else { '0' });
    let (res, _) = call(&router, with_cookie("/console/callbacks", &forged)).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);

    // signing out clears it
    let (res, _) = call(
        &router,
        Request::post("/console/logout")
            .body(Body::empty())
            .unwrap(),
    )
    .await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        res.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("Max-Age=0")
    );

    // an https public URL marks the cookie Secure
    let mut serve = common::serve_config();
    serve.public_url = "https://ringback.example.com".into();
    let secure = app(common::api_state_with(&server, &queue_name("console-secure"), serve).await);
    let (res, _) = call(&secure, post(common::API_TOKEN, None)).await;
    assert_eq!(res.status(), StatusCode::SEE_OTHER);
    assert!(
        res.headers()["set-cookie"]
            .to_str()
            .unwrap()
            .contains("; Secure")
    );

    // the stylesheet is served by ringback itself
    let (res, body) = call(&router, get("/console/static/console.css", None)).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/css")
    );
    assert!(body.contains("timeline"));
}

#[tokio::test]
async fn hostile_and_unknown_run_ids_get_a_clear_page_and_are_never_executed() {
    let server = RedisServer::start();
    let s = state(&server, "console-hostile").await;
    let router = app(s.clone());
    let w = window(&s);
    let hostile = r#"<script>alert("x")</script><img src=x onerror=alert(1)>"#;
    record_run(
        &s,
        &w,
        1,
        hostile,
        "+15550001234",
        true,
        &["sent", "delivered"],
    )
    .await;
    let auth = bearer(READ_TOKEN);

    // listed, escaped
    let (res, body) = call(&router, get("/console/callbacks", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_protected(&res, &body);
    assert!(
        body.contains("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"),
        "{body}"
    );
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(
        body.contains("********1234") && !body.contains("+15550001234"),
        "numbers masked: {body}"
    );

    // its page, by its percent-encoded id
    let path = ringback::edge::console::pages::run_href(hostile);
    let (res, body) = call(&router, get(&path, Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK, "{path}: {body}");
    assert_protected(&res, &body);
    assert!(
        body.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "{body}"
    );

    // searching for it
    let q = format!(
        "/console/callbacks?{}",
        serde_urlencoded::to_string([("q", "<script>")]).unwrap()
    );
    let (res, body) = call(&router, get(&q, Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(body.contains("1 run(s) match"), "{body}");
    assert_protected(&res, &body);

    // unknown: 404, said in words, the id escaped
    let (res, body) = call(
        &router,
        get("/console/runs/%3Cb%3Enope%3C%2Fb%3E", Some(&auth)),
    )
    .await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(
        body.contains("Unknown run") && body.contains("&lt;b&gt;nope&lt;/b&gt;"),
        "{body}"
    );
    assert_protected(&res, &body);

    // very long: 400, not looked up, not echoed in full
    let long = "x".repeat(5000);
    let (res, body) = call(&router, get(&format!("/console/runs/{long}"), Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(body.contains("this one has 5000"), "{body}");
    assert!(!body.contains(&"x".repeat(100)), "echoed in full");
    let (res, body) = call(
        &router,
        get(&format!("/console/callbacks?q={long}"), Some(&auth)),
    )
    .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(body.contains("Search too long"), "{body}");
    let (res, body) = call(
        &router,
        get("/console/callbacks?state=%3Cx%3E", Some(&auth)),
    )
    .await;
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    assert!(
        body.contains("Unknown state") && !body.contains("<x>"),
        "{body}"
    );

    // without a token, the hostile run's page says nothing about it
    let (res, body) = call(&router, get(&path, None)).await;
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    assert!(
        !body.contains("onerror") && !body.contains("script"),
        "{body}"
    );
}

#[tokio::test]
async fn callbacks_page_lists_newest_first_filters_pages_and_shows_disorder() {
    let server = RedisServer::start();
    let s = state(&server, "console-list").await;
    let mut s = s;
    std::sync::Arc::get_mut(&mut s)
        .expect("not shared yet")
        .console
        .delivery_deadline = std::time::Duration::ZERO;
    let router = app(s.clone());
    let w = window(&s);
    let auth = bearer(READ_TOKEN);
    // 60 delivered runs, 3 undelivered, 1 open attempt, 1 whose callbacks came out of order
    for i in 0..60 {
        record_run(
            &s,
            &w,
            i,
            &format!("run-ok-{i:03}"),
            "+15550000001",
            true,
            &["sent", "delivered"],
        )
        .await;
    }
    // one settled as unknown (escalated first, as the window does), one with no final
    // receipt yet (missing past the zero deadline), one escalated after an undelivered receipt
    record_run(&s, &w, 400, "run-unknown", "+15550000005", false, &[]).await;
    assert!(
        w.settle_unknown("run-unknown", "token-400", "several messages match")
            .await
            .unwrap()
    );
    record_run(&s, &w, 401, "run-pending", "+15550000006", true, &["sent"]).await;
    record_run(
        &s,
        &w,
        402,
        "run-escalated",
        "+15550000007",
        true,
        &["sent", "undelivered"],
    )
    .await;
    assert!(
        s.receipts
            .mark_escalated("run-escalated", "delivery undelivered")
            .await
            .unwrap()
    );
    // distinct claim times for the newest three (the index orders by Redis's ms clock)
    let tick = || tokio::time::sleep(std::time::Duration::from_millis(3));
    for i in 0..3 {
        tick().await;
        record_run(
            &s,
            &w,
            100 + i,
            &format!("run-bad-{i}"),
            "+15550000002",
            true,
            &["sent", "undelivered"],
        )
        .await;
    }
    tick().await;
    record_run(&s, &w, 200, "run-open", "+15550000003", false, &[]).await;
    tick().await;
    record_run(
        &s,
        &w,
        300,
        "run-disorder",
        "+15550000004",
        true,
        &["delivered", "sent", "sent"],
    )
    .await;

    let (res, body) = call(&router, get("/console/callbacks", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    let runs: Vec<&str> = body
        .split("data-run=\"")
        .skip(1)
        .map(|s| s.split('"').next().unwrap())
        .collect();
    assert_eq!(runs.len(), ringback::edge::console::PAGE_SIZE);
    assert_eq!(
        &runs[..3],
        ["run-disorder", "run-open", "run-bad-2"],
        "newest first"
    );
    assert!(
        body.contains("68 run(s) match") && body.contains("page 1 of 2"),
        "{body}"
    );
    let (_, page2) = call(&router, get("/console/callbacks?page=2", Some(&auth))).await;
    assert_eq!(page2.matches("data-run=").count(), 18);
    assert!(page2.contains("run-ok-000"));

    for (state, n, example) in [
        ("undelivered", 4, "run-bad-0"),
        ("unknown", 1, "run-unknown"),
        ("escalated", 1, "run-escalated"),
        ("sent", 1, "run-pending"),
        ("open", 1, "run-open"),
        ("delivered", 61, "run-disorder"),
    ] {
        let (res, body) = call(
            &router,
            get(&format!("/console/callbacks?state={state}"), Some(&auth)),
        )
        .await;
        assert_eq!(res.status(), StatusCode::OK);
        assert!(
            body.contains(&format!("{n} run(s) match")),
            "{state}: {body}"
        );
        assert!(body.contains(example), "{state}");
    }
    let (_, body) = call(&router, get("/console/callbacks?q=run-ok-05", Some(&auth))).await;
    assert_eq!(body.matches("data-run=").count(), 10, "{body}");

    // the run whose callbacks came out of order: both orders, the late one judged
    let (res, body) = call(&router, get("/console/runs/run-disorder", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_protected(&res, &body);
    let list = |id: &str| -> Vec<String> {
        let part = body.split(&format!("id=\"{id}\">")).nth(1).unwrap_or("");
        let part = part.split("</ol>").next().unwrap_or("");
        part.split("<li>")
            .skip(1)
            .map(|s| s.split("</li>").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        list("arrival-order"),
        ["queued", "delivered", "sent", "sent"]
    );
    assert_eq!(
        list("ranking-order"),
        ["queued", "sent", "sent", "delivered"]
    );
    assert!(
        body.contains("out of order") && body.contains("repeat"),
        "{body}"
    );
    assert!(
        body.contains("id=\"job-state\">waiting<"),
        "the job's BullMQ state: {body}"
    );
    // an in-order run shows no disorder section
    let (_, body) = call(&router, get("/console/runs/run-ok-001", Some(&auth))).await;
    assert!(
        !body.contains("id=\"disorder\"") && body.contains("in order"),
        "{body}"
    );

    // Now: the open attempt and the texts of the last hour
    let (res, body) = call(&router, get("/console/now", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(body.contains("id=\"open-count\">1<"), "{body}");
    assert!(
        body.contains("sent (66)") && body.contains("delivered (61)"),
        "{body}"
    );
    let section = |id: &str| -> String {
        let part = body.split(&format!("id=\"{id}\"")).nth(1).unwrap_or("");
        part.split("</ul>").next().unwrap_or("").to_string()
    };
    for (count, list, run) in [
        ("unknown-count", "unknown", "run-unknown"),
        ("escalated-count", "escalations", "run-escalated"),
        ("missing-count", "missing", "run-pending"),
    ] {
        assert!(
            body.contains(&format!("id=\"{count}\">1<")),
            "{count}: {body}"
        );
        assert!(section(list).contains(run), "{list}: {body}");
    }

    // the escalated run's timeline says so, and why
    let (_, body) = call(&router, get("/console/runs/run-escalated", Some(&auth))).await;
    assert!(
        body.contains("Escalated</strong>") && body.contains("delivery undelivered"),
        "{body}"
    );
    let (_, body) = call(&router, get("/console/runs/run-unknown", Some(&auth))).await;
    assert!(
        body.contains("state-unknown") && body.contains("Settled as unknown"),
        "{body}"
    );
}

#[tokio::test]
async fn drills_page_shows_saved_reports_and_says_what_it_cannot_read() {
    let server = RedisServer::start();
    let dir = tempfile::tempdir().unwrap();
    // the output of `DRILL_TIMINGS=compressed ringback drill stall --runs 6 --json`, as saved
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/drill-stall-report.json"
        ),
        dir.path().join("20261130T230000Z.json"),
    )
    .unwrap();
    // and of `DRILL_TIMINGS=prod ringback drill replies --json`: its figures and checks shown
    std::fs::copy(
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/drill-replies-report.json"
        ),
        dir.path().join("20261201T080000Z.json"),
    )
    .unwrap();
    std::fs::write(dir.path().join("broken.json"), "<b>not json").unwrap();
    let mut serve = common::serve_config();
    serve.drill_reports = Some(dir.path().to_path_buf());
    let s = common::api_state_with(&server, &queue_name("console-drills"), serve).await;
    let router = app(s);
    let (res, body) = call(
        &router,
        get("/console/drills", Some(&bearer(common::API_TOKEN))),
    )
    .await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_protected(&res, &body);
    assert!(
        body.contains("drill stall · timings compressed")
            && body.contains("ringback@after-claim")
            && body.contains("legacy@after-provider-accept")
            && body.contains("<td>3120</td>"),
        "{body}"
    );
    assert!(
        body.contains("drill replies · timings prod")
            && body.contains("<th>crashes of serve (after-reply-recorded)</th><td>39</td>")
            && body.contains(
                "<th>messages forwarded more than once (at least once allows it)</th><td>0</td>"
            )
            && body.contains("<li>ok: the strangers"),
        "{body}"
    );
    assert!(body.contains("unreadable: not JSON"), "{body}");
    assert!(!body.contains("<b>not json"), "{body}");
}

#[test]
fn a_drill_reports_setting_that_is_not_a_directory_is_named_with_the_rest() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringback"))
        .arg("serve")
        .env_clear()
        .env("RINGBACK_DRILL_REPORTS", "/nonexistent/ringback-reports")
        .env("RINGBACK_API_TOKEN", "api-token-0123456789")
        .env("TWILIO_AUTH_TOKEN", "twilio-auth-token")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("RINGBACK_DRILL_REPORTS") && stderr.contains("not a directory"),
        "{stderr}"
    );
    assert!(
        stderr.contains("RINGBACK_PUBLIC_URL"),
        "every broken setting at once: {stderr}"
    );
}

/// A fallback text (`<runId>:escalation`, to the fallback number) is shown as part of the run
/// it tells of: the list and the Now page leave it out, the run's page links it, and its own
/// page says whose it is.
#[tokio::test]
async fn a_fallback_text_is_shown_as_part_of_its_run_not_as_a_run() {
    let server = RedisServer::start();
    let s = state(&server, "console-fallback").await;
    let router = app(s.clone());
    let w = window(&s);
    let auth = bearer(READ_TOKEN);
    record_run(&s, &w, 0, "fb-1", "+15550000001", true, &["undelivered"]).await;
    // the run is escalated with a fallback number: the fallback is asked for, then claimed
    // and sent as a run of its own
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let sms = ringback::callbacks::sms::SmsConfig {
        fallback_to: Some("+15550009999".into()),
        ..Default::default()
    };
    let (_, escalator) = sms.after_send(conn, "bull", &queue_name("console-fallback-q"));
    let e = ringback::callbacks::escalation::Escalation {
        run_id: "fb-1".into(),
        reason: "delivery undelivered".into(),
        last_status: Some("undelivered".into()),
        error_code: Some("30003".into()),
        kind: ringback::callbacks::escalation::EscalationKind::Undelivered,
    };
    assert!(escalator.escalate(&e).await.unwrap());
    record_run(
        &s,
        &w,
        1,
        "fb-1:escalation",
        "+15550009999",
        true,
        &["delivered"],
    )
    .await;

    let (res, body) = call(&router, get("/console/callbacks", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(body.contains("fb-1"), "{body}");
    assert!(!body.contains("fb-1:escalation"), "listed as a run: {body}");
    let (_, now) = call(&router, get("/console/now", Some(&auth))).await;
    assert!(!now.contains("fb-1:escalation"), "on the Now page: {now}");
    let (res, page) = call(&router, get("/console/runs/fb-1", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(
        page.contains(r#"id="fallback""#) && page.contains("fb-1:escalation"),
        "{page}"
    );
    let (res, page) = call(&router, get("/console/runs/fb-1:escalation", Some(&auth))).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert!(page.contains(r#"id="fallback-of""#), "{page}");
}
