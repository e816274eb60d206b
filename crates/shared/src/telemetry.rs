//! Telemetry: the process's labelled metric families, recorded on every floor and exposed by the
//! edge (`edge::metrics` builds the one registry both `/metrics` endpoints encode).
//!
//! Why process-wide: a ringback process runs one worker or one `serve` for one queue, and the
//! places that record (the Twilio client, the escalator, the API handlers) are built in several
//! places; threading a handle through each constructor would buy nothing a deployment can see.
//! Counters that belong to one worker instance (attempts, locks, open attempts) stay on that
//! instance (`ringback_queue::worker::WorkerStats`, `ringback_callbacks::sms::SmsStats`) and are read at scrape time.
//! Tests that run several instances in one process read these families as deltas.
//!
//! Label values are bounded: operations, reasons, scopes and routes are fixed words; Twilio error
//! codes are numbers Twilio defines (at most a few hundred); statuses are HTTP codes.

use std::sync::OnceLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;

/// The `operation` label of `ringback_twilio_request_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OperationLabel {
    /// The Twilio API call: `create`, `fetch` or `list`.
    pub operation: &'static str,
}

/// The `code` label of the Twilio error and delivery error counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CodeLabel {
    /// Twilio's error code (`30003`), or a word when it gave none (`http_500`, `none`).
    pub code: String,
}

/// The `reason` label of `ringback_escalations_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReasonLabel {
    /// The escalation's kind, one of [`ESCALATION_REASONS`].
    pub reason: &'static str,
}

/// The `route` and `status` labels of `ringback_http_responses_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RouteLabels {
    /// The matched route's pattern (`/api/notify/callbacks/{run_id}`), not the request path.
    pub route: String,
    /// The HTTP status code of the response.
    pub status: u16,
}

/// The `outcome` label of the status-callback, inbound-message and forward counters.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    /// What the request did, in a fixed word per family (`applied`, `answer`, `ok`, …).
    pub outcome: String,
}

/// The `created` label of `ringback_sends_enqueued_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CreatedLabel {
    /// `true` when the call added a new job, `false` when the run's job already existed.
    pub created: &'static str,
}

/// The `script` and `kind` labels of `ringback_redis_errors_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RedisErrorLabels {
    /// The Lua script's name (`move_to_active`).
    pub script: &'static str,
    /// The error's kind in a word (`oom`, `readonly`, `io`, `timeout`, `crossslot`, …).
    pub kind: String,
}

/// The `scope` label of `ringback_rate_limited_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ScopeLabel {
    /// Which limit refused the send: `token` (per API token) or `destination` (per number).
    pub scope: &'static str,
}

/// The attributes BullMQ's own job metrics carry (`bullmq.queue.name`, `bullmq.job.name`,
/// `bullmq.job.state`), as OpenTelemetry's Prometheus exporter names them.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct BullmqJobLabels {
    /// `bullmq.queue.name`: the queue's name (without the prefix).
    pub bullmq_queue_name: String,
    /// `bullmq.job.name`: the job's name as the producer gave it.
    pub bullmq_job_name: String,
    /// `bullmq.job.state`: how the attempt ended (`completed`, `failed`, `delayed`, `retried`).
    pub bullmq_job_state: &'static str,
}

/// The `reason` values of `ringback_escalations_total`, pre-created at zero: the labels of the
/// callback floor's `EscalationKind` (its tests keep the two lists equal).
pub const ESCALATION_REASONS: [&str; 10] = [
    "undelivered",
    "permanent",
    "unknown",
    "unknown_settled",
    "receipt_missing",
    "drain",
    "held",
    "invalid",
    "unacknowledged",
    "rollback",
];

/// The `channel` and `outcome` labels of `ringback_ladder_steps_total`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LadderLabels {
    /// `call`, `text`, or `ladder` for a ladder's end.
    pub channel: &'static str,
    /// `placed`, `skipped`, `queued`, `answered`, `not_answered`, `acknowledged`,
    /// `unacknowledged`, `legacy_sent` (a ladder opened late: the legacy worker sent its text),
    /// `ended_by_drain`.
    pub outcome: &'static str,
}

/// The label pairs of `ringback_ladder_steps_total`, pre-created at zero.
pub const LADDER_OUTCOMES: [(&str, &str); 9] = [
    ("call", "placed"),
    ("call", "skipped"),
    ("call", "answered"),
    ("call", "not_answered"),
    ("text", "queued"),
    ("ladder", "acknowledged"),
    ("ladder", "unacknowledged"),
    ("ladder", "legacy_sent"),
    ("ladder", "ended_by_drain"),
];

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

/// Every labelled family. Cloning shares them (each is an `Arc` inside).
#[derive(Clone, Debug)]
pub struct Telemetry {
    /// `ringback_twilio_request_duration_seconds{operation}`: create, fetch, list.
    pub twilio_seconds: HistogramFamily<OperationLabel>,
    /// `ringback_twilio_errors_total{code}`: Twilio's error code, `http_<status>` when the body
    /// carries none; when no answer came, `connect` (a create that could not connect), `no_answer`
    /// (a create timed out or cut off after sending) or `transport` (a lookup); `request` for a
    /// create that could not be built (`crates/twilio/src/classify.rs`).
    pub twilio_errors: Family<CodeLabel, Counter>,
    /// `ringback_delivery_errors_total{code}`: messages whose delivery ended failed, by the error
    /// code Twilio reported (a status callback's or a poll's), once per message.
    pub delivery_errors: Family<CodeLabel, Counter>,
    /// `ringback_escalations_total{reason}`, counted where the escalation is created.
    pub escalations: Family<ReasonLabel, Counter>,
    /// `ringback_ladder_steps_total{channel,outcome}`: escalation ladders' steps and ends.
    pub ladder_steps: Family<LadderLabels, Counter>,
    /// `ringback_http_responses_total{route,status}` of `ringback serve`.
    pub http_responses: Family<RouteLabels, Counter>,
    /// `ringback_status_callbacks_total{outcome}`: what each signed status callback did.
    pub status_callbacks: Family<OutcomeLabel, Counter>,
    /// `ringback_inbound_messages_total{outcome}`: signed inbound messages by what they were
    /// matched to (`answer`, `late`, `ambiguous`, `unmatched`, `opt_out`) or `repeat`.
    pub inbound_messages: Family<OutcomeLabel, Counter>,
    /// `ringback_inbound_forwards_total{outcome}`: forwards of unmatched messages (`ok`,
    /// `refused`, `error`).
    pub inbound_forwards: Family<OutcomeLabel, Counter>,
    /// `ringback_sends_enqueued_total{created}`: legacy send calls.
    pub sends_enqueued: Family<CreatedLabel, Counter>,
    /// `ringback_bad_signatures_total`: status callbacks and inbound messages refused for their
    /// signature.
    pub bad_signatures: Counter,
    /// `ringback_rate_limited_total{scope}`: sends refused by a rate limit (token, destination).
    pub rate_limited: Family<ScopeLabel, Counter>,
    /// `ringback_redis_errors_total{script,kind}`: script calls Redis refused or never
    /// answered (`oom` at `maxmemory`, `readonly` on a replica, `io`, `timeout`, …).
    pub redis_errors: Family<RedisErrorLabels, Counter>,
    /// BullMQ's OpenTelemetry job metrics under the names its Prometheus exporter gives them,
    /// so the charts a team keeps for Node workers count ringback's jobs too:
    /// `bullmq_jobs_{completed,failed,delayed,retried}_total` and
    /// `bullmq_job_duration_seconds` (BullMQ's `bullmq.job.duration`, milliseconds there, in
    /// Prometheus's base unit here; from `processedOn` to the finishing call).
    pub bullmq_completed: Family<BullmqJobLabels, Counter>,
    /// `bullmq_jobs_failed_total`: jobs failed for good (no retries left, or unrecoverable).
    pub bullmq_failed: Family<BullmqJobLabels, Counter>,
    /// `bullmq_jobs_delayed_total`: attempts that ended in the delayed set (backoff or a
    /// processor's requested delay).
    pub bullmq_delayed: Family<BullmqJobLabels, Counter>,
    /// `bullmq_jobs_retried_total`: failed attempts sent straight back to wait for a retry.
    pub bullmq_retried: Family<BullmqJobLabels, Counter>,
    /// `bullmq_job_duration_seconds`: from `processedOn` to the finishing call, in seconds.
    pub bullmq_duration: HistogramFamily<BullmqJobLabels>,
}

fn duration_buckets() -> Histogram {
    // 1 ms … ~65 s: a callback takes one Twilio call; the tail is retries and slow answers
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.001, 2.0, 17,
    ))
}

fn twilio_buckets() -> Histogram {
    // 5 ms … ~20 s: Twilio answers in 100–500 ms; the tail is what the window cares about.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.005, 2.0, 13,
    ))
}

impl Default for Telemetry {
    /// Every fixed label value starts at zero, so a series exists before its first event
    /// (`increase()` and alert rules see the first one, and a scrape lists every family).
    fn default() -> Self {
        let t = Self::empty();
        for reason in ESCALATION_REASONS {
            let _ = t.escalations.get_or_create(&ReasonLabel { reason });
        }
        for (channel, outcome) in LADDER_OUTCOMES {
            let _ = t
                .ladder_steps
                .get_or_create(&LadderLabels { channel, outcome });
        }
        // receipt_apply's outcomes; `other` (a status for a second message of a run) is what
        // the RingbackSecondText alert watches
        for outcome in [
            "applied", "repeat", "stale", "same", "conflict", "other", "unknown",
        ] {
            let _ = t.status_callbacks.get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            });
        }
        for outcome in [
            "answer",
            "late",
            "ambiguous",
            "unmatched",
            "opt_out",
            "repeat",
        ] {
            let _ = t.inbound_messages.get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            });
        }
        for outcome in ["ok", "refused", "error"] {
            let _ = t.inbound_forwards.get_or_create(&OutcomeLabel {
                outcome: outcome.into(),
            });
        }
        // the delivery codes that are the deployment's fault (RingbackDeliveryFailureBurst)
        for code in ["30001", "30002", "30032", "30034"] {
            let _ = t
                .delivery_errors
                .get_or_create(&CodeLabel { code: code.into() });
        }
        for scope in ["token", "destination"] {
            let _ = t.rate_limited.get_or_create(&ScopeLabel { scope });
        }
        for created in ["true", "false"] {
            let _ = t.sends_enqueued.get_or_create(&CreatedLabel { created });
        }
        for operation in ["create", "fetch", "list"] {
            let _ = t
                .twilio_seconds
                .get_or_create(&OperationLabel { operation });
        }
        t
    }
}

impl Telemetry {
    fn empty() -> Self {
        Self {
            twilio_seconds: Family::new_with_constructor(twilio_buckets),
            twilio_errors: Default::default(),
            delivery_errors: Default::default(),
            escalations: Default::default(),
            ladder_steps: Default::default(),
            http_responses: Default::default(),
            status_callbacks: Default::default(),
            inbound_messages: Default::default(),
            inbound_forwards: Default::default(),
            sends_enqueued: Default::default(),
            bad_signatures: Default::default(),
            rate_limited: Default::default(),
            redis_errors: Default::default(),
            bullmq_completed: Default::default(),
            bullmq_failed: Default::default(),
            bullmq_delayed: Default::default(),
            bullmq_retried: Default::default(),
            bullmq_duration: Family::new_with_constructor(duration_buckets),
        }
    }

    /// A job this worker finished as `state` (`completed`, `failed`, `delayed`, `retried`),
    /// counted and timed as BullMQ's `recordJobMetrics` counts and times it.
    pub fn bullmq_job(&self, queue: &str, job_name: &str, state: &'static str, processed_on: i64) {
        let labels = BullmqJobLabels {
            bullmq_queue_name: queue.to_string(),
            bullmq_job_name: job_name.to_string(),
            bullmq_job_state: state,
        };
        let counter = match state {
            "completed" => &self.bullmq_completed,
            "failed" => &self.bullmq_failed,
            "retried" => &self.bullmq_retried,
            _ => &self.bullmq_delayed,
        };
        counter.get_or_create(&labels).inc();
        if processed_on > 0 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64);
            self.bullmq_duration
                .get_or_create(&labels)
                .observe((now - processed_on).max(0) as f64 / 1000.0);
        }
    }

    /// Count a ladder's step (`channel`: call, text) or end (`ladder`) by `outcome`.
    pub fn ladder_step(&self, channel: &'static str, outcome: &'static str) {
        self.ladder_steps
            .get_or_create(&LadderLabels { channel, outcome })
            .inc();
    }

    /// Count an escalation this process created, by its kind's label.
    pub fn escalated(&self, reason: &'static str) {
        self.escalations
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }

    /// Record one Twilio call: its latency, and its error code when it failed.
    pub fn twilio_call(&self, operation: &'static str, took: std::time::Duration) {
        self.twilio_seconds
            .get_or_create(&OperationLabel { operation })
            .observe(took.as_secs_f64());
    }

    /// Count one script call Redis refused or never answered, by script name and error `kind`.
    pub fn redis_error(&self, script: &'static str, kind: String) {
        self.redis_errors
            .get_or_create(&RedisErrorLabels { script, kind })
            .inc();
    }

    /// Count one failed Twilio call under `code`: Twilio's error code, or a word (`transport`).
    pub fn twilio_error(&self, code: String) {
        self.twilio_errors.get_or_create(&CodeLabel { code }).inc();
    }

    /// A message's delivery newly ended failed with `code` (`none` when Twilio gave none).
    pub fn delivery_error(&self, code: Option<&str>) {
        let code = code.unwrap_or("none").to_string();
        self.delivery_errors
            .get_or_create(&CodeLabel { code })
            .inc();
    }
}

/// The process's families.
pub fn global() -> &'static Telemetry {
    static TELEMETRY: OnceLock<Telemetry> = OnceLock::new();
    TELEMETRY.get_or_init(Telemetry::default)
}
