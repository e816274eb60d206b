//! OpenTelemetry traces, configured by the standard `OTEL_*` variables, as every OpenTelemetry
//! SDK reads them: off unless an OTLP endpoint is set. Exported over OTLP/HTTP with protobuf (a
//! collector's port 4318); gRPC is not built in, and asking for it is refused by name.

use crate::settings::{ConfigError, ConfigErrors};
use clap::Args;
use std::collections::HashMap;

/// The OpenTelemetry settings (`worker` and `serve`).
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "OpenTelemetry traces")]
pub struct OtelArgs {
    /// The OTLP collector's base URL (`http://collector:4318`); spans go to `<it>/v1/traces`.
    /// Unset (with OTEL_EXPORTER_OTLP_TRACES_ENDPOINT unset too): no traces.
    #[arg(long = "otel-endpoint", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub endpoint: Option<String>,
    /// The full URL spans are posted to, instead of OTEL_EXPORTER_OTLP_ENDPOINT's `/v1/traces`.
    #[arg(
        long = "otel-traces-endpoint",
        env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
    )]
    pub traces_endpoint: Option<String>,
    /// The OTLP protocol: `http/protobuf`, the one built in (`grpc` and `http/json` are refused).
    #[arg(
        long = "otel-protocol",
        env = "OTEL_EXPORTER_OTLP_PROTOCOL",
        default_value = "http/protobuf"
    )]
    pub protocol: String,
    /// The protocol for traces, when it differs from OTEL_EXPORTER_OTLP_PROTOCOL.
    #[arg(
        long = "otel-traces-protocol",
        env = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    )]
    pub traces_protocol: Option<String>,
    /// Headers sent with each export, `key=value,key=value` (a collector's API key).
    #[arg(
        long = "otel-headers",
        env = "OTEL_EXPORTER_OTLP_HEADERS",
        hide_env_values = true
    )]
    pub headers: Option<String>,
    /// The service's name on its spans.
    #[arg(
        long = "otel-service-name",
        env = "OTEL_SERVICE_NAME",
        default_value = "ringback"
    )]
    pub service_name: String,
    /// Which traces are kept: `parentbased_always_on` (the default: a producer's decision holds,
    /// a job without one is kept), `parentbased_traceidratio` (with OTEL_TRACES_SAMPLER_ARG),
    /// `always_on`, `always_off`, `traceidratio`, `parentbased_always_off`.
    #[arg(
        long = "otel-traces-sampler",
        env = "OTEL_TRACES_SAMPLER",
        default_value = "parentbased_always_on"
    )]
    pub sampler: String,
    /// The ratio of the `traceidratio` samplers, 0 to 1 (default 1).
    #[arg(long = "otel-traces-sampler-arg", env = "OTEL_TRACES_SAMPLER_ARG")]
    pub sampler_arg: Option<String>,
    /// `true`: no traces, whatever else is set.
    #[arg(
        long = "otel-sdk-disabled",
        env = "OTEL_SDK_DISABLED",
        default_value = "false"
    )]
    pub sdk_disabled: String,
    /// `otlp` (the default) or `none` (no traces).
    #[arg(
        long = "otel-traces-exporter",
        env = "OTEL_TRACES_EXPORTER",
        default_value = "otlp"
    )]
    pub traces_exporter: String,
}

/// Traces, validated: where they go and which are kept.
#[derive(Debug, Clone)]
pub struct OtelConfig {
    /// The full URL spans are posted to: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` with `/v1/traces` appended.
    pub traces_endpoint: String,
    /// Headers sent with each export (`OTEL_EXPORTER_OTLP_HEADERS`); empty when unset.
    pub headers: HashMap<String, String>,
    /// The service's name on every span (`OTEL_SERVICE_NAME`, default `ringback`).
    pub service_name: String,
    /// Which traces are kept (`OTEL_TRACES_SAMPLER`, its ratio `OTEL_TRACES_SAMPLER_ARG`).
    pub sampler: opentelemetry_sdk::trace::Sampler,
}

impl OtelArgs {
    /// `None` when traces are off; every broken setting at once.
    pub fn to_config(&self) -> Result<Option<OtelConfig>, ConfigErrors> {
        use opentelemetry_sdk::trace::Sampler;
        let mut errors = ConfigErrors::default();
        let protocol = self.traces_protocol.as_deref().unwrap_or(&self.protocol);
        let protocol_var = if self.traces_protocol.is_some() {
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
        } else {
            "OTEL_EXPORTER_OTLP_PROTOCOL"
        };
        if protocol != "http/protobuf" {
            errors.push(ConfigError::new(
                protocol_var,
                format!(
                    "{protocol:?} is not built into ringback: it exports OTLP over HTTP with protobuf \
                     (set http/protobuf, and the collector's OTLP/HTTP port, usually 4318)"
                ),
            ));
        }
        let disabled = match self.sdk_disabled.trim().to_ascii_lowercase().as_str() {
            "true" => true,
            "false" | "" => false,
            other => {
                errors.push(ConfigError::new(
                    "OTEL_SDK_DISABLED",
                    format!("expected true or false, got {other:?}"),
                ));
                false
            }
        };
        let exporting = match self.traces_exporter.trim() {
            "otlp" | "" => true,
            "none" => false,
            other => {
                errors.push(ConfigError::new(
                    "OTEL_TRACES_EXPORTER",
                    format!("{other:?} is not built into ringback: otlp or none"),
                ));
                false
            }
        };
        let ratio = match self.sampler_arg.as_deref().map(str::trim) {
            None | Some("") => 1.0,
            Some(a) => match a.parse::<f64>() {
                Ok(r) if (0.0..=1.0).contains(&r) => r,
                _ => {
                    errors.push(ConfigError::new(
                        "OTEL_TRACES_SAMPLER_ARG",
                        format!("expected a ratio from 0 to 1, got {a:?}"),
                    ));
                    1.0
                }
            },
        };
        let sampler = match self.sampler.trim() {
            "always_on" => Sampler::AlwaysOn,
            "always_off" => Sampler::AlwaysOff,
            "traceidratio" => Sampler::TraceIdRatioBased(ratio),
            "parentbased_always_on" | "" => Sampler::ParentBased(Box::new(Sampler::AlwaysOn)),
            "parentbased_always_off" => Sampler::ParentBased(Box::new(Sampler::AlwaysOff)),
            "parentbased_traceidratio" => {
                Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(ratio)))
            }
            other => {
                errors.push(ConfigError::new(
                    "OTEL_TRACES_SAMPLER",
                    format!(
                        "{other:?} is not a sampler ringback builds: always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio"
                    ),
                ));
                Sampler::AlwaysOff
            }
        };
        let mut headers = HashMap::new();
        for pair in self
            .headers
            .as_deref()
            .unwrap_or_default()
            .split(',')
            .filter(|p| !p.trim().is_empty())
        {
            match pair.split_once('=') {
                Some((k, v)) if !k.trim().is_empty() => {
                    headers.insert(k.trim().to_string(), v.trim().to_string());
                }
                _ => errors.push(ConfigError::new(
                    "OTEL_EXPORTER_OTLP_HEADERS",
                    "expected key=value pairs separated by commas",
                )),
            }
        }
        let given = |v: &Option<String>| v.clone().filter(|v| !v.trim().is_empty());
        let endpoint = match (given(&self.traces_endpoint), given(&self.endpoint)) {
            (Some(full), _) => Some(("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", full)),
            (None, Some(base)) => Some((
                "OTEL_EXPORTER_OTLP_ENDPOINT",
                format!("{}/v1/traces", base.trim_end_matches('/')),
            )),
            (None, None) => None,
        };
        if let Some((var, url)) = &endpoint
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            errors.push(ConfigError::new(var, "must be an http(s) URL"));
        }
        errors.or(Some(()))?;
        Ok(endpoint
            .filter(|_| !disabled && exporting)
            .map(|(_, traces_endpoint)| OtelConfig {
                traces_endpoint,
                headers,
                service_name: self.service_name.clone(),
                sampler,
            }))
    }

    /// The effective settings, headers masked, for `check-config`.
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let mut out = vec![];
        for (name, v) in [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", &self.endpoint),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", &self.traces_endpoint),
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", &self.traces_protocol),
            ("OTEL_TRACES_SAMPLER_ARG", &self.sampler_arg),
        ] {
            if let Some(v) = v {
                out.push((name, v.clone()));
            }
        }
        if self.headers.is_some() {
            out.push(("OTEL_EXPORTER_OTLP_HEADERS", "*** (set)".into()));
        }
        out.extend([
            ("OTEL_EXPORTER_OTLP_PROTOCOL", self.protocol.clone()),
            ("OTEL_SERVICE_NAME", self.service_name.clone()),
            ("OTEL_TRACES_SAMPLER", self.sampler.clone()),
            ("OTEL_SDK_DISABLED", self.sdk_disabled.clone()),
            ("OTEL_TRACES_EXPORTER", self.traces_exporter.clone()),
        ]);
        out
    }
}

impl OtelConfig {
    /// Builds the exporter and turns traces on for this process ([`crate::trace::install`]).
    /// The provider returned must be shut down at exit, after the runtime stopped, so the last
    /// spans are sent.
    pub fn install(
        &self,
    ) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, crate::error::Error> {
        use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
        // the exporter's client speaks TLS to an https collector over the same provider
        crate::twilio::client::install_tls_provider();
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(self.traces_endpoint.clone())
            .with_headers(self.headers.clone())
            .build()
            .map_err(|e| {
                crate::error::Error::Config(ConfigError::new(
                    "OTEL_EXPORTER_OTLP_ENDPOINT",
                    e.to_string(),
                ))
            })?;
        let resource = opentelemetry_sdk::Resource::builder()
            .with_service_name(self.service_name.clone())
            .build();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_sampler(self.sampler.clone())
            .with_resource(resource)
            .build();
        crate::trace::install(&provider);
        Ok(provider)
    }
}
