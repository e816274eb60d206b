//! The HTTP API and delivery receipts: the router with `oneshot` (signatures, limits, repeats,
//! the legacy send call), a property test of ranked status records under concurrent, shuffled,
//! repeated and dropped callbacks, and end to end with the simulator's callbacks.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{RedisServer, queue_name};
use rand::seq::{IndexedRandom, SliceRandom};
use redis::AsyncCommands;
use ringback::callbacks::receipts::{Receipts, Source, StatusUpdate};
use ringback::callbacks::sms::SmsConfig;
use ringback::edge::api::app;
use ringback::store::keys::QueueKeys;
use tower::ServiceExt;

use common::api::*;

#[tokio::test]
async fn webhook_refuses_bad_signatures_bodies_and_sizes() {
    let server = RedisServer::start();
    let s = state(&server, &queue_name("api")).await;
    let path = "/api/notify/webhook/status?runId=r1";
    let router = app(s.clone());

    // no signature, and a signature over other parameters: 403, nothing recorded
    let (_, body) = form(&status_params("delivered", &[]));
    let unsigned = Request::post(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(Body::from(body))
        .unwrap();
    assert_eq!(
        router.clone().oneshot(unsigned).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    let mut tampered = callback(path, &status_params("delivered", &[]), None);
    *tampered.body_mut() = Body::from(form(&status_params("failed", &[])).1);
    assert_eq!(
        router.clone().oneshot(tampered).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    // signed for another URL (a proxy must not make us trust the Host header)
    let other = callback(
        "/api/notify/webhook/status?runId=r2",
        &status_params("delivered", &[]),
        None,
    );
    let (parts, body) = other.into_parts();
    let mut moved = Request::from_parts(parts, body);
    *moved.uri_mut() = path.parse().unwrap();
    assert_eq!(
        router.clone().oneshot(moved).await.unwrap().status(),
        StatusCode::FORBIDDEN
    );
    assert_eq!(record(&s, "r1").await.state, "unknown", "nothing recorded");

    // malformed bodies and fields: 400
    let json = Request::post(path)
        .header("content-type", "application/json")
        .header("X-Twilio-Signature", "x")
        .body(Body::from("{}"))
        .unwrap();
    assert_eq!(
        router.clone().oneshot(json).await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );
    let bytes = Request::post(path)
        .header("content-type", "application/x-www-form-urlencoded")
        .header("X-Twilio-Signature", "x")
        .body(Body::from(vec![b'a', b'=', 0xff, 0xfe]))
        .unwrap();
    assert_eq!(
        router.clone().oneshot(bytes).await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );
    let no_sid = callback(path, &[("MessageStatus", "sent")], None);
    assert_eq!(
        router.clone().oneshot(no_sid).await.unwrap().status(),
        StatusCode::BAD_REQUEST
    );

    // over 64 KiB: 413
    let huge = "x".repeat(70 * 1024);
    let big = callback(path, &status_params("sent", &[("Padding", &huge)]), None);
    assert_eq!(
        router.clone().oneshot(big).await.unwrap().status(),
        StatusCode::PAYLOAD_TOO_LARGE
    );

    // a good one, with fields Twilio added without notice: applied
    let ok = callback(
        path,
        &status_params(
            "sent",
            &[("SomethingNew", "1"), ("ApiVersion", "2010-04-01")],
        ),
        Some("tok-1"),
    );
    assert_eq!(
        router.clone().oneshot(ok).await.unwrap().status(),
        StatusCode::OK
    );
    let r = record(&s, "r1").await;
    assert_eq!(
        (r.state.as_str(), r.message_sid.as_deref()),
        ("sent", Some(SID))
    );
}

#[tokio::test]
async fn repeats_change_nothing_and_order_never_decides() {
    let server = RedisServer::start();
    let s = state(&server, &queue_name("api")).await;
    let path = "/api/notify/webhook/status?runId=r1";
    let router = app(s.clone());
    let send = |status: &'static str, token: &'static str| {
        let router = router.clone();
        async move {
            router
                .oneshot(callback(path, &status_params(status, &[]), Some(token)))
                .await
                .unwrap()
                .status()
        }
    };
    assert_eq!(send("delivered", "t2").await, StatusCode::OK);
    assert_eq!(
        send("sent", "t1").await,
        StatusCode::OK,
        "late `sent` after `delivered`"
    );
    assert_eq!(
        send("delivered", "t2").await,
        StatusCode::OK,
        "a Twilio retry"
    );
    let r = record(&s, "r1").await;
    assert_eq!(r.state, "delivered");
    let outcomes: Vec<&str> = r
        .history
        .iter()
        .map(|h| h["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["applied", "stale"], "the repeat left no trace");
    // the same params again without a token: deduplicated by their hash
    let no_token = || {
        callback(
            path,
            &status_params("undelivered", &[("ErrorCode", "30003")]),
            None,
        )
    };
    assert_eq!(
        router.clone().oneshot(no_token()).await.unwrap().status(),
        StatusCode::OK
    );
    assert_eq!(
        router.clone().oneshot(no_token()).await.unwrap().status(),
        StatusCode::OK
    );
    let r = record(&s, "r1").await;
    assert_eq!(r.state, "delivered", "the first terminal status wins");
    assert!(r.conflict);
    assert_eq!(r.history.len(), 3);
}

#[tokio::test]
async fn a_failed_delivery_escalates_once() {
    let server = RedisServer::start();
    let q = queue_name("api");
    let s = state(&server, &q).await;
    let router = app(s.clone());
    let path = "/api/notify/webhook/status?runId=r9";
    for (status, token) in [
        ("sent", "a"),
        ("undelivered", "b"),
        ("undelivered", "c"),
        ("failed", "d"),
    ] {
        let extra = [("ErrorCode", "30003")];
        let params = status_params(status, if status == "sent" { &[] } else { &extra });
        assert_eq!(
            router
                .clone()
                .oneshot(callback(path, &params, Some(token)))
                .await
                .unwrap()
                .status(),
            StatusCode::OK
        );
    }
    let mut c = server.conn().await;
    let esc = QueueKeys::new("bull", &format!("{q}-escalations"));
    let waiting: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    assert_eq!(waiting, vec!["escalation:r9".to_string()]);
    let data: String = c.hget(esc.job("escalation:r9"), "data").await.unwrap();
    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(
        (data["lastStatus"].as_str(), data["errorCode"].as_str()),
        (Some("undelivered"), Some("30003"))
    );
    assert!(record(&s, "r9").await.escalated);
}

/// An escalation that met a Redis error (the webhook answered 500) is made by Twilio's retry of
/// the same callback, whose repeat marker the first delivery already wrote: escalation follows
/// the record, not the callback's outcome.
#[tokio::test]
async fn a_failed_delivery_whose_escalation_failed_is_escalated_by_twilios_retry() {
    let server = RedisServer::start();
    let q = queue_name("api-esc-retry");
    let s = state(&server, &q).await;
    let router = app(s.clone());
    let path = "/api/notify/webhook/status?runId=r10";
    let mut c = server.conn().await;
    let esc = QueueKeys::new("bull", &format!("{q}-escalations"));
    // the escalation queue cannot be written: its id counter is not a number (the add fails
    // at its first command, before any write)
    let _: () = c.set(esc.id(), "not a number").await.unwrap();
    let undelivered = status_params("undelivered", &[("ErrorCode", "30003")]);
    let first = router
        .clone()
        .oneshot(callback(path, &undelivered, Some("tok-u")))
        .await
        .unwrap()
        .status();
    assert_eq!(
        first,
        StatusCode::INTERNAL_SERVER_ERROR,
        "Twilio will retry"
    );
    assert!(!record(&s, "r10").await.escalated);
    let _: () = c.del(esc.id()).await.unwrap();
    let retry = router
        .clone()
        .oneshot(callback(path, &undelivered, Some("tok-u")))
        .await
        .unwrap()
        .status();
    assert_eq!(retry, StatusCode::OK);
    let waiting: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    assert_eq!(waiting, vec!["escalation:r10".to_string()]);
    let data: String = c.hget(esc.job("escalation:r10"), "data").await.unwrap();
    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(data["kind"], "undelivered");
    assert_eq!(data["meaning"], "was not delivered");
    assert!(record(&s, "r10").await.escalated);
    // and once: a third delivery of the same callback escalates nothing more
    let again = router
        .clone()
        .oneshot(callback(path, &undelivered, Some("tok-u")))
        .await
        .unwrap()
        .status();
    assert_eq!(again, StatusCode::OK);
    let waiting: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    assert_eq!(waiting.len(), 1, "{waiting:?}");
}

/// A canceled or partially delivered message is a failed delivery too.
#[tokio::test]
async fn canceled_and_partially_delivered_escalate() {
    let server = RedisServer::start();
    let q = queue_name("api-canceled");
    let s = state(&server, &q).await;
    let router = app(s.clone());
    for (run, status) in [("rc", "canceled"), ("rp", "partially_delivered")] {
        let path = format!("/api/notify/webhook/status?runId={run}");
        let code = router
            .clone()
            .oneshot(callback(&path, &status_params(status, &[]), Some(run)))
            .await
            .unwrap()
            .status();
        assert_eq!(code, StatusCode::OK);
        assert!(record(&s, run).await.escalated, "{status}");
    }
}

/// Kinds: each is escalated once; a later, different kind is escalated again under an id that
/// names it, with a fallback text that says what it means.
#[tokio::test]
async fn a_later_kind_escalates_again_under_its_own_id() {
    let server = RedisServer::start();
    let q = queue_name("kinds");
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let sms = SmsConfig {
        fallback_to: Some("+15550009999".into()),
        ..SmsConfig::default()
    };
    let (_, escalator) = sms.after_send(conn, "bull", &q);
    let esc = |kind| ringback::callbacks::escalation::Escalation {
        run_id: "k1".into(),
        reason: "test".into(),
        last_status: None,
        error_code: None,
        kind,
    };
    use ringback::callbacks::escalation::EscalationKind::{
        ReceiptMissing, Unknown, UnknownSettled,
    };
    assert!(escalator.escalate(&esc(Unknown)).await.unwrap());
    assert!(!escalator.escalate(&esc(Unknown)).await.unwrap());
    assert!(escalator.escalate(&esc(UnknownSettled)).await.unwrap());
    assert!(escalator.escalate(&esc(ReceiptMissing)).await.unwrap());
    assert!(!escalator.escalate(&esc(UnknownSettled)).await.unwrap());
    let mut c = server.conn().await;
    let e = QueueKeys::new("bull", &format!("{q}-escalations"));
    let mut ids: Vec<String> = c.lrange(e.wait(), 0, -1).await.unwrap();
    ids.sort();
    assert_eq!(
        ids,
        [
            "escalation:k1",
            "escalation:k1:receipt_missing",
            "escalation:k1:unknown_settled"
        ]
    );
    let k = QueueKeys::new("bull", &q);
    let texts: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    assert_eq!(texts.len(), 3, "{texts:?}");
    let data: String = c.hget(k.job("k1:escalation"), "data").await.unwrap();
    assert!(data.contains("may have been sent"), "{data}");
    assert!(
        !data.contains("not delivered"),
        "an unknown is never called undelivered: {data}"
    );
    let data: String = c
        .hget(k.job("k1:escalation:receipt_missing"), "data")
        .await
        .unwrap();
    assert!(data.contains("not delivered yet"), "{data}");
    // the resolution notice, once
    escalator
        .resolved("k1", "found-sent", Some("SMx"))
        .await
        .unwrap();
    escalator
        .resolved("k1", "found-sent", Some("SMx"))
        .await
        .unwrap();
    let ids: Vec<String> = c.lrange(e.wait(), 0, -1).await.unwrap();
    assert_eq!(
        ids.iter().filter(|i| i.ends_with(":resolved")).count(),
        1,
        "{ids:?}"
    );
}

#[tokio::test]
async fn legacy_send_enqueues_once_and_names_bad_fields() {
    let server = RedisServer::start();
    let q = queue_name("send");
    let s = state(&server, &q).await;
    let router = app(s.clone());
    let good = r#"{"runId":"run-7","to":"+15558675310","body":"Run 7 finished"}"#;
    assert_eq!(
        router
            .clone()
            .oneshot(send_req(good, None))
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        router
            .clone()
            .oneshot(send_req(good, Some("wrong-token-000000")))
            .await
            .unwrap()
            .status(),
        StatusCode::UNAUTHORIZED
    );
    for _ in 0..3 {
        let resp = router
            .clone()
            .oneshot(send_req(good, Some(API_TOKEN)))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
        let body: serde_json::Value = serde_json::from_slice(
            &axum::body::to_bytes(resp.into_body(), 1 << 16)
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(body["jobId"], "run-7");
    }
    let mut c = server.conn().await;
    let k = QueueKeys::new("bull", &q);
    let waiting: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    assert_eq!(
        waiting,
        vec!["run-7".to_string()],
        "repeated calls make one job"
    );
    let job: std::collections::HashMap<String, String> = c.hgetall(k.job("run-7")).await.unwrap();
    assert_eq!(job["name"], "agent-callback");
    assert_eq!(
        job["opts"],
        ringback::callbacks::callback::CALLBACK_JOB_OPTS
    );
    for (body, field) in [
        ("{nope", None),
        (r#"{"runId":"r","to":"12","body":"x"}"#, Some("to")),
        (r#"{"runId":"r","to":"+15558675310"}"#, Some("body")),
        (r#"{"to":"+15558675310","body":"x"}"#, Some("runId")),
        (
            r#"{"runId":"12345","to":"+15558675310","body":"x"}"#,
            Some("runId"),
        ),
    ] {
        let resp = router
            .clone()
            .oneshot(send_req(body, Some(API_TOKEN)))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::BAD_REQUEST, "{body}");
        let v: serde_json::Value = serde_json::from_slice(
            &axum::body::to_bytes(resp.into_body(), 1 << 16)
                .await
                .unwrap(),
        )
        .unwrap();
        assert_eq!(v["field"].as_str(), field, "{body}: {v}");
    }
    let resp = router
        .clone()
        .oneshot(
            Request::get("/api/notify/callbacks/run-7")
                .header("Authorization", format!("Bearer {API_TOKEN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(
        &axum::body::to_bytes(resp.into_body(), 1 << 16)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(v["state"], "queued");
    assert_eq!(
        router
            .clone()
            .oneshot(Request::get("/readyz").body(Body::empty()).unwrap())
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
    assert_eq!(
        router
            .oneshot(Request::get("/healthz").body(Body::empty()).unwrap())
            .await
            .unwrap()
            .status(),
        StatusCode::OK
    );
}

/// The legacy send carries everything the job data carries: a ladder as given (an object or
/// `false`), `choices`, and fields ringback does not read, into the job as sent.
#[tokio::test]
async fn legacy_send_carries_the_ladder_and_choices_into_the_job() {
    let server = RedisServer::start();
    let q = queue_name("send-ladder");
    let router = app(state(&server, &q).await);
    let k = QueueKeys::new("bull", &q);
    let mut c = server.conn().await;
    for (run, extra) in [
        (
            "ladder-object",
            serde_json::json!({"expectReply": true, "replyWithin": "2h", "choices": ["YES", "NO"],
                "ladder": {"callAfter": "10m", "stepWait": "5m", "then": ["+15558675311"]}}),
        ),
        ("ladder-off", serde_json::json!({"ladder": false})),
        (
            "ladder-default",
            serde_json::json!({"team": "infra", "urgent": true}),
        ),
    ] {
        let mut body = serde_json::json!({"runId": run, "to": "+15558675310", "body": "Deploy?"});
        for (f, v) in extra.as_object().unwrap() {
            body[f] = v.clone();
        }
        let resp = router
            .clone()
            .oneshot(send_req(&body.to_string(), Some(API_TOKEN)))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::ACCEPTED, "{run}");
        let data: String = c.hget(k.job(run), "data").await.unwrap();
        let data: serde_json::Value = serde_json::from_str(&data).unwrap();
        for (f, v) in extra.as_object().unwrap() {
            assert_eq!(&data[f], v, "{run}: `{f}` carried as sent: {data}");
        }
    }
}

/// Every status sequence Twilio could send for a message ends in one final status; shuffled,
/// repeated and partly dropped, applied concurrently, the record must end in the highest-ranked
/// status that arrived (the truth the generator knows).
#[tokio::test]
async fn property_ranked_records_reach_the_truth_under_any_order() {
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let receipts = SmsConfig::default().after_send(conn, "bull", "prop").0;
    let finals = [
        "delivered",
        "undelivered",
        "failed",
        "sent",
        "read",
        "canceled",
    ];
    let mut rng = rand::rng();
    let mut updates = vec![];
    let mut truth = std::collections::HashMap::new();
    let rank = |s: &str| ringback::twilio::message::status_rank(s).unwrap();
    for m in 0..300 {
        let run = format!("p{m}");
        let sid = format!("SM{:032x}", m);
        let fin = *finals.choose(&mut rng).unwrap();
        let path: Vec<&str> = match fin {
            "failed" => vec!["queued", "failed"],
            "canceled" => vec!["scheduled", "canceled"],
            "sent" => vec!["queued", "sending", "sent"],
            "read" => vec!["queued", "sent", "delivered", "read"],
            other => vec!["queued", "sending", "sent", other],
        };
        let mut arrived: Vec<&str> = path
            .iter()
            .copied()
            .filter(|_| rand::random::<f64>() > 0.3)
            .collect();
        if arrived.is_empty() {
            arrived.push(path[0]);
        }
        let best = *arrived.iter().max_by_key(|s| rank(s)).unwrap();
        truth.insert(run.clone(), best);
        for s in &arrived {
            for copy in 0..(1 + rand::random::<u32>() % 3) {
                updates.push(StatusUpdate {
                    run_id: run.clone(),
                    sid: sid.clone(),
                    status: s.to_string(),
                    error_code: None,
                    raw_dlr_done_date: None,
                    source: Source::Webhook,
                    repeat_id: Some(format!("{run}:{s}:{}", copy % 2)),
                    attempt: None,
                });
            }
        }
    }
    updates.shuffle(&mut rng);
    let chunks: Vec<Vec<StatusUpdate>> = updates
        .chunks(updates.len() / 8 + 1)
        .map(|c| c.to_vec())
        .collect();
    let mut tasks = vec![];
    for chunk in chunks {
        let r: Receipts = receipts.clone();
        tasks.push(tokio::spawn(async move {
            for u in chunk {
                r.apply(&u).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    for (run, best) in truth {
        let rec = receipts.record(&run, None).await.unwrap();
        assert_eq!(
            rec.status.as_deref(),
            Some(best),
            "{run}: {:?}",
            rec.history
        );
    }
}

#[tokio::test]
async fn callbacks_before_the_sent_marker_are_attributed_by_the_url() {
    let server = RedisServer::start();
    let s = state(&server, &queue_name("early")).await;
    let router = app(s.clone());
    let path = "/api/notify/webhook/status?runId=early-1";
    router
        .clone()
        .oneshot(callback(path, &status_params("delivered", &[]), Some("x")))
        .await
        .unwrap();
    // the worker then records its send (the 201 said "queued"): the record stays delivered
    let update = StatusUpdate {
        run_id: "early-1".into(),
        sid: SID.into(),
        status: "queued".into(),
        error_code: None,
        raw_dlr_done_date: None,
        source: Source::Send,
        repeat_id: None,
        attempt: None,
    };
    s.receipts.apply(&update).await.unwrap();
    assert_eq!(record(&s, "early-1").await.state, "delivered");
    assert_eq!(
        s.receipts.run_of(SID).await.unwrap().as_deref(),
        Some("early-1")
    );
}

#[tokio::test]
async fn escalation_can_text_a_fallback_number_through_the_window() {
    let server = RedisServer::start();
    let q = queue_name("fallback");
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let sms = SmsConfig {
        fallback_to: Some("+15550009999".into()),
        ..SmsConfig::default()
    };
    let (_, escalator) = sms.after_send(conn, "bull", &q);
    let e = ringback::callbacks::escalation::Escalation {
        run_id: "f1".into(),
        reason: "delivery undelivered".into(),
        last_status: Some("undelivered".into()),
        error_code: Some("30003".into()),
        kind: ringback::callbacks::escalation::EscalationKind::Undelivered,
    };
    assert!(escalator.escalate(&e).await.unwrap());
    assert!(!escalator.escalate(&e).await.unwrap(), "exactly once");
    let mut c = server.conn().await;
    let k = QueueKeys::new("bull", &q);
    let waiting: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    assert_eq!(
        waiting,
        vec!["f1:escalation".to_string()],
        "one fallback callback, through the window"
    );
    let data: String = c.hget(k.job("f1:escalation"), "data").await.unwrap();
    let data: serde_json::Value = serde_json::from_str(&data).unwrap();
    assert_eq!(
        (data["runId"].as_str(), data["to"].as_str()),
        (Some("f1:escalation"), Some("+15550009999"))
    );
    // the fallback itself failing is not escalated again
    let again = ringback::callbacks::escalation::Escalation {
        run_id: "f1:escalation".into(),
        ..e.clone()
    };
    assert!(!escalator.escalate(&again).await.unwrap());

    // Later: the record expired and both jobs were removed (removeOnComplete, or a person).
    // The run's escalation is still remembered: nothing is escalated or texted again.
    let esc = QueueKeys::new("bull", &format!("{q}-escalations"));
    let _: () = redis::cmd("DEL")
        .arg(k.job("f1:escalation"))
        .arg(k.wait())
        .arg(esc.job("escalation:f1"))
        .arg(esc.wait())
        .arg(ringback::store::keys::WindowKeys::new("agent-callback:", "f1").record)
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(
        !escalator.escalate(&e).await.unwrap(),
        "once, beyond the record"
    );
    let waiting: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    assert!(waiting.is_empty(), "no second fallback text: {waiting:?}");
    let escalations: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    assert!(
        escalations.is_empty(),
        "no second escalation job: {escalations:?}"
    );
    let ttl: i64 = redis::cmd("PTTL")
        .arg(ringback::store::keys::escalated_marker(
            "agent-callback:",
            "f1",
        ))
        .query_async(&mut c)
        .await
        .unwrap();
    let record_ttl = SmsConfig::default().sent_ttl.as_millis() as i64;
    assert!(
        ttl > 3 * record_ttl,
        "the marker outlives the record: {ttl} ms"
    );
}

#[tokio::test]
async fn replicas_never_take_the_same_due_poll() {
    let server = RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let sms = SmsConfig {
        receipt_poll_after: std::time::Duration::ZERO,
        ..SmsConfig::default()
    };
    let receipts = sms.after_send(conn, "bull", "due").0;
    // the send path (window_mark_sent.lua) schedules each sent message's poll
    let mut c = server.conn().await;
    for m in 0..200 {
        let _: () = c
            .zadd(
                ringback::store::keys::reconcile_schedule("agent-callback:"),
                format!("SM{m:032x}"),
                0,
            )
            .await
            .unwrap();
    }
    let mut tasks = vec![];
    for _ in 0..4 {
        let r = receipts.clone();
        tasks.push(tokio::spawn(async move {
            let mut got = vec![];
            loop {
                let batch = r
                    .due_polls(7, std::time::Duration::from_secs(60))
                    .await
                    .unwrap();
                if batch.is_empty() {
                    return got;
                }
                got.extend(batch);
            }
        }));
    }
    let mut all = vec![];
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let n = all.len();
    all.sort();
    all.dedup();
    assert_eq!(
        (n, all.len()),
        (200, 200),
        "every message taken exactly once"
    );
}

/// `ringback_reconcile_backlog` counts messages waiting for a final receipt: one whose final
/// receipt the webhook recorded leaves it at the gauge's next pass, not when its poll comes due.
#[tokio::test]
async fn the_backlog_counts_messages_still_waiting_for_a_final_receipt() {
    let server = RedisServer::start();
    let s = state(&server, &queue_name("backlog")).await;
    let router = app(s.clone());
    // the send path records the send, links its sid and schedules its poll a minute later
    s.receipts
        .apply(&StatusUpdate {
            run_id: "backlog-1".into(),
            sid: SID.into(),
            status: "queued".into(),
            error_code: None,
            raw_dlr_done_date: None,
            source: Source::Send,
            repeat_id: None,
            attempt: None,
        })
        .await
        .unwrap();
    let schedule = ringback::store::keys::reconcile_schedule("agent-callback:");
    let mut c = server.conn().await;
    let due = chrono::Utc::now().timestamp_millis() + 60_000;
    let _: () = c.zadd(&schedule, SID, due).await.unwrap();
    let deadline = std::time::Duration::from_secs(900);
    assert_eq!(s.receipts.receipt_backlog(deadline).await.unwrap(), (1, 0));
    // "sent" is not final: still waiting
    let path = "/api/notify/webhook/status?runId=backlog-1";
    let resp = router
        .clone()
        .oneshot(callback(path, &status_params("sent", &[]), Some("t1")))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(s.receipts.receipt_backlog(deadline).await.unwrap(), (1, 0));
    // the final receipt: nothing waits any more, and the poll is dropped
    let resp = router
        .clone()
        .oneshot(callback(path, &status_params("delivered", &[]), Some("t2")))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(s.receipts.receipt_backlog(deadline).await.unwrap(), (0, 0));
    let left: u64 = c.zcard(&schedule).await.unwrap();
    assert_eq!(left, 0, "the settled message's poll is dropped");
}

/// A fallback text is known by its record, not by its name: a producer's own runId that ends in
/// `:escalation` is escalated (and gets its fallback text) like any other run, while the
/// fallback text of a run is still never escalated further.
#[tokio::test]
async fn a_producers_runid_ending_in_escalation_is_escalated_like_any_other() {
    let server = RedisServer::start();
    let q = queue_name("fallback-name");
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let sms = SmsConfig {
        fallback_to: Some("+15550009999".into()),
        ..SmsConfig::default()
    };
    let (_, escalator) = sms.after_send(conn, "bull", &q);
    let esc = |run: &str| ringback::callbacks::escalation::Escalation {
        run_id: run.into(),
        reason: "delivery undelivered".into(),
        last_status: Some("undelivered".into()),
        error_code: Some("30003".into()),
        kind: ringback::callbacks::escalation::EscalationKind::Undelivered,
    };
    assert!(
        escalator.escalate(&esc("deploy:escalation")).await.unwrap(),
        "a producer's run is escalated whatever its name"
    );
    let mut c = server.conn().await;
    let escalations = QueueKeys::new("bull", &format!("{q}-escalations"));
    let ids: Vec<String> = c.lrange(escalations.wait(), 0, -1).await.unwrap();
    assert_eq!(ids, ["escalation:deploy:escalation"]);
    // its fallback text, and that fallback's own failure: not escalated further
    let k = QueueKeys::new("bull", &q);
    let waiting: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    assert_eq!(waiting, ["deploy:escalation:escalation"]);
    assert!(
        !escalator
            .escalate(&esc("deploy:escalation:escalation"))
            .await
            .unwrap()
    );
    let ids: Vec<String> = c.lrange(escalations.wait(), 0, -1).await.unwrap();
    assert_eq!(ids.len(), 1, "{ids:?}");
}
