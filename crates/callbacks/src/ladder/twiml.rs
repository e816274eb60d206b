//! What a ladder's call says: the callback read out, then its question's choices ("press 1
//! for YES") or "press 1 to acknowledge", taken on the keypad by `<Gather>`; no key or a wrong
//! one: asked once more; nothing then: the call counts as not answered. Sent inline with the
//! create (`Twiml`, at most 4,000 characters: the callback's text is cut to fit), each
//! `<Gather action>` pointing at `serve`'s keypad route, which Twilio signs like every webhook.

/// Twilio's bound on an inline `Twiml` parameter, in characters.
pub const MAX_TWIML: usize = 4000;

/// How long the keypad waits for a key, in seconds, each time it asks.
pub const KEYPAD_WAIT_S: u32 = 8;

/// The voice a call speaks in (`RINGBACK_VOICE`, `RINGBACK_VOICE_LANGUAGE`); Twilio's account
/// default where unset.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Voice {
    /// `<Say voice>`: `Polly.Joanna`, `Google.en-GB-Standard-A`, `man`, `woman`.
    pub voice: Option<String>,
    /// `<Say language>`: `en-US`, `en-GB`, `de-DE`.
    pub language: Option<String>,
}

/// Escape text for an XML attribute or element.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // control characters are not XML; a spoken text loses nothing without them
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// What the keypad asks: each choice's digit, or one key to acknowledge.
pub fn prompt(choices: &[String]) -> String {
    if choices.is_empty() {
        return "Press 1 to acknowledge.".into();
    }
    choices
        .iter()
        .enumerate()
        .map(|(i, c)| format!("Press {} for {c}.", i + 1))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The call's TwiML: `body` read out with the keypad prompt, asked twice; `action` is the
/// keypad route for this call (each ask adds `n=0` or `n=1` to its query, before the
/// connection overrides, so a post says which).
pub fn call(body: &str, choices: &[String], action: &str, voice: &Voice) -> String {
    let say = say_attrs(voice);
    let gather = |n: u8, text: &str| {
        format!(
            "<Gather input=\"dtmf\" numDigits=\"1\" timeout=\"{KEYPAD_WAIT_S}\" method=\"POST\" \
             action=\"{}\"><Say{say}>{text}</Say></Gather>",
            xml(&asked(action, n))
        )
    };
    let prompt = xml(&prompt(choices));
    let render = |spoken: &str| {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response>{}{}<Say{say}>Goodbye.</Say></Response>",
            gather(0, &format!("{spoken} {prompt}")),
            gather(1, &prompt),
        )
    };
    let whole = render(&xml(body.trim()));
    if whole.chars().count() <= MAX_TWIML {
        return whole;
    }
    // cut the text (never the prompt or the route) to fit, at a character boundary
    let cut = escaped_within(body, MAX_TWIML - render("").chars().count() - 1);
    render(&format!("{cut}…"))
}

/// `text` escaped, cut at a character boundary to at most `room` characters (an entity is never
/// cut in two).
fn escaped_within(text: &str, room: usize) -> String {
    let mut cut = String::new();
    for c in text.trim().chars() {
        let next = xml(&c.to_string());
        if cut.chars().count() + next.chars().count() > room {
            break;
        }
        cut.push_str(&next);
    }
    cut
}

/// `<Say>`'s attributes for `voice`.
fn say_attrs(voice: &Voice) -> String {
    let mut attrs = String::new();
    if let Some(v) = &voice.voice {
        attrs.push_str(&format!(" voice=\"{}\"", xml(v)));
    }
    if let Some(l) = &voice.language {
        attrs.push_str(&format!(" language=\"{}\"", xml(l)));
    }
    attrs
}

/// A call that only reads `body` (no webhook to take a key on): the ladder climbs on time.
pub fn say_only(body: &str, voice: &Voice) -> String {
    let attrs = say_attrs(voice);
    let text = escaped_within(body, MAX_TWIML - 200);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say{attrs}>{text}</Say><Say{attrs}>Goodbye.</Say></Response>"
    )
}

/// The keypad route's answer to a key that is no choice: asked once more (`n=1`).
pub fn ask_again(choices: &[String], action: &str, voice: &Voice) -> String {
    let attrs = say_attrs(voice);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Gather input=\"dtmf\" numDigits=\"1\" \
         timeout=\"{KEYPAD_WAIT_S}\" method=\"POST\" action=\"{}\"><Say{attrs}>That is not one of \
         the choices. {}</Say></Gather><Say{attrs}>Goodbye.</Say></Response>",
        xml(&asked(action, 1)),
        xml(&prompt(choices))
    )
}

/// The keypad route with which ask it is (`n`) in its query, before the connection overrides.
fn asked(action: &str, n: u8) -> String {
    let overrides = super::settings::overrides(action);
    let route = &action[..action.len() - overrides.len()];
    let sep = if route.contains('?') { '&' } else { '?' };
    format!("{route}{sep}n={n}{overrides}")
}

/// The keypad route's last words: `text`, then the call ends.
pub fn goodbye(text: &str, voice: &Voice) -> String {
    let attrs = say_attrs(voice);
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response><Say{attrs}>{}</Say><Hangup/></Response>",
        xml(text)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn voice() -> Voice {
        Voice {
            voice: Some("Polly.Joanna".into()),
            language: Some("en-US".into()),
        }
    }

    #[test]
    fn a_question_is_read_with_its_choices_and_asked_twice() {
        let t = call(
            "Deploy <prod> & tell \"Ann\"?",
            &["YES".into(), "NO".into()],
            "https://h.example/api/notify/webhook/voice?run=r1&step=2",
            &voice(),
        );
        assert!(t.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Response>"));
        assert!(t.contains(
            "Deploy &lt;prod&gt; &amp; tell &quot;Ann&quot;? Press 1 for YES. Press 2 for NO."
        ));
        assert_eq!(t.matches("<Gather ").count(), 2);
        assert!(t.contains(
            "action=\"https://h.example/api/notify/webhook/voice?run=r1&amp;step=2&amp;n=0\""
        ));
        assert!(t.contains("&amp;n=1\""));
        assert!(t.contains("<Say voice=\"Polly.Joanna\" language=\"en-US\">"));
        assert!(
            t.ends_with("<Say voice=\"Polly.Joanna\" language=\"en-US\">Goodbye.</Say></Response>")
        );
    }

    #[test]
    fn a_plain_callback_asks_for_one_key() {
        let t = call(
            "Run 42 finished.",
            &[],
            "https://h.example/voice",
            &Voice::default(),
        );
        assert!(t.contains("<Say>Run 42 finished. Press 1 to acknowledge.</Say>"));
        assert!(t.contains("action=\"https://h.example/voice?n=0\""));
        let again = ask_again(
            &[],
            "https://h.example/voice?run=r#rc=5&rp=ct",
            &Voice::default(),
        );
        assert!(again.contains("action=\"https://h.example/voice?run=r&amp;n=1#rc=5&amp;rp=ct\""));
    }

    #[test]
    fn a_long_text_is_cut_to_twilios_bound_and_keeps_the_prompt() {
        let body = "é&".repeat(3000);
        let t = call(&body, &["YES".into()], "https://h.example/voice", &voice());
        assert!(t.chars().count() <= MAX_TWIML, "{}", t.chars().count());
        assert!(t.contains("… Press 1 for YES."));
        assert!(!t.contains("&am…"), "an entity is never cut in two");
        assert!(t.ends_with("Goodbye.</Say></Response>"));
    }
}
