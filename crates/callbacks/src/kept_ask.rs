//! What a callback asked of its question and its ladder, kept on its attempt record
//! ([`CallbackRequest::kept_ask`]): the paths that rebuild a request from the record alone (the
//! orphan sweep, drain) ask the same question and climb the same ladder when the job is gone.

use serde_json::Value;

use crate::callback::{CallbackRequest, DEFAULT_REPLY_WITHIN, parse_within};

impl CallbackRequest {
    /// What the job asked of its question and its ladder, as job data fields (`expectReply`,
    /// `replyWithin` in seconds, `choices`, `ladder`): kept on the attempt record, so a path that
    /// rebuilds the request from the record alone (the orphan sweep, drain) asks the same
    /// question and climbs the same ladder when the job is gone. `None`: it asked nothing of
    /// them (a plain callback's record stays as small as before).
    pub fn kept_ask(&self) -> Option<String> {
        let mut o = serde_json::Map::new();
        if let Some(within) = self.expect_reply {
            o.insert("expectReply".into(), true.into());
            o.insert(
                "replyWithin".into(),
                format!("{}s", within.as_secs().max(1)).into(),
            );
        }
        if !self.choices.is_empty() {
            o.insert("choices".into(), self.choices.clone().into());
        }
        if let Some(ladder) = self.ladder.to_field() {
            o.insert("ladder".into(), ladder);
        }
        (!o.is_empty()).then(|| Value::Object(o).to_string())
    }

    /// `self` with the question and ladder of `kept` (a [`CallbackRequest::kept_ask`] value);
    /// each part that cannot be read is left as it is.
    pub fn with_kept_ask(mut self, kept: &str) -> Self {
        let Ok(Value::Object(o)) = serde_json::from_str::<Value>(kept) else {
            return self;
        };
        if o.get("expectReply") == Some(&Value::Bool(true)) {
            self.expect_reply = Some(
                o.get("replyWithin")
                    .and_then(Value::as_str)
                    .and_then(|w| parse_within(w).ok())
                    .unwrap_or(DEFAULT_REPLY_WITHIN),
            );
        }
        if let Ok(choices) = crate::ladder::plan::read_choices(&o, self.expect_reply.is_some()) {
            self.choices = choices;
        }
        if let Ok(ladder) = crate::ladder::plan::ask_of(&o) {
            self.ladder = ladder;
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_ask_reads_back_as_the_job_asked_it() {
        let base = r#"{"runId":"r1","to":"+15558675310","body":"done""#;
        for extra in [
            "",
            r#","ladder":false"#,
            r#","ladder":{"callAfter":"10m"}"#,
            r#","expectReply":true,"replyWithin":"90m","choices":["YES","NO"],"ladder":{"callAfter":"2h","stepWait":"30s","then":["+15558675311"]}"#,
            r#","expectReply":true"#,
        ] {
            let asked = CallbackRequest::parse(&format!("{base}{extra}}}")).unwrap();
            let bare = CallbackRequest {
                run_id: asked.run_id.clone(),
                to: asked.to.clone(),
                body: asked.body.clone(),
                ..Default::default()
            };
            let kept = asked.kept_ask();
            assert_eq!(kept.is_none(), extra.is_empty(), "{extra}");
            let back = match &kept {
                Some(k) => bare.with_kept_ask(k),
                None => bare,
            };
            assert_eq!(back, asked, "{extra} kept as {kept:?}");
        }
    }
}
