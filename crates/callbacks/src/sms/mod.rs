//! The SMS processor: texts the human exactly once per `runId`, whatever crashes in between.
//!
//! Each attempt goes through the window ([`crate::window`]): claim, send through Twilio, mark
//! sent, complete. A claim already `sent` completes without sending; a claim held by another
//! attempt delays the job until it expires (never drops it, unlike the legacy
//! `if (!claimed) return;`). Twilio's answer decides the rest: permanent → release and fail
//! unrecoverably; retry later → release and delay; ambiguous → hold the claim and resolve
//! (receipt, then a lookup with the list call, then the reconcile window) before any resend.

use std::time::Duration;

use crate::callback::CallbackRequest;
use crate::window::Window;
use ringback_queue::job::Job;
use ringback_queue::processor::{JobContext, Outcome, Prepared, Processor};
use ringback_shared::clock::now_ms;
use ringback_twilio::TwilioClient;
use std::sync::atomic::Ordering;

mod attempt;
mod config;
mod crash;
mod evidence;
mod fused;
pub mod hold;
mod intake;
mod ladder;
mod send;
mod stats;

pub use config::{
    LOOKBACK, LegacyFleet, MAX_VALIDITY_S, SAFETY_MARGIN, SmsConfig, validity_period,
};
pub use crash::{CrashAt, CrashPoint, maybe_abort};
use intake::shared_key_reason;
pub use stats::{SmsEvent, SmsStats};

/// The processor. Cheap to clone per job: Redis and HTTP clients are shared handles.
#[derive(Clone, Debug)]
pub struct SmsProcessor {
    stats: std::sync::Arc<SmsStats>,
    config: SmsConfig,
    window: Window,
    twilio: TwilioClient,
    receipts: crate::receipts::Receipts,
    escalator: crate::escalation::Escalator,
    worker_id: String,
    /// Fold the sent marker and the next claim into the job's finishing call ([`fused`]).
    fused: bool,
    /// Twilio's answers to this process's creates, shared by every clone ([`evidence`]).
    answers: std::sync::Arc<evidence::Answers>,
    /// Questions and opt-outs ([`crate::replies`]).
    replies: crate::replies::Replies,
    /// The configured sender (number or Messaging Service): opt-outs are kept per sender.
    sender: String,
}

impl SmsProcessor {
    /// `prefix`/`queue`: the callback queue (escalation jobs go to `<queue>-escalations` unless
    /// configured otherwise; fallback texts go to the callback queue).
    pub fn new(
        config: SmsConfig,
        conn: ringback_store::connection::Conn,
        twilio: TwilioClient,
        prefix: &str,
        queue: &str,
    ) -> Self {
        let is_cluster = conn.is_cluster();
        // an explicit replica wait, or a wait for the disk (RINGBACK_REDIS_WAIT_AOF)
        let waits = conn.waits_for_replicas() || conn.waits_for_aof();
        let window = Window::new(
            conn.clone(),
            Default::default(),
            config.claim_prefix.clone(),
            config.times(twilio.config().timeout),
        );
        let replies = config.replies(conn.clone(), prefix, queue);
        let (receipts, escalator) = config.after_send(conn, prefix, queue);
        let sender = twilio.config().sender.value().to_string();
        Self {
            replies,
            sender,
            stats: Default::default(),
            config,
            window,
            twilio,
            receipts,
            escalator,
            worker_id: uuid::Uuid::new_v4().to_string(),
            // never on a cluster, whatever the window's layout says (one script, two slots);
            // never with an explicit replica wait or a wait for the disk: the fused finish writes
            // the sent marker and the next run's claim inside the job's finishing call, which
            // carries no `WAIT` (`WAITAOF`), while the window's own calls send theirs in the
            // same pipeline
            fused: !is_cluster && !waits,
            answers: Default::default(),
        }
    }

    /// The attempt counters (shared by every clone).
    pub fn stats(&self) -> std::sync::Arc<SmsStats> {
        self.stats.clone()
    }

    /// The run records and receipts this processor writes.
    pub fn receipts(&self) -> &crate::receipts::Receipts {
        &self.receipts
    }

    /// The run's questions and the human's answers.
    pub fn replies(&self) -> &crate::replies::Replies {
        &self.replies
    }

    /// Where escalations go (the escalation queue, the fallback number).
    pub fn escalator(&self) -> &crate::escalation::Escalator {
        &self.escalator
    }

    /// The reconciliation poller for the receipts this processor's sends expect.
    pub fn reconciler(&self) -> crate::reconcile::Reconciler {
        crate::reconcile::Reconciler {
            receipts: self.receipts.clone(),
            twilio: self.twilio.clone(),
            escalator: self.escalator.clone(),
            delivery_deadline: self.config.delivery_deadline,
        }
    }

    /// The claim/sent window every send goes through.
    pub fn window(&self) -> &Window {
        &self.window
    }

    /// This process's worker id (on attempt records).
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// How often the orphan sweep runs.
    pub fn sweep_interval(&self) -> Duration {
        self.config.reconcile_poll
    }

    /// Calls on the callback queue (for the scan of its failed set).
    /// How long a sent message may go without a final receipt before it is escalated.
    pub fn delivery_deadline(&self) -> Duration {
        self.config.delivery_deadline
    }

    /// The callback queue's script calls.
    pub fn queue_calls(&self) -> &ringback_queue::calls::Calls {
        &self.escalator.callbacks
    }

    fn crash(&self, point: CrashPoint, run_id: &str) {
        crash::maybe_abort(self.config.crash_at, point, run_id);
    }

    /// The StatusCallback URL: the run and the attempt token, so a receipt names the attempt
    /// that sent; with traces on, the run's span (`tp`), so the receipt's span links to it.
    fn status_callback(
        &self,
        run_id: &str,
        token: &str,
        traceparent: Option<&str>,
    ) -> Option<String> {
        self.config
            .status_callback_url
            .as_deref()
            .map(|url| status_callback_url(url, run_id, token, traceparent))
    }

    /// A job delay of `d`: a time on this process's clock, as every BullMQ timestamp the worker
    /// writes (a time on Redis's clock here would delay the job by the clocks' difference too).
    fn later(&self, d: Duration) -> Outcome {
        Outcome::DelayUntil(now_ms() + d.as_millis() as i64)
    }

    /// Twilio refused this worker's credentials: a configuration fault, not a verdict on the
    /// callback. Counted, readiness turns false, one error line per interval.
    fn auth_refused(&self, what: &str, e: &dyn std::fmt::Display) {
        self.stats.record(SmsEvent::AuthRefused);
        let now = now_ms();
        let since = &self.stats.auth_refused_since;
        let _ = since.compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
        let last = self.stats.auth_logged_at.load(Ordering::Relaxed);
        if now - last >= AUTH_LOG_EVERY.as_millis() as i64
            && self
                .stats
                .auth_logged_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::error!(error = %e, "Twilio refused this worker's credentials on {what}: no callback is failed or burned; retrying until they work (check TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN or TWILIO_API_KEY/SECRET)");
        }
    }

    fn auth_ok(&self) {
        if self.stats.auth_refused_since.swap(0, Ordering::Relaxed) != 0 {
            self.stats.auth_logged_at.store(0, Ordering::Relaxed);
            tracing::info!("Twilio accepts this worker's credentials again");
        }
    }
}

/// Why an attempt with unlinked look-alikes is settled unknown, for the escalation and record.
fn indistinct_reason(found: evidence::LookAlikes) -> String {
    let what = match (found.found, found.redacted) {
        (1, 0) => "a message to this recipient with this body".to_string(),
        (1, 1) => "a message to this recipient whose body Twilio redacted".to_string(),
        (n, 0) => format!("{n} messages to this recipient with this body"),
        (n, r) => format!("{n} messages to this recipient with this body ({r} redacted)"),
    };
    format!(
        "the send's answer was lost and {what} exists that no receipt links to this run (it may be this run's, or another run's or sender's): the callback may have been sent, and is not sent again"
    )
}

/// `url` with the run and the attempt token in its query. The query goes before any
/// `#rc=…&rp=…` fragment: that part is Twilio's own connection overrides, which must stay last.
/// A long runId goes as its short key (`runKey`, [`crate::callback::short_key`]).
/// `tp`: the W3C `traceparent` of the run's span, with traces on: the trace context rides in
/// the URL Twilio posts back (55 bytes of the create request), not in Redis.
fn status_callback_url(url: &str, run_id: &str, token: &str, tp: Option<&str>) -> String {
    let (base, fragment) = url.split_at(url.find('#').unwrap_or(url.len()));
    let sep = if base.contains('?') { '&' } else { '?' };
    let run = match crate::callback::short_key(run_id) {
        Some(key) => ("runKey", key),
        None => ("runId", run_id.to_string()),
    };
    let mut query = vec![(run.0, run.1.as_str()), ("attempt", token)];
    if let Some(tp) = tp {
        query.push(("tp", tp));
    }
    let encoded: String = serde_urlencoded::to_string(query).unwrap_or_default();
    format!("{base}{sep}{encoded}{fragment}")
}

/// How long a job of another name goes back to delayed before a worker fetches it again: long
/// enough that ringback does not spin on a queue it shares with the worker that handles it.
const OTHER_JOB_DELAY: Duration = Duration::from_secs(5);
/// How many distinct other job names are logged (each once): a producer inventing names must
/// not grow the set without bound.
const OTHER_NAMES_LOGGED: usize = 64;

/// While Twilio refuses the credentials: how often a callback tries again, and the error line.
const AUTH_RETRY: Duration = Duration::from_secs(5);
const AUTH_LOG_EVERY: Duration = Duration::from_secs(30);

impl Processor for SmsProcessor {
    async fn process(&self, job: &Job, ctx: &JobContext) -> Outcome {
        let req = match CallbackRequest::parse(&job.data) {
            Ok(r) => r,
            Err(reason) => {
                if let Some(prepared) = ctx.prepared() {
                    // never sent: the run's claim is closed with the job, or the sweep would
                    // text the invalid job the escalation says was not texted
                    self.close_prepared(prepared, &reason).await;
                }
                if !self.escalate_invalid(job, &reason, true).await {
                    return self.later(self.config.retry_later_default);
                }
                return Outcome::unrecoverable(format!("invalid callback job: {reason}"));
            }
        };
        if let Some(exact) = crate::callback::exact_run_id(&req.run_id, &job.data) {
            match self.window.number_owner(&req.run_id, &exact).await {
                Ok(None) => {}
                Ok(Some(other)) => {
                    if let Some(prepared) = ctx.prepared() {
                        self.hand_back_prepared(prepared).await;
                    }
                    let reason = shared_key_reason(&exact, &req.run_id, &other);
                    if !self.escalate_invalid(job, &reason, false).await {
                        return self.later(self.config.retry_later_default);
                    }
                    return Outcome::unrecoverable(format!("invalid callback job: {reason}"));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not record the runId's digits; will try again");
                    if let Some(prepared) = ctx.prepared() {
                        self.hand_back_prepared(prepared).await;
                    }
                    return self.later(self.config.retry_later_default);
                }
            }
        }
        let mut req = req;
        if let Some(opens) = self.quiet_until(&req) {
            if let Some(prepared) = ctx.prepared() {
                // the fused finish claimed this run whatever its quiet hours: the claim goes
                // back due when they end, never sooner
                self.hand_back_prepared_until(prepared, opens).await;
            }
            self.stats.record(SmsEvent::Quiet);
            tracing::info!(run_id = %req.run_id, opens_at = opens, "inside quiet hours; waiting in delayed until they end");
            return Outcome::DelayUntil(self.window.to_local(opens));
        }
        if req.expect_reply.is_some()
            && let Err(e) = self.replies.ask(&mut req).await
        {
            tracing::warn!(error = %e, "could not open the run's question; will try again");
            return self.later(self.config.retry_later_default);
        }
        let span = tracing::info_span!("callback", run_id = %req.run_id);
        tracing::Instrument::instrument(self.attempt_in(&job.id, &req, Some(ctx)), span).await
    }

    fn declines(&self, job: &Job) -> Option<Duration> {
        if self.config.callback_job_names.contains(&job.name) {
            return None;
        }
        self.stats.record(SmsEvent::OtherJob);
        self.stats.other_job_handed_back(&job.id, job.timestamp);
        let first =
            self.stats.other_names.lock().is_ok_and(|mut seen| {
                seen.len() < OTHER_NAMES_LOGGED && seen.insert(job.name.clone())
            });
        if first {
            tracing::warn!(job = %job.id, name = %job.name, callbacks = ?self.config.callback_job_names,
                "a job of a name that is not a callback's (RINGBACK_CALLBACK_JOB_NAMES): left for the worker that handles it, back in {} s", OTHER_JOB_DELAY.as_secs());
        }
        Some(OTHER_JOB_DELAY)
    }

    async fn unprepared(&self, _job: &Job, prepared: Prepared) {
        self.hand_back_prepared(&prepared).await;
    }

    async fn unreadable(&self, job: &Job, reason: &str) -> bool {
        self.escalate_invalid(job, reason, true).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_callback_keeps_twilios_fragment_last() {
        assert_eq!(
            status_callback_url("https://h/cb#rc=5&rp=5xx", "r", "t", None),
            "https://h/cb?runId=r&attempt=t#rc=5&rp=5xx"
        );
        assert_eq!(
            status_callback_url("https://h/cb?x=1", "r", "t", None),
            "https://h/cb?x=1&runId=r&attempt=t"
        );
        let long = "r".repeat(400);
        let key = crate::callback::short_key(&long).unwrap();
        assert_eq!(
            status_callback_url("https://h/cb", &long, "t", None),
            format!("https://h/cb?runKey={key}&attempt=t")
        );
    }

    #[test]
    fn crash_points_parse() {
        assert_eq!(
            "after-claim".parse::<CrashAt>().unwrap(),
            CrashAt {
                point: CrashPoint::AfterClaim,
                probability: 1.0
            }
        );
        assert_eq!(
            "before-complete:0.5"
                .parse::<CrashAt>()
                .unwrap()
                .probability,
            0.5
        );
        assert!("sometime".parse::<CrashAt>().is_err());
        assert!("after-claim:2".parse::<CrashAt>().is_err());
    }

    #[test]
    fn the_lost_writes_window_is_twice_the_slower_fleets_lock_and_stall_sweep() {
        let s = Duration::from_secs;
        let ours = SmsConfig::default();
        assert_eq!(
            ours.lost_writes_window_for(s(30), s(30)),
            s(120),
            "2 min at the defaults"
        );
        let slower_legacy = SmsConfig {
            legacy: LegacyFleet {
                lock_duration: Some(s(60)),
                stalled_interval: Some(s(10)),
                ..LegacyFleet::default()
            },
            ..SmsConfig::default()
        };
        assert_eq!(slower_legacy.lost_writes_window_for(s(30), s(30)), s(180));
    }

    #[test]
    fn invariants_refuse_a_pending_ttl_shorter_than_a_call() {
        let lock = (Duration::from_secs(30), Duration::from_secs(30));
        let ok = SmsConfig {
            status_callback_url: Some("https://ringback.test/api/notify/webhook/status".into()),
            ..SmsConfig::default()
        };
        assert!(
            ok.validate(Duration::from_secs(8), lock.0, lock.1)
                .unwrap()
                .is_empty(),
            "defaults hold and warn of nothing"
        );
        let no_receipts = SmsConfig::default()
            .validate(Duration::from_secs(8), lock.0, lock.1)
            .unwrap();
        assert!(
            no_receipts[0].starts_with("RINGBACK_STATUS_CALLBACK_URL is not set"),
            "{no_receipts:?}"
        );
        let settings = |e: ringback_shared::settings::ConfigErrors| {
            e.iter().map(|e| e.setting).collect::<Vec<_>>()
        };
        let err = ok
            .validate(Duration::from_secs(13), lock.0, lock.1)
            .unwrap_err();
        assert_eq!(settings(err), ["RINGBACK_PENDING_TTL_MS"]);
        let short_sent = SmsConfig {
            sent_ttl: Duration::from_secs(10),
            ..SmsConfig::default()
        };
        // every broken invariant at once: the sent TTL under the pending TTL, and the lease
        // above the sent TTL, both named by the setting changed from its default
        assert_eq!(
            settings(
                short_sent
                    .validate(Duration::from_secs(1), lock.0, lock.1)
                    .unwrap_err()
            ),
            ["RINGBACK_SENT_TTL_MS", "RINGBACK_SENT_TTL_MS"]
        );
        let short_lease = SmsConfig {
            claim_lease: Duration::from_secs(100),
            ..SmsConfig::default()
        };
        assert_eq!(
            settings(
                short_lease
                    .validate(Duration::from_secs(8), lock.0, lock.1)
                    .unwrap_err()
            ),
            ["RINGBACK_CLAIM_LEASE_MS"],
            "30 s lock + 2 × 30 s sweep + 15 s claim = 105 s: a 100 s lease could lapse before stall recovery"
        );
    }
}
