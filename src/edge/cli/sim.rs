//! Settings of `ringback twilio-sim`.

use crate::settings::ConfigError;
use clap::Args;

/// Settings of `ringback twilio-sim`.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Twilio simulator")]
pub struct SimArgs {
    /// The simulator's address (loopback only).
    #[arg(long, env = "RINGBACK_SIM_LISTEN", default_value = "127.0.0.1:4010")]
    pub listen: std::net::SocketAddr,
    /// The account SID the simulator accepts.
    #[arg(
        long,
        env = "TWILIO_ACCOUNT_SID",
        default_value = "AC00000000000000000000000000000000"
    )]
    pub account_sid: String,
    /// The auth token the simulator accepts and signs status callbacks with.
    #[arg(
        long,
        env = "TWILIO_AUTH_TOKEN",
        default_value = "sim-auth-token",
        hide_env_values = true
    )]
    pub auth_token: String,
    /// Extra credentials as `SK…:secret` (repeatable).
    #[arg(long = "api-key", env = "RINGBACK_SIM_API_KEYS", value_delimiter = ',')]
    pub api_keys: Vec<String>,
    /// Fault rules as JSON, or `@path` to a JSON file (see `twilio_sim::faults`).
    #[arg(long, env = "RINGBACK_SIM_FAULTS")]
    pub faults: Option<String>,
}

impl SimArgs {
    /// The simulator's settings and fault rules; refuses a non-loopback address, a malformed
    /// `RINGBACK_SIM_API_KEYS` entry and unreadable or invalid `RINGBACK_SIM_FAULTS`.
    pub fn to_config(
        &self,
    ) -> Result<
        (
            crate::twilio_sim::SimConfig,
            crate::twilio_sim::faults::Faults,
        ),
        ConfigError,
    > {
        use crate::twilio::Secret;
        if !self.listen.ip().is_loopback() {
            return Err(ConfigError::new(
                "RINGBACK_SIM_LISTEN",
                "the simulator only listens on a loopback address",
            ));
        }
        let api_keys = self
            .api_keys
            .iter()
            .map(|k| {
                k.split_once(':')
                    .map(|(sid, secret)| (sid.to_string(), Secret::new(secret)))
                    .ok_or_else(|| ConfigError::new("RINGBACK_SIM_API_KEYS", "expected SK…:secret"))
            })
            .collect::<Result<_, _>>()?;
        let faults = match self.faults.as_deref() {
            None => Default::default(),
            Some(spec) => {
                let text = match spec.strip_prefix('@') {
                    Some(path) => std::fs::read_to_string(path).map_err(|e| {
                        ConfigError::new("RINGBACK_SIM_FAULTS", format!("cannot read {path}: {e}"))
                    })?,
                    None => spec.to_string(),
                };
                serde_json::from_str(&text).map_err(|e| {
                    ConfigError::new("RINGBACK_SIM_FAULTS", format!("not valid fault rules: {e}"))
                })?
            }
        };
        let config = crate::twilio_sim::SimConfig {
            account_sid: self.account_sid.clone(),
            auth_token: Secret::new(self.auth_token.clone()),
            api_keys,
        };
        Ok((config, faults))
    }
}
