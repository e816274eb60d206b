//! The console's pages, rendered on the server with `maud` (every value escaped by the
//! template; nothing inline that the Content-Security-Policy forbids: no scripts, no `style`
//! attributes; the chart is SVG drawn here, coloured by the stylesheet).

use maud::{DOCTYPE, Markup, html};

use crate::callbacks::runs::{FILTERS, RunRow};
use crate::edge::console::drills::ReportFile;

mod replies;
mod run;

pub use replies::inbound;

use run::short;
pub use run::{Receipt, judge, run};

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

/// The console path of a run's page, the runId percent-encoded.
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
                            @for (href, name) in [("/console/callbacks", "Callbacks"), ("/console/now", "Now"), ("/console/inbound", "Inbound"), ("/console/drills", "Drills")] {
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
    /// Part of a runId to search for, trimmed; empty: every run.
    pub q: String,
    /// One of [`FILTERS`]; empty: any state.
    pub state: String,
    /// The page shown, from 1 (newest).
    pub page: usize,
}

impl ListQuery {
    /// The Callbacks page's address for this search and filter at `page`.
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

/// What the Now page shows.
#[derive(Debug, Default)]
pub struct Now {
    /// When the figures were read (ms since the epoch).
    pub now_ms: i64,
    /// Open attempts in all (the table lists the first 200).
    pub open_total: u64,
    /// (run, attempt state, age ms)
    pub open: Vec<(String, String, Option<i64>)>,
    /// Runs of the last day whose attempt is `unknown` or `ambiguous`.
    pub unknown: Vec<RunRow>,
    /// Runs escalated in the last day.
    pub escalated: Vec<RunRow>,
    /// Runs sent longer ago than the delivery deadline with no final receipt yet.
    pub missing: Vec<RunRow>,
    /// The delivery deadline (ms) that `missing` is judged by.
    pub deadline_ms: i64,
    /// Texts sent and delivered per minute, oldest minute first (60 entries).
    pub sent_per_minute: Vec<u32>,
    /// Texts delivered per minute, by when the record said so, oldest first (60 entries).
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

/// The Now page: counts, the last hour's chart, open attempts, unknown sends, escalations
/// and missing receipts.
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

/// A report's value as text: a string as it is, anything else as compact JSON.
fn shown(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn passed(v: &serde_json::Value) -> Markup {
    match v.get("ok").and_then(|o| o.as_bool()) {
        Some(true) => html! { span.badge.state-delivered { "passed" } },
        Some(false) => html! { span.badge.state-failed { "FAILED" } },
        None => html! { span.badge { "?" } },
    }
}

/// The Drills page: the saved reports of `RINGBACK_DRILL_REPORTS` (`dir`), or why there are
/// none (`dir` unset, unreadable, empty).
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
                                    @if let Some(figures) = r.get("figures").and_then(|f| f.as_object()).filter(|f| !f.is_empty()) {
                                        table.figures { tbody { @for (name, v) in figures { tr { th { (name) } td { (shown(v)) } } } } }
                                    }
                                    @if let Some(checks) = r.get("checks").and_then(|c| c.as_array()).filter(|c| !c.is_empty()) {
                                        ul.checks { @for c in checks { li { (shown(c)) } } }
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
pub const CSS: &str = include_str!("../console.css");
