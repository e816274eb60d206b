//! The SMS processor: texts the human exactly once per `runId`, whatever crashes in between.
//!
//! Each attempt goes through the window ([`crate::window`]): claim, send through Twilio, mark
//! sent, complete. A claim already `sent` completes without sending; a claim held by another
//! attempt delays the job until it expires (never drops it, unlike the legacy
//! `if (!claimed) return;`). Twilio's answer decides the rest: permanent → release and fail
//! unrecoverably; retry later → release and delay; ambiguous → hold the claim and resolve
//! (receipt, then a lookup with the list call, then the reconcile window) before any resend.

use std::time::Duration;

use serde_json::json;

use crate::callback::CallbackRequest;
use crate::commands::now_ms;
use crate::error::ConfigError;
use crate::job::Job;
use crate::processor::{JobContext, Outcome, Processor};
use crate::redact::{mask, redact};
use crate::twilio::{CreateMessage, ListFilter, SendOutcome, Sender, TwilioClient};
use crate::window::{Claim, Unresolved, Window, WindowTimes};

/// What must fit between a provider call's timeout and the pending TTL: Redis round trips and
/// scheduling after Twilio answered, so a live attempt always marks sent before its claim expires.
pub const SAFETY_MARGIN: Duration = Duration::from_secs(2);

/// How far before an unknown send a matching message may have been created: the legacy
/// worker's claim lives 600 s, so a legacy attempt we take over may be that old.
pub const LOOKBACK: Duration = Duration::from_secs(600);

/// Settings of the SMS processor (`RINGBACK_*` window settings).
#[derive(Debug, Clone)]
pub struct SmsConfig {
    pub claim_prefix: String,
    pub pending_ttl: Duration,
    pub sent_ttl: Duration,
    /// With no evidence of a send after this long, an unknown send is presumed lost.
    pub reconcile_window: Duration,
    /// How often an unknown send is looked up while the window is open.
    pub reconcile_poll: Duration,
    /// Delay after "retry later" when Twilio gave no `Retry-After`.
    pub retry_later_default: Duration,
    /// The status webhook URL; `runId` is added to its query so a receipt names the run.
    pub status_callback_url: Option<String>,
    /// Drills only: abort at a point of the window.
    pub crash_at: Option<CrashAt>,
    /// BullMQ queue for escalation jobs; `None` = `<queue>-escalations`.
    pub escalation_queue: Option<String>,
    /// Also text this number when a callback is escalated (through the same window).
    pub fallback_to: Option<String>,
    /// A callback with no terminal status this long after acceptance is escalated.
    pub delivery_deadline: Duration,
    /// An accepted message with no terminal status is looked up after this long.
    pub receipt_poll_after: Duration,
}

impl Default for SmsConfig {
    fn default() -> Self {
        Self {
            claim_prefix: "agent-callback:".into(),
            pending_ttl: Duration::from_secs(15),
            sent_ttl: Duration::from_secs(86_400),
            reconcile_window: Duration::from_secs(60),
            reconcile_poll: Duration::from_secs(5),
            retry_later_default: Duration::from_secs(2),
            status_callback_url: None,
            crash_at: None,
            escalation_queue: None,
            fallback_to: None,
            delivery_deadline: Duration::from_secs(900),
            receipt_poll_after: Duration::from_secs(60),
        }
    }
}

impl SmsConfig {
    /// Check the window's invariants against the provider timeout and the worker's lock
    /// timings; returns warnings worth logging.
    pub fn validate(
        &self,
        provider_timeout: Duration,
        lock_duration: Duration,
        lock_renew: Duration,
    ) -> Result<Vec<String>, ConfigError> {
        if self.claim_prefix.is_empty() {
            return Err(ConfigError::new(
                "RINGBACK_CLAIM_PREFIX",
                "must not be empty",
            ));
        }
        if provider_timeout + SAFETY_MARGIN >= self.pending_ttl {
            return Err(ConfigError::new(
                "RINGBACK_PENDING_TTL_MS",
                format!(
                    "must exceed TWILIO_TIMEOUT_MS ({} ms) plus a {} ms safety margin: otherwise a live \
                     attempt's claim can expire mid-call and a duplicate job send a second text",
                    provider_timeout.as_millis(),
                    SAFETY_MARGIN.as_millis()
                ),
            ));
        }
        if self.pending_ttl >= self.sent_ttl {
            return Err(ConfigError::new(
                "RINGBACK_SENT_TTL_MS",
                "must be longer than RINGBACK_PENDING_TTL_MS",
            ));
        }
        if self.reconcile_poll.is_zero() || self.reconcile_window.is_zero() {
            return Err(ConfigError::new(
                "RINGBACK_RECONCILE_WINDOW_MS",
                "the reconcile window and poll must be positive",
            ));
        }
        if let Some(url) = &self.status_callback_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            return Err(ConfigError::new(
                "RINGBACK_STATUS_CALLBACK_URL",
                "must be an http(s) URL",
            ));
        }
        let mut warnings = vec![];
        if self.pending_ttl > lock_duration.saturating_sub(lock_renew) {
            warnings.push(format!(
                "RINGBACK_PENDING_TTL_MS ({} ms) is longer than lockDuration - lockRenewTime ({} ms): a crashed \
                 attempt's claim outlives stall recovery, so its retry waits for the claim to expire",
                self.pending_ttl.as_millis(),
                lock_duration.saturating_sub(lock_renew).as_millis()
            ));
        }
        if self.crash_at.is_some() {
            warnings.push(
                "RINGBACK_CRASH_AT is set: this process will abort on purpose (drills only)".into(),
            );
        }
        Ok(warnings)
    }

    /// The receipt store and the escalator of callbacks on queue `prefix`/`queue`.
    pub fn after_send(
        &self,
        conn: redis::aio::ConnectionManager,
        prefix: &str,
        queue: &str,
    ) -> (crate::receipts::Receipts, crate::escalation::Escalator) {
        let receipts = crate::receipts::Receipts::new(
            conn.clone(),
            self.claim_prefix.clone(),
            self.receipt_times(),
        );
        let escalation_queue = self
            .escalation_queue
            .clone()
            .unwrap_or_else(|| format!("{queue}-escalations"));
        let commands = |q: &str| {
            crate::commands::Commands::new(
                conn.clone(),
                crate::keys::QueueKeys::new(prefix, q),
                Default::default(),
            )
        };
        let escalator = crate::escalation::Escalator {
            escalations: commands(&escalation_queue),
            callbacks: commands(queue),
            receipts: receipts.clone(),
            fallback_to: self.fallback_to.clone(),
        };
        (receipts, escalator)
    }

    fn receipt_times(&self) -> crate::receipts::ReceiptTimes {
        crate::receipts::ReceiptTimes {
            repeat_ttl: self.sent_ttl,
            record_ttl: self.sent_ttl,
            poll_after: self.receipt_poll_after,
        }
    }

    fn times(&self) -> WindowTimes {
        WindowTimes {
            pending_ttl: self.pending_ttl,
            sent_ttl: self.sent_ttl,
            hold: self.reconcile_window + self.pending_ttl,
            poll_after: self.receipt_poll_after,
        }
    }
}

/// Points where `RINGBACK_CRASH_AT` aborts the process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CrashPoint {
    AfterClaim,
    AfterProviderAccept,
    AfterSentMarker,
    BeforeComplete,
}

/// `RINGBACK_CRASH_AT=<point>[:<probability>]`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CrashAt {
    pub point: CrashPoint,
    pub probability: f64,
}

impl std::str::FromStr for CrashAt {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let bad = |why: &str| {
            ConfigError::new(
                "RINGBACK_CRASH_AT",
                format!("{why}: {s:?} (expected <point>[:<probability>])"),
            )
        };
        let (point, p) = s.split_once(':').unwrap_or((s, "1"));
        let point = match point {
            "after-claim" => CrashPoint::AfterClaim,
            "after-provider-accept" => CrashPoint::AfterProviderAccept,
            "after-sent-marker" => CrashPoint::AfterSentMarker,
            "before-complete" => CrashPoint::BeforeComplete,
            _ => {
                return Err(bad(
                    "unknown point (after-claim, after-provider-accept, after-sent-marker, before-complete)",
                ));
            }
        };
        let probability: f64 = p.parse().map_err(|_| bad("probability is not a number"))?;
        if !(0.0..=1.0).contains(&probability) {
            return Err(bad("probability must be within 0..=1"));
        }
        Ok(CrashAt { point, probability })
    }
}

/// What happened to callback attempts, for the worker's `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmsEvent {
    /// Twilio accepted the message and the sent marker was written.
    Sent,
    /// Already sent (by either worker): completed without sending.
    Deduplicated,
    /// An earlier attempt's send was found (receipt or lookup) and recorded.
    Reconciled,
    /// Twilio refused the message for good: failed, claim released, escalated.
    Permanent,
    /// Twilio did not take it (429, 21611): claim released, retried later.
    RetryLater,
    /// Twilio may or may not have it: claim held, resolved later.
    Ambiguous,
    /// Another attempt holds the claim: waiting for it.
    Busy,
    /// No evidence of an earlier send within the reconcile window: claim released to send.
    Lost,
    /// The job's data is not a valid callback: failed at once.
    Invalid,
}

impl SmsEvent {
    const ALL: [SmsEvent; 9] = [
        SmsEvent::Sent,
        SmsEvent::Deduplicated,
        SmsEvent::Reconciled,
        SmsEvent::Permanent,
        SmsEvent::RetryLater,
        SmsEvent::Ambiguous,
        SmsEvent::Busy,
        SmsEvent::Lost,
        SmsEvent::Invalid,
    ];

    /// The `outcome` label.
    pub fn label(self) -> &'static str {
        match self {
            SmsEvent::Sent => "sent",
            SmsEvent::Deduplicated => "deduplicated",
            SmsEvent::Reconciled => "reconciled",
            SmsEvent::Permanent => "permanent",
            SmsEvent::RetryLater => "retry_later",
            SmsEvent::Ambiguous => "ambiguous",
            SmsEvent::Busy => "busy",
            SmsEvent::Lost => "lost",
            SmsEvent::Invalid => "invalid",
        }
    }
}

/// Counters of [`SmsEvent`]s, shared by every clone of a processor.
#[derive(Debug, Default)]
pub struct SmsStats {
    counts: [std::sync::atomic::AtomicU64; SmsEvent::ALL.len()],
}

impl SmsStats {
    // `e as usize` is the variant's place in declaration order, which `ALL` follows.
    fn record(&self, e: SmsEvent) {
        self.counts[e as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// How many of `e` so far.
    pub fn get(&self, e: SmsEvent) -> u64 {
        self.counts[e as usize].load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `ringback_sms_attempts_total{queue,outcome}` in Prometheus' text format.
    pub fn render(&self, queue: &str) -> String {
        let mut out = String::from(
            "# HELP ringback_sms_attempts_total Callback attempts by what they did.\n\
             # TYPE ringback_sms_attempts_total counter\n",
        );
        for e in SmsEvent::ALL {
            out.push_str(&format!(
                "ringback_sms_attempts_total{{queue=\"{queue}\",outcome=\"{}\"}} {}\n",
                e.label(),
                self.get(e)
            ));
        }
        out
    }
}

/// The processor. Cheap to clone per job: Redis and HTTP clients are shared handles.
#[derive(Clone)]
pub struct SmsProcessor {
    stats: std::sync::Arc<SmsStats>,
    config: SmsConfig,
    window: Window,
    twilio: TwilioClient,
    receipts: crate::receipts::Receipts,
    escalator: crate::escalation::Escalator,
    worker_id: String,
}

impl SmsProcessor {
    /// `prefix`/`queue`: the callback queue (escalation jobs go to `<queue>-escalations` unless
    /// configured otherwise; fallback texts go to the callback queue).
    pub fn new(
        config: SmsConfig,
        conn: redis::aio::ConnectionManager,
        twilio: TwilioClient,
        prefix: &str,
        queue: &str,
    ) -> Self {
        let window = Window::new(
            conn.clone(),
            Default::default(),
            config.claim_prefix.clone(),
            config.times(),
        );
        let (receipts, escalator) = config.after_send(conn, prefix, queue);
        Self {
            stats: Default::default(),
            config,
            window,
            twilio,
            receipts,
            escalator,
            worker_id: uuid::Uuid::new_v4().to_string(),
        }
    }

    /// The attempt counters (shared by every clone).
    pub fn stats(&self) -> std::sync::Arc<SmsStats> {
        self.stats.clone()
    }

    pub fn receipts(&self) -> &crate::receipts::Receipts {
        &self.receipts
    }

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

    pub fn window(&self) -> &Window {
        &self.window
    }

    fn crash(&self, point: CrashPoint, run_id: &str) {
        if let Some(c) = self.config.crash_at
            && c.point == point
            && rand::random::<f64>() < c.probability
        {
            tracing::error!(
                ?point,
                run_id,
                "RINGBACK_CRASH_AT: aborting the process now (drill)"
            );
            std::process::abort();
        }
    }

    fn status_callback(&self, run_id: &str) -> Option<String> {
        self.config.status_callback_url.as_ref().map(|url| {
            let sep = if url.contains('?') { '&' } else { '?' };
            let encoded: String =
                serde_urlencoded::to_string([("runId", run_id)]).unwrap_or_default();
            format!("{url}{sep}{encoded}")
        })
    }

    fn later(&self, d: Duration) -> Outcome {
        Outcome::DelayUntil(now_ms() + d.as_millis() as i64)
    }

    /// Run one attempt of a callback for `job_id` (a queue job, or the orphan sweep).
    pub async fn attempt(&self, job_id: &str, req: &CallbackRequest) -> Outcome {
        let from = req.from.clone().unwrap_or_default();
        // At most: resolve an unknown send, find it unproven past the window, release, claim anew.
        for _ in 0..3 {
            let token = uuid::Uuid::new_v4().simple().to_string();
            let claim = self
                .window
                .claim(
                    &req.run_id,
                    &token,
                    job_id,
                    &self.worker_id,
                    &req.to,
                    &from,
                    &req.body,
                )
                .await;
            match claim {
                Err(e) => {
                    tracing::warn!(error = %e, "claim failed; will try again");
                    return self.later(self.config.retry_later_default);
                }
                Ok(Claim::Sent(sid)) => {
                    self.stats.record(SmsEvent::Deduplicated);
                    tracing::info!(sid = ?sid, "already sent; not sending again");
                    return Outcome::Completed(
                        json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true}),
                    );
                }
                Ok(Claim::Busy(ttl)) => {
                    self.stats.record(SmsEvent::Busy);
                    tracing::info!(
                        wait_ms = ttl.as_millis() as u64,
                        "another attempt holds the claim; waiting for it"
                    );
                    return self.later(ttl + Duration::from_millis(50));
                }
                Ok(Claim::Claimed { token }) => {
                    self.crash(CrashPoint::AfterClaim, &req.run_id);
                    return self.send(req, &token).await;
                }
                Ok(Claim::Resolve(u)) => match self.resolve(req, &u).await {
                    Resolution::Sent(sid) => {
                        if let Err(e) = self
                            .window
                            .mark_sent(&req.run_id, &u.token, &sid, "queued")
                            .await
                        {
                            tracing::warn!(error = %e, "could not record the reconciled send; will try again");
                            return self.later(self.config.reconcile_poll);
                        }
                        self.stats.record(SmsEvent::Reconciled);
                        tracing::info!(%sid, "an earlier attempt's send was found; not sending again");
                        return Outcome::Completed(
                            json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true, "reconciled": true}),
                        );
                    }
                    Resolution::Wait(d) => return self.later(d),
                    Resolution::Lost => {
                        self.stats.record(SmsEvent::Lost);
                        tracing::warn!(
                            "no evidence of an earlier send within the reconcile window; sending"
                        );
                        if let Err(e) = self
                            .window
                            .release(
                                &req.run_id,
                                &u.token,
                                "reconcile window passed without evidence of a send",
                                "released",
                            )
                            .await
                        {
                            tracing::warn!(error = %e, "could not release the claim; will try again");
                            return self.later(self.config.reconcile_poll);
                        }
                    }
                },
            }
        }
        self.later(self.config.reconcile_poll)
    }

    async fn send(&self, req: &CallbackRequest, token: &str) -> Outcome {
        let msg = CreateMessage {
            to: req.to.clone(),
            body: req.body.clone(),
            from: req.from.clone(),
            status_callback: self.status_callback(&req.run_id),
        };
        match self.twilio.create_message(&msg).await {
            SendOutcome::Accepted(m) => {
                self.crash(CrashPoint::AfterProviderAccept, &req.run_id);
                let mut delay = Duration::from_millis(50);
                let mut marked = false;
                for _ in 0..6 {
                    match self
                        .window
                        .mark_sent(
                            &req.run_id,
                            token,
                            &m.sid,
                            m.status.as_deref().unwrap_or("queued"),
                        )
                        .await
                    {
                        Ok(overrun) => {
                            if overrun {
                                tracing::warn!(sid = %m.sid, "sent marker written after the claim expired (window overrun)");
                            }
                            marked = true;
                            break;
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "could not write the sent marker; retrying");
                            tokio::time::sleep(delay).await;
                            delay *= 2;
                        }
                    }
                }
                if !marked {
                    // The attempt record still says "claimed": the next attempt resolves it by
                    // receipt or lookup and will find this message, so nothing is sent twice.
                    return self.later(self.config.reconcile_poll);
                }
                self.crash(CrashPoint::AfterSentMarker, &req.run_id);
                self.stats.record(SmsEvent::Sent);
                tracing::info!(sid = %m.sid, to = %mask(&req.to), "sent");
                self.crash(CrashPoint::BeforeComplete, &req.run_id);
                Outcome::Completed(json!({
                    "runId": req.run_id, "messageSid": m.sid, "status": m.status, "deduplicated": false,
                }))
            }
            SendOutcome::Permanent(e) => {
                self.stats.record(SmsEvent::Permanent);
                if let Err(re) = self
                    .window
                    .release(&req.run_id, token, &e.to_string(), "send-failed")
                    .await
                {
                    tracing::warn!(error = %re, "could not release the claim after a permanent failure");
                }
                let escalation = crate::escalation::Escalation {
                    run_id: req.run_id.clone(),
                    reason: format!("send failed permanently: {e}"),
                    last_status: None,
                    error_code: e.code.map(|c| c.to_string()),
                };
                if let Err(err) = self.escalator.escalate(&escalation).await {
                    tracing::error!(error = %err, "could not escalate a permanent send failure");
                }
                Outcome::unrecoverable(format!("{e}; not retried: Twilio refused the message"))
            }
            SendOutcome::RetryLater {
                retry_after,
                reason,
                ..
            } => {
                self.stats.record(SmsEvent::RetryLater);
                if let Err(e) = self
                    .window
                    .release(&req.run_id, token, &reason, "released")
                    .await
                {
                    tracing::warn!(error = %e, "could not release the claim");
                }
                let wait = retry_after.unwrap_or(self.config.retry_later_default);
                tracing::info!(reason = %redact(&reason), wait_ms = wait.as_millis() as u64, "Twilio did not take the message; retrying later");
                self.later(wait)
            }
            // Stand-in until refused credentials are handled (issue 10 §4): as RetryLater.
            SendOutcome::AuthRefused(e) => {
                self.stats.record(SmsEvent::RetryLater);
                if let Err(re) = self
                    .window
                    .release(&req.run_id, token, &e.to_string(), "released")
                    .await
                {
                    tracing::warn!(error = %re, "could not release the claim");
                }
                tracing::warn!(error = %redact(&e.to_string()), "Twilio refused the credentials; retrying later");
                self.later(self.config.retry_later_default)
            }
            SendOutcome::Ambiguous { reason, .. } => {
                self.stats.record(SmsEvent::Ambiguous);
                tracing::warn!(reason = %redact(&reason), "Twilio may or may not have the message; holding the claim to reconcile");
                if let Err(e) = self.window.hold(&req.run_id, token, &reason).await {
                    tracing::warn!(error = %e, "could not hold the claim; the attempt record resolves it");
                }
                self.later(self.config.reconcile_poll)
            }
        }
    }

    /// Look for proof that an unknown send reached Twilio: a receipt, then the list call.
    async fn resolve(&self, req: &CallbackRequest, u: &Unresolved) -> Resolution {
        if let Some(sid) = &u.receipt_sid {
            return Resolution::Sent(sid.clone());
        }
        let from = match (&self.twilio.config().sender, u.from.is_empty()) {
            (_, false) => Some(u.from.clone()),
            (Sender::From(f), true) => Some(f.clone()),
            (Sender::MessagingService(_), true) => None,
        };
        let day = chrono::DateTime::from_timestamp_millis(u.since - 86_400_000)
            .map(|d| d.format("%Y-%m-%d").to_string());
        let filters = [
            ListFilter {
                to: Some(u.to.clone()),
                from: from.clone(),
                date_sent_after: day,
                page_size: Some(50),
            },
            // A message still queued has no date_sent yet: look at the newest ones too.
            ListFilter {
                to: Some(u.to.clone()),
                from,
                date_sent_after: None,
                page_size: Some(50),
            },
        ];
        for filter in &filters {
            match self.twilio.list_messages(filter).await {
                Ok(page) => {
                    let candidates = page.messages.into_iter().filter(|m| {
                        m.body.as_deref() == Some(u.body.as_str())
                            && m.date_created
                                .as_deref()
                                .and_then(|d| chrono::DateTime::parse_from_rfc2822(d).ok())
                                .is_none_or(|d| {
                                    d.timestamp_millis() >= u.since - LOOKBACK.as_millis() as i64
                                })
                    });
                    for m in candidates {
                        // A message ringback recorded for another run is not this run's.
                        match self.window.run_of_message(&m.sid).await {
                            Ok(Some(other)) if other != req.run_id => continue,
                            Ok(_) => return Resolution::Sent(m.sid),
                            Err(e) => {
                                tracing::warn!(error = %e, "lookup failed; will try again");
                                return Resolution::Wait(self.config.reconcile_poll);
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, run_id = %req.run_id, "lookup failed; will try again");
                    return Resolution::Wait(self.config.reconcile_poll);
                }
            }
        }
        let open_until = u.since + self.config.reconcile_window.as_millis() as i64;
        let now = now_ms();
        if now >= open_until {
            Resolution::Lost
        } else {
            Resolution::Wait(
                Duration::from_millis((open_until - now) as u64).min(self.config.reconcile_poll),
            )
        }
    }
}

enum Resolution {
    Sent(String),
    Wait(Duration),
    Lost,
}

impl Processor for SmsProcessor {
    async fn process(&self, job: &Job, _ctx: &JobContext) -> Outcome {
        let req = match CallbackRequest::parse(&job.data) {
            Ok(r) => r,
            Err(reason) => {
                self.stats.record(SmsEvent::Invalid);
                return Outcome::unrecoverable(format!("invalid callback job: {reason}"));
            }
        };
        let span = tracing::info_span!("callback", run_id = %req.run_id);
        tracing::Instrument::instrument(self.attempt(&job.id, &req), span).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn invariants_refuse_a_pending_ttl_shorter_than_a_call() {
        let lock = (Duration::from_secs(30), Duration::from_secs(15));
        let ok = SmsConfig::default();
        assert!(
            ok.validate(Duration::from_secs(8), lock.0, lock.1)
                .unwrap()
                .is_empty(),
            "defaults hold and warn of nothing"
        );
        let err = ok
            .validate(Duration::from_secs(13), lock.0, lock.1)
            .unwrap_err();
        assert_eq!(err.setting, "RINGBACK_PENDING_TTL_MS");
        let short_sent = SmsConfig {
            sent_ttl: Duration::from_secs(10),
            ..SmsConfig::default()
        };
        assert_eq!(
            short_sent
                .validate(Duration::from_secs(1), lock.0, lock.1)
                .unwrap_err()
                .setting,
            "RINGBACK_SENT_TTL_MS"
        );
        let long = SmsConfig {
            pending_ttl: Duration::from_secs(20),
            ..SmsConfig::default()
        };
        assert_eq!(
            long.validate(Duration::from_secs(8), lock.0, lock.1)
                .unwrap()
                .len(),
            1,
            "warns: outlives stall recovery"
        );
    }
}
