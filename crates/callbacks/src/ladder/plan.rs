//! A callback's ladder: who is tried after the text, by which channel, when.
//!
//! Job data asks for it (`"ladder": {"callAfter": "10m", "stepWait": "10m", "then": ["+1…"]}`,
//! durations as `replyWithin`), the deployment gives defaults (`RINGBACK_CALL_AFTER`,
//! `RINGBACK_LADDER_STEP_MS`, `RINGBACK_ONCALL`), and `"ladder": false` asks for none. A
//! question may name its `choices` (`["YES", "NO"]`), so a keypad digit and a reply such as
//! `1` or `yes` both answer it. Every broken field is named at once.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::callback::parse_duration;
use ringback_twilio::message::is_e164;

/// The most people a ladder tries after the recipient.
pub const MAX_THEN: usize = 5;
/// The most choices a question offers (one keypad digit each, 1 to 9).
pub const MAX_CHOICES: usize = 9;
/// The longest choice, in characters (it is read out and texted back).
pub const MAX_CHOICE_CHARS: usize = 40;

/// The deployment's ladder defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LadderSettings {
    /// `RINGBACK_CALL_AFTER`: call the recipient this long after the text went unacknowledged;
    /// `None`: no ladder unless the job asks for one.
    pub call_after: Option<Duration>,
    /// `RINGBACK_LADDER_STEP_MS`: how long each later step waits for an acknowledgement.
    pub step_wait: Duration,
    /// `RINGBACK_ONCALL`: the people tried after the recipient, in order.
    pub oncall: Vec<String>,
}

/// The ladder one callback climbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ladder {
    /// How long after the text the recipient is called.
    pub call_after: Duration,
    /// How long each later step waits.
    pub step_wait: Duration,
    /// The people tried after the recipient (each texted, then called).
    pub then: Vec<String>,
}

/// How a step reaches its person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// A text (inside the claim/sent window, as the first one).
    Text,
    /// A voice call that reads the callback and takes the answer on the keypad.
    Call,
}

/// One step of a ladder, after the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    /// Text or call.
    pub channel: Channel,
    /// The number it reaches (E.164).
    pub to: String,
    /// When it starts, counted from the text, unless someone acknowledged before.
    pub at: Duration,
}

impl Ladder {
    /// The steps after the text to `recipient`: a call to the recipient, then each next person
    /// texted and then called, a step wait apart.
    pub fn steps(&self, recipient: &str) -> Vec<Step> {
        let mut at = self.call_after;
        let mut steps = vec![Step {
            channel: Channel::Call,
            to: recipient.to_string(),
            at,
        }];
        for person in &self.then {
            for channel in [Channel::Text, Channel::Call] {
                at += self.step_wait;
                steps.push(Step {
                    channel,
                    to: person.clone(),
                    at,
                });
            }
        }
        steps
    }

    /// When the ladder is exhausted unacknowledged: a step wait after its last step.
    pub fn ends_at(&self, recipient: &str) -> Duration {
        self.steps(recipient)
            .last()
            .map_or(self.call_after, |s| s.at + self.step_wait)
    }
}

/// What a job's data asks of the ladder, read before the deployment's defaults apply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Ask {
    /// No `ladder` field: the deployment's default (`RINGBACK_CALL_AFTER`; none when unset).
    #[default]
    Default,
    /// `"ladder": false`: none, whatever the deployment's default.
    Off,
    /// `"ladder": {…}`: these fields, the others from the deployment's defaults.
    Fields {
        /// `callAfter`.
        call_after: Option<Duration>,
        /// `stepWait`.
        step_wait: Option<Duration>,
        /// `then`.
        then: Option<Vec<String>>,
    },
}

impl Ask {
    /// The ladder this ask makes with the deployment's `settings`; `None`: no ladder.
    pub fn resolve(&self, settings: &LadderSettings) -> Option<Ladder> {
        match self {
            Ask::Off => None,
            Ask::Default => settings.call_after.map(|call_after| Ladder {
                call_after,
                step_wait: settings.step_wait,
                then: settings.oncall.clone(),
            }),
            Ask::Fields {
                call_after,
                step_wait,
                then,
            } => Some(Ladder {
                call_after: call_after
                    .or(settings.call_after)
                    .unwrap_or(settings.step_wait),
                step_wait: step_wait.unwrap_or(settings.step_wait),
                then: then.clone().unwrap_or_else(|| settings.oncall.clone()),
            }),
        }
    }
}

impl Ask {
    /// The job data's `ladder` field that asks this, as [`ask_of`] reads it back (`None`: no
    /// field, the deployment's default). Durations are written in seconds.
    pub fn to_field(&self) -> Option<Value> {
        let secs = |d: &Option<Duration>| d.map(|d| Value::from(format!("{}s", d.as_secs())));
        match self {
            Ask::Default => None,
            Ask::Off => Some(Value::Bool(false)),
            Ask::Fields {
                call_after,
                step_wait,
                then,
            } => {
                let mut o = Map::new();
                if let Some(v) = secs(call_after) {
                    o.insert("callAfter".into(), v);
                }
                if let Some(v) = secs(step_wait) {
                    o.insert("stepWait".into(), v);
                }
                if let Some(then) = then {
                    o.insert("then".into(), then.clone().into());
                }
                Some(Value::Object(o))
            }
        }
    }
}

/// Read a callback's `ladder` from its job data with the deployment's defaults: `None` when it
/// has none. Every broken field is named, all at once.
pub fn read(
    data: &Map<String, Value>,
    settings: &LadderSettings,
) -> Result<Option<Ladder>, Vec<String>> {
    Ok(ask_of(data)?.resolve(settings))
}

/// Read what a callback's job data asks of the ladder; every broken field is named at once.
pub fn ask_of(data: &Map<String, Value>) -> Result<Ask, Vec<String>> {
    let mut errors = vec![];
    let asked = match data.get("ladder") {
        None | Some(Value::Null) => return Ok(Ask::Default),
        Some(Value::Bool(false)) => return Ok(Ask::Off),
        Some(Value::Object(o)) => o,
        Some(other) => {
            return Err(vec![format!(
                "field `ladder` must be an object such as {{\"callAfter\": \"10m\"}} or false, not {other}"
            )]);
        }
    };
    for key in asked.keys() {
        if !matches!(key.as_str(), "callAfter" | "stepWait" | "then") {
            errors.push(format!(
                "field `ladder.{key}` is not a ladder field (callAfter, stepWait, then)"
            ));
        }
    }
    let duration = |name: &str, errors: &mut Vec<String>| match asked.get(name) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => match parse_duration(&format!("ladder.{name}"), s) {
            Ok(d) => Some(d),
            Err(e) => {
                errors.push(e);
                None
            }
        },
        Some(other) => {
            errors.push(format!(
                "field `ladder.{name}` must be a duration such as \"10m\", not {other}"
            ));
            None
        }
    };
    let call_after = duration("callAfter", &mut errors);
    let step_wait = duration("stepWait", &mut errors);
    let then = match asked.get("then") {
        None | Some(Value::Null) => None,
        Some(Value::Array(people)) => {
            if people.len() > MAX_THEN {
                errors.push(format!(
                    "field `ladder.then` names {} people; at most {MAX_THEN}",
                    people.len()
                ));
            }
            let mut then = vec![];
            for (i, p) in people.iter().enumerate() {
                match p.as_str().map(str::trim) {
                    Some(n) if is_e164(n) => then.push(n.to_string()),
                    _ => errors.push(format!(
                        "field `ladder.then[{i}]` must be a number in E.164 form (+15551234567), not {p}"
                    )),
                }
            }
            Some(then)
        }
        Some(other) => {
            errors.push(format!(
                "field `ladder.then` must be a list of numbers, not {other}"
            ));
            None
        }
    };
    if errors.is_empty() {
        Ok(Ask::Fields {
            call_after,
            step_wait,
            then,
        })
    } else {
        Err(errors)
    }
}

/// What the ladder sweep needs of a run, kept in its ladder's record when it opens: the steps
/// and what they say, so no job is needed to climb it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Plan {
    /// The steps after the text, in order (step 1 first).
    pub steps: Vec<PlannedStep>,
    /// How long each step after the first waits (ms).
    pub step_wait_ms: u64,
    /// The number the text went to.
    pub recipient: String,
    /// The callback's words.
    pub body: String,
    /// A question's choices (empty: "press 1 to acknowledge").
    #[serde(default)]
    pub choices: Vec<String>,
    /// The run is a question.
    #[serde(default)]
    pub question: bool,
    /// Sent inside quiet hours.
    #[serde(default)]
    pub urgent: bool,
    /// The recipient's zone (`timeZone`); the others are read in the deployment's.
    #[serde(default)]
    pub time_zone: Option<String>,
}

/// One step of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlannedStep {
    /// `call` or `text`.
    pub channel: String,
    /// The number it reaches.
    pub to: String,
}

impl Plan {
    /// The plan of `ladder` for a callback to `recipient` saying `body`.
    pub fn of(ladder: &Ladder, req: &crate::callback::CallbackRequest) -> Self {
        Plan {
            steps: ladder
                .steps(&req.to)
                .into_iter()
                .map(|s| PlannedStep {
                    channel: match s.channel {
                        Channel::Call => "call",
                        Channel::Text => "text",
                    }
                    .into(),
                    to: s.to,
                })
                .collect(),
            step_wait_ms: ladder.step_wait.as_millis() as u64,
            recipient: req.to.clone(),
            body: req.body.clone(),
            choices: req.choices.clone(),
            question: req.expect_reply.is_some(),
            urgent: req.urgent,
            time_zone: req.time_zone.clone(),
        }
    }

    /// Step `k` (1 for the first after the text).
    pub fn step(&self, k: u32) -> Option<&PlannedStep> {
        self.steps.get((k as usize).checked_sub(1)?)
    }

    /// The zone step `k`'s person's quiet hours are read in: the recipient's own for them,
    /// the deployment's for the others.
    pub fn zone_of(&self, to: &str) -> Option<&str> {
        (to == self.recipient)
            .then_some(self.time_zone.as_deref())
            .flatten()
    }
}

/// Read a question's `choices`: none when absent. Only a question (`expectReply`) offers them.
pub fn read_choices(data: &Map<String, Value>, question: bool) -> Result<Vec<String>, Vec<String>> {
    let list = match data.get("choices") {
        None | Some(Value::Null) => return Ok(vec![]),
        Some(Value::Array(list)) => list,
        Some(other) => {
            return Err(vec![format!(
                "field `choices` must be a list such as [\"YES\", \"NO\"], not {other}"
            )]);
        }
    };
    let mut errors = vec![];
    if !question {
        errors.push(
            "field `choices` is set but `expectReply` is not true: choices answer a question"
                .to_string(),
        );
    }
    if list.is_empty() || list.len() > MAX_CHOICES {
        errors.push(format!(
            "field `choices` must name 1 to {MAX_CHOICES} choices (one keypad digit each), not {}",
            list.len()
        ));
    }
    let mut choices: Vec<String> = vec![];
    for (i, c) in list.iter().enumerate() {
        let Some(text) = c.as_str().map(str::trim).filter(|t| !t.is_empty()) else {
            errors.push(format!(
                "field `choices[{i}]` must be a non-empty text, not {c}"
            ));
            continue;
        };
        if text.chars().count() > MAX_CHOICE_CHARS {
            errors.push(format!(
                "field `choices[{i}]` is longer than {MAX_CHOICE_CHARS} characters"
            ));
        } else if text.chars().all(|ch| ch.is_ascii_digit()) {
            errors.push(format!(
                "field `choices[{i}]` is a number ({text}): a reply `{text}` would be read as a keypad digit"
            ));
        } else if choices.iter().any(|c| c.eq_ignore_ascii_case(text)) {
            errors.push(format!("field `choices[{i}]` repeats {text:?}"));
        } else {
            choices.push(text.to_string());
        }
    }
    if errors.is_empty() {
        Ok(choices)
    } else {
        Err(errors)
    }
}

/// Which choice an answer names: its keypad digit (`1` for the first) or its text, any case,
/// with the spaces and final punctuation a person adds (`yes`, ` Yes! `). `None`: neither.
pub fn choice_of(choices: &[String], answer: &str) -> Option<usize> {
    let a = answer.trim().trim_end_matches(['.', '!', '?']).trim();
    if let Ok(d) = a.parse::<usize>() {
        return (1..=choices.len()).contains(&d).then(|| d - 1);
    }
    choices.iter().position(|c| c.eq_ignore_ascii_case(a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(json: &str) -> Map<String, Value> {
        serde_json::from_str(json).unwrap()
    }

    fn settings() -> LadderSettings {
        LadderSettings {
            call_after: None,
            step_wait: Duration::from_secs(600),
            oncall: vec!["+15550000002".into()],
        }
    }

    #[test]
    fn a_job_asks_for_a_ladder_and_the_steps_alternate_text_and_call() {
        let l = read(
            &data(r#"{"ladder":{"callAfter":"5m","stepWait":"2m","then":["+15550000003"]}}"#),
            &settings(),
        )
        .unwrap()
        .unwrap();
        let steps = l.steps("+15550000001");
        let shape: Vec<(Channel, &str, u64)> = steps
            .iter()
            .map(|s| (s.channel, s.to.as_str(), s.at.as_secs()))
            .collect();
        assert_eq!(
            shape,
            [
                (Channel::Call, "+15550000001", 300),
                (Channel::Text, "+15550000003", 420),
                (Channel::Call, "+15550000003", 540),
            ]
        );
        assert_eq!(l.ends_at("+15550000001"), Duration::from_secs(660));
    }

    #[test]
    fn the_deployment_default_applies_unless_the_job_says_false() {
        assert_eq!(
            read(&data("{}"), &settings()).unwrap(),
            None,
            "no default: none"
        );
        let on = LadderSettings {
            call_after: Some(Duration::from_secs(900)),
            ..settings()
        };
        let l = read(&data("{}"), &on).unwrap().unwrap();
        assert_eq!(l.call_after, Duration::from_secs(900));
        assert_eq!(l.then, ["+15550000002"]);
        assert_eq!(read(&data(r#"{"ladder":false}"#), &on).unwrap(), None);
        let l = read(&data(r#"{"ladder":{"then":[]}}"#), &on)
            .unwrap()
            .unwrap();
        assert!(l.then.is_empty(), "an empty list tries no one else");
    }

    #[test]
    fn every_broken_field_is_named_at_once() {
        let e = read(
            &data(
                r#"{"ladder":{"callAfter":"soon","stepWait":5,"then":["555","+15550000003"],"calAfter":"1m"}}"#,
            ),
            &settings(),
        )
        .unwrap_err();
        for want in [
            "ladder.calAfter",
            "ladder.callAfter",
            "ladder.stepWait",
            "ladder.then[0]",
        ] {
            assert!(e.iter().any(|m| m.contains(want)), "{want} in {e:?}");
        }
        assert_eq!(e.len(), 4, "{e:?}");
        assert!(read(&data(r#"{"ladder":"yes"}"#), &settings()).is_err());
        let many = format!(
            r#"{{"ladder":{{"then":[{}]}}}}"#,
            [r#""+15550000003""#; 6].join(",")
        );
        assert!(read(&data(&many), &settings()).unwrap_err()[0].contains("at most 5"));
    }

    #[test]
    fn choices_are_read_checked_and_answered_by_digit_or_text() {
        let c = read_choices(&data(r#"{"choices":["YES","NO"]}"#), true).unwrap();
        assert_eq!(c, ["YES", "NO"]);
        assert_eq!(choice_of(&c, "1"), Some(0));
        assert_eq!(choice_of(&c, " no! "), Some(1));
        assert_eq!(choice_of(&c, "Yes."), Some(0));
        assert_eq!(choice_of(&c, "3"), None);
        assert_eq!(choice_of(&c, "maybe"), None);
        assert!(read_choices(&data("{}"), false).unwrap().is_empty());
        let e = read_choices(&data(r#"{"choices":["yes","YES","","42"]}"#), false).unwrap_err();
        for want in ["expectReply", "choices[1]", "choices[2]", "choices[3]"] {
            assert!(e.iter().any(|m| m.contains(want)), "{want} in {e:?}");
        }
        assert!(read_choices(&data(r#"{"choices":[]}"#), true).is_err());
    }
}
