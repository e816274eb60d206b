//! The list call (`GET …/Messages.json`) as Twilio answers it: filters by `To`, `From` and the
//! `DateSent` family, newest first by creation, and cursor paging.
//!
//! Twilio's behaviour kept here on purpose, so ringback's lookups are tested against it:
//! - `date_sent` stays null until a message has left Twilio, and every `DateSent` filter drops
//!   messages whose `date_sent` is null: a `DateSent>` lookup misses a message still queued.
//! - Pages are cut by a cursor, `PageToken=PA<sid of the last message on this page>` (the shape
//!   of the spec's own examples): the next page starts right after that message, so messages
//!   created while a client pages (they are newer, so they sort first) never shift the pages it
//!   has not read yet. `PB<sid>` goes back. `Page` is only echoed ("simply for client state").
//! - The envelope: `messages`, `page`, `page_size`, `start`, `end`, `uri`, `first_page_uri`,
//!   `next_page_uri` (null on the last page), `previous_page_uri`; URIs are relative to the API
//!   base and carry the filters, percent-encoded (`DateSent%3E=…`).

use chrono::{DateTime, NaiveDate, Utc};

use crate::faults::ListOrder;
use ringback_twilio::{ApiError, Message, MessagePage};

/// A `DateSent` value: a GMT day (`YYYY-MM-DD`) or an instant (RFC 3339).
#[derive(Debug, Clone, Copy, PartialEq)]
enum When {
    Day(NaiveDate),
    At(DateTime<Utc>),
}

impl When {
    fn parse(name: &str, v: &str) -> Result<Self, ApiError> {
        if let Ok(day) = NaiveDate::parse_from_str(v, "%Y-%m-%d") {
            return Ok(Self::Day(day));
        }
        DateTime::parse_from_rfc3339(v)
            .map(|t| Self::At(t.with_timezone(&Utc)))
            // Our reference has no code for a bad filter value; 20001 is the simulator's choice.
            .map_err(|_| ApiError::new(400, 20001, format!("Invalid {name}: {v}")))
    }

    /// Compare a send time with this bound at the bound's own precision.
    fn cmp(&self, sent: DateTime<Utc>) -> std::cmp::Ordering {
        match self {
            Self::Day(day) => sent.date_naive().cmp(day),
            Self::At(t) => sent.cmp(t),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Cursor {
    /// The page after this message (`PA<sid>`).
    After(String),
    /// The page before this message (`PB<sid>`).
    Before(String),
}

/// A parsed list request.
#[derive(Debug, Clone)]
pub struct ListQuery {
    to: Option<String>,
    from: Option<String>,
    /// The date filters as given, in Twilio's order, for the page URIs.
    dates: Vec<(&'static str, String)>,
    sent_on: Option<When>,
    sent_before: Option<When>,
    sent_after: Option<When>,
    page_size: usize,
    page: u64,
    cursor: Option<Cursor>,
}

const DEFAULT_PAGE_SIZE: usize = 50;
const MAX_PAGE_SIZE: usize = 1000;

impl ListQuery {
    /// Read the query string's pairs (`DateSent>=2026-01-02` arrives as `DateSent>` = the day).
    pub fn parse(query: &[(String, String)]) -> Result<Self, ApiError> {
        let get = |k: &str| query.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        let mut dates = vec![];
        let mut date = |name: &'static str| -> Result<Option<When>, ApiError> {
            match get(name) {
                None => Ok(None),
                Some(v) => {
                    let w = When::parse(name, &v)?;
                    dates.push((name, v));
                    Ok(Some(w))
                }
            }
        };
        let (sent_on, sent_before, sent_after) =
            (date("DateSent")?, date("DateSent<")?, date("DateSent>")?);
        let cursor = match get("PageToken") {
            None => None,
            Some(t) => Some(match (t.strip_prefix("PA"), t.strip_prefix("PB")) {
                (Some(sid), _) => Cursor::After(sid.to_string()),
                (_, Some(sid)) => Cursor::Before(sid.to_string()),
                _ => return Err(ApiError::new(400, 20001, format!("Invalid PageToken: {t}"))),
            }),
        };
        Ok(Self {
            to: get("To"),
            from: get("From"),
            dates,
            sent_on,
            sent_before,
            sent_after,
            page_size: get("PageSize")
                .and_then(|p| p.parse().ok())
                .unwrap_or(DEFAULT_PAGE_SIZE)
                .clamp(1, MAX_PAGE_SIZE),
            page: get("Page").and_then(|p| p.parse().ok()).unwrap_or(0),
            cursor,
        })
    }

    /// Whether a message passes the filters. A message not yet sent (`date_sent` null) fails
    /// every `DateSent` filter, as on Twilio.
    pub fn matches(&self, m: &Message) -> bool {
        use std::cmp::Ordering::{Equal, Greater, Less};
        if self.to.as_ref().is_some_and(|t| m.to.as_ref() != Some(t))
            || self
                .from
                .as_ref()
                .is_some_and(|f| m.from.as_ref() != Some(f))
        {
            return false;
        }
        let dated =
            self.sent_on.is_some() || self.sent_before.is_some() || self.sent_after.is_some();
        if !dated {
            return true;
        }
        let Some(sent) = m.sent_at() else {
            return false;
        };
        self.sent_on.is_none_or(|w| w.cmp(sent) == Equal)
            && self.sent_before.is_none_or(|w| w.cmp(sent) != Greater)
            && self.sent_after.is_none_or(|w| w.cmp(sent) != Less)
    }

    /// The URI of a page of this list, relative to the API base.
    fn uri(&self, account: &str, page: u64, token: Option<String>) -> String {
        let mut q: Vec<(&str, String)> = vec![];
        if let Some(to) = &self.to {
            q.push(("To", to.clone()));
        }
        if let Some(from) = &self.from {
            q.push(("From", from.clone()));
        }
        q.extend(self.dates.iter().cloned());
        q.push(("PageSize", self.page_size.to_string()));
        q.push(("Page", page.to_string()));
        if let Some(t) = token {
            q.push(("PageToken", t));
        }
        format!(
            "/2010-04-01/Accounts/{account}/Messages.json?{}",
            serde_urlencoded::to_string(&q).unwrap_or_default()
        )
    }

    /// Cut the page this request asks for out of the matching messages (any order: they are
    /// sorted here, newest first by `date_created`, ties newest stored first).
    pub fn page(&self, account: &str, matching: Vec<Message>) -> MessagePage {
        self.page_in(account, matching, ListOrder::DateCreated)
    }

    /// [`ListQuery::page`] in `order`.
    pub fn page_in(
        &self,
        account: &str,
        mut matching: Vec<Message>,
        order: ListOrder,
    ) -> MessagePage {
        // Stable: `matching` comes newest stored first, which orders equal creation seconds.
        matching.sort_by_key(|m| std::cmp::Reverse(m.created_at()));
        if order == ListOrder::DateSent {
            // newest sent first, the unsent (no date_sent) last
            let sent_at = |m: &Message| {
                m.date_sent
                    .as_deref()
                    .and_then(|d| chrono::DateTime::parse_from_rfc2822(d).ok())
            };
            matching.sort_by_key(|m| (sent_at(m).is_none(), std::cmp::Reverse(sent_at(m))));
        }
        let position = |sid: &str| matching.iter().position(|m| m.sid == sid);
        let (start, end) = match &self.cursor {
            None => {
                let start = (self.page as usize).saturating_mul(self.page_size);
                (start, start.saturating_add(self.page_size))
            }
            // A cursor whose message is gone (after a reset) reads as past the end.
            Some(Cursor::After(sid)) => {
                let start = position(sid).map_or(matching.len(), |i| i + 1);
                (start, start.saturating_add(self.page_size))
            }
            Some(Cursor::Before(sid)) => {
                let end = position(sid).unwrap_or(0);
                (end.saturating_sub(self.page_size), end)
            }
        };
        let (start, end) = (start.min(matching.len()), end.min(matching.len()));
        let more = end < matching.len();
        let messages: Vec<Message> = matching.drain(start..end).collect();
        let next_page_uri = more
            .then(|| messages.last())
            .flatten()
            .map(|m| self.uri(account, self.page + 1, Some(format!("PA{}", m.sid))));
        let previous_page_uri = (start > 0).then(|| messages.first()).flatten().map(|m| {
            self.uri(
                account,
                self.page.saturating_sub(1),
                Some(format!("PB{}", m.sid)),
            )
        });
        let token = self.cursor.as_ref().map(|c| match c {
            Cursor::After(sid) => format!("PA{sid}"),
            Cursor::Before(sid) => format!("PB{sid}"),
        });
        let first = self.page.saturating_mul(self.page_size as u64) as i64;
        MessagePage {
            page: self.page as i64,
            page_size: self.page_size as i64,
            start: first,
            // as Twilio writes it: the last index on the page, so -1 on an empty first page
            end: first + messages.len() as i64 - 1,
            uri: Some(self.uri(account, self.page, token)),
            first_page_uri: Some(self.uri(account, 0, None)),
            next_page_uri,
            previous_page_uri,
            messages,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT: &str = "AC0123456789abcdef0123456789abcdef";

    fn q(pairs: &[(&str, &str)]) -> ListQuery {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        ListQuery::parse(&pairs).unwrap()
    }

    /// Message `i`, created `i` seconds after a fixed instant; sent unless `queued`.
    fn m(i: i64, queued: bool) -> Message {
        let created = DateTime::from_timestamp(1_790_000_000 + i, 0).unwrap();
        Message {
            sid: format!("SM{i:032x}"),
            to: Some("+15558675310".into()),
            from: Some("+15005550006".into()),
            date_created: Some(crate::twilio_date(created)),
            date_sent: (!queued).then(|| crate::twilio_date(created)),
            ..Default::default()
        }
    }

    #[test]
    fn date_filters_drop_messages_not_yet_sent() {
        let day = DateTime::from_timestamp(1_790_000_000, 0)
            .unwrap()
            .format("%Y-%m-%d")
            .to_string();
        let (sent, queued) = (m(1, false), m(2, true));
        for filter in ["DateSent>", "DateSent<", "DateSent"] {
            let query = q(&[(filter, &day)]);
            assert!(query.matches(&sent), "{filter}");
            assert!(!query.matches(&queued), "{filter}: date_sent is null");
        }
        assert!(q(&[("To", "+15558675310")]).matches(&queued));
        assert!(!q(&[("To", "+15550000000")]).matches(&sent));
        let later = DateTime::from_timestamp(1_790_000_000 + 2, 0)
            .unwrap()
            .to_rfc3339();
        assert!(
            !q(&[("DateSent>", &later)]).matches(&sent),
            "instant precision"
        );
        assert!(q(&[("DateSent<", &later)]).matches(&sent));
        let bad = vec![("DateSent>".to_string(), "yesterday".to_string())];
        assert_eq!(ListQuery::parse(&bad).unwrap_err().status, 400);
    }

    #[test]
    fn an_empty_page_ends_at_minus_one_as_twilios_do() {
        let page = q(&[("To", "+15558675310")]).page(ACCOUNT, vec![]);
        assert_eq!((page.start, page.end), (0, -1));
        let wire = serde_json::to_string(&page).unwrap();
        let back: MessagePage = serde_json::from_str(&wire).unwrap();
        assert_eq!(
            back.end, -1,
            "the client decodes what the simulator writes: {wire}"
        );
    }

    #[test]
    fn pages_follow_the_cursor_newest_first() {
        // Stored out of creation order: the list still comes newest created first.
        let all: Vec<Message> = [3, 0, 4, 1, 2, 6, 5].iter().map(|&i| m(i, false)).collect();
        let query = q(&[("To", "+15558675310"), ("PageSize", "3")]);
        let first = query.page(ACCOUNT, all.clone());
        let sids = |p: &MessagePage| p.messages.iter().map(|x| x.sid.clone()).collect::<Vec<_>>();
        assert_eq!(
            sids(&first),
            [m(6, false).sid, m(5, false).sid, m(4, false).sid]
        );
        assert_eq!((first.page, first.start, first.end), (0, 0, 2));
        assert_eq!(first.previous_page_uri, None);
        assert_eq!(first.uri, first.first_page_uri);
        let next = first.next_page_uri.clone().unwrap();
        assert!(
            next.starts_with(&format!(
                "/2010-04-01/Accounts/{ACCOUNT}/Messages.json?To=%2B15558675310&PageSize=3&Page=1&PageToken=PA"
            )),
            "{next}"
        );
        // A message created meanwhile does not shift the next page.
        let mut grown = all.clone();
        grown.push(m(7, false));
        let query_of = |uri: &str| {
            let pairs: Vec<(String, String)> =
                serde_urlencoded::from_str(uri.split_once('?').unwrap().1).unwrap();
            ListQuery::parse(&pairs).unwrap()
        };
        let second = query_of(&next).page(ACCOUNT, grown.clone());
        assert_eq!(
            sids(&second),
            [m(3, false).sid, m(2, false).sid, m(1, false).sid]
        );
        assert_eq!((second.page, second.start, second.end), (1, 3, 5));
        let third = query_of(&second.next_page_uri.clone().unwrap()).page(ACCOUNT, grown.clone());
        assert_eq!(sids(&third), [m(0, false).sid]);
        assert_eq!(third.next_page_uri, None, "the last page");
        let back = query_of(&third.previous_page_uri.clone().unwrap()).page(ACCOUNT, grown);
        assert_eq!(sids(&back), sids(&second));
        let dated = q(&[("DateSent>", "2026-01-02"), ("PageSize", "1")]);
        assert!(
            dated
                .page(ACCOUNT, vec![])
                .first_page_uri
                .unwrap()
                .ends_with("?DateSent%3E=2026-01-02&PageSize=1&Page=0")
        );
    }
}
