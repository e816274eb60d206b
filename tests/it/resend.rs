//! `ringback resend <runId>`: the runbook's path for a person after an escalation. It sends
//! through the window, once, and refuses while ringback is still resolving the run, when the
//! run was delivered, or when ringback has no record of it. The binary against the simulator
//! and a real redis-server.

use crate::common;

use std::time::Duration;

use common::callbacks::*;
use common::wait_for;

/// `ringback resend <run>`: exit code, stdout, stderr.
async fn resend(e: &Env, run: &str) -> (Option<i32>, String, String) {
    let mut cmd = ringback_command(e, "resend", Timings::Compressed);
    cmd.arg(run)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // off the runtime: the simulator answers on it
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits until `run`'s callback record (`which` = "record") or attempt record ("attempt") has
/// `field` = `value`.
async fn hash_field_is(e: &Env, which: &str, run: &str, field: &str, value: &str) {
    let keys = ringback::store::keys::WindowKeys::new("agent-callback:", run);
    let key = if which == "record" {
        keys.record
    } else {
        keys.attempt
    };
    let c = e.redis.conn().await;
    wait_for(T, &format!("{run}'s {which} {field} to be {value}"), || {
        let (mut c, key) = (c.clone(), key.clone());
        async move {
            let v: Option<String> = redis::AsyncCommands::hget(&mut c, &key, field)
                .await
                .unwrap();
            (v.as_deref() == Some(value)).then_some(())
        }
    })
    .await;
}

/// The runbook's procedure for `unknown_settled`, as a drill step: the run was settled unknown
/// (its answer lost, no receipt), the person checked and decided the human must be told. The
/// resend texts once; running it again texts nothing; the run itself is never texted again.
#[tokio::test]
async fn a_settled_unknown_is_resent_once_through_the_window() {
    let e = env(
        "resend-settled",
        r#"{"create":[{"fault":"create_then_drop","times":1}]}"#,
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let id = add(&e, &data("rs1")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    assert_eq!(returnvalue(&h)["status"], "unknown");
    assert_eq!(texts(&e, "rs1"), 1);

    let (code, stdout, stderr) = resend(&e, "rs1").await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("resent rs1 as rs1:resend: SM"), "{stdout}");
    assert_eq!(texts(&e, "rs1"), 2, "the one resend");
    let (code, stdout, stderr) = resend(&e, "rs1").await;
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("already resent"), "{stdout}");
    assert_eq!(texts(&e, "rs1"), 2, "idempotent");
    // the resend is linked to its own run: a later job for the run sends nothing
    let again = add(&e, &data("rs1")).await;
    assert_eq!(finished(&e, &again).await.0, "completed");
    assert_eq!(texts(&e, "rs1"), 2);
    w.stop().await;
}

/// Refusals, each with its reason and exit 3: a run ringback is still resolving (lookups fail,
/// so its attempt stays open), a delivered run, a run ringback has no record of.
#[tokio::test]
async fn a_resend_is_refused_while_resolving_when_delivered_and_without_a_record() {
    let e = env(
        "resend-refused",
        r#"{"create":[{"to":"+15550002001","fault":"create_then_drop","times":1}],
            "auth":{"refuse":"lookups"}}"#,
    )
    .await;
    let mut sms = sms_config();
    serve_receipts(&e, &mut sms).await;
    let w = start_worker(&e, sms).await;
    let resolving =
        serde_json::json!({"runId": "rr1", "to": "+15550002001", "body": "Run rr1 finished"});
    add(&e, &resolving.to_string()).await;
    let delivered = add(&e, &data("rr2")).await;
    assert_eq!(finished(&e, &delivered).await.0, "completed");
    hash_field_is(&e, "record", "rr2", "status", "delivered").await;
    hash_field_is(&e, "attempt", "rr1", "state", "ambiguous").await;
    for (run, says) in [
        ("rr1", "ringback is still resolving it"),
        ("rr2", "it was delivered"),
        ("nobody", "ringback has no attempt record"),
    ] {
        let (code, _, stderr) = resend(&e, run).await;
        assert_eq!(code, Some(3), "{run}: {stderr}");
        assert!(
            stderr.contains(&format!("refusing to resend {run}: {says}")),
            "{run}: {stderr}"
        );
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(e.sim.store.all().len(), 2, "nothing resent");
    w.stop().await;
}

/// A question resent after its run was settled and its time to answer ran out is open again,
/// under the same code: the person's answer to the resent text reaches the run instead of
/// landing unmatched.
#[tokio::test]
async fn a_resent_question_is_open_again_under_its_code() {
    let e = env(
        "resend-question",
        r#"{"create":[{"fault":"create_then_drop","times":1}]}"#,
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let data = serde_json::json!({
        "runId": "rq1", "to": TO, "body": body("rq1"), "expectReply": true, "replyWithin": "2s"
    })
    .to_string();
    let id = add(&e, &data).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    assert_eq!(returnvalue(&h)["status"], "unknown");
    let mut c = e.redis.conn().await;
    let qkey = ringback::store::keys::question("agent-callback:", "rq1");
    let question = |json: Option<String>| -> serde_json::Value {
        serde_json::from_str(&json.expect("the question")).unwrap()
    };
    let asked = question(redis::AsyncCommands::get(&mut c, &qkey).await.unwrap());
    // its time to answer runs out
    let now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    };
    let until = asked["until"].as_i64().unwrap();
    tokio::time::sleep(Duration::from_millis((until - now()).max(0) as u64 + 200)).await;
    let (code, _, stderr) = resend(&e, "rq1").await;
    assert_eq!(code, Some(0), "{stderr}");
    let reopened = question(redis::AsyncCommands::get(&mut c, &qkey).await.unwrap());
    assert_eq!(reopened["code"], asked["code"], "the same code");
    assert!(
        reopened["until"].as_i64().unwrap() > now() + 3_600_000,
        "open again: {reopened}"
    );
    w.stop().await;
}
