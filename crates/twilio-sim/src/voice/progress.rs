//! A call's life once created: it rings and ends as its rule says, its status callbacks posted
//! signed (`X-Twilio-Signature`, with `SequenceNumber` and `Timestamp` as Twilio sends them), in
//! order, shuffled or twice, and the keypad post sent to its `<Gather action>` with the chosen
//! digits while it is in progress. `end` hangs up a call at any point (`Status=completed`).

use std::sync::Arc;
use std::time::Duration;

use super::{CallRule, ended};
use crate::{Simulator, twilio_date};

/// The statuses a call goes through for its rule's outcome, with `AnsweredBy` where set.
fn plan(outcome: &str, machine_detection: bool) -> Vec<(&'static str, Option<&'static str>)> {
    let human = machine_detection.then_some("human");
    match outcome {
        "no-answer" => vec![("initiated", None), ("ringing", None), ("no-answer", None)],
        "busy" => vec![("initiated", None), ("busy", None)],
        "failed" => vec![("failed", None)],
        "machine" => vec![
            ("initiated", None),
            ("ringing", None),
            ("in-progress", Some("machine_end_beep")),
            ("completed", Some("machine_end_beep")),
        ],
        _ => vec![
            ("initiated", None),
            ("ringing", None),
            ("in-progress", human),
            ("completed", human),
        ],
    }
}

/// Every `<Gather action="…">` of a TwiML document, in order (entities unescaped).
pub fn gather_actions(twiml: &str) -> Vec<String> {
    let mut out = vec![];
    let mut rest = twiml;
    while let Some(i) = rest.find("<Gather") {
        rest = &rest[i + 7..];
        let tag = &rest[..rest.find('>').unwrap_or(rest.len())];
        if let Some(a) = tag.find("action=\"") {
            let v = &tag[a + 8..];
            let v = &v[..v.find('"').unwrap_or(v.len())];
            out.push(
                v.replace("&quot;", "\"")
                    .replace("&lt;", "<")
                    .replace("&gt;", ">")
                    .replace("&apos;", "'")
                    .replace("&amp;", "&"),
            );
        }
    }
    out
}

/// The call's next `SequenceNumber`: its callbacks are numbered from 0 in the order they fire.
fn next_sequence(sim: &Simulator, sid: &str) -> u32 {
    let mut n = 0;
    sim.calls.update(sid, |c| {
        n = c.sequence;
        c.sequence += 1;
    });
    n
}

/// The form of one status callback for the call `sid` at `status`.
fn callback_params(
    sim: &Simulator,
    sid: &str,
    status: &str,
    sequence: u32,
) -> Option<Vec<(String, String)>> {
    let c = sim.calls.get(sid)?;
    let (to, from) = (
        c.call.to.clone().unwrap_or_default(),
        c.call.from.clone().unwrap_or_default(),
    );
    let mut p: Vec<(String, String)> = vec![
        ("AccountSid".into(), sim.config.account_sid.clone()),
        ("ApiVersion".into(), "2010-04-01".into()),
        ("CallSid".into(), sid.to_string()),
        ("CallStatus".into(), status.to_string()),
        ("CallbackSource".into(), "call-progress-events".into()),
        ("Called".into(), to.clone()),
        ("Caller".into(), from.clone()),
        ("Direction".into(), "outbound-api".into()),
        ("From".into(), from),
        ("SequenceNumber".into(), sequence.to_string()),
        ("Timestamp".into(), twilio_date(chrono::Utc::now())),
        ("To".into(), to),
    ];
    if let Some(by) = &c.call.answered_by {
        p.push(("AnsweredBy".into(), by.clone()));
    }
    if ended(Some(status)) {
        p.push((
            "CallDuration".into(),
            c.call.duration.clone().unwrap_or_else(|| "0".into()),
        ));
    }
    Some(p)
}

async fn post(sim: &Simulator, url: &str, params: &[(String, String)], times: usize) {
    crate::webhook::post(sim, url, params, times).await
}

/// Move the call to `status`; false when it had already ended.
fn advance(sim: &Simulator, sid: &str, status: &str, answered_by: Option<&str>) -> bool {
    let mut moved = false;
    sim.calls.update(sid, |c| {
        if ended(c.call.status.as_deref()) {
            return;
        }
        moved = true;
        let now = twilio_date(chrono::Utc::now());
        let resource_status = if status == "initiated" {
            "queued"
        } else {
            status
        };
        c.call.status = Some(resource_status.into());
        c.call.date_updated = Some(now.clone());
        if let Some(by) = answered_by {
            c.call.answered_by = Some(by.into());
        }
        if status == "in-progress" {
            c.call.start_time = Some(now.clone());
        }
        if ended(Some(status)) {
            c.call.end_time = Some(now);
            let secs = c
                .call
                .start_time
                .as_deref()
                .and_then(|s| chrono::DateTime::parse_from_rfc2822(s).ok())
                .map_or(0, |s| {
                    (chrono::Utc::now() - s.with_timezone(&chrono::Utc)).num_seconds()
                });
            c.call.duration = Some(secs.max(0).to_string());
        }
    });
    moved
}

/// Ring the call through its rule's outcome. Runs in its own task.
pub async fn run(sim: Arc<Simulator>, sid: String, rule: CallRule, machine_detection: bool) {
    let step = Duration::from_millis(rule.step_ms.unwrap_or(20));
    let times = if rule.duplicate { 2 } else { 1 };
    let outcome = rule.outcome.clone().unwrap_or_else(|| "answered".into());
    let digits = rule.digits.clone().unwrap_or_else(|| "1".into());
    let Some(call) = sim.calls.get(&sid) else {
        return;
    };
    let actions = gather_actions(&call.twiml);
    let mut held = vec![];
    for (status, answered_by) in plan(&outcome, machine_detection) {
        tokio::time::sleep(step).await;
        if !advance(&sim, &sid, status, answered_by) {
            break;
        }
        let sequence = next_sequence(&sim, &sid);
        if let (Some(url), false) = (&call.status_callback, rule.no_callbacks)
            && let Some(params) = callback_params(&sim, &sid, status, sequence)
        {
            if rule.shuffled {
                held.push((url.clone(), params));
            } else {
                post(&sim, url, &params, times).await;
            }
        }
        if status == "in-progress" && outcome == "answered" && !digits.is_empty() {
            tokio::time::sleep(step).await;
            let at = usize::from(rule.second_gather);
            if let Some(action) = actions.get(at) {
                gather(&sim, &sid, action, &digits, times).await;
            }
        }
    }
    if !held.is_empty() {
        use rand::seq::SliceRandom;
        held.shuffle(&mut rand::rng());
        for (url, params) in held {
            post(&sim, &url, &params, times).await;
        }
    }
}

/// The keypad post: `Digits` to the `<Gather action>`, while the call is in progress.
async fn gather(sim: &Simulator, sid: &str, action: &str, digits: &str, times: usize) {
    let Some(mut params) = callback_params(sim, sid, "in-progress", 0) else {
        return;
    };
    params.retain(|(k, _)| {
        !matches!(
            k.as_str(),
            "SequenceNumber" | "Timestamp" | "CallbackSource"
        )
    });
    params.push(("Digits".into(), digits.into()));
    params.push(("FinishedOnKey".into(), String::new()));
    sim.calls.update(sid, |c| c.gathered.push(digits.into()));
    post(sim, action, &params, times).await;
}

/// Hang the call up now (`Status=completed` or `canceled` on the call): it ends as `status`
/// and its `completed` callback is posted.
pub async fn end(sim: &Arc<Simulator>, sid: &str, status: &str) {
    if !advance(sim, sid, status, None) {
        return;
    }
    let sequence = next_sequence(sim, sid);
    let url = sim.calls.get(sid).and_then(|c| c.status_callback);
    if let (Some(url), Some(params)) = (url, callback_params(sim, sid, status, sequence)) {
        let sim = sim.clone();
        tokio::spawn(async move { post(&sim, &url, &params, 1).await });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_each_gather_action_unescaped() {
        let twiml = r#"<Response><Gather input="dtmf" numDigits="1" action="https://h/a?k=1&amp;n=0"><Say>x</Say></Gather><Gather action="https://h/a?k=1&amp;n=1"/></Response>"#;
        assert_eq!(
            gather_actions(twiml),
            vec!["https://h/a?k=1&n=0", "https://h/a?k=1&n=1"]
        );
        assert!(gather_actions("<Response><Say>x</Say></Response>").is_empty());
    }

    #[test]
    fn each_outcome_ends_once() {
        for o in ["answered", "no-answer", "busy", "failed", "machine"] {
            let p = plan(o, true);
            assert_eq!(p.iter().filter(|(s, _)| ended(Some(s))).count(), 1, "{o}");
            assert!(ended(Some(p.last().unwrap().0)), "{o}");
        }
    }
}
