//! Matching: which open question an inbound message answers (its code, the one open question,
//! or none), and when it is ambiguous enough to ask the person which.

use ringback_shared::error::Error;
use ringback_store::keys;

use super::{CODELESS_WINDOW, Inbound, Match, Question, Recorded, Replies, code, optouts};

impl Replies {
    /// Decide what a new message answers.
    pub(super) async fn decide(&self, m: &Inbound) -> Result<(Match, String), Error> {
        // Twilio's keyword, reported (Advanced Opt-Out) or alone in the message (Twilio's default
        // handling acts on it whatever ringback does): never an answer, never asked back
        if m.opt_out_type.is_some() || optouts::default_keyword(&m.text).is_some() {
            return Ok((Match::OptOut, m.text.clone()));
        }
        // questions another message claimed as their answer while this one was being decided
        let mut taken: Vec<String> = vec![];
        loop {
            let (matched, text, closed) = self.choose(m, &taken).await?;
            match &matched {
                Match::Answer { run_id, .. } => {
                    let mut holder = self.claim_answer(run_id, &m.message_sid).await?;
                    // a claim whose message was never recorded and never will be (its handler
                    // was cut between the two) is void: the person's real answer answers
                    if holder != m.message_sid && self.never_recorded(&holder).await? {
                        match self.take_answer(run_id, &holder, &m.message_sid).await? {
                            Some(now_holding) => holder = now_holding,
                            // the claim expired meanwhile: claim it afresh
                            None => continue,
                        }
                    }
                    if holder != m.message_sid {
                        // closed on the first answer's behalf only once it is recorded: a
                        // message cut before its record leaves the question open to the next
                        if self.recorded(&holder).await? {
                            self.close(run_id, &m.from, &holder).await?;
                        }
                        taken.push(run_id.clone());
                        continue;
                    }
                }
                // a question another message claimed stays closed, also when that message was
                // cut short before it closed it, while it may still be recorded: never asked
                // about (a claim no record will ever back is void: the question stays open)
                Match::Ambiguous { run_ids } => {
                    let mut claimed = false;
                    for run_id in run_ids {
                        // a question already closed is named in the ask-back on purpose (the
                        // message may be about it): only an open one claimed meanwhile is news
                        if closed.contains(run_id) {
                            continue;
                        }
                        let holder: Option<String> = redis::cmd("GET")
                            .arg(keys::question_answered(&self.claim_prefix, run_id))
                            .query_async(&mut self.conn())
                            .await?;
                        if let Some(holder) = holder.filter(|h| *h != m.message_sid) {
                            // a void claim (never recorded, never will be) leaves it open
                            if self.never_recorded(&holder).await? {
                                continue;
                            }
                            if self.recorded(&holder).await? {
                                self.close(run_id, &m.from, &holder).await?;
                            }
                            taken.push(run_id.clone());
                            claimed = true;
                        }
                    }
                    if claimed {
                        continue;
                    }
                }
                _ => {}
            }
            return Ok((matched, text));
        }
    }

    /// What `m` answers among the questions open to its sender, `taken` left out; and the
    /// questions already closed that an ask-back names on purpose ([`CODELESS_WINDOW`]).
    pub(super) async fn choose(
        &self,
        m: &Inbound,
        taken: &[String],
    ) -> Result<(Match, String, Vec<String>), Error> {
        let open: Vec<Question> = self
            .open_to(&m.from, m.received_at)
            .await?
            .into_iter()
            .filter(|q| !taken.contains(&q.run_id))
            .collect();
        if let Some((c, rest)) = code::split(&m.text) {
            if let Some(q) = open.iter().find(|q| q.code == c) {
                return Ok((
                    Match::Answer {
                        run_id: q.run_id.clone(),
                        code: q.code.clone(),
                    },
                    rest.to_string(),
                    vec![],
                ));
            }
            // the code of a question already answered or past its time: a late reply to that
            // run, never the answer to another
            if let Some(q) = self
                .questions_to(&m.from)
                .await?
                .into_iter()
                .find(|q| q.code == c)
            {
                return Ok((
                    Match::Late {
                        run_id: q.run_id,
                        code: q.code,
                    },
                    rest.to_string(),
                    vec![],
                ));
            }
        }
        Ok(match open.as_slice() {
            [] => match self.just_answered(m).await? {
                // an answer after the question's first one, by whoever: late, never a second
                Some(q) => (
                    Match::Late {
                        run_id: q.run_id,
                        code: q.code,
                    },
                    m.text.clone(),
                    vec![],
                ),
                None => (Match::Unmatched, m.text.clone(), vec![]),
            },
            // the only open question, unless the person may still be talking about another one
            // (answered or closed within the window): then asked back, never guessed
            [q] => {
                let recent = self.recently_closed(m, &q.run_id).await?;
                if recent.is_empty() {
                    (
                        Match::Answer {
                            run_id: q.run_id.clone(),
                            code: q.code.clone(),
                        },
                        m.text.clone(),
                        vec![],
                    )
                } else {
                    (
                        Match::Ambiguous {
                            run_ids: std::iter::once(q.run_id.clone())
                                .chain(recent.iter().cloned())
                                .collect(),
                        },
                        m.text.clone(),
                        recent,
                    )
                }
            }
            many => (
                Match::Ambiguous {
                    run_ids: many.iter().map(|q| q.run_id.clone()).collect(),
                },
                m.text.clone(),
                vec![],
            ),
        })
    }

    /// The one question of `m`'s sender that was answered (by anyone, on any channel) while
    /// it was still open to them: within [`CODELESS_WINDOW`] before `m`, or still inside its
    /// `replyWithin`. A message without a code and with no question open is its late reply;
    /// with several such questions it answers none.
    pub(super) async fn just_answered(&self, m: &Inbound) -> Result<Option<Question>, Error> {
        let since = m.received_at - CODELESS_WINDOW.as_millis() as i64;
        let mut found = vec![];
        for q in self.questions_to(&m.from).await? {
            let Some(sid) = &q.answered_by else { continue };
            if q.until > m.received_at || self.answered_at(sid, q.until).await? > since {
                found.push(q);
            }
        }
        Ok(match found.len() {
            1 => found.pop(),
            _ => None,
        })
    }

    /// When answer `sid` came: its record's arrival; `m`'s own time for one being recorded
    /// now, `ended` for a `no-answer`.
    async fn answered_at(&self, sid: &str, ended: i64) -> Result<i64, Error> {
        if sid.starts_with(super::answers::NO_ANSWER_CLAIM) {
            return Ok(ended);
        }
        let v: Option<String> = redis::cmd("GET")
            .arg(keys::inbound(&self.claim_prefix, sid))
            .query_async(&mut self.conn())
            .await?;
        Ok(v.and_then(|v| serde_json::from_str::<Recorded>(&v).ok())
            .map_or(i64::MAX, |r| r.inbound.received_at))
    }

    /// The person's other questions (not `open_run`) answered or closed within
    /// [`CODELESS_WINDOW`] before `m` arrived: a message without a code may be about one of
    /// them ("no, wait"), so it is asked back rather than given to the one still open.
    pub(super) async fn recently_closed(
        &self,
        m: &Inbound,
        open_run: &str,
    ) -> Result<Vec<String>, Error> {
        let since = m.received_at - CODELESS_WINDOW.as_millis() as i64;
        let mut recent = Vec::new();
        for q in self.questions_to(&m.from).await? {
            if q.run_id == open_run {
                continue;
            }
            let closed_at = match &q.answered_by {
                // an answer with no record yet is being recorded now: recent
                Some(sid) => self.answered_at(sid, q.until).await?,
                None if q.until <= m.received_at => q.until,
                None => continue,
            };
            if closed_at > since {
                recent.push(q.run_id);
            }
        }
        Ok(recent)
    }
}
