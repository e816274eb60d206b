//! The escalation ladder's settings (`RINGBACK_CALL_AFTER`, …): the defaults a job's `ladder`
//! is read over, who is called from which number, in which voice, how often.

use crate::callbacks::ladder::plan::{LadderSettings, MAX_THEN};
use crate::callbacks::ladder::settings::{DEFAULT_CALLS_PER_HOUR, LadderConfig};
use crate::callbacks::ladder::twiml::Voice;
use crate::settings::{ConfigError, ConfigErrors};
use clap::Args;
use std::time::Duration;

const HEADING: &str = "Escalation ladder (calls when a text is not enough)";

/// The escalation ladder's settings.
#[derive(Debug, Clone, Args)]
pub struct LadderArgs {
    /// Call the recipient this long after a callback's text went unacknowledged (`10m`, `90s`,
    /// `1h`), then climb to RINGBACK_ONCALL. Unset: no ladder unless the job asks for one.
    #[arg(long, env = "RINGBACK_CALL_AFTER", help_heading = HEADING)]
    pub call_after: Option<String>,
    /// How long each later step of a ladder waits for an acknowledgement (ms).
    #[arg(
        long,
        env = "RINGBACK_LADDER_STEP_MS",
        default_value_t = 600_000,
        help_heading = HEADING
    )]
    pub ladder_step_ms: u64,
    /// The people a ladder tries after the recipient, each texted then called
    /// (comma-separated E.164 numbers).
    #[arg(long, env = "RINGBACK_ONCALL", help_heading = HEADING)]
    pub oncall: Option<String>,
    /// The caller ID of the ladder's calls, a voice-capable number of the account (E.164).
    /// Unset: TWILIO_FROM when it is a number.
    #[arg(long, env = "RINGBACK_VOICE_FROM", help_heading = HEADING)]
    pub voice_from: Option<String>,
    /// The voice the calls speak in (`Polly.Joanna`, `Google.en-US-Standard-C`, `woman`).
    /// Unset: the account's default.
    #[arg(long, env = "RINGBACK_VOICE", help_heading = HEADING)]
    pub voice: Option<String>,
    /// The language the calls speak (`en-US`, `de-DE`). Unset: the voice's own.
    #[arg(long, env = "RINGBACK_VOICE_LANGUAGE", help_heading = HEADING)]
    pub voice_language: Option<String>,
    /// `on`: Twilio tells an answering machine from a person; a machine hears the callback and
    /// the ladder climbs on (Twilio charges for the detection).
    #[arg(
        long,
        env = "RINGBACK_MACHINE_DETECTION",
        default_value = "off",
        help_heading = HEADING
    )]
    pub machine_detection: String,
    /// At most this many ladder calls to one number in one hour; past it the call step is
    /// skipped and recorded, never queued up.
    #[arg(
        long,
        env = "RINGBACK_CALLS_PER_HOUR",
        default_value_t = DEFAULT_CALLS_PER_HOUR,
        help_heading = HEADING
    )]
    pub calls_per_hour: u32,
}

impl LadderArgs {
    /// The ladder's settings; every broken one pushed to `errors`. `webhooks`: whether serve's
    /// webhooks are known (RINGBACK_STATUS_CALLBACK_URL), which a default ladder needs.
    pub fn to_config(&self, webhooks: bool, errors: &mut ConfigErrors) -> LadderConfig {
        fn given(v: &Option<String>) -> Option<&str> {
            v.as_deref().map(str::trim).filter(|v| !v.is_empty())
        }
        let call_after = given(&self.call_after).and_then(|v| {
            crate::callbacks::callback::parse_duration("RINGBACK_CALL_AFTER", v)
                .map_err(|e| errors.push(ConfigError::new("RINGBACK_CALL_AFTER", e)))
                .ok()
        });
        if call_after.is_some() && !webhooks {
            errors.push(ConfigError::new(
                "RINGBACK_CALL_AFTER",
                "needs RINGBACK_STATUS_CALLBACK_URL: a ladder's calls take their keypad answers and statuses at serve's webhooks beside it",
            ));
        }
        if self.ladder_step_ms < 1_000 {
            errors.push(ConfigError::new(
                "RINGBACK_LADDER_STEP_MS",
                format!(
                    "{} ms is under a second: a call rings for 30 s",
                    self.ladder_step_ms
                ),
            ));
        }
        let oncall: Vec<String> = given(&self.oncall)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect();
        let bad: Vec<String> = oncall
            .iter()
            .filter(|n| !crate::twilio::message::is_e164(n))
            .map(|n| format!("{n:?}"))
            .collect();
        if !bad.is_empty() {
            errors.push(ConfigError::new(
                "RINGBACK_ONCALL",
                format!(
                    "{} {} not an E.164 number (+15551234567)",
                    bad.join(", "),
                    if bad.len() == 1 { "is" } else { "are" }
                ),
            ));
        }
        if oncall.len() > MAX_THEN {
            errors.push(ConfigError::new(
                "RINGBACK_ONCALL",
                format!("names {} people; at most {MAX_THEN}", oncall.len()),
            ));
        }
        let voice_from = given(&self.voice_from).map(str::to_string);
        if voice_from
            .as_deref()
            .is_some_and(|f| !crate::twilio::message::is_e164(f))
        {
            errors.push(ConfigError::new(
                "RINGBACK_VOICE_FROM",
                "must be a voice-capable number of the account in E.164 form (+15551234567)",
            ));
        }
        let machine_detection = match self.machine_detection.trim() {
            "on" => true,
            "off" | "" => false,
            other => {
                errors.push(ConfigError::new(
                    "RINGBACK_MACHINE_DETECTION",
                    format!("{other:?} is neither `on` nor `off`"),
                ));
                false
            }
        };
        if self.calls_per_hour == 0 {
            errors.push(ConfigError::new(
                "RINGBACK_CALLS_PER_HOUR",
                "is 0: every ladder call would be skipped; set 1 or more",
            ));
        }
        for (name, v) in [
            ("RINGBACK_VOICE", &self.voice),
            ("RINGBACK_VOICE_LANGUAGE", &self.voice_language),
        ] {
            if given(v).is_some_and(|v| v.chars().any(|c| c.is_control() || c == '"')) {
                errors.push(ConfigError::new(name, "holds control characters or quotes"));
            }
        }
        LadderConfig {
            defaults: LadderSettings {
                call_after,
                step_wait: Duration::from_millis(self.ladder_step_ms),
                oncall,
            },
            voice_from,
            voice: Voice {
                voice: given(&self.voice).map(str::to_string),
                language: given(&self.voice_language).map(str::to_string),
            },
            machine_detection,
            calls_per_hour: self.calls_per_hour,
        }
    }

    /// The effective settings, for `check-config`; numbers masked.
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![
            ("RINGBACK_LADDER_STEP_MS", self.ladder_step_ms.to_string()),
            ("RINGBACK_MACHINE_DETECTION", self.machine_detection.clone()),
            ("RINGBACK_CALLS_PER_HOUR", self.calls_per_hour.to_string()),
        ];
        let masked = |v: &str| {
            v.split(',')
                .map(|n| crate::redact::mask(n.trim()))
                .collect::<Vec<_>>()
                .join(",")
        };
        for (name, v, mask) in [
            ("RINGBACK_CALL_AFTER", &self.call_after, false),
            ("RINGBACK_ONCALL", &self.oncall, true),
            ("RINGBACK_VOICE_FROM", &self.voice_from, true),
            ("RINGBACK_VOICE", &self.voice, false),
            ("RINGBACK_VOICE_LANGUAGE", &self.voice_language, false),
        ] {
            if let Some(v) = v.as_deref().filter(|v| !v.is_empty()) {
                out.push((name, if mask { masked(v) } else { v.to_string() }));
            }
        }
        out
    }
}
