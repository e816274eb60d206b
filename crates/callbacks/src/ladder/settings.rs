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

/// Where `serve`'s ladder webhooks are: the base (`…/api/notify/webhook`) and the status
/// callback URL's connection overrides (`#rc=5&rp=ct,rt,5xx`), which every ladder webhook
/// carries too, so Twilio retries a keypad answer or a call status that met a `serve` restarting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhooks {
    base: String,
    overrides: String,
}

impl Webhooks {
    /// From the status callback URL: beside its `/status`, else at the API's own path on its
    /// host.
    pub fn beside(status_callback_url: &str) -> Option<Self> {
        let fragment = overrides(status_callback_url);
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
        Some(Self {
            base: format!("{scheme}://{host}{base}"),
            overrides: fragment.to_string(),
        })
    }

    /// The URL of `route` naming a run's step `k`, the overrides last.
    pub fn step(&self, route: &str, run: &str, k: u32) -> String {
        format!("{}/{route}?{}{}", self.base, query(run, k), self.overrides)
    }
}

/// The connection overrides of a URL (its fragment, `#` included; "" when it has none).
pub fn overrides(url: &str) -> &str {
    url.find('#').map_or("", |i| &url[i..])
}

/// The query naming a run's step on serve's webhooks.
fn query(run: &str, k: u32) -> String {
    serde_urlencoded::to_string([("run", run), ("step", &k.to_string())]).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhooks_sit_beside_the_status_callback() {
        let at = |url: &str| Webhooks::beside(url).map(|w| w.step("voice", "r 1&x", 2));
        assert_eq!(
            at("https://h.example/api/notify/webhook/status?x=1").as_deref(),
            Some("https://h.example/api/notify/webhook/voice?run=r+1%26x&step=2")
        );
        assert_eq!(
            at("https://h.example/base/api/notify/webhook/status#rc=5&rp=ct,rt,5xx").as_deref(),
            Some(
                "https://h.example/base/api/notify/webhook/voice?run=r+1%26x&step=2#rc=5&rp=ct,rt,5xx"
            )
        );
        assert_eq!(
            at("http://127.0.0.1:3000/hook").as_deref(),
            Some("http://127.0.0.1:3000/api/notify/webhook/voice?run=r+1%26x&step=2")
        );
        assert_eq!(at("not a url"), None);
        assert_eq!(overrides("https://h/x?y=1#rc=5"), "#rc=5");
        assert_eq!(overrides("https://h/x"), "");
    }
}
