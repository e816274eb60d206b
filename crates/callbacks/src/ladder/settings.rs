//! The deployment's ladder settings, and where `serve`'s ladder webhooks are.

use std::time::Duration;

use super::plan::LadderSettings;
use super::twiml::Voice;

/// The deployment's ladder settings (`RINGBACK_CALL_AFTER`, `RINGBACK_LADDER_STEP_MS`,
/// `RINGBACK_ONCALL`, `RINGBACK_VOICE_*`, `RINGBACK_MACHINE_DETECTION`,
/// `RINGBACK_CALLS_PER_HOUR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LadderConfig {
    /// The defaults a job's `ladder` is read over.
    pub defaults: LadderSettings,
    /// The caller ID calls come from; `None`: no call can be placed (each call step is
    /// skipped, recorded, and the ladder climbs on).
    pub voice_from: Option<String>,
    /// What the calls speak in.
    pub voice: Voice,
    /// Ask Twilio whether a machine answered (`MachineDetection=Enable`): a machine hears the
    /// message and the ladder climbs on.
    pub machine_detection: bool,
    /// Calls to one number in one hour, at most; past it a call step is skipped.
    pub calls_per_hour: u32,
}

impl Default for LadderConfig {
    fn default() -> Self {
        Self {
            defaults: LadderSettings {
                call_after: None,
                step_wait: DEFAULT_STEP_WAIT,
                oncall: vec![],
            },
            voice_from: None,
            voice: Voice::default(),
            machine_detection: false,
            calls_per_hour: DEFAULT_CALLS_PER_HOUR,
        }
    }
}

/// `RINGBACK_LADDER_STEP_MS`'s default: ten minutes a step.
pub const DEFAULT_STEP_WAIT: Duration = Duration::from_secs(600);
/// `RINGBACK_CALLS_PER_HOUR`'s default.
pub const DEFAULT_CALLS_PER_HOUR: u32 = 4;

/// The base of `serve`'s Twilio webhooks (`…/api/notify/webhook`) from the status callback
/// URL: beside its `/status`, else at the API's own path on its host.
pub fn webhook_base(status_callback_url: &str) -> Option<String> {
    let url = status_callback_url.split(['?', '#']).next()?;
    let (scheme, rest) = url.split_once("://")?;
    if !matches!(scheme, "http" | "https") {
        return None;
    }
    let (host, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
    if host.is_empty() || host.contains(' ') {
        return None;
    }
    let path = path.trim_end_matches('/');
    let base = match path.rsplit_once('/') {
        Some((head, "status")) => head,
        _ => "/api/notify/webhook",
    };
    Some(format!("{scheme}://{host}{base}"))
}

/// The query naming a run's step on serve's webhooks.
pub(super) fn query(run: &str, k: u32) -> String {
    serde_urlencoded::to_string([("run", run), ("step", &k.to_string())]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhooks_sit_beside_the_status_callback() {
        assert_eq!(
            webhook_base("https://h.example/api/notify/webhook/status?x=1").as_deref(),
            Some("https://h.example/api/notify/webhook")
        );
        assert_eq!(
            webhook_base("https://h.example/base/api/notify/webhook/status").as_deref(),
            Some("https://h.example/base/api/notify/webhook")
        );
        assert_eq!(
            webhook_base("http://127.0.0.1:3000/hook").as_deref(),
            Some("http://127.0.0.1:3000/api/notify/webhook")
        );
        assert_eq!(webhook_base("not a url"), None);
        assert_eq!(query("r 1&x", 2), "run=r+1%26x&step=2");
    }
}
