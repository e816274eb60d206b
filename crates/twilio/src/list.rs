//! What a list call asks Twilio for and what a search over the list found.

use crate::message::Message;

/// Filters of the one-page list call ([`TwilioClient::list_messages`]).
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// `To`: only messages to this number (E.164).
    pub to: Option<String>,
    /// `From`: only messages from this sender (a number or an alphanumeric sender ID).
    pub from: Option<String>,
    /// `DateSent>` as `YYYY-MM-DD` (Twilio filters by day). Misses messages not yet sent.
    pub date_sent_after: Option<String>,
    /// `PageSize` (Twilio: 1–1000; its default, 50, when unset).
    pub page_size: Option<u32>,
}

/// How far [`TwilioClient::list_messages_since`] may read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageLimits {
    /// `PageSize` (Twilio: 1–1000, default 50).
    pub page_size: u32,
    /// Pages read at most; past it the search is incomplete.
    pub max_pages: u32,
}

impl Default for PageLimits {
    fn default() -> Self {
        Self {
            page_size: 1000,
            max_pages: 20,
        }
    }
}

/// What [`TwilioClient::list_messages_since`] found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageSearch {
    /// In the list's order: every message listed that was created at or after the bound (to
    /// the second), and any whose `date_created` is unreadable (a candidate is never dropped on
    /// a date it cannot read).
    pub messages: Vec<Message>,
    /// The whole list was read to its end. When false
    /// (`max_pages` ran out first) a message not found may still exist: treat it as unknown.
    pub complete: bool,
    /// Pages read.
    pub pages: u32,
}
