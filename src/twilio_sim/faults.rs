//! Faults the simulator injects on demand, per recipient number or at a rate: how a create is
//! answered, and how (or whether) status callbacks arrive. Set at start (`--faults`) or at run
//! time (`PUT /sim/faults`).
//!
//! ```json
//! {"create": [{"to": "+15550001111", "fault": "permanent", "code": 21610},
//!             {"rate": 0.1, "fault": "server_error", "status": 503},
//!             {"fault": "create_then_drop", "times": 1}],
//!  "callbacks": [{"to": "+15550002222", "final": "undelivered", "error_code": 30003},
//!                {"rate": 0.5, "reversed": true, "duplicate": true, "delay_ms": 200}]}
//! ```
//! The first rule that matches (recipient, rate roll, uses left) applies.

use serde::{Deserialize, Serialize};

/// Which requests a rule applies to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Match {
    /// Only this recipient.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Only this fraction of requests (0..=1), rolled per request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// At most this many times; then the rule is spent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub times: Option<u32>,
}

impl Match {
    fn matches(&self, to: &str, roll: f64) -> bool {
        self.to.as_deref().is_none_or(|t| t == to)
            && self.rate.is_none_or(|r| roll < r)
            && self.times.is_none_or(|t| t > 0)
    }

    fn spend(&mut self) {
        if let Some(t) = self.times.as_mut() {
            *t = t.saturating_sub(1);
        }
    }
}

/// How a create is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fault", rename_all = "snake_case")]
pub enum CreateFault {
    /// A Twilio error with this code (HTTP 400 unless `status` says otherwise); nothing created.
    Permanent {
        code: i64,
        #[serde(default = "default_400")]
        status: u16,
        #[serde(default)]
        message: Option<String>,
    },
    /// 429 / 20429 with `Retry-After`; nothing created.
    RateLimited {
        #[serde(default = "default_retry_after")]
        retry_after_s: u64,
    },
    /// A 5xx; `created` makes the message exist anyway (a gateway hiding a committed create).
    ServerError {
        #[serde(default = "default_500")]
        status: u16,
        #[serde(default)]
        created: bool,
    },
    /// Answer only after `delay_ms` (past the client's timeout). The message is created unless
    /// `created` is false (a request that timed out before Twilio took it).
    Slow {
        delay_ms: u64,
        #[serde(default = "default_true")]
        created: bool,
    },
    /// The worst case: create the message, then drop the connection without answering.
    CreateThenDrop,
}

fn default_400() -> u16 {
    400
}
fn default_500() -> u16 {
    500
}
fn default_true() -> bool {
    true
}
fn default_retry_after() -> u64 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateRule {
    #[serde(flatten)]
    pub when: Match,
    #[serde(flatten)]
    pub fault: CreateFault,
}

/// How status callbacks are delivered for a message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallbackRule {
    #[serde(flatten)]
    pub when: Match,
    /// Final status: `delivered` (default), `undelivered`, `failed`, or `sent` (no receipt).
    #[serde(default, rename = "final", skip_serializing_if = "Option::is_none")]
    pub final_status: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i64>,
    /// Send the callbacks in reverse order.
    #[serde(default)]
    pub reversed: bool,
    /// Send each callback twice (the same request, as a Twilio retry).
    #[serde(default)]
    pub duplicate: bool,
    /// Wait this long before the first callback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
    /// Send no callbacks at all (the message still progresses; fetch shows it).
    #[serde(default)]
    pub none: bool,
}

/// Every fault rule in force.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Faults {
    #[serde(default)]
    pub create: Vec<CreateRule>,
    #[serde(default)]
    pub callbacks: Vec<CallbackRule>,
}

impl Faults {
    /// The create fault for a request to `to`, spending a use of the rule that matched.
    pub fn take_create(&mut self, to: &str, roll: f64) -> Option<CreateFault> {
        let rule = self.create.iter_mut().find(|r| r.when.matches(to, roll))?;
        rule.when.spend();
        Some(rule.fault.clone())
    }

    /// The callback behaviour for a message to `to` (default: sent then delivered).
    pub fn take_callbacks(&mut self, to: &str, roll: f64) -> CallbackRule {
        match self.callbacks.iter_mut().find(|r| r.when.matches(to, roll)) {
            Some(rule) => {
                rule.when.spend();
                rule.clone()
            }
            None => CallbackRule::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_shape_and_matches_in_order() {
        let mut f: Faults = serde_json::from_str(
            r#"{"create":[{"to":"+15550001111","fault":"permanent","code":21610},
                           {"fault":"create_then_drop","times":1}],
                "callbacks":[{"to":"+15550002222","final":"undelivered","error_code":30003}]}"#,
        )
        .unwrap();
        assert_eq!(
            f.take_create("+15550001111", 0.5),
            Some(CreateFault::Permanent {
                code: 21610,
                status: 400,
                message: None
            })
        );
        assert_eq!(
            f.take_create("+15550009999", 0.5),
            Some(CreateFault::CreateThenDrop)
        );
        assert_eq!(
            f.take_create("+15550009999", 0.5),
            None,
            "times: 1 is spent"
        );
        assert_eq!(
            f.take_callbacks("+15550002222", 0.0)
                .final_status
                .as_deref(),
            Some("undelivered")
        );
        assert_eq!(
            f.take_callbacks("+15550003333", 0.0),
            CallbackRule::default()
        );
    }

    #[test]
    fn rate_rolls() {
        let mut f: Faults = serde_json::from_str(
            r#"{"create":[{"rate":0.25,"fault":"server_error","status":503}]}"#,
        )
        .unwrap();
        assert!(f.take_create("+1", 0.2).is_some());
        assert!(f.take_create("+1", 0.3).is_none());
    }
}
