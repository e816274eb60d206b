//! Replies: questions texted by the worker through the simulator, the human's answers posted
//! to `serve`'s signed inbound webhook (in any order, repeated, forged), matched by code or by
//! the one open question, each landing once in the replies queue; the ambiguous one asked back
//! once through the window; a crash of `serve` between recording a message and enqueuing it;
//! opt-outs as Twilio reports them; quiet hours.

use crate::common;

use common::callbacks::*;
use common::wait_for;
use redis::AsyncCommands;
use ringback::store::keys::QueueKeys;
use ringback::twilio::signature;
use std::time::Duration;

const OUR_NUMBER: &str = "+15005550006";

fn sid(n: u32) -> String {
    format!("SM{n:032x}")
}

/// A signed inbound message, as Twilio posts it.
async fn post_inbound(url: &str, params: &[(&str, &str)], token: &str) -> (u16, String, String) {
    let owned: Vec<(String, String)> = params
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let sig = signature::sign(token, url, &owned);
    let resp = reqwest::Client::new()
        .post(url)
        .header("X-Twilio-Signature", sig)
        .form(&owned)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let ctype = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (status, ctype, resp.text().await.unwrap())
}

fn reply(from: &str, sid: &str, body: &str) -> Vec<(&'static str, String)> {
    vec![
        ("MessageSid", sid.to_string()),
        ("SmsMessageSid", sid.to_string()),
        ("AccountSid", ACCOUNT.to_string()),
        ("From", from.to_string()),
        ("To", OUR_NUMBER.to_string()),
        ("Body", body.to_string()),
        ("NumMedia", "0".to_string()),
    ]
}

async fn post(url: &str, params: &[(&'static str, String)]) -> (u16, String, String) {
    let p: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
    post_inbound(url, &p, TOKEN).await
}

fn replies_keys(e: &Env) -> QueueKeys {
    QueueKeys::new("bull", &format!("{}-replies", e.queue))
}

/// Every replies-queue job's data, by job id.
async fn reply_jobs(e: &Env) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut c = e.redis.conn().await;
    let k = replies_keys(e);
    let ids: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
    let mut out = std::collections::BTreeMap::new();
    for id in ids {
        let data: String = c.hget(k.job(&id), "data").await.unwrap();
        out.insert(id, serde_json::from_str(&data).unwrap());
    }
    out
}

fn texts_to(e: &Env, to: &str) -> Vec<String> {
    e.sim
        .store
        .all()
        .into_iter()
        .filter(|m| m.to.as_deref() == Some(to))
        .map(|m| m.body.unwrap_or_default())
        .collect()
}

/// `serve`'s inbound webhook, beside the status callback URL the environment gives.
fn inbound_url(e: &Env) -> String {
    e.status_callback
        .get()
        .unwrap()
        .replace("/webhook/status", "/webhook/inbound")
}

/// `serve` with its receipts and inbound webhook, and one worker, at the suite's settings: the
/// inbound URL and the running worker.
async fn serve_and_work(e: &Env) -> (String, Running) {
    serve_receipts(e, &mut sms_config()).await;
    (inbound_url(e), start_worker(e, sms_config()).await)
}

/// The replies as the worker and `serve` of the environment see them.
async fn replies_of(e: &Env) -> ringback::callbacks::replies::Replies {
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    sms_config().replies(conn, "bull", &e.queue)
}

/// A stranger's message (it answers no question), arrived at `at`.
fn stranger(sid: &str, at: i64) -> ringback::callbacks::replies::Inbound {
    ringback::callbacks::replies::Inbound {
        message_sid: sid.into(),
        from: "+15550798888".into(),
        to: OUR_NUMBER.into(),
        text: "who is this?".into(),
        media: vec![],
        messaging_service_sid: None,
        opt_out_type: None,
        received_at: at,
        form: vec![("MessageSid".into(), sid.into())],
    }
}

/// A handler of `replies` receiving `m`, paused right before it records it; once `go` is sent it
/// records it and stops there (its task ends in a panic, as `serve` stopping would end it).
/// Returns when the handler is paused.
async fn receive_paused(
    replies: &ringback::callbacks::replies::Replies,
    m: ringback::callbacks::replies::Inbound,
) -> (
    tokio::task::JoinHandle<Result<ringback::callbacks::replies::Received, ringback::error::Error>>,
    std::sync::mpsc::Sender<()>,
) {
    use std::sync::{Arc, Mutex, mpsc};
    let (paused_tx, paused) = mpsc::channel::<()>();
    let (go, go_rx) = mpsc::channel::<()>();
    let (paused_tx, go_rx) = (Mutex::new(paused_tx), Mutex::new(go_rx));
    let replies = replies
        .clone()
        .with_hook_before_record(Arc::new(move || {
            paused_tx.lock().unwrap().send(()).unwrap();
            go_rx.lock().unwrap().recv().unwrap();
        }))
        .with_crash_after_record(Arc::new(|| panic!("serve stopped after the record")));
    let handler = tokio::spawn(async move { replies.receive(m).await });
    tokio::task::spawn_blocking(move || paused.recv().unwrap())
        .await
        .unwrap();
    (handler, go)
}

/// The reply code a question's text ends with.
fn shown_code(body: &str) -> String {
    body.rsplit("Start your reply with ")
        .next()
        .unwrap()
        .trim_end_matches(".)")
        .to_string()
}

async fn question(e: &Env, run: &str, to: &str, body: &str) {
    let data = serde_json::json!({"runId": run, "to": to, "body": body, "expectReply": true, "replyWithin": "1h"});
    let id = add(e, &data.to_string()).await;
    let (state, _) = finished(e, &id).await;
    assert_eq!(state, "completed", "{run}");
}

#[tokio::test]
async fn questions_answers_and_the_replies_queue() {
    let e = env("replies", "").await;
    let (inbound, w) = serve_and_work(&e).await;

    // one open question: its text carries no code
    question(&e, "q1", TO, "Approve the rollback of api-7?").await;
    assert_eq!(texts_to(&e, TO), ["Approve the rollback of api-7?"]);
    // a second one to the same person: its text names its code, counted in the body
    question(&e, "q2", TO, "Deploy web-3 to production?").await;
    let sent = texts_to(&e, TO);
    let second = sent.iter().find(|b| b.starts_with("Deploy")).unwrap();
    let code = shown_code(second);
    assert!(
        second.ends_with(&format!("\n\n(Start your reply with {code}.)")),
        "{second:?}"
    );

    // forged: refused, nothing recorded
    let forged = post_inbound(
        &inbound,
        &[("MessageSid", &sid(9)), ("From", TO), ("Body", "yes")],
        "wrong-token",
    )
    .await;
    assert_eq!(forged.0, 403);

    // a reply without a code while two are open: ambiguous, asked back once, whatever the
    // retries; the message still lands once in the replies queue
    let yes = reply(TO, &sid(1), "yes");
    for _ in 0..3 {
        let (status, ctype, body) = post(&inbound, &yes).await;
        assert_eq!((status, ctype.as_str()), (200, "text/xml"));
        assert!(body.ends_with("<Response/>"), "{body}");
    }
    let which = format!("reply:{}", sid(1));
    let (state, _) = finished(&e, &which).await;
    assert_eq!(state, "completed");
    let asked: Vec<String> = texts_to(&e, TO)
        .into_iter()
        .filter(|b| b.starts_with("Your reply could answer 2 questions"))
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(asked[0].contains(&code), "{asked:?}");

    // the answer with the code: the second question
    post(
        &inbound,
        &reply(
            TO,
            &sid(2),
            &format!("{} yes, ship it", code.to_lowercase()),
        ),
    )
    .await;
    // words without a code right after it: about the first question, the only one left, or
    // more about the second? asked back, never guessed
    post(&inbound, &reply(TO, &sid(3), "no, keep it")).await;
    let mut c = e.redis.conn().await;
    let q1: String = c
        .get(ringback::store::keys::question("agent-callback:", "q1"))
        .await
        .unwrap();
    let q1_code = serde_json::from_str::<serde_json::Value>(&q1).unwrap()["code"]
        .as_str()
        .unwrap()
        .to_string();
    post(
        &inbound,
        &reply(TO, &sid(7), &format!("{q1_code} no, keep it")),
    )
    .await;
    // nothing is open any more: kept as unmatched
    post(&inbound, &reply(TO, &sid(4), "thanks")).await;
    // Twilio's retries, out of order, decide nothing anew
    post(&inbound, &reply(TO, &sid(3), "no, keep it")).await;
    post(
        &inbound,
        &reply(TO, &sid(2), &format!("{code} yes, ship it")),
    )
    .await;

    let jobs = reply_jobs(&e).await;
    assert_eq!(jobs.len(), 5, "{jobs:#?}");
    assert_eq!(jobs[&sid(1)]["matched"], "ambiguous");
    assert_eq!(jobs[&sid(1)]["runId"], serde_json::Value::Null);
    assert_eq!(jobs[&sid(2)]["runId"], "q2");
    assert_eq!(jobs[&sid(2)]["text"], "yes, ship it");
    assert_eq!(jobs[&sid(2)]["from"], TO);
    assert_eq!(jobs[&sid(2)]["messageSid"], sid(2));
    assert_eq!(jobs[&sid(3)]["matched"], "ambiguous");
    assert_eq!(jobs[&sid(7)]["runId"], "q1");
    assert_eq!(jobs[&sid(7)]["text"], "no, keep it");
    assert_eq!(jobs[&sid(4)]["matched"], "unmatched");
    let name: String = c.hget(replies_keys(&e).job(&sid(2)), "name").await.unwrap();
    assert_eq!(name, "agent-reply");

    // the API's record of the run: the question and its answer, the sender masked
    let api = e
        .status_callback
        .get()
        .unwrap()
        .replace("/api/notify/webhook/status", "");
    let rec: serde_json::Value = reqwest::Client::new()
        .get(format!("{api}/api/notify/callbacks/q2"))
        .bearer_auth("api-token-0123456789")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(rec["question"]["code"], code.as_str());
    assert_eq!(rec["question"]["answeredBy"], sid(2));
    assert_eq!(rec["replies"][0]["text"], "yes, ship it");
    assert_eq!(rec["replies"][0]["from"], "********5310");
    assert_eq!(rec["replies"][0]["jobId"], sid(2));

    // a consumed and removed job is not added again by a late retry
    let k = replies_keys(&e);
    let _: () = c.del(k.job(&sid(2))).await.unwrap();
    let _: () = c.lrem(k.wait(), 0, sid(2)).await.unwrap();
    post(
        &inbound,
        &reply(TO, &sid(2), &format!("{code} yes, ship it")),
    )
    .await;
    assert!(!reply_jobs(&e).await.contains_key(&sid(2)));

    // a change of mind naming an answered question's code reaches that run, as a late reply,
    // never as the answer to another question
    question(&e, "q3", TO, "Scale down the batch pool?").await;
    post(
        &inbound,
        &reply(TO, &sid(5), &format!("{code} no wait, keep it")),
    )
    .await;
    let late = &reply_jobs(&e).await[&sid(5)];
    assert_eq!(
        (
            late["runId"].as_str(),
            late["matched"].as_str(),
            late["text"].as_str()
        ),
        (Some("q2"), Some("late"), Some("no wait, keep it"))
    );
    // (with its code: q1 and q2 were answered minutes ago, so words without one are asked back)
    let q3: String = c
        .get(ringback::store::keys::question("agent-callback:", "q3"))
        .await
        .unwrap();
    let q3_code = serde_json::from_str::<serde_json::Value>(&q3).unwrap()["code"]
        .as_str()
        .unwrap()
        .to_string();
    post(&inbound, &reply(TO, &sid(6), &format!("{q3_code} yes"))).await;
    let answer = &reply_jobs(&e).await[&sid(6)];
    assert_eq!(
        (answer["runId"].as_str(), answer["matched"].as_str()),
        (Some("q3"), Some("answer")),
        "q3 was still open"
    );
    // `ringback status` shows the question, who answered it, and each reply
    let out = ringback_command(&e, "status", Timings::Production)
        .arg("q2")
        .stdout(std::process::Stdio::piped())
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    let question_line = format!("question   code {code} (shown), answered by {}", sid(2));
    assert!(shown.contains(&question_line), "{shown}");
    for (n, matched, text) in [
        (2, "answer", "yes, ship it"),
        (5, "late", "no wait, keep it"),
    ] {
        let line = shown
            .lines()
            .find(|l| l.starts_with("reply ") && l.contains(&sid(n)))
            .unwrap_or_default();
        assert!(
            line.contains("********5310")
                && line.contains(matched)
                && line.ends_with(&format!("{text:?}")),
            "{shown}"
        );
    }
    w.stop().await;
}

#[tokio::test]
async fn media_replies_are_kept_as_links() {
    let e = env("replies-media", "").await;
    let (inbound, w) = serve_and_work(&e).await;
    question(&e, "m1", TO, "Send a photo of the rack").await;
    let mut p = reply(TO, &sid(7), "");
    p.retain(|(k, _)| *k != "NumMedia");
    p.push(("NumMedia", "2".into()));
    p.push((
        "MediaUrl0",
        "https://api.twilio.com/2010-04-01/Accounts/AC/Messages/MM/Media/ME1".into(),
    ));
    p.push(("MediaContentType0", "image/jpeg".into()));
    p.push((
        "MediaUrl1",
        "https://api.twilio.com/2010-04-01/Accounts/AC/Messages/MM/Media/ME2".into(),
    ));
    p.push(("MediaContentType1", "image/png".into()));
    assert_eq!(post(&inbound, &p).await.0, 200);
    let jobs = reply_jobs(&e).await;
    let media = &jobs[&sid(7)]["media"];
    assert_eq!(jobs[&sid(7)]["runId"], "m1");
    assert_eq!(media[1]["contentType"], "image/png");
    assert!(media[0]["url"].as_str().unwrap().ends_with("/ME1"));
    w.stop().await;
}

#[tokio::test]
async fn opt_outs_are_recorded_as_twilio_reports_them() {
    let e = env(
        "replies-optout",
        r#"{"create":[{"to":"+15550001111","fault":"permanent","code":21610}]}"#,
    )
    .await;
    serve_receipts(&e, &mut sms_config()).await;
    let inbound = inbound_url(&e);
    let replies = replies_of(&e).await;

    // an inbound STOP (Advanced Opt-Out's OptOutType) is recorded, never answered
    let mut stop = reply("+15550002222", &sid(11), "STOP");
    stop.push(("OptOutType", "STOP".into()));
    let (_, _, body) = post(&inbound, &stop).await;
    assert!(body.ends_with("<Response/>"));
    let list = replies.opt_outs.list().await.unwrap();
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(
        (list[0].how.as_str(), list[0].number.as_str()),
        ("STOP", "********2222")
    );

    // and it is no reason to skip a send: Twilio accepts this one, which clears it
    let w = start_worker(&e, sms_config()).await;
    let id = add(
        &e,
        &serde_json::json!({"runId": "o1", "to": "+15550002222", "body": "Run o1 done"})
            .to_string(),
    )
    .await;
    assert_eq!(finished(&e, &id).await.0, "completed");
    assert_eq!(texts_to(&e, "+15550002222").len(), 1);
    wait_for(T, "the opt-out cleared by the send", || {
        let r = replies.clone();
        async move { r.opt_outs.list().await.unwrap().is_empty().then_some(()) }
    })
    .await;

    // Twilio refuses a number that opted out (21610): recorded, and the escalation says so
    let id = add(
        &e,
        &serde_json::json!({"runId": "o2", "to": "+15550001111", "body": "Run o2 done"})
            .to_string(),
    )
    .await;
    assert_eq!(finished(&e, &id).await.0, "failed");
    let list = replies.opt_outs.list().await.unwrap();
    assert_eq!((list.len(), list[0].how.as_str()), (1, "21610"));
    let mut c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let data: String = c.hget(esc.job("escalation:o2"), "data").await.unwrap();
    assert!(
        data.contains("opted out of texts from +15005550006"),
        "{data}"
    );

    // START clears it
    let mut start = reply("+15550001111", &sid(12), "START");
    start.push(("OptOutType", "START".into()));
    post(&inbound, &start).await;
    assert!(replies.opt_outs.list().await.unwrap().is_empty());
    w.stop().await;
}

#[tokio::test]
async fn quiet_hours_hold_what_is_not_urgent_in_delayed() {
    let e = env("replies-quiet", "").await;
    // a window around now in UTC
    let mut sms = sms_config();
    let (quiet, opens) = quiet_around_now(None);
    sms.quiet = Some(quiet);
    let w = start_worker(&e, sms).await;
    let night = add(
        &e,
        &serde_json::json!({"runId": "n1", "to": TO, "body": "Run n1 done"}).to_string(),
    )
    .await;
    let urgent = add(
        &e,
        &serde_json::json!({"runId": "n2", "to": TO, "body": "Run n2 failed", "urgent": true})
            .to_string(),
    )
    .await;
    // a zone where it is not night: sent now
    let elsewhere = add(
        &e,
        &serde_json::json!({"runId": "n3", "to": TO, "body": "Run n3 done", "timeZone": "Pacific/Kiritimati"}).to_string(),
    )
    .await;
    assert_eq!(finished(&e, &urgent).await.0, "completed");
    assert_eq!(finished(&e, &elsewhere).await.0, "completed");
    let mut c = e.redis.conn().await;
    let score: f64 = wait_for(T, "the quiet job in delayed", || {
        let (mut c, k, id) = (c.clone(), e.keys.clone(), night.clone());
        async move {
            c.zscore::<_, _, Option<f64>>(k.delayed(), id)
                .await
                .unwrap()
        }
    })
    .await;
    let due = (score as i64) >> 12;
    assert!(
        (due - opens).abs() < 2_000,
        "due {due}, window opens {opens}"
    );
    assert_eq!(
        texts_to(&e, TO).len(),
        2,
        "only the urgent one and the one in another zone"
    );
    let attempts: Option<String> = c.hget(e.keys.job(&night), "atm").await.unwrap();
    assert!(
        attempts.as_deref().is_none_or(|a| a == "0"),
        "no attempt used: {attempts:?}"
    );
    w.stop().await;
}

/// An app that accepts forwarded messages and keeps their MessageSids, and its URL.
async fn forward_app() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/sms", listener.local_addr().unwrap());
    let keep = seen.clone();
    let app = axum::Router::new().route(
        "/sms",
        axum::routing::post(move |body: String| async move {
            let params: Vec<(String, String)> = serde_urlencoded::from_str(&body).unwrap();
            let sid = params.iter().find(|(k, _)| k == "MessageSid").unwrap();
            keep.lock().unwrap().push(sid.1.clone());
            "<Response/>"
        }),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, seen)
}

/// `ringback serve` on a port of its own, forwarding what answers no question to `forward`;
/// `crash_at`: a drill's crash point.
async fn spawn_serve(e: &Env, port: u16, forward: &str, crash_at: Option<&str>) -> Proc {
    let crash: Vec<(&str, &str)> = crash_at
        .map(|p| ("RINGBACK_CRASH_AT", p))
        .into_iter()
        .collect();
    spawn_serve_with(e, port, forward, &crash).await
}

/// `ringback serve` as [`spawn_serve`] starts it, with more settings.
async fn spawn_serve_with(e: &Env, port: u16, forward: &str, more: &[(&str, &str)]) -> Proc {
    let api = format!("http://127.0.0.1:{port}");
    let mut serve = ringback_command(e, "serve", Timings::Production);
    serve
        .env("RINGBACK_LISTEN", format!("127.0.0.1:{port}"))
        .env("RINGBACK_PUBLIC_URL", &api)
        .env("RINGBACK_INBOUND_FORWARD_URL", forward)
        .env("RINGBACK_API_TOKEN", "api-token-0123456789");
    serve.envs(more.iter().copied());
    let proc = Proc(serve.spawn().expect("ringback serve"));
    let http = reqwest::Client::new();
    wait_for(T, "serve ready", || {
        let (http, url) = (http.clone(), format!("{api}/readyz"));
        async move {
            http.get(url)
                .send()
                .await
                .is_ok_and(|r| r.status().is_success())
                .then_some(())
        }
    })
    .await;
    proc
}

#[tokio::test]
async fn a_crash_of_serve_between_recording_and_enqueuing_loses_and_doubles_nothing() {
    let e = env("replies-crash", "").await;
    let port = common::free_port();
    let inbound = format!("http://127.0.0.1:{port}/api/notify/webhook/inbound");
    let (forward, forwarded) = forward_app().await;
    let mut c = e.redis.conn().await;
    // two messages, each cut short by a crash right after it was recorded
    for n in [21, 22] {
        let mut serve = spawn_serve(&e, port, &forward, Some("after-reply-recorded")).await;
        let params = reply(TO, &sid(n), "hello");
        let p: Vec<(String, String)> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let sig = signature::sign(TOKEN, &inbound, &p);
        let answer = reqwest::Client::new()
            .post(&inbound)
            .header("X-Twilio-Signature", sig)
            .form(&p)
            .send()
            .await;
        assert!(
            answer.is_err(),
            "serve answered before it aborted: {answer:?}"
        );
        let status = wait_for(T, "serve to abort", || {
            let exited = serve.0.try_wait().unwrap();
            async move { exited }
        })
        .await;
        assert!(!status.success(), "aborted on purpose: {status:?}");
        let recorded: bool = c
            .exists(format!("ringback:inbound:agent-callback:{}", sid(n)))
            .await
            .unwrap();
        assert!(recorded, "recorded before the crash");
        assert!(!reply_jobs(&e).await.contains_key(&sid(n)), "not enqueued");
    }
    // serve again: Twilio retries the first (it had no answer); nobody retries the second,
    // which serve's sweep finishes
    let _serve = spawn_serve(&e, port, &forward, None).await;
    assert_eq!(post(&inbound, &reply(TO, &sid(21), "hello")).await.0, 200);
    assert!(reply_jobs(&e).await.contains_key(&sid(21)));
    wait_for(
        Duration::from_secs(40),
        "the sweep to enqueue the second",
        || {
            let e = &e;
            async move { reply_jobs(e).await.contains_key(&sid(22)).then_some(()) }
        },
    )
    .await;
    for n in [21, 22] {
        post(&inbound, &reply(TO, &sid(n), "hello")).await;
    }
    let jobs = reply_jobs(&e).await;
    assert_eq!(jobs.len(), 2, "one job each: {jobs:#?}");
    let pending: usize = c
        .zcard("ringback:inbound-pending:agent-callback:")
        .await
        .unwrap();
    assert_eq!(pending, 0);
    // neither answered a question: each reaches the forward URL once, by the sweep (the
    // crashed requests never forwarded, and a retry of a recorded message does not)
    wait_for(Duration::from_secs(40), "the sweep to forward both", || {
        let forwarded = forwarded.clone();
        async move { (forwarded.lock().unwrap().len() >= 2).then_some(()) }
    })
    .await;
    let mut seen = forwarded.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen, [sid(21), sid(22)]);
    let scheduled: usize = c
        .zcard("ringback:inbound-forwards:agent-callback:")
        .await
        .unwrap();
    assert_eq!(scheduled, 0, "nothing left to forward");
}

#[tokio::test]
async fn questions_asked_at_once_show_distinct_codes_and_send_what_they_recorded() {
    let e = env("replies-together", "").await;
    // one at a time: each finishing call fetches the next job and, for a plain callback, claims
    // its run in the same call; a question's must be left to the processor (its code)
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let worker = ringback::Worker::new(
        ringback::WorkerConfig {
            concurrency: 1,
            ..worker_config(&e)
        },
        processor(&e, conn, sms_config()),
    )
    .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    // added together (and behind plain callbacks, so a finishing call may prepare their claims)
    let mut ids = vec![];
    for n in 0..6 {
        ids.push(add(&e, &data(&format!("plain{n}"))).await);
    }
    for n in 0..4 {
        let data = serde_json::json!({"runId": format!("t{n}"), "to": TO, "body": format!("Question {n}?"), "expectReply": true});
        ids.push(add(&e, &data.to_string()).await);
    }
    for id in &ids {
        assert_eq!(finished(&e, id).await.0, "completed", "{id}");
    }
    let mut c = e.redis.conn().await;
    let mut codes = vec![];
    let mut shown = 0;
    for n in 0..4 {
        let run = format!("t{n}");
        let q: String = c
            .get(format!("ringback:question:{{agent-callback:{run}}}"))
            .await
            .unwrap();
        let q: serde_json::Value = serde_json::from_str(&q).unwrap();
        codes.push(q["code"].as_str().unwrap().to_string());
        let sent: Vec<String> = texts_to(&e, TO)
            .into_iter()
            .filter(|b| b.starts_with(&format!("Question {n}?")))
            .collect();
        assert_eq!(sent.len(), 1, "{run}: {sent:?}");
        let recorded: String = c
            .hget(format!("ringback:attempt:{{agent-callback:{run}}}"), "body")
            .await
            .unwrap();
        assert_eq!(recorded, sent[0], "the attempt records the body sent");
        if q["shown"] == true {
            shown += 1;
            assert!(sent[0].ends_with(&format!("(Start your reply with {}.)", codes[n])));
        } else {
            assert_eq!(sent[0], format!("Question {n}?"));
        }
    }
    assert!(
        shown >= 3,
        "at most one question believes it is alone: {shown}"
    );
    let mut distinct = codes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{codes:?}");
    cancel.cancel();
    let _ = handle.await;
}

#[tokio::test]
async fn unmatched_messages_are_forwarded_signed_and_their_twiml_relayed() {
    use axum::body::Body;
    use axum::http::Request;
    use axum::response::IntoResponse;
    use ringback::edge::api::inbound::forward_due;
    use tower::ServiceExt;

    // the app that handled the number's inbound messages before: checks the signature as
    // twilio.webhook() does, and answers with TwiML
    let received = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(String, bool)>::new()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let forward = format!("http://{}/sms", listener.local_addr().unwrap());
    let (seen, url) = (received.clone(), forward.clone());
    let app = axum::Router::new().route(
        "/sms",
        axum::routing::post(
            move |headers: axum::http::HeaderMap, body: String| async move {
                let params: Vec<(String, String)> = serde_urlencoded::from_str(&body).unwrap();
                let sig = headers["X-Twilio-Signature"].to_str().unwrap();
                let valid = signature::verify(common::TWILIO_TOKEN, &url, &params, sig);
                let text = params.iter().find(|(k, _)| k == "Body").unwrap().1.clone();
                let mut seen = seen.lock().unwrap();
                // the app is down the first time this one comes
                let down = text == "are you there?" && !seen.iter().any(|(t, _)| *t == text);
                seen.push((text, valid));
                if down {
                    return axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response();
                }
                (
                    [("content-type", "text/xml")],
                    "<Response><Message>Got it</Message></Response>",
                )
                    .into_response()
            },
        ),
    );
    tokio::spawn(async move { axum::serve(listener, app).await });

    let server = common::RedisServer::start();
    let queue = common::queue_name("replies-forward");
    let state = common::api_state_with(
        &server,
        &queue,
        ringback::edge::cli::ServeConfig {
            inbound_forward: Some(forward.clone()),
            ..common::serve_config()
        },
    )
    .await;
    let router = ringback::edge::api::app(state.clone());
    let post = |params: Vec<(&'static str, String)>| {
        let router = router.clone();
        async move {
            let path = "/api/notify/webhook/inbound";
            let owned: Vec<(String, String)> = params
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect();
            let sig = signature::sign(
                common::TWILIO_TOKEN,
                &format!("{}{path}", common::PUBLIC_URL),
                &owned,
            );
            let req = Request::post(path)
                .header("content-type", "application/x-www-form-urlencoded")
                .header("X-Twilio-Signature", sig)
                .body(Body::from(serde_urlencoded::to_string(&owned).unwrap()))
                .unwrap();
            let resp = router.oneshot(req).await.unwrap();
            let bytes = axum::body::to_bytes(resp.into_body(), 1 << 16)
                .await
                .unwrap();
            String::from_utf8(bytes.to_vec()).unwrap()
        }
    };
    // no question open: forwarded, signed for the forward URL, its TwiML relayed
    let answer = post(reply(TO, &sid(31), "where is my order?")).await;
    assert_eq!(answer, "<Response><Message>Got it</Message></Response>");
    // a retry of it is not forwarded again
    let answer = post(reply(TO, &sid(31), "where is my order?")).await;
    assert!(answer.ends_with("<Response/>"), "{answer}");
    // an opt-out keyword is forwarded too, but ringback never answers it
    let mut stop = reply(TO, &sid(32), "STOP");
    stop.push(("OptOutType", "STOP".into()));
    let answer = post(stop).await;
    assert!(answer.ends_with("<Response/>"), "{answer}");
    // the app refuses one: the sweep forwards it again once it is due, and only until the
    // app accepts it
    let answer = post(reply(TO, &sid(33), "are you there?")).await;
    assert!(answer.ends_with("<Response/>"), "{answer}");
    let now = ringback::clock::now_ms();
    let in_a_while = now + 20_000;
    assert_eq!(forward_due(&state, now).await.unwrap(), 0, "not due yet");
    assert_eq!(forward_due(&state, in_a_while).await.unwrap(), 1);
    let later = in_a_while + 120_000;
    assert_eq!(
        forward_due(&state, later).await.unwrap(),
        0,
        "accepted once"
    );
    let seen = received.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("where is my order?".to_string(), true),
            ("STOP".to_string(), true),
            ("are you there?".to_string(), true),
            ("are you there?".to_string(), true),
        ]
    );
}

#[tokio::test]
async fn a_question_is_answered_once_whatever_arrives_at_the_same_moment() {
    use ringback::callbacks::replies::{Inbound, Match};
    let server = common::RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let queue = common::queue_name("replies-once");
    let replies = sms_config().replies(conn, "bull", &queue);
    // a person per round: one who just answered a question is asked back about the next
    let person = |round: u32| format!("+1555099{round:04}");
    let inbound = |sid: String, text: &str, from: String| Inbound {
        message_sid: sid,
        from,
        to: OUR_NUMBER.into(),
        text: text.into(),
        media: vec![],
        messaging_service_sid: None,
        opt_out_type: None,
        received_at: ringback::clock::now_ms(),
        form: vec![],
    };
    let ask = |run: String, to: String| {
        let replies = replies.clone();
        async move {
            let mut req = ringback::callbacks::callback::CallbackRequest {
                run_id: run,
                to,
                body: "Approve?".into(),
                expect_reply: Some(Duration::from_secs(3600)),
                ..Default::default()
            };
            replies.ask(&mut req).await.unwrap();
        }
    };
    // two messages decided at the same moment, one question open: one answer
    for round in 0..20u32 {
        ask(format!("once-{round}"), person(round)).await;
        let (a, b) = tokio::join!(
            replies.receive(inbound(sid(1000 + 2 * round), "yes", person(round))),
            replies.receive(inbound(sid(1001 + 2 * round), "wait, no", person(round))),
        );
        let answers = [a.unwrap().matched, b.unwrap().matched]
            .iter()
            .filter(|m| matches!(m, Match::Answer { .. }))
            .count();
        assert_eq!(answers, 1, "round {round}");
    }
    // a first answer recorded and cut short before it closed the question: a second message
    // does not answer it too, and the first's retry stays its answer
    ask("gap".into(), TO.to_string()).await;
    let crashing = replies
        .clone()
        .with_crash_after_record(std::sync::Arc::new(|| panic!("serve stops here")));
    let first = sid(2001);
    let cut = tokio::spawn({
        let m = inbound(first.clone(), "yes", TO.to_string());
        async move { crashing.receive(m).await }
    })
    .await;
    assert!(cut.is_err(), "the first arrival was cut short");
    let second = replies
        .receive(inbound(sid(2002), "wait, no", TO.to_string()))
        .await
        .unwrap();
    // a second answer is late: it names the question the first one answered
    assert!(
        matches!(&second.matched, Match::Late { run_id, .. } if run_id == "gap"),
        "{second:?}"
    );
    let retry = replies
        .receive(inbound(first.clone(), "yes", TO.to_string()))
        .await
        .unwrap();
    assert!(
        matches!(&retry.matched, Match::Answer { run_id, .. } if run_id == "gap"),
        "{retry:?}"
    );
    let q = replies.reads.question_of("gap").await.unwrap().unwrap();
    assert_eq!(q.answered_by.as_deref(), Some(first.as_str()));
}

/// A first post cut short before its record, and Twilio's retry arriving past the grace period:
/// the sweep running while the retry's handler is between its pending entry and its record
/// must leave the message (and its forward) alone, so a crash of that handler right after the
/// record still leaves both for a later sweep. Kept from the first post, the pending score and
/// the forward's due time would let this sweep drop the message as never recorded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_past_the_grace_period_is_not_dropped_before_its_record() {
    use ringback::callbacks::replies::PENDING_GRACE;
    let server = common::RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let queue = common::queue_name("replies-retry");
    let replies = sms_config()
        .replies(conn, "bull", &queue)
        .with_forwarding(true);
    let sid = sid(41);
    let now = ringback::clock::now_ms();
    let first_post = now - 2 * PENDING_GRACE.as_millis() as i64;
    // the first post's handler wrote its pending entry and forward schedule, then stopped
    let mut c = server.conn().await;
    let (pending_key, forwards_key) = (
        "ringback:inbound-pending:agent-callback:",
        "ringback:inbound-forwards:agent-callback:",
    );
    let _: () = c.zadd(pending_key, &sid, first_post).await.unwrap();
    let _: () = c
        .zadd(
            forwards_key,
            &sid,
            first_post + PENDING_GRACE.as_millis() as i64,
        )
        .await
        .unwrap();
    let (handler, go) = receive_paused(&replies, stranger(&sid, now)).await;
    // the sweep runs now, the retry's handler about to record
    replies.finish_pending().await.unwrap();
    let due = replies.forwards.due(now, 100).await.unwrap();
    assert!(due.is_empty(), "the retry's forward is not due yet");
    go.send(()).unwrap();
    assert!(
        handler.await.is_err(),
        "the handler stopped after the record"
    );
    let recorded: bool = c
        .exists(format!("ringback:inbound:agent-callback:{sid}"))
        .await
        .unwrap();
    assert!(recorded);
    let pending: Option<f64> = c.zscore(pending_key, &sid).await.unwrap();
    assert_eq!(
        pending,
        Some(now as f64),
        "left pending for the sweep, from the retry"
    );
    let scheduled: Option<f64> = c.zscore(forwards_key, &sid).await.unwrap();
    assert_eq!(
        scheduled,
        Some((now + PENDING_GRACE.as_millis() as i64) as f64),
        "still to forward, due after the retry's grace period"
    );
    let later = now + 2 * PENDING_GRACE.as_millis() as i64;
    let due = replies.forwards.due(later, 100).await.unwrap();
    assert_eq!(due.len(), 1, "the sweep forwards it once due");
}

#[tokio::test]
async fn a_question_sent_late_is_open_as_long_after_its_text_as_asked() {
    // Twilio answers the first create 429, retry in 3 s; the question is to stay open 2 s
    let e = env(
        "replies-sent-late",
        r#"{"create":[{"fault":"rate_limited","retry_after_s":3,"times":1}]}"#,
    )
    .await;
    let (inbound, w) = serve_and_work(&e).await;
    let data = serde_json::json!({"runId": "late1", "to": TO, "body": "Roll back api-7?",
        "expectReply": true, "replyWithin": "2s"});
    let id = add(&e, &data.to_string()).await;
    assert_eq!(finished(&e, &id).await.0, "completed");
    assert_eq!(texts_to(&e, TO), ["Roll back api-7?"]);
    // answered at once, more than 2 s after the question was first fixed, not after the text
    let (status, _, _) = post(&inbound, &reply(TO, &sid(51), "yes")).await;
    assert_eq!(status, 200);
    let jobs = reply_jobs(&e).await;
    assert_eq!(jobs[&sid(51)]["matched"], "answer", "{jobs:#?}");
    assert_eq!(jobs[&sid(51)]["runId"], "late1");
    w.stop().await;
}

/// Every reply code (a letter and one or two digits, the letters and digits that read alike
/// left out).
fn every_code() -> Vec<String> {
    let (letters, digits) = ("ACDEFHJKMNPRTUVWXY", "23456789");
    let mut all = Vec::new();
    for l in letters.chars() {
        for d in digits.chars() {
            all.push(format!("{l}{d}"));
            for d2 in digits.chars() {
                all.push(format!("{l}{d}{d2}"));
            }
        }
    }
    all
}

#[tokio::test]
async fn a_person_asked_for_ever_keeps_codes_to_spare_and_never_stalls_a_worker() {
    let e = env("replies-codes", "").await;
    let w = start_worker(&e, sms_config()).await;
    let person = keys_open_questions(TO);
    let mut c = e.redis.conn().await;
    let now = ringback::clock::now_ms();
    let codes = every_code();
    assert_eq!(codes.len(), 1_296);
    // every code taken by questions asked long ago, past their record's life (an hour here)
    let old = now - 3_600_000 - 60_000;
    for (i, code) in codes.iter().enumerate() {
        let q = serde_json::json!({"runId": format!("old{i}"), "code": code, "shown": true,
            "until": old, "excerpt": "an old question"});
        let _: () = c
            .hset(&person, format!("old{i}"), q.to_string())
            .await
            .unwrap();
    }
    question(&e, "fresh1", TO, "Deploy web-3 to production?").await;
    assert_eq!(texts_to(&e, TO), ["Deploy web-3 to production?"]);
    let left: Vec<String> = c.hkeys(&person).await.unwrap();
    assert_eq!(
        left,
        ["fresh1"],
        "the questions past their record's life are gone"
    );

    // every code taken by questions still open: the question waits (no text, no hang), then
    // goes once one of them closes
    let _: () = c.del(&person).await.unwrap();
    for (i, code) in codes.iter().enumerate() {
        let q = serde_json::json!({"runId": format!("open{i}"), "code": code, "shown": true,
            "until": now + 3_600_000, "excerpt": "an open question"});
        let _: () = c
            .hset(&person, format!("open{i}"), q.to_string())
            .await
            .unwrap();
    }
    let data = serde_json::json!({"runId": "fresh2", "to": TO, "body": "Approve the rollback?",
        "expectReply": true, "replyWithin": "1h"});
    let id = add(&e, &data.to_string()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        texts_to(&e, TO).len(),
        1,
        "not texted while no code is free"
    );
    let _: () = c.hdel(&person, "open77").await.unwrap();
    assert_eq!(finished(&e, &id).await.0, "completed");
    let sent = texts_to(&e, TO);
    assert_eq!(sent.len(), 2);
    assert!(
        sent[1].ends_with(&format!("(Start your reply with {}.)", codes[77])),
        "{sent:?}"
    );
    w.stop().await;
}

fn keys_open_questions(number: &str) -> String {
    ringback::store::keys::open_questions("agent-callback:", number)
}

#[tokio::test]
async fn a_keyword_alone_is_twilios_never_an_answer_nor_asked_back() {
    let e = env("replies-keywords", "").await;
    serve_receipts(&e, &mut sms_config()).await;
    let inbound = inbound_url(&e);
    let replies = replies_of(&e).await;
    let w = start_worker(&e, sms_config()).await;
    question(&e, "k1", TO, "Approve the rollback of api-7?").await;
    question(&e, "k2", TO, "Deploy web-3 to production?").await;

    // without Advanced Opt-Out Twilio posts no OptOutType; it opts the person out all the same
    for (n, word) in [(61, "Stop"), (62, "HELP"), (63, " unsubscribe ")] {
        let (status, _, body) = post(&inbound, &reply(TO, &sid(n), word)).await;
        assert_eq!(status, 200);
        assert!(body.ends_with("<Response/>"), "{body}");
    }
    let jobs = reply_jobs(&e).await;
    for (n, how) in [(61, "STOP"), (62, "HELP"), (63, "STOP")] {
        assert_eq!(jobs[&sid(n)]["matched"], "opt_out", "{jobs:#?}");
        assert_eq!(jobs[&sid(n)]["optOutType"], how);
        assert_eq!(jobs[&sid(n)]["runId"], serde_json::Value::Null);
    }
    let list = replies.opt_outs.list().await.unwrap();
    assert_eq!(
        (list.len(), list[0].how.as_str(), list[0].number.as_str()),
        (1, "STOP", "********5310")
    );
    // START, alone, clears it
    post(&inbound, &reply(TO, &sid(64), "start")).await;
    assert!(replies.opt_outs.list().await.unwrap().is_empty());
    // no "which one?" text for any of them, and both questions still open
    tokio::time::sleep(Duration::from_millis(500)).await;
    let bodies = texts_to(&e, TO);
    assert_eq!(bodies.len(), 2, "{bodies:?}");
    let code = shown_code(&bodies[1]);
    // "stop the deploy" is not a keyword alone: an answer like any other
    post(
        &inbound,
        &reply(TO, &sid(65), &format!("{code} stop the deploy")),
    )
    .await;
    let jobs = reply_jobs(&e).await;
    assert_eq!(jobs[&sid(65)]["matched"], "answer");
    assert_eq!(jobs[&sid(65)]["runId"], "k2");
    assert_eq!(jobs[&sid(65)]["text"], "stop the deploy");
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_on_a_clock_ahead_never_sweeps_a_message_another_replica_is_recording() {
    let e = env("replies-clock", "").await;
    // a replica of serve whose clock is a minute ahead, sweeping every 5 s
    let port = common::free_port();
    let (forward, _) = forward_app().await;
    let _serve = spawn_serve_with(&e, port, &forward, &[("RINGBACK_CLOCK_SKEW_MS", "60000")]).await;
    // the other replica, on the right clock: it stops right after recording the message
    let replies = replies_of(&e).await;
    replies.read_clock().await.unwrap();
    let mut c = e.redis.conn().await;
    let pending_key = ringback::store::keys::inbound_pending("agent-callback:");
    // a message nobody recorded, long ago: the sweep forgets it, which shows it ran
    let _: () = c.zadd(&pending_key, "SMforgotten", 0).await.unwrap();
    let sid = sid(71);
    let (handler, go) = receive_paused(&replies, stranger(&sid, replies.now())).await;
    wait_for(T, "a sweep of the replica ahead", || {
        let mut c = c.clone();
        let key = pending_key.clone();
        async move {
            let s: Option<f64> = c.zscore(&key, "SMforgotten").await.unwrap();
            s.is_none().then_some(())
        }
    })
    .await;
    go.send(()).unwrap();
    assert!(
        handler.await.is_err(),
        "the handler stopped after the record"
    );
    let pending: Option<f64> = c.zscore(&pending_key, &sid).await.unwrap();
    assert!(pending.is_some(), "still pending, for a sweep to finish");
    // and the sweep finishes it, once, 15 s after it arrived
    wait_for(
        Duration::from_secs(30),
        "the message in the replies queue",
        || {
            let e = &e;
            let sid = sid.clone();
            async move { reply_jobs(e).await.contains_key(&sid).then_some(()) }
        },
    )
    .await;
}

/// A claim on a question by an answer whose handler stopped before recording it, which Twilio
/// never posted again (no record, nothing pending), is void: the question is open, so the next
/// reply without a code, with two questions open, is asked back naming both; nothing marks the
/// question answered by the message that never was.
#[tokio::test]
async fn a_question_claimed_by_an_answer_cut_short_is_open_again_once_the_claim_is_void() {
    let e = env("replies-claimed", "").await;
    let (inbound, w) = serve_and_work(&e).await;
    question(&e, "c1", TO, "Approve the rollback of api-7?").await;
    question(&e, "c2", TO, "Deploy web-3 to production?").await;
    let mut c = e.redis.conn().await;
    let claim = ringback::store::keys::question_answered("agent-callback:", "c1");
    let _: () = c.set(&claim, sid(80)).await.unwrap();
    let (status, _, _) = post(&inbound, &reply(TO, &sid(81), "yes")).await;
    assert_eq!(status, 200);
    let jobs = reply_jobs(&e).await;
    assert_eq!(jobs[&sid(81)]["matched"], "ambiguous", "{jobs:#?}");
    let asked = wait_for(T, "the ask-back", || {
        let e = &e;
        async move {
            texts_to(e, TO)
                .into_iter()
                .find(|b| b.starts_with("Your reply could answer 2 questions"))
        }
    })
    .await;
    assert!(
        asked.contains("api-7") && asked.contains("web-3"),
        "{asked}"
    );
    let person: std::collections::HashMap<String, String> =
        c.hgetall(keys_open_questions(TO)).await.unwrap();
    let c1: serde_json::Value = serde_json::from_str(&person["c1"]).unwrap();
    assert!(c1.get("answeredBy").is_none(), "{c1}");
    w.stop().await;
}

/// Quiet hours hold on the fused finish too: a job finishing claims the next job's run in the
/// same call, whatever that job's quiet hours; handed back, that claim must not reach the
/// orphan sweep (which rebuilds the request from the attempt record alone) before they end.
/// Urgent and non-urgent callbacks added together, at the tests' compressed sweep timings.
#[tokio::test]
async fn quiet_hours_hold_what_the_fused_finish_claimed_for_the_next_job() {
    let e = env("replies-quiet-fused", "").await;
    let mut sms = sms_config();
    // the deployment's quiet hours are read in a zone where it is day now; each job's own zone
    // (UTC) is inside them: the sweep, which rebuilds a request from the attempt record alone
    // (no `urgent`, no `timeZone`), would read them in the deployment's zone and text
    let (mut quiet, opens) = quiet_around_now(None);
    let day = "Pacific/Kiritimati";
    quiet.zone = jiff::tz::TimeZone::get(day).unwrap();
    quiet.zone_name = day.into();
    sms.quiet = Some(quiet);
    let mut ids = vec![];
    for i in 0..12 {
        let urgent = i % 2 == 0;
        let data = serde_json::json!({
            "runId": format!("qf{i}"), "to": TO, "body": format!("Run qf{i} done"),
            "urgent": urgent, "timeZone": "UTC",
        });
        ids.push((urgent, add(&e, &data.to_string()).await));
    }
    // the worker with its orphan sweep, as `ringback worker` runs it
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    // at the default concurrency (1) each urgent job's finish fetches and claims the next,
    // non-urgent one
    let w = run_worker(&e, processor(&e, conn, sms), 1);
    let mut c = e.redis.conn().await;
    for (urgent, id) in &ids {
        if *urgent {
            assert_eq!(finished(&e, id).await.0, "completed");
        } else {
            wait_for(T, "the quiet job in delayed", || {
                let (mut c, k, id) = (c.clone(), e.keys.clone(), id.clone());
                async move {
                    c.zscore::<_, _, Option<f64>>(k.delayed(), id)
                        .await
                        .unwrap()
                        .map(|_| ())
                }
            })
            .await;
        }
    }
    // many sweep intervals and retry delays later: still only the urgent ones texted
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert_eq!(
        texts_to(&e, TO).len(),
        6,
        "a non-urgent callback texted inside quiet hours"
    );
    // a handed-back claim is due when the quiet hours end, not before
    let open: Vec<(String, f64)> = c
        .zrange_withscores(
            ringback::store::keys::open_attempts("agent-callback:"),
            0,
            -1,
        )
        .await
        .unwrap();
    for (run, due) in &open {
        assert!(
            (*due as i64) >= opens - 2_000,
            "{run}'s attempt is due at {due}, before the quiet hours end at {opens}"
        );
    }
    w.stop().await;
}

/// A reply arriving while Redis does not answer (a failover that drops packets, a slow fork)
/// is answered 5xx before Twilio's own timeout, so Twilio retries it (`#rp=5xx`), and the
/// retry after Redis came back records it once: never a 4xx that loses the answer for good.
#[tokio::test]
async fn a_reply_while_redis_is_frozen_is_answered_so_that_twilio_retries_it() {
    let e = env("replies-frozen", "").await;
    let (inbound, w) = serve_and_work(&e).await;
    question(&e, "fz1", TO, "Approve the rollback of api-9?").await;
    // Redis answers nobody for 13 s
    let mut admin = e.redis.conn().await;
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(13_000)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let (status, _, body) = post(&inbound, &reply(TO, &sid(77), "YES")).await;
    assert!(
        (500..600).contains(&status),
        "answered {status} after {:?}: Twilio does not retry that ({body})",
        started.elapsed()
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "before Twilio's timeout"
    );
    // Twilio's retry, once Redis answers again: recorded once
    tokio::time::sleep(Duration::from_secs(13).saturating_sub(started.elapsed())).await;
    let retried = wait_for(Duration::from_secs(20), "the retry accepted", || {
        let inbound = inbound.clone();
        async move {
            let (status, _, _) = post(&inbound, &reply(TO, &sid(77), "YES")).await;
            (status == 200).then_some(status)
        }
    })
    .await;
    assert_eq!(retried, 200);
    let jobs = wait_for(T, "the reply in the replies queue", || {
        let e = &e;
        async move {
            let jobs = reply_jobs(e).await;
            (!jobs.is_empty()).then_some(jobs)
        }
    })
    .await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    let job = jobs.values().next().unwrap();
    assert_eq!(job["runId"], "fz1", "{job}");
    w.stop().await;
}

/// The inbound sweep finishes every other message when one of them fails: a message whose
/// replies job cannot be written (here its job key holds a value of another type) is left
/// pending for the next sweep, and the messages after it are still finished.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inbound_sweep_finishes_every_other_message_when_one_fails() {
    use ringback::callbacks::replies::PENDING_GRACE;
    let server = common::RedisServer::start();
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let queue = common::queue_name("replies-sweep-one");
    let replies = sms_config().replies(conn, "bull", &queue);
    // two messages recorded, each handler stopped right after its record (a crash)
    let now = ringback::clock::now_ms();
    let (bad, good) = (sid(51), sid(52));
    for (s, at) in [
        (&bad, now - 3 * PENDING_GRACE.as_millis() as i64),
        (&good, now - 2 * PENDING_GRACE.as_millis() as i64),
    ] {
        let crashing = replies
            .clone()
            .with_crash_after_record(std::sync::Arc::new(|| {
                panic!("serve stopped after the record")
            }));
        let m = stranger(s, at);
        assert!(
            tokio::spawn(async move { crashing.receive(m).await })
                .await
                .is_err()
        );
    }
    // the first one's replies job cannot be written: its once-marker holds a value of another
    // type, so the script that adds the job fails for it alone
    let mut c = server.conn().await;
    let k = QueueKeys::new("bull", &format!("{queue}-replies"));
    let marker = ringback::store::keys::reply_enqueued(&k, &bad);
    let _: () = c.hset(&marker, "x", "not a marker").await.unwrap();
    let finished = replies.finish_pending().await;
    assert!(matches!(finished, Ok(1)), "{finished:?}");
    let good_job: bool = c.exists(k.job(&good)).await.unwrap();
    assert!(good_job, "the message after the failing one is finished");
    let pending: Option<f64> = c
        .zscore("ringback:inbound-pending:agent-callback:", &bad)
        .await
        .unwrap();
    assert!(
        pending.is_some(),
        "the failing one stays pending for the next sweep"
    );
}

/// An answer whose handler was cut between its claim on the question and its record (`serve`
/// killed, a connection dropped; Twilio does not post it again) leaves a claim nothing backs.
/// Past the grace period in which that handler could still record it, the person's next
/// message answers the question, instead of landing unmatched as if it had been answered.
#[tokio::test]
async fn a_claim_no_record_backs_is_void_after_the_grace_period() {
    let e = env("replies-void", "").await;
    let w = start_worker(&e, sms_config()).await;
    question(&e, "qv1", TO, "Approve the rollback of api-8?").await;
    let replies = replies_of(&e).await;
    replies.read_clock().await.unwrap();
    let now = replies.now();
    let answer = |sid: &str, text: &str, at: i64| ringback::callbacks::replies::Inbound {
        message_sid: sid.into(),
        from: TO.into(),
        to: OUR_NUMBER.into(),
        text: text.into(),
        media: vec![],
        messaging_service_sid: None,
        opt_out_type: None,
        received_at: at,
        form: vec![("MessageSid".into(), sid.into())],
    };
    // the first answer, 20 s ago: its handler claims the question, then is cut before the record
    let cut = replies
        .clone()
        .with_hook_before_record(std::sync::Arc::new(|| {
            panic!("serve killed before the record")
        }));
    let first = answer(&sid(41), "YES", now - 20_000);
    assert!(
        tokio::spawn(async move { cut.receive(first).await })
            .await
            .is_err(),
        "the handler was cut"
    );
    // the person's answer now
    let got = replies.receive(answer(&sid(42), "yes", now)).await.unwrap();
    assert!(
        matches!(&got.matched, ringback::callbacks::replies::Match::Answer { run_id, .. } if run_id == "qv1"),
        "{:?}",
        got.matched
    );
    w.stop().await;
}

/// A key and a `no-answer` claim a question's answer as a text does: a claim left void by a
/// text cut before its record (past the grace period) is taken over; one held by a text still
/// within it is left to settle, the key kept for the sweep, the `no-answer` asked again later;
/// a key kept and not finished holds the `no-answer` back. Never two outcomes, never none.
#[tokio::test]
async fn keys_and_no_answers_take_void_claims_and_wait_for_unsettled_ones() {
    use ringback::callbacks::replies::{Claimed, Inbound, keypad::Keypad};
    let e = env("replies-key-claims", "").await;
    let w = start_worker(&e, sms_config()).await;
    for run in ["kv1", "kv2", "kv3"] {
        question(&e, run, TO, &format!("Approve {run}?")).await;
    }
    let replies = replies_of(&e).await;
    replies.read_clock().await.unwrap();
    let now = replies.now();
    let text = |sid: &str, code: &str, at: i64| Inbound {
        message_sid: sid.into(),
        from: TO.into(),
        to: OUR_NUMBER.into(),
        text: format!("{code} yes"),
        media: vec![],
        messaging_service_sid: None,
        opt_out_type: None,
        received_at: at,
        form: vec![],
    };
    let code = |run: &'static str| {
        let r = replies.clone();
        async move { r.reads.question_of(run).await.unwrap().unwrap().code }
    };
    // a text claims, then its handler is cut before the record
    let cut = |m: Inbound| {
        let cut = replies
            .clone()
            .with_hook_before_record(std::sync::Arc::new(|| {
                panic!("serve killed before the record")
            }));
        async move {
            assert!(
                tokio::spawn(async move { cut.receive(m).await })
                    .await
                    .is_err()
            );
        }
    };
    // kv1: the text was cut 20 s ago (void): the key takes the claim over and answers
    cut(text(&sid(71), &code("kv1").await, now - 20_000)).await;
    let key = |run: &str, call: &str| Keypad {
        run_id: run.into(),
        call_sid: call.into(),
        choice: "YES".into(),
        digits: "1".into(),
        who: TO.into(),
        question: true,
    };
    let k1 = replies.keypad(&key("kv1", "CA71"), now).await.unwrap();
    assert!(k1.answered && !k1.unsettled, "{k1:?}");
    // kv2: the text was cut a moment ago (it may still be recorded): the key waits, kept
    cut(text(&sid(72), &code("kv2").await, now)).await;
    let k2 = replies.keypad(&key("kv2", "CA72"), now).await.unwrap();
    assert!(k2.unsettled && !k2.answered, "{k2:?}");
    assert!(
        !replies.no_answer("kv2", Some(TO), 0).await.unwrap(),
        "no no-answer while a key is kept"
    );
    // past the grace period (its last post aged, as time would) the sweep finishes the kept
    // key: the text's claim is void, the key answers
    let _: () = e
        .redis
        .conn()
        .await
        .zadd(
            "ringback:inbound-pending:agent-callback:",
            sid(72),
            now - 20_000,
        )
        .await
        .unwrap();
    let done = replies.finish_keypads(now + 60_000).await.unwrap();
    assert_eq!(done, 1);
    assert_eq!(
        replies
            .keypad_answer("kv2", "CA72", "YES", "1", TO)
            .await
            .unwrap(),
        Claimed::Ours,
        "the key holds the answer"
    );
    // kv3: a void text claim, then the question's time ends: the no-answer takes it over
    cut(text(&sid(73), &code("kv3").await, now - 20_000)).await;
    assert!(replies.no_answer("kv3", Some(TO), 0).await.unwrap());
    let late = replies.keypad(&key("kv3", "CA73"), now).await.unwrap();
    assert!(!late.answered && !late.unsettled, "{late:?}");
    let jobs = reply_jobs(&e).await;
    let of = |run: &str, matched: &str| {
        jobs.values()
            .filter(|j| j["runId"] == run && j["matched"] == matched)
            .count()
    };
    assert_eq!(
        [
            of("kv1", "answer"),
            of("kv2", "answer"),
            of("kv3", "answer")
        ],
        [1, 1, 0],
        "{jobs:?}"
    );
    assert_eq!(of("kv3", "late"), 1, "the key after the no-answer is late");
    assert!(jobs.contains_key("no-answer:kv3"), "{jobs:?}");
    assert!(!jobs.contains_key("no-answer:kv2"));
    w.stop().await;
}

/// A message without a code goes to the one question open to the person only when no other
/// question of theirs was answered or closed within the window: "no, wait, hold it" a minute
/// after answering one question is asked back (naming both), never given to the other run.
#[tokio::test]
async fn a_codeless_message_just_after_an_answer_is_asked_back_not_given_to_the_open_question() {
    let e = env("replies-codeless", "").await;
    let w = start_worker(&e, sms_config()).await;
    let replies = replies_of(&e).await;
    let msg = |sid: &str, text: &str, at: i64| ringback::callbacks::replies::Inbound {
        message_sid: sid.into(),
        from: TO.into(),
        to: OUR_NUMBER.into(),
        text: text.into(),
        media: vec![],
        messaging_service_sid: None,
        opt_out_type: None,
        received_at: at,
        form: vec![("MessageSid".into(), sid.into())],
    };
    use ringback::callbacks::replies::Match;
    question(&e, "qc1", TO, "Roll back api-9?").await;
    replies.read_clock().await.unwrap();
    let got = replies
        .receive(msg(&sid(51), "YES", replies.now()))
        .await
        .unwrap();
    assert!(
        matches!(&got.matched, Match::Answer { run_id, .. } if run_id == "qc1"),
        "{:?}",
        got.matched
    );
    // a second question, the only one open now; a minute later, words without a code
    question(&e, "qc2", TO, "Delete the staging database?").await;
    let got = replies
        .receive(msg(&sid(52), "no wait, hold it", replies.now() + 60_000))
        .await
        .unwrap();
    assert!(
        matches!(&got.matched, Match::Ambiguous { run_ids } if run_ids.contains(&"qc1".to_string()) && run_ids.contains(&"qc2".to_string())),
        "{:?}",
        got.matched
    );
    // past the window, words without a code answer the one open question
    let got = replies
        .receive(msg(&sid(53), "yes", replies.now() + 11 * 60_000))
        .await
        .unwrap();
    assert!(
        matches!(&got.matched, Match::Answer { run_id, .. } if run_id == "qc2"),
        "{:?}",
        got.matched
    );
    w.stop().await;
}

/// Quiet hours hold on the orphan sweep: an attempt whose worker died (its job gone) is
/// resolved from its record alone, and the record keeps what the decision needs. A callback
/// that is not urgent waits for the quiet hours' end (its attempt due then, not counted as
/// overdue by the age gauge); an urgent one and one whose own zone is outside them are texted.
#[tokio::test]
async fn an_orphan_inside_quiet_hours_waits_for_their_end_with_its_zone_and_urgency() {
    let e = env("replies-quiet-orphan", "").await;
    let (quiet, opens) = quiet_around_now(None);
    let mut sms = sms_config();
    sms.quiet = Some(quiet);
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    // three attempts claimed by a worker that died at once (claims dead after 200 ms)
    let w = window(&e, conn.clone(), 200);
    let runs = [
        ("oq-plain", false, None),
        ("oq-urgent", true, None),
        // nine hours east of the quiet window: day there
        ("oq-zone", false, Some("Asia/Tokyo")),
    ];
    for (run, urgent, zone) in runs {
        let req = ringback::callbacks::callback::CallbackRequest {
            run_id: run.into(),
            to: TO.into(),
            body: format!("Run {run} done"),
            urgent,
            time_zone: zone.map(str::to_string),
            ..Default::default()
        };
        let claim = w
            .claim_callback(&req, &format!("tok-{run}"), None, "gone", "w")
            .await
            .unwrap();
        assert!(matches!(
            claim,
            ringback::callbacks::window::Claim::Claimed { .. }
        ));
    }
    let p = processor(&e, conn, sms);
    let worker = run_worker(&e, p.clone(), worker_config(&e).concurrency);
    let sent = |run: &str| {
        e.sim
            .store
            .all()
            .into_iter()
            .filter(|m| m.body.as_deref() == Some(&format!("Run {run} done")))
            .count()
    };
    wait_for(
        T,
        "the urgent orphan and the one outside quiet hours texted",
        || {
            let n = sent("oq-urgent") + sent("oq-zone");
            async move { (n == 2).then_some(()) }
        },
    )
    .await;
    // many sweep intervals later: the one inside quiet hours is still not texted
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        (sent("oq-plain"), sent("oq-urgent"), sent("oq-zone")),
        (0, 1, 1),
        "texts of the plain, urgent and zoned orphans"
    );
    let mut c = e.redis.conn().await;
    let rec: std::collections::HashMap<String, String> = c
        .hgetall(ringback::store::keys::WindowKeys::new("agent-callback:", "oq-plain").attempt)
        .await
        .unwrap();
    assert_eq!(
        rec.get("state").map(String::as_str),
        Some("retry"),
        "{rec:?}"
    );
    assert!(
        rec.get("error")
            .is_some_and(|e| e.starts_with(ringback::callbacks::quiet::HELD_REASON)),
        "{rec:?}"
    );
    let due: f64 = c
        .zscore(
            ringback::store::keys::open_attempts("agent-callback:"),
            "oq-plain",
        )
        .await
        .unwrap();
    assert!(
        (due as i64) >= opens - 2_000,
        "due at {due}, before the quiet hours end at {opens}"
    );
    // waiting for quiet hours is on time: the age gauge does not count it
    let open = p.window().open_attempts().await.unwrap();
    assert_eq!(open.oldest_since, None, "{open:?}");
    worker.stop().await;
}

/// A message that arrives while Redis's replica does not acknowledge writes is answered 503, so
/// Twilio posts it again: a failover then could lose its record and its replies job, and a 200
/// would have told Twilio it was kept. Once the replica answers, the repeat is answered 200
/// and the replies queue has the message once.
#[tokio::test]
async fn a_message_its_replica_did_not_acknowledge_is_answered_503_then_kept_once() {
    let e = env("reply-replica", "").await;
    let (url, _w) = serve_and_work(&e).await;
    let replica = replica_of(&e).await;
    let m = reply("+15550001212", &sid(71), "are you there?");
    // serve looks at the endpoint's replicas again within a few seconds
    tokio::time::sleep(Duration::from_millis(5_500)).await;
    replica.pause();
    let (status, _, body) = post(&url, &m).await;
    assert_eq!(status, 503, "{body}");
    replica.resume();
    let (status, _, body) = post(&url, &m).await;
    assert_eq!(status, 200, "{body}");
    let jobs = reply_jobs(&e).await;
    let of_it: Vec<_> = jobs
        .values()
        .filter(|d| d["messageSid"] == sid(71).as_str())
        .collect();
    assert_eq!(of_it.len(), 1, "{jobs:?}");
}

/// With `RINGBACK_REDIS_WAIT_AOF`, an inbound message is taken (and Twilio answered 200) only
/// once it is in the append-only file on disk, as a claim is: a restart from that file must not
/// forget a message its sender was told was taken. Not on disk in time, the receive fails as a
/// transient error (Twilio hears 503 and posts it again); once the disk keeps up, the repost is
/// taken, one job for the two posts.
#[tokio::test]
async fn a_message_waits_for_the_disk_where_asked_and_is_refused_until_it_is_there() {
    let mut e = env_on(common::RedisServer::start_valkey(), "reply-aof", "").await;
    e.redis.append_only().await;
    let admin = e.redis.conn().await;
    let fsync = |policy: &'static str| {
        let mut c = admin.clone();
        async move {
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg("appendfsync")
                .arg(policy)
                .query_async(&mut c)
                .await
                .unwrap();
        }
    };
    fsync("no").await;
    let client =
        ringback::store::connection::Client::from(redis::Client::open(e.redis.url()).unwrap())
            .with_wait(ringback::store::replicas::ReplicaWait {
                aof: true,
                ..Default::default()
            });
    let conn = ringback::store::connection::commands(client).await.unwrap();
    let replies = sms_config().replies(conn, "bull", &e.queue);
    let now = replies.now();
    let refused = replies
        .receive(stranger("SM00000000000000000000000000000aof", now))
        .await
        .expect_err("not on disk: not taken");
    assert!(
        refused.is_transient() && refused.to_string().contains("on disk"),
        "{refused}"
    );
    fsync("always").await;
    replies
        .receive(stranger("SM00000000000000000000000000000aof", now))
        .await
        .expect("on disk: taken");
    let jobs = reply_jobs(&e).await;
    assert_eq!(jobs.len(), 1, "{jobs:?}");
}
