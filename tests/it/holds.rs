//! A refusal that is the deployment's fault, not the message's, holds callbacks instead of
//! failing them: a sender the account does not own holds every callback (readiness false, one
//! probe create per interval, escalated `held` past the bound, texted once fixed); a region the
//! account may not text holds that region's callbacks only; a job's own bad `from` is still the
//! job's. Against the Twilio simulator and a real redis-server.

use crate::common;

use std::time::Duration;

use common::callbacks::*;
use common::wait_for;
use redis::AsyncCommands;
use ringback::callbacks::sms::SmsEvent;
use ringback::store::keys::QueueKeys;

fn creates(e: &Env) -> usize {
    e.sim
        .store
        .requests()
        .iter()
        .filter(|r| r.method == "POST")
        .count()
}

/// For 6 s every create is refused with 21212 (the From is not a sender of this account), as
/// after a bad deploy; then the account is fixed. Every callback is texted once; none failed;
/// Twilio saw the first wave and one probe per interval, not the backlog again and again; each
/// callback held past the bound was escalated `held` (no fallback text through the broken
/// sender) and its escalation resolved when it went out.
#[tokio::test]
async fn a_misconfigured_sender_holds_the_backlog_and_texts_it_once_fixed() {
    let e = env(
        "held-sender",
        r#"{"create":[{"fault":"permanent","code":21212,"message":"The 'From' number +15005550006 is not a valid phone number, shortcode, or alphanumeric sender ID."}]}"#,
    )
    .await;
    let sms = ringback::callbacks::sms::SmsConfig {
        hold_escalate: Duration::from_secs(2),
        fallback_to: Some("+15550009999".into()),
        ..sms_config()
    };
    let w = start_worker(&e, sms).await;
    let runs: Vec<String> = (0..20).map(|i| format!("hs{i}")).collect();
    let mut ids = vec![];
    for run in &runs {
        ids.push(add(&e, &data(run)).await);
    }
    wait_for(T, "the hold to turn readiness false", || async {
        w.stats.not_ready().filter(|why| why.contains("21212"))
    })
    .await;
    tokio::time::sleep(Duration::from_secs(6)).await;
    let during = creates(&e);
    // the first wave (one per concurrency slot) and at most one probe per 5 s
    assert!(during <= 8 + 2, "{during} creates while held");
    let mut c = e.redis.conn().await;
    let failed: u64 = c.zcard(e.keys.failed()).await.unwrap();
    assert_eq!(failed, 0, "nothing failed while held");
    set_faults(&e, serde_json::json!({})).await;
    for id in &ids {
        let (state, h) = finished_within(&e, id, Duration::from_secs(30)).await;
        assert_eq!(state, "completed", "{h:?}");
    }
    for run in &runs {
        assert_eq!(texts(&e, run), 1, "{run}");
    }
    assert!(w.stats.not_ready().is_none(), "ready again");
    assert!(w.stats.get(SmsEvent::Held) >= 20);
    let escalated = escalation_ids(&e).await;
    for run in &runs {
        assert!(
            escalated.contains(&format!("escalation:{run}")),
            "{run} escalated held: {escalated:?}"
        );
        assert!(
            escalated.contains(&format!("escalation:{run}:resolved")),
            "{run}'s held escalation resolved: {escalated:?}"
        );
    }
    let esc = ringback::store::keys::QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let job: String = c.hget(esc.job("escalation:hs0"), "data").await.unwrap();
    assert!(job.contains(r#""kind":"held""#), "{job}");
    // no fallback text through the sender that was broken: 20 texts, all the runs' own
    assert_eq!(e.sim.store.all().len(), 20);
    w.stop().await;
}

/// 21408 (SMS to the To's region not enabled) for two UK numbers: the UK's callbacks are held,
/// the US ones go out meanwhile, readiness stays true; once the account may text the UK, both
/// go out once.
#[tokio::test]
async fn a_region_the_account_may_not_text_holds_its_callbacks_only() {
    let uk = ["+447700900123", "+447700900456"];
    let rules: Vec<_> = uk
        .iter()
        .map(|to| serde_json::json!({"to": to, "fault": "permanent", "code": 21408}))
        .collect();
    let e = env(
        "held-region",
        &serde_json::json!({ "create": rules }).to_string(),
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let job = |run: &str, to: &str| {
        serde_json::json!({"runId": run, "to": to, "body": body(run)}).to_string()
    };
    let uk_ids = [
        add(&e, &job("uk1", uk[0])).await,
        add(&e, &job("uk2", uk[1])).await,
    ];
    let us = add(&e, &job("us1", TO)).await;
    assert_eq!(finished(&e, &us).await.0, "completed");
    wait_for(T, "the UK to be held", || async {
        (w.stats.holds.destinations_held() == 1).then_some(())
    })
    .await;
    assert!(
        w.stats.not_ready().is_none(),
        "a region's hold is no deployment fault"
    );
    let mut c = e.redis.conn().await;
    let failed: u64 = c.zcard(e.keys.failed()).await.unwrap();
    assert_eq!(failed, 0);
    set_faults(&e, serde_json::json!({})).await;
    for id in &uk_ids {
        assert_eq!(
            finished_within(&e, id, Duration::from_secs(30)).await.0,
            "completed"
        );
    }
    for run in ["uk1", "uk2", "us1"] {
        assert_eq!(texts(&e, run), 1, "{run}");
    }
    assert_eq!(w.stats.holds.destinations_held(), 0);
    w.stop().await;
}

/// A sender the job itself named (`from`) that Twilio refuses (21212) is the job's fault: failed
/// at once and escalated as permanent, nothing held.
#[tokio::test]
async fn a_jobs_own_bad_sender_is_the_jobs_fault() {
    let e = env(
        "job-from",
        r#"{"create":[{"fault":"permanent","code":21212}]}"#,
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let data =
        serde_json::json!({"runId": "jf1", "to": TO, "body": body("jf1"), "from": "+15550001111"})
            .to_string();
    let id = add(&e, &data).await;
    assert_eq!(finished(&e, &id).await.0, "failed");
    assert!(w.stats.holds.deployment().is_none());
    assert_eq!(escalation_ids(&e).await, ["escalation:jf1"]);
    w.stop().await;
}

/// The case the rule exists for, through the `ringback worker` binary at production timings
/// (claim 3 s shorter than the 6 s lock): mid-run Twilio refuses every create with 21212 (the
/// sender) or 21408 (the destination's region); the operator fixes the account and restarts the
/// worker (SIGTERM, then a new process). Every callback is texted once and none is failed.
/// No legacy worker runs beside it here: the legacy worker fails what it takes of such a
/// backlog by its own design, which is what this rule replaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fault_fixed_with_a_restart_texts_the_backlog_once_at_production_timings() {
    for (code, message) in [
        (
            21212,
            "The 'From' number +15005550006 is not a valid phone number, shortcode, or alphanumeric sender ID.",
        ),
        (
            21408,
            "Permission to send an SMS has not been enabled for the region indicated by the 'To' number",
        ),
    ] {
        let faults = serde_json::json!({"create": [{"fault": "permanent", "code": code, "message": message}]});
        let e = env(&format!("held-restart-{code}"), &faults.to_string()).await;
        let runs: Vec<String> = (0..20).map(|i| format!("hr{code}-{i}")).collect();
        let mut ids = vec![];
        for run in &runs {
            ids.push(add(&e, &data(run)).await);
        }
        let mut first = spawn_worker(&e, None, Timings::Production, &[]);
        wait_for(T, "the refusals to begin", || async {
            (creates(&e) >= 4).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_secs(4)).await;
        let mut c = e.redis.conn().await;
        let failed: u64 = c.zcard(e.keys.failed()).await.unwrap();
        assert_eq!(failed, 0, "{code}: nothing failed while held");
        // the operator: fix the account, restart the worker
        set_faults(&e, serde_json::json!({})).await;
        let pid = first.0.id().to_string();
        let _ = std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status();
        let _ = first.0.wait();
        let _second = spawn_worker(&e, None, Timings::Production, &[]);
        for id in &ids {
            let (state, h) = finished_within(&e, id, Duration::from_secs(40)).await;
            assert_eq!(state, "completed", "{code}: {h:?}");
        }
        for run in &runs {
            assert_eq!(texts(&e, run), 1, "{code}: {run} texted once");
        }
        let failed: u64 = c.zcard(e.keys.failed()).await.unwrap();
        assert_eq!(failed, 0, "{code}: nothing failed");
    }
}

/// A run a deployment fault holds when `ringback drain` gives up was never sent: escalated
/// `held`, saying so and what the legacy worker does with its job, never "may have been sent".
#[tokio::test]
async fn drain_giving_up_on_a_held_run_escalates_it_held_not_maybe_sent() {
    let uk = "+447700900123";
    let e = env(
        "held-drain",
        &serde_json::json!({"create": [{"to": uk, "fault": "permanent", "code": 21408}]})
            .to_string(),
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let data = serde_json::json!({"runId": "hd1", "to": uk, "body": body("hd1")}).to_string();
    add(&e, &data).await;
    wait_for(T, "the run to be held", || async {
        (w.stats.holds.destinations_held() == 1).then_some(())
    })
    .await;
    w.stop().await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(&e, conn, sms_config());
    let report = ringback::callbacks::drain::drain(
        &p,
        Duration::from_millis(1500),
        &Default::default(),
        ringback::callbacks::drain::Ladders::Refuse,
        |_| {},
    )
    .await
    .unwrap();
    assert_eq!(report.still_open, ["hd1"]);
    let mut c = e.redis.conn().await;
    let esc = QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let job: String = c.hget(esc.job("escalation:hd1"), "data").await.unwrap();
    let job: serde_json::Value = serde_json::from_str(&job).unwrap();
    assert_eq!(job["kind"], "held", "{job}");
    let reason = job["reason"].as_str().unwrap();
    assert!(reason.starts_with("not sent"), "{reason}");
    assert!(!reason.contains("may or may not"), "{reason}");
    assert_eq!(texts(&e, "hd1"), 0);
}

/// Redis dropping the drain's connection and holding its writes past the command timeout in
/// the middle of a drain (a failover, a client kill, a slow fork) is waited out, not the end
/// of the drain: the run it was holding
/// for a region the account could not text is sent once that is fixed, and the drain ends
/// with nothing open.
#[tokio::test]
async fn drain_waits_out_redis_holding_its_writes_between_rounds() {
    let uk = "+447700900124";
    let e = env(
        "drain-redis-pause",
        &serde_json::json!({"create": [{"to": uk, "fault": "permanent", "code": 21408}]})
            .to_string(),
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let data = serde_json::json!({"runId": "dp1", "to": uk, "body": body("dp1")}).to_string();
    add(&e, &data).await;
    wait_for(T, "the run to be held", || async {
        (w.stats.holds.destinations_held() == 1).then_some(())
    })
    .await;
    w.stop().await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(&e, conn, sms_config());
    let (lines, mut rounds) = tokio::sync::mpsc::unbounded_channel::<String>();
    let mut admin = e.redis.conn().await;
    let fault = async {
        // two rounds in: the drain is sleeping between rounds or inside one
        for _ in 0..2 {
            rounds.recv().await.unwrap();
        }
        common::pause_writes(&mut admin, 25_000).await;
        let _: i64 = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("TYPE")
            .arg("normal")
            .query_async(&mut admin)
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(25_500)).await;
        set_faults(&e, serde_json::json!({})).await;
    };
    let cancel = Default::default();
    let drained = ringback::callbacks::drain::drain(
        &p,
        Duration::from_secs(60),
        &cancel,
        ringback::callbacks::drain::Ladders::Refuse,
        |line| {
            let _ = lines.send(line.to_string());
        },
    );
    let (report, ()) = tokio::join!(drained, fault);
    let report = report.expect("the drain waits out Redis");
    assert_eq!(report.resolved, ["dp1"], "{report:?}");
    assert!(report.still_open.is_empty(), "{report:?}");
    assert_eq!(texts(&e, "dp1"), 1);
}
