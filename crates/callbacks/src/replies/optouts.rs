//! Opt-outs, as Twilio reports them. Twilio answers STOP, START and HELP itself and refuses
//! every later send to a number that opted out (error 21610); ringback never replies to those
//! keywords and never skips a send because of what it recorded here: Twilio is authoritative.
//! What is kept (per sender, or Messaging Service, and number) tells a person why a callback
//! went to the fallback, and shows in the console; START or a successful send clears it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use ringback_shared::clock::now_ms;
use ringback_shared::error::Error;
use ringback_shared::redact::mask;
use ringback_store::connection::Conn;
use ringback_store::keys;

/// Twilio's error for a send to a number that opted out of the sender's texts.
pub const OPTED_OUT: u32 = 21610;

/// The `OptOutType` Twilio's default opt-out handling gives a message that is one of its
/// keywords alone (any case, surrounding spaces ignored): it acts on such a message without
/// Advanced Opt-Out and without posting `OptOutType`. "YES", also an opt-in keyword of
/// Twilio's, is left out: to a question it is almost always the answer.
pub fn default_keyword(text: &str) -> Option<&'static str> {
    match text.trim().to_ascii_uppercase().as_str() {
        "STOP" | "STOPALL" | "UNSUBSCRIBE" | "CANCEL" | "END" | "QUIT" | "REVOKE" | "OPTOUT" => {
            Some("STOP")
        }
        "START" | "UNSTOP" => Some("START"),
        "HELP" | "INFO" => Some("HELP"),
        _ => None,
    }
}

/// How often a worker re-reads which opt-outs exist (to clear one a send disproves).
const REFRESH_EVERY_MS: i64 = 30_000;

/// One recorded opt-out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OptOut {
    /// The sender (number, sender ID or Messaging Service SID).
    pub sender: String,
    /// The number, masked.
    pub number: String,
    /// What Twilio said: `"21610"` (a refused send) or an `OptOutType` (`"STOP"`).
    pub how: String,
    /// When it was recorded (ms).
    pub at: i64,
}

/// The opt-outs Twilio reported, per sender and number: a hash in Redis, for people to read.
#[derive(Clone, Debug)]
pub struct OptOuts {
    conn: Conn,
    key: String,
    /// The fields known to exist, and when they were read (ms): a send clears a recorded
    /// opt-out without a Redis call per send.
    known: Arc<Mutex<(i64, HashSet<String>)>>,
}

fn field(sender: &str, number: &str) -> String {
    format!("{sender}\n{number}")
}

impl OptOuts {
    /// The opt-outs of the deployment `claim_prefix` names (`ringback:opt-outs:<prefix>`).
    pub fn new(conn: Conn, claim_prefix: &str) -> Self {
        Self {
            conn,
            key: keys::opt_outs(claim_prefix),
            known: Default::default(),
        }
    }

    /// Record that `number` opted out of `sender`'s texts (`how`: 21610 or the OptOutType).
    pub async fn record(&self, sender: &str, number: &str, how: &str) -> Result<(), Error> {
        let entry = OptOut {
            sender: sender.into(),
            number: mask(number),
            how: how.into(),
            at: now_ms(),
        };
        let f = field(sender, number);
        let _: () = redis::cmd("HSET")
            .arg(&self.key)
            .arg(&f)
            .arg(serde_json::to_string(&entry).unwrap_or_default())
            .query_async(&mut self.conn.clone())
            .await?;
        if let Ok(mut k) = self.known.lock() {
            k.1.insert(f);
        }
        Ok(())
    }

    /// Forget `number`'s opt-out of `sender` (START, or a send Twilio accepted).
    pub async fn clear(&self, sender: &str, number: &str) -> Result<(), Error> {
        let f = field(sender, number);
        let _: () = redis::cmd("HDEL")
            .arg(&self.key)
            .arg(&f)
            .query_async(&mut self.conn.clone())
            .await?;
        if let Ok(mut k) = self.known.lock() {
            k.1.remove(&f);
        }
        Ok(())
    }

    /// Twilio accepted a send from `sender` to `number`: an opt-out recorded for the pair is
    /// cleared. The recorded pairs are read at most every 30 s, so a send costs no Redis call
    /// unless one is recorded.
    pub async fn sent(&self, sender: &str, number: &str) {
        let due = self
            .known
            .lock()
            .map(|k| now_ms() - k.0 >= REFRESH_EVERY_MS)
            .unwrap_or(false);
        if due {
            let fields: Result<Vec<String>, _> = redis::cmd("HKEYS")
                .arg(&self.key)
                .query_async(&mut self.conn.clone())
                .await;
            if let (Ok(fields), Ok(mut k)) = (fields, self.known.lock()) {
                *k = (now_ms(), fields.into_iter().collect());
            }
        }
        let f = field(sender, number);
        let recorded = self.known.lock().is_ok_and(|k| k.1.contains(&f));
        if recorded && let Err(e) = self.clear(sender, number).await {
            tracing::warn!(error = %e, "could not clear an opt-out a send disproved");
        }
    }

    /// Every recorded opt-out, newest first (numbers masked).
    pub async fn list(&self) -> Result<Vec<OptOut>, Error> {
        let values: Vec<String> = redis::cmd("HVALS")
            .arg(&self.key)
            .query_async(&mut self.conn.clone())
            .await?;
        let mut all: Vec<OptOut> = values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect();
        all.sort_by_key(|o| std::cmp::Reverse(o.at));
        Ok(all)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_keyword_alone_is_what_twilio_makes_of_it() {
        assert_eq!(default_keyword(" stop "), Some("STOP"));
        assert_eq!(default_keyword("Unsubscribe"), Some("STOP"));
        assert_eq!(default_keyword("unstop"), Some("START"));
        assert_eq!(default_keyword("INFO"), Some("HELP"));
        assert_eq!(default_keyword("yes"), None);
        assert_eq!(default_keyword("stop the deploy"), None);
        assert_eq!(default_keyword("K7 stop"), None);
        assert_eq!(default_keyword(""), None);
    }
}
