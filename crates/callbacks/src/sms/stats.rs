//! What the SMS processor counts: attempts by outcome, and the Redis-derived gauges the sweep
//! refreshes (read by `edge::metrics` at scrape time), and why the worker is not ready.

use std::sync::atomic::Ordering;

use ringback_shared::clock::now_ms;

/// What happened to callback attempts, for the worker's `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmsEvent {
    /// Twilio accepted the message and the sent marker was written.
    Sent,
    /// Already sent (by either worker): completed without sending.
    Deduplicated,
    /// An earlier attempt's send was found (receipt or lookup) and recorded.
    Reconciled,
    /// Twilio refused the message for good: escalated, then the claim deleted and the attempt
    /// closed (`send-failed`); the job fails.
    Permanent,
    /// Twilio did not take it (429, 21611): the claim kept (lease refreshed) and the attempt
    /// left open as `retry`, the job delayed to the retry time.
    RetryLater,
    /// Twilio may or may not have it: claim held, resolved later.
    Ambiguous,
    /// Another attempt holds the claim: waiting for it.
    Busy,
    /// Twilio refused this worker's credentials: nothing sent, nothing failed, retried.
    AuthRefused,
    /// The send could not be proven either way: escalated, never resent.
    Unknown,
    /// No evidence of an earlier send within the reconcile window: the next claim replaces the
    /// attempt in the same step (the claim never lapses) and sends.
    Lost,
    /// The job's data is not a valid callback: failed at once.
    Invalid,
    /// A fault of this deployment or of the destination holds it: claim kept, job delayed.
    Held,
    /// A job of a name that is not a callback's: left for the worker that handles it.
    OtherJob,
    /// Inside quiet hours and not urgent: back to delayed until they end, nothing claimed.
    Quiet,
}

impl SmsEvent {
    /// Every event in declaration order (a counter's index), for pre-created metric labels.
    pub const ALL: [SmsEvent; 14] = [
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
        SmsEvent::Held,
        SmsEvent::OtherJob,
        SmsEvent::Quiet,
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
            SmsEvent::Held => "held",
            SmsEvent::OtherJob => "other_job",
            SmsEvent::Quiet => "quiet",
        }
    }
}

/// Counters of [`SmsEvent`]s, shared by every clone of a processor.
#[derive(Debug, Default)]
pub struct SmsStats {
    counts: [std::sync::atomic::AtomicU64; SmsEvent::ALL.len()],
    /// Since when Twilio refuses the credentials (ms), 0 while it accepts them.
    pub auth_refused_since: std::sync::atomic::AtomicI64,
    pub(super) auth_logged_at: std::sync::atomic::AtomicI64,
    /// Open attempts of the queue's runs, and the oldest one's age (ms), as the sweep last saw.
    pub open_attempts: std::sync::atomic::AtomicU64,
    /// Age of the oldest open attempt in ms on Redis's clock; 0 when none is open.
    pub oldest_open_ms: std::sync::atomic::AtomicU64,
    /// Of the open attempts the sweep sampled: released for another attempt, and in doubt.
    pub open_retry: std::sync::atomic::AtomicU64,
    /// Sampled open attempts whose earlier send is being resolved (`ambiguous`, `unknown`).
    pub open_in_doubt: std::sync::atomic::AtomicU64,
    /// Jobs in the queue's delayed set.
    pub delayed: std::sync::atomic::AtomicU64,
    /// Messages waiting for a final receipt, and those of them past the delivery deadline.
    pub reconcile_backlog: std::sync::atomic::AtomicU64,
    /// Sampled messages past the delivery deadline without a final receipt.
    pub receipts_missing: std::sync::atomic::AtomicU64,
    /// Callbacks held by a fault of this deployment or of a destination.
    pub holds: super::hold::Holds,
    /// The job names not a callback's this process has met (each is logged once).
    pub(super) other_names: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Jobs of other names this process handed back: job id → (created, last handed back), ms.
    other_jobs: std::sync::Mutex<std::collections::HashMap<String, (i64, i64)>>,
}

/// A job of another name handed back within this long is still waiting for its own worker.
const OTHER_JOB_SEEN_WITHIN_MS: i64 = 60_000;
/// How many such jobs are followed at once (the oldest are what the gauge needs).
const OTHER_JOBS_FOLLOWED: usize = 1024;

impl SmsStats {
    // `e as usize` is the variant's place in declaration order, which `ALL` follows.
    pub(super) fn record(&self, e: SmsEvent) {
        self.counts[e as usize].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// A job of another name (created at `created_ms`) handed back now, for the gauge of how
    /// long such jobs wait with no worker of their own taking them.
    pub(super) fn other_job_handed_back(&self, job_id: &str, created_ms: i64) {
        let now = now_ms();
        if let Ok(mut jobs) = self.other_jobs.lock() {
            jobs.retain(|_, (_, last)| now - *last < OTHER_JOB_SEEN_WITHIN_MS);
            if jobs.len() < OTHER_JOBS_FOLLOWED || jobs.contains_key(job_id) {
                jobs.insert(job_id.to_string(), (created_ms, now));
            }
        }
    }

    /// The age (ms) of the oldest job of another name this process handed back in the last
    /// minute: one that keeps coming back has no worker of its own taking it.
    pub fn oldest_other_job_ms(&self) -> i64 {
        let now = now_ms();
        self.other_jobs.lock().map_or(0, |jobs| {
            jobs.values()
                .filter(|(_, last)| now - *last < OTHER_JOB_SEEN_WITHIN_MS)
                .map(|(created, _)| (now - *created).max(0))
                .max()
                .unwrap_or(0)
        })
    }

    /// How many of `e` so far.
    pub fn get(&self, e: SmsEvent) -> u64 {
        self.counts[e as usize].load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Why the worker is not ready, if it is not: Twilio refuses the credentials, or refuses
    /// creates for another fault of this deployment.
    pub fn not_ready(&self) -> Option<String> {
        let since = self.auth_refused_since.load(Ordering::Relaxed);
        if since != 0 {
            return Some(format!(
                "Twilio refuses this worker's credentials (for {} s)",
                (now_ms() - since).max(0) / 1000
            ));
        }
        self.holds.deployment().map(|(since, reason)| {
            format!(
                "Twilio refuses creates for a fault of this deployment (for {} s): {reason}",
                (now_ms() - since).max(0) / 1000
            )
        })
    }
}
