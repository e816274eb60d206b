//! The human's side on the console: a run's question and the replies it received (each with the
//! replies-queue job that carries it to the producer's side), and the Inbound page (messages that
//! answered no question, and the opt-outs Twilio reported).

use super::{at, layout};
use maud::{Markup, html};

use crate::callbacks::replies::optouts::OptOut;
use crate::callbacks::replies::{Question, ReplyView};
use crate::callbacks::runs::JobView;

fn media(r: &ReplyView) -> Markup {
    html! {
        @for (i, m) in r.media.iter().enumerate() {
            // a link only to an https address (Twilio's media URLs); anything else as text
            @if m.url.starts_with("https://") {
                " " a.media href=(m.url) rel="noreferrer" { "media " (i + 1) @if let Some(t) = &m.content_type { " (" (t) ")" } }
            } @else {
                " " span.media.mono { (m.url) }
            }
        }
    }
}

/// The run page's question and replies.
pub(super) fn section(
    question: Option<&Question>,
    replies: &[(ReplyView, Option<JobView>)],
) -> Markup {
    html! {
        @if let Some(q) = question {
            h2 { "Question" }
            dl.summary #question {
                dt { "reply code" } dd.mono #reply-code { (q.code) @if !q.shown { " " span.small { "(not shown in the text: no other question was open)" } } }
                dt { "open until" } dd { (at(q.until)) }
                dt { "answered" } dd #answered { @match &q.answered_by { Some(sid) => { "by " span.mono { (sid) } }, None => { "not yet" } } }
            }
            h2 { "Replies" }
            @if replies.is_empty() { p.empty { "No reply yet." } } @else {
                table.replies #replies {
                    thead { tr { th { "received" } th { "from" } th { "text" } th { "MessageSid" } th { "replies-queue job" } th { "job state" } } }
                    tbody {
                        @for (r, job) in replies {
                            tr {
                                td { (at(r.received_at)) } td.mono { (r.from) }
                                td.reply-text { (r.text) (media(r)) }
                                td.mono { (r.message_sid) }
                                td.mono { (r.job_id.as_deref().unwrap_or("—")) }
                                td.job-state { @match job { Some(j) => { (j.state) @if let Some(t) = j.finished_on { " at " (at(t)) } }, None => { "removed" } } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The run page's escalation ladder: where it stands, and each step.
pub(super) fn ladder(l: Option<&crate::callbacks::ladder::view::LadderView>) -> Markup {
    html! {
        @if let Some(l) = l {
            h2 { "Escalation ladder" }
            dl.summary #ladder {
                dt { "state" } dd #ladder-state { (l.state) }
                @if let Some((how, who)) = &l.acknowledged { dt { "acknowledged" } dd { "by " (how) " from " span.mono { (who) } } }
                @if let Some(due) = l.due { dt { "next step" } dd { (at(due)) } }
                @if let Some(why) = &l.text_failed { dt { "the text" } dd { "climbed at once: " (why) } }
            }
            table.ladder #ladder-steps {
                thead { tr { th { "step" } th { "channel" } th { "to" } th { "started" } th { "sent" } th { "outcome" } th { "climbed" } } }
                tbody {
                    @for s in &l.steps {
                        tr {
                            td { (s.k) } td { (s.channel) } td.mono { (s.to) }
                            td { (s.started.map(at).unwrap_or_else(|| "—".into())) }
                            td.mono { (s.sent.as_deref().unwrap_or("—")) }
                            td { (s.status.as_deref().unwrap_or("—")) }
                            td { (s.climbed.as_deref().unwrap_or("")) }
                        }
                    }
                }
            }
        }
    }
}

/// Timeline entries for a run's replies: (at, kind, title, detail).
pub(super) fn events(
    replies: &[(ReplyView, Option<JobView>)],
) -> Vec<(i64, &'static str, String, String)> {
    let mut out = vec![];
    for (r, job) in replies {
        out.push((
            r.received_at,
            "reply",
            format!("Reply from {}", r.from),
            format!("“{}” · {}", r.text, r.message_sid),
        ));
        if let Some(j) = job
            && let Some(t) = j.finished_on
        {
            out.push((
                t,
                "reply-consumed",
                format!("Reply job {}", j.state),
                format!("replies-queue job {} ({})", j.id, j.name),
            ));
        }
    }
    out
}

/// The Inbound page.
pub fn inbound(unmatched: &[ReplyView], opt_outs: &[OptOut]) -> Markup {
    let body = html! {
        h1 { "Inbound" }
        p.hint { "Messages the human sent that answered no open question (also each a job in the replies queue, with runId null), kept for RINGBACK_INBOUND_RETENTION_MS; and what Twilio said of opt-outs. Twilio enforces opt-outs itself: ringback never skips a send because of this list." }
        h2 { "Messages that answered no question" }
        @if unmatched.is_empty() { p.empty { "None." } } @else {
            table #unmatched {
                thead { tr { th { "received" } th { "from" } th { "text" } th { "matched" } th { "MessageSid" } } }
                tbody { @for r in unmatched { tr { td { (at(r.received_at)) } td.mono { (r.from) } td { (r.text) (media(r)) } td { (r.matched) } td.mono { (r.message_sid) } } } }
            }
        }
        h2 { "Opt-outs" }
        @if opt_outs.is_empty() { p.empty { "None recorded." } } @else {
            table #opt-outs {
                thead { tr { th { "sender" } th { "number" } th { "Twilio said" } th { "since" } } }
                tbody { @for o in opt_outs { tr { td.mono { (o.sender) } td.mono { (o.number) } td { @if o.how == "21610" { "error 21610 (the number replied STOP)" } @else { "OptOutType " (o.how) } } td { (at(o.at)) } } } }
            }
        }
    };
    layout("Inbound", "Inbound", true, body)
}
