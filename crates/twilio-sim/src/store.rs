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
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
    pub form: Vec<(String, String)>,
    pub content_type: Option<String>,
    pub basic_auth: bool,
}

#[derive(Default)]
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

#[derive(Default)]
pub struct Store {
    inner: Mutex<Inner>,
}

/// A message's body and when it arrived.
#[derive(Debug, Serialize)]
pub struct Arrival {
    pub body: String,
    #[serde(rename = "atMs")]
    pub at_ms: i64,
}

/// Counts per recipient and per (recipient, body).
#[derive(Debug, Serialize)]
pub struct Stats {
    pub total: usize,
    pub by_to: BTreeMap<String, usize>,
    pub by_to_body: Vec<BodyCount>,
    /// Per (recipient, body as created, before the account's rewrites).
    pub by_to_sent_body: Vec<BodyCount>,
}

#[derive(Debug, Serialize)]
pub struct BodyCount {
    pub to: String,
    pub body: String,
    pub count: usize,
}

impl Store {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // Plain pushes and field writes: a panic elsewhere cannot leave this inconsistent.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

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
    /// tests that must tell look-alike messages apart.
    pub fn status_callback_of(&self, sid: &str) -> Option<String> {
        self.lock().callbacks.get(sid).cloned()
    }

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

    pub fn all(&self) -> Vec<Message> {
        self.lock().messages.clone()
    }

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

    pub fn record(&self, r: RecordedRequest) {
        let mut g = self.lock();
        if g.requests.len() == KEPT_REQUESTS {
            g.requests.pop_front();
        }
        g.requests.push_back(r);
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.iter().cloned().collect()
    }

    pub fn reset(&self) {
        *self.lock() = Inner::default();
    }
}
