//! The console's pages, rendered on the server with `maud` (every value escaped by the
//! template; nothing inline that the Content-Security-Policy forbids: no scripts, no `style`
//! attributes; the chart is SVG drawn here, coloured by the stylesheet).

use maud::{DOCTYPE, Markup, html};

use super::data::{FILTERS, JobView, RunDetail, RunRow};
use super::drills::ReportFile;
use crate::twilio::message::status_rank as rank;

/// A time (ms since the epoch) for people, in UTC.
pub fn at(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S%.3f").to_string())
        .unwrap_or_else(|| ms.to_string())
}

/// A duration (ms) for people.
pub fn age(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// A path segment, percent-encoded (run ids may hold anything).
pub fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b':') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub fn run_href(run_id: &str) -> String {
    format!("/console/runs/{}", segment(run_id))
}

fn filter_label(f: &str) -> &str {
    match f {
        "open" => "open attempt",
        other => other,
    }
}

/// The frame of every page: the stylesheet, the navigation, the sign-out button.
pub fn layout(title: &str, active: &str, signed_in: bool, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · ringback" }
                link rel="stylesheet" href="/console/static/console.css";
            }
            body {
                header.top {
                    span.brand { "ringback" }
                    @if signed_in {
                        nav {
                            @for (href, name) in [("/console/callbacks", "Callbacks"), ("/console/now", "Now"), ("/console/drills", "Drills")] {
                                a href=(href) class=@if name == active { "active" } @else { "" } { (name) }
                            }
                        }
                        form.logout method="post" action="/console/logout" {
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main { (body) }
            }
        }
    }
}

/// The sign-in form, with a message when one is due.
pub fn login(message: Option<&str>) -> Markup {
    layout(
        "Sign in",
        "",
        false,
        html! {
            h1 { "Sign in" }
            @if let Some(m) = message { p.error role="alert" { (m) } }
            form.login method="post" action="/console/login" {
                label for="token" { "Read token (RINGBACK_READ_TOKEN or RINGBACK_API_TOKEN)" }
                input #token type="password" name="token" autocomplete="current-password" required;
                button type="submit" { "Sign in" }
            }
            p.hint { "The token is sent once; the console keeps a signed session cookie, never the token." }
        },
    )
}

/// A page that only says something went wrong (unknown run, bad input, Redis away).
pub fn message(title: &str, text: &str, signed_in: bool) -> Markup {
    layout(
        title,
        "",
        signed_in,
        html! {
            h1 { (title) }
            p.error role="alert" { (text) }
            p { a href="/console/callbacks" { "Back to the callbacks" } }
        },
    )
}

fn state_badge(state: &str) -> Markup {
    html! { span class={ "badge state-" (state) } { (state) } }
}

fn flags(r: &RunRow) -> Markup {
    html! {
        @if r.open { span.badge.flag-open { "open attempt" } " " }
        @if r.escalated.is_some() { span.badge.flag-escalated { "escalated" } }
    }
}

/// The Callbacks page's query.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub q: String,
    pub state: String,
    pub page: usize,
}

impl ListQuery {
    pub fn href(&self, page: usize) -> String {
        let pairs = [
            ("q", self.q.clone()),
            ("state", self.state.clone()),
            ("page", page.to_string()),
        ];
        format!(
            "/console/callbacks?{}",
            serde_urlencoded::to_string(pairs).unwrap_or_default()
        )
    }
}

/// The Callbacks page: newest first, a search by runId, a state filter, paging.
pub fn callbacks(
    query: &ListQuery,
    rows: &[RunRow],
    total: usize,
    pages: usize,
    indexed: u64,
) -> Markup {
    let body = html! {
        h1 { "Callbacks" }
        form.search method="get" action="/console/callbacks" {
            label for="q" { "runId" }
            input #q type="search" name="q" value=(query.q) maxlength=(super::MAX_RUN_ID) placeholder="run id, or part of it";
            label for="state" { "state" }
            select #state name="state" {
                option value="" selected[query.state.is_empty()] { "any" }
                @for f in FILTERS {
                    option value=(f) selected[query.state == f] { (filter_label(f)) }
                }
            }
            button type="submit" { "Search" }
        }
        p.summary { (total) " run(s) match, of the " (indexed) " most recent · page " (query.page) " of " (pages.max(1)) }
        @if rows.is_empty() {
            p.empty { "No runs match." }
        } @else {
            table.runs {
                thead { tr { th { "run" } th { "state" } th { "Twilio status" } th { "to" } th { "claimed" } th { "sent" } th { "worker" } th { "" } } }
                tbody {
                    @for r in rows {
                        tr data-run=(r.run_id) {
                            td { a href=(run_href(&r.run_id)) { (r.run_id) } }
                            td { (state_badge(&r.state)) }
                            td { (r.status.as_deref().unwrap_or("—")) }
                            td.mono.nowrap { (r.to) }
                            td { (r.claimed_at.map(at).unwrap_or_default()) }
                            td { (r.sent_at.map(at).unwrap_or_default()) }
                            td.small.mono title=(r.worker.as_deref().unwrap_or("")) { (r.worker.as_deref().map(short).unwrap_or("")) }
                            td { (flags(r)) }
                        }
                    }
                }
            }
        }
        nav.pager {
            @if query.page > 1 { a rel="prev" href=(query.href(query.page - 1)) { "← newer" } }
            @if query.page < pages { a rel="next" href=(query.href(query.page + 1)) { "older →" } }
        }
    };
    layout("Callbacks", "Callbacks", true, body)
}

/// One receipt, judged against the ones before it.
#[derive(Debug, Clone)]
pub struct Receipt {
    pub n: usize,
    pub at: Option<i64>,
    pub source: String,
    pub status: String,
    pub sid: String,
    pub rank: Option<u8>,
    /// in order, out of order, repeat, conflict, another message, unknown status, answered
    /// after the callbacks.
    pub verdict: &'static str,
    pub error_code: Option<String>,
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

fn short(token: &str) -> &str {
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

/// What the Now page shows.
#[derive(Debug, Default)]
pub struct Now {
    pub now_ms: i64,
    pub open_total: u64,
    /// (run, attempt state, age ms)
    pub open: Vec<(String, String, Option<i64>)>,
    pub unknown: Vec<RunRow>,
    pub escalated: Vec<RunRow>,
    pub missing: Vec<RunRow>,
    pub deadline_ms: i64,
    /// Texts sent and delivered per minute, oldest minute first (60 entries).
    pub sent_per_minute: Vec<u32>,
    pub delivered_per_minute: Vec<u32>,
}

fn run_list(rows: &[RunRow], id: &str, empty: &str) -> Markup {
    html! {
        @if rows.is_empty() { p.empty { (empty) } } @else {
            ul.runs id=(id) {
                @for r in rows.iter().take(50) {
                    li { a href=(run_href(&r.run_id)) { (r.run_id) } " " (state_badge(&r.state)) " " span.small { (r.status.as_deref().unwrap_or("")) } }
                }
                @if rows.len() > 50 { li { "… and " (rows.len() - 50) " more" } }
            }
        }
    }
}

/// Bars of texts sent and delivered per minute over the last hour, drawn as SVG.
pub fn chart(sent: &[u32], delivered: &[u32]) -> Markup {
    let (w, h, bar) = (720u32, 140u32, 12u32);
    let max = sent
        .iter()
        .chain(delivered)
        .copied()
        .max()
        .unwrap_or(0)
        .max(1);
    let scale = |v: u32| (v * (h - 20)) / max;
    html! {
        svg.chart #chart xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (w) " " (h) } role="img" aria-label="texts sent and delivered per minute, last hour" {
            title { "Texts sent and delivered per minute, last hour" }
            line.axis x1="0" y1=(h - 10) x2=(w) y2=(h - 10) {}
            @for (i, (s, d)) in sent.iter().zip(delivered).enumerate() {
                @let x = i as u32 * bar;
                rect.sent x=(x) y=(h - 10 - scale(*s)) width="5" height=(scale(*s)) { title { (s) " sent, " (60 - i) " min ago" } }
                rect.delivered x=(x + 5) y=(h - 10 - scale(*d)) width="5" height=(scale(*d)) { title { (d) " delivered, " (60 - i) " min ago" } }
            }
            text x="2" y="12" { "max " (max) "/min" }
            text x="2" y=(h - 1) { "60 min ago" }
            text x=(w - 2) y=(h - 1) text-anchor="end" { "now" }
        }
        p.legend { span.key.sent-key { "■" } " sent (" (sent.iter().sum::<u32>()) ") " span.key.delivered-key { "■" } " delivered (" (delivered.iter().sum::<u32>()) ") in the last hour" }
    }
}

pub fn now(n: &Now) -> Markup {
    let body = html! {
        h1 { "Now" }
        p.summary { "At " (at(n.now_ms)) " UTC" }
        ul.cards {
            li { strong #open-count { (n.open_total) } " open attempt(s)" }
            li { strong #unknown-count { (n.unknown.len()) } " unknown send(s)" }
            li { strong #escalated-count { (n.escalated.len()) } " escalation(s) in the last day" }
            li { strong #missing-count { (n.missing.len()) } " receipt(s) missing past the " (age(n.deadline_ms)) " deadline" }
        }
        h2 { "Texts per minute, last hour" }
        (chart(&n.sent_per_minute, &n.delivered_per_minute))
        h2 { "Open attempts" }
        @if n.open.is_empty() { p.empty { "None open." } } @else {
            table #open-attempts {
                thead { tr { th { "run" } th { "attempt" } th { "age" } } }
                tbody { @for (run, state, age_ms) in &n.open { tr { td { a href=(run_href(run)) { (run) } } td { (state) } td { (age_ms.map(age).unwrap_or_else(|| "—".into())) } } } }
            }
        }
        h2 { "Unknown sends" }
        (run_list(&n.unknown, "unknown", "None: every send has an answer."))
        h2 { "Escalations in the last day" }
        (run_list(&n.escalated, "escalations", "None."))
        h2 { "Receipts missing past the deadline" }
        (run_list(&n.missing, "missing", "None."))
    };
    layout("Now", "Now", true, body)
}

fn num(v: &serde_json::Value, k: &str) -> String {
    match v.get(k) {
        Some(serde_json::Value::Number(n)) => n.to_string(),
        Some(serde_json::Value::Array(a)) => a.len().to_string(),
        Some(serde_json::Value::String(s)) => s.clone(),
        Some(serde_json::Value::Bool(b)) => b.to_string(),
        _ => "—".into(),
    }
}

fn passed(v: &serde_json::Value) -> Markup {
    match v.get("ok").and_then(|o| o.as_bool()) {
        Some(true) => html! { span.badge.state-delivered { "passed" } },
        Some(false) => html! { span.badge.state-failed { "FAILED" } },
        None => html! { span.badge { "?" } },
    }
}

pub fn drills(dir: Option<&str>, files: Result<Vec<ReportFile>, String>) -> Markup {
    let body = html! {
        h1 { "Drills" }
        @match (dir, &files) {
            (None, _) => p.empty { "RINGBACK_DRILL_REPORTS is not set. Save reports there and serve shows them: "
                code { "ringback drill all --json > \"$RINGBACK_DRILL_REPORTS/$(date -u +%Y%m%dT%H%M%SZ).json\"" } }
            (Some(_), Err(e)) => p.error { (e) }
            (Some(d), Ok(files)) if files.is_empty() => p.empty { "No reports in " code { (d) } " yet." }
            (Some(_), Ok(files)) => {
                @for f in files {
                    section.drill-file {
                        h2 { (f.name) @if let Some(m) = f.modified_ms { " " span.small { "saved " (at(m)) } } }
                        @match &f.reports {
                            Err(e) => p.error { "unreadable: " (e) }
                            Ok(reports) => {
                                @for r in reports {
                                    h3 { "drill " (num(r, "drill")) " · timings " (num(r, "timings")) " · " (passed(r)) " · " (num(r, "ms")) " ms" }
                                    @if let Some(cases) = r.get("cases").and_then(|c| c.as_array()) {
                                        table.cases {
                                            thead { tr { th { "case" } th { "result" } th { "died" } th { "recovered (ms)" } th { "settled (ms)" } th { "runs" } th { "texts" } th { "duplicates" } th { "lost" } } }
                                            tbody { @for c in cases { tr {
                                                td { (num(c, "case")) } td { (passed(c)) } td { (num(c, "died")) } td { (num(c, "recoveredMs")) }
                                                td { (num(c, "settleMs")) } td { (num(c, "runs")) } td { (num(c, "texts")) }
                                                td { (num(c, "duplicates")) } td { (num(c, "lost")) }
                                            } } }
                                        }
                                    }
                                    @if let Some(v) = r.get("verdict") {
                                        p { "runs " (num(v, "runs")) " · texts " (num(v, "texts")) " · duplicates " (num(v, "duplicates")) " · lost " (num(v, "lost")) " · settled in " (num(v, "settleMs")) " ms" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    layout("Drills", "Drills", true, body)
}

/// The stylesheet, served by ringback (`/console/static/console.css`).
pub const CSS: &str = include_str!("console.css");
