//! Runs recorded for the console's tests and benchmark through the real scripts: the job added
//! as the legacy API adds it, claimed and marked sent by the window (which writes the
//! recent-runs index), then status callbacks applied in the order given.

use std::time::Duration;

use ringback::callbacks::callback::{CALLBACK_JOB_NAME, CALLBACK_JOB_OPTS};
use ringback::callbacks::receipts::{Source, StatusUpdate};
use ringback::callbacks::window::{Claim, Marked, Window, WindowTimes};

/// The window of the default claim prefix, with the API state's connection.
pub(crate) fn window(state: &ringback::edge::api::ApiState) -> Window {
    Window::new(
        state.queue.connection(),
        Default::default(),
        "agent-callback:".into(),
        WindowTimes {
            pending_ttl: Duration::from_secs(15),
            lease: Duration::from_secs(600),
            sent_ttl: Duration::from_secs(86_400),
            hold: Duration::from_secs(30),
            poll_after: Duration::from_secs(60),
            replay_for: Duration::from_millis(500),
            lost_writes_window: Duration::from_secs(120),
        },
    )
}

/// A MessageSid for run number `n`.
pub(crate) fn sid(n: usize) -> String {
    format!("SM{n:032x}")
}

/// Record run `run_id` (number `n`) to `to`: enqueued, claimed by `worker`, sent, then each of
/// `statuses` as a status callback, in that order. `sent: false` stops after the claim (an
/// open attempt).
pub(crate) async fn record_run(
    state: &ringback::edge::api::ApiState,
    window: &Window,
    n: usize,
    run_id: &str,
    to: &str,
    sent: bool,
    statuses: &[&str],
) {
    let data =
        serde_json::json!({"runId": run_id, "to": to, "body": format!("run {run_id} finished")});
    state
        .queue
        .add_job(
            Some(run_id),
            CALLBACK_JOB_NAME,
            &data.to_string(),
            CALLBACK_JOB_OPTS,
        )
        .await
        .expect("add job");
    let token = format!("token-{n}");
    let claim = window
        .claim(run_id, &token, None, run_id, "worker-a", to, "", "body")
        .await
        .expect("claim");
    assert!(matches!(claim, Claim::Claimed { .. }), "{claim:?}");
    if !sent {
        return;
    }
    window
        .mark_sent(run_id, &token, &sid(n), "queued", Marked::Sent)
        .await
        .expect("mark sent");
    for (i, status) in statuses.iter().enumerate() {
        state
            .receipts
            .apply(&StatusUpdate {
                run_id: run_id.to_string(),
                sid: sid(n),
                status: status.to_string(),
                error_code: (*status == "undelivered").then(|| "30003".to_string()),
                raw_dlr_done_date: None,
                source: Source::Webhook,
                repeat_id: Some(format!("{run_id}-{i}")),
                attempt: Some(token.clone()),
            })
            .await
            .expect("apply");
    }
}
