//! Traces over OpenTelemetry, the ecosystem's way: a job a producer added with BullMQ's
//! OpenTelemetry add-on (`bullmq-otel`) carries its trace context in its options (`tm`, a JSON
//! object of W3C `traceparent`/`tracestate`), and is processed here in a span of the same trace,
//! as a Node `Worker` with the add-on processes it: `process <queue>` (consumer), with one child
//! span per logical step (the claim, the Twilio call, the sent marker, the finishing call). A
//! retry, a backoff delay and a final failure write the context of their own span back on the
//! job (`tm`), as Node does.
//!
//! Off unless the edge installed a tracer ([`install`], from the standard `OTEL_*` settings):
//! then every function here returns at its first branch, one atomic load, and no span, string or
//! context is made. The OpenTelemetry API is used directly rather than through `tracing`'s
//! bridge: spans need remote parents read from job options and links to contexts read from a
//! URL, which the API gives in one call each, and ringback's log events stay out of traces.

use std::collections::HashMap;
use std::sync::OnceLock;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{
    Link, SpanKind, Status, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

static TRACER: OnceLock<SdkTracer> = OnceLock::new();

/// Turns traces on for this process: every span from now on goes to `provider`'s exporter.
/// The first call wins.
pub fn install(provider: &SdkTracerProvider) {
    let _ = TRACER.set(provider.tracer("ringback"));
}

/// Whether traces are on.
pub fn enabled() -> bool {
    TRACER.get().is_some()
}

/// The context a `tm` job option (or any W3C carrier as JSON) names, if it names one.
fn extract(carrier: &str) -> Option<Context> {
    let map: HashMap<String, String> = serde_json::from_str(carrier).ok()?;
    let cx = TraceContextPropagator::new().extract(&map);
    cx.span().span_context().is_valid().then_some(cx)
}

/// The W3C carrier of `cx` as JSON, the form `bullmq-otel` stores in `tm`. An empty
/// `tracestate` is left out, as OpenTelemetry's JavaScript propagator leaves it out.
fn inject(cx: &Context) -> String {
    let mut map = HashMap::new();
    TraceContextPropagator::new().inject_context(cx, &mut map);
    // ordered, `traceparent` first, as the JavaScript propagator writes it
    let map: std::collections::BTreeMap<String, String> =
        map.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    serde_json::to_string(&map).unwrap_or_default()
}

/// A span of this process, ended when its owner drops it. `None` inside when traces are off.
#[derive(Default, Debug)]
pub struct Step {
    cx: Option<Context>,
    /// A shared handle ([`Step::share`]) does not end the span.
    shared: bool,
}

impl Step {
    /// A point in the span's time, such as what a step found.
    pub fn event(&self, name: &'static str) {
        if let Some(cx) = &self.cx {
            cx.span().add_event(name, vec![]);
        }
    }

    /// An attribute of the span (never a phone number or a body).
    pub fn attribute(&self, key: &'static str, value: impl Into<opentelemetry::Value>) {
        if let Some(cx) = &self.cx {
            cx.span().set_attribute(KeyValue::new(key, value.into()));
        }
    }

    /// Marks the span failed, with `reason`.
    pub fn error(&self, reason: &str) {
        if let Some(cx) = &self.cx {
            cx.span().set_status(Status::error(reason.to_string()));
        }
    }

    /// A child of this span.
    pub fn child(&self, name: impl Into<std::borrow::Cow<'static, str>>) -> Step {
        match (&self.cx, TRACER.get()) {
            (Some(cx), Some(tracer)) => {
                let span = tracer
                    .span_builder(name)
                    .with_kind(SpanKind::Internal)
                    .start_with_context(tracer, cx);
                Step {
                    cx: Some(cx.with_span(span)),
                    shared: false,
                }
            }
            _ => Step::default(),
        }
    }

    /// A handle on the same span for code that adds children and events to it; the span ends
    /// when its owner drops it.
    pub fn share(&self) -> Step {
        Step {
            cx: self.cx.clone(),
            shared: true,
        }
    }

    /// This span's context as a W3C `traceparent` header value.
    pub fn traceparent(&self) -> Option<String> {
        let cx = self.cx.as_ref()?;
        let mut map = HashMap::new();
        TraceContextPropagator::new().inject_context(cx, &mut map);
        map.remove("traceparent")
    }

    /// This span's context as `bullmq-otel` writes it on a job (`tm`).
    pub fn metadata(&self) -> Option<String> {
        self.cx.as_ref().map(inject)
    }
}

/// A clone is a shared handle: the owner's drop ends the span.
impl Clone for Step {
    fn clone(&self) -> Self {
        self.share()
    }
}

impl Drop for Step {
    fn drop(&mut self) {
        if let Some(cx) = self.cx.as_ref().filter(|_| !self.shared) {
            cx.span().end();
        }
    }
}

/// The span a job is processed in, as a Node `Worker` with `bullmq-otel` names it
/// (`process <queue>`, kind consumer, BullMQ's attribute names), continuing the trace of the
/// job's `tm` unless the job asks to omit it (`omc`).
pub fn process(
    queue: &str,
    job_id: &str,
    job_name: &str,
    attempts_made: u32,
    tm: Option<&str>,
    omit_context: bool,
    worker_name: Option<&str>,
) -> Step {
    let Some(tracer) = TRACER.get() else {
        return Step::default();
    };
    let parent = tm
        .filter(|_| !omit_context)
        .and_then(extract)
        .unwrap_or_default();
    let mut attributes = vec![
        KeyValue::new("bullmq.queue.name", queue.to_string()),
        KeyValue::new("bullmq.queue.operation", "process"),
        KeyValue::new("bullmq.job.id", job_id.to_string()),
        KeyValue::new("bullmq.job.name", job_name.to_string()),
        KeyValue::new("bullmq.job.attempts.made", i64::from(attempts_made)),
    ];
    if let Some(name) = worker_name {
        attributes.push(KeyValue::new("bullmq.worker.name", name.to_string()));
    }
    let span = tracer
        .span_builder(format!("process {queue}"))
        .with_kind(SpanKind::Consumer)
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    Step {
        cx: Some(parent.with_span(span)),
        shared: false,
    }
}

/// A span of its own trace, linked to the span `traceparent` names (a status callback, minutes
/// after the send, links to the run's trace instead of growing it).
pub fn linked(name: &'static str, traceparent: Option<&str>) -> Step {
    let Some(tracer) = TRACER.get() else {
        return Step::default();
    };
    let links: Vec<Link> = traceparent
        .and_then(|tp| {
            let map = HashMap::from([("traceparent".to_string(), tp.to_string())]);
            let cx = TraceContextPropagator::new().extract(&map);
            let sc = cx.span().span_context().clone();
            sc.is_valid().then(|| Link::with_context(sc))
        })
        .into_iter()
        .collect();
    let span = tracer
        .span_builder(name)
        .with_kind(SpanKind::Server)
        .with_links(links)
        .start(tracer);
    Step {
        cx: Some(Context::new().with_span(span)),
        shared: false,
    }
}

/// A placeholder for code paths that run outside a job (the sweep, `resend`).
pub static OFF: Step = Step {
    cx: None,
    shared: true,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_carrier_round_trips_and_garbage_names_no_context() {
        let tm = r#"{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}"#;
        let cx = extract(tm).expect("a context");
        assert_eq!(
            cx.span().span_context().trace_id().to_string(),
            "0af7651916cd43dd8448eb211c80319c"
        );
        let carrier = inject(&cx);
        assert!(carrier.contains("0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331"));
        assert!(
            !carrier.contains("tracestate"),
            "no empty tracestate: {carrier}"
        );
        for bad in [
            "",
            "{}",
            "null",
            r#"{"traceparent":"00-zz-yy-01"}"#,
            "not json",
        ] {
            assert!(extract(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn off_makes_nothing() {
        let step = process("q", "1", "n", 0, None, false, None);
        assert!(step.traceparent().is_none() && step.metadata().is_none());
        assert!(step.child("claim").traceparent().is_none());
    }
}
