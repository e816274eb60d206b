//! Settings of the SMS processor: the window's timings and their invariants (checked once, at
//! start, every broken one named), and what `serve` builds from them after a send.

use std::time::Duration;

use super::CrashAt;
use crate::window::WindowTimes;
use ringback_shared::settings::{ConfigError, ConfigErrors, Invariant, Severity, judge};

/// What must fit between a provider call's timeout and the pending TTL: Redis round trips and
/// scheduling after Twilio answered, so a live attempt always marks sent before its claim expires.
pub const SAFETY_MARGIN: Duration = Duration::from_secs(2);

/// How far before an unknown send a matching message may have been created: the legacy
/// worker's claim lives 600 s, so a legacy attempt we take over may be that old.
pub const LOOKBACK: Duration = Duration::from_secs(600);

/// Twilio's longest `ValidityPeriod` (and its default): 10 hours.
pub const MAX_VALIDITY_S: u64 = 36_000;

/// Tie Twilio's queue to the delivery deadline: the `ValidityPeriod` to send (seconds). A
/// message Twilio may still deliver after the deadline would make a receipt-missing escalation
/// untrue (a person acting on it texts the human a second time). Unset, it is the deadline
/// (Twilio then fails what it still holds, with 30036); set longer than the deadline, refused.
pub fn validity_period(
    given: Option<u32>,
    delivery_deadline: Duration,
) -> Result<u32, ConfigError> {
    let deadline_s = delivery_deadline.as_secs();
    match given {
        Some(v) if u64::from(v) > deadline_s => Err(ConfigError::new(
            "TWILIO_VALIDITY_PERIOD_S",
            format!(
                "{v} s is longer than RINGBACK_DELIVERY_DEADLINE_MS ({deadline_s} s): Twilio could deliver \
                 a text after ringback escalated it as not delivered; lower it, or raise the deadline"
            ),
        )),
        Some(v) => Ok(v),
        None => Ok(deadline_s.clamp(1, MAX_VALIDITY_S) as u32),
    }
}

/// Settings of the SMS processor (`RINGBACK_*` window settings).
#[derive(Debug, Clone)]
pub struct SmsConfig {
    /// `RINGBACK_CLAIM_PREFIX`: a run's claim key is `<prefix><runId>`, shared with the legacy
    /// worker (`agent-callback:` default); the deployment's other keys are named by it too.
    pub claim_prefix: String,
    /// A claimed attempt is alive this long (past it, with no sent marker, it is dead).
    pub pending_ttl: Duration,
    /// The claim key's lease: it exists while an attempt may be unresolved, up to this long
    /// after the last ringback step on it (`docs/exactly-once.md`, "Why the defaults").
    pub claim_lease: Duration,
    /// An attempt whose outcome stays unknown this long is escalated once (still resolved).
    pub unknown_escalate: Duration,
    /// `RINGBACK_SENT_TTL_MS`: how long a run's sent marker and records live; a run added
    /// again within it is not texted again (24 h default).
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
    /// Every sender the deployment's texts go out from besides the configured one (the legacy
    /// worker's, a Messaging Service's SID): a message from any other sender of the account is
    /// never evidence of this deployment's send. Empty: every sender of the account counts.
    pub senders: Vec<String>,
    /// The job names that are callbacks (`agent-callback`); a job of another name is left for
    /// the worker that handles it (`SmsProcessor::declines`).
    pub callback_job_names: Vec<String>,
    /// A callback held by a fault of this deployment this long is escalated once (`held`); it
    /// is still texted once the fault is fixed.
    pub hold_escalate: Duration,
    /// The legacy fleet beside ringback during a cutover: its Twilio create's timeout (the
    /// twilio-node default, 30 s), and its BullMQ lock and stall timings when they differ from
    /// ringback's (`None`: ringback's own). The window's assumptions A3 and A4 hold for them too.
    pub legacy: LegacyFleet,
    /// Quiet hours (`RINGBACK_QUIET_HOURS`, `RINGBACK_QUIET_HOURS_TZ`): off when `None`.
    pub quiet: Option<crate::quiet::Quiet>,
    /// The replies queue (`RINGBACK_REPLIES_QUEUE`); `None` = `<queue>-replies`.
    pub replies_queue: Option<String>,
    /// How long inbound messages and their markers are kept (`RINGBACK_INBOUND_RETENTION_MS`).
    pub inbound_retention: Duration,
    /// How long after Redis is seen to have lost acknowledged writes (its server identity
    /// changed) a fresh claim looks for evidence before it sends: [`SmsConfig::lost_writes_window_for`].
    pub lost_writes_window: Duration,
    /// The escalation ladder's defaults, voice and caps ([`crate::ladder::settings`]).
    pub ladder: crate::ladder::settings::LadderConfig,
}

/// The legacy workers' timings the window's invariants must cover (`RINGBACK_LEGACY_*`).
#[derive(Debug, Clone)]
pub struct LegacyFleet {
    /// `RINGBACK_LEGACY_CREATE_TIMEOUT_MS`: the reconcile window must outlast it (30 s default).
    pub create_timeout: Duration,
    /// `RINGBACK_LEGACY_LOCK_DURATION_MS`: the legacy workers' BullMQ lock duration; `None`
    /// when it is ringback's own. The claim lease must cover it.
    pub lock_duration: Option<Duration>,
    /// `RINGBACK_LEGACY_STALLED_INTERVAL_MS`: the legacy workers' BullMQ stalled interval;
    /// `None` when it is ringback's own. The claim lease must cover two of them.
    pub stalled_interval: Option<Duration>,
}

impl Default for LegacyFleet {
    fn default() -> Self {
        Self {
            create_timeout: Duration::from_secs(30),
            lock_duration: None,
            stalled_interval: None,
        }
    }
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
            senders: vec![],
            callback_job_names: vec![crate::callback::CALLBACK_JOB_NAME.into()],
            hold_escalate: Duration::from_secs(900),
            legacy: LegacyFleet::default(),
            quiet: None,
            replies_queue: None,
            inbound_retention: crate::replies::DEFAULT_RETENTION,
            lost_writes_window: Duration::from_secs(120),
            ladder: Default::default(),
        }
    }
}

impl SmsConfig {
    /// The lost-writes window for workers whose BullMQ lock and stall sweep take
    /// `lock_duration` and `stalled_interval` (the legacy fleet's, where longer): a job whose
    /// claim and completion Redis forgot runs again once its lock expired and a stall sweep
    /// found it, so within lock + stall interval of the loss; twice that, for a sweep that
    /// comes late and the retry's own wait for a worker. 2 min at the defaults.
    pub fn lost_writes_window_for(
        &self,
        lock_duration: Duration,
        stalled_interval: Duration,
    ) -> Duration {
        let lock = self
            .legacy
            .lock_duration
            .map_or(lock_duration, |l| l.max(lock_duration));
        let stalled = self
            .legacy
            .stalled_interval
            .map_or(stalled_interval, |s| s.max(stalled_interval));
        (lock + stalled) * 2
    }

    /// The window's invariants against the provider timeout and the worker's lock timings,
    /// each with its verdict. They are the assumptions of the protocol's model
    /// (`docs/window-protocol.md`, `model/`); `check-config` prints them all.
    pub fn invariants(
        &self,
        provider_timeout: Duration,
        lock_duration: Duration,
        stalled_interval: Duration,
    ) -> Vec<Invariant> {
        let mut all = self.record_invariants();
        all.extend(self.timing_invariants(provider_timeout, lock_duration, stalled_interval));
        all
    }

    /// The rules between the record lifetimes alone (no worker or Twilio timing): what every
    /// command that reads or writes records keeps, `serve` included.
    pub fn record_invariants(&self) -> Vec<Invariant> {
        let ms = |d: Duration| d.as_millis();
        vec![
            Invariant::new(
                "RINGBACK_SENT_TTL_MS",
                self.pending_ttl < self.sent_ttl,
                Severity::Error,
                format!(
                    "RINGBACK_SENT_TTL_MS ({}) > RINGBACK_PENDING_TTL_MS ({})",
                    ms(self.sent_ttl),
                    ms(self.pending_ttl)
                ),
                "must be longer than RINGBACK_PENDING_TTL_MS",
            ),
            Invariant::new(
                "RINGBACK_RECONCILE_WINDOW_MS",
                !self.reconcile_poll.is_zero() && !self.reconcile_window.is_zero(),
                Severity::Error,
                format!(
                    "RINGBACK_RECONCILE_WINDOW_MS ({}) and RINGBACK_RECONCILE_POLL_MS ({}) > 0",
                    ms(self.reconcile_window),
                    ms(self.reconcile_poll)
                ),
                "the reconcile window and poll must be positive",
            ),
            Invariant::new(
                // the setting changed from its default is the one to name
                if self.sent_ttl != SmsConfig::default().sent_ttl {
                    "RINGBACK_SENT_TTL_MS"
                } else {
                    "RINGBACK_CLAIM_LEASE_MS"
                },
                self.claim_lease <= self.sent_ttl,
                Severity::Error,
                format!(
                    "RINGBACK_CLAIM_LEASE_MS ({}) <= RINGBACK_SENT_TTL_MS ({})",
                    ms(self.claim_lease),
                    ms(self.sent_ttl)
                ),
                format!(
                    "RINGBACK_SENT_TTL_MS ({} ms) is shorter than RINGBACK_CLAIM_LEASE_MS ({} ms): the attempt record must outlive the claim (raise the one or lower the other)",
                    ms(self.sent_ttl),
                    ms(self.claim_lease)
                ),
            ),
            Invariant::new(
                "RINGBACK_UNKNOWN_ESCALATE_MS",
                !self.unknown_escalate.is_zero(),
                Severity::Error,
                format!(
                    "RINGBACK_UNKNOWN_ESCALATE_MS ({}) > 0",
                    ms(self.unknown_escalate)
                ),
                "must be positive",
            ),
        ]
    }

    /// The rules between the window's timings and the worker's lock and Twilio's timeout.
    fn timing_invariants(
        &self,
        provider_timeout: Duration,
        lock_duration: Duration,
        stalled_interval: Duration,
    ) -> Vec<Invariant> {
        let ms = |d: Duration| d.as_millis();
        let handback = lock_duration + stalled_interval * 2 + self.pending_ttl;
        let legacy_lock = self.legacy.lock_duration.unwrap_or(lock_duration);
        let legacy_stalled = self.legacy.stalled_interval.unwrap_or(stalled_interval);
        let legacy_handback = legacy_lock + legacy_stalled * 2 + self.pending_ttl;
        vec![
            Invariant::new(
                "RINGBACK_PENDING_TTL_MS",
                provider_timeout + SAFETY_MARGIN < self.pending_ttl,
                Severity::Error,
                format!(
                    "RINGBACK_PENDING_TTL_MS ({}) > TWILIO_TIMEOUT_MS + {} ms ({})",
                    ms(self.pending_ttl),
                    ms(SAFETY_MARGIN),
                    ms(provider_timeout + SAFETY_MARGIN)
                ),
                format!(
                    "must exceed TWILIO_TIMEOUT_MS ({} ms) plus a {} ms safety margin: otherwise a live \
                     attempt's claim can expire mid-call and a duplicate job send a second text",
                    ms(provider_timeout),
                    ms(SAFETY_MARGIN)
                ),
            ),
            Invariant::new(
                "RINGBACK_CLAIM_LEASE_MS",
                self.claim_lease > handback,
                Severity::Error,
                format!(
                    "RINGBACK_CLAIM_LEASE_MS ({}) > lock duration + 2 × stalled interval + RINGBACK_PENDING_TTL_MS ({})",
                    ms(self.claim_lease),
                    ms(handback)
                ),
                format!(
                    "must exceed the lock duration + 2 × the stalled interval + RINGBACK_PENDING_TTL_MS \
                     ({} ms): stall recovery must hand a dead attempt's job back while its claim still \
                     fences the legacy worker off",
                    ms(handback)
                ),
            ),
            // A4 for the legacy fleet: a legacy create that started before the reconcile window
            // must have returned when it closes, or ringback may resend beside a legacy send
            // still in flight. (A warning: a unit that ran before must not stop starting.)
            Invariant::new(
                "RINGBACK_RECONCILE_WINDOW_MS",
                self.reconcile_window > self.legacy.create_timeout,
                Severity::Warning,
                format!(
                    "RINGBACK_RECONCILE_WINDOW_MS ({} ms) > RINGBACK_LEGACY_CREATE_TIMEOUT_MS ({} ms)",
                    ms(self.reconcile_window),
                    ms(self.legacy.create_timeout)
                ),
                format!(
                    "RINGBACK_RECONCILE_WINDOW_MS ({} ms) should exceed RINGBACK_LEGACY_CREATE_TIMEOUT_MS ({} ms): a legacy worker's create still in flight when the window closes could be followed by ringback's resend (a second text)",
                    ms(self.reconcile_window),
                    ms(self.legacy.create_timeout)
                ),
            ),
            // A3 for the legacy fleet's timings: stall recovery must hand a dead attempt's job
            // back while its claim still fences the legacy worker off, whichever fleet's checker
            // runs
            Invariant::new(
                "RINGBACK_CLAIM_LEASE_MS",
                self.claim_lease > legacy_handback,
                Severity::Warning,
                format!(
                    "RINGBACK_CLAIM_LEASE_MS ({} ms) > the legacy fleet's lock duration + 2 × its stalled interval + RINGBACK_PENDING_TTL_MS ({} ms)",
                    ms(self.claim_lease),
                    ms(legacy_handback)
                ),
                format!(
                    "RINGBACK_CLAIM_LEASE_MS ({} ms) should exceed the legacy fleet's lock duration + 2 × its stalled interval + RINGBACK_PENDING_TTL_MS ({} ms, RINGBACK_LEGACY_LOCK_DURATION_MS / RINGBACK_LEGACY_STALLED_INTERVAL_MS): a legacy stall check could hand a dead attempt's job back after its claim ended",
                    ms(self.claim_lease),
                    ms(legacy_handback)
                ),
            ),
            Invariant::new(
                "RINGBACK_STATUS_CALLBACK_URL",
                self.status_callback_url.is_some(),
                Severity::Warning,
                "receipts on: RINGBACK_STATUS_CALLBACK_URL is set (a receipt proves a send whose answer was lost)",
                "RINGBACK_STATUS_CALLBACK_URL is not set: no receipt can prove a send whose answer was lost, so each such callback \
                 is settled unknown and escalated for a person to check (set it to serve's \
                 /api/notify/webhook/status)",
            ),
        ]
    }

    /// Check the settings and every invariant; every broken one at once, or the warnings worth
    /// logging.
    pub fn validate(
        &self,
        provider_timeout: Duration,
        lock_duration: Duration,
        stalled_interval: Duration,
    ) -> Result<Vec<String>, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        if self.claim_prefix.is_empty() {
            errors.push(ConfigError::new(
                "RINGBACK_CLAIM_PREFIX",
                "must not be empty",
            ));
        }
        if let Some(url) = &self.status_callback_url
            && !(url.starts_with("https://") || url.starts_with("http://"))
        {
            errors.push(ConfigError::new(
                "RINGBACK_STATUS_CALLBACK_URL",
                "must be an http(s) URL",
            ));
        }
        let invariants = self.invariants(provider_timeout, lock_duration, stalled_interval);
        let mut warnings = judge(&invariants, &mut errors);
        if self.crash_at.is_some() {
            warnings.push(
                "RINGBACK_CRASH_AT is set: this process will abort on purpose (drills only)".into(),
            );
        }
        errors.or(Some(warnings))
    }

    /// The receipt store and the escalator of callbacks on queue `prefix`/`queue`.
    pub fn after_send(
        &self,
        conn: ringback_store::connection::Conn,
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
        let calls = |q: &str| {
            ringback_queue::calls::Calls::new(
                conn.clone(),
                ringback_store::keys::QueueKeys::new(prefix, q),
                Default::default(),
            )
        };
        let escalator = crate::escalation::Escalator {
            escalations: calls(&escalation_queue),
            callbacks: calls(queue),
            receipts: receipts.clone(),
            fallback_to: self.fallback_to.clone(),
            callback_job_name: self
                .callback_job_names
                .first()
                .cloned()
                .unwrap_or_else(|| crate::callback::CALLBACK_JOB_NAME.into()),
            ladders: self.ladders(conn.clone()),
        };
        (receipts, escalator)
    }

    /// The ladders' records over `conn`, kept as long as a run's records.
    pub fn ladders(
        &self,
        conn: ringback_store::connection::Conn,
    ) -> crate::ladder::record::LadderRecord {
        let topology =
            ringback_store::slots::Topology::forced_or(ringback_store::slots::Topology::of(&conn));
        crate::ladder::record::LadderRecord::new(
            conn,
            Default::default(),
            &self.claim_prefix,
            topology,
            self.sent_ttl,
        )
        .with_lost_writes_window(self.lost_writes_window)
    }

    /// The replies of callbacks on queue `prefix`/`queue`: questions, the inbound messages and
    /// the replies queue (`<queue>-replies` unless configured otherwise).
    pub fn replies(
        &self,
        conn: ringback_store::connection::Conn,
        prefix: &str,
        queue: &str,
    ) -> crate::replies::Replies {
        let replies_queue = self
            .replies_queue
            .clone()
            .unwrap_or_else(|| format!("{queue}-replies"));
        let calls = |q: &str| {
            ringback_queue::calls::Calls::new(
                conn.clone(),
                ringback_store::keys::QueueKeys::new(prefix, q),
                Default::default(),
            )
        };
        crate::replies::Replies::new(
            conn.clone(),
            &self.claim_prefix,
            self.sent_ttl,
            self.inbound_retention,
            calls(&replies_queue),
            calls(queue),
            self.callback_job_names
                .first()
                .map_or(crate::callback::CALLBACK_JOB_NAME, |n| n.as_str()),
        )
    }

    pub(super) fn receipt_times(&self) -> crate::receipts::ReceiptTimes {
        crate::receipts::ReceiptTimes {
            record_ttl: self.sent_ttl,
            poll_after: self.receipt_poll_after,
        }
    }

    /// The window's times, for a provider whose calls take at most `provider_timeout`.
    pub(super) fn times(&self, provider_timeout: Duration) -> WindowTimes {
        WindowTimes {
            // never under half the margin: a pending TTL just over the provider timeout plus the
            // margin would otherwise give back every claim whose answer took a few ms (the
            // other half still covers the outcome script)
            replay_for: self
                .pending_ttl
                .saturating_sub(provider_timeout + SAFETY_MARGIN)
                .max(SAFETY_MARGIN / 2),
            pending_ttl: self.pending_ttl,
            lease: self.claim_lease,
            sent_ttl: self.sent_ttl,
            hold: self.reconcile_window + self.pending_ttl,
            poll_after: self.receipt_poll_after,
            lost_writes_window: self.lost_writes_window,
        }
    }
}
