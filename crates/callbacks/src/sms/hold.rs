//! Callbacks held by a fault of this deployment or of one destination ([`Blame`]): a refusal
//! that is no verdict on the message. A held callback keeps its claim's fence and its job (the
//! job is delayed, no attempt is used), and Twilio is not called for it: one probe create per
//! [`PROBE_EVERY`] tells when the fault is fixed (a fixed account then brings the whole backlog
//! back, without a storm of creates into it while it is broken). A deployment hold turns
//! readiness false; a destination hold (a region the account may not text) holds that
//! destination's callbacks only. Process-local: each worker finds the fault with its own first
//! create, and lifts it with its own first accepted one.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use ringback_twilio::blame::{Blame, destination_of};

/// How often a hold lets one create through, to see whether the fault is fixed.
pub const PROBE_EVERY: Duration = Duration::from_secs(5);

/// The same refusal code from this many destinations within [`BURST_WINDOW`] is the
/// deployment's fault, whatever the table says (a sender-wide block shows as per-message codes).
pub const BURST_DESTINATIONS: usize = 5;
/// How far back refusals count toward [`BURST_DESTINATIONS`].
pub const BURST_WINDOW: Duration = Duration::from_secs(60);

/// How often a hold's error line is logged.
const LOG_EVERY: Duration = Duration::from_secs(30);

/// What a hold says about an attempt that is about to call Twilio.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// No hold covers it.
    Go,
    /// A hold covers it, and it is the hold's turn to probe.
    Probe,
    /// Held: do not call Twilio; since when (ms) and why.
    Wait {
        /// When the hold started (ms since the epoch, this process's clock).
        since: i64,
        /// The latest refusal that keeps the hold: Twilio's error and what it means.
        reason: String,
    },
}

#[derive(Debug, Clone)]
struct Hold {
    since: i64,
    reason: String,
    last_probe: i64,
}

#[derive(Debug, Default)]
struct State {
    deployment: Option<Hold>,
    destinations: HashMap<String, Hold>,
    /// Recent refusals by code: when, and to which destination.
    recent: HashMap<i64, VecDeque<(i64, String)>>,
    logged_at: i64,
    /// Runs escalated as held by this process, told when they are sent after all.
    escalated: HashSet<String>,
}

/// The holds of one worker process (shared by every clone of its processor).
#[derive(Debug, Default)]
pub struct Holds {
    state: Mutex<State>,
}

impl Holds {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether an attempt to `to` may call Twilio at `now` (ms).
    pub fn admits(&self, to: &str, now: i64) -> Admit {
        let mut g = self.lock();
        let destination = destination_of(to);
        let State {
            deployment,
            destinations,
            ..
        } = &mut *g;
        let hold = match deployment.as_mut() {
            Some(h) => h,
            None => match destinations.get_mut(&destination) {
                Some(h) => h,
                None => return Admit::Go,
            },
        };
        if now - hold.last_probe >= PROBE_EVERY.as_millis() as i64 {
            hold.last_probe = now;
            Admit::Probe
        } else {
            Admit::Wait {
                since: hold.since,
                reason: hold.reason.clone(),
            }
        }
    }

    /// Twilio refused a create to `to` for `blame` (not [`Blame::Message`]): start the hold, or
    /// keep it. Answers since when it holds (ms) and whether the error line is due (once per
    /// [`LOG_EVERY`]).
    pub fn hold(&self, blame: Blame, to: &str, reason: &str, now: i64) -> (i64, bool) {
        let mut g = self.lock();
        let fresh = || Hold {
            since: now,
            reason: reason.to_string(),
            last_probe: now,
        };
        let hold = match blame {
            Blame::Deployment => g.deployment.get_or_insert_with(fresh),
            Blame::Destination => g
                .destinations
                .entry(destination_of(to))
                .or_insert_with(fresh),
            Blame::Message => return (now, false),
        };
        hold.reason = reason.to_string();
        let since = hold.since;
        let due = now - g.logged_at >= LOG_EVERY.as_millis() as i64;
        if due {
            g.logged_at = now;
        }
        (since, due)
    }

    /// Twilio accepted a create of `run_id` to `to`: the deployment's hold and that
    /// destination's end. Answers whether a hold ended, and whether this process had escalated
    /// the run as held (forgotten now: it is sent).
    pub fn accepted(&self, run_id: &str, to: &str) -> (bool, bool) {
        let mut g = self.lock();
        let was_escalated = !g.escalated.is_empty() && g.escalated.remove(run_id);
        if g.deployment.is_none() && g.destinations.is_empty() {
            return (false, was_escalated);
        }
        let ended = g.deployment.take().is_some();
        let ended = g.destinations.remove(&destination_of(to)).is_some() || ended;
        (ended, was_escalated)
    }

    /// A refusal the table blames on the message: whether the same code has now come from
    /// [`BURST_DESTINATIONS`] destinations within [`BURST_WINDOW`] (then it is the deployment's).
    pub fn burst(&self, code: i64, to: &str, now: i64) -> bool {
        let mut g = self.lock();
        let recent = g.recent.entry(code).or_default();
        let window = BURST_WINDOW.as_millis() as i64;
        while recent.front().is_some_and(|(at, _)| now - at > window) {
            recent.pop_front();
        }
        recent.push_back((now, to.to_string()));
        while recent.len() > 4 * BURST_DESTINATIONS {
            recent.pop_front();
        }
        let distinct: HashSet<&str> = recent.iter().map(|(_, t)| t.as_str()).collect();
        distinct.len() >= BURST_DESTINATIONS
    }

    /// The deployment hold: since when (ms) and why.
    pub fn deployment(&self) -> Option<(i64, String)> {
        self.lock()
            .deployment
            .as_ref()
            .map(|h| (h.since, h.reason.clone()))
    }

    /// How many destinations are held.
    pub fn destinations_held(&self) -> usize {
        self.lock().destinations.len()
    }

    /// Note that `run_id` was escalated as held.
    pub fn note_escalated(&self, run_id: &str) {
        self.lock().escalated.insert(run_id.to_string());
    }

    /// Whether this process escalated `run_id` as held (and has not sent it since).
    pub fn escalated(&self, run_id: &str) -> bool {
        self.lock().escalated.contains(run_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hold_lets_one_probe_through_per_interval() {
        let h = Holds::default();
        assert_eq!(h.admits("+15558675310", 0), Admit::Go);
        h.hold(Blame::Deployment, "+15558675310", "21212", 1_000);
        assert!(matches!(
            h.admits("+447700900123", 1_100),
            Admit::Wait { since: 1_000, .. }
        ));
        assert_eq!(h.admits("+15558675310", 6_000), Admit::Probe);
        assert!(matches!(
            h.admits("+15558675310", 6_001),
            Admit::Wait { .. }
        ));
        assert_eq!(h.accepted("r", "+15558675310"), (true, false));
        assert_eq!(h.admits("+15558675310", 6_002), Admit::Go);
    }

    #[test]
    fn a_destination_hold_covers_its_region_only() {
        let h = Holds::default();
        h.hold(Blame::Destination, "+447700900123", "21408", 0);
        assert!(matches!(h.admits("+447700900999", 10), Admit::Wait { .. }));
        assert_eq!(h.admits("+15558675310", 10), Admit::Go);
        assert_eq!(h.destinations_held(), 1);
        assert!(h.deployment().is_none());
    }

    #[test]
    fn one_code_from_many_destinations_is_a_burst() {
        let h = Holds::default();
        for i in 0..BURST_DESTINATIONS - 1 {
            assert!(!h.burst(30007, &format!("+1555000000{i}"), i as i64));
        }
        assert!(
            !h.burst(30007, "+15550000000", 10),
            "the same destination again"
        );
        assert!(h.burst(30007, "+15550000009", 20));
        // outside the window, the old ones no longer count
        let later = BURST_WINDOW.as_millis() as i64 + 100;
        assert!(!h.burst(30007, "+15550000008", later));
    }
}
