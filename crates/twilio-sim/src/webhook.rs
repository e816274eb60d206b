//! Posting a webhook as Twilio does: form-encoded, signed over the URL without its fragment
//! (`X-Twilio-Signature`, one `I-Twilio-Idempotency-Token` for every attempt), and retried as
//! the URL's connection overrides say (`#rc=…&rp=…&tt=…`): by default once, on a failed
//! connection only; `rp` names which failures are retried (`ct` a connection refused or timed
//! out, `rt` no answer in time, `4xx`, `5xx`, `all`), `rc` how many times (at most 5), `tt` the
//! time all attempts may take (at most 15 s).

use std::time::{Duration, Instant};

use super::Simulator;
use ringback_twilio::signature;

/// What a URL's fragment asks of the retries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overrides {
    /// Retries after the first attempt.
    pub retries: u32,
    /// The failures retried.
    pub policy: Vec<String>,
    /// The time every attempt together may take.
    pub total: Duration,
}

impl Overrides {
    /// The overrides of `url` (Twilio's defaults where it names none; values clamped to
    /// Twilio's ranges).
    pub fn of(url: &str) -> Self {
        let mut o = Self {
            retries: 1,
            policy: vec!["ct".into()],
            total: Duration::from_millis(15_000),
        };
        let Some((_, fragment)) = url.split_once('#') else {
            return o;
        };
        for (k, v) in fragment.split('&').filter_map(|kv| kv.split_once('=')) {
            match k {
                "rc" => o.retries = v.parse::<u32>().map_or(o.retries, |n| n.min(5)),
                "rp" => o.policy = v.split(',').map(str::to_string).collect(),
                "tt" => {
                    o.total = v
                        .parse::<u64>()
                        .map_or(o.total, |ms| Duration::from_millis(ms.clamp(100, 15_000)))
                }
                _ => {}
            }
        }
        o
    }

    fn retries_on(&self, failure: &str) -> bool {
        self.policy.iter().any(|p| p == failure || p == "all")
    }
}

/// Post `params` to `url`, signed, `times` times (a repeat Twilio sends of its own), each
/// retried as the URL's overrides say.
pub async fn post(sim: &Simulator, url: &str, params: &[(String, String)], times: usize) {
    let overrides = Overrides::of(url);
    let url = url.split('#').next().unwrap_or(url);
    let sig = signature::sign(sim.config.auth_token.expose(), url, params);
    let token = uuid::Uuid::new_v4().simple().to_string();
    for _ in 0..times {
        let started = Instant::now();
        let mut pause = Duration::from_millis(500);
        for attempt in 0..=overrides.retries {
            let sent = sim
                .http
                .post(url)
                .header("X-Twilio-Signature", &sig)
                .header("I-Twilio-Idempotency-Token", &token)
                .header("User-Agent", "TwilioProxy/1.1")
                .form(params)
                .send()
                .await;
            let failure = match &sent {
                Ok(r) if r.status().is_server_error() => "5xx",
                Ok(r) if r.status().is_client_error() => "4xx",
                Ok(_) => break,
                Err(e) if e.is_timeout() => "rt",
                Err(_) => "ct",
            };
            tracing::debug!(url, attempt, failure, "webhook not taken");
            if attempt == overrides.retries
                || !overrides.retries_on(failure)
                || started.elapsed() + pause > overrides.total
            {
                break;
            }
            tokio::time::sleep(pause).await;
            pause *= 2;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fragment_sets_the_retries_within_twilios_ranges() {
        let d = Overrides::of("https://h/x");
        assert_eq!((d.retries, d.policy.clone()), (1, vec!["ct".to_string()]));
        let o = Overrides::of("https://h/x?a=1#rc=9&rp=ct,rt,5xx&tt=60000");
        assert_eq!(o.retries, 5);
        assert!(o.retries_on("ct") && o.retries_on("5xx") && !o.retries_on("4xx"));
        assert_eq!(o.total, Duration::from_millis(15_000));
        assert!(Overrides::of("https://h/x#rp=all").retries_on("4xx"));
    }
}
