//! The simulator's memory: every accepted message, in order, so tests and drills can count
//! exactly how many texts each person got; and the last requests as received, so a test can
//! check what a client sent against Twilio's spec.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Mutex;

use serde::Serialize;

use ringback_twilio::Message;

const KEPT_REQUESTS: usize = 1000;

/// One request as received (method, path, query and form fields), for contract checks.
#[derive(Debug, Clone, Serialize)]
pub struct RecordedRequest {
    /// HTTP method: `POST` (create) or `GET` (fetch, list).
    pub method: String,
    /// Request path, from `/2010-04-01/Accounts/…` on, without the query string.
    pub path: String,
    /// Query string parameters in the order sent (list filters and paging); empty when none.
    pub query: Vec<(String, String)>,
    /// Form fields of the body in the order sent (`To`, `Body`…); empty for a `GET`.
    pub form: Vec<(String, String)>,
    /// The `Content-Type` header as sent; `None` when absent.
    pub content_type: Option<String>,
    /// The request carried an `Authorization: Basic …` header (right or wrong credentials).
    pub basic_auth: bool,
}

#[derive(Default, Debug)]
struct Inner {
    messages: Vec<Message>,
    /// When each message arrived (ms since the epoch), beside `messages`: the latency benchmark
    /// measures `Queue.add` to the text from it (Twilio's `date_created` has whole seconds).
    arrived_ms: Vec<i64>,
    /// The body each message was created with, before any rewrite the account applies (the
    /// drills count texts per run by it).
    sent_bodies: Vec<String>,
    by_sid: HashMap<String, usize>,
    /// Each message's `StatusCallback`, as Twilio keeps it (not part of the message resource).
    callbacks: HashMap<String, String>,
    requests: VecDeque<RecordedRequest>,
}

/// Every accepted message and the last requests, behind one lock; emptied by `POST /sim/reset`.
#[derive(Default, Debug)]
pub struct Store {
    inner: Mutex<Inner>,
}

/// A message's body and when it arrived.
#[derive(Debug, Serialize)]
pub struct Arrival {
    /// The body as stored (after any rewrite the account applies).
    pub body: String,
    /// When the create arrived, in ms since the epoch on the real clock (`atMs` in JSON).
    #[serde(rename = "atMs")]
    pub at_ms: i64,
}

/// Counts per recipient and per (recipient, body).
#[derive(Debug, Serialize)]
pub struct Stats {
    /// Messages accepted since start or the last reset.
    pub total: usize,
    /// Messages per recipient number (`To`).
    pub by_to: BTreeMap<String, usize>,
    /// Per (recipient, body as stored); a count above 1 is the same text sent twice.
    pub by_to_body: Vec<BodyCount>,
    /// Per (recipient, body as created, before the account's rewrites).
    pub by_to_sent_body: Vec<BodyCount>,
}

/// How many messages went to one recipient with one body.
#[derive(Debug, Serialize)]
pub struct BodyCount {
    /// The recipient number (`To`).
    pub to: String,
    /// The body, as stored or as created depending on the list it is in.
    pub body: String,
    /// Messages with this recipient and body.
    pub count: usize,
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Plain pushes and field writes: a panic elsewhere cannot leave this inconsistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Store `m` with its own body as the body it was created with.
    pub fn insert(&self, m: Message) {
        let sent = m.body.clone().unwrap_or_default();
        self.insert_sent(m, sent);
    }

    /// Store `m`, created with `sent` as its body (its stored body may be rewritten).
    pub fn insert_sent(&self, m: Message, sent: String) {
        let mut g = self.lock();
        g.sent_bodies.push(sent);
        let i = g.messages.len();
        g.by_sid.insert(m.sid.clone(), i);
        g.messages.push(m);
        // the real clock (not ringback's `now_ms`, which a drill may skew): the outside world's
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        g.arrived_ms.push(now);
    }

    /// Every message's body and arrival time (ms since the epoch), in arrival order.
    pub fn arrivals(&self) -> Vec<Arrival> {
        let g = self.lock();
        g.messages
            .iter()
            .zip(&g.arrived_ms)
            .map(|(m, &at_ms)| Arrival {
                body: m.body.clone().unwrap_or_default(),
                at_ms,
            })
            .collect()
    }

    /// Keep the `StatusCallback` a message was created with.
    pub fn set_status_callback(&self, sid: &str, url: &str) {
        self.lock()
            .callbacks
            .insert(sid.to_string(), url.to_string());
    }

    /// The `StatusCallback` a message was created with: which run and attempt sent it, for
    /// tests that must tell look-alike messages apart (`test-support`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn status_callback_of(&self, sid: &str) -> Option<String> {
        self.lock().callbacks.get(sid).cloned()
    }

    /// The message with this `SM…` sid, as stored now; `None` when there is none.
    pub fn get(&self, sid: &str) -> Option<Message> {
        let g = self.lock();
        g.by_sid.get(sid).map(|&i| g.messages[i].clone())
    }

    /// Apply `f` to a stored message.
    pub fn update(&self, sid: &str, f: impl FnOnce(&mut Message)) {
        let mut g = self.lock();
        if let Some(&i) = g.by_sid.get(sid) {
            f(&mut g.messages[i]);
        }
    }

    /// Messages matching `keep`, newest first (as Twilio lists them).
    pub fn list(&self, keep: impl Fn(&Message) -> bool) -> Vec<Message> {
        self.lock()
            .messages
            .iter()
            .rev()
            .filter(|m| keep(m))
            .cloned()
            .collect()
    }

    /// [`Store::list`] of the messages that arrived at or before `until_ms` (ms since the epoch):
    /// a list that lags shows a message only some time after its create.
    pub fn list_arrived_by(&self, until_ms: i64, keep: impl Fn(&Message) -> bool) -> Vec<Message> {
        let g = self.lock();
        g.messages
            .iter()
            .zip(&g.arrived_ms)
            .rev()
            .filter(|(m, at)| **at <= until_ms && keep(m))
            .map(|(m, _)| m.clone())
            .collect()
    }

    /// Every stored message, oldest first (`GET /sim/messages`).
    pub fn all(&self) -> Vec<Message> {
        self.lock().messages.clone()
    }

    /// Counts of the stored messages per recipient and per body (`GET /sim/stats`).
    pub fn stats(&self) -> Stats {
        let g = self.lock();
        let mut by_to = BTreeMap::new();
        let mut pairs: BTreeMap<(String, String), usize> = BTreeMap::new();
        let mut sent: BTreeMap<(String, String), usize> = BTreeMap::new();
        for (m, sent_body) in g.messages.iter().zip(&g.sent_bodies) {
            let to = m.to.clone().unwrap_or_default();
            *by_to.entry(to.clone()).or_insert(0) += 1;
            *pairs
                .entry((to.clone(), m.body.clone().unwrap_or_default()))
                .or_insert(0) += 1;
            *sent.entry((to, sent_body.clone())).or_insert(0) += 1;
        }
        let counts = |pairs: BTreeMap<(String, String), usize>| {
            pairs
                .into_iter()
                .map(|((to, body), count)| BodyCount { to, body, count })
                .collect()
        };
        Stats {
            total: g.messages.len(),
            by_to,
            by_to_body: counts(pairs),
            by_to_sent_body: counts(sent),
        }
    }

    /// Keep `r`, dropping the oldest once 1000 requests are kept.
    pub fn record(&self, r: RecordedRequest) {
        let mut g = self.lock();
        if g.requests.len() == KEPT_REQUESTS {
            g.requests.pop_front();
        }
        g.requests.push_back(r);
    }

    /// The kept requests, oldest first (`GET /sim/requests`).
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.iter().cloned().collect()
    }

    /// Forget every message, callback URL and request (`POST /sim/reset`).
    pub fn reset(&self) {
        *self.lock() = Inner::default();
    }
}
