//! `/console/now`: open attempts, unknown sends, the day's escalations, receipts missing past
//! the delivery deadline, and texts sent and delivered per minute over the last hour.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::{SCAN_BATCH, html, pages, reads, refused, unavailable};
use crate::callbacks::runs;
use crate::clock::now_ms;
use crate::edge::api::ApiState;

/// How far back the Now page looks for escalations and unknown sends.
const DAY_MS: i64 = 24 * 3600 * 1000;

pub(super) async fn now(State(s): State<Arc<ApiState>>, headers: HeaderMap) -> Response {
    if let Some(page) = refused(&s, &headers) {
        return page;
    }
    match now_figures(&s).await {
        Ok(n) => html(StatusCode::OK, pages::now(&n)),
        Err(e) => unavailable(e),
    }
}

async fn now_figures(s: &ApiState) -> Result<pages::Now, crate::error::Error> {
    let r = reads(s);
    r.hide_fallbacks().await?;
    let now = now_ms();
    let (open_total, open) = r.open_attempts(200).await?;
    let open_rows = r.rows(&open).await?;
    let day = r.recent_since(now - DAY_MS).await?;
    let mut rows = vec![];
    for chunk in day.chunks(SCAN_BATCH) {
        rows.extend(r.rows(chunk).await?);
    }
    let deadline = s.console.delivery_deadline.as_millis() as i64;
    let hour_start = now - 3600 * 1000;
    let (mut sent, mut delivered) = (vec![0u32; 60], vec![0u32; 60]);
    let minute = |t: i64| ((t - hour_start) / 60_000).clamp(0, 59) as usize;
    for row in &rows {
        if let Some(t) = row.sent_at.filter(|t| *t >= hour_start) {
            sent[minute(t)] += 1;
        }
        if row.state == "delivered"
            && let Some(t) = row.updated_at.filter(|t| *t >= hour_start)
        {
            delivered[minute(t)] += 1;
        }
    }
    let escalated_at = |row: &runs::RunRow| {
        row.escalated
            .as_deref()
            .and_then(|e| e.split(':').next())
            .and_then(|t| t.parse::<i64>().ok())
    };
    Ok(pages::Now {
        now_ms: now,
        open_total,
        open: open_rows
            .iter()
            .map(|o| {
                (
                    o.run_id.clone(),
                    o.attempt_state.clone().unwrap_or_default(),
                    o.since.map(|t| now - t),
                )
            })
            .collect(),
        unknown: rows
            .iter()
            .filter(|row| matches!(row.attempt_state.as_deref(), Some("unknown" | "ambiguous")))
            .cloned()
            .collect(),
        escalated: rows
            .iter()
            .filter(|row| escalated_at(row).is_some_and(|t| t >= now - DAY_MS))
            .cloned()
            .collect(),
        missing: rows
            .iter()
            .filter(|row| {
                matches!(row.state.as_str(), "accepted" | "sent")
                    && row.sent_at.is_some_and(|t| t < now - deadline)
            })
            .cloned()
            .collect(),
        deadline_ms: deadline,
        sent_per_minute: sent,
        delivered_per_minute: delivered,
    })
}
