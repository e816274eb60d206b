//! Twilio's Calls API, as the ladder uses it: a call created with its TwiML inline, fetched,
//! listed for a number since a time (the evidence that resolves a create whose answer was
//! lost), and ended while it rings (spec `api.v2010.account.call`; every field nullable; unknown
//! fields ignored).
//!
//! A call's create is no more idempotent than a message's: a create whose answer was lost may
//! have rung the person, so its outcome is classified as a message create's is
//! ([`crate::classify`]) and an ambiguous one is resolved from evidence, never created again
//! blind.

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::classify::{classify_transport, error_code, outcome_code, retry_after};
use crate::client::{SendOutcome, TwilioClient, TwilioError};
use crate::list::PageLimits;
use crate::message::any_scalar;

/// A call as Twilio describes it (create, fetch, update and list answers; the simulator's
/// store).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Call {
    /// Twilio's id of the call (`CA` and 32 hex digits).
    pub sid: String,
    /// The account (`AC…`) that created the call.
    #[serde(default, deserialize_with = "any_scalar")]
    pub account_sid: Option<String>,
    /// Where the call stands: `queued`, `ringing`, `in-progress`, then one of `completed`,
    /// `busy`, `no-answer`, `failed`, `canceled` ([`call_status_rank`] orders them).
    #[serde(default)]
    pub status: Option<String>,
    /// The number called (E.164).
    #[serde(default)]
    pub to: Option<String>,
    /// The caller ID the call was made from.
    #[serde(default)]
    pub from: Option<String>,
    /// `outbound-api` for a call ringback creates.
    #[serde(default, deserialize_with = "any_scalar")]
    pub direction: Option<String>,
    /// With answering machine detection on: `human`, `machine_start`, `machine_end_beep`,
    /// `machine_end_silence`, `machine_end_other`, `fax` or `unknown`; `None` without it.
    #[serde(default, deserialize_with = "any_scalar")]
    pub answered_by: Option<String>,
    /// When Twilio created the call (RFC 2822, GMT, to the second).
    #[serde(default)]
    pub date_created: Option<String>,
    /// When the call resource last changed (RFC 2822, GMT).
    #[serde(default, deserialize_with = "any_scalar")]
    pub date_updated: Option<String>,
    /// When the call was answered or started ringing out (RFC 2822, GMT); `None` while queued.
    #[serde(default, deserialize_with = "any_scalar")]
    pub start_time: Option<String>,
    /// When the call ended (RFC 2822, GMT); `None` until it has.
    #[serde(default, deserialize_with = "any_scalar")]
    pub end_time: Option<String>,
    /// How long the call lasted, in seconds (as text); `None` until it ended.
    #[serde(default, deserialize_with = "any_scalar")]
    pub duration: Option<String>,
    /// What the call cost, negative, in `price_unit`; `None` until Twilio has priced it.
    #[serde(default, deserialize_with = "any_scalar")]
    pub price: Option<String>,
    /// The currency of `price` (ISO 4217).
    #[serde(default, deserialize_with = "any_scalar")]
    pub price_unit: Option<String>,
    /// The API version that handled the create (`2010-04-01`).
    #[serde(default, deserialize_with = "any_scalar")]
    pub api_version: Option<String>,
    /// This call's path, relative to the API base (`/2010-04-01/Accounts/…/Calls/CA….json`).
    #[serde(default, deserialize_with = "any_scalar")]
    pub uri: Option<String>,
}

impl Call {
    /// `date_created` as a time.
    pub fn created_at(&self) -> Option<DateTime<Utc>> {
        self.date_created
            .as_deref()
            .and_then(|d| DateTime::parse_from_rfc2822(d).ok())
            .map(|d| d.with_timezone(&Utc))
    }

    /// `end_time` as a time; `None` until the call ended.
    pub fn ended_at(&self) -> Option<DateTime<Utc>> {
        self.end_time
            .as_deref()
            .and_then(|d| DateTime::parse_from_rfc2822(d).ok())
            .map(|d| d.with_timezone(&Utc))
    }
}

/// Is `sid` a call's id (`CA` and 32 hex digits)?
pub fn is_call_sid(sid: &str) -> bool {
    sid.len() == 34 && sid.starts_with("CA") && sid[2..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// How far along a call status is, for ranking callbacks that arrive out of order and twice:
/// `queued` 0, `initiated` 1, `ringing` 2, `in-progress` (and the callback event `answered`) 3,
/// the final ones 4; `None` for a status Twilio does not document (never ranked above a known
/// one).
pub fn call_status_rank(status: &str) -> Option<u8> {
    Some(match status {
        "queued" => 0,
        "initiated" => 1,
        "ringing" => 2,
        "in-progress" | "answered" => 3,
        "completed" | "busy" | "no-answer" | "failed" | "canceled" => 4,
        _ => return None,
    })
}

/// A page of the list call (spec `ListCallResponse`).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct CallPage {
    /// The calls of this page, in the list's order.
    pub calls: Vec<Call>,
    /// Path of the next page (with its `PageToken`); `None` on the last page.
    #[serde(default)]
    pub next_page_uri: Option<String>,
    /// How many calls a full page holds.
    #[serde(default)]
    pub page_size: i64,
}

/// One call to create.
#[derive(Debug, Clone, Default)]
pub struct CreateCall {
    /// `To`: the person called (E.164).
    pub to: String,
    /// `From`: the caller ID (a voice-capable number of the account).
    pub from: String,
    /// `Twiml`: what the call says and asks, sent inline.
    pub twiml: String,
    /// `StatusCallback`: where Twilio posts the call's progress (`initiated`, `ringing`,
    /// `answered`, `completed`, all asked for).
    pub status_callback: Option<String>,
    /// `MachineDetection=Enable`: Twilio tells a person from an answering machine
    /// (`AnsweredBy` in the callbacks).
    pub machine_detection: bool,
    /// `Timeout`: how long to let it ring, in seconds (Twilio's default, 60, when unset).
    pub ring_for: Option<u32>,
}

/// What a search of the calls to a number found ([`TwilioClient::list_calls_since`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallSearch {
    /// Every call listed that was created at or after the bound (to the second), and any whose
    /// `date_created` is unreadable.
    pub calls: Vec<Call>,
    /// The whole list was read to its end; when false a call not found may still exist.
    pub complete: bool,
}

impl TwilioClient {
    fn calls_url(&self) -> String {
        format!(
            "{}/2010-04-01/Accounts/{}/Calls.json",
            self.config().api_base.trim_end_matches('/'),
            self.config().account_sid
        )
    }

    fn call_url(&self, sid: &str) -> String {
        format!(
            "{}/2010-04-01/Accounts/{}/Calls/{sid}.json",
            self.config().api_base.trim_end_matches('/'),
            self.config().account_sid
        )
    }

    /// The form fields a call's create sends, in Twilio's parameter names.
    pub fn call_form(&self, call: &CreateCall) -> Vec<(&'static str, String)> {
        let mut form = vec![
            ("To", call.to.clone()),
            ("From", call.from.clone()),
            ("Twiml", call.twiml.clone()),
        ];
        if let Some(cb) = &call.status_callback {
            form.push(("StatusCallback", cb.clone()));
            form.push(("StatusCallbackMethod", "POST".into()));
            for event in ["initiated", "ringing", "answered", "completed"] {
                form.push(("StatusCallbackEvent", event.into()));
            }
        }
        if call.machine_detection {
            form.push(("MachineDetection", "Enable".into()));
        }
        if let Some(secs) = call.ring_for {
            form.push(("Timeout", secs.to_string()));
        }
        form
    }

    /// `POST …/Calls.json`, classified as a message create is (an ambiguous answer may have
    /// rung the person: resolve it, never create again blind).
    pub async fn create_call(&self, call: &CreateCall) -> SendOutcome<Call> {
        let req = self
            .authed(self.http().post(self.calls_url()))
            .form(&self.call_form(call));
        let started = std::time::Instant::now();
        let outcome = match req.send().await {
            Err(e) => classify_transport(&e),
            Ok(resp) => {
                let status = resp.status().as_u16();
                let retry_after = retry_after(resp.headers());
                match resp.bytes().await {
                    Ok(body) => crate::classify::classify_answer(status, retry_after, &body),
                    Err(e) => SendOutcome::Ambiguous {
                        reason: format!("HTTP {status}, body lost: {e}"),
                        error: None,
                    },
                }
            }
        };
        let telemetry = ringback_shared::telemetry::global();
        telemetry.twilio_call("call_create", started.elapsed());
        if let Some(code) = outcome_code(&outcome) {
            telemetry.twilio_error(code);
        }
        outcome
    }

    /// `GET …/Calls/{Sid}.json`.
    pub async fn fetch_call(&self, sid: &str) -> Result<Call, TwilioError> {
        self.get_json(
            "call_fetch",
            self.authed(self.http().get(self.call_url(sid))),
        )
        .await
    }

    /// End a call: `POST …/Calls/{Sid}.json` with `Status=completed` (a call that rings or is
    /// in progress hangs up; one already over is left as it ended). Twilio answers the call as
    /// it is now.
    pub async fn end_call(&self, sid: &str) -> Result<Call, TwilioError> {
        let req = self
            .authed(self.http().post(self.call_url(sid)))
            .form(&[("Status", "completed")]);
        let started = std::time::Instant::now();
        let result = self.send_json(req).await;
        let telemetry = ringback_shared::telemetry::global();
        telemetry.twilio_call("call_end", started.elapsed());
        if let Err(TwilioError::Api(e)) = &result {
            telemetry.twilio_error(error_code(e));
        }
        result
    }

    /// Every call to `to` created at or after `created_after`: lists by `To` with no date
    /// filter and follows `next_page_uri` to the end, or until `limits.max_pages` pages were
    /// read (then [`CallSearch::complete`] is false). As with messages, no page ends the search
    /// early: Twilio promises no order, and a call still queued has no `start_time` to filter on.
    pub async fn list_calls_since(
        &self,
        to: &str,
        created_after: DateTime<Utc>,
        limits: PageLimits,
    ) -> Result<CallSearch, TwilioError> {
        let bound = created_after.timestamp();
        let query = [
            ("To", to.to_string()),
            ("PageSize", limits.page_size.clamp(1, 1000).to_string()),
        ];
        let mut request = self.http().get(self.calls_url()).query(&query);
        let mut search = CallSearch::default();
        for _ in 0..limits.max_pages {
            let page: CallPage = self.get_json("call_list", self.authed(request)).await?;
            search.calls.extend(
                page.calls
                    .into_iter()
                    .filter(|c| c.created_at().is_none_or(|t| t.timestamp() >= bound)),
            );
            match page.next_page_uri {
                Some(uri) => request = self.http().get(self.calls_page_url(&uri)?),
                None => {
                    search.complete = true;
                    break;
                }
            }
        }
        Ok(search)
    }

    /// The absolute URL of a calls list's `next_page_uri`, refused unless it is a page of this
    /// account's calls list.
    fn calls_page_url(&self, path: &str) -> Result<String, TwilioError> {
        let base = self.config().api_base.trim_end_matches('/');
        let list = format!(
            "/2010-04-01/Accounts/{}/Calls.json?",
            self.config().account_sid
        );
        if path.starts_with(&list) {
            Ok(format!("{base}{path}"))
        } else {
            Err(TwilioError::ForeignPage)
        }
    }
}

/// How long to let a call ring before Twilio gives up on it (`no-answer`), the default.
pub const RING_FOR: Duration = Duration::from_secs(30);
