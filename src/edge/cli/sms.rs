//! The claim/sent window's settings (`ringback worker`, `drain`, `resend`, `status`).

use crate::settings::{ConfigError, ConfigErrors};
use clap::Args;
use std::time::Duration;

/// The claim/sent window's settings.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Callbacks: the claim/sent window, receipts, escalation")]
pub struct SmsArgs {
    /// The prefix of the claim and sent keys, shared with the legacy worker (`<prefix><runId>`).
    #[arg(long, env = "RINGBACK_CLAIM_PREFIX", default_value = "agent-callback:")]
    pub claim_prefix: String,
    /// How long a claimed attempt is alive: past it, with no sent marker, it is dead. Must
    /// exceed TWILIO_TIMEOUT_MS plus 2 s.
    #[arg(long, env = "RINGBACK_PENDING_TTL_MS", default_value_t = 15_000)]
    pub pending_ttl_ms: u64,
    /// The claim key's lease while an attempt may be unresolved (refreshed by every step).
    #[arg(long, env = "RINGBACK_CLAIM_LEASE_MS", default_value_t = 600_000)]
    pub claim_lease_ms: u64,
    /// Escalate an attempt whose outcome stays unknown this long (once; still resolved).
    #[arg(long, env = "RINGBACK_UNKNOWN_ESCALATE_MS", default_value_t = 300_000)]
    pub unknown_escalate_ms: u64,
    /// How long a run's sent marker and attempt records live: a re-added run within it is not
    /// texted again.
    #[arg(long, env = "RINGBACK_SENT_TTL_MS", default_value_t = 86_400_000)]
    pub sent_ttl_ms: u64,
    /// How long a send whose answer was lost is looked for (receipt, lookup) before it is
    /// settled; must exceed the legacy workers' create timeout.
    #[arg(long, env = "RINGBACK_RECONCILE_WINDOW_MS", default_value_t = 60_000)]
    pub reconcile_window_ms: u64,
    /// How often, within the reconcile window, the evidence is looked at again.
    #[arg(long, env = "RINGBACK_RECONCILE_POLL_MS", default_value_t = 5_000)]
    pub reconcile_poll_ms: u64,
    /// Delay after a "retry later" answer without `Retry-After`.
    #[arg(long, env = "RINGBACK_RETRY_LATER_MS", default_value_t = 2_000)]
    pub retry_later_ms: u64,
    /// The public URL of serve's status webhook (`https://<host>/api/notify/webhook/status`);
    /// runId and attempt are added to its query. Unset: receipts come from polling alone, and a
    /// send whose answer was lost cannot be proven.
    #[arg(long, env = "RINGBACK_STATUS_CALLBACK_URL")]
    pub status_callback_url: Option<String>,
    /// Drills only: `<point>[:<probability>]`; honoured only with `RINGBACK_DRILL=1`.
    #[arg(long, env = "RINGBACK_CRASH_AT", hide = true)]
    pub crash_at: Option<String>,
    /// Drill mode: allows `RINGBACK_CRASH_AT` (a process that aborts on purpose) and the
    /// scripted processor (`RINGBACK_PROCESSOR=scripted`, which texts nobody).
    #[arg(
        long,
        hide = true,
        env = "RINGBACK_DRILL",
        action = clap::ArgAction::SetTrue,
        value_parser = clap::builder::FalseyValueParser::new()
    )]
    pub drill: bool,
    /// BullMQ queue for escalation jobs (default `<queue>-escalations`).
    #[arg(long, env = "RINGBACK_ESCALATION_QUEUE")]
    pub escalation_queue: Option<String>,
    /// Also text this number when a callback is escalated.
    #[arg(long, env = "RINGBACK_FALLBACK_TO")]
    pub fallback_to: Option<String>,
    /// A text not delivered this long after it was accepted is escalated; Twilio's
    /// `ValidityPeriod` defaults to it.
    #[arg(long, env = "RINGBACK_DELIVERY_DEADLINE_MS", default_value_t = 900_000)]
    pub delivery_deadline_ms: u64,
    /// Look an accepted message up when no terminal receipt came within this long.
    #[arg(long, env = "RINGBACK_RECEIPT_POLL_AFTER_MS", default_value_t = 60_000)]
    pub receipt_poll_after_ms: u64,
    /// Every sender this deployment's texts go out from besides TWILIO_FROM or the Messaging
    /// Service (the legacy worker's numbers, a service's SID), comma-separated: a lookup then
    /// never takes a message from another sender of the account for this deployment's.
    #[arg(long, env = "RINGBACK_SENDERS")]
    pub senders: Option<String>,
    /// Escalate a callback held by a fault of this deployment (a sender the account does not
    /// own, a region it may not text) once it was held this long; it is still texted once fixed.
    #[arg(long, env = "RINGBACK_HOLD_ESCALATE_MS", default_value_t = 900_000)]
    pub hold_escalate_ms: u64,
    /// The legacy workers' Twilio create timeout (twilio-node's default): the reconcile window
    /// must outlast it.
    #[arg(
        long,
        help_heading = "The legacy fleet beside ringback",
        env = "RINGBACK_LEGACY_CREATE_TIMEOUT_MS",
        default_value_t = 30_000
    )]
    pub legacy_create_timeout_ms: u64,
    /// The legacy workers' BullMQ lock duration, when it differs from ringback's.
    #[arg(
        long,
        help_heading = "The legacy fleet beside ringback",
        env = "RINGBACK_LEGACY_LOCK_DURATION_MS"
    )]
    pub legacy_lock_duration_ms: Option<u64>,
    /// The legacy workers' BullMQ stalled interval, when it differs from ringback's.
    #[arg(
        long,
        help_heading = "The legacy fleet beside ringback",
        env = "RINGBACK_LEGACY_STALLED_INTERVAL_MS"
    )]
    pub legacy_stalled_interval_ms: Option<u64>,
    /// The job names that are callbacks, comma-separated. A job of any other name is not
    /// ringback's: it goes back to delayed for a few seconds, its attempts untouched, for the
    /// worker that handles it.
    #[arg(
        long,
        env = "RINGBACK_CALLBACK_JOB_NAMES",
        default_value = "agent-callback"
    )]
    pub callback_job_names: String,

    /// The queue each reply the human sends lands in, once, as a job (`agent-reply`) for the
    /// producer's side to consume. Empty: `<queue>-replies`.
    #[arg(
        long,
        env = "RINGBACK_REPLIES_QUEUE",
        help_heading = "Replies and quiet hours"
    )]
    pub replies_queue: Option<String>,

    /// How long inbound messages are kept: the per-message marker that makes Twilio's retries
    /// harmless, and the messages that answered no question (ms).
    #[arg(
        long,
        env = "RINGBACK_INBOUND_RETENTION_MS",
        default_value_t = 604_800_000,
        help_heading = "Replies and quiet hours"
    )]
    pub inbound_retention_ms: u64,

    /// Quiet hours, such as `22:00-08:00`: a callback that is not `"urgent": true` waits in
    /// delayed until they end. Unset: none.
    #[arg(
        long,
        env = "RINGBACK_QUIET_HOURS",
        help_heading = "Replies and quiet hours"
    )]
    pub quiet_hours: Option<String>,

    /// The IANA time zone quiet hours are read in (such as `Europe/Paris`); a job's
    /// `"timeZone"` overrides it. Required with RINGBACK_QUIET_HOURS.
    #[arg(
        long,
        env = "RINGBACK_QUIET_HOURS_TZ",
        help_heading = "Replies and quiet hours"
    )]
    pub quiet_hours_tz: Option<String>,

    /// The escalation ladder.
    #[command(flatten)]
    pub ladder: super::ladder::LadderArgs,
}

impl SmsArgs {
    /// The window's settings; every broken one at once.
    pub fn to_config(&self) -> Result<crate::callbacks::sms::SmsConfig, ConfigErrors> {
        let mut errors = ConfigErrors::default();
        let crash_at = self
            .crash_at
            .as_deref()
            .filter(|c| !c.is_empty())
            .map(str::parse)
            .transpose();
        let crash_at = errors.take(crash_at);
        if matches!(crash_at, Some(Some(_))) && !self.drill {
            errors.push(ConfigError::new(
                "RINGBACK_CRASH_AT",
                "honoured only in drill mode (RINGBACK_DRILL=1): it aborts this process on purpose",
            ));
        }
        if let Some(url) = self
            .status_callback_url
            .as_deref()
            .filter(|u| !u.is_empty())
        {
            let problem = if !(url.starts_with("https://") || url.starts_with("http://"))
                || crate::queue::config::url_host(url).is_none()
            {
                Some(format!(
                    "malformed: {url:?} is not an http(s) URL with a host"
                ))
            } else {
                crate::queue::config::placeholder(url)
            };
            if let Some(problem) = problem {
                errors.push(ConfigError::new(
                    "RINGBACK_STATUS_CALLBACK_URL",
                    format!(
                        "{problem}: set serve's public URL, or leave it empty to rely on polling"
                    ),
                ));
            }
        }
        let fallback_to = match self.fallback_to.as_deref().filter(|f| !f.is_empty()) {
            Some(f) if !crate::twilio::message::is_e164(f) => {
                errors.push(ConfigError::new(
                    "RINGBACK_FALLBACK_TO",
                    "must be an E.164 number",
                ));
                None
            }
            other => other.map(str::to_string),
        };
        let senders: Vec<String> = self
            .senders
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        let refused: Vec<&str> = senders
            .iter()
            .filter(|s| crate::twilio::message::sender_form(s).is_none())
            .map(String::as_str)
            .collect();
        if !refused.is_empty() {
            errors.push(ConfigError::new(
                "RINGBACK_SENDERS",
                format!(
                    "{} {} not a sender Twilio accepts (E.164 number, short code, alphanumeric ID, or MG service SID)",
                    refused.join(", "),
                    if refused.len() == 1 { "is" } else { "are" }
                ),
            ));
        }
        let callback_job_names: Vec<String> = self
            .callback_job_names
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if callback_job_names.is_empty() {
            errors.push(ConfigError::new(
                "RINGBACK_CALLBACK_JOB_NAMES",
                "names no job: every job would be left for another worker",
            ));
        }
        if callback_job_names
            .iter()
            .any(|n| n.chars().any(char::is_control))
        {
            errors.push(ConfigError::new(
                "RINGBACK_CALLBACK_JOB_NAMES",
                "a name holds control characters",
            ));
        }
        let quiet = self.quiet(&mut errors);
        if self.inbound_retention_ms < 86_400_000 {
            errors.push(ConfigError::new(
                "RINGBACK_INBOUND_RETENTION_MS",
                "must be at least a day (86400000): the per-message marker must outlive Twilio's retries of an inbound webhook",
            ));
        }
        let ladder = self.ladder.to_config(
            self.status_callback_url
                .as_deref()
                .is_some_and(|u| !u.is_empty()),
            &mut errors,
        );
        let crash_at = errors.or(crash_at)?;
        Ok(crate::callbacks::sms::SmsConfig {
            ladder,
            crash_at,
            fallback_to,
            senders,
            callback_job_names,
            quiet,
            ..self.window()
        })
    }

    /// Quiet hours and their zone; both named when one is wrong or missing.
    fn quiet(&self, errors: &mut ConfigErrors) -> Option<crate::callbacks::quiet::Quiet> {
        let hours = self.quiet_hours.as_deref().filter(|h| !h.is_empty());
        let zone = self.quiet_hours_tz.as_deref().filter(|z| !z.is_empty());
        let tz = zone.map(|z| {
            jiff::tz::TimeZone::get(z).map_err(|_| {
                ConfigError::new(
                    "RINGBACK_QUIET_HOURS_TZ",
                    format!("{z:?} is not a time zone of the IANA database (such as Europe/Paris)"),
                )
            })
        });
        let tz = errors.take(tz.transpose()).flatten();
        let parsed = hours.map(str::parse::<crate::callbacks::quiet::QuietHours>);
        let parsed = errors.take(parsed.transpose()).flatten();
        if hours.is_some() && zone.is_none() {
            errors.push(ConfigError::new(
                "RINGBACK_QUIET_HOURS_TZ",
                "is required with RINGBACK_QUIET_HOURS: the hours are a person's night, read in their zone",
            ));
        }
        Some(crate::callbacks::quiet::Quiet {
            hours: parsed?,
            zone: tz?,
            zone_name: zone?.to_string(),
        })
    }

    /// The rule between `TWILIO_VALIDITY_PERIOD_S` and the delivery deadline, with its verdict.
    pub fn validity_invariant(&self, twilio: &super::TwilioArgs) -> crate::settings::Invariant {
        let deadline_s = self.delivery_deadline_ms / 1000;
        let given = twilio.validity_period_s.map(u64::from);
        crate::settings::Invariant::new(
            "TWILIO_VALIDITY_PERIOD_S",
            given.is_none_or(|v| v <= deadline_s),
            crate::settings::Severity::Error,
            format!(
                "TWILIO_VALIDITY_PERIOD_S ({}) <= RINGBACK_DELIVERY_DEADLINE_MS ({deadline_s} s)",
                given.map_or("unset: the deadline".into(), |v| format!("{v} s"))
            ),
            "Twilio could deliver a text after ringback escalated it as not delivered",
        )
    }

    /// The window's timings and names as given, with nothing that can fail to parse: what
    /// `check-config` judges the invariants on even when another setting is broken.
    pub fn window(&self) -> crate::callbacks::sms::SmsConfig {
        crate::callbacks::sms::SmsConfig {
            claim_prefix: self.claim_prefix.clone(),
            pending_ttl: Duration::from_millis(self.pending_ttl_ms),
            claim_lease: Duration::from_millis(self.claim_lease_ms),
            unknown_escalate: Duration::from_millis(self.unknown_escalate_ms),
            sent_ttl: Duration::from_millis(self.sent_ttl_ms),
            reconcile_window: Duration::from_millis(self.reconcile_window_ms),
            reconcile_poll: Duration::from_millis(self.reconcile_poll_ms),
            retry_later_default: Duration::from_millis(self.retry_later_ms),
            status_callback_url: self.status_callback_url.clone().filter(|u| !u.is_empty()),
            crash_at: None,
            escalation_queue: self.escalation_queue.clone().filter(|q| !q.is_empty()),
            fallback_to: None,
            delivery_deadline: Duration::from_millis(self.delivery_deadline_ms),
            receipt_poll_after: Duration::from_millis(self.receipt_poll_after_ms),
            senders: vec![],
            callback_job_names: vec![],
            hold_escalate: Duration::from_millis(self.hold_escalate_ms),
            legacy: crate::callbacks::sms::LegacyFleet {
                create_timeout: Duration::from_millis(self.legacy_create_timeout_ms),
                lock_duration: self.legacy_lock_duration_ms.map(Duration::from_millis),
                stalled_interval: self.legacy_stalled_interval_ms.map(Duration::from_millis),
            },
            quiet: None,
            replies_queue: self.replies_queue.clone().filter(|q| !q.is_empty()),
            inbound_retention: Duration::from_millis(self.inbound_retention_ms),
            lost_writes_window: Duration::from_secs(120),
            ladder: Default::default(),
        }
    }

    /// The effective settings, for `check-config` (read even when invalid). The fallback
    /// number is masked: phone numbers never appear in full.
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("RINGBACK_CLAIM_PREFIX", self.claim_prefix.clone()),
            ("RINGBACK_PENDING_TTL_MS", self.pending_ttl_ms.to_string()),
            ("RINGBACK_CLAIM_LEASE_MS", self.claim_lease_ms.to_string()),
            (
                "RINGBACK_UNKNOWN_ESCALATE_MS",
                self.unknown_escalate_ms.to_string(),
            ),
            ("RINGBACK_SENT_TTL_MS", self.sent_ttl_ms.to_string()),
            (
                "RINGBACK_RECONCILE_WINDOW_MS",
                self.reconcile_window_ms.to_string(),
            ),
            (
                "RINGBACK_RECONCILE_POLL_MS",
                self.reconcile_poll_ms.to_string(),
            ),
            ("RINGBACK_RETRY_LATER_MS", self.retry_later_ms.to_string()),
            (
                "RINGBACK_STATUS_CALLBACK_URL",
                self.status_callback_url.clone().unwrap_or_default(),
            ),
            (
                "RINGBACK_DELIVERY_DEADLINE_MS",
                self.delivery_deadline_ms.to_string(),
            ),
            (
                "RINGBACK_RECEIPT_POLL_AFTER_MS",
                self.receipt_poll_after_ms.to_string(),
            ),
            (
                "RINGBACK_HOLD_ESCALATE_MS",
                self.hold_escalate_ms.to_string(),
            ),
            (
                "RINGBACK_CALLBACK_JOB_NAMES",
                self.callback_job_names.clone(),
            ),
            (
                "RINGBACK_LEGACY_CREATE_TIMEOUT_MS",
                self.legacy_create_timeout_ms.to_string(),
            ),
        ];
        if let Some(v) = self.legacy_lock_duration_ms {
            out.push(("RINGBACK_LEGACY_LOCK_DURATION_MS", v.to_string()));
        }
        if let Some(v) = self.legacy_stalled_interval_ms {
            out.push(("RINGBACK_LEGACY_STALLED_INTERVAL_MS", v.to_string()));
        }
        if let Some(q) = &self.escalation_queue {
            out.push(("RINGBACK_ESCALATION_QUEUE", q.clone()));
        }
        if let Some(q) = self.replies_queue.as_deref().filter(|q| !q.is_empty()) {
            out.push(("RINGBACK_REPLIES_QUEUE", q.to_string()));
        }
        out.push((
            "RINGBACK_INBOUND_RETENTION_MS",
            self.inbound_retention_ms.to_string(),
        ));
        if let Some(h) = self.quiet_hours.as_deref().filter(|h| !h.is_empty()) {
            out.push(("RINGBACK_QUIET_HOURS", h.to_string()));
        }
        if let Some(z) = self.quiet_hours_tz.as_deref().filter(|z| !z.is_empty()) {
            out.push(("RINGBACK_QUIET_HOURS_TZ", z.to_string()));
        }
        if let Some(s) = self.senders.as_deref().filter(|s| !s.is_empty()) {
            out.push(("RINGBACK_SENDERS", s.to_string()));
        }
        if let Some(f) = &self.fallback_to {
            out.push(("RINGBACK_FALLBACK_TO", crate::redact::mask(f)));
        }
        if let Some(c) = &self.crash_at {
            out.push(("RINGBACK_CRASH_AT", c.clone()));
        }
        out.extend(self.ladder.effective());
        out
    }
}
