//! Traces as a team with an OpenTelemetry collector sees them: a real Node producer with
//! BullMQ's add-on (`bullmq-otel`) adds callbacks inside its own span; the `ringback worker`
//! binary, given only the standard `OTEL_*` variables, exports over OTLP/HTTP a `process <queue>`
//! span in the producer's trace, child of the producer's span, with the steps under it; a final
//! failure writes its span's context on the job (`tm`) as a Node worker does; and `ringback
//! serve` records each status callback in a span of its own trace linked to the run's. The
//! collector is an OTLP/HTTP receiver in the test that decodes what it is sent.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::callbacks::*;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;
use redis::AsyncCommands;

/// An OTLP/HTTP receiver: every span posted to `/v1/traces`, decoded.
async fn receiver() -> (String, Arc<Mutex<Vec<Span>>>) {
    let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
    let kept = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        axum::routing::post(move |body: axum::body::Bytes| {
            let kept = kept.clone();
            async move {
                let request = ExportTraceServiceRequest::decode(body).expect("OTLP protobuf");
                let mut kept = kept.lock().unwrap();
                for rs in request.resource_spans {
                    for ss in rs.scope_spans {
                        kept.extend(ss.spans);
                    }
                }
                // an empty ExportTraceServiceResponse
                (
                    [(axum::http::header::CONTENT_TYPE, "application/x-protobuf")],
                    Vec::<u8>::new(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (base, spans)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// (trace id, span id) of a `tm` carrier's `traceparent`.
fn traceparent(tm: &str) -> (String, String) {
    let carrier: serde_json::Value = serde_json::from_str(tm).expect("tm is JSON");
    let tp = carrier["traceparent"].as_str().expect("a traceparent");
    let parts: Vec<&str> = tp.split('-').collect();
    (parts[1].to_string(), parts[2].to_string())
}

/// Waits until `found` finds what it looks for in the received spans.
async fn spans_with<T>(
    spans: &Arc<Mutex<Vec<Span>>>,
    what: &str,
    found: impl Fn(&[Span]) -> Option<T>,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(t) = found(&spans.lock().unwrap()) {
            return t;
        }
        if tokio::time::Instant::now() > deadline {
            let names: Vec<String> = spans
                .lock()
                .unwrap()
                .iter()
                .map(|s| {
                    format!(
                        "{} trace {} parent {}",
                        s.name,
                        hex(&s.trace_id),
                        hex(&s.parent_span_id)
                    )
                })
                .collect();
            panic!("no {what} among the spans received: {names:#?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_producers_trace_continues_in_ringback_and_its_receipt_links_to_it() {
    let e = env("otel", "").await;
    let (collector, spans) = receiver().await;
    let otel = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", collector.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "200"),
    ];

    // serve, for the status callbacks, on a port of its own
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let api = format!("http://127.0.0.1:{port}");
    let _ = e
        .status_callback
        .set(format!("{api}/api/notify/webhook/status"));
    let mut serve = ringback_command(&e, "serve", Timings::Compressed);
    serve
        .env("RINGBACK_LISTEN", format!("127.0.0.1:{port}"))
        .env("RINGBACK_PUBLIC_URL", &api)
        .env("RINGBACK_API_TOKEN", "api-token-0123456789")
        .env("OTEL_SERVICE_NAME", "ringback-serve")
        .envs(otel);
    let _serve = Proc(serve.spawn().expect("ringback serve"));
    let http = reqwest::Client::new();
    let ready = tokio::time::Instant::now() + Duration::from_secs(20);
    while !http
        .get(format!("{api}/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(tokio::time::Instant::now() < ready, "serve never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let _worker = spawn_worker(&e, None, Timings::Compressed, &otel);

    let root = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/node-harness/bin/otel-producer.js"
    );
    let jobs = serde_json::json!([
        {"runId": "otel-sent", "to": TO, "body": body("otel-sent")},
        {"runId": "otel-refused", "to": "12", "body": "not a number Twilio takes"},
    ]);
    let out = tokio::process::Command::new("node")
        .arg(root)
        .env("REDIS_URL", e.redis.url())
        .env("QUEUE", &e.queue)
        .env("JOBS", jobs.to_string())
        .output()
        .await
        .expect("node runs (the Node harness is installed by scripts/lib.sh ensure_node_harness)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let added: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let (sent_id, sent_tm) = (
        added[0]["jobId"].as_str().unwrap().to_string(),
        added[0]["tm"]
            .as_str()
            .expect("bullmq-otel stored a context")
            .to_string(),
    );
    let refused_id = added[1]["jobId"].as_str().unwrap().to_string();
    let (trace_id, producer_span) = traceparent(&sent_tm);

    let (state, _) = finished(&e, &sent_id).await;
    assert_eq!(state, "completed");
    let (state, refused) = finished(&e, &refused_id).await;
    assert_eq!(state, "failed");

    // the job's span: in the producer's trace, child of the span that added the job
    let queue = e.queue.clone();
    let process = spans_with(&spans, "process span in the producer's trace", |all| {
        all.iter()
            .find(|s| {
                s.name == format!("process {queue}")
                    && hex(&s.trace_id) == trace_id
                    && hex(&s.parent_span_id) == producer_span
                    && s.attributes.iter().any(|a| {
                        a.key == "bullmq.job.id"
                            && format!("{:?}", a.value).contains(&format!("\"{sent_id}\""))
                    })
            })
            .cloned()
    })
    .await;
    // its steps under it, none with a number or a body in its attributes
    for step in ["claim", "twilio messages.create", "finish"] {
        let s = spans_with(&spans, step, |all| {
            all.iter()
                .find(|s| s.name == step && s.parent_span_id == process.span_id)
                .cloned()
        })
        .await;
        assert_eq!(s.trace_id, process.trace_id);
        let attrs = format!("{:?}", s.attributes);
        assert!(
            !attrs.contains(TO) && !attrs.contains("otel-sent finished"),
            "{step}: {attrs}"
        );
    }

    // a final failure writes the context of its own span on the job, as Node does
    let tm = refused.get("tm").expect("tm written on the failed job");
    let (failed_trace, failed_span) = traceparent(tm);
    assert_eq!(
        failed_trace, trace_id,
        "the failure's span is in the producer's trace"
    );
    assert_ne!(failed_span, producer_span);
    spans_with(&spans, "the failure's span", |all| {
        all.iter()
            .find(|s| s.name == format!("fail {queue}") && hex(&s.span_id) == failed_span)
            .map(|_| ())
    })
    .await;

    // the status callback, later: a span of its own trace, linked to the job's span
    spans_with(&spans, "status callback span linked to the run", |all| {
        all.iter()
            .find(|s| {
                s.name == "status callback"
                    && s.trace_id != process.trace_id
                    && s.links
                        .iter()
                        .any(|l| l.trace_id == process.trace_id && l.span_id == process.span_id)
            })
            .map(|_| ())
    })
    .await;
    assert_eq!(texts(&e, "otel-sent"), 1);
    let mut c = e.redis.conn().await;
    let sent_tm_now: Option<String> = c.hget(e.keys.job(&sent_id), "tm").await.unwrap();
    assert_eq!(
        sent_tm_now, None,
        "a completion writes no tm (Node writes it on failures only)"
    );
}
