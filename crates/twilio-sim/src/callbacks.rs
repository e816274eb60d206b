//! Status callbacks: after accepting a message the simulator posts its later statuses to the
//! message's `StatusCallback`, form-encoded and signed as Twilio signs them
//! ([`super::webhook::post`]: signed, retried as the URL's connection overrides say), in the
//! order, number and timing the fault rules ask for.

use std::sync::Arc;
use std::time::Duration;

use super::Simulator;
use super::faults::CallbackRule;

/// Statuses after creation, for a final status: `sent` then the final one (`failed` never
/// reached the carrier, so it comes alone; `sent` alone means the carrier gave no receipt).
fn statuses(final_status: &str) -> Vec<&str> {
    match final_status {
        "failed" => vec!["failed"],
        "sent" => vec!["sent"],
        other => vec!["sent", other],
    }
}

/// Advance the message through its statuses and deliver the callbacks. Runs in its own task.
pub async fn deliver(
    sim: Arc<Simulator>,
    sid: String,
    callback_url: Option<String>,
    rule: CallbackRule,
) {
    if let Some(ms) = rule.delay_ms {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let final_status = rule
        .final_status
        .clone()
        .unwrap_or_else(|| "delivered".into());
    let mut order = statuses(&final_status);
    // Twilio's own state moves on whatever happens to the callbacks: record it first, so a
    // reconciling fetch sees the final status even when no callback arrives.
    let now = super::twilio_date(chrono::Utc::now());
    sim.store.update(&sid, |m| {
        m.status = Some(final_status.clone());
        m.date_updated = Some(now.clone());
        if final_status != "failed" {
            m.date_sent = Some(now.clone());
        }
        if matches!(final_status.as_str(), "failed" | "undelivered") {
            m.error_code = Some(rule.error_code.unwrap_or(30003));
            m.error_message = Some("Unreachable destination handset".into());
        }
    });
    let Some(url) = callback_url else { return };
    if rule.none {
        return;
    }
    if rule.reversed {
        order.reverse();
    }
    let Some(message) = sim.store.get(&sid) else {
        return;
    };
    for status in order {
        let mut params: Vec<(String, String)> = vec![
            ("AccountSid".into(), sim.config.account_sid.clone()),
            ("ApiVersion".into(), "2010-04-01".into()),
            ("From".into(), message.from.clone().unwrap_or_default()),
            ("MessageSid".into(), sid.clone()),
            ("MessageStatus".into(), status.into()),
            ("SmsSid".into(), sid.clone()),
            ("SmsStatus".into(), status.into()),
            ("To".into(), message.to.clone().unwrap_or_default()),
        ];
        if let Some(ms) = &message.messaging_service_sid {
            params.push(("MessagingServiceSid".into(), ms.clone()));
        }
        if matches!(status, "failed" | "undelivered") {
            params.push((
                "ErrorCode".into(),
                rule.error_code.unwrap_or(30003).to_string(),
            ));
        }
        if matches!(status, "delivered" | "undelivered") {
            params.push((
                "RawDlrDoneDate".into(),
                chrono::Utc::now().format("%y%m%d%H%M").to_string(),
            ));
        }
        let times = if rule.duplicate { 2 } else { 1 };
        super::webhook::post(&sim, &url, &params, times).await;
    }
}
