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
use crate::twilio::{CreateMessage, SendOutcome, Sender, TwilioClient};
use crate::window::{Claim, MarkSent, Marked, Unresolved, Window, WindowTimes};
use std::sync::atomic::Ordering;

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
    /// A claimed attempt is alive this long (past it, with no sent marker, it is dead).
    pub pending_ttl: Duration,
    /// The claim key's lease: it exists while an attempt may be unresolved, up to this long
    /// after the last ringback step on it (see README, "Why the defaults").
    pub claim_lease: Duration,
    /// An attempt whose outcome stays unknown this long is escalated once (still resolved).
    pub unknown_escalate: Duration,
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
            claim_lease: Duration::from_secs(600),
            unknown_escalate: Duration::from_secs(300),
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
    /// timings; returns warnings worth logging. These invariants are the assumptions of the
    /// protocol's model (`docs/window-protocol.md`, `model/`).
    pub fn validate(
        &self,
        provider_timeout: Duration,
        lock_duration: Duration,
        stalled_interval: Duration,
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
        let handback = lock_duration + stalled_interval * 2 + self.pending_ttl;
        if self.claim_lease <= handback {
            return Err(ConfigError::new(
                "RINGBACK_CLAIM_LEASE_MS",
                format!(
                    "must exceed the lock duration + 2 × the stalled interval + RINGBACK_PENDING_TTL_MS \
                     ({} ms): stall recovery must hand a dead attempt's job back while its claim still \
                     fences the legacy worker off",
                    handback.as_millis()
                ),
            ));
        }
        if self.claim_lease > self.sent_ttl {
            return Err(ConfigError::new(
                "RINGBACK_CLAIM_LEASE_MS",
                "must not exceed RINGBACK_SENT_TTL_MS (the attempt record must outlive the claim)",
            ));
        }
        if self.unknown_escalate.is_zero() {
            return Err(ConfigError::new(
                "RINGBACK_UNKNOWN_ESCALATE_MS",
                "must be positive",
            ));
        }
        let mut warnings = vec![];
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
            lease: self.claim_lease,
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
    /// Twilio refused this worker's credentials: nothing sent, nothing failed, retried.
    AuthRefused,
    /// The send could not be proven either way: escalated, never resent.
    Unknown,
    /// No evidence of an earlier send within the reconcile window: claim released to send.
    Lost,
    /// The job's data is not a valid callback: failed at once.
    Invalid,
}

impl SmsEvent {
    pub const ALL: [SmsEvent; 11] = [
        SmsEvent::Sent,
        SmsEvent::Deduplicated,
        SmsEvent::Reconciled,
        SmsEvent::Permanent,
        SmsEvent::RetryLater,
        SmsEvent::Ambiguous,
        SmsEvent::Busy,
        SmsEvent::AuthRefused,
        SmsEvent::Unknown,
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
            SmsEvent::AuthRefused => "auth_refused",
            SmsEvent::Unknown => "unknown",
            SmsEvent::Lost => "lost",
            SmsEvent::Invalid => "invalid",
        }
    }
}

/// Counters of [`SmsEvent`]s, shared by every clone of a processor.
#[derive(Debug, Default)]
pub struct SmsStats {
    counts: [std::sync::atomic::AtomicU64; SmsEvent::ALL.len()],
    /// Since when Twilio refuses the credentials (ms), 0 while it accepts them.
    pub auth_refused_since: std::sync::atomic::AtomicI64,
    auth_logged_at: std::sync::atomic::AtomicI64,
    /// Open attempts of the queue's runs, and the oldest one's age (ms), as the sweep last saw.
    pub open_attempts: std::sync::atomic::AtomicU64,
    pub oldest_open_ms: std::sync::atomic::AtomicU64,
    /// Of the open attempts the sweep sampled: released for another attempt, and in doubt.
    pub open_retry: std::sync::atomic::AtomicU64,
    pub open_in_doubt: std::sync::atomic::AtomicU64,
    /// Jobs in the queue's delayed set.
    pub delayed: std::sync::atomic::AtomicU64,
    /// Messages waiting for a final receipt, and those of them past the delivery deadline.
    pub reconcile_backlog: std::sync::atomic::AtomicU64,
    pub receipts_missing: std::sync::atomic::AtomicU64,
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

    /// Why the worker is not ready, if it is not (Twilio refuses the credentials).
    pub fn not_ready(&self) -> Option<String> {
        let since = self.auth_refused_since.load(Ordering::Relaxed);
        (since != 0).then(|| {
            format!(
                "Twilio refuses this worker's credentials (for {} s)",
                (now_ms() - since).max(0) / 1000
            )
        })
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

    /// This process's worker id (on attempt records).
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// How often the orphan sweep runs.
    pub fn sweep_interval(&self) -> Duration {
        self.config.reconcile_poll
    }

    /// Commands on the callback queue (for the scan of its failed set).
    /// How long a sent message may go without a final receipt before it is escalated.
    pub fn delivery_deadline(&self) -> Duration {
        self.config.delivery_deadline
    }

    pub fn queue_commands(&self) -> &crate::commands::Commands {
        &self.escalator.callbacks
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

    /// The StatusCallback URL: the run and the attempt token, so a receipt names the attempt
    /// that sent.
    fn status_callback(&self, run_id: &str, token: &str) -> Option<String> {
        self.config
            .status_callback_url
            .as_deref()
            .map(|url| status_callback_url(url, run_id, token))
    }

    /// A job delay of `d`, on Redis's clock (as the window last read it).
    fn later(&self, d: Duration) -> Outcome {
        Outcome::DelayUntil(self.window.now() + d.as_millis() as i64)
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

    /// Run one attempt of a callback for `job_id` (a queue job, or the orphan sweep and the
    /// drain: what an attempt gives up stays open in the window either way).
    pub async fn attempt(&self, job_id: &str, req: &CallbackRequest) -> Outcome {
        let from = req.from.clone().unwrap_or_default();
        let mut supersede: Option<String> = None;
        // At most: resolve an unknown send, find it unproven past the window, claim anew.
        for _ in 0..3 {
            let token = uuid::Uuid::new_v4().simple().to_string();
            let claim = self
                .window
                .claim(
                    &req.run_id,
                    &token,
                    supersede.as_deref(),
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
                        match self
                            .window
                            .mark_sent(&req.run_id, &u.token, &sid, "queued", Marked::Found)
                            .await
                        {
                            Err(e) => {
                                tracing::warn!(error = %e, "could not record the reconciled send; will try again");
                                return self.later(self.config.reconcile_poll);
                            }
                            Ok(MarkSent::OtherRun) => {
                                tracing::warn!(%sid, "the message found is another run's; still resolving");
                                return self.later(self.config.reconcile_poll);
                            }
                            Ok(_) => {}
                        }
                        self.stats.record(SmsEvent::Reconciled);
                        tracing::info!(%sid, "an earlier attempt's send was found; not sending again");
                        return Outcome::Completed(
                            json!({"runId": req.run_id, "messageSid": sid, "status": "sent", "deduplicated": true, "reconciled": true}),
                        );
                    }
                    // the claim call just touched the attempt: the sweep sees a resolver alive
                    Resolution::Wait(d) => return self.later(d),
                    Resolution::Indistinct(n) => {
                        let reason = format!(
                            "{n} messages with this recipient, sender and body were found and cannot be told apart: the callback may or may not have been sent"
                        );
                        self.escalate_unknown(req, &u, &reason).await;
                        match self
                            .window
                            .settle_unknown(&req.run_id, &u.token, &reason)
                            .await
                        {
                            Ok(_) => {
                                self.stats.record(SmsEvent::Unknown);
                                return Outcome::Completed(
                                    json!({"runId": req.run_id, "messageSid": null, "status": "unknown", "deduplicated": false}),
                                );
                            }
                            Err(e) => {
                                tracing::warn!(error = %e, "could not settle the unknown attempt; will try again");
                                return self.later(self.config.reconcile_poll);
                            }
                        }
                    }
                    Resolution::Lost => {
                        self.stats.record(SmsEvent::Lost);
                        tracing::warn!(
                            "no evidence of an earlier send within the reconcile window; sending"
                        );
                        // the next claim replaces the attempt in the same step (no gap in the claim)
                        supersede = Some(u.token.clone());
                    }
                },
            }
        }
        self.later(self.config.reconcile_poll)
    }

    /// Escalate an attempt whose outcome stays unknown, once per attempt.
    async fn escalate_unknown(&self, req: &CallbackRequest, u: &Unresolved, reason: &str) {
        if u.escalated {
            return;
        }
        match self.window.flag_escalated(&req.run_id).await {
            Ok(true) => {
                let e = crate::escalation::Escalation {
                    run_id: req.run_id.clone(),
                    reason: reason.to_string(),
                    last_status: None,
                    error_code: None,
                    kind: crate::escalation::EscalationKind::Unknown,
                };
                if let Err(err) = self.escalator.escalate(&e).await {
                    tracing::error!(error = %err, "could not escalate an unknown send");
                }
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "could not flag the escalation; will try again"),
        }
    }

    async fn send(&self, req: &CallbackRequest, token: &str) -> Outcome {
        let msg = CreateMessage {
            to: req.to.clone(),
            body: req.body.clone(),
            from: req.from.clone(),
            status_callback: self.status_callback(&req.run_id, token),
        };
        match self.twilio.create_message(&msg).await {
            SendOutcome::Accepted(m) => {
                self.auth_ok();
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
                            Marked::Sent,
                        )
                        .await
                    {
                        Ok(done) => {
                            if done == MarkSent::Overrun {
                                tracing::warn!(sid = %m.sid, "sent marker written after the claim changed hands (window overrun)");
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
                    // The attempt record still says "claimed" and the claim (a lease) stands: the
                    // next attempt or the sweep resolves it by receipt or lookup and finds this
                    // message, so nothing is sent twice.
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
            SendOutcome::AuthRefused(e) => {
                // Twilio created nothing: keep the claim and the callback (retry), use no attempt.
                self.auth_refused("create", &e);
                let wait = self.config.retry_later_default.max(AUTH_RETRY);
                if let Err(re) = self
                    .window
                    .release(&req.run_id, token, &e.to_string(), "released", wait)
                    .await
                {
                    tracing::warn!(error = %re, "could not release the claim");
                }
                self.later(wait)
            }
            SendOutcome::Permanent(e) => {
                self.auth_ok();
                self.stats.record(SmsEvent::Permanent);
                // Escalate before closing the run: a crash in between leaves the attempt open
                // (the sweep resolves it), never a closed run nobody was told of (model: F2).
                let escalation = crate::escalation::Escalation {
                    run_id: req.run_id.clone(),
                    reason: format!("send failed permanently: {e}"),
                    last_status: None,
                    error_code: e.code.map(|c| c.to_string()),
                    kind: crate::escalation::EscalationKind::Permanent,
                };
                if let Err(err) = self.escalator.escalate(&escalation).await {
                    tracing::error!(error = %err, "could not escalate a permanent send failure; will try again");
                    return self.later(self.config.retry_later_default);
                }
                if let Err(re) = self
                    .window
                    .release(
                        &req.run_id,
                        token,
                        &e.to_string(),
                        "send-failed",
                        Duration::ZERO,
                    )
                    .await
                {
                    tracing::warn!(error = %re, "could not release the claim after a permanent failure");
                }
                Outcome::unrecoverable(format!("{e}; not retried: Twilio refused the message"))
            }
            SendOutcome::RetryLater {
                retry_after,
                reason,
                ..
            } => {
                self.stats.record(SmsEvent::RetryLater);
                let wait = retry_after.unwrap_or(self.config.retry_later_default);
                if let Err(e) = self
                    .window
                    .release(&req.run_id, token, &reason, "released", wait)
                    .await
                {
                    tracing::warn!(error = %e, "could not release the claim");
                }
                tracing::info!(reason = %redact(&reason), wait_ms = wait.as_millis() as u64, "Twilio did not take the message; retrying later");
                self.later(wait)
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

    /// Look for proof that an unknown send reached Twilio: a receipt, then every page of the
    /// list call back to the lookback. A lookup that keeps failing past
    /// `RINGBACK_UNKNOWN_ESCALATE_MS` is escalated once; nothing is resent without a complete
    /// lookup that found nothing for the whole reconcile window.
    async fn resolve(&self, req: &CallbackRequest, u: &Unresolved) -> Resolution {
        if let Some(sid) = &u.receipt_sid {
            return Resolution::Sent(sid.clone());
        }
        let from = match (&self.twilio.config().sender, u.from.is_empty()) {
            (_, false) => Some(u.from.clone()),
            (Sender::From(f), true) => Some(f.clone()),
            (Sender::MessagingService(_), true) => None,
        };
        let now = self.window.now();
        let unknown_for = now - u.since;
        let failed = |what: String| {
            let reason = format!(
                "the send's outcome is unknown and Twilio lookups keep failing ({what}): the callback may or may not have been sent"
            );
            (
                reason,
                unknown_for >= self.config.unknown_escalate.as_millis() as i64,
            )
        };
        let created_after =
            chrono::DateTime::from_timestamp_millis(u.since - LOOKBACK.as_millis() as i64)
                .unwrap_or_default();
        let search = self
            .twilio
            .list_messages_since(&u.to, from.as_deref(), created_after, Default::default())
            .await;
        let messages = match search {
            Ok(found) if found.complete => {
                self.auth_ok();
                found.messages
            }
            Ok(_) => {
                let (reason, due) = failed("more pages than a lookup reads".into());
                if due {
                    self.escalate_unknown(req, u, &reason).await;
                }
                return Resolution::Wait(self.config.reconcile_poll);
            }
            Err(e) => {
                if e.is_auth_refused() {
                    self.auth_refused("list", &e);
                }
                tracing::warn!(error = %e, run_id = %req.run_id, "lookup failed; will try again");
                let (reason, due) = failed(e.to_string());
                if due {
                    self.escalate_unknown(req, u, &reason).await;
                }
                return Resolution::Wait(self.config.reconcile_poll);
            }
        };
        let mut candidates = vec![];
        for m in messages {
            if !same_body(m.body.as_deref(), &u.body) {
                continue;
            }
            // A message ringback linked to another run (sent or receipted) is not this run's.
            match self.window.run_of_message(&m.sid).await {
                Ok(Some(other)) if other != req.run_id => continue,
                Ok(Some(_)) => return Resolution::Sent(m.sid),
                Ok(None) => candidates.push(m.sid),
                Err(e) => {
                    tracing::warn!(error = %e, "lookup failed; will try again");
                    return Resolution::Wait(self.config.reconcile_poll);
                }
            }
        }
        match candidates.len() {
            0 => {}
            1 => return Resolution::Sent(candidates.remove(0)),
            n => return Resolution::Indistinct(n),
        }
        let open_until = u.since + self.config.reconcile_window.as_millis() as i64;
        if now >= open_until {
            Resolution::Lost
        } else {
            Resolution::Wait(
                Duration::from_millis((open_until - now) as u64).min(self.config.reconcile_poll),
            )
        }
    }
}

/// `url` with the run and the attempt token in its query. The query goes before any
/// `#rc=…&rp=…` fragment: that part is Twilio's own connection overrides, which must stay last.
fn status_callback_url(url: &str, run_id: &str, token: &str) -> String {
    let (base, fragment) = url.split_at(url.find('#').unwrap_or(url.len()));
    let sep = if base.contains('?') { '&' } else { '?' };
    let encoded: String =
        serde_urlencoded::to_string([("runId", run_id), ("attempt", token)]).unwrap_or_default();
    format!("{base}{sep}{encoded}{fragment}")
}

/// Whether Twilio's stored body is the one sent: equal, or equal after the prefix Twilio adds to
/// a trial account's messages (a lookup must not miss a send because Twilio changed its body).
fn same_body(stored: Option<&str>, sent: &str) -> bool {
    let Some(stored) = stored else { return false };
    stored == sent || stored.strip_prefix(TRIAL_PREFIX) == Some(sent)
}

/// What Twilio prefixes to a trial account's message bodies.
const TRIAL_PREFIX: &str = "Sent from your Twilio trial account - ";

/// While Twilio refuses the credentials: how often a callback tries again, and the error line.
const AUTH_RETRY: Duration = Duration::from_secs(5);
const AUTH_LOG_EVERY: Duration = Duration::from_secs(30);

enum Resolution {
    Sent(String),
    Wait(Duration),
    /// Several unlinked messages match: cannot tell which (if any) is this run's.
    Indistinct(usize),
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
    fn the_status_callback_keeps_twilios_fragment_last() {
        assert_eq!(
            status_callback_url("https://h/cb#rc=5&rp=5xx", "r", "t"),
            "https://h/cb?runId=r&attempt=t#rc=5&rp=5xx"
        );
        assert_eq!(
            status_callback_url("https://h/cb?x=1", "r", "t"),
            "https://h/cb?x=1&runId=r&attempt=t"
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
    fn invariants_refuse_a_pending_ttl_shorter_than_a_call() {
        let lock = (Duration::from_secs(30), Duration::from_secs(30));
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
        let short_lease = SmsConfig {
            claim_lease: Duration::from_secs(100),
            ..SmsConfig::default()
        };
        assert_eq!(
            short_lease
                .validate(Duration::from_secs(8), lock.0, lock.1)
                .unwrap_err()
                .setting,
            "RINGBACK_CLAIM_LEASE_MS",
            "30 s lock + 2 × 30 s sweep + 15 s claim = 105 s: a 100 s lease could lapse before stall recovery"
        );
    }
}
