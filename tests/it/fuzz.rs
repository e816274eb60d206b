//! Fuzzing every parser of outside input, with a seeded mutation fuzzer of our own (no nightly
//! needed): valid samples are mutated (bytes flipped, cut, repeated, spliced with hostile
//! fragments) and each target must answer with a result or a clear error, never a panic, and
//! whatever it accepts must meet its invariants. The HTTP targets run through the real router
//! against a real redis-server: never a 5xx for any input.
//!
//! `RINGBACK_FUZZ_ITERATIONS` scales the run (default: a quick pass for CI); a failure prints
//! the seed, and `RINGBACK_FUZZ_SEED` replays it.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::{RedisServer, queue_name};
use ringback::callbacks::callback::CallbackRequest;
use ringback::edge::api::app;
use ringback::queue::job::{Job, JobOptions};
use ringback::twilio::message::is_e164;
use ringback::twilio::signature;
use serde_json::Value;
use tower::ServiceExt;

/// xorshift64*: small, seeded, reproducible.
struct Gen(u64);

impl Gen {
    fn new(seed: u64) -> Self {
        Gen(seed.max(1))
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

const HOSTILE: &[&str] = &[
    "\"",
    "\\",
    "\\u0000",
    "\u{0}",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "null",
    "true",
    "1e999",
    "-0",
    "18446744073709551616",
    "NaN",
    "\u{202e}",
    "\u{1F600}",
    "\u{FEFF}",
    "é",
    "%00",
    "%ZZ",
    "&",
    "=",
    "+",
    "+15550001111",
    "\r\n",
    "\t",
    "'",
    "<script>",
    "${x}",
    "{{x}}",
];

/// One mutation of `seed`, as a string (lossy where the bytes are no longer UTF-8).
fn mutate(g: &mut Gen, seed: &str) -> String {
    let mut b: Vec<u8> = seed.as_bytes().to_vec();
    for _ in 0..=g.below(4) {
        let at = g.below(b.len() + 1);
        match g.below(7) {
            0 if !b.is_empty() => {
                let i = g.below(b.len());
                b[i] ^= 1 << g.below(8);
            }
            1 => b.truncate(at),
            2 => {
                let frag = g.pick(HOSTILE).as_bytes().to_vec();
                b.splice(at..at, frag);
            }
            3 if !b.is_empty() => {
                let end = (at + g.below(16)).min(b.len());
                let piece = b[at.min(end)..end].to_vec();
                for _ in 0..g.below(50) {
                    b.splice(at..at, piece.iter().copied());
                }
            }
            4 if !b.is_empty() => {
                let i = g.below(b.len());
                b.remove(i);
            }
            5 => {
                let byte = g.next() as u8;
                b.insert(at, byte);
            }
            _ => {
                let frag = g.pick(HOSTILE).repeat(1 + g.below(200));
                b.splice(at..at, frag.into_bytes());
            }
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

fn iterations(default: usize) -> usize {
    std::env::var("RINGBACK_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `check` on `n` generated cases; a panic names the seed that replays it.
fn fuzz(name: &str, n: usize, mut check: impl FnMut(&mut Gen)) {
    let base = std::env::var("RINGBACK_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_0000_u64 + name.len() as u64);
    for i in 0..n as u64 {
        let seed = base.wrapping_add(i);
        let mut g = Gen::new(seed);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&mut g)));
        if let Err(e) = r {
            panic!("fuzz target {name} failed at RINGBACK_FUZZ_SEED={seed}: {e:?}");
        }
    }
}

const CALLBACK_SEEDS: &[&str] = &[
    r#"{"runId":"run-1","to":"+15558675310","body":"Run 1 finished: approve the release"}"#,
    r#"{"runId":"r","to":"+447700900123","body":"x","from":"+15005550006"}"#,
    r#"{"runId":"a:b:c","to":"+15558675310","body":"Ünïcødé 😀","from":null}"#,
    r#"[{"runId":"run-1"}]"#,
    r#"{"runId":1,"to":15558675310,"body":{"x":1}}"#,
];

#[test]
fn callback_data_is_parsed_or_refused_with_its_field_named() {
    fuzz("callback", iterations(20_000), |g| {
        let input = {
            let seed = *g.pick(CALLBACK_SEEDS);
            mutate(g, seed)
        };
        match CallbackRequest::parse(&input) {
            Ok(req) => {
                let n = req.run_id.chars().count();
                assert!(
                    (1..=ringback::callbacks::callback::MAX_RUN_ID).contains(&n),
                    "runId accepted: {:?}",
                    req.run_id
                );
                assert!(
                    !req.run_id.chars().any(char::is_control),
                    "runId accepted: {:?}",
                    req.run_id
                );
                // every record of the run in its claim key's slot, whatever the runId holds
                let w = ringback::store::keys::WindowKeys::new("agent-callback:", &req.run_id);
                let slot = |k: &str| ringback::store::slots::slot(k.as_bytes());
                assert_eq!(slot(&w.attempt), slot(&w.claim), "{:?}", req.run_id);
                assert_eq!(slot(&w.record), slot(&w.claim), "{:?}", req.run_id);
                assert!(is_e164(&req.to), "to accepted: {:?}", req.to);
                assert!(!req.body.trim().is_empty() && req.body.chars().count() <= 1600);
                assert!(req.from.as_deref().is_none_or(is_e164));
            }
            Err(reason) => assert!(
                reason.contains('`') || reason.starts_with("job data"),
                "an error a person can act on, naming the field: {reason:?} for {input:?}"
            ),
        }
    });
}

const OPTS_SEEDS: &[&str] = &[
    r#"{"attempts":5,"backoff":{"type":"exponential","delay":1000},"removeOnComplete":{"count":10000}}"#,
    r#"{"attempts":3,"backoff":{"type":"fixed","delay":10,"jitter":0.5},"lifo":true,"priority":2}"#,
    r#"{"removeOnComplete":true,"removeOnFail":{"age":3600,"count":10,"limit":5},"delay":100}"#,
    r#"{"repeat":{"every":1000,"count":1},"repeatJobKey":"k","attempts":0,"backoff":7}"#,
    r#"{"deduplication":{"id":"d","ttl":100},"parent":{"id":"p","queue":"bull:q"},"fpof":true}"#,
];

#[test]
fn stored_jobs_of_any_shape_decode_without_panicking() {
    let fields = [
        "name",
        "data",
        "opts",
        "timestamp",
        "delay",
        "priority",
        "processedOn",
        "atm",
        "ats",
        "stc",
        "defa",
        "deid",
        "parentKey",
        "parent",
        "rjk",
        "pb",
    ];
    fuzz("job", iterations(20_000), |g| {
        let opts = {
            let seed = *g.pick(OPTS_SEEDS);
            mutate(g, seed)
        };
        let parsed = JobOptions::parse(&opts);
        for made in [0, 1, 2, 30, u32::MAX] {
            let _ = parsed.backoff.as_ref().map(|b| b.delay_ms(made, 0.5));
        }
        let mut stored = vec![("opts".to_string(), opts)];
        for _ in 0..g.below(12) {
            let f = g.pick(&fields).to_string();
            let seed = *g.pick(&["0", "12", "-1", "1e3", "x", "{}", "\"s\""]);
            stored.push((f, mutate(g, seed)));
        }
        let job = Job::from_fields(mutate(g, "42"), stored);
        let _ = job.attempt();
        // and every decision the worker takes on it, as it would after the processor ran
        for outcome in [
            ringback::Outcome::fail("boom"),
            ringback::Outcome::unrecoverable("no"),
            ringback::Outcome::Completed(Value::Null),
        ] {
            let _ = ringback::queue::worker::decide(&job, outcome, 0.5);
        }
    });
}

#[test]
fn twilio_answers_of_any_shape_are_classified() {
    let bodies = [
        r#"{"sid":"SM0123456789abcdef0123456789abcdef","status":"queued","to":"+15558675310"}"#,
        r#"{"code":21211,"message":"The 'To' number +1555 is not valid.","more_info":"https://www.twilio.com/docs/errors/21211","status":400}"#,
        r#"{"code":20429,"message":"Too Many Requests","status":429}"#,
        "<html>Bad Gateway</html>",
    ];
    fuzz("twilio", iterations(20_000), |g| {
        let body = {
            let seed = *g.pick(&bodies);
            mutate(g, seed)
        };
        let status = *g.pick(&[
            200u16, 201, 204, 400, 401, 404, 409, 429, 500, 502, 503, 0, 999,
        ]);
        let _ = ringback::twilio::client::classify_response(status, None, body.as_bytes());
    });
}

#[test]
fn signatures_of_any_input_verify_only_when_signed() {
    fuzz("signature", iterations(5_000), |g| {
        let url = mutate(
            g,
            "https://ringback.example.com:443/api/notify/webhook/status?runId=r1",
        );
        let params: Vec<(String, String)> = (0..g.below(6))
            .map(|_| (mutate(g, "MessageStatus"), mutate(g, "delivered")))
            .collect();
        let token = mutate(g, "auth-token");
        // Twilio never sends a fragment, and the check drops one, as the SDKs do
        let url = url.split('#').next().unwrap_or_default().to_string();
        let sig = signature::sign(&token, &url, &params);
        assert!(signature::verify(&token, &url, &params, &sig));
        let forged = mutate(g, &sig);
        if forged != sig {
            // a signature is compared as text, exactly: any other text is refused
            assert!(
                !signature::verify(&token, &url, &params, &forged),
                "{forged:?} verified in place of {sig:?}"
            );
        }
        assert!(!signature::verify(
            &format!("{token}x"),
            &url,
            &params,
            &sig
        ));
        let _ = signature::url_variants(&url);
    });
}

#[test]
fn phone_numbers_never_survive_redaction() {
    fuzz("redact", iterations(20_000), |g| {
        let number = format!("+1555{:07}", g.below(10_000_000));
        let text = format!(
            "{} {} {}",
            mutate(g, "The 'To' number"),
            number,
            mutate(g, "is not valid")
        );
        let out = ringback::redact::redact(&text);
        assert!(!out.contains(&number), "{number} survived in {out:?}");
    });
}

#[test]
fn json_as_javascript_writes_it_reads_back_the_same() {
    fuzz("json", iterations(20_000), |g| {
        let input = {
            let seed = *g.pick(CALLBACK_SEEDS);
            mutate(g, seed)
        };
        if let Ok(v) = serde_json::from_str::<Value>(&input) {
            let out = ringback::store::json::stringify(&v);
            let back: Value =
                serde_json::from_str(&out).unwrap_or_else(|e| panic!("{out:?} is not JSON: {e}"));
            assert!(same(&v, &back), "round trip of {input:?} gave {out:?}");
        }
    });
}

/// Equal as JavaScript sees JSON: numbers as doubles, objects by key.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| same(p, q)))
        }
        _ => a == b,
    }
}

const TOKEN: &str = common::TWILIO_TOKEN;
const API_TOKEN: &str = common::API_TOKEN;
const PUBLIC: &str = common::PUBLIC_URL;

#[tokio::test]
async fn the_http_api_never_answers_5xx_to_any_input() {
    let server = RedisServer::start();
    let q = queue_name("fuzz");
    let router = app(common::api_state(&server, &q).await);
    let statuses = [
        "queued",
        "sending",
        "sent",
        "delivered",
        "undelivered",
        "failed",
        "read",
        "canceled",
    ];
    let n = iterations(20_000) / 20;
    let base = std::env::var("RINGBACK_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0xa11_0000_u64);
    let mut seen = std::collections::BTreeMap::new();
    for i in 0..n as u64 {
        let seed = base.wrapping_add(i);
        let mut g = Gen::new(seed);
        // status callbacks signed with the right token, so the fuzz reaches the receipt script
        let sid = if g.below(4) == 0 {
            mutate(&mut g, "SM0123456789abcdef0123456789abcdef")
        } else {
            format!("SM{:032x}", g.next() as u128 * 7919)
        };
        let status = {
            let seed = *g.pick(&statuses);
            mutate(&mut g, seed)
        };
        let run = mutate(&mut g, "r1");
        let mut params = vec![
            ("MessageSid".to_string(), sid),
            ("MessageStatus".to_string(), status),
        ];
        if g.below(2) == 0 {
            params.push(("ErrorCode".into(), mutate(&mut g, "30003")));
        }
        if g.below(3) == 0 {
            params.push(("RawDlrDoneDate".into(), mutate(&mut g, "2411301205")));
        }
        let query = serde_urlencoded::to_string([("runId", run.as_str())]).unwrap();
        let path = format!("/api/notify/webhook/status?{query}");
        let sig = signature::sign(TOKEN, &format!("{PUBLIC}{path}"), &params);
        let body = serde_urlencoded::to_string(&params).unwrap();
        let req = Request::post(&path)
            .header("content-type", "application/x-www-form-urlencoded")
            .header("X-Twilio-Signature", sig)
            .body(Body::from(body))
            .unwrap();
        let code = router.clone().oneshot(req).await.unwrap().status();
        assert!(
            matches!(code, StatusCode::OK | StatusCode::BAD_REQUEST),
            "status callback {params:?} (RINGBACK_FUZZ_SEED={seed}) answered {code}"
        );
        *seen.entry(("webhook", code.as_u16())).or_insert(0) += 1;

        // the legacy send call, authorized, with any body
        let body = {
            let seed = *g.pick(CALLBACK_SEEDS);
            mutate(&mut g, seed)
        };
        let req = Request::post("/api/notify/send")
            .header("content-type", "application/json")
            .header("Authorization", format!("Bearer {API_TOKEN}"))
            .body(Body::from(body.clone()))
            .unwrap();
        let code = router.clone().oneshot(req).await.unwrap().status();
        assert!(
            matches!(code, StatusCode::ACCEPTED | StatusCode::BAD_REQUEST),
            "send {body:?} (RINGBACK_FUZZ_SEED={seed}) answered {code}"
        );
        *seen.entry(("send", code.as_u16())).or_insert(0) += 1;
    }
    // the fuzz must have reached both the accepting and the refusing paths of both routes
    for key in [
        ("webhook", 200),
        ("webhook", 400),
        ("send", 202),
        ("send", 400),
    ] {
        assert!(
            seen.get(&key).is_some_and(|&c| c > 0),
            "{key:?} never reached: {seen:?}"
        );
    }
}
