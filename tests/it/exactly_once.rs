//! Exactly once at production timings: the claim outlives every unresolved attempt,
//! crashes at the defaults' order of timings, one clock, nothing waits forever silently, and
//! `ringback drain`. Real redis-server, the Twilio simulator, the `ringback` binary where a
//! process must die; texts are counted at the simulator.

use crate::common;

use std::time::Duration;

use common::callbacks::*;
use common::wait_for;
use redis::AsyncCommands;
use ringback::callbacks::window::{Claim, MarkSent, Marked};
use ringback::store::keys::WindowKeys;
use ringback::twilio::{CreateMessage, SendOutcome, TwilioClient};

fn claim_key(run: &str) -> String {
    WindowKeys::new("agent-callback:", run).claim
}

async fn wait_exit(mut child: Proc, within: Duration) -> std::process::ExitStatus {
    tokio::task::spawn_blocking(move || {
        let deadline = std::time::Instant::now() + within;
        loop {
            if let Some(status) = child.0.try_wait().expect("wait") {
                return status;
            }
            if std::time::Instant::now() > deadline {
                panic!("the process did not exit within {within:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    })
    .await
    .unwrap()
}

/// A crash at `point` with the claim's liveness (3 s) shorter than the lock (6 s) and the stall
/// sweep (2 s) after it: a fresh worker recovers; one text per run. `runs[0]` is the job the
/// crash hits; the others wait behind it (concurrency 1), so at `after-sent-marker` the crashed
/// call (on a single Redis: marker, completion, fetch and the next run's claim in one) left the
/// second job active with its run claimed and nothing sent.
async fn crash_at_production_ratios(point: &str, runs: &[&str]) {
    let e = env(&format!("prod-{point}"), "").await;
    // status callbacks reach serve, as in production: a receipt proves a send whose answer the
    // crash lost
    serve_receipts(&e, &mut sms_config()).await;
    let mut ids = vec![];
    for run in runs {
        ids.push(add(&e, &data(run)).await);
    }
    let crashing = spawn_worker(
        &e,
        Some(point),
        Timings::Production,
        &[("RINGBACK_CONCURRENCY", "1")],
    );
    let status = wait_exit(crashing, Duration::from_secs(20)).await;
    assert!(!status.success(), "the drill hook aborted at {point}");
    // The claim key is there however long recovery takes: a legacy SET NX cannot succeed.
    let mut c = e.redis.conn().await;
    let v: Option<String> = c.get(claim_key(runs[0])).await.unwrap();
    assert!(
        v.is_some(),
        "{point}: the claim fences the legacy worker off"
    );
    // (Only on one Redis: laid out for a cluster, `RINGBACK_DRILL_PER_SLOT=1`, the finish
    // claims nothing, and the processor claims the next job when it starts it.)
    let fused = std::env::var("RINGBACK_DRILL_PER_SLOT").as_deref() != Ok("1");
    for run in runs[1..].iter().filter(|_| fused) {
        let v: Option<String> = c.get(claim_key(run)).await.unwrap();
        assert!(
            v.is_some_and(|v| v.starts_with("pending:")),
            "{point}: the crashed call claimed {run}, the job it fetched, and sent nothing"
        );
    }
    let recovering = spawn_worker(&e, None, Timings::Production, &[]);
    for (run, id) in runs.iter().zip(&ids) {
        let (state, h) = finished(&e, id).await;
        assert_eq!(state, "completed", "{point} {run}");
        let sids = sent_sids(&e, run);
        assert_eq!(sids.len(), 1, "{point} {run}: one text");
        assert_eq!(
            returnvalue(&h)["messageSid"],
            sids[0].as_str(),
            "{point} {run}"
        );
    }
    drop(recovering);
}

#[tokio::test]
async fn crashes_at_production_ratios_text_once() {
    // (`before-complete` merged into `after-sent-marker`: nothing separated them.)
    tokio::join!(
        crash_at_production_ratios("after-claim", &["p1"]),
        crash_at_production_ratios("after-provider-accept", &["p2"]),
        crash_at_production_ratios("after-sent-marker", &["p3", "p3-next"]),
    );
}

/// The sent marker executed twice on the same arguments (its first reply lost, the call re-sent)
/// is no overrun: the overrun counter behind the critical alert stays still. A marker written
/// after the claim passed to another attempt still counts.
#[tokio::test]
async fn a_re_executed_sent_marker_is_no_overrun() {
    let e = env("remark", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let (receipts, _) = sms_config().after_send(conn.clone(), "bull", &e.queue);
    let w = window(&e, conn, 3000);
    w.claim("rm1", "t1", None, "j", "w", TO, "", "body")
        .await
        .unwrap();
    let before = ringback::callbacks::window::window_overruns();
    for _ in 0..2 {
        let marked = w
            .mark_sent(
                "rm1",
                "t1",
                "SMaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "queued",
                Marked::Sent,
            )
            .await
            .unwrap();
        assert_eq!(marked, MarkSent::Marked);
    }
    assert_eq!(
        ringback::callbacks::window::window_overruns(),
        before,
        "no overrun"
    );
    let record = receipts.record("rm1", None).await.unwrap();
    assert_eq!(
        record.history.len(),
        1,
        "written once: {:?}",
        record.history
    );
    // another attempt's marker after this one's: an overrun (the claim is no longer its own)
    let marked = w
        .mark_sent(
            "rm1",
            "t2",
            "SMbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb",
            "queued",
            Marked::Sent,
        )
        .await
        .unwrap();
    assert_eq!(marked, MarkSent::Overrun);
}

#[tokio::test]
async fn the_claim_outlives_an_unresolved_attempt_and_a_supersede_leaves_no_gap() {
    let e = env("lease", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    // liveness 200 ms, lease 30 s
    let w = window(&e, conn, 200);
    let claim = w
        .claim("l1", "t1", None, "j", "w", TO, "", "body")
        .await
        .unwrap();
    assert_eq!(claim, Claim::Claimed { token: "t1".into() });
    let open = w.open_attempts().await.unwrap();
    assert_eq!(open.count, 1, "the gauge counts it");
    assert!(
        open.oldest_since
            .is_some_and(|s| (w.now() - s).abs() < 5_000)
    );
    let mut c = e.redis.conn().await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let legacy: Option<String> = redis::cmd("SET")
        .arg(claim_key("l1"))
        .arg("pending")
        .arg("NX")
        .arg("EX")
        .arg(600)
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(
        legacy, None,
        "the attempt is dead but unresolved: the legacy SET NX must fail"
    );
    // Dead: the next caller resolves it (holding the claim), never sends at once.
    let Claim::Resolve(u) = w
        .claim("l1", "t2", None, "j", "w", TO, "", "body")
        .await
        .unwrap()
    else {
        panic!("a dead attempt is resolved");
    };
    assert_eq!(u.token, "t1");
    // Found lost: the new attempt replaces it in one step.
    let next = w
        .claim("l1", "t3", Some("t1"), "j", "w", TO, "", "body")
        .await
        .unwrap();
    assert_eq!(next, Claim::Claimed { token: "t3".into() });
    let v: String = c.get(claim_key("l1")).await.unwrap();
    assert_eq!(v, "pending:t3");
    // A supersede naming a token that is not the claim's changes nothing.
    let stale = w
        .claim("l1", "t4", Some("t1"), "j", "w", TO, "", "body")
        .await
        .unwrap();
    assert!(matches!(stale, Claim::Busy(_)), "{stale:?}");
}

#[tokio::test]
async fn a_fresh_claim_consults_a_recorded_receipt() {
    let e = env("receipt-first", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = window(&e, conn, 3000);
    let mut c = e.redis.conn().await;
    let _: () = c
        .hset(
            WindowKeys::new("agent-callback:", "rr").record,
            "sid",
            "SMfromreceipt",
        )
        .await
        .unwrap();
    let claim = w
        .claim("rr", "t1", None, "j", "w", TO, "", "body")
        .await
        .unwrap();
    assert_eq!(claim, Claim::Sent(Some("SMfromreceipt".into())));
    let v: String = c.get(claim_key("rr")).await.unwrap();
    assert_eq!(v, "sent:SMfromreceipt");
}

#[tokio::test]
async fn a_worker_five_minutes_ahead_never_treats_a_live_attempt_as_dead() {
    let e = env("skew", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let live = window(&e, conn, 3000);
    let run = "skew1";
    // A live attempt (another worker, in its provider call) holds the run...
    let Claim::Claimed { token } = live
        .claim(run, "live", None, "j0", "w0", TO, "", &body(run))
        .await
        .unwrap()
    else {
        panic!("claimed");
    };
    // ...while a worker whose clock is 5 minutes ahead takes a duplicate job for it.
    let skewed = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[("RINGBACK_CLOCK_SKEW_MS", "300000")],
    );
    let id = add(&e, &data(run)).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(
        texts(&e, run),
        0,
        "the skewed worker waited for the live attempt"
    );
    // The live attempt's send lands, then its sent marker.
    let twilio = TwilioClient::new(twilio_config(&e.sim_base)).unwrap();
    let SendOutcome::Accepted(m) = twilio
        .create_message(&CreateMessage {
            to: TO.into(),
            body: body(run),
            from: None,
            status_callback: None,
            validity_period: None,
        })
        .await
    else {
        panic!("accepted");
    };
    let marked = live
        .mark_sent(run, &token, &m.sid, "queued", Marked::Sent)
        .await
        .unwrap();
    assert_eq!(
        marked,
        MarkSent::Marked,
        "the live attempt's claim was never taken"
    );
    let (state, h) = finished(&e, &id).await;
    drop(skewed);
    assert_eq!(state, "completed");
    assert_eq!(texts(&e, run), 1);
    assert_eq!(returnvalue(&h)["deduplicated"], true);
}

/// A worker whose clock is an hour behind Redis's, just started and idle (it has claimed
/// nothing, so it has not yet seen Redis's clock in a claim's reply), sweeps by Redis's clock:
/// an attempt a dead worker left open is texted within the bound, not an hour late.
#[tokio::test]
async fn an_idle_worker_an_hour_behind_sweeps_an_orphan_by_redis_clock() {
    let e = env("skew-idle", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = window(&e, conn, 200);
    let run = "skew-idle-1";
    let Claim::Claimed { .. } = w
        .claim(run, "dead", None, "gone", "w0", TO, "", &body(run))
        .await
        .unwrap()
    else {
        panic!("claimed");
    };
    let _behind = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[("RINGBACK_CLOCK_SKEW_MS", "-3600000")],
    );
    wait_for(
        T,
        "the idle worker an hour behind to text the orphan",
        || {
            let n = texts(&e, run);
            async move { (n == 1).then_some(()) }
        },
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(texts(&e, run), 1);
}

/// Make a job active under a token no worker holds (a worker that died before any attempt).
async fn activate_and_abandon(e: &Env, lock_ms: u64) -> String {
    let id = add(e, &data("stalled-before")).await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let cfg = ringback::WorkerConfig {
        redis_url: e.redis.url(),
        queue: e.queue.clone(),
        lock_duration: Duration::from_millis(lock_ms),
        ..Default::default()
    };
    let commands = ringback::queue::calls::Calls::new(conn, e.keys.clone(), Default::default());
    let fetched = commands
        .move_to_active(&ringback::queue::calls::FetchArgs::new(&cfg, "dead-token"))
        .await
        .unwrap();
    assert!(
        matches!(&fetched, ringback::queue::calls::Fetched::Job(j) if j.id == id),
        "{fetched:?}"
    );
    id
}

#[tokio::test]
async fn a_job_the_stall_limit_fails_before_any_attempt_is_still_texted() {
    let e = env("stall-limit-before", "").await;
    let id = activate_and_abandon(&e, 1000).await;
    let w = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[("RINGBACK_MAX_STALLED_COUNT", "0")],
    );
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "failed");
    assert_eq!(
        h["failedReason"],
        ringback::callbacks::orphans::STALLED_LIMIT_REASON
    );
    wait_for(T, "the adopted callback to be texted", || async {
        (texts(&e, "stalled-before") == 1).then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    drop(w);
    assert_eq!(texts(&e, "stalled-before"), 1, "texted once, not again");
}

#[tokio::test]
async fn a_stall_limit_failure_with_an_open_attempt_and_a_429_is_still_texted() {
    // The callback lost before this fix: crash after the claim, the stall limit fails the job,
    // the sweep takes the open attempt and Twilio answers 429: the run must stay open.
    let e = env(
        "stall-limit-429",
        r#"{"create":[{"fault":"rate_limited","retry_after_s":1,"times":1}]}"#,
    )
    .await;
    let id = add(&e, &data("lost429")).await;
    let crashing = spawn_worker(
        &e,
        Some("after-claim"),
        Timings::Compressed,
        &[("RINGBACK_MAX_STALLED_COUNT", "0")],
    );
    assert!(!wait_exit(crashing, Duration::from_secs(20)).await.success());
    let w = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[("RINGBACK_MAX_STALLED_COUNT", "0")],
    );
    let (state, _) = finished(&e, &id).await;
    assert_eq!(state, "failed", "the stall limit failed the job");
    wait_for(T, "the open attempt to be texted after the 429", || async {
        (texts(&e, "lost429") == 1).then_some(())
    })
    .await;
    let c = e.redis.conn().await;
    wait_for(T, "the sent marker", || {
        let mut c = c.clone();
        async move {
            let v: Option<String> = c.get(claim_key("lost429")).await.unwrap();
            v.filter(|v| v.starts_with("sent:SM")).map(|_| ())
        }
    })
    .await;
    drop(w);
    assert_eq!(texts(&e, "lost429"), 1);
    assert_eq!(e.sim.store.all().len(), 1, "the 429 created nothing");
}

#[tokio::test]
async fn an_indistinct_lookup_is_escalated_never_guessed_or_resent() {
    let e = env("indistinct", "").await;
    let run = "twins";
    // Two messages with this run's recipient, sender and body that no run is linked to (say the
    // legacy worker texted the same words twice for other runs).
    let twilio = TwilioClient::new(twilio_config(&e.sim_base)).unwrap();
    for _ in 0..2 {
        let sent = twilio
            .create_message(&CreateMessage {
                to: TO.into(),
                body: body(run),
                from: None,
                status_callback: None,
                validity_period: None,
            })
            .await;
        assert!(matches!(sent, SendOutcome::Accepted(_)));
    }
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = window(&e, conn.clone(), 3000);
    // An ambiguous attempt of this run.
    w.claim(run, "amb", None, "j", "w", TO, "", &body(run))
        .await
        .unwrap();
    assert!(w.hold(run, "amb", "timeout").await.unwrap());
    let processor = processor(&e, conn, sms_config());
    let req = ringback::callbacks::callback::CallbackRequest {
        run_id: run.into(),
        to: TO.into(),
        body: body(run),
        from: None,
        ..Default::default()
    };
    let out = processor.attempt("j", &req).await;
    let ringback::Outcome::Completed(v) = out else {
        panic!("settled: {out:?}");
    };
    assert_eq!(v["status"], "unknown", "{v}");
    assert_eq!(e.sim.store.all().len(), 2, "nothing resent blind");
    let mut c = e.redis.conn().await;
    let esc = ringback::store::keys::QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let exists: bool = c
        .exists(esc.job(&format!("escalation:{run}")))
        .await
        .unwrap();
    assert!(exists, "escalated");
    // A later job for the run does not send either.
    let again = processor.attempt("j2", &req).await;
    assert!(
        matches!(&again, ringback::Outcome::Completed(v) if v["deduplicated"] == true),
        "{again:?}"
    );
    assert_eq!(e.sim.store.all().len(), 2);
    // What a person reads (`ringback status`, the API): unknown, not "accepted".
    let record = processor.receipts().record(run, None).await.unwrap();
    assert_eq!(record.state, "unknown");
}

/// Liveness is judged throughout the drain and on Redis's clock: a worker that starts while the
/// drain runs, its own clock five minutes behind, stops the drain (exit 3, naming it), instead
/// of the drain going on beside it.
#[tokio::test]
async fn drain_refuses_a_worker_that_starts_during_it_whatever_its_clock() {
    let e = env("drain-live", r#"{"auth":{"refuse":"lookups"}}"#).await;
    // an attempt the drain cannot resolve while lookups are refused: it keeps going
    add(&e, &data("dl1")).await;
    let crashing = spawn_worker(&e, Some("after-provider-accept"), Timings::Production, &[]);
    assert!(!wait_exit(crashing, Duration::from_secs(20)).await.success());
    // the crashed worker's heartbeat ages out (3 sweep intervals, at least 3 s)
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut cmd = ringback_command(&e, "drain", Timings::Production);
    cmd.arg("--timeout-ms")
        .arg("30000")
        .stderr(std::process::Stdio::piped());
    let drain = cmd.spawn().unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let _late = spawn_worker(
        &e,
        None,
        Timings::Production,
        &[
            ("RINGBACK_QUEUE", "some-other-queue"),
            ("TWILIO_API_BASE", "http://127.0.0.1:9"),
            ("RINGBACK_CLOCK_SKEW_MS", "-300000"),
        ],
    );
    let out = tokio::task::spawn_blocking(move || drain.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let why = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{why}");
    // an unnamed worker by the machine's hostname, whatever $HOSTNAME says (systemd sets none)
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    assert!(
        why.contains("ringback worker pid") && why.contains(&format!(" on {}", host.trim())),
        "names it: {why}"
    );
}

#[tokio::test]
async fn drain_refuses_beside_a_live_worker_then_resolves_every_open_attempt() {
    let e = env("drain", "").await;
    serve_receipts(&e, &mut sms_config()).await;
    // ringback crashes right after Twilio took a callback, with both claimed: creates take
    // 400 ms, so the second attempt is open before the first answer comes (without it, the
    // crash could land before the second job was claimed, and that run is no attempt to drain)
    set_faults(
        &e,
        serde_json::json!({"create": [{"fault": "slow", "delay_ms": 400}]}),
    )
    .await;
    let ids = [add(&e, &data("d1")).await, add(&e, &data("d2")).await];
    let crashing = spawn_worker(&e, Some("after-provider-accept"), Timings::Production, &[]);
    assert!(!wait_exit(crashing, Duration::from_secs(20)).await.success());
    // A live ringback worker is heartbeating: drain refuses, naming it.
    // (On another queue, with a Twilio it cannot reach: it cannot resolve them first.)
    let live = spawn_worker(
        &e,
        None,
        Timings::Production,
        &[
            ("RINGBACK_QUEUE", "some-other-queue"),
            ("TWILIO_API_BASE", "http://127.0.0.1:9"),
            ("RINGBACK_WORKER_NAME", "rb-ops-7"),
        ],
    );
    let mut c = e.redis.conn().await;
    let workers = ringback::store::keys::ringback_workers("agent-callback:");
    // its own heartbeat (the crashed worker's may still be fresh)
    wait_for(T, "the live worker's heartbeat", || {
        let (mut c, workers) = (c.clone(), workers.clone());
        async move {
            let members: Vec<String> = c.zrange(&workers, 0, -1).await.unwrap();
            members.iter().any(|m| m.contains("rb-ops-7")).then_some(())
        }
    })
    .await;
    let refused = ringback_command(&e, "drain", Timings::Production)
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    assert_eq!(
        refused.status.code(),
        Some(3),
        "refuses beside a live worker"
    );
    let why = String::from_utf8_lossy(&refused.stderr);
    // by the name the worker was given (the one getWorkers() shows too)
    assert!(
        why.contains("ringback worker rb-ops-7 pid"),
        "names it: {why}"
    );
    drop(live);
    set_faults(&e, serde_json::json!({})).await;
    // A killed worker's heartbeat ages out (3 sweep intervals, at least 3 s).
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mut cmd = ringback_command(&e, "drain", Timings::Production);
    cmd.arg("--json")
        .arg("--timeout-ms")
        .arg("20000")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    // (blocking off the runtime: the simulator answers on it)
    let drained = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        drained.status.code(),
        Some(0),
        "drained: {}",
        String::from_utf8_lossy(&drained.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&drained.stdout).unwrap();
    assert_eq!(
        report["still_open"].as_array().unwrap().len(),
        0,
        "{report}"
    );
    for run in ["d1", "d2"] {
        let v: String = c.get(claim_key(run)).await.unwrap();
        assert!(v.starts_with("sent:SM"), "{run}: {v}");
        assert_eq!(
            texts(&e, run),
            1,
            "{run}: the crashed send was found, not repeated"
        );
    }
    // The legacy worker alone now: its SET NX fails for both runs (sent), nothing is texted again.
    for run in ["d1", "d2"] {
        let legacy: Option<String> = redis::cmd("SET")
            .arg(claim_key(run))
            .arg("pending")
            .arg("NX")
            .arg("EX")
            .arg(600)
            .query_async(&mut c)
            .await
            .unwrap();
        assert_eq!(legacy, None);
    }
    let _ = ids;
}

#[tokio::test]
async fn credentials_refused_for_20_s_fail_nothing_and_every_callback_is_texted_once() {
    let e = env("auth-outage", "").await;
    let w = start_worker(&e, sms_config()).await;
    set_faults(
        &e,
        serde_json::json!({"auth": {"refuse": "all", "for_ms": 20_000}}),
    )
    .await;
    let runs: Vec<String> = (0..30).map(|i| format!("auth{i}")).collect();
    let mut ids = vec![];
    for run in &runs {
        ids.push(add(&e, &data(run)).await);
    }
    wait_for(T, "readiness to turn false", || async {
        w.stats.not_ready().map(|_| ())
    })
    .await;
    let mut c = e.redis.conn().await;
    let failed: u64 = c.zcard(e.keys.failed()).await.unwrap();
    assert_eq!(
        failed, 0,
        "a refused credential is not a verdict on the callback"
    );
    assert_eq!(e.sim.store.all().len(), 0);
    for id in &ids {
        let (state, h) = finished_within(&e, id, Duration::from_secs(60)).await;
        assert_eq!(state, "completed", "{id}: {h:?}");
    }
    for run in &runs {
        assert_eq!(texts(&e, run), 1, "{run}");
    }
    assert_eq!(e.sim.store.all().len(), 30, "0 duplicates, 0 lost");
    assert!(w.stats.not_ready().is_none(), "ready again");
    assert!(w.stats.get(ringback::callbacks::sms::SmsEvent::AuthRefused) >= 30);
    w.stop().await;
}

#[tokio::test]
async fn lookups_that_keep_failing_are_escalated_once_and_never_resent_blind() {
    // The create is taken and its answer lost; the key may create but not list.
    let e = env(
        "unknown-escalate",
        r#"{"create":[{"fault":"create_then_drop","times":1}],"auth":{"refuse":"lookups"}}"#,
    )
    .await;
    let sms = ringback::callbacks::sms::SmsConfig {
        unknown_escalate: Duration::from_millis(1000),
        ..sms_config()
    };
    let w = start_worker(&e, sms).await;
    let id = add(&e, &data("unk")).await;
    let mut c = e.redis.conn().await;
    let esc = ringback::store::keys::QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let escalation = esc.job("escalation:unk");
    wait_for(T, "the unknown send to be escalated", || {
        let (mut c, k) = (c.clone(), escalation.clone());
        async move { c.exists::<_, bool>(&k).await.unwrap().then_some(()) }
    })
    .await;
    // Past the reconcile window (1.5 s) with lookups failing: still never resent.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    assert_eq!(texts(&e, "unk"), 1, "never resent blind");
    let attempt = WindowKeys::new("agent-callback:", "unk").attempt;
    let flagged: Option<String> = c.hget(&attempt, "escalated").await.unwrap();
    assert!(flagged.is_some(), "flagged once");
    let events: u64 = c.xlen(esc.events()).await.unwrap_or(0);
    // Lookups work again: the message is found, but nothing links it to the run (no status
    // callback reaches ringback): never resent, settled unknown, escalated again as settled.
    set_faults(&e, serde_json::json!({})).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    assert_eq!(returnvalue(&h)["status"], "unknown", "found, not resent");
    assert_eq!(texts(&e, "unk"), 1);
    // one escalation per kind: still resolving, then settled
    let mut ids: Vec<String> = c.lrange(esc.wait(), 0, -1).await.unwrap();
    ids.sort();
    assert_eq!(
        ids,
        ["escalation:unk", "escalation:unk:unknown_settled"],
        "{events} events before"
    );
    w.stop().await;
}

/// Lookups fail and the status callback is late: escalated as still resolving; then the
/// receipt that names the run proves the send, the job completes with it, and the escalation
/// queue hears it was resolved.
#[tokio::test]
async fn an_escalated_unknown_proven_by_a_late_receipt_is_resolved_with_a_notice() {
    let e = env(
        "unknown-late-receipt",
        r#"{"create":[{"fault":"create_then_drop","times":1}],"auth":{"refuse":"lookups"},
            "callbacks":[{"delay_ms":2500}]}"#,
    )
    .await;
    let mut sms = ringback::callbacks::sms::SmsConfig {
        unknown_escalate: Duration::from_millis(1000),
        ..sms_config()
    };
    serve_receipts(&e, &mut sms).await;
    let w = start_worker(&e, sms).await;
    let id = add(&e, &data("late")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    let rv = returnvalue(&h);
    assert_eq!(rv["reconciled"], true, "{rv}");
    assert_eq!(texts(&e, "late"), 1);
    assert_eq!(
        escalation_ids(&e).await,
        ["escalation:late", "escalation:late:resolved"]
    );
    let mut c = e.redis.conn().await;
    let esc = ringback::store::keys::QueueKeys::new("bull", &format!("{}-escalations", e.queue));
    let notice: String = c
        .hget(esc.job("escalation:late:resolved"), "data")
        .await
        .unwrap();
    assert!(notice.contains(r#""resolution":"found-sent""#), "{notice}");
    w.stop().await;
}

#[tokio::test]
async fn a_body_twilio_prefixed_for_a_trial_account_is_still_found() {
    let e = env(
        "trial",
        r#"{"trial_prefix":true,"create":[{"fault":"create_then_drop","times":1}]}"#,
    )
    .await;
    let w = start_worker(&e, sms_config()).await;
    let id = add(&e, &data("trial")).await;
    let (state, h) = finished(&e, &id).await;
    assert_eq!(state, "completed");
    // recognised as a look-alike: never resent (no receipt can prove it here: a person is told)
    assert_eq!(returnvalue(&h)["status"], "unknown", "{h:?}");
    assert_eq!(
        e.sim.store.all().len(),
        1,
        "the prefixed message was recognised"
    );
    w.stop().await;
}

/// A Messaging Service that rewrites what it stores (Smart Encoding, link shortening, an
/// appended opt-out line) and sends from a pool of numbers, with 30 % of create answers lost and
/// no status callback ever reaching ringback: every lost answer's lookup must still recognise
/// the message. 0 duplicates, 0 lost.
#[tokio::test]
async fn a_messaging_service_that_rewrites_bodies_never_causes_a_second_text() {
    let e = env(
        "rewrite",
        r#"{"create":[{"rate":0.3,"fault":"create_then_drop"}],
            "rewrite":{"smart_encoding":true,"shorten_urls":true,"append":" Reply STOP to opt out."},
            "service_pool":["+15550100001","+15550100002","+15550100003"]}"#,
    )
    .await;
    let twilio = ringback::twilio::TwilioConfig {
        sender: ringback::twilio::Sender::MessagingService(
            "MG0123456789abcdef0123456789abcdef".into(),
        ),
        ..twilio_config(&e.sim_base)
    };
    let w = start_worker_via(&e, sms_config(), twilio).await;
    let verdict = |run: &str| {
        format!(
            "Run {run} done \u{2014} the rollback\u{2019}s plan\u{2026} is ready: https://acme.dev/runs/{run}"
        )
    };
    let mut ids = vec![];
    for i in 0..30 {
        let run = format!("mg{i}");
        let data = serde_json::json!({"runId": run, "to": TO, "body": verdict(&run)}).to_string();
        ids.push((run, add(&e, &data).await));
    }
    for (_, id) in &ids {
        let (state, h) = finished(&e, id).await;
        assert_eq!(state, "completed", "{h:?}");
    }
    let all = e.sim.store.all();
    for (run, _) in &ids {
        let mine = all
            .iter()
            .filter(|m| {
                m.body
                    .as_deref()
                    .is_some_and(|b| b.starts_with(&format!("Run {run} done -")))
            })
            .count();
        assert_eq!(mine, 1, "{run} texted once");
    }
    assert_eq!(all.len(), 30, "0 duplicates, 0 lost");
    assert!(
        all.iter()
            .all(|m| m.body.as_deref().is_some_and(|b| b.contains("twil.io"))),
        "Twilio's stored bodies were rewritten"
    );
    w.stop().await;
}

#[tokio::test]
async fn sigterm_never_cuts_a_sweep_send_before_its_sent_marker() {
    // Twilio takes the message at once and answers 1.5 s later.
    let e = env(
        "sweep-shutdown",
        r#"{"create":[{"fault":"slow","delay_ms":1500}]}"#,
    )
    .await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    // An orphan: claimed by a worker that is gone, no job behind it.
    let w = window(&e, conn, 200);
    w.claim("sd", "gone", None, "j", "w", TO, "", &body("sd"))
        .await
        .unwrap();
    let worker = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[
            ("TWILIO_TIMEOUT_MS", "3000"),
            ("RINGBACK_PENDING_TTL_MS", "6000"),
        ],
    );
    // The sweep resolves it (dead after 6 s, no message found) and sends: SIGTERM mid-call.
    wait_for(
        Duration::from_secs(30),
        "the sweep's create to reach Twilio",
        || async { (texts(&e, "sd") == 1).then_some(()) },
    )
    .await;
    let pid = worker.0.id().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = wait_exit(worker, Duration::from_secs(20)).await;
    assert!(status.success(), "a clean stop: {status:?}");
    let mut c = e.redis.conn().await;
    let v: String = c.get(claim_key("sd")).await.unwrap();
    assert!(
        v.starts_with("sent:SM"),
        "the send finished with its marker before the process exited: {v}"
    );
    assert_eq!(texts(&e, "sd"), 1);
}

/// Put a job the stall limit failed straight into the failed set, scored `score` (ms).
async fn stall_failed(e: &Env, c: &mut redis::aio::MultiplexedConnection, id: &str, score: i64) {
    stall_failed_named(e, c, id, score, "agent-callback").await;
}

/// [`stall_failed`], for a job of `name`.
async fn stall_failed_named(
    e: &Env,
    c: &mut redis::aio::MultiplexedConnection,
    id: &str,
    score: i64,
    name: &str,
) {
    let _: () = redis::cmd("HSET")
        .arg(e.keys.job(id))
        .arg("name")
        .arg(name)
        .arg("data")
        .arg(data(&format!("scan-{id}")))
        .arg("failedReason")
        .arg(ringback::callbacks::orphans::STALLED_LIMIT_REASON)
        .query_async(c)
        .await
        .unwrap();
    let _: () = c.zadd(e.keys.failed(), id, score).await.unwrap();
}

#[tokio::test]
async fn the_stall_failure_scan_neither_sticks_on_equal_scores_nor_skips_one_scored_late() {
    let e = env("scan-cursor", "").await;
    let mut c = e.redis.conn().await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(&e, conn, sms_config());
    // 450 failures finished in the same millisecond: more than two pages of one score
    let at = 1_700_000_000_000i64;
    for i in 0..450 {
        stall_failed(&e, &mut c, &format!("eq{i:03}"), at).await;
    }
    let mut adopted = 0;
    for _ in 0..5 {
        adopted += ringback::callbacks::orphans::adopt_stall_failures(&p)
            .await
            .unwrap();
    }
    assert_eq!(adopted, 450, "every failure of the one score adopted");
    // one scored later, then one scored below the cursor (another host's clock, 2 s behind)
    stall_failed(&e, &mut c, "later", at + 5_000).await;
    assert_eq!(
        ringback::callbacks::orphans::adopt_stall_failures(&p)
            .await
            .unwrap(),
        1
    );
    stall_failed(&e, &mut c, "behind", at + 3_000).await;
    assert_eq!(
        ringback::callbacks::orphans::adopt_stall_failures(&p)
            .await
            .unwrap(),
        1,
        "a failure scored below the cursor is still adopted"
    );
    // and nothing twice
    assert_eq!(
        ringback::callbacks::orphans::adopt_stall_failures(&p)
            .await
            .unwrap(),
        0
    );
    let open: usize = c
        .zcard(ringback::store::keys::open_attempts(
            &sms_config().claim_prefix,
        ))
        .await
        .unwrap();
    assert_eq!(open, 452);
}

/// Stall-limit adoption takes callbacks only: a job of another name that the stall limit
/// failed is another worker's, even when its data has a `to` and a `body`; never texted.
#[tokio::test]
async fn stall_limit_adoption_leaves_jobs_of_other_names_alone() {
    let e = env("scan-names", "").await;
    let mut c = e.redis.conn().await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let p = processor(&e, conn, sms_config());
    let at = 1_700_000_000_000i64;
    stall_failed_named(&e, &mut c, "report-1", at, "weekly-report").await;
    stall_failed_named(&e, &mut c, "cb-1", at + 1, "agent-callback").await;
    let adopted = ringback::callbacks::orphans::adopt_stall_failures(&p)
        .await
        .unwrap();
    assert_eq!(adopted, 1, "the callback only");
    let open = p.window().open_runs().await.unwrap();
    assert_eq!(open, ["scan-cb-1"], "{open:?}");
}

/// A question's expiry is a time on Redis's clock, whatever the clock of the worker that asks
/// it: `serve` judges each reply against Redis's clock, so a worker an hour behind must not
/// close the question an hour early (nor one ahead keep it open late).
#[tokio::test]
async fn a_questions_expiry_is_on_redis_clock_whatever_the_workers() {
    let e = env("question-clock", "").await;
    // one Redis, laid out as one: the Cluster layout dates its claim intent by the worker's
    // clock, which this test puts an hour behind
    let mut cmd = ringback_command(&e, "worker", Timings::Compressed);
    cmd.env("RINGBACK_CLOCK_SKEW_MS", "-3600000")
        .env_remove("RINGBACK_DRILL_PER_SLOT");
    let w = Proc(cmd.spawn().expect("ringback binary"));
    let data = serde_json::json!({"runId": "qc1", "to": TO, "body": "Approve?", "expectReply": true, "replyWithin": "2h"});
    let id = add(&e, &data.to_string()).await;
    assert_eq!(finished(&e, &id).await.0, "completed");
    drop(w);
    let mut c = e.redis.conn().await;
    let q: String = c
        .get(ringback::store::keys::question("agent-callback:", "qc1"))
        .await
        .unwrap();
    let q: serde_json::Value = serde_json::from_str(&q).unwrap();
    let until = q["until"].as_i64().unwrap();
    let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut c).await.unwrap();
    let redis_now = secs * 1000 + micros / 1000;
    let open_for = until - redis_now;
    assert!(
        (2 * 3_600_000 - 60_000..=2 * 3_600_000).contains(&open_for),
        "open for {open_for} ms on Redis's clock, not 2 h"
    );
}

/// A worker whose clock is an hour behind Redis's, given the same run twice at once and another
/// run once: the second job waits for the first attempt (busy) and comes back after the wait it
/// was told, never after the clocks' difference too; every job finishes, one text per run. (In
/// the Cluster layout too, `RINGBACK_DRILL_PER_SLOT=1`, where a claim may answer busy for its
/// own index intent.)
#[tokio::test]
async fn a_worker_an_hour_behind_finishes_a_run_added_twice() {
    let e = env("skew-twice", "").await;
    let first = add(&e, &data("skew-twice-1")).await;
    let second = add(&e, &data("skew-twice-1")).await;
    let once = add(&e, &data("skew-once-1")).await;
    let _w = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[("RINGBACK_CLOCK_SKEW_MS", "-3600000")],
    );
    for id in [&first, &second, &once] {
        let (state, h) = finished_within(&e, id, Duration::from_secs(30)).await;
        assert_eq!(state, "completed", "{h:?}");
    }
    assert_eq!(texts(&e, "skew-twice-1"), 1);
    assert_eq!(texts(&e, "skew-once-1"), 1);
}

/// Liveness by each worker's own interval: a worker sweeping every 5 s (heartbeats 5 s apart)
/// is alive between its beats, also to a `drain` whose own poll is 200 ms (which alone would
/// call it dead 3 s after a beat): the drain refuses, whenever it runs.
#[tokio::test]
async fn drain_judges_a_worker_by_its_own_heartbeat_interval() {
    let e = env("drain-interval", "").await;
    let _slow = spawn_worker(
        &e,
        None,
        Timings::Production,
        &[
            ("RINGBACK_RECONCILE_POLL_MS", "5000"),
            ("RINGBACK_RECONCILE_WINDOW_MS", "10000"),
            ("RINGBACK_WORKER_NAME", "rb-slow-beat"),
        ],
    );
    let c = e.redis.conn().await;
    let workers = ringback::store::keys::ringback_workers("agent-callback:");
    // past 3.3 s after one of its beats, before its next
    let beat = wait_for(T, "a heartbeat 3.3 s old", || {
        let (mut c, workers) = (c.clone(), workers.clone());
        async move {
            let beats: Vec<(String, f64)> = c.zrange_withscores(&workers, 0, -1).await.unwrap();
            let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut c).await.unwrap();
            let now = secs * 1000 + micros / 1000;
            beats
                .iter()
                .find(|(m, at)| {
                    m.contains("rb-slow-beat") && (3300..4300).contains(&(now - *at as i64))
                })
                .map(|(m, _)| m.clone())
        }
    })
    .await;
    let refused = ringback_command(&e, "drain", Timings::Production)
        .arg("--timeout-ms")
        .arg("2000")
        .stderr(std::process::Stdio::piped())
        .output()
        .unwrap();
    let why = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{beat} is alive: {why}");
    assert!(why.contains("rb-slow-beat"), "names it: {why}");
}

/// A worker keeps beating once Redis answers again: after Redis paused every client for 4 s
/// (a slow fork, a failover that holds writes), its heartbeat is fresh again within a second,
/// so `drain` never takes a live worker for a dead one.
#[tokio::test]
async fn a_worker_beats_again_at_once_after_redis_paused() {
    let e = env("beat-after-pause", "").await;
    let _w = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[
            ("RINGBACK_CONCURRENCY", "1"),
            ("RINGBACK_DRAIN_DELAY_MS", "5000"),
        ],
    );
    let c = e.redis.conn().await;
    let workers = ringback::store::keys::ringback_workers("agent-callback:");
    let redis_now = |mut c: redis::aio::MultiplexedConnection| async move {
        let (secs, micros): (i64, i64) = redis::cmd("TIME").query_async(&mut c).await.unwrap();
        secs * 1000 + micros / 1000
    };
    let last_beat = |mut c: redis::aio::MultiplexedConnection, workers: String| async move {
        let beats: Vec<(String, f64)> = c.zrange_withscores(&workers, 0, -1).await.unwrap();
        beats.iter().map(|(_, at)| *at as i64).max()
    };
    wait_for(T, "a first heartbeat", || {
        let (c, workers) = (c.clone(), workers.clone());
        last_beat(c, workers)
    })
    .await;
    let mut admin = e.redis.conn().await;
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(4000)
        .arg("ALL")
        .query_async(&mut admin)
        .await
        .unwrap();
    // past the pause
    tokio::time::sleep(Duration::from_millis(4300)).await;
    let resumed = redis_now(c.clone()).await;
    let beat = wait_for(
        Duration::from_secs(10),
        "a heartbeat after the pause",
        || {
            let (c, workers) = (c.clone(), workers.clone());
            async move { last_beat(c, workers).await.filter(|&at| at > resumed) }
        },
    )
    .await;
    let now = redis_now(c.clone()).await;
    assert!(
        beat - resumed < 1000,
        "beat {} ms after Redis answered again (now +{} ms)",
        beat - resumed,
        now - resumed
    );
}

/// A worker kept from beating past its liveness window (its host starved, or Redis paused
/// longer than the window and answering the drain before the worker's queued beat) is not
/// taken for dead: a drain started then waits one more of its windows, sees it beat again,
/// and refuses.
#[tokio::test]
async fn drain_waits_one_window_for_a_worker_that_just_stopped_beating() {
    let e = env("drain-lapsed", "").await;
    let w = spawn_worker(
        &e,
        None,
        Timings::Compressed,
        &[("RINGBACK_WORKER_NAME", "rb-starved")],
    );
    let pid = w.0.id().to_string();
    let c = e.redis.conn().await;
    let workers = ringback::store::keys::ringback_workers("agent-callback:");
    wait_for(T, "a first heartbeat", || {
        let (mut c, workers) = (c.clone(), workers.clone());
        async move {
            let members: Vec<String> = c.zrange(&workers, 0, -1).await.unwrap();
            members
                .iter()
                .any(|m| m.contains("rb-starved"))
                .then_some(())
        }
    })
    .await;
    // frozen past its window (3 s at these settings)
    let signal = |sig: &str| {
        assert!(
            std::process::Command::new("kill")
                .args([sig, &pid])
                .status()
                .unwrap()
                .success()
        );
    };
    signal("-STOP");
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let drain = ringback_command(&e, "drain", Timings::Compressed)
        .arg("--timeout-ms")
        .arg("20000")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1000)).await;
    signal("-CONT");
    let out = tokio::task::spawn_blocking(move || drain.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    let why = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{why}");
    assert!(why.contains("rb-starved"), "names it: {why}");
    drop(w);
}
