//! A run's ladder as people read it (`ringback status`, the console's run page): where it
//! stands, and each step with its person, channel, times and outcome.

use std::collections::HashMap;

use super::plan::Plan;
use ringback_shared::redact::mask;

/// A run's ladder, read from its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LadderView {
    /// `climbing`, `stopped` (acknowledged) or `exhausted`.
    pub state: String,
    /// The last step started (0: only the text).
    pub step: u32,
    /// When the next step may start (ms, Redis's clock), while it climbs.
    pub due: Option<i64>,
    /// When it opened, and when it ended (ms).
    pub opened: Option<i64>,
    /// When it stopped or ran out (ms).
    pub ended: Option<i64>,
    /// How it was acknowledged (`reply`, `keypad`, `delivered`) and by whom (masked).
    pub acknowledged: Option<(String, String)>,
    /// Why the ladder climbed past the text before its time (the text's failure), if it did.
    pub text_failed: Option<String>,
    /// Every step of its plan, started or not.
    pub steps: Vec<StepView>,
}

/// One step of a ladder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepView {
    /// 1 for the first after the text.
    pub k: u32,
    /// `call` or `text`.
    pub channel: String,
    /// Its person, masked.
    pub to: String,
    /// When it started (ms); `None`: not (yet).
    pub started: Option<i64>,
    /// What it sent: a CallSid, `run:<runId>` for a text (its own run), `none:<why>` when
    /// skipped; `pending` while its send is unconfirmed.
    pub sent: Option<String>,
    /// A call's last status (`no-answer`, `completed`, …) and `AnsweredBy`.
    pub status: Option<String>,
    /// Why the ladder climbed past it before its time.
    pub climbed: Option<String>,
}

impl LadderView {
    /// The view of a ladder record's fields; `None` for an empty record (no ladder).
    pub fn of(fields: &HashMap<String, String>) -> Option<Self> {
        let state = fields.get("state")?.clone();
        let num = |f: &str| fields.get(f).and_then(|v| v.parse::<i64>().ok());
        let plan: Option<Plan> = fields
            .get("plan")
            .and_then(|p| serde_json::from_str(p).ok());
        let steps = plan
            .map(|p| p.steps)
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, s)| {
                let k = i as u32 + 1;
                let field = |name: &str| fields.get(&format!("{name}:{k}")).cloned();
                let sent = field("claim").map(|c| match c.split_once(':') {
                    Some(("sent", what)) => what.to_string(),
                    _ => "pending".to_string(),
                });
                let status = field("status").map(|s| match field("answered_by") {
                    Some(by) => format!("{s} ({by})"),
                    None => s,
                });
                StepView {
                    k,
                    channel: s.channel,
                    to: mask(&s.to),
                    started: num(&format!("started:{k}")),
                    sent,
                    status,
                    climbed: field("why"),
                }
            })
            .collect();
        Some(Self {
            step: num("step").unwrap_or(0) as u32,
            due: (state == "climbing").then(|| num("due")).flatten(),
            opened: num("opened"),
            ended: num("ended"),
            acknowledged: fields.get("acked_by").map(|by| {
                (
                    by.clone(),
                    fields.get("acked_who").cloned().unwrap_or_default(),
                )
            }),
            text_failed: fields.get("why:0").cloned(),
            steps,
            state,
        })
    }

    /// The lines `ringback status` prints: where it stands, then each step; times by `when`.
    pub fn lines(&self, when: &dyn Fn(i64) -> String) -> Vec<String> {
        let at = |t: Option<i64>| t.map(when).unwrap_or_default();
        let stands = match (self.state.as_str(), &self.acknowledged) {
            ("stopped", Some((how, who))) => format!(
                "stopped: acknowledged by {how} from {who} at {}",
                at(self.ended)
            ),
            ("exhausted", _) => format!(
                "exhausted: nobody acknowledged (escalated) at {}",
                at(self.ended)
            ),
            _ => format!(
                "climbing: step {} of {} started; next at {}",
                self.step,
                self.steps.len(),
                at(self.due)
            ),
        };
        let mut out = vec![format!("ladder     {stands}")];
        if let Some(why) = &self.text_failed {
            out.push(format!("  text     climbed at once: {why}"));
        }
        for s in &self.steps {
            out.push(format!(
                "  step {}   {:<4} {}  {}  {}  {}{}",
                s.k,
                s.channel,
                s.to,
                s.started.map(when).unwrap_or_else(|| "not started".into()),
                s.sent.as_deref().unwrap_or("-"),
                s.status.as_deref().unwrap_or("-"),
                s.climbed
                    .as_deref()
                    .map(|w| format!("  climbed: {w}"))
                    .unwrap_or_default()
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_as_its_steps() {
        let plan = r#"{"steps":[{"channel":"call","to":"+15550000001"},{"channel":"text","to":"+15550000002"}],"stepWaitMs":1000,"recipient":"+15550000001","body":"b"}"#;
        let fields: HashMap<String, String> = [
            ("state", "stopped"),
            ("step", "2"),
            ("plan", plan),
            ("claim:1", "sent:CA01"),
            ("status:1", "no-answer"),
            ("why:1", "call no-answer"),
            ("started:1", "1000"),
            ("claim:2", "pending:abc"),
            ("acked_by", "reply"),
            ("acked_who", "+1555…0002"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let v = LadderView::of(&fields).unwrap();
        assert_eq!(v.state, "stopped");
        assert_eq!(v.due, None, "no due time once stopped");
        assert_eq!(v.steps.len(), 2);
        assert_eq!(v.steps[0].sent.as_deref(), Some("CA01"));
        assert_eq!(v.steps[0].status.as_deref(), Some("no-answer"));
        assert_eq!(v.steps[0].climbed.as_deref(), Some("call no-answer"));
        assert_eq!(v.steps[1].sent.as_deref(), Some("pending"));
        assert!(!v.steps[1].to.contains("0000002"), "masked");
        assert_eq!(v.acknowledged.unwrap().0, "reply");
        assert_eq!(LadderView::of(&HashMap::new()), None);
    }
}
