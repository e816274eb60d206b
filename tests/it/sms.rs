//! Exactly-once callbacks end to end: real redis-server, the Twilio simulator, the SMS
//! processor in-process or the `ringback` binary (for crashes, which abort the process).
//! Texts are counted at the simulator, never in ringback's own bookkeeping.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::callbacks::*;
use common::wait_for;
use redis::AsyncCommands;
use ringback::Worker;
use ringback::callbacks::sms::{SmsConfig, SmsEvent};
use ringback::store::keys::{QueueKeys, WindowKeys};

use tokio_util::sync::CancellationToken;

#[tokio::test]
async fn sends_once_and_a_repeat_is_deduplicated() {
    let e = env("once", "").await;
    let w = start_worker(&e, sms_config()).await;
    let first = add(&e, &data("r1")).await;
    let (state, h) = finished(&e, &first).await;
    assert_eq!(state, "completed");
    let rv = returnvalue(&h);
    assert_eq!(rv["deduplicated"], false);
    assert_eq!(rv["runId"], "r1");
    assert_eq!(rv["status"], "queued");
    let sid = rv["messageSid"].as_str().unwrap().to_string();
    let mut c = e.redis.conn().await;
    let claim: String = c
        .get(WindowKeys::new("agent-callback:", "r1").claim)
        .await
        .unwrap();
    assert_eq!(claim, format!("sent:{sid}"));
    let ttl: i64 = c
        .pttl(WindowKeys::new("agent-callback:", "r1").claim)
        .await
        .unwrap();
    assert!(ttl > 3_000_000, "the sent marker is long-lived: {ttl}");

    let again = add(&e, &data("r1")).await;
    let (state, h) = finished(&e, &again).await;
    assert_eq!(state, "completed");
    assert_eq!(
        returnvalue(&h),
        serde_json::json!({"runId": "r1", "messageSid": sid, "status": "sent", "deduplicated": true})
    );
    assert_eq!(texts(&e, "r1"), 1);
    use ringback::callbacks::sms::SmsEvent;
    assert_eq!(
        (
            w.stats.get(SmsEvent::Sent),
            w.stats.get(SmsEvent::Deduplicated)
        ),
        (1, 1)
    );
    let metrics = ringback::edge::metrics::encode(
        &e.queue,
        vec![Box::new(ringback::edge::metrics::SmsCollector(
            w.stats.clone(),
        ))],
    );
    assert!(
        metrics.contains(&format!(
            "ringback_sms_attempts_total{{queue=\"{}\",outcome=\"deduplicated\"}} 1\n",
            e.queue
        )),
        "{metrics}"
    );
    w.stop().await;
}

#[tokio::test]
async fn same_run_on_two_workers_at_once_texts_once() {
    let e = env("twins", r#"{"create":[{"fault":"slow","delay_ms":300}]}"#).await;
    let mut ids = vec![];
    for _ in 0..4 {
        ids.push(add(&e, &data("twin")).await);
    }
    let a = start_worker(&e, sms_config()).await;
    let b = start_worker(&e, sms_config()).await;
    for id in &ids {
        assert_eq!(finished(&e, id).await.0, "completed");
    }
    assert_eq!(texts(&e, "twin"), 1);
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn bad_jobs_fail_at_once_naming_the_field_and_are_escalated() {
    let e = env("bad", "").await;
    let w = start_worker(&e, sms_config()).await;
    let long_body = "b".repeat(1601);
    let cases = [
        ("{oops".to_string(), "not valid JSON"),
        (
            r#"{"to":"+15558675310","body":"x"}"#.to_string(),
            "`runId` is missing",
        ),
        (
            format!(
                r#"{{"runId":"{}","to":"+15558675310","body":"x"}}"#,
                "r".repeat(ringback::callbacks::callback::MAX_RUN_ID + 1)
            ),
            "`runId` is longer",
        ),
        (
            r#"{"runId":"b1","to":"0800 123","body":"x"}"#.to_string(),
            "`to` is neither an E.164",
        ),
        (
            r#"{"runId":"b2","to":"+15558675310","body":""}"#.to_string(),
            "`body` is empty",
        ),
        (
            format!(r#"{{"runId":"b3","to":"+15558675310","body":"{long_body}"}}"#),
            "`body` is longer",
        ),
    ];
    let mut ids = vec![];
    for (d, expected) in cases {
        let id = add(&e, &d).await;
        let (state, h) = finished(&e, &id).await;
        assert_eq!(state, "failed");
        assert!(
            h["failedReason"].contains(expected),
            "{}",
            h["failedReason"]
        );
        assert_eq!(h["atm"], "1", "unrecoverable: no retry storm");
        ids.push(id);
    }
    assert_eq!(e.sim.store.stats().total, 0, "no provider call");
    // each one is escalated (`invalid`, with its reason): a person hears of every job not texted
    let mut want: Vec<String> = ids
        .iter()
        .map(|id| format!("escalation:job:{id}"))
        .collect();
    want.sort();
    assert_eq!(escalation_ids(&e).await, want);
    let mut c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let job: String = c.hget(esc.job(&want[0]), "data").await.unwrap();
    assert!(job.contains(r#""kind":"invalid""#), "{job}");
    w.stop().await;

    // an invalid job with a usable runId is found by it, everywhere a run is: its record
    // (status, the API) says `invalid`, the console's run page shows the job failed in the
    // queue, and the Now page counts its escalation
    let s = common::api_state(&e.redis, &e.queue).await;
    let record = s.receipts.record("b1", None).await.unwrap();
    assert_eq!(record.state, "invalid", "{record:?}");
    assert!(record.escalated && record.seen, "{record:?}");
    let router = ringback::edge::api::app(s.clone());
    let get = |path: &str| {
        axum::http::Request::get(path)
            .header("authorization", format!("Bearer {}", common::API_TOKEN))
            .body(axum::body::Body::empty())
            .unwrap()
    };
    use tower::ServiceExt;
    let res = router
        .clone()
        .oneshot(get("/console/runs/b1"))
        .await
        .unwrap();
    assert_eq!(res.status(), axum::http::StatusCode::OK);
    let page = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    let page = String::from_utf8_lossy(&page);
    assert!(page.contains("invalid"), "{page}");
    assert!(!page.contains("is not in the queue"), "{page}");
    assert!(page.contains("failed"), "{page}");
    let res = router.clone().oneshot(get("/console/now")).await.unwrap();
    let now = axum::body::to_bytes(res.into_body(), 1 << 22)
        .await
        .unwrap();
    let now = String::from_utf8_lossy(&now);
    assert!(now.contains("/console/runs/b1"), "{now}");
}

#[tokio::test]
async fn a_permanent_failure_releases_the_claim_so_a_later_job_sends() {
    let e = env("perm", r#"{"create":[{"fault":"permanent","code":21610,"times":1,"message":"Attempt to send to unsubscribed recipient"}]}"#).await;
    let w = start_worker(&e, sms_config()).await;
    let id = add(&e, &data("p1")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "failed");
    assert!(h["failedReason"].contains("21610"), "{}", h["failedReason"]);
    assert_eq!(h["atm"], "1", "permanent: not retried");
    let mut c = e.redis.conn().await;
    let keys = WindowKeys::new("agent-callback:", "p1");
    assert!(
        !c.exists::<_, bool>(&keys.claim).await.unwrap(),
        "claim released"
    );
    let state_field: String = c.hget(&keys.attempt, "state").await.unwrap();
    assert_eq!(state_field, "send-failed");

    let later = add(&e, &data("p1")).await;
    assert_eq!(finished(&e, &later).await.0, "completed");
    assert_eq!(texts(&e, "p1"), 1);
    use ringback::callbacks::sms::SmsEvent;
    assert_eq!(
        (
            w.stats.get(SmsEvent::Permanent),
            w.stats.get(SmsEvent::Sent)
        ),
        (1, 1)
    );
    w.stop().await;
}

#[tokio::test]
async fn rate_limited_sends_once_later_without_using_an_attempt() {
    let e = env(
        "429",
        r#"{"create":[{"fault":"rate_limited","retry_after_s":1,"times":1}]}"#,
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let started = std::time::Instant::now();
    let id = add(&e, &data("rl")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    assert!(
        started.elapsed() >= Duration::from_secs(1),
        "Retry-After honoured"
    );
    assert_eq!(h["atm"], "1", "the wait used no attempt");
    assert_eq!(texts(&e, "rl"), 1);
    assert_eq!(
        w.stats.get(ringback::callbacks::sms::SmsEvent::RetryLater),
        1
    );
    w.stop().await;
}

/// Twilio took the message and the answer was lost, and no status callback can reach ringback:
/// the lookup finds a message it cannot link to the run. It is never sent again, and the run is
/// settled unknown with a person told (the message may be another run's or sender's).
#[tokio::test]
async fn created_then_dropped_without_receipts_is_never_resent_and_a_person_is_told() {
    let e = env(
        "drop",
        r#"{"create":[{"fault":"create_then_drop","times":1}]}"#,
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let id = add(&e, &data("d1")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    let rv = returnvalue(&h);
    assert_eq!(rv["status"], "unknown", "{rv}");
    assert_eq!(texts(&e, "d1"), 1);
    assert_eq!(escalation_ids(&e).await, ["escalation:d1"]);
    let mut c = e.redis.conn().await;
    let esc = ringback::store::keys::QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let job: String = c.hget(esc.job("escalation:d1"), "data").await.unwrap();
    assert!(job.contains(r#""kind":"unknown_settled""#), "{job}");
    assert!(job.contains("no receipt links to this run"), "{job}");
    assert_eq!(w.stats.get(ringback::callbacks::sms::SmsEvent::Unknown), 1);
    w.stop().await;
}

/// The same lost answer with status callbacks reaching `serve`: the receipt names the run and
/// its attempt, so the message is proven this run's and the job completes with it, untold.
#[tokio::test]
async fn created_then_dropped_is_proven_by_the_receipt_that_names_the_run() {
    let e = env(
        "drop-receipt",
        r#"{"create":[{"fault":"create_then_drop","times":1}]}"#,
    )
    .await;
    let mut sms = sms_config();
    serve_receipts(&e, &mut sms).await;
    let w = start_worker(&e, sms).await;
    let id = add(&e, &data("d2")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    let rv = returnvalue(&h);
    assert_eq!(rv["reconciled"], true, "{rv}");
    assert_eq!(rv["messageSid"], sent_sids(&e, "d2")[0].as_str(), "{rv}");
    assert_eq!(texts(&e, "d2"), 1);
    assert!(
        escalation_ids(&e).await.is_empty(),
        "nobody is told of a proven send"
    );
    w.stop().await;
}

#[tokio::test]
async fn an_unknown_send_that_never_happened_is_sent_once_after_the_window() {
    let e = env(
        "5xx",
        r#"{"create":[{"fault":"server_error","status":503,"times":1}]}"#,
    )
    .await;
    sent_once_after_the_window(&e, "t1").await;
}

/// The first send's outcome is unknown and nothing was created: the claim is held for the
/// reconcile window (1.5 s here), then the callback is sent, once.
async fn sent_once_after_the_window(e: &Env, run: &str) {
    let w = start_worker(e, sms_config()).await;
    let started = std::time::Instant::now();
    let id = add(e, &data(run)).await;
    let (state, h) = finished(e, &id).await;
    assert_eq!(state, "completed");
    assert_eq!(returnvalue(&h)["deduplicated"], false);
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "no resend before the reconcile window"
    );
    assert_eq!(texts(e, run), 1);
    w.stop().await;
}

#[tokio::test]
async fn legacy_claim_values_are_understood() {
    let e = env("legacy", "").await;
    let mut c = e.redis.conn().await;
    // The legacy worker sent this one.
    let _: () = c
        .set_ex(
            WindowKeys::new("agent-callback:", "old").claim,
            "sent",
            86_400,
        )
        .await
        .unwrap();
    // The legacy worker is inside its window for this one (its claim expires soon).
    let _: () = c
        .pset_ex(
            WindowKeys::new("agent-callback:", "busy").claim,
            "pending",
            800,
        )
        .await
        .unwrap();
    let w = start_worker(&e, sms_config()).await;
    let old = add(&e, &data("old")).await;
    let (state, h) = finished(&e, &old).await;
    assert_eq!(state, "completed");
    assert_eq!(returnvalue(&h)["deduplicated"], true);
    let busy = add(&e, &data("busy")).await;
    let (state, h) = finished(&e, &busy).await;
    assert_eq!(
        state, "completed",
        "never dropped, unlike `if (!claimed) return;`"
    );
    assert_eq!(h["atm"], "1");
    assert_eq!(texts(&e, "old"), 0);
    assert_eq!(texts(&e, "busy"), 1);
    w.stop().await;
}

/// Crashes a worker at `point`, recovers with a fresh one; the SIDs of the texts sent and the job's
/// return value.
async fn crash_then_recover(point: &str, run_id: &str) -> (Vec<String>, serde_json::Value) {
    let e = env(&format!("crash-{point}"), "").await;
    serve_receipts(&e, &mut sms_config()).await;
    let id = add(&e, &data(run_id)).await;
    let mut crashing = spawn_binary(&e, Some(point));
    let status = tokio::task::spawn_blocking(move || crashing.0.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(
        !status.success(),
        "the drill hook aborted the process at {point}"
    );
    let recovering = spawn_binary(&e, None);
    let (state, h) = finished(&e, &id).await;
    drop(recovering);
    assert_eq!(state, "completed", "{point}");
    (sent_sids(&e, run_id), returnvalue(&h))
}

#[tokio::test]
async fn crash_after_claim_sends_once_on_retry() {
    // The job's retry (or the orphan sweep's re-enqueued job, whichever resolves first) finds no
    // message, waits out the reconcile window, and sends; the other then sees it sent.
    let (sids, rv) = crash_then_recover("after-claim", "c1").await;
    assert_eq!(sids.len(), 1);
    assert_eq!(rv["messageSid"], sids[0].as_str(), "{rv}");
}

#[tokio::test]
async fn crash_after_provider_accept_does_not_resend() {
    // Either the job's retry or the orphan sweep finds the accepted message at Twilio first; the
    // job answers with that message either way (`reconciled` only when the job found it itself).
    let (sids, rv) = crash_then_recover("after-provider-accept", "c2").await;
    assert_eq!(sids.len(), 1);
    assert_eq!(rv["deduplicated"], true, "{rv}");
    assert_eq!(rv["messageSid"], sids[0].as_str(), "{rv}");
}

#[tokio::test]
async fn crash_after_sent_marker_does_not_resend() {
    // On a single Redis the marker and the completion are one call: the crash comes after both,
    // so the job is completed by the crashed worker itself (not deduplicated by the recovery).
    // `before-complete` is the same point (merged; the name still parses).
    let (sids, rv) = crash_then_recover("after-sent-marker", "c3").await;
    assert_eq!(sids.len(), 1);
    assert_eq!(rv["messageSid"], sids[0].as_str(), "{rv}");
    let (sids, rv) = crash_then_recover("before-complete", "c4").await;
    assert_eq!(sids.len(), 1);
    assert_eq!(rv["messageSid"], sids[0].as_str(), "{rv}");
}

#[tokio::test]
async fn an_orphaned_attempt_is_resolved_by_the_sweep_and_sent_once() {
    let e = env("orphan", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = window(&e, conn.clone(), 200);
    // An attempt claimed, then its process died and its job was dropped (the legacy worker
    // completes a job whose claim it cannot take): no job will ever retry it.
    let body = "Run o1 finished: 2 approvals needed";
    let claim = w
        .claim("o1", "tok-1", None, "gone", "w", TO, "", body)
        .await
        .unwrap();
    assert!(matches!(
        claim,
        ringback::callbacks::window::Claim::Claimed { .. }
    ));
    let processor = processor(&e, conn, sms_config());
    let resolved = wait_for(T, "the sweep to resolve the orphan", || {
        let p = processor.clone();
        async move {
            let resolved = ringback::callbacks::orphans::sweep(&p, None, &Default::default())
                .await
                .unwrap();
            (!resolved.is_empty()).then_some(resolved)
        }
    })
    .await;
    assert_eq!(resolved, vec!["o1".to_string()]);
    assert_eq!(
        texts(&e, "o1"),
        1,
        "nothing had been sent: sent once, after the window"
    );
    let mut c = e.redis.conn().await;
    let claim: String = c
        .get(WindowKeys::new("agent-callback:", "o1").claim)
        .await
        .unwrap();
    assert!(claim.starts_with("sent:SM"), "{claim}");
    assert!(
        ringback::callbacks::orphans::sweep(&processor, None, &Default::default())
            .await
            .unwrap()
            .is_empty(),
        "settled: swept no more"
    );
}

#[tokio::test]
async fn a_lookup_never_takes_another_runs_message() {
    let e = env("other-run", "").await;
    let body = "Your agent finished";
    let same = |run: &str| serde_json::json!({"runId": run, "to": TO, "body": body}).to_string();
    let worker = start_worker(&e, sms_config()).await;
    let a = add(&e, &same("ra")).await;
    assert_eq!(finished(&e, &a).await.0, "completed");
    worker.stop().await;
    // Run rb's attempt claimed and died before sending: the same recipient and body as ra.
    let client = redis::Client::open(e.redis.url()).unwrap();
    let w = window(
        &e,
        ringback::store::connection::commands(&client)
            .await
            .unwrap(),
        200,
    );
    w.claim("rb", "tok-b", None, "old", "w", TO, "", body)
        .await
        .unwrap();
    let b = add(&e, &same("rb")).await;
    let worker = start_worker(&e, sms_config()).await;
    let (state, h) = finished(&e, &b).await;
    assert_eq!(state, "completed");
    assert_eq!(
        returnvalue(&h)["deduplicated"],
        false,
        "ra's message is not rb's proof"
    );
    let sent = e
        .sim
        .store
        .all()
        .iter()
        .filter(|m| m.body.as_deref() == Some(body))
        .count();
    assert_eq!(sent, 2, "one text per run");
    worker.stop().await;
}

/// End to end: the simulator's status callbacks reach `ringback serve`'s router out of order,
/// twice, or not at all (then the reconciliation poll finds the status); every record ends in the
/// simulator's final status, and escalations fire once per failed delivery, never for a
/// delivered one.
#[tokio::test]
async fn receipts_end_in_the_simulators_final_status() {
    let faults = r#"{"callbacks":[
        {"to":"+15550001001","reversed":true},
        {"to":"+15550001002","duplicate":true},
        {"to":"+15550001003","none":true},
        {"to":"+15550001004","final":"undelivered","error_code":30004,"reversed":true,"duplicate":true},
        {"to":"+15550001005","final":"failed","error_code":30010},
        {"to":"+15550001006","final":"undelivered","error_code":30006,"none":true},
        {"to":"+15550001007","final":"sent"}]}"#;
    let e = env("receipts", faults).await;
    let mut sms = sms_config();
    let receipts = serve_receipts(&e, &mut sms).await;
    sms.receipt_poll_after = Duration::from_millis(300);
    sms.delivery_deadline = Duration::from_millis(1500);
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let processor = processor(&e, conn, sms);
    tokio::spawn(
        processor
            .reconciler()
            .run(Duration::from_millis(100), e.cancel.clone()),
    );
    let worker = Worker::new(worker_config(&e), processor).unwrap();
    let stop = CancellationToken::new();
    let handle = tokio::spawn(worker.run(stop.clone()));

    let mut expected = vec![];
    for i in 0..18 {
        let to = format!("+1555000100{}", 1 + i % 6);
        let run = format!("rcpt-{i}");
        let data =
            serde_json::json!({"runId": run, "to": to, "body": format!("Run {run} finished")})
                .to_string();
        add(&e, &data).await;
        let fin = match i % 6 {
            3 | 5 => "undelivered",
            4 => "failed",
            _ => "delivered",
        };
        expected.push((run, fin));
    }
    // The carrier never confirms this one: "sent" is its last status; past the delivery
    // deadline it is escalated.
    let data = serde_json::json!({"runId": "rcpt-silent", "to": "+15550001007", "body": "Run rcpt-silent finished"}).to_string();
    add(&e, &data).await;
    expected.push(("rcpt-silent".to_string(), "sent"));
    for (run, fin) in &expected {
        let r = receipts.clone();
        let (run, fin) = (run.clone(), *fin);
        wait_for(T, &format!("{run} to end {fin}"), move || {
            let (r, run) = (r.clone(), run.clone());
            async move { (r.record(&run, None).await.unwrap().state == fin).then_some(()) }
        })
        .await;
    }
    stop.cancel();
    let _ = handle.await;
    let mut c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let r = receipts.clone();
    wait_for(T, "the silent run to be escalated", move || {
        let r = r.clone();
        async move {
            r.record("rcpt-silent", None)
                .await
                .unwrap()
                .escalated
                .then_some(())
        }
    })
    .await;
    let mut escalated: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    escalated.sort();
    let mut want: Vec<String> = expected
        .iter()
        .filter(|(_, f)| *f != "delivered")
        .map(|(r, _)| format!("escalation:{r}"))
        .collect();
    want.sort();
    assert_eq!(
        escalated, want,
        "one escalation per failed delivery, none for delivered ones"
    );
    assert_eq!(e.sim.store.stats().total, 19, "one text per run");
    // each failed delivery counted once by its code, whether a callback (repeated, reversed)
    // or the poll told it (the counters are the process's: codes no other suite delivers)
    let t = ringback::telemetry::global();
    for code in ["30004", "30010", "30006"] {
        let n = t
            .delivery_errors
            .get_or_create(&ringback::telemetry::CodeLabel { code: code.into() })
            .get();
        assert_eq!(n, 3, "{code}");
    }
}

#[tokio::test]
async fn a_timeout_where_nothing_was_created_sends_once_after_the_window() {
    // The client gives up after 500 ms; the simulator never created the message.
    let e = env(
        "timeout",
        r#"{"create":[{"fault":"slow","delay_ms":1500,"created":false,"times":1}]}"#,
    )
    .await;
    sent_once_after_the_window(&e, "to1").await;
}

#[tokio::test]
async fn ringback_status_prints_the_record_for_a_person() {
    let e = env("status", "").await;
    let w = start_worker(&e, sms_config()).await;
    let id = add(&e, &data("st1")).await;
    assert_eq!(finished(&e, &id).await.0, "completed");
    w.stop().await;
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringback"))
        .args(["status", "st1"])
        .env("REDIS_URL", e.redis.url())
        .env("RINGBACK_QUEUE", &e.queue)
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("run        st1"), "{text}");
    assert!(text.contains("state      accepted"), "{text}");
    assert!(text.contains("message    SM"), "{text}");
    assert!(
        text.contains("queued") && text.contains("send"),
        "the send is in the history: {text}"
    );
}

/// `INFO commandstats` calls of `cmd` so far.
async fn calls(e: &Env, cmd: &str) -> u64 {
    commandstats(e)
        .await
        .get(cmd)
        .map_or(0, |(calls, _)| *calls)
}

/// 30 runs and 10 repeats through one worker, with the single-Redis finish (`fused`) or with
/// separate calls; returns the scripts run per job. Either way: one text per run, and the
/// window's records end the same.
async fn stream_of_jobs(fused: bool) -> f64 {
    let e = env(&format!("stream-{fused}"), "").await;
    let runs: Vec<String> = (0..30).map(|i| format!("s{i}")).collect();
    let mut ids = vec![];
    for run in runs.iter().chain(runs.iter().take(10)) {
        ids.push(add(&e, &data(run)).await);
    }
    let before = calls(&e, "evalsha").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(&e, conn, sms_config()).with_fused_finish(fused);
    let worker = Worker::new(worker_config(&e), p).unwrap();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    for id in &ids {
        let (state, h) = finished(&e, id).await;
        assert_eq!(state, "completed", "fused {fused}: {h:?}");
    }
    let scripts = calls(&e, "evalsha").await - before;
    cancel.cancel();
    let _ = handle.await;
    let mut c = e.redis.conn().await;
    for run in &runs {
        let sids = sent_sids(&e, run);
        assert_eq!(sids.len(), 1, "fused {fused}: one text for {run}");
        let k = WindowKeys::new("agent-callback:", run);
        let claim: String = c.get(&k.claim).await.unwrap();
        assert_eq!(claim, format!("sent:{}", sids[0]));
        let state: String = c.hget(&k.attempt, "state").await.unwrap();
        assert_eq!(state, "sent");
        let status: String = c.hget(&k.record, "status").await.unwrap();
        assert_eq!(status, "queued");
        let link: String = c
            .get(ringback::store::keys::message_link(&sids[0]))
            .await
            .unwrap();
        assert_eq!(&link, run);
    }
    let open: u64 = c
        .zcard(ringback::store::keys::open_attempts("agent-callback:"))
        .await
        .unwrap();
    assert_eq!(open, 0, "fused {fused}: no attempt left open");
    let recent: u64 = c
        .zcard(ringback::store::keys::recent_runs("agent-callback:"))
        .await
        .unwrap();
    assert_eq!(recent, 30);
    scripts as f64 / ids.len() as f64
}

/// Whether this run forces the cluster layout (`RINGBACK_DRILL_PER_SLOT=1`, which `scripts/test`
/// runs the exactly-once suites with; docs/testing.md): the single-Redis finish's own tests
/// (fused calls, the group commit of SMS finishes) have nothing to measure there.
fn per_slot_forced() -> bool {
    std::env::var("RINGBACK_DRILL_PER_SLOT").as_deref() == Ok("1")
}

#[tokio::test]
async fn the_single_redis_finish_is_one_script_per_job() {
    if per_slot_forced() {
        return;
    }
    let (fused, separate) = tokio::join!(stream_of_jobs(true), stream_of_jobs(false));
    eprintln!("scripts per job: fused {fused:.2}, separate {separate:.2}");
    // Fused: the finish of each job also fetched and claimed the next; the first job of each of
    // the 8 tasks costs a fetch and a claim, plus lock renewals and stall sweeps on the side.
    // Separate: a claim and a marker of its own per job, and the finish (itself grouped with
    // other jobs' finishes when they queue up together, so it may cost less than one call).
    assert!(fused < 1.6, "fused: {fused:.2} scripts per job");
    assert!(
        separate > 2.0,
        "separate calls: {separate:.2} scripts per job"
    );
}

/// The fused finish claims the fetched job's run only for plain callback requests; whatever the
/// processor would refuse is never claimed (so nothing is ever sent for it, by the sweep either),
/// and whatever the Lua check is unsure of is claimed by the processor as usual.
#[tokio::test]
async fn the_fused_claim_is_never_made_for_a_job_the_processor_refuses() {
    let e = env("fused-strict", "").await;
    let body = |run: &str| format!("Run {run} finished: 2 approvals needed");
    let plain = |run: &str| (data(run), true);
    // Each case follows a plain job, so its predecessor's fused finish is what fetches it.
    let jobs = [
        plain("f0"),
        // numbers strict JSON refuses and cjson takes (hex, Infinity): invalid, never claimed
        (
            format!(
                r#"{{"runId":"f1","to":"+15558675310","body":"{}","n":0x10}}"#,
                body("f1")
            ),
            false,
        ),
        plain("f2"),
        (
            format!(
                r#"{{"runId":"f3","to":"+15558675310","body":"{}","n":Infinity}}"#,
                body("f3")
            ),
            false,
        ),
        plain("f4"),
        // an alphanumeric sender: claimed by the fused finish
        (
            serde_json::json!({"runId": "f5", "to": "+15558675310", "body": body("f5"), "from": "Acme"})
                .to_string(),
            true,
        ),
        // an escape: the Lua check is unsure, the processor claims as usual
        (
            format!(
                r#"{{"runId":"f6","to":"+15558675310","body":"{} \u00e9"}}"#,
                body("f6")
            ),
            true,
        ),
        // a sender that is neither E.164 nor alphanumeric: invalid
        (
            serde_json::json!({"runId": "f7", "to": "+15558675310", "body": body("f7"), "from": "+0"})
                .to_string(),
            false,
        ),
        plain("f8"),
    ];
    let mut ids = vec![];
    for (d, _) in &jobs {
        ids.push(add(&e, d).await);
    }
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(&e, conn, sms_config());
    // one job at a time: every job after the first is fetched by its predecessor's finish
    let cfg = ringback::WorkerConfig {
        concurrency: 1,
        ..worker_config(&e)
    };
    let worker = Worker::new(cfg, p).unwrap();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    let mut c = e.redis.conn().await;
    for (i, ((_, valid), id)) in jobs.iter().zip(&ids).enumerate() {
        let run = format!("f{i}");
        let (state, h) = finished(&e, id).await;
        let claim: Option<String> = c
            .get(WindowKeys::new("agent-callback:", &run).claim)
            .await
            .unwrap();
        if *valid {
            assert_eq!(state, "completed", "{run}: {h:?}");
            assert_eq!(texts_to(&e, &run), 1, "{run}: one text");
            assert!(claim.is_some_and(|v| v.starts_with("sent:")), "{run}");
        } else {
            assert_eq!(state, "failed", "{run}: {h:?}");
            let reason = &h["failedReason"];
            assert!(
                reason.contains("invalid callback job") || reason.contains("not valid JSON"),
                "{reason}"
            );
            assert_eq!(claim, None, "{run}: never claimed");
            assert_eq!(texts_to(&e, &run), 0, "{run}: never texted");
        }
    }
    cancel.cancel();
    let _ = handle.await;
}

/// Finishes that queue up behind the ones in flight go to Redis together (the group commit):
/// 50 jobs run at once and finish about together, so the worker makes far fewer
/// script calls than it finishes jobs, and every run is still texted exactly once.
#[tokio::test]
async fn finishes_that_queue_up_together_go_as_one_call() {
    if per_slot_forced() {
        return;
    }
    let e = env("grouped", "").await;
    let n = 300;
    let (before, after) = run_through_worker(&e, "g", n, 50).await;
    let calls = |m: &std::collections::BTreeMap<String, (u64, u64)>| {
        m.iter()
            .filter(|(k, _)| k.starts_with("eval"))
            .map(|(_, (c, _))| c)
            .sum::<u64>()
    };
    let scripts = calls(&after) - calls(&before);
    assert!(
        (scripts as f64) < 0.8 * n as f64,
        "{scripts} script calls for {n} jobs: finishes were not grouped"
    );
    for i in 0..n {
        assert_eq!(texts_to(&e, &format!("g{i}")), 1, "g{i}: one text");
    }
}

/// `n` callback jobs (runs `<prefix>0..`) through an in-process SMS worker at `concurrency`,
/// each waited for until completed; returns `INFO commandstats` before and after.
async fn run_through_worker(
    e: &Env,
    prefix: &str,
    n: usize,
    concurrency: usize,
) -> (
    std::collections::BTreeMap<String, (u64, u64)>,
    std::collections::BTreeMap<String, (u64, u64)>,
) {
    let mut ids = vec![];
    for i in 0..n {
        ids.push(add(e, &data(&format!("{prefix}{i}"))).await);
    }
    let before = commandstats(e).await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(e, conn, sms_config());
    let cfg = ringback::WorkerConfig {
        concurrency,
        ..worker_config(e)
    };
    let worker = Worker::new(cfg, p).unwrap();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    for id in &ids {
        let (state, h) = finished(e, id).await;
        assert_eq!(state, "completed", "{h:?}");
    }
    cancel.cancel();
    let _ = handle.await;
    (before, commandstats(e).await)
}

/// Texts whose body names `run` (the bodies of this file's tests differ in their suffix).
fn texts_to(e: &Env, run: &str) -> usize {
    e.sim
        .store
        .all()
        .iter()
        .filter(|m| {
            m.body
                .as_deref()
                .is_some_and(|b| b.starts_with(&format!("Run {run} finished")))
        })
        .count()
}

/// Every `INFO commandstats` line: command -> (calls, usec).
async fn commandstats(e: &Env) -> std::collections::BTreeMap<String, (u64, u64)> {
    let mut c = e.redis.conn().await;
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(&mut c)
        .await
        .unwrap();
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let field = |f: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(f))
                    .and_then(|n| n.parse::<u64>().ok())
            };
            Some((name.to_string(), (field("calls=")?, field("usec=")?)))
        })
        .collect()
}

/// Redis commands and Redis CPU per SMS job with the single-Redis finish, on a quiet redis-server:
/// prints the commands per job, script by script Redis's `usec` per job, and the
/// commands that ran, most first. A figure to read, not a gate:
/// `cargo test --test sms -- --ignored --nocapture commands_per_fused_job`.
#[tokio::test]
#[ignore]
async fn commands_per_fused_job() {
    let e = env("per-job", "").await;
    let n = 400;
    let (before, after) = run_through_worker(&e, "c", n, worker_config(&e).concurrency).await;
    // the test's own polling (ZSCORE, HGETALL of finished jobs, INFO) is counted too, so
    // subtract nothing: compare runs of this same test before and after a change
    let mut delta: Vec<(String, u64, u64)> = after
        .iter()
        .map(|(k, (c, u))| {
            let (c0, u0) = before.get(k).copied().unwrap_or((0, 0));
            (k.clone(), c - c0, u - u0)
        })
        .filter(|(_, c, _)| *c > 0)
        .collect();
    delta.sort_by_key(|(_, c, _)| std::cmp::Reverse(*c));
    let scripts: u64 = delta
        .iter()
        .filter(|(k, _, _)| k.starts_with("eval"))
        .map(|(_, c, _)| c)
        .sum();
    let script_usec: u64 = delta
        .iter()
        .filter(|(k, _, _)| k.starts_with("eval"))
        .map(|(_, _, u)| u)
        .sum();
    let total: u64 = delta.iter().map(|(_, c, _)| c).sum();
    let per = |x: u64| x as f64 / n as f64;
    eprintln!(
        "{n} jobs: {:.2} scripts/job, {:.1} commands/job (all, test polling included), {:.1} µs script CPU/job",
        per(scripts),
        per(total - scripts),
        per(script_usec)
    );
    for (k, c, u) in &delta {
        eprintln!("  {k:<20} {:>7.2}/job {:>7.1} µs/job", per(*c), per(*u));
    }
}

/// `scripts/bench`'s `ringback-legacy` subject (examples/legacy_pattern_worker.rs) does the
/// legacy worker's work, or its figures would mean nothing: one text per run, the claim key
/// `sent` with its day-long TTL, and a second job of the same run completed without a text.
#[tokio::test]
async fn the_legacy_pattern_bench_subject_texts_each_run_once() {
    let e = env("legacy-pattern", "").await;
    let runs: Vec<String> = (0..12).map(|i| format!("lp{i}")).collect();
    let mut ids = Vec::new();
    for run in &runs {
        ids.push(add(&e, &data(run)).await);
    }
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_ringback"))
        .parent()
        .unwrap()
        .join("examples/legacy_pattern_worker");
    // the same settings as the ringback worker's, for another program
    let cmd = ringback_command(&e, "worker", Timings::Compressed);
    let mut subject = std::process::Command::new(&exe);
    subject.envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))));
    subject
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _proc = Proc(subject.spawn().unwrap_or_else(|err| {
        panic!(
            "{}: {err} (`cargo build --examples` builds it; `cargo test` does too)",
            exe.display()
        )
    }));
    for id in &ids {
        assert_eq!(finished(&e, id).await.0, "completed");
    }
    let again = add(&e, &data("lp0")).await;
    assert_eq!(finished(&e, &again).await.0, "completed");
    let mut c = e.redis.conn().await;
    for run in &runs {
        assert_eq!(texts(&e, run), 1, "{run}");
        let key = format!("agent-callback:{run}");
        let claim: String = c.get(&key).await.unwrap();
        assert_eq!(claim, "sent", "{run}");
        let ttl: i64 = c.ttl(&key).await.unwrap();
        assert!(ttl > 86_000, "{run}: {ttl}");
    }
}

/// Twilio's queue never outlives the delivery deadline: unset, the worker sends the deadline as
/// `ValidityPeriod`, so a receipt-missing escalation means Twilio will no longer deliver.
#[tokio::test]
async fn the_worker_bounds_twilios_queue_by_the_delivery_deadline() {
    let e = env("validity", "").await;
    let id = add(&e, &data("v1")).await;
    let mut cmd = ringback_command(&e, "worker", Timings::Compressed);
    cmd.env("RINGBACK_DELIVERY_DEADLINE_MS", "600000");
    let worker = Proc(cmd.spawn().unwrap());
    assert_eq!(finished(&e, &id).await.0, "completed");
    drop(worker);
    let creates: Vec<_> = e
        .sim
        .store
        .requests()
        .into_iter()
        .filter(|r| r.method == "POST")
        .collect();
    assert_eq!(creates.len(), 1);
    let validity = creates[0]
        .form
        .iter()
        .find(|(k, _)| k == "ValidityPeriod")
        .map(|(_, v)| v.as_str());
    assert_eq!(validity, Some("600"), "{:?}", creates[0].form);
}

/// Twilio answers 201 with the message already `failed` (30007): at production timings, the
/// worker records it and escalates it once as undelivered, whatever the status callback does
/// (it says `failed` too), and never sends it again.
#[tokio::test]
async fn a_message_created_already_failed_is_escalated_once_as_undelivered() {
    let e = env(
        "created-failed",
        r#"{"create":[{"fault":"created_failed","error_code":30007,"times":1}]}"#,
    )
    .await;
    serve_receipts(&e, &mut sms_config()).await;
    let id = add(&e, &data("cf1")).await;
    let worker = spawn_worker(&e, None, Timings::Production, &[]);
    assert_eq!(finished(&e, &id).await.0, "completed");
    let c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    wait_for(T, "the escalation", || {
        let (mut c, k) = (c.clone(), esc.job("escalation:cf1"));
        async move {
            let data: Option<String> = c.hget(&k, "data").await.unwrap();
            data.filter(|d| d.contains(r#""kind":"undelivered""#))
        }
    })
    .await;
    // the status callback (failed) and the poll come and go: still one escalation, one message
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(escalation_ids(&e).await, ["escalation:cf1"]);
    assert_eq!(texts(&e, "cf1"), 1);
    drop(worker);
}

/// The runIds the legacy worker texts, ringback texts too, each once: a number (keyed as
/// JavaScript's `String(n)`, as the legacy worker keys it), a long one, spaces and non-ASCII,
/// colons, a quote and a backslash. A runId the legacy worker would merge (`true`) is escalated.
#[tokio::test]
async fn every_runid_the_legacy_worker_texts_is_texted_once() {
    let e = env("runids", "").await;
    let w = start_worker(&e, sms_config()).await;
    let long = "r".repeat(186);
    let ids = [
        ("42", "42".to_string()),
        (&*format!("\"{long}\""), long.clone()),
        ("\"run 7 — ünïcode\"", "run 7 — ünïcode".to_string()),
        ("\"a:b:c\"", "a:b:c".to_string()),
        (r#""q\"b\\s""#, "q\"b\\s".to_string()),
    ];
    let mut jobs = vec![];
    for (i, (json, key)) in ids.iter().enumerate() {
        let data = format!(r#"{{"runId":{json},"to":"{TO}","body":"runid case {i}"}}"#);
        jobs.push((add(&e, &data).await, key.clone(), i));
    }
    for (id, key, i) in &jobs {
        let (state, h) = finished(&e, id).await;
        assert_eq!(state, "completed", "{key}: {h:?}");
        let body = format!("runid case {i}");
        let sent = e
            .sim
            .store
            .list(|m| m.body.as_deref() == Some(body.as_str()));
        assert_eq!(sent.len(), 1, "{key}");
        let mut c = e.redis.conn().await;
        let claim: String = c
            .get(WindowKeys::new("agent-callback:", key).claim)
            .await
            .unwrap();
        assert!(
            claim.starts_with("sent:"),
            "keyed as the legacy worker keys {key}: {claim}"
        );
    }
    let merged = add(&e, &format!(r#"{{"runId":true,"to":"{TO}","body":"x"}}"#)).await;
    assert_eq!(finished(&e, &merged).await.0, "failed");
    assert!(
        escalation_ids(&e)
            .await
            .contains(&format!("escalation:job:{merged}"))
    );
    w.stop().await;
}

/// A job of a name that is not a callback's (`RINGBACK_CALLBACK_JOB_NAMES`) is never texted,
/// failed or retried by ringback: it goes back to delayed for a few seconds with its attempts
/// untouched, for the worker that handles it; each configured name is texted.
#[tokio::test]
async fn jobs_of_other_names_are_left_for_the_worker_that_handles_them() {
    let e = env("names", "").await;
    let sms = SmsConfig {
        callback_job_names: vec!["agent-callback".into(), "agent-callback-v2".into()],
        ..sms_config()
    };
    let w = start_worker(&e, sms).await;
    let mut c = e.redis.conn().await;
    let named = |name: &'static str, run: &str| {
        let data = data(run);
        let (mut c, keys) = (c.clone(), e.keys.clone());
        async move {
            let add = common::Add {
                data: &data,
                opts: r#"{"attempts":3,"backoff":{"type":"fixed","delay":100}}"#,
                name,
                ..Default::default()
            };
            common::add_job(&mut c, &keys, add).await
        }
    };
    let digest = named("weekly-digest", "n1").await;
    let v2 = named("agent-callback-v2", "n2").await;
    let plain = named("agent-callback", "n3").await;
    for (id, run) in [(&v2, "n2"), (&plain, "n3")] {
        assert_eq!(finished(&e, id).await.0, "completed", "{run}");
        assert_eq!(texts_to(&e, run), 1, "{run}: one text");
    }
    // the other job: back in delayed, never failed, its attempts untouched, never claimed
    let stats = w.stats.clone();
    wait_for(T, "the other job to be declined", || {
        let stats = stats.clone();
        async move { (stats.get(SmsEvent::OtherJob) >= 1).then_some(()) }
    })
    .await;
    // the gauge RingbackOtherJobsWaiting reads: the waiting job's age, growing while it waits
    let waited = wait_for(T, "the other job's wait to pass 1.5 s", || {
        let stats = stats.clone();
        async move { Some(stats.oldest_other_job_ms()).filter(|&ms| ms >= 1500) }
    })
    .await;
    assert!(waited < 60_000, "{waited} ms: the job's own age");
    let delayed: Option<f64> = c.zscore(e.keys.delayed(), &digest).await.unwrap();
    let h: std::collections::HashMap<String, String> =
        c.hgetall(e.keys.job(&digest)).await.unwrap();
    assert!(delayed.is_some(), "{h:?}");
    assert_eq!(
        h.get("atm").map(String::as_str).unwrap_or("0"),
        "0",
        "{h:?}"
    );
    assert!(!h.contains_key("failedReason"), "{h:?}");
    let claim: Option<String> = c
        .get(WindowKeys::new("agent-callback:", "n1").claim)
        .await
        .unwrap();
    assert_eq!(claim, None, "never claimed");
    assert_eq!(texts_to(&e, "n1"), 0, "never texted");
    w.stop().await;

    // the worker that handles the name takes it when its delay is over, as it was added
    let taken = Arc::new(std::sync::Mutex::new(Vec::<(String, String)>::new()));
    struct Digests(Arc<std::sync::Mutex<Vec<(String, String)>>>);
    impl ringback::Processor for Digests {
        async fn process(
            &self,
            job: &ringback::Job,
            _ctx: &ringback::JobContext,
        ) -> ringback::Outcome {
            if let Ok(mut t) = self.0.lock() {
                t.push((job.name.clone(), job.data.clone()));
            }
            ringback::Outcome::Completed(serde_json::json!("digest sent"))
        }
    }
    let worker = Worker::new(worker_config(&e), Digests(taken.clone())).unwrap();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    assert_eq!(finished(&e, &digest).await.0, "completed");
    assert_eq!(
        taken.lock().unwrap().as_slice(),
        &[("weekly-digest".to_string(), data("n1"))]
    );
    cancel.cancel();
    let _ = handle.await;
}

/// A long runId travels as its short key: the StatusCallback URL carries `runKey`, and a
/// receipt for a send whose answer was lost names the run through it (so the send is proven,
/// not escalated as unknown). A long run's fallback text is a run of its own with a short id,
/// texted like any other.
#[tokio::test]
async fn a_long_runid_is_named_by_its_short_key_in_receipts_and_fallbacks() {
    let e = env(
        "long-key",
        r#"{"create":[{"fault":"create_then_drop","times":1},
                      {"fault":"permanent","code":21610,"times":1,"message":"Attempt to send to unsubscribed recipient"}]}"#,
    )
    .await;
    let mut sms = SmsConfig {
        fallback_to: Some("+15550009999".into()),
        ..sms_config()
    };
    serve_receipts(&e, &mut sms).await;
    let w = start_worker(&e, sms).await;
    let run = format!("run-{}", "ü".repeat(500));
    let id = add(&e, &data(&run)).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed", "{h:?}");
    assert_eq!(returnvalue(&h)["reconciled"], true, "proven by its receipt");
    assert_eq!(texts(&e, &run), 1);
    let sid = &sent_sids(&e, &run)[0];
    let url = e.sim.store.status_callback_of(sid).unwrap();
    let key = ringback::callbacks::callback::short_key(&run).unwrap();
    assert!(
        url.contains(&format!("runKey={key}&")) && !url.contains("runId="),
        "{url}"
    );
    assert!(
        escalation_ids(&e).await.is_empty(),
        "nobody told of a proven send"
    );

    // refused for the message (opted out): escalated, and the fallback goes out as `<key>:escalation`
    let refused = format!("gone-{}", "x".repeat(500));
    let id = add(&e, &data(&refused)).await;
    assert_eq!(finished(&e, &id).await.0, "failed");
    let fallback = format!(
        "{}:escalation",
        ringback::callbacks::callback::short_key(&refused).unwrap()
    );
    let mut c = e.redis.conn().await;
    let claim = WindowKeys::new("agent-callback:", &fallback).claim;
    wait_for(T, "the fallback text to be sent", || {
        let (mut c, claim) = (c.clone(), claim.clone());
        async move {
            let v: Option<String> = c.get(&claim).await.ok().flatten();
            v.filter(|v| v.starts_with("sent:"))
        }
    })
    .await;
    let to_fallback = e
        .sim
        .store
        .list(|m| m.to.as_deref() == Some("+15550009999"));
    assert_eq!(to_fallback.len(), 1);
    assert!(
        to_fallback[0]
            .body
            .as_deref()
            .unwrap_or("")
            .contains(&refused[..40]),
        "the fallback names the run"
    );
    let _: () = c.del(&claim).await.unwrap();
    w.stop().await;
}

/// Every sender and recipient form Twilio takes in a job's data is texted: a WhatsApp
/// recipient with a WhatsApp sender, a Messaging Service named in the job's `from` (sent as
/// `MessagingServiceSid`), a short code.
#[tokio::test]
async fn every_address_form_in_job_data_is_texted_once() {
    let e = env("forms", "").await;
    let w = start_worker(&e, sms_config()).await;
    let service = "MG0123456789abcdef0123456789abcdef";
    let cases = [
        ("wa", "whatsapp:+15558675310", "whatsapp:+15005550006"),
        ("mg", TO, service),
        ("sc", TO, "12345"),
    ];
    for (run, to, from) in cases {
        let data = serde_json::json!({"runId": run, "to": to, "body": body(run), "from": from});
        let id = add(&e, &data.to_string()).await;
        let (state, h) = finished(&e, &id).await;
        assert_eq!(state, "completed", "{run}: {h:?}");
        let sent = e
            .sim
            .store
            .list(|m| m.body.as_deref() == Some(body(run).as_str()));
        assert_eq!(sent.len(), 1, "{run}");
        assert_eq!(sent[0].to.as_deref(), Some(to), "{run}");
        if from == service {
            assert_eq!(sent[0].messaging_service_sid.as_deref(), Some(service));
        } else {
            assert_eq!(sent[0].from.as_deref(), Some(from), "{run}");
        }
    }
    w.stop().await;
}

/// A numeric runId is keyed exactly as the legacy Node worker keys it: `String(n)` of the
/// double `JSON.parse` makes of it, asked of the real Node for numbers up to and beyond 2^53
/// (a Python producer writes such integers exactly; JavaScript rounds them), so both fleets
/// claim one run under one key.
#[test]
fn numeric_runids_are_keyed_as_node_keys_them() {
    let numbers = [
        "42",
        "-7",
        "1.5",
        "0.1",
        "9007199254740991",
        "9007199254740993",
        "123456789012345678",
        "18446744073709551615",
        "12345678901234567890123",
        "1e21",
        "1.5e-7",
        "-0",
    ];
    let script = format!(
        "for (const t of {}) console.log(String(JSON.parse(`{{\"runId\":${{t}}}}`).runId));",
        serde_json::to_string(&numbers).unwrap()
    );
    let out = std::process::Command::new("node")
        .args(["-e", &script])
        .output()
        .expect("node runs (the test suite installs it)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let node: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    for (text, want) in numbers.iter().zip(&node) {
        let data = format!(r#"{{"runId":{text},"to":"+15558675310","body":"x"}}"#);
        let got = ringback::callbacks::callback::CallbackRequest::parse(&data)
            .unwrap()
            .run_id;
        assert_eq!(
            &got, want,
            "runId {text}: ringback keys {got}, Node keys {want}"
        );
    }
}

/// An idle worker at the default concurrency (1) keeps its safety net. Its fetch loop holds
/// the one permit while it waits for a job (BZPOPMIN, the default 5 s drain delay, again and
/// again); the sweep must not wait for that permit, nor the heartbeat for the sweep. An attempt
/// orphaned by a dead worker (its job gone: a legacy worker completed it on seeing the claim)
/// is texted by the idle worker's sweep, and its heartbeat keeps beating meanwhile.
#[tokio::test]
async fn an_idle_worker_at_concurrency_one_sweeps_and_keeps_beating() {
    let e = env("idle-sweep", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = window(&e, conn.clone(), 200);
    let body = "Run idle-1 finished: 2 approvals needed";
    let claim = w
        .claim("idle-1", "tok-1", None, "gone", "w", TO, "", body)
        .await
        .unwrap();
    assert!(matches!(
        claim,
        ringback::callbacks::window::Claim::Claimed { .. }
    ));
    let processor = processor(&e, conn, sms_config());
    let config = ringback::WorkerConfig {
        concurrency: 1,
        drain_delay: Duration::from_secs(5),
        ..worker_config(&e)
    };
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(ringback::edge::run::worker(
        config,
        processor.clone(),
        cancel.clone(),
        None,
        Some(processor.clone()),
    ));
    let mut c = e.redis.conn().await;
    let workers = ringback::store::keys::ringback_workers("agent-callback:");
    let beat = |c: redis::aio::MultiplexedConnection| {
        let workers = workers.clone();
        async move {
            let mut c = c;
            let beats: Vec<(String, f64)> = c.zrange_withscores(&workers, 0, -1).await.unwrap();
            beats.first().map(|(_, at)| *at)
        }
    };
    let first = wait_for(T, "the idle worker's first heartbeat", || beat(c.clone())).await;
    wait_for(T, "the idle worker's sweep to text the orphan", || {
        let e = &e;
        async move { (texts(e, "idle-1") == 1).then_some(()) }
    })
    .await;
    // the heartbeat moves on while the worker is idle
    wait_for(T, "a later heartbeat", || {
        let c = c.clone();
        async move { beat(c).await.filter(|at| *at > first) }
    })
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(texts(&e, "idle-1"), 1, "texted once");
    let claim: String = c
        .get(WindowKeys::new("agent-callback:", "idle-1").claim)
        .await
        .unwrap();
    assert!(claim.starts_with("sent:SM"), "{claim}");
    cancel.cancel();
    let _ = handle.await;
}

/// Two runs whose numeric runIds round to one double share one claim key (JavaScript's, which
/// the legacy worker uses): 123456789012345677 and 123456789012345679 both key `…680`. The first
/// is texted; the second is not the same run, so it is escalated `invalid` naming both and its
/// job fails, never completed as a duplicate in silence. The first run added again (the same
/// digits) is a duplicate: completed, not escalated.
#[tokio::test]
async fn two_runs_beyond_two_to_the_53_on_one_key_are_never_a_silent_duplicate() {
    let e = env("shared-key", "").await;
    let job = |digits: &str| {
        format!(
            r#"{{"runId":{digits},"to":"{TO}","body":"Run n{digits} finished: 2 approvals needed"}}"#
        )
    };
    let first = add(&e, &job("123456789012345677")).await;
    let w = start_worker(&e, sms_config()).await;
    let (state, _) = finished(&e, &first).await;
    assert_eq!(state, "completed");
    let again = add(&e, &job("123456789012345677")).await;
    let other = add(&e, &job("123456789012345679")).await;
    let (state, h) = finished(&e, &again).await;
    assert_eq!(state, "completed", "{h:?}");
    let (state, h) = finished(&e, &other).await;
    assert_eq!(state, "failed", "{h:?}");
    let reason = h.get("failedReason").cloned().unwrap_or_default();
    assert!(
        reason.contains("123456789012345679")
            && reason.contains("123456789012345677")
            && reason.contains("123456789012345680"),
        "{reason}"
    );
    assert_eq!(texts(&e, "n123456789012345677"), 1);
    assert_eq!(texts(&e, "n123456789012345679"), 0);
    assert_eq!(
        escalation_ids(&e).await,
        [format!("escalation:job:{other}")]
    );
    w.stop().await;
}

/// The same two runs when the stall limit failed the second's job before any worker ran it:
/// the sweep adopts that job and texts it under the shared key, and keeps its digits as the
/// key's, so the first run, added after, is escalated naming both, never completed as a
/// duplicate of a text that was not its own.
#[tokio::test]
async fn a_run_adopted_from_the_stall_limit_keeps_its_digits_on_a_shared_key() {
    let e = env("shared-key-adopted", "").await;
    let job = |digits: &str| {
        format!(
            r#"{{"runId":{digits},"to":"{TO}","body":"Run n{digits} finished: 2 approvals needed"}}"#
        )
    };
    let mut c = e.redis.conn().await;
    let stalled = "stalled-679";
    let _: () = redis::cmd("HSET")
        .arg(e.keys.job(stalled))
        .arg("name")
        .arg("agent-callback")
        .arg("data")
        .arg(job("123456789012345679"))
        .arg("failedReason")
        .arg(ringback::callbacks::orphans::STALLED_LIMIT_REASON)
        .query_async(&mut c)
        .await
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let _: () = c.zadd(e.keys.failed(), stalled, now).await.unwrap();
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = run_worker(&e, processor(&e, conn, sms_config()), 1);
    wait_for(T, "the adopted run texted by the sweep", || {
        let n = texts(&e, "n123456789012345679");
        async move { (n == 1).then_some(()) }
    })
    .await;
    let first = add(&e, &job("123456789012345677")).await;
    let (state, h) = finished(&e, &first).await;
    assert_eq!(
        state, "failed",
        "completed as a duplicate of another run's text: {h:?}"
    );
    let reason = h.get("failedReason").cloned().unwrap_or_default();
    assert!(
        reason.contains("123456789012345679") && reason.contains("123456789012345677"),
        "{reason}"
    );
    assert_eq!(texts(&e, "n123456789012345677"), 0);
    w.stop().await;
}

/// An invalid job the fused finish claimed (its shape passes the finish's check, its
/// `timeZone` does not exist) is escalated invalid and never texted: its claim is closed with
/// the job, not handed back for the orphan sweep to send.
#[tokio::test]
async fn an_invalid_job_claimed_by_the_fused_finish_is_never_texted_by_the_sweep() {
    let e = env("fused-invalid", "").await;
    let ok = add(&e, &data("fi-ok")).await;
    let bad = serde_json::json!({
        "runId": "fi-bad", "to": TO, "body": body("fi-bad"), "timeZone": "Mars/Olympus",
    });
    let bad = add(&e, &bad.to_string()).await;
    // concurrency 1: the first job's finish fetches the second and claims its run
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = run_worker(&e, processor(&e, conn, sms_config()), 1);
    assert_eq!(finished(&e, &ok).await.0, "completed");
    let (state, h) = finished(&e, &bad).await;
    assert_eq!(state, "failed", "{h:?}");
    // several sweep intervals and retry delays later
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(texts(&e, "fi-bad"), 0, "the invalid job was texted");
    let mut c = e.redis.conn().await;
    let rec: std::collections::HashMap<String, String> = c
        .hgetall(WindowKeys::new("agent-callback:", "fi-bad").attempt)
        .await
        .unwrap();
    assert!(
        rec.is_empty() || rec.get("state").map(String::as_str) == Some("send-failed"),
        "{rec:?}"
    );
    w.stop().await;
}

/// A run beyond 2^53 escalated is named by its key, as the legacy worker keys it, and carries
/// its exact digits (`exactRunId`), so a person finds the job: 123456789012345677 keys `…680`.
#[tokio::test]
async fn an_escalation_of_a_run_beyond_two_to_the_53_carries_its_exact_digits() {
    let e = env(
        "exact-escalation",
        r#"{"create":[{"fault":"permanent","code":21610,"message":"Attempt to send to unsubscribed recipient"}]}"#,
    )
    .await;
    let data = format!(
        r#"{{"runId":123456789012345677,"to":"{TO}","body":"Run n123456789012345677 finished"}}"#
    );
    let id = add(&e, &data).await;
    let w = start_worker(&e, sms_config()).await;
    assert_eq!(finished(&e, &id).await.0, "failed");
    let mut c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let job: String = c
        .hget(esc.job("escalation:123456789012345680"), "data")
        .await
        .unwrap();
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    assert_eq!(job["runId"], "123456789012345680", "{job}");
    assert_eq!(job["exactRunId"], "123456789012345677", "{job}");
    w.stop().await;
}
