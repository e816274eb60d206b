//! The Twilio client against the simulator, for every outcome class (including the message
//! created and the connection dropped before the answer, and credentials refused for a while);
//! lookups that read every page by creation time; signed status callbacks as the simulator
//! sends them; and every request the client sends and every answer the simulator gives checked
//! against Twilio's published OpenAPI spec.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::post;
use ringback::twilio::call::CreateCall;
use ringback::twilio::signature;
use ringback::twilio::{
    Auth, CreateMessage, ListFilter, Message, MessageSearch, PageLimits, Secret, SendOutcome,
    Sender, TwilioClient, TwilioConfig, TwilioError,
};
use ringback::twilio_sim::faults::Faults;
use ringback::twilio_sim::{SimConfig, Simulator, server};
use tokio_util::sync::CancellationToken;

const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";
const TOKEN: &str = "sim-token";
const FROM: &str = "+15005550006";

struct Sim {
    sim: Arc<Simulator>,
    base: String,
    cancel: CancellationToken,
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

async fn start_sim(faults: &str) -> Sim {
    let faults: Faults = if faults.is_empty() {
        Faults::default()
    } else {
        serde_json::from_str(faults).unwrap()
    };
    let sim = Simulator::new(
        SimConfig {
            account_sid: ACCOUNT.into(),
            auth_token: Secret::new(TOKEN),
            api_keys: vec![(
                "SK0123456789abcdef0123456789abcdef".into(),
                Secret::new("key-secret"),
            )],
        },
        faults,
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let cancel = CancellationToken::new();
    tokio::spawn(server::serve(listener, sim.clone(), cancel.clone()));
    Sim { sim, base, cancel }
}

fn client(base: &str, timeout_ms: u64) -> TwilioClient {
    TwilioClient::new(TwilioConfig {
        account_sid: ACCOUNT.into(),
        auth: Auth::AuthToken(Secret::new(TOKEN)),
        sender: Sender::From(FROM.into()),
        api_base: base.into(),
        connect_timeout: Duration::from_secs(2),
        timeout: Duration::from_millis(timeout_ms),
        validity_period: Some(600),
    })
    .unwrap()
}

/// Replace the simulator's fault rules over HTTP, as an operator or drill does.
async fn put_faults(s: &Sim, faults: &str) {
    let resp = reqwest::Client::new()
        .put(format!("{}/sim/faults", s.base))
        .header("Content-Type", "application/json")
        .body(faults.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 204, "PUT /sim/faults {faults}");
}

/// Poll until Twilio has sent the message (`date_sent` set), within a deadline.
async fn wait_sent(s: &Sim, sid: &str) -> Message {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match s.sim.store.get(sid) {
            Some(m) if m.date_sent.is_some() => return m,
            _ => assert!(std::time::Instant::now() < deadline, "{sid} was never sent"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A lookup of the texts from [`FROM`] to `to` created since `since`, `page_size` a page, at
/// most `max_pages` pages.
async fn lookup(
    c: &TwilioClient,
    to: &str,
    since: chrono::DateTime<chrono::Utc>,
    (page_size, max_pages): (u32, u32),
) -> Result<MessageSearch, TwilioError> {
    let limits = PageLimits {
        page_size,
        max_pages,
    };
    c.list_messages_since(to, Some(FROM), since, limits).await
}

/// Five minutes ago: a lookup bound that covers everything a test created.
fn minutes_ago() -> chrono::DateTime<chrono::Utc> {
    chrono::Utc::now() - chrono::Duration::minutes(5)
}

fn msg(to: &str) -> CreateMessage {
    CreateMessage {
        to: to.into(),
        body: "Run 42 finished: approve the deploy".into(),
        ..Default::default()
    }
}

#[tokio::test]
async fn accepted_then_fetched_and_listed() {
    let s = start_sim("").await;
    let c = client(&s.base, 5000);
    let SendOutcome::Accepted(m) = c.create_message(&msg("+15558675310")).await else {
        panic!("not accepted")
    };
    assert!(ringback::twilio::message::is_message_sid(&m.sid));
    assert_eq!(m.status.as_deref(), Some("queued"));
    assert_eq!(m.to.as_deref(), Some("+15558675310"));
    assert_eq!(m.from.as_deref(), Some(FROM));
    let fetched = c.fetch_message(&m.sid).await.unwrap();
    assert_eq!(fetched.sid, m.sid);
    // A DateSent filter sees a message only once it has left Twilio.
    wait_sent(&s, &m.sid).await;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let page = c
        .list_messages(&ListFilter {
            to: Some("+15558675310".into()),
            from: Some(FROM.into()),
            date_sent_after: Some(today),
            page_size: None,
        })
        .await
        .unwrap();
    assert!(page.messages.iter().any(|x| x.sid == m.sid));
    let err = c
        .fetch_message("SM00000000000000000000000000000000")
        .await
        .unwrap_err();
    assert!(err.to_string().contains("20404"), "{err}");
    assert_eq!(s.sim.store.stats().by_to["+15558675310"], 1);

    // API key credentials work too; a wrong token is Twilio's 401 / 20003, refused credentials.
    let mut cfg = c.config().clone();
    cfg.auth = Auth::ApiKey {
        sid: "SK0123456789abcdef0123456789abcdef".into(),
        secret: Secret::new("key-secret"),
    };
    assert!(matches!(
        TwilioClient::new(cfg.clone())
            .unwrap()
            .create_message(&msg("+15558675310"))
            .await,
        SendOutcome::Accepted(_)
    ));
    cfg.auth = Auth::AuthToken(Secret::new("wrong"));
    match TwilioClient::new(cfg)
        .unwrap()
        .create_message(&msg("+15558675310"))
        .await
    {
        SendOutcome::AuthRefused(e) => assert_eq!((e.status, e.code), (401, Some(20003))),
        other => panic!("{other:?}"),
    }
}

fn assert_refused(outcome: SendOutcome) {
    match outcome {
        SendOutcome::AuthRefused(e) => {
            assert_eq!((e.status, e.code), (401, Some(20003)));
            assert_eq!(e.message, "Authenticate");
        }
        other => panic!("expected AuthRefused, got {other:?}"),
    }
}

#[tokio::test]
async fn refused_credentials_are_their_own_outcome_create_nothing_and_lift_at_run_time() {
    let s = start_sim("").await;
    let c = client(&s.base, 5000);
    let SendOutcome::Accepted(before) = c.create_message(&msg("+15558675310")).await else {
        panic!("not accepted")
    };

    put_faults(&s, r#"{"auth":{"refuse":"all"}}"#).await;
    assert_refused(c.create_message(&msg("+15558675310")).await);
    let fetch = c.fetch_message(&before.sid).await.unwrap_err();
    assert!(fetch.is_auth_refused(), "{fetch}");
    let list = lookup(&c, "+15558675310", minutes_ago(), (50, 20))
        .await
        .unwrap_err();
    assert!(list.is_auth_refused(), "{list}");
    assert_eq!(
        s.sim.store.stats().total,
        1,
        "nothing created while refused"
    );

    put_faults(&s, "{}").await;
    assert!(matches!(
        c.create_message(&msg("+15558675310")).await,
        SendOutcome::Accepted(_)
    ));
    c.fetch_message(&before.sid).await.unwrap();

    // A refusal with a duration lifts by itself.
    put_faults(&s, r#"{"auth":{"refuse":"all","for_ms":300}}"#).await;
    assert_refused(c.create_message(&msg("+15558675310")).await);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match c.create_message(&msg("+15558675310")).await {
            SendOutcome::Accepted(_) => break,
            SendOutcome::AuthRefused(_) => {
                assert!(std::time::Instant::now() < deadline, "never lifted")
            }
            other => panic!("{other:?}"),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        s.sim.store.stats().total,
        3,
        "only the accepted creates exist"
    );

    // Set at start (`--faults`) as well.
    let refused = start_sim(r#"{"auth":{"refuse":"all"}}"#).await;
    assert_refused(
        client(&refused.base, 5000)
            .create_message(&msg("+15558675310"))
            .await,
    );
    assert_eq!(refused.sim.store.stats().total, 0);
}

#[tokio::test]
async fn lookups_refused_while_creates_still_work() {
    let s = start_sim(r#"{"auth":{"refuse":"lookups"}}"#).await;
    let c = client(&s.base, 5000);
    let SendOutcome::Accepted(m) = c.create_message(&msg("+15558675310")).await else {
        panic!("a key that may create must still create")
    };
    assert!(c.fetch_message(&m.sid).await.unwrap_err().is_auth_refused());
    assert!(
        lookup(&c, "+15558675310", minutes_ago(), (50, 20))
            .await
            .unwrap_err()
            .is_auth_refused()
    );
    assert!(
        c.list_messages(&ListFilter {
            to: Some("+15558675310".into()),
            ..Default::default()
        })
        .await
        .unwrap_err()
        .is_auth_refused()
    );
    assert_eq!(s.sim.store.stats().total, 1);
}

#[tokio::test]
async fn trial_accounts_bodies_carry_twilios_prefix_in_fetch_and_list() {
    let s = start_sim("").await;
    let c = client(&s.base, 5000);
    put_faults(&s, r#"{"trial_prefix":true}"#).await;
    let sent = msg("+15558675310");
    let expected = format!("Sent from your Twilio trial account - {}", sent.body);
    let SendOutcome::Accepted(m) = c.create_message(&sent).await else {
        panic!()
    };
    assert_eq!(m.body.as_deref(), Some(expected.as_str()));
    assert_eq!(
        c.fetch_message(&m.sid).await.unwrap().body.as_deref(),
        Some(expected.as_str())
    );
    let found = lookup(&c, "+15558675310", minutes_ago(), (50, 20))
        .await
        .unwrap();
    assert_eq!(found.messages.len(), 1);
    assert_eq!(found.messages[0].body.as_deref(), Some(expected.as_str()));
    assert_ne!(
        found.messages[0].body.as_deref(),
        Some(sent.body.as_str()),
        "a lookup comparing bodies exactly would miss it"
    );
}

#[tokio::test]
async fn a_lookup_reads_every_page_and_finds_a_queued_message_that_date_sent_misses() {
    // The first message stays queued for a minute (date_sent null); the rest leave at once.
    let s = start_sim(r#"{"callbacks":[{"delay_ms":60000,"times":1}]}"#).await;
    let c = client(&s.base, 5000);
    let to = "+15558675310";
    let start = chrono::Utc::now();
    let SendOutcome::Accepted(queued) = c.create_message(&msg(to)).await else {
        panic!()
    };
    let mut sent = vec![];
    for _ in 0..7 {
        let SendOutcome::Accepted(m) = c.create_message(&msg(to)).await else {
            panic!()
        };
        sent.push(wait_sent(&s, &m.sid).await.sid);
    }
    assert_eq!(s.sim.store.get(&queued.sid).unwrap().date_sent, None);

    // What a DateSent filter sees: every sent message, never the queued one.
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let dated = c
        .list_messages(&ListFilter {
            to: Some(to.into()),
            from: Some(FROM.into()),
            date_sent_after: Some(today),
            page_size: Some(50),
        })
        .await
        .unwrap();
    assert_eq!(dated.messages.len(), 7);
    assert!(dated.messages.iter().all(|m| m.sid != queued.sid));

    // By creation time, 3 to a page: 3 pages, the queued message on the last one.
    let found = lookup(&c, to, start, (3, 10)).await.unwrap();
    assert!(found.complete);
    assert_eq!(found.pages, 3);
    assert_eq!(found.messages.len(), 8);
    assert_eq!(found.messages.last().map(|m| &m.sid), Some(&queued.sid));
    assert!(
        sent.iter()
            .all(|sid| found.messages.iter().any(|m| &m.sid == sid))
    );
    // Pages were followed through next_page_uri, without any DateSent filter.
    let pages: Vec<_> = s
        .sim
        .store
        .requests()
        .into_iter()
        .filter(|r| r.query.iter().any(|(k, v)| k == "PageSize" && v == "3"))
        .collect();
    assert_eq!(pages.len(), 3);
    assert!(
        pages
            .iter()
            .all(|r| r.query.iter().all(|(k, _)| !k.starts_with("DateSent")))
    );
    assert!(pages[1..].iter().all(|r| {
        r.query
            .iter()
            .any(|(k, v)| k == "PageToken" && v.starts_with("PA"))
    }));

    // Out of pages before the range ends: incomplete, and the queued message is not in it.
    let cut = lookup(&c, to, start, (3, 2)).await.unwrap();
    assert!(!cut.complete, "a search cut short must say so");
    assert_eq!((cut.pages, cut.messages.len()), (2, 6));
    assert!(cut.messages.iter().all(|m| m.sid != queued.sid));
}

/// Twilio promises no order for its list (it filters by `DateSent` only, null while a message
/// is queued). Sorted newest-sent first with the queued messages last, a lookup that stopped at
/// the first page of old messages would miss a queued one of this run and text again: the
/// lookup reads the list to its end, whatever its order, and keeps what was created since its
/// bound.
#[tokio::test]
async fn a_lookup_reads_the_whole_list_whatever_its_order() {
    // The first new message stays queued for a minute (date_sent null); the rest leave at once.
    let s =
        start_sim(r#"{"callbacks":[{"delay_ms":60000,"times":1}],"list_order":"date_sent"}"#).await;
    let c = client(&s.base, 5000);
    let to = "+15558675310";
    // Ten messages created and sent an hour ago.
    let hour_ago = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc2822();
    for i in 0..10 {
        s.sim.store.insert(Message {
            sid: format!("SM{i:032x}"),
            to: Some(to.into()),
            from: Some(FROM.into()),
            body: Some("an old text".into()),
            date_created: Some(hour_ago.clone()),
            date_sent: Some(hour_ago.clone()),
            status: Some("delivered".into()),
            ..Default::default()
        });
    }
    let SendOutcome::Accepted(queued) = c.create_message(&msg(to)).await else {
        panic!()
    };
    let mut new = vec![queued.clone()];
    for _ in 0..3 {
        let SendOutcome::Accepted(m) = c.create_message(&msg(to)).await else {
            panic!()
        };
        wait_sent(&s, &m.sid).await;
        new.push(m);
    }
    // The bound is inside the first new message's creation second: Twilio's dates are to the
    // second, so that message still counts.
    let first = new[0].created_at().unwrap();
    let bound = first + chrono::Duration::milliseconds(999);
    let found = lookup(&c, to, bound, (2, 20)).await.unwrap();
    assert!(found.complete);
    assert_eq!(found.pages, 7, "14 messages, 2 a page: read to the end");
    let last = s
        .sim
        .store
        .requests()
        .into_iter()
        .rfind(|r| r.query.iter().any(|(k, v)| k == "PageSize" && v == "2"))
        .unwrap();
    assert!(last.query.iter().any(|(k, _)| k == "PageToken"), "{last:?}");
    let mut sids: Vec<_> = found.messages.iter().map(|m| m.sid.clone()).collect();
    let mut want: Vec<_> = new.iter().map(|m| m.sid.clone()).collect();
    sids.sort();
    want.sort();
    assert_eq!(
        sids, want,
        "only messages created since the bound, the queued one among them"
    );

    // Out of pages before the list ends: incomplete, never "nothing found".
    let cut = lookup(&c, to, bound, (2, 3)).await.unwrap();
    assert!(!cut.complete, "a search cut short must say so");
}

#[tokio::test]
async fn permanent_errors_are_permanent_and_create_nothing() {
    let s = start_sim(r#"{"create":[{"to":"+15550000004","fault":"permanent","code":21610,"message":"Attempt to send to unsubscribed recipient"}]}"#).await;
    let c = client(&s.base, 5000);
    match c.create_message(&msg("+15550000004")).await {
        SendOutcome::Permanent(e) => {
            assert_eq!((e.status, e.code), (400, Some(21610)));
            assert_eq!(
                e.more_info.as_deref(),
                Some("https://www.twilio.com/docs/errors/21610")
            );
        }
        other => panic!("{other:?}"),
    }
    match c.create_message(&msg("5550000004")).await {
        SendOutcome::Permanent(e) => assert_eq!(e.code, Some(21211), "real validation: not E.164"),
        other => panic!("{other:?}"),
    }
    let long = CreateMessage {
        body: "x".repeat(1601),
        ..msg("+15558675310")
    };
    assert!(
        matches!(c.create_message(&long).await, SendOutcome::Permanent(e) if e.code == Some(21617))
    );
    assert_eq!(s.sim.store.stats().total, 0);
}

#[tokio::test]
async fn rate_limits_and_full_queues_are_retry_later() {
    let s = start_sim(
        r#"{"create":[{"to":"+15550000001","fault":"rate_limited","retry_after_s":2},
                      {"to":"+15550000002","fault":"permanent","code":21611}]}"#,
    )
    .await;
    let c = client(&s.base, 5000);
    match c.create_message(&msg("+15550000001")).await {
        SendOutcome::RetryLater {
            retry_after, error, ..
        } => {
            assert_eq!(retry_after, Some(Duration::from_secs(2)));
            assert_eq!(error.and_then(|e| e.code), Some(20429));
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        c.create_message(&msg("+15550000002")).await,
        SendOutcome::RetryLater { .. }
    ));
    // Nothing listening: the request never left, so it is safe to retry.
    let closed = client("http://127.0.0.1:9", 5000);
    assert!(matches!(
        closed.create_message(&msg("+15558675310")).await,
        SendOutcome::RetryLater { .. }
    ));
    assert_eq!(s.sim.store.stats().total, 0);
}

#[tokio::test]
async fn server_errors_timeouts_and_dropped_connections_are_ambiguous() {
    let s = start_sim(
        r#"{"create":[{"to":"+15550000500","fault":"server_error","status":503},
                      {"to":"+15550000502","fault":"server_error","status":502,"created":true},
                      {"to":"+15550000900","fault":"slow","delay_ms":1500},
                      {"to":"+15550000999","fault":"create_then_drop"}]}"#,
    )
    .await;
    let c = client(&s.base, 500);
    for to in [
        "+15550000500",
        "+15550000502",
        "+15550000900",
        "+15550000999",
    ] {
        assert!(
            matches!(
                c.create_message(&msg(to)).await,
                SendOutcome::Ambiguous { .. }
            ),
            "{to}"
        );
    }
    let stats = s.sim.store.stats();
    assert_eq!(
        stats.by_to.get("+15550000500"),
        None,
        "a plain 503 created nothing"
    );
    for to in ["+15550000502", "+15550000900", "+15550000999"] {
        assert_eq!(
            stats.by_to[to], 1,
            "{to}: Twilio has the message although the client got no answer"
        );
    }
}

/// Collects status callbacks as Twilio's receiver would see them.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<Callback>>>);

/// (form fields, X-Twilio-Signature, I-Twilio-Idempotency-Token)
type Callback = (Vec<(String, String)>, String, String);

async fn start_receiver() -> (String, Received) {
    let received = Received::default();
    let r = received.clone();
    let app = axum::Router::new().route(
        "/status",
        post(
            move |headers: axum::http::HeaderMap, body: axum::body::Bytes| {
                let r = r.clone();
                async move {
                    let form: Vec<(String, String)> = serde_urlencoded::from_bytes(&body).unwrap();
                    let h = |n: &str| {
                        headers
                            .get(n)
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or("")
                            .to_string()
                    };
                    r.0.lock().unwrap().push((
                        form,
                        h("X-Twilio-Signature"),
                        h("I-Twilio-Idempotency-Token"),
                    ));
                    ""
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/status?runId=run-1",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, received)
}

async fn wait_callbacks(r: &Received, n: usize) -> Vec<Callback> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let got = r.0.lock().unwrap().clone();
        if got.len() >= n {
            return got;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "only {} of {n} callbacks arrived",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn get<'a>(form: &'a [(String, String)], k: &str) -> &'a str {
    form.iter()
        .find(|(a, _)| a == k)
        .map_or("", |(_, v)| v.as_str())
}

#[tokio::test]
async fn status_callbacks_are_signed_and_follow_the_fault_rules() {
    let s = start_sim(
        r#"{"callbacks":[{"to":"+15550000003","final":"undelivered","error_code":30003,"reversed":true},
                         {"to":"+15550000007","duplicate":true}]}"#,
    )
    .await;
    let c = client(&s.base, 5000);
    let (url, received) = start_receiver().await;
    let with_cb = |to: &str| CreateMessage {
        status_callback: Some(url.clone()),
        ..msg(to)
    };

    let SendOutcome::Accepted(m) = c.create_message(&with_cb("+15558675310")).await else {
        panic!()
    };
    let got = wait_callbacks(&received, 2).await;
    let statuses: Vec<&str> = got
        .iter()
        .map(|(f, _, _)| get(f, "MessageStatus"))
        .collect();
    assert_eq!(statuses, ["sent", "delivered"]);
    for (form, sig, token) in &got {
        assert_eq!(get(form, "MessageSid"), m.sid);
        assert_eq!(get(form, "SmsSid"), m.sid);
        assert_eq!(get(form, "AccountSid"), ACCOUNT);
        assert!(
            signature::verify(TOKEN, &url, form, sig),
            "signature must verify over the callback URL"
        );
        assert!(!signature::verify("other", &url, form, sig));
        assert!(!token.is_empty());
    }
    assert_eq!(
        c.fetch_message(&m.sid).await.unwrap().status.as_deref(),
        Some("delivered")
    );

    received.0.lock().unwrap().clear();
    c.create_message(&with_cb("+15550000003")).await;
    let got = wait_callbacks(&received, 2).await;
    assert_eq!(
        get(&got[0].0, "MessageStatus"),
        "undelivered",
        "reversed: the final status first"
    );
    assert_eq!(get(&got[0].0, "ErrorCode"), "30003");
    assert_eq!(get(&got[1].0, "MessageStatus"), "sent");

    received.0.lock().unwrap().clear();
    c.create_message(&with_cb("+15550000007")).await;
    let got = wait_callbacks(&received, 4).await;
    assert_eq!(
        got[0], got[1],
        "a duplicate is the same request, same signature and idempotency token"
    );
}

/// Twilio's published spec, the part ringback calls (`tests/fixtures/twilio/`, provenance in
/// its SOURCE.md), or the whole file at `TWILIO_OPENAPI_SPEC`. A missing spec fails the test:
/// a check that skips in silence proves nothing.
fn load_spec() -> serde_json::Value {
    let path = std::env::var("TWILIO_OPENAPI_SPEC")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| {
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/twilio/twilio_api_v2010.json")
        });
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("Twilio's OpenAPI spec at {}: {e}", path.display()));
    serde_json::from_slice(&bytes).expect("spec is JSON")
}

fn check_value(name: &str, value: &str, schema: &serde_json::Value) {
    if let Some(p) = schema.get("pattern").and_then(|p| p.as_str()) {
        assert!(
            regex::Regex::new(p).unwrap().is_match(value),
            "{name}={value} breaks pattern {p}"
        );
    }
    if let Some(n) = schema.get("minLength").and_then(|n| n.as_u64()) {
        assert!(value.chars().count() as u64 >= n, "{name} shorter than {n}");
    }
    if let Some(n) = schema.get("maxLength").and_then(|n| n.as_u64()) {
        assert!(value.chars().count() as u64 <= n, "{name} longer than {n}");
    }
    match schema.get("type").and_then(|t| t.as_str()) {
        Some("integer") => assert!(
            value.parse::<i64>().is_ok(),
            "{name}={value} is not an integer"
        ),
        Some("boolean") => assert!(
            value == "true" || value == "false",
            "{name} is not a boolean"
        ),
        _ => {}
    }
    if schema.get("format").and_then(|f| f.as_str()) == Some("uri") {
        assert!(
            value.starts_with("http://") || value.starts_with("https://"),
            "{name} is not a URI"
        );
    }
    if let Some(options) = schema.get("enum").and_then(|e| e.as_array()) {
        assert!(
            options.iter().any(|o| o.as_str() == Some(value)),
            "{name}={value} not in enum"
        );
    }
}

fn check_params(op: &serde_json::Value, location: &str, given: &[(String, String)]) {
    let params: Vec<&serde_json::Value> = op["parameters"]
        .as_array()
        .map(|a| a.iter().filter(|p| p["in"] == location).collect())
        .unwrap_or_default();
    for (name, value) in given {
        let p = params
            .iter()
            .find(|p| p["name"] == name.as_str())
            .unwrap_or_else(|| panic!("{location} parameter {name} is not in the spec"));
        check_value(name, value, &p["schema"]);
    }
    for p in params.iter().filter(|p| p["required"] == true) {
        let name = p["name"].as_str().unwrap();
        assert!(
            given.iter().any(|(n, _)| n == name),
            "required {location} parameter {name} missing"
        );
    }
}

#[tokio::test]
async fn every_request_the_client_sends_is_valid_for_twilios_spec() {
    let spec = load_spec();
    let s = start_sim("").await;
    let c = client(&s.base, 5000);
    let mut service_cfg = c.config().clone();
    service_cfg.sender = Sender::MessagingService("MG0123456789abcdef0123456789abcdef".into());
    let service = TwilioClient::new(service_cfg).unwrap();
    let SendOutcome::Accepted(m) = c
        .create_message(&CreateMessage {
            status_callback: Some(
                "https://ringback.example/api/notify/webhook/status?runId=r1".into(),
            ),
            ..msg("+15558675310")
        })
        .await
    else {
        panic!()
    };
    assert!(matches!(
        service.create_message(&msg("+15558675310")).await,
        SendOutcome::Accepted(_)
    ));
    c.fetch_message(&m.sid).await.unwrap();
    c.list_messages(&ListFilter {
        to: Some("+15558675310".into()),
        from: Some(FROM.into()),
        date_sent_after: Some("2026-11-30".into()),
        page_size: Some(20),
    })
    .await
    .unwrap();
    // Two messages, one to a page: the lookup follows next_page_uri once.
    let found = lookup(
        &c,
        "+15558675310",
        chrono::Utc::now() - chrono::Duration::minutes(5),
        (1, 5),
    )
    .await
    .unwrap();
    assert_eq!((found.pages, found.messages.len()), (2, 2));

    let paths = &spec["paths"];
    let requests = s.sim.store.requests();
    assert_eq!(requests.len(), 6);
    for r in requests {
        assert!(r.basic_auth, "Twilio's security scheme is HTTP Basic");
        let (template, path_params) = if r.path.contains("/Messages/") {
            let rest = r.path.trim_start_matches("/2010-04-01/Accounts/");
            let (account, sid) = rest.split_once("/Messages/").unwrap();
            (
                "/2010-04-01/Accounts/{AccountSid}/Messages/{Sid}.json",
                vec![
                    ("AccountSid".to_string(), account.to_string()),
                    ("Sid".to_string(), sid.trim_end_matches(".json").to_string()),
                ],
            )
        } else {
            let account = r
                .path
                .trim_start_matches("/2010-04-01/Accounts/")
                .trim_end_matches("/Messages.json");
            (
                "/2010-04-01/Accounts/{AccountSid}/Messages.json",
                vec![("AccountSid".to_string(), account.to_string())],
            )
        };
        let op = &paths[template][r.method.to_lowercase()];
        assert!(op.is_object(), "{} {template} is not in the spec", r.method);
        check_params(op, "path", &path_params);
        check_params(op, "query", &r.query);
        if r.method == "POST" {
            let ct = r.content_type.as_deref().unwrap_or("");
            assert!(
                ct.starts_with("application/x-www-form-urlencoded"),
                "content type {ct}"
            );
            let schema =
                &op["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"];
            for (name, value) in &r.form {
                let prop = &schema["properties"][name.as_str()];
                assert!(prop.is_object(), "form field {name} is not in the spec");
                check_value(name, value, prop);
            }
            for req in schema["required"].as_array().unwrap() {
                assert!(
                    r.form.iter().any(|(n, _)| req == n.as_str()),
                    "required field {req} missing"
                );
            }
        }
    }
}

/// Resolve a local `$ref` (`#/components/schemas/x`).
fn resolve<'a>(
    spec: &'a serde_json::Value,
    schema: &'a serde_json::Value,
) -> &'a serde_json::Value {
    match schema.get("$ref").and_then(|r| r.as_str()) {
        Some(r) => r
            .trim_start_matches("#/")
            .split('/')
            .fold(spec, |node, part| &node[part]),
        None => schema,
    }
}

fn check_json(
    spec: &serde_json::Value,
    name: &str,
    value: &serde_json::Value,
    schema: &serde_json::Value,
) {
    let schema = resolve(spec, schema);
    if value.is_null() {
        assert!(
            schema["nullable"] == true,
            "{name} is null but not nullable"
        );
        return;
    }
    match schema["type"].as_str() {
        Some("string") => {
            let v = value
                .as_str()
                .unwrap_or_else(|| panic!("{name} must be a string, got {value}"));
            check_value(name, v, schema);
        }
        Some("integer") => assert!(value.is_i64(), "{name} must be an integer, got {value}"),
        Some("object") => assert!(value.is_object(), "{name} must be an object"),
        other => panic!("{name}: unhandled schema type {other:?}"),
    }
}

/// A raw GET with the account's SID and `token`, its body as JSON.
async fn get_json(url: &str, token: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(url)
        .basic_auth(ACCOUNT, Some(token))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// A message object against the spec's `api.v2010.account.message`: every field, nothing more.
fn check_message(spec: &serde_json::Value, body: &serde_json::Value) {
    let schema = &spec["components"]["schemas"]["api.v2010.account.message"];
    let props = schema["properties"].as_object().unwrap();
    let obj = body.as_object().unwrap();
    for (name, prop) in props {
        let value = obj
            .get(name)
            .unwrap_or_else(|| panic!("the simulator omits {name}"));
        check_json(spec, name, value, prop);
    }
    for name in obj.keys() {
        assert!(
            props.contains_key(name),
            "{name} is not in Twilio's message schema"
        );
    }
}

#[tokio::test]
async fn list_answers_match_twilios_list_schema_and_page_as_its_examples() {
    let spec = load_spec();
    // The first message stays queued: date_sent null, which the schema allows.
    let s = start_sim(r#"{"callbacks":[{"delay_ms":60000,"times":1}]}"#).await;
    let c = client(&s.base, 5000);
    for _ in 0..3 {
        assert!(matches!(
            c.create_message(&msg("+15558675310")).await,
            SendOutcome::Accepted(_)
        ));
    }
    let op = &spec["paths"]["/2010-04-01/Accounts/{AccountSid}/Messages.json"]["get"];
    let schema = &op["responses"]["200"]["content"]["application/json"]["schema"];
    let example = &op["responses"]["200"]["content"]["application/json"]["examples"]["readFullPage1"]
        ["value"];
    let props = schema["properties"].as_object().unwrap();
    let mut next = Some(format!(
        "/2010-04-01/Accounts/{ACCOUNT}/Messages.json?To=%2B15558675310&PageSize=2"
    ));
    let mut listed = 0;
    let mut pages = 0;
    while let Some(uri) = next {
        let page = get_json(&format!("{}{uri}", s.base), TOKEN).await;
        pages += 1;
        let obj = page.as_object().unwrap();
        for (name, prop) in props {
            let value = obj
                .get(name)
                .unwrap_or_else(|| panic!("the list answer omits {name}"));
            match prop["type"].as_str() {
                Some("array") => {
                    for m in value.as_array().unwrap() {
                        check_message(&spec, m);
                        listed += 1;
                    }
                }
                Some("integer") => assert!(value.is_u64(), "{name} must be an integer"),
                // format "uri", but relative to the API base, as in the spec's own examples.
                _ if value.is_null() => assert!(prop["nullable"] == true, "{name} is null"),
                _ => assert!(
                    value
                        .as_str()
                        .unwrap()
                        .starts_with(&format!("/2010-04-01/Accounts/{ACCOUNT}/Messages.json?")),
                    "{name}: {value}"
                ),
            }
        }
        for name in obj.keys() {
            assert!(props.contains_key(name), "{name} is not in the list schema");
        }
        next = page["next_page_uri"].as_str().map(str::to_string);
        if let Some(n) = &next {
            // The example's shape: the filters, PageSize, Page, then PageToken=PA<sid>.
            let shape = |u: &str| {
                let q: Vec<(String, String)> =
                    serde_urlencoded::from_str(u.split_once('?').unwrap().1).unwrap();
                let keys: Vec<String> = q.iter().map(|(k, _)| k.clone()).collect();
                let token = q
                    .iter()
                    .find(|(k, _)| k == "PageToken")
                    .map(|(_, v)| v.clone());
                (
                    keys[keys.len() - 3..].to_vec(),
                    token.map(|t| t[..2].to_string()),
                )
            };
            assert_eq!(shape(n), shape(example["next_page_uri"].as_str().unwrap()));
        }
    }
    assert_eq!((pages, listed), (2, 3));
}

#[tokio::test]
async fn simulator_answers_match_twilios_response_schema() {
    let spec = load_spec();
    let s = start_sim("").await;
    let c = client(&s.base, 5000);
    let SendOutcome::Accepted(m) = c.create_message(&msg("+15558675310")).await else {
        panic!()
    };
    let url = format!(
        "{}/2010-04-01/Accounts/{ACCOUNT}/Messages/{}.json",
        s.base, m.sid
    );
    let created = serde_json::to_value(&*m).unwrap();
    let fetched = get_json(&url, TOKEN).await;
    for body in [&created, &fetched] {
        check_message(&spec, body);
    }
    // The error body: Twilio's documented shape.
    let bad = get_json(&url, "wrong").await;
    assert_eq!(
        bad,
        serde_json::json!({"code": 20003, "message": "Authenticate", "more_info": "https://www.twilio.com/docs/errors/20003", "status": 401})
    );
}

/// Vectors computed with the official `twilio` npm package (node-harness/bin/signature-vectors.js):
/// our signing and checking must agree with the SDK on every one, valid and invalid.
#[test]
fn signatures_agree_with_the_official_sdk_vectors() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("node-harness/fixtures/signature-vectors.json");
    let fixture: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let vectors = fixture["vectors"].as_array().unwrap();
    assert!(vectors.len() >= 8);
    for v in vectors {
        let name = v["name"].as_str().unwrap();
        if v.get("algorithm").is_some() {
            // SharedKey / HMAC_SHA256 webhooks are not used by Messaging status callbacks.
            continue;
        }
        let token = v["token"].as_str().unwrap();
        let mut params = vec![];
        for (k, val) in v["params"].as_object().unwrap() {
            match val {
                serde_json::Value::Array(items) => params.extend(
                    items
                        .iter()
                        .map(|i| (k.clone(), i.as_str().unwrap().to_string())),
                ),
                other => params.push((k.clone(), other.as_str().unwrap().to_string())),
            }
        }
        let sig = v["signature"].as_str().unwrap();
        assert_eq!(
            signature::sign(token, v["url"].as_str().unwrap(), &params),
            sig,
            "{name}"
        );
        for url in v["valid_url_forms"].as_array().unwrap() {
            assert!(
                signature::verify(token, url.as_str().unwrap(), &params, sig),
                "{name}: {url} must verify"
            );
        }
        for url in v["invalid_url_forms"].as_array().unwrap() {
            assert!(
                !signature::verify(token, url.as_str().unwrap(), &params, sig),
                "{name}: {url} must not verify"
            );
        }
    }
}

#[test]
fn a_sends_own_validity_period_overrides_the_configured_one() {
    let c = client("http://127.0.0.1:1", 500);
    let validity = |m: &CreateMessage| {
        c.create_form(m)
            .into_iter()
            .find(|(k, _)| *k == "ValidityPeriod")
            .map(|(_, v)| v)
    };
    assert_eq!(validity(&msg("+15558675310")).as_deref(), Some("600"));
    let cut = CreateMessage {
        validity_period: Some(90),
        ..msg("+15558675310")
    };
    assert_eq!(validity(&cut).as_deref(), Some("90"));
}

/// The simulator's lagging list (`list_lag_ms`): a message shows only that long after its
/// create, as an index that lags would show it; a lookup then finds it once the lag passed.
#[tokio::test]
async fn the_simulator_can_list_a_message_only_after_a_lag() {
    let s = start_sim(r#"{"list_lag_ms":700}"#).await;
    let c = client(&s.base, 5000);
    let to = "+15558675310";
    let SendOutcome::Accepted(m) = c.create_message(&msg(to)).await else {
        panic!()
    };
    let early = lookup(&c, to, minutes_ago(), (50, 5)).await.unwrap();
    assert!(
        early.messages.iter().all(|x| x.sid != m.sid),
        "listed at once"
    );
    tokio::time::sleep(Duration::from_millis(800)).await;
    let later = lookup(&c, to, minutes_ago(), (50, 5)).await.unwrap();
    assert!(
        later.messages.iter().any(|x| x.sid == m.sid),
        "never listed"
    );
}

/// A call that asks for one key at `gather` (the receiver's URL), as the ladder's calls do.
fn call_to(to: &str, status_callback: Option<&str>, gather: &str) -> CreateCall {
    let gather = gather.replace('&', "&amp;");
    CreateCall {
        to: to.into(),
        from: FROM.into(),
        twiml: format!(
            r#"<Response><Gather input="dtmf" numDigits="1" timeout="6" action="{gather}&amp;n=0"><Say>Run 42 finished. Press 1 to acknowledge.</Say></Gather><Gather input="dtmf" numDigits="1" timeout="6" action="{gather}&amp;n=1"><Say>Press 1 to acknowledge.</Say></Gather></Response>"#
        ),
        status_callback: status_callback.map(str::to_string),
        machine_detection: false,
        ring_for: Some(20),
    }
}

fn call_statuses(got: &[Callback]) -> Vec<String> {
    got.iter()
        .filter(|(f, _, _)| get(f, "Digits").is_empty())
        .map(|(f, _, _)| get(f, "CallStatus").to_string())
        .collect()
}

#[tokio::test]
async fn a_call_rings_through_its_outcome_with_signed_callbacks_and_the_keypad_post() {
    let s = start_sim(
        r#"{"calls":[{"to":"+15550000021","outcome":"no-answer"},
                     {"to":"+15550000022","outcome":"busy","shuffled":true},
                     {"to":"+15550000023","digits":"2","second_gather":true,"duplicate":true},
                     {"to":"+15550000024","outcome":"machine"}]}"#,
    )
    .await;
    let c = client(&s.base, 5000);
    let (url, received) = start_receiver().await;
    let since = chrono::Utc::now() - chrono::Duration::seconds(2);

    // answered: initiated, ringing, in-progress, the keypad post (Digits=1 at the first
    // Gather), completed; every request signed over its URL
    let SendOutcome::Accepted(call) = c
        .create_call(&call_to("+15558675310", Some(&url), &url))
        .await
    else {
        panic!("the call is created")
    };
    assert!(
        ringback::twilio::call::is_call_sid(&call.sid),
        "{}",
        call.sid
    );
    assert_eq!(call.status.as_deref(), Some("queued"));
    let got = wait_callbacks(&received, 5).await;
    assert_eq!(
        call_statuses(&got),
        ["initiated", "ringing", "in-progress", "completed"]
    );
    let keypad: Vec<&Callback> = got
        .iter()
        .filter(|(f, _, _)| !get(f, "Digits").is_empty())
        .collect();
    assert_eq!(keypad.len(), 1);
    assert_eq!(get(&keypad[0].0, "Digits"), "1");
    assert_eq!(get(&keypad[0].0, "CallSid"), call.sid);
    let action = format!("{url}&n=0");
    assert!(
        signature::verify(TOKEN, &action, &keypad[0].0, &keypad[0].1),
        "the keypad post is signed over its action URL"
    );
    for (form, sig, _) in got.iter().filter(|(f, _, _)| get(f, "Digits").is_empty()) {
        assert_eq!(get(form, "CallSid"), call.sid);
        assert_eq!(get(form, "CallbackSource"), "call-progress-events");
        assert!(!get(form, "SequenceNumber").is_empty() && !get(form, "Timestamp").is_empty());
        assert!(signature::verify(TOKEN, &url, form, sig));
    }
    let sequence: Vec<&str> = got
        .iter()
        .filter(|(f, _, _)| get(f, "Digits").is_empty())
        .map(|(f, _, _)| get(f, "SequenceNumber"))
        .collect();
    assert_eq!(sequence, ["0", "1", "2", "3"], "numbered from 0, per call");
    let fetched = c.fetch_call(&call.sid).await.unwrap();
    assert_eq!(fetched.status.as_deref(), Some("completed"));
    assert!(fetched.end_time.is_some() && fetched.duration.is_some());

    // not answered, busy (callbacks shuffled: the same set, any order), a machine
    for (to, want) in [
        ("+15550000021", vec!["initiated", "ringing", "no-answer"]),
        ("+15550000022", vec!["initiated", "busy"]),
        (
            "+15550000024",
            vec!["initiated", "ringing", "in-progress", "completed"],
        ),
    ] {
        received.0.lock().unwrap().clear();
        let SendOutcome::Accepted(call) = c.create_call(&call_to(to, Some(&url), &url)).await
        else {
            panic!("{to}")
        };
        let got = wait_callbacks(&received, want.len()).await;
        let mut statuses = call_statuses(&got);
        statuses.sort();
        let mut want: Vec<String> = want.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(statuses, want, "{to}");
        assert!(
            got.iter().all(|(f, _, _)| get(f, "Digits").is_empty()),
            "{to}: no key pressed"
        );
        let end = c.fetch_call(&call.sid).await.unwrap();
        assert_eq!(
            end.status.as_deref(),
            Some(
                want.iter()
                    .find(|s| ringback::twilio::call::call_status_rank(s) == Some(4))
                    .map(String::as_str)
                    .unwrap()
            ),
            "{to}"
        );
        if to == "+15550000024" {
            assert_eq!(end.answered_by.as_deref(), Some("machine_end_beep"));
        }
    }

    // keys pressed at the second Gather only, every webhook sent twice
    received.0.lock().unwrap().clear();
    c.create_call(&call_to("+15550000023", Some(&url), &url))
        .await;
    let got = wait_callbacks(&received, 10).await;
    let keypad: Vec<&Callback> = got
        .iter()
        .filter(|(f, _, _)| !get(f, "Digits").is_empty())
        .collect();
    assert_eq!(keypad.len(), 2, "one post, sent twice");
    assert_eq!(keypad[0], keypad[1]);
    assert_eq!(get(&keypad[0].0, "Digits"), "2");
    assert!(signature::verify(
        TOKEN,
        &format!("{url}&n=1"),
        &keypad[0].0,
        &keypad[0].1
    ));

    // the list finds every call to a number since a time
    let found = c
        .list_calls_since(
            "+15558675310",
            since,
            PageLimits {
                page_size: 1,
                max_pages: 5,
            },
        )
        .await
        .unwrap();
    assert!(found.complete);
    assert_eq!(found.calls.len(), 1);
    assert_eq!(found.calls[0].sid, call.sid);
}

#[tokio::test]
async fn a_ringing_call_is_ended_and_a_lost_create_is_found_by_the_list() {
    let s = start_sim(
        r#"{"calls":[{"to":"+15550000031","step_ms":400}],
            "call_create":[{"to":"+15550000032","fault":"create_then_drop","times":1},
                           {"to":"+15550000033","fault":"rate_limited","retry_after_s":2},
                           {"to":"+15550000034","fault":"server_error","status":503,"created":true}]}"#,
    )
    .await;
    let c = client(&s.base, 2000);
    let (url, received) = start_receiver().await;
    let since = chrono::Utc::now() - chrono::Duration::seconds(2);

    // ended while it rings: no keypad post, its end posted, and ending it again is refused
    let SendOutcome::Accepted(call) = c
        .create_call(&call_to("+15550000031", Some(&url), &url))
        .await
    else {
        panic!()
    };
    let got = wait_callbacks(&received, 1).await;
    assert_eq!(call_statuses(&got), ["initiated"]);
    let ended = c.end_call(&call.sid).await.unwrap();
    assert_eq!(ended.status.as_deref(), Some("completed"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = received.0.lock().unwrap().clone();
    assert_eq!(
        call_statuses(&got),
        ["initiated", "completed"],
        "nothing after the hang-up"
    );
    assert!(got.iter().all(|(f, _, _)| get(f, "Digits").is_empty()));
    match c.end_call(&call.sid).await {
        Err(TwilioError::Api(e)) => assert_eq!(e.code, Some(21220)),
        other => panic!("ending an ended call: {other:?}"),
    }

    // the answer lost after the create: ambiguous, and the list shows the call it made
    match c.create_call(&call_to("+15550000032", None, &url)).await {
        SendOutcome::Ambiguous { .. } => {}
        other => panic!("a dropped answer is ambiguous: {other:?}"),
    }
    let found = c
        .list_calls_since("+15550000032", since, PageLimits::default())
        .await
        .unwrap();
    assert_eq!(
        found.calls.len(),
        1,
        "the call exists although its answer was lost"
    );

    // rate limited: retry later, nothing created; a 5xx that created the call: ambiguous
    match c.create_call(&call_to("+15550000033", None, &url)).await {
        SendOutcome::RetryLater { retry_after, .. } => {
            assert_eq!(retry_after, Some(Duration::from_secs(2)))
        }
        other => panic!("429: {other:?}"),
    }
    assert!(s.sim.calls.to("+15550000033").is_empty());
    assert!(matches!(
        c.create_call(&call_to("+15550000034", None, &url)).await,
        SendOutcome::Ambiguous { .. }
    ));
    assert_eq!(s.sim.calls.to("+15550000034").len(), 1);

    // Twilio's validation: no Twiml, no Url, no ApplicationSid
    let mut bare = call_to("+15558675310", None, &url);
    bare.twiml.clear();
    match c.create_call(&bare).await {
        SendOutcome::Permanent(e) => assert_eq!(e.code, Some(21200)),
        other => panic!("a call with nothing to say: {other:?}"),
    }
}

#[tokio::test]
async fn every_calls_request_and_answer_is_valid_for_twilios_spec() {
    let spec = load_spec();
    let s = start_sim("").await;
    let c = client(&s.base, 5000);
    let url = "https://ringback.example/api/notify/webhook/call-status?run=r1&step=2";
    let mut with_amd = call_to(
        "+15558675310",
        Some(url),
        "https://ringback.example/api/notify/webhook/voice?run=r1",
    );
    with_amd.machine_detection = true;
    let SendOutcome::Accepted(call) = c.create_call(&with_amd).await else {
        panic!()
    };
    c.fetch_call(&call.sid).await.unwrap();
    c.list_calls_since("+15558675310", minutes_ago(), PageLimits::default())
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while s
        .sim
        .calls
        .get(&call.sid)
        .and_then(|c| c.call.status)
        .as_deref()
        == Some("queued")
    {
        assert!(std::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let _ = c.end_call(&call.sid).await;

    let paths = &spec["paths"];
    let requests = s.sim.store.requests();
    assert_eq!(requests.len(), 4);
    for r in requests {
        let rest = r.path.trim_start_matches("/2010-04-01/Accounts/");
        let (template, path_params) = match rest.split_once("/Calls/") {
            Some((account, sid)) => (
                "/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json",
                vec![
                    ("AccountSid".to_string(), account.to_string()),
                    ("Sid".to_string(), sid.trim_end_matches(".json").to_string()),
                ],
            ),
            None => (
                "/2010-04-01/Accounts/{AccountSid}/Calls.json",
                vec![(
                    "AccountSid".to_string(),
                    rest.trim_end_matches("/Calls.json").to_string(),
                )],
            ),
        };
        let op = &paths[template][r.method.to_lowercase()];
        assert!(op.is_object(), "{} {template} is not in the spec", r.method);
        check_params(op, "path", &path_params);
        check_params(op, "query", &r.query);
        if r.method == "POST" {
            let schema = resolve(
                &spec,
                &op["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"],
            );
            for (name, value) in &r.form {
                let prop = &schema["properties"][name.as_str()];
                assert!(prop.is_object(), "form field {name} is not in the spec");
                let prop = if prop["type"] == "array" {
                    &prop["items"]
                } else {
                    prop
                };
                check_value(name, value, resolve(&spec, prop));
            }
            for req in schema["required"].as_array().into_iter().flatten() {
                assert!(
                    r.form.iter().any(|(n, _)| req == n.as_str()),
                    "required field {req} missing"
                );
            }
        }
    }
    // the call as the simulator answers it: every field it gives is Twilio's, of Twilio's type
    let body = get_json(
        &format!(
            "{}/2010-04-01/Accounts/{ACCOUNT}/Calls/{}.json",
            s.base, call.sid
        ),
        TOKEN,
    )
    .await;
    let props = spec["components"]["schemas"]["api.v2010.account.call"]["properties"]
        .as_object()
        .unwrap();
    for (name, value) in body.as_object().unwrap() {
        let prop = props
            .get(name)
            .unwrap_or_else(|| panic!("{name} is not in Twilio's call schema"));
        check_json(&spec, name, value, prop);
    }
}
