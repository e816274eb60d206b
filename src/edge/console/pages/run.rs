//! One run's page: its receipts judged against the ones before them, and its events in order
//! (claims, sends, receipts, escalations), beside the job.

use super::{age, at, layout, run_href, state_badge};
use maud::{Markup, html};

use crate::callbacks::runs::{JobView, RunDetail};
use crate::twilio::message::status_rank as rank;

/// One receipt, judged against the ones before it.
#[derive(Debug, Clone)]
pub struct Receipt {
    /// Its place in arrival order, from 1.
    pub n: usize,
    /// When it was recorded (ms); `None` when the entry has no time.
    pub at: Option<i64>,
    /// Where it came from: `callback` (a status callback), `send` (Twilio's answer), `poll`.
    pub source: String,
    /// The message status it reported.
    pub status: String,
    /// The MessageSid it is about.
    pub sid: String,
    /// The status's rank (a record never moves to a lower one); `None` for an unknown status.
    pub rank: Option<u8>,
    /// in order, out of order, repeat, conflict, another message, unknown status, answered
    /// after the callbacks.
    pub verdict: &'static str,
    /// Twilio's error code, when it gave one.
    pub error_code: Option<String>,
    /// The token of the attempt that sent the message, when known.
    pub attempt: Option<String>,
}

/// The receipts in arrival order, each judged: out of order means against the ranking (a lower
/// rank after a higher one of the same message), a repeat is a status seen before.
pub fn judge(history: &[serde_json::Value]) -> Vec<Receipt> {
    let mut best: std::collections::HashMap<String, u8> = Default::default();
    let mut seen: std::collections::HashSet<(String, String)> = Default::default();
    history
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let s = |k: &str| h.get(k).and_then(|v| v.as_str()).unwrap_or("").to_string();
            let (status, sid) = (s("status"), s("sid"));
            let r = rank(&status);
            let outcome = s("outcome");
            let verdict = match r {
                None => "unknown status",
                _ if outcome == "other" => "another message",
                _ if seen.contains(&(sid.clone(), status.clone())) => "repeat",
                // Twilio's own answer to the send is recorded when the worker gets it, which
                // may be after the first callbacks: late, but not a callback out of order
                Some(r) if best.get(&sid).is_some_and(|b| r < *b) && s("source") == "send" => {
                    "answered after the callbacks"
                }
                Some(r) if best.get(&sid).is_some_and(|b| r < *b) => "out of order",
                _ if outcome == "conflict" => "conflict",
                _ => "in order",
            };
            if let Some(r) = r {
                let b = best.entry(sid.clone()).or_insert(r);
                *b = (*b).max(r);
            }
            seen.insert((sid.clone(), status.clone()));
            Receipt {
                n: i + 1,
                at: h.get("at").and_then(|v| v.as_i64()),
                source: s("source"),
                status,
                sid,
                rank: r,
                verdict,
                error_code: h
                    .get("error_code")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
                attempt: h
                    .get("attempt")
                    .and_then(|v| v.as_str())
                    .map(str::to_string),
            }
        })
        .collect()
}

struct Event {
    at: i64,
    kind: &'static str,
    title: String,
    detail: String,
}

pub(super) fn short(token: &str) -> &str {
    token.get(..8).unwrap_or(token)
}

fn events(d: &RunDetail, receipts: &[Receipt]) -> Vec<Event> {
    let a = |k: &str| d.attempt.get(k).cloned();
    let ai = |k: &str| a(k).and_then(|v| v.parse::<i64>().ok());
    let worker = d
        .worker_name
        .clone()
        .or_else(|| a("worker"))
        .unwrap_or_else(|| "?".into());
    let mut ev = vec![];
    if let Some(j) = &d.job {
        if let Some(t) = j.timestamp {
            ev.push(Event {
                at: t,
                kind: "enqueued",
                title: "Enqueued".into(),
                detail: format!("BullMQ job {} ({})", j.id, j.name),
            });
        }
        if let Some(t) = j.processed_on {
            ev.push(Event {
                at: t,
                kind: "taken",
                title: "Taken by a worker".into(),
                detail: format!("{} attempt(s) made so far", j.attempts_made),
            });
        }
    }
    if let Some(t) = ai("claimed_at") {
        ev.push(Event {
            at: t,
            kind: "claimed",
            title: "Claimed".into(),
            detail: format!(
                "by {worker}, attempt {}",
                short(&a("token").unwrap_or_default())
            ),
        });
    }
    if let Some(t) = ai("sent_at") {
        ev.push(Event {
            at: t,
            kind: "sent",
            title: "Sent".into(),
            detail: format!(
                "Twilio took it as {} (recorded by {worker})",
                a("sid").unwrap_or_default()
            ),
        });
    }
    for r in receipts {
        let Some(t) = r.at else { continue };
        let (kind, what) = match r.source.as_str() {
            "send" => ("answer", "Twilio answered"),
            "poll" => ("poll", "Poll"),
            _ => ("callback", "Status callback"),
        };
        ev.push(Event {
            at: t,
            kind,
            title: format!("{what}: {}", r.status),
            detail: format!(
                "#{} · rank {} · {}{}",
                r.n,
                r.rank.map_or("—".into(), |r| r.to_string()),
                r.verdict,
                r.error_code
                    .as_deref()
                    .map(|c| format!(" · error {c}"))
                    .unwrap_or_default()
            ),
        });
    }
    for (field, kind, title) in [
        ("released_at", "released", "Released"),
        ("settled_at", "settled", "Settled as unknown"),
    ] {
        if let Some(t) = ai(field) {
            ev.push(Event {
                at: t,
                kind,
                title: title.into(),
                detail: crate::redact::redact(&a("error").unwrap_or_default()),
            });
        }
    }
    if let Some((t, reason)) = d.record.get("escalated").and_then(|e| e.split_once(':'))
        && let Ok(t) = t.parse()
    {
        ev.push(Event {
            at: t,
            kind: "escalated",
            title: "Escalated".into(),
            detail: crate::redact::redact(reason),
        });
    }
    if let Some(j) = &d.job
        && let Some(t) = j.finished_on
    {
        ev.push(Event {
            at: t,
            kind: "finished",
            title: format!("Job {}", j.state),
            detail: j.failed_reason.clone().unwrap_or_default(),
        });
    }
    for (at, kind, title, detail) in super::replies::events(&d.replies) {
        ev.push(Event {
            at,
            kind,
            title,
            detail,
        });
    }
    // Times come from two clocks: the job's from the worker (BullMQ's `finishedOn` is taken before
    // the finishing call), the window's from Redis. On one Redis the call that writes the sent
    // marker also completes the job, so a completion stamped a few ms before its own marker is
    // shown after it: it cannot have happened first. (Ties keep the order above: stable sort.)
    let sent_at = ai("sent_at");
    ev.sort_by_key(|e| match (e.kind, sent_at) {
        ("finished", Some(sent)) => e.at.max(sent),
        _ => e.at,
    });
    ev
}

fn job_view(j: Option<&JobView>, id: &str) -> Markup {
    html! {
        @match j {
            Some(j) => {
                dt { "BullMQ job" } dd { span.mono { (j.id) } " · " span #job-state { (j.state) } }
                dt { "attempts" } dd { (j.attempts_made) " made" @if let Some(n) = j.attempts_allowed { " of " (n) " allowed" } @if let Some(s) = j.stalled { " · stalled " (s) " time(s)" } }
                @if let Some(r) = &j.failed_reason { dt { "failed reason" } dd { (r) } }
            }
            None => { dt { "BullMQ job" } dd { "job " span.mono { (id) } " is not in the queue (removed, or never added)" } }
        }
    }
}

/// One run: its summary, its timeline drawn, and its receipts judged against the ranking.
pub fn run(d: &RunDetail, now_ms: i64) -> Markup {
    let receipts = judge(&d.history);
    let disorder = receipts.iter().any(|r| r.verdict == "out of order");
    let events = events(d, &receipts);
    let mut ranked: Vec<&Receipt> = receipts.iter().filter(|r| r.rank.is_some()).collect();
    ranked.sort_by_key(|r| r.rank);
    let to = d
        .attempt
        .get("to")
        .map(|t| crate::redact::mask(t))
        .unwrap_or_default();
    let body = html! {
        h1 { "Run " span #run-id.mono { (d.run_id) } }
        dl.summary {
            dt { "state" } dd #run-state { (state_badge(&d.state)) @if d.open { " " span.badge.flag-open { "open attempt" } } @if d.record.contains_key("escalated") { " " span.badge.flag-escalated { "escalated" } } }
            dt { "MessageSid" } dd.mono { (d.record.get("sid").or(d.attempt.get("sid")).map(String::as_str).unwrap_or("—")) }
            dt { "Twilio status" } dd { (d.record.get("status").map(String::as_str).unwrap_or("—")) @if let Some(c) = d.record.get("error_code") { " (error " (c) ")" } }
            dt { "to" } dd.mono { (to) }
            dt { "attempt" } dd { (d.attempt.get("state").map(String::as_str).unwrap_or("none")) @if let Some(w) = d.attempt.get("worker") { " · worker " span.mono #worker { (d.worker_name.as_deref().unwrap_or(w)) } @if d.worker_name.is_none() { " " span.small { "(no heartbeat now)" } } } @if d.open { @if let Some(s) = d.attempt.get("since").and_then(|s| s.parse::<i64>().ok()) { " · open for " (age(now_ms - s)) } } }
            dt { "claim key" } dd.mono { (d.claim.as_deref().map(|c| c.split(':').next().unwrap_or(c)).unwrap_or("none")) }
            @if let Some(f) = d.record.get("fallback") { dt { "fallback text" } dd { a #fallback.mono href=(run_href(f)) { (f) } " · the text to the fallback number when this run was escalated" } }
            @if let Some(p) = d.record.get("fallback_of") { dt { "fallback of" } dd { a #fallback-of.mono href=(run_href(p)) { (p) } " · this is the fallback text of that run, not a run of its own" } }
            (job_view(d.job.as_ref(), &d.job_id))
        }
        h2 { "Timeline" }
        @if events.is_empty() { p.empty { "Nothing recorded with a time yet." } }
        ol.timeline #timeline {
            @for e in &events {
                li class={ "event ev-" (e.kind) } {
                    time { (at(e.at)) }
                    strong.title { (e.title) }
                    span.detail { (e.detail) }
                }
            }
        }
        (super::replies::section(d.question.as_ref(), &d.replies))
        (super::replies::ladder(d.ladder.as_ref()))
        h2 { "Receipts, in the order they arrived" }
        @if receipts.is_empty() { p.empty { "No receipt yet." } } @else {
            table.receipts #receipts {
                thead { tr { th { "#" } th { "arrived" } th { "source" } th { "status" } th { "rank" } th { "verdict" } th { "attempt" } } }
                tbody {
                    @for r in &receipts {
                        tr class={ "verdict-" (r.verdict.replace(' ', "-")) } {
                            td { (r.n) } td { (r.at.map(at).unwrap_or_default()) } td { (r.source) }
                            td.status { (r.status) } td { (r.rank.map_or("—".to_string(), |r| r.to_string())) }
                            td.verdict { (r.verdict) } td.mono { (r.attempt.as_deref().map(short).unwrap_or("")) }
                        }
                    }
                }
            }
            p.hint { "Ranking: accepted/queued 0 < sending 1 < sent 2 < delivered/undelivered/failed 3 < read 4. Twilio's callbacks carry no send time: out of order means a lower rank arriving after a higher one; the record never moves down." }
        }
        @if disorder {
            section.disorder #disorder {
                h2 { "Out of order" }
                div.orders {
                    div { h3 { "As they arrived" } ol #arrival-order { @for r in &receipts { li { (r.status) } } } }
                    div { h3 { "By the status ranking" } ol #ranking-order { @for r in &ranked { li { (r.status) } } } }
                }
            }
        }
    };
    layout(&format!("Run {}", d.run_id), "Callbacks", true, body)
}
