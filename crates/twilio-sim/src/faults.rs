//! Faults the simulator injects on demand, per recipient number or at a rate: how a create is
//! answered, how (or whether) status callbacks arrive, whether the credentials are refused, and
//! whether bodies carry the trial-account prefix. Set at start (`--faults`) or at run time
//! (`PUT /sim/faults`, which replaces every rule; `GET /sim/faults` shows them).
//!
//! ```json
//! {"create": [{"to": "+15550001111", "fault": "permanent", "code": 21610},
//!             {"rate": 0.1, "fault": "server_error", "status": 503},
//!             {"fault": "create_then_drop", "times": 1},
//!             {"fault": "created_failed", "error_code": 30007}],
//!  "callbacks": [{"to": "+15550002222", "final": "undelivered", "error_code": 30003},
//!                {"rate": 0.5, "reversed": true, "duplicate": true, "delay_ms": 200}],
//!  "auth": {"refuse": "all", "for_ms": 20000},
//!  "trial_prefix": true,
//!  "call_create": [{"to": "+15550003333", "fault": "create_then_drop", "times": 1}],
//!  "calls": [{"to": "+15550004444", "outcome": "no-answer"},
//!            {"digits": "2", "second_gather": true, "shuffled": true, "duplicate": true}]}
//! ```
//! The first create or callback rule that matches (recipient, rate roll, uses left) applies.
//! `call_create` answers call creates as `create` answers message creates; `calls` says how a
//! created call goes ([`crate::voice::CallRule`]).
//!
//! `auth` refuses the credentials as Twilio does when a key is revoked or a token rotated:
//! every request it covers is answered 401 with Twilio's code 20003
//! `{"code":20003,"message":"Authenticate",...}` and nothing is created. `refuse` says which:
//! `"all"` (create, fetch and list) or `"lookups"` (fetch and list only: a key that may create
//! but not read, so lookups keep failing while creates succeed); `"none"` is the default. With
//! `for_ms` the refusal lifts by itself that long after the rules were set (at start or by the
//! `PUT`); without it, it lasts until the next `PUT /sim/faults` or `POST /sim/reset`.
//!
//! `trial_prefix` stores every new message's body as a trial account's is:
//! `Sent from your Twilio trial account - <body>`, visible in the create answer, fetch and list
//! (a lookup that compares bodies must not miss it). `rewrite` stores bodies as a Messaging
//! Service's Smart Encoding, link shortening, appended text or redaction would, and
//! `service_pool` lists the numbers a Messaging Service picks its sender from. `list_order`
//! (`"date_sent"`) lists newest sent first with the messages still queued last; `list_lag_ms`
//! shows a message in the list only that long after its create.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// What Twilio prefixes to a trial account's message bodies.
pub const TRIAL_PREFIX: &str = "Sent from your Twilio trial account - ";

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
        /// Twilio's error code in the answer (21610: the recipient opted out, 21211: bad `To`).
        code: i64,
        /// HTTP status of the answer (400 when not given).
        #[serde(default = "default_400")]
        status: u16,
        /// The answer's `message`; `None`: "Simulated Twilio error <code>".
        #[serde(default)]
        message: Option<String>,
    },
    /// 429 / 20429 with `Retry-After`; nothing created.
    RateLimited {
        /// The `Retry-After` header, in seconds (1 when not given).
        #[serde(default = "default_retry_after")]
        retry_after_s: u64,
    },
    /// A 5xx; `created` makes the message exist anyway (a gateway hiding a committed create).
    ServerError {
        /// HTTP status of the answer (500 when not given), with Twilio's code 20500.
        #[serde(default = "default_500")]
        status: u16,
        /// The message is stored (and its callbacks start) although the answer is an error.
        #[serde(default)]
        created: bool,
    },
    /// Answer only after `delay_ms` (past the client's timeout). The message is created unless
    /// `created` is false (a request that timed out before Twilio took it).
    Slow {
        /// How long the answer waits, in milliseconds.
        delay_ms: u64,
        /// The message is stored and answered 201 late; false: nothing stored, 504 after the wait.
        #[serde(default = "default_true")]
        created: bool,
    },
    /// The worst case: create the message, then drop the connection without answering.
    CreateThenDrop,
    /// 201 Created with the message already `failed` (as Twilio answers some refusals it makes
    /// after accepting the request), `error_code` on it; its status callback says `failed`.
    CreatedFailed {
        /// Twilio's error code set on the message (30007, carrier filtering, when not given).
        #[serde(default = "default_failed_code")]
        error_code: i64,
    },
}

fn default_failed_code() -> i64 {
    30007
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

/// One rule of `create`: which create requests it catches, and how they are answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreateRule {
    /// Which requests it applies to (`to`, `rate`, `times`, flattened into the rule).
    #[serde(flatten)]
    pub when: Match,
    /// How a matched create is answered (the `fault` tag and its fields, flattened).
    #[serde(flatten)]
    pub fault: CreateFault,
}

/// How status callbacks are delivered for a message.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallbackRule {
    /// Which messages it applies to (by recipient, rate or uses left), flattened into the rule.
    #[serde(flatten)]
    pub when: Match,
    /// Final status: `delivered` (default), `undelivered`, `failed`, or `sent` (no receipt).
    #[serde(default, rename = "final", skip_serializing_if = "Option::is_none")]
    pub final_status: Option<String>,
    /// Twilio's `ErrorCode` on an `undelivered` or `failed` final status; `None`: 30003
    /// (unreachable destination handset).
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

/// Which requests a refusal of the credentials covers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refuse {
    /// Credentials are accepted (when they are right).
    #[default]
    None,
    /// Create, fetch and list are all refused.
    All,
    /// Fetch and list are refused; create still works.
    Lookups,
}

/// Which Twilio call a request is, for [`AuthFault`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// `POST …/Accounts/{sid}/Messages.json`: send a message.
    Create,
    /// `GET …/Accounts/{sid}/Messages/{MessageSid}.json`: read one message.
    Fetch,
    /// `GET …/Accounts/{sid}/Messages.json`: page through messages.
    List,
}

/// Refuse the credentials for a while (see the module doc).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFault {
    /// Which calls are answered 401 / 20003 (`none`, the default: no refusal).
    #[serde(default)]
    pub refuse: Refuse,
    /// Lift the refusal this long after the rules were set; `None`: until changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_ms: Option<u64>,
    /// When `for_ms` runs out, fixed by [`Faults::arm`].
    #[serde(skip)]
    until: Option<Instant>,
}

impl AuthFault {
    fn is_off(&self) -> bool {
        self.refuse == Refuse::None
    }

    /// Whether `call` is refused at `now`.
    pub fn refuses(&self, call: Call, now: Instant) -> bool {
        let covered = match self.refuse {
            Refuse::None => false,
            Refuse::All => true,
            Refuse::Lookups => call != Call::Create,
        };
        covered && self.until.is_none_or(|until| now < until)
    }
}

/// Every fault rule in force. Unknown keys are refused, so a misspelt fault never passes
/// silently as no fault.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Faults {
    /// How creates are answered; the first rule that matches applies, none: a normal 201.
    #[serde(default)]
    pub create: Vec<CreateRule>,
    /// How status callbacks arrive; the first that matches applies, none: sent then delivered.
    #[serde(default)]
    pub callbacks: Vec<CallbackRule>,
    /// How call creates are answered (as `create`, for `Calls.json`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub call_create: Vec<CreateRule>,
    /// How created calls go ([`crate::voice::CallRule`]); none: answered, `1` pressed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<crate::voice::CallRule>,
    /// Whether the credentials are refused, and for how long.
    #[serde(default, skip_serializing_if = "AuthFault::is_off")]
    pub auth: AuthFault,
    /// Prefix new messages' bodies as Twilio does for a trial account.
    #[serde(default)]
    pub trial_prefix: bool,
    /// Store bodies as a Messaging Service with these features would.
    #[serde(default, skip_serializing_if = "Rewrite::is_off")]
    pub rewrite: Rewrite,
    /// The numbers a Messaging Service sends from, picked at random per message (default: one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub service_pool: Vec<String>,
    /// The list's order: newest created first (the default), or `"date_sent"`: newest sent
    /// first, the messages not yet sent (no `date_sent`) last. Twilio promises no order, so a
    /// lookup must find a queued message at either end.
    #[serde(default, skip_serializing_if = "ListOrder::is_default")]
    pub list_order: ListOrder,
    /// The list shows a message only this long after its create (an index that lags).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_lag_ms: Option<u64>,
}

/// How the list call orders the messages it pages through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ListOrder {
    /// Newest `date_created` first.
    #[default]
    DateCreated,
    /// Newest `date_sent` first; messages not yet sent last.
    DateSent,
}

impl ListOrder {
    /// Newest created first, Twilio's usual order (left out of `GET /sim/faults`).
    pub fn is_default(&self) -> bool {
        *self == Self::DateCreated
    }
}

/// What Twilio may do to a stored body (`"rewrite": {"smart_encoding": true,
/// "shorten_urls": true, "append": " Reply STOP to opt out.", "redact": false}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Rewrite {
    /// Typographic punctuation replaced by GSM-7 look-alikes (`’` → `'`, `—` → `-`, `…` → `...`).
    #[serde(default)]
    pub smart_encoding: bool,
    /// Every URL replaced by a short link.
    #[serde(default)]
    pub shorten_urls: bool,
    /// Text appended to every body (opt-out or compliance text).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<String>,
    /// Bodies stored empty (message redaction).
    #[serde(default)]
    pub redact: bool,
}

impl Rewrite {
    /// Bodies are stored as sent (left out of `GET /sim/faults`).
    pub fn is_off(&self) -> bool {
        *self == Self::default()
    }

    /// `body` as Twilio would store it.
    pub fn apply(&self, body: &str) -> String {
        if self.redact {
            return String::new();
        }
        let mut out = String::with_capacity(body.len());
        for c in body.chars() {
            match c {
                '\u{2018}' | '\u{2019}' if self.smart_encoding => out.push('\''),
                '\u{201C}' | '\u{201D}' if self.smart_encoding => out.push('"'),
                '\u{2013}' | '\u{2014}' if self.smart_encoding => out.push('-'),
                '\u{2026}' if self.smart_encoding => out.push_str("..."),
                c => out.push(c),
            }
        }
        if self.shorten_urls {
            out = out
                .split(' ')
                .map(|w| {
                    if w.starts_with("http") {
                        "https://twil.io/s1m"
                    } else {
                        w
                    }
                })
                .collect::<Vec<_>>()
                .join(" ");
        }
        if let Some(tail) = &self.append {
            out.push_str(tail);
        }
        out
    }
}

impl Faults {
    /// Start the clocks of timed faults (`auth.for_ms`): call when the rules take effect.
    pub fn arm(mut self, now: Instant) -> Self {
        self.auth.until = self.auth.for_ms.map(|ms| now + Duration::from_millis(ms));
        self
    }

    /// Whether the credentials are refused for `call` right now.
    pub fn refuses(&self, call: Call, now: Instant) -> bool {
        self.auth.refuses(call, now)
    }

    /// The create fault for a request to `to`, spending a use of the rule that matched.
    pub fn take_create(&mut self, to: &str, roll: f64) -> Option<CreateFault> {
        let rule = self.create.iter_mut().find(|r| r.when.matches(to, roll))?;
        rule.when.spend();
        Some(rule.fault.clone())
    }

    /// The create fault for a call to `to`, if a `call_create` rule matches (and is spent).
    pub fn take_call_create(&mut self, to: &str, roll: f64) -> Option<CreateFault> {
        let rule = self
            .call_create
            .iter_mut()
            .find(|r| r.when.matches(to, roll))?;
        rule.when.spend();
        Some(rule.fault.clone())
    }

    /// How a call to `to` goes (default: answered, `1` pressed).
    pub fn take_call(&mut self, to: &str, roll: f64) -> crate::voice::CallRule {
        match self.calls.iter_mut().find(|r| r.when.matches(to, roll)) {
            Some(rule) => {
                rule.when.spend();
                rule.clone()
            }
            None => crate::voice::CallRule::default(),
        }
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
    fn auth_refusals_cover_their_calls_and_lift_on_time() {
        let now = Instant::now();
        let all: Faults = serde_json::from_str(r#"{"auth":{"refuse":"all"}}"#).unwrap();
        let all = all.arm(now);
        for call in [Call::Create, Call::Fetch, Call::List] {
            assert!(
                all.refuses(call, now + Duration::from_secs(3600)),
                "{call:?}"
            );
        }
        let lookups: Faults =
            serde_json::from_str(r#"{"auth":{"refuse":"lookups","for_ms":20000}}"#).unwrap();
        let lookups = lookups.arm(now);
        assert!(!lookups.refuses(Call::Create, now));
        assert!(lookups.refuses(Call::Fetch, now) && lookups.refuses(Call::List, now));
        assert!(lookups.refuses(Call::List, now + Duration::from_millis(19_999)));
        assert!(!lookups.refuses(Call::List, now + Duration::from_millis(20_000)));
        assert!(!Faults::default().refuses(Call::Create, now));
        // An untouched rule set shows no auth section; a set one round-trips as written.
        assert_eq!(
            serde_json::to_value(Faults::default()).unwrap(),
            serde_json::json!({"create": [], "callbacks": [], "trial_prefix": false})
        );
        assert_eq!(
            serde_json::to_value(&lookups).unwrap()["auth"],
            serde_json::json!({"refuse": "lookups", "for_ms": 20000})
        );
        for typo in [
            r#"{"auth":{"refuse":"maybe"}}"#,
            r#"{"auth":{"refuse":true}}"#,
            r#"{"auth":{"refuse":"all","for":5}}"#,
            r#"{"trial":true}"#,
        ] {
            assert!(serde_json::from_str::<Faults>(typo).is_err(), "{typo}");
        }
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
