//! What the console reads of replies: a run's question and its replies, and the messages that
//! answered nothing.

use ringback_shared::error::Error;
use ringback_store::connection::Conn;
use ringback_store::keys;

use super::{Question, ReplyView};

/// The reads of replies, for the console, `status`, the API and the inbox's own look-ups.
#[derive(Clone, Debug)]
pub struct ReplyReads {
    conn: Conn,
    claim_prefix: String,
}

impl ReplyReads {
    /// The replies of the deployment `claim_prefix` names.
    pub fn new(conn: Conn, claim_prefix: &str) -> Self {
        Self {
            conn,
            claim_prefix: claim_prefix.to_string(),
        }
    }

    fn conn(&self) -> Conn {
        self.conn.clone()
    }

    /// The run's question, if it asked one.
    pub async fn question_of(&self, run_id: &str) -> Result<Option<Question>, Error> {
        let v: Option<String> = redis::cmd("GET")
            .arg(keys::question(&self.claim_prefix, run_id))
            .query_async(&mut self.conn())
            .await?;
        Ok(v.and_then(|v| serde_json::from_str(&v).ok()))
    }

    /// The replies the run received, oldest first.
    pub async fn replies_of(&self, run_id: &str) -> Result<Vec<ReplyView>, Error> {
        let values: Vec<String> = redis::cmd("HVALS")
            .arg(keys::run_replies(&self.claim_prefix, run_id))
            .query_async(&mut self.conn())
            .await?;
        let mut all: Vec<ReplyView> = values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect();
        all.sort_by_key(|r| r.received_at);
        Ok(all)
    }

    /// The newest messages that answered no question (masked), at most `limit`.
    pub async fn unmatched(&self, limit: usize) -> Result<Vec<ReplyView>, Error> {
        let values: Vec<String> = redis::cmd("ZREVRANGE")
            .arg(keys::inbound_unmatched(&self.claim_prefix))
            .arg(0)
            .arg(limit.saturating_sub(1))
            .query_async(&mut self.conn())
            .await?;
        Ok(values
            .iter()
            .filter_map(|v| serde_json::from_str(v).ok())
            .collect())
    }
}
