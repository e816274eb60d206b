//! The escalation ladder's record against a real redis-server, in both layouts (one Redis, and
//! the Cluster's one slot per call): actors racing to start steps claim each step once and end
//! an exhausted ladder once with its escalation due; an acknowledgement stops a climbing ladder
//! once, no step starts after it, the calls still ringing are named, and a call created after
//! it is to be hung up (the design `model/ladder.pml` checks).

use crate::common;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use common::RedisServer;
use ringback::callbacks::ladder::plan::{Plan, PlannedStep};
use ringback::callbacks::ladder::record::{Ack, Advance, Channel, LadderRecord, Marked};
use ringback::store::scripts::RoundTrips;
use ringback::store::slots::Topology;

const PREFIX: &str = "agent-callback:";
const DAY: Duration = Duration::from_secs(86_400);

/// A plan of `steps` steps (calls on odd steps), for the record's tests.
fn plan(steps: usize) -> Plan {
    Plan {
        steps: (1..=steps)
            .map(|k| PlannedStep {
                channel: if k % 2 == 1 { "call" } else { "text" }.into(),
                to: format!("+1555000000{k}"),
            })
            .collect(),
        step_wait_ms: 0,
        recipient: "+15550000001".into(),
        body: "Run finished.".into(),
        choices: vec![],
        question: false,
        urgent: false,
        time_zone: None,
    }
}

async fn record(server: &RedisServer, topology: Topology) -> LadderRecord {
    let client = redis::Client::open(server.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    LadderRecord::new(conn, Arc::new(RoundTrips::default()), PREFIX, topology, DAY)
}

/// Climb `run`'s ladder as one actor: read where it stands, try the next step, send a claimed
/// one (a call for odd steps); until it ended. Returns what this actor did.
async fn climb(l: LadderRecord, run: String) -> (Vec<u32>, usize, Vec<Marked>) {
    let (mut claimed, mut exhausted, mut marks) = (vec![], 0, vec![]);
    loop {
        let read: u32 = l
            .read(&run)
            .await
            .unwrap()
            .get("step")
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        match l.advance(&run, read, Duration::ZERO).await.unwrap() {
            Advance::Claimed { step, token, .. } => {
                claimed.push(step);
                tokio::task::yield_now().await;
                let sid = format!("CA{step:032x}");
                marks.push(
                    l.mark(&run, step, &token, &sid, step % 2 == 1, false)
                        .await
                        .unwrap(),
                );
            }
            Advance::Exhausted => exhausted += 1,
            Advance::Moved(_) | Advance::Early(_) => tokio::task::yield_now().await,
            Advance::Stopped | Advance::Over | Advance::None => {
                return (claimed, exhausted, marks);
            }
        }
    }
}

/// The run's score in the ladder sweep's schedule.
async fn due_at(server: &RedisServer, run: &str) -> Option<f64> {
    redis::cmd("ZSCORE")
        .arg(ringback::store::keys::ladder_due(PREFIX))
        .arg(run)
        .query_async(&mut server.conn().await)
        .await
        .unwrap()
}

#[tokio::test]
async fn racing_actors_start_each_step_once_and_end_an_exhausted_ladder_once() {
    let server = RedisServer::start();
    for topology in [Topology::Fused, Topology::PerSlot] {
        let l = record(&server, topology).await;
        for r in 0..20 {
            let run = format!("race-{topology:?}-{r}");
            assert!(l.start(&run, 4, Duration::ZERO, &plan(4)).await.unwrap());
            assert!(
                !l.start(&run, 4, Duration::ZERO, &plan(4)).await.unwrap(),
                "opened once"
            );
            assert!(
                due_at(&server, &run).await.is_some_and(|d| d > 0.0),
                "{run}: indexed at its due time"
            );
            let actors: Vec<_> = (0..3)
                .map(|_| tokio::spawn(climb(l.clone(), run.clone())))
                .collect();
            let (mut claimed, mut exhausted) = (vec![], 0);
            for a in actors {
                let (c, e, marks) = a.await.unwrap();
                claimed.extend(c);
                exhausted += e;
                assert!(marks.iter().all(|m| *m == Marked::Marked), "{marks:?}");
            }
            claimed.sort();
            assert_eq!(claimed, [1, 2, 3, 4], "{run}: each step started once");
            assert_eq!(exhausted, 1, "{run}: exhausted once");
            let rec = l.read(&run).await.unwrap();
            assert_eq!(rec["state"], "exhausted");
            assert!(rec.contains_key("escalate"), "the escalation is due");
            assert!(
                due_at(&server, &run).await.is_some(),
                "{run}: indexed until its escalation is added"
            );
            assert!(l.escalated(&run).await.unwrap());
            assert!(!l.escalated(&run).await.unwrap(), "cleared once");
            l.unindex(&run).await.unwrap();
            assert_eq!(
                l.advance(&run, 4, Duration::ZERO).await.unwrap(),
                Advance::Over
            );
            assert_eq!(
                due_at(&server, &run).await,
                None,
                "{run}: an ended ladder leaves the schedule"
            );
        }
    }
}

#[tokio::test]
async fn an_acknowledgement_stops_the_ladder_once_and_no_step_starts_after_it() {
    let server = RedisServer::start();
    for topology in [Topology::Fused, Topology::PerSlot] {
        let l = record(&server, topology).await;
        for r in 0..20 {
            let run = format!("ack-{topology:?}-{r}");
            l.start(&run, 4, Duration::ZERO, &plan(4)).await.unwrap();
            let actors: Vec<_> = (0..3)
                .map(|_| tokio::spawn(climb(l.clone(), run.clone())))
                .collect();
            // the person answers on two channels at once, somewhere in the climb
            for _ in 0..r % 4 {
                tokio::task::yield_now().await;
            }
            let (a, b) = tokio::join!(
                l.ack(&run, Channel::Reply, "+15550000001"),
                l.ack(&run, Channel::Keypad, "+15550000001")
            );
            let acks = [a.unwrap(), b.unwrap()];
            let stopped = acks.iter().filter(|a| matches!(a, Ack::Stopped(_))).count();
            let (mut claimed, mut exhausted) = (vec![], 0);
            for a in actors {
                let (c, e, _) = a.await.unwrap();
                claimed.extend(c);
                exhausted += e;
            }
            let rec = l.read(&run).await.unwrap();
            if exhausted == 1 {
                // the ladder ran out before either answer: both are late, the escalation stands
                assert_eq!(stopped, 0, "{run}: {acks:?}");
                assert_eq!(rec["state"], "exhausted");
                continue;
            }
            assert_eq!(
                stopped, 1,
                "{run}: the first acknowledgement wins: {acks:?}"
            );
            assert!(
                acks.iter().any(|a| *a == Ack::Late("stopped".into())),
                "{acks:?}"
            );
            assert_eq!(rec["state"], "stopped");
            assert!(
                !rec.contains_key("escalate"),
                "{run}: no escalation for a stopped ladder"
            );
            claimed.sort();
            let started: u32 = rec["step"].parse().unwrap();
            assert_eq!(
                claimed,
                (1..=started).collect::<Vec<_>>(),
                "{run}: once each, none after the stop"
            );
            assert_eq!(
                l.advance(&run, started, Duration::ZERO).await.unwrap(),
                Advance::Stopped
            );
            // the calls it named were the ringing ones marked before the stop
            let Ack::Stopped(ringing) = acks.iter().find(|a| matches!(a, Ack::Stopped(_))).unwrap()
            else {
                unreachable!()
            };
            assert!(
                ringing.iter().all(|sid| rec.values().any(|v| v == sid)),
                "{ringing:?}"
            );
        }
    }
}

/// A ladder past its last step runs out only once its calls ended: a call still ringing holds
/// it (looked at again shortly) until its end or the bound; a final status that came before the
/// create's mark leaves nothing ringing.
#[tokio::test]
async fn a_ladder_runs_out_after_its_last_call_ended_or_its_bound() {
    let server = RedisServer::start();
    let l = record(&server, Topology::Fused)
        .await
        .with_call_end_wait(Duration::from_secs(60));
    let sid = |n: u32| format!("CA{n:032x}");
    for (run, status_first) in [("rings", false), ("ended-first", true)] {
        l.start(run, 1, Duration::ZERO, &plan(1)).await.unwrap();
        let Advance::Claimed { step, token, .. } = l.advance(run, 0, Duration::ZERO).await.unwrap()
        else {
            panic!("{run}: step 1 claimed")
        };
        if status_first {
            // Twilio's final status arrives before the create's answer is marked
            l.call_status(run, step, &sid(9), "no-answer", None, Some(3))
                .await
                .unwrap();
        }
        l.mark(
            run,
            step,
            &token,
            &sid(if status_first { 9 } else { 8 }),
            true,
            false,
        )
        .await
        .unwrap();
    }
    // the call still rings: looked at again within 2 s, not exhausted
    let Advance::Early(at) = l.advance("rings", 1, Duration::ZERO).await.unwrap() else {
        panic!("a ringing call holds the ladder")
    };
    assert!(
        at <= ringback::clock::now_ms() + 2_500,
        "looked at again shortly"
    );
    assert_eq!(l.read("rings").await.unwrap()["state"], "climbing");
    l.call_status("rings", 1, &sid(8), "completed", None, Some(4))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(2100)).await;
    assert_eq!(
        l.advance("rings", 1, Duration::ZERO).await.unwrap(),
        Advance::Exhausted,
        "ended once its call ended"
    );
    assert_eq!(
        l.advance("ended-first", 1, Duration::ZERO).await.unwrap(),
        Advance::Exhausted,
        "a call whose end came first never rings"
    );
    // without keys (no webhooks) the bound is zero: exhausted at the due
    let plain = record(&server, Topology::Fused).await;
    plain
        .start("no-keys", 1, Duration::ZERO, &plan(1))
        .await
        .unwrap();
    let Advance::Claimed { step, token, .. } =
        plain.advance("no-keys", 0, Duration::ZERO).await.unwrap()
    else {
        panic!("step 1 claimed")
    };
    plain
        .mark("no-keys", step, &token, &sid(10), true, false)
        .await
        .unwrap();
    assert_eq!(
        plain.advance("no-keys", 1, Duration::ZERO).await.unwrap(),
        Advance::Exhausted
    );
}

#[tokio::test]
async fn a_call_created_after_the_stop_is_hung_up_and_early_or_moved_steps_wait() {
    let server = RedisServer::start();
    let l = record(&server, Topology::Fused).await;
    let mut c = server.conn().await;

    // due in a minute: too early; a stale read: moved
    l.start("slow", 2, Duration::from_secs(60), &plan(2))
        .await
        .unwrap();
    assert!(matches!(
        l.advance("slow", 0, Duration::ZERO).await.unwrap(),
        Advance::Early(_)
    ));
    let due: Option<f64> = redis::cmd("ZSCORE")
        .arg(ringback::store::keys::ladder_due(PREFIX))
        .arg("slow")
        .query_async(&mut c)
        .await
        .unwrap();
    assert!(due.is_some(), "the ladder sweep's schedule names it");

    l.start("late-call", 2, Duration::ZERO, &plan(2))
        .await
        .unwrap();
    let Advance::Claimed { step, token, .. } =
        l.advance("late-call", 0, Duration::ZERO).await.unwrap()
    else {
        panic!("step 1 claimed")
    };
    assert_eq!(step, 1);
    assert_eq!(
        l.advance("late-call", 0, Duration::ZERO).await.unwrap(),
        Advance::Moved(1)
    );
    // the person answers while the call is being created: the create lands after the stop
    assert_eq!(
        l.ack("late-call", Channel::Reply, "+15550000001")
            .await
            .unwrap(),
        Ack::Stopped(vec![]),
        "nothing rang yet"
    );
    let sid = format!("CA{:032x}", 7);
    assert_eq!(
        l.mark("late-call", 1, &token, &sid, true, false)
            .await
            .unwrap(),
        Marked::End
    );
    assert_eq!(
        l.mark("late-call", 1, "other", &sid, true, false)
            .await
            .unwrap(),
        Marked::NotOurs
    );

    // a call ringing at the stop is named by it
    l.start("ringing", 2, Duration::ZERO, &plan(2))
        .await
        .unwrap();
    let Advance::Claimed { token, .. } = l.advance("ringing", 0, Duration::ZERO).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(
        l.mark("ringing", 1, &token, &sid, true, false)
            .await
            .unwrap(),
        Marked::Marked
    );
    assert_eq!(
        l.ack("ringing", Channel::Delivered, "+15550000001")
            .await
            .unwrap(),
        Ack::Stopped(vec![sid.clone()])
    );
    let rec: HashMap<String, String> = l.read("ringing").await.unwrap();
    assert_eq!(
        (rec["acked_by"].as_str(), rec["acked_who"].as_str()),
        ("delivered", "+15550000001")
    );
    let due: Option<f64> = redis::cmd("ZSCORE")
        .arg(ringback::store::keys::ladder_due(PREFIX))
        .arg("ringing")
        .query_async(&mut c)
        .await
        .unwrap();
    assert_eq!(due, None, "a stopped ladder leaves the schedule");
    assert_eq!(l.ack("none", Channel::Reply, "x").await.unwrap(), Ack::None);
    assert_eq!(
        l.advance("none", 0, Duration::ZERO).await.unwrap(),
        Advance::None
    );
}

/// A call's status callbacks arrive shuffled and repeated: ranked by status, then by Twilio's
/// `SequenceNumber`; a repeat or an earlier one arriving late changes nothing.
#[tokio::test]
async fn call_statuses_rank_by_status_then_sequence_and_repeats_change_nothing() {
    let server = RedisServer::start();
    let l = record(&server, Topology::Fused).await;
    l.start("ranks", 2, Duration::ZERO, &plan(2)).await.unwrap();
    let sid = "CA00000000000000000000000000000009";
    let mut applied = vec![];
    for (status, seq) in [
        ("ringing", Some(1)),
        ("initiated", Some(0)),
        ("ringing", Some(1)),
        ("in-progress", Some(2)),
        ("completed", Some(3)),
        ("completed", Some(3)),
        ("in-progress", None),
    ] {
        let a = l
            .call_status("ranks", 1, sid, status, None, seq)
            .await
            .unwrap();
        applied.push(a.applied);
    }
    assert_eq!(applied, [true, false, false, true, true, false, false]);
    let rec = l.read("ranks").await.unwrap();
    assert_eq!(rec["status:1"], "completed");
    assert_eq!(rec["callsid:1"], sid);
}

/// A delivered receipt asks for the ladder's acknowledgement only when its run has a ladder or
/// is a ladder step's text: the receipt's one call says which, so a plain callback's receipt
/// costs no call more.
#[tokio::test]
async fn a_receipt_says_whether_its_run_has_a_ladder() {
    let server = RedisServer::start();
    for topology in [Topology::Fused, Topology::PerSlot] {
        let l = record(&server, topology).await;
        let with = format!("with-ladder-{topology:?}");
        l.start(&with, 1, Duration::ZERO, &plan(1)).await.unwrap();
        let client = redis::Client::open(server.url()).unwrap();
        let conn = ringback::store::connection::commands(&client)
            .await
            .unwrap();
        let (receipts, _) = ringback::callbacks::sms::SmsConfig::default().after_send(
            conn,
            "bull",
            "receipts-ladder",
        );
        let receipts = receipts.with_topology(topology);
        let mut ladder = vec![];
        for run in [
            with.clone(),
            format!("plain-{topology:?}"),
            format!("{with}:ladder:2"),
        ] {
            let applied = receipts
                .apply(&ringback::callbacks::receipts::StatusUpdate {
                    run_id: run,
                    sid: "SM00000000000000000000000000000001".into(),
                    status: "delivered".into(),
                    error_code: None,
                    raw_dlr_done_date: None,
                    source: ringback::callbacks::receipts::Source::Webhook,
                    repeat_id: None,
                    attempt: None,
                })
                .await
                .unwrap();
            ladder.push(applied.ladder);
        }
        assert_eq!(ladder, [true, false, true], "{topology:?}");
    }
}

// The ladder climbed end to end: a worker (with its sweeps) texting and calling through the
// simulator, `serve` taking the receipts, replies, keypad answers and call statuses, signed.

mod climbing {
    use super::common::callbacks::{self as cb, Env, TO};
    use super::common::wait_for;
    use redis::AsyncCommands;
    use ringback::store::keys::QueueKeys;
    use std::collections::BTreeMap;
    use std::time::Duration;

    const ONCALL: &str = "+15558675311";
    const SOON: Duration = Duration::from_secs(30);

    /// A ladder of one call to the recipient, `wait_ms` long; a question when it has `choices`.
    fn one_call(wait_ms: u64, choices: &[&str]) -> ringback::callbacks::ladder::plan::Plan {
        ringback::callbacks::ladder::plan::Plan {
            steps: vec![ringback::callbacks::ladder::plan::PlannedStep {
                channel: "call".into(),
                to: TO.into(),
            }],
            step_wait_ms: wait_ms,
            recipient: TO.into(),
            body: "Run finished: ship it?".into(),
            choices: choices.iter().map(|c| c.to_string()).collect(),
            question: !choices.is_empty(),
            urgent: false,
            time_zone: None,
        }
    }

    /// `serve` (receipts, replies, the ladder's webhooks) and a worker with its sweeps.
    async fn serve_and_climb(e: &Env) -> Fleet {
        serve_and_climb_with(e, cb::sms_config()).await
    }

    /// [`serve_and_climb`] with settings of the test's own, at the defaults' order and
    /// concurrency: a claim shorter than the job's lock (1.5 s against 3 s, as 15 s against
    /// 30 s), one job at a time, and a worker that waits its full default drain delay when the
    /// queue is empty (the ladder's sweep must climb while it waits).
    async fn serve_and_climb_with(e: &Env, mut sms: ringback::callbacks::sms::SmsConfig) -> Fleet {
        sms.pending_ttl = Duration::from_millis(1500);
        cb::serve_receipts(e, &mut sms).await;
        let client = redis::Client::open(e.redis.url()).unwrap();
        let conn = ringback::store::connection::commands(&client)
            .await
            .unwrap();
        let processor = cb::processor(e, conn, sms);
        let defaults = ringback::WorkerConfig::default();
        let config = ringback::WorkerConfig {
            concurrency: defaults.concurrency,
            drain_delay: defaults.drain_delay,
            lock_duration: Duration::from_millis(3000),
            lock_renew_time: Duration::from_millis(1500),
            stalled_interval: Duration::from_millis(1000),
            ..cb::worker_config(e)
        };
        Fleet {
            ringback: cb::run_worker_with(config, processor),
            legacy: None,
        }
    }

    /// The ringback worker, and the legacy Node worker once it joined.
    struct Fleet {
        ringback: cb::Looping,
        legacy: Option<Legacy>,
    }

    /// The legacy Node worker's process, ended with the test.
    struct Legacy(std::process::Child);

    impl Drop for Legacy {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    impl Fleet {
        /// The legacy Node worker joins the queue (it claims a run's text with `SET NX` on
        /// the keys ringback claims): it shares the ladder's step texts from now. It joins once
        /// the callbacks were texted, as in a cutover: a callback it took would get no ladder.
        fn with_legacy(&mut self, e: &Env) {
            let root = env!("CARGO_MANIFEST_DIR");
            let child = std::process::Command::new("node")
                .arg(format!("{root}/node-harness/bin/legacy-worker.js"))
                .env("REDIS_URL", e.redis.url())
                .env("RINGBACK_QUEUE", &e.queue)
                .env("RINGBACK_PREFIX", "bull")
                .env("RINGBACK_CONCURRENCY", "1")
                .env("TWILIO_ACCOUNT_SID", cb::ACCOUNT)
                .env("TWILIO_AUTH_TOKEN", cb::TOKEN)
                .env("TWILIO_FROM", "+15005550006")
                .env("TWILIO_API_BASE", &e.sim_base)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("node runs (the Node harness is installed by scripts/lib.sh ensure_node_harness)");
            self.legacy = Some(Legacy(child));
        }

        async fn stop(mut self) {
            if let Some(legacy) = &mut self.legacy {
                let exited = legacy.0.try_wait().unwrap();
                assert!(
                    exited.is_none(),
                    "the legacy worker ran to the end: {exited:?}"
                );
            }
            drop(self.legacy);
            self.ringback.stop().await;
        }
    }

    fn question(run: &str, within: &str) -> String {
        serde_json::json!({
            "runId": run, "to": TO, "body": "Deploy build 7?", "expectReply": true,
            "replyWithin": within, "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1s", "stepWait": "1s", "then": [ONCALL]},
        })
        .to_string()
    }

    /// Every job waiting in `queue` (`replies`, `escalations`), data by id.
    async fn jobs(e: &Env, queue: &str) -> BTreeMap<String, serde_json::Value> {
        let mut c = e.redis.conn().await;
        let k = QueueKeys::new("bull", &format!("{}-{queue}", e.queue));
        let ids: Vec<String> = c.lrange(k.wait(), 0, -1).await.unwrap();
        let mut out = BTreeMap::new();
        for id in ids {
            let data: String = c.hget(k.job(&id), "data").await.unwrap();
            out.insert(id, serde_json::from_str(&data).unwrap());
        }
        out
    }

    /// The first job on the replies queue, waited for.
    async fn first_reply(e: &Env) -> serde_json::Value {
        wait_for(SOON, "a job on the replies queue", || async {
            jobs(e, "replies").await.into_values().next()
        })
        .await
    }

    /// Wait until `run`'s first step is marked sent as a call; the recipient was called once,
    /// that call, and is not called again.
    async fn called_once(e: &Env, run: &str, what: &str) {
        let rec = wait_for(SOON, what, || async {
            let rec = ladder(e, run).await;
            rec.get("claim:1")
                .is_some_and(|c| c.starts_with("sent:CA"))
                .then_some(rec)
        })
        .await;
        let calls = e.sim.calls.to(TO);
        assert_eq!(calls.len(), 1, "{what}: never called twice");
        assert_eq!(rec["claim:1"], format!("sent:{}", calls[0].call.sid));
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert_eq!(e.sim.calls.to(TO).len(), 1, "{what}: not called again");
    }

    fn texts_to(e: &Env, to: &str) -> usize {
        e.sim
            .store
            .all()
            .iter()
            .filter(|m| m.to.as_deref() == Some(to))
            .count()
    }

    async fn ladder(e: &Env, run: &str) -> std::collections::HashMap<String, String> {
        e.redis
            .conn()
            .await
            .hgetall(ringback::store::keys::ladder("agent-callback:", run))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn a_question_nobody_answers_calls_once_per_step_then_ends_in_no_answer_and_one_escalation()
     {
        let e = cb::env(
            "ladder-unanswered",
            &format!(
                r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer"}},{{"to":"{ONCALL}","outcome":"busy","shuffled":true,"duplicate":true}}]}}"#
            ),
        )
        .await;
        let mut worker = serve_and_climb(&e).await;
        let run = "unanswered-1";
        cb::add(&e, &question(run, "6s")).await;
        wait_for(SOON, "the callback texted", || async {
            (texts_to(&e, TO) == 1).then_some(())
        })
        .await;
        worker.with_legacy(&e);
        let replies = wait_for(SOON, "the no-answer job", || async {
            let j = jobs(&e, "replies").await;
            j.contains_key(&format!("no-answer:{run}")).then_some(j)
        })
        .await;
        assert_eq!(replies.len(), 1, "only the no-answer: {replies:?}");
        assert_eq!(replies[&format!("no-answer:{run}")]["matched"], "no-answer");
        let escalations = jobs(&e, "escalations").await;
        assert_eq!(
            escalations.keys().collect::<Vec<_>>(),
            [&format!("escalation:{run}")]
        );
        assert_eq!(
            escalations[&format!("escalation:{run}")]["kind"],
            "unacknowledged"
        );
        // nothing more comes: each step once
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(e.sim.calls.to(TO).len(), 1, "the recipient called once");
        assert_eq!(
            e.sim.calls.to(ONCALL).len(),
            1,
            "the next person called once"
        );
        assert_eq!(texts_to(&e, TO), 1, "the callback's text");
        assert_eq!(texts_to(&e, ONCALL), 1, "the next person texted once");
        let rec = ladder(&e, run).await;
        assert_eq!(rec["state"], "exhausted");
        assert!(!rec.contains_key("escalate"), "its escalation was added");
        assert!(
            rec["why:1"].contains("no-answer") && rec["why:3"].contains("busy"),
            "each call's outcome climbed it: {rec:?}"
        );
        assert_eq!(jobs(&e, "escalations").await.len(), 1);
        assert_eq!(jobs(&e, "replies").await.len(), 1);
        // `ringback status` tells it, step by step
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ringback"))
            .args(["status", run])
            .env_clear()
            .env("REDIS_URL", e.redis.url())
            .env("RINGBACK_QUEUE", &e.queue)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{stdout}");
        assert!(
            stdout.contains("ladder     exhausted: nobody acknowledged"),
            "{stdout}"
        );
        for line in [
            "step 1   call",
            "no-answer",
            "step 2   text",
            "step 3   call",
            "climbed: call busy",
        ] {
            assert!(stdout.contains(line), "{line}: {stdout}");
        }
        assert!(!stdout.contains(ONCALL), "numbers masked: {stdout}");
        worker.stop().await;
    }

    #[tokio::test]
    async fn a_keypad_answer_is_the_questions_answer_and_stops_the_ladder_once() {
        let e = cb::env(
            "ladder-keypad",
            &format!(r#"{{"calls":[{{"to":"{TO}","digits":"2","duplicate":true}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "keypad-1";
        cb::add(&e, &question(run, "1h")).await;
        let answer = first_reply(&e).await;
        assert_eq!(
            (
                &answer["runId"],
                &answer["text"],
                &answer["via"],
                &answer["matched"]
            ),
            (&run.into(), &"NO".into(), &"call".into(), &"answer".into())
        );
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "keypad")
        );
        assert_eq!(jobs(&e, "replies").await.len(), 1, "answered once");
        assert_eq!(e.sim.calls.to(TO).len(), 1);
        assert_eq!(texts_to(&e, ONCALL), 0, "no step after the answer");
        assert!(jobs(&e, "escalations").await.is_empty());
        worker.stop().await;
    }

    #[tokio::test]
    async fn a_delivered_text_acknowledges_a_plain_callback_before_any_call() {
        let e = cb::env("ladder-delivered", "").await;
        let worker = serve_and_climb(&e).await;
        let run = "delivered-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Run 9 finished.",
            "ladder": {"callAfter": "2s", "then": [ONCALL]},
        });
        cb::add(&e, &data.to_string()).await;
        let rec = wait_for(SOON, "the ladder stopped", || async {
            let rec = ladder(&e, run).await;
            (rec.get("state").map(String::as_str) == Some("stopped")).then_some(rec)
        })
        .await;
        assert_eq!(rec["acked_by"], "delivered");
        tokio::time::sleep(Duration::from_millis(3000)).await;
        assert!(e.sim.calls.all().is_empty(), "no call after the delivery");
        assert_eq!(texts_to(&e, ONCALL), 0);
        worker.stop().await;
    }

    /// A signed inbound message from `from`.
    /// `params` posted to `url`, signed as Twilio signs them; the status.
    async fn signed_post(url: &str, params: &[(&str, &str)]) -> u16 {
        let params: Vec<(String, String)> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let sig = ringback::twilio::signature::sign(cb::TOKEN, url, &params);
        reqwest::Client::new()
            .post(url)
            .header("X-Twilio-Signature", sig)
            .form(&params)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    }

    async fn reply(e: &Env, from: &str, sid: &str, body: &str) -> u16 {
        let url = e
            .status_callback
            .get()
            .unwrap()
            .replace("/webhook/status", "/webhook/inbound");
        let params = [
            ("MessageSid", sid),
            ("AccountSid", cb::ACCOUNT),
            ("From", from),
            ("To", "+15005550006"),
            ("Body", body),
            ("NumMedia", "0"),
        ];
        signed_post(&url, &params).await
    }

    #[tokio::test]
    async fn a_text_reply_while_the_call_rings_ends_the_call_and_the_ladder() {
        let e = cb::env(
            "ladder-reply",
            &format!(r#"{{"calls":[{{"to":"{TO}","step_ms":1500}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "reply-1";
        cb::add(&e, &question(run, "1h")).await;
        let call = wait_for(SOON, "the call ringing", || async {
            e.sim.calls.to(TO).into_iter().next()
        })
        .await;
        assert_eq!(reply(&e, TO, &format!("SM{:032x}", 1), "yes").await, 200);
        wait_for(SOON, "the call ended", || async {
            let c = e.sim.calls.get(&call.call.sid)?;
            (c.call.status.as_deref() == Some("completed")).then_some(())
        })
        .await;
        tokio::time::sleep(Duration::from_millis(3000)).await;
        let c = e.sim.calls.get(&call.call.sid).unwrap();
        assert!(c.gathered.is_empty(), "hung up before any key");
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "reply")
        );
        let replies = jobs(&e, "replies").await;
        assert_eq!(replies.len(), 1, "the text's answer alone: {replies:?}");
        assert_eq!(e.sim.calls.all().len(), 1);
        assert_eq!(texts_to(&e, ONCALL), 0);
        worker.stop().await;
    }

    /// The replies-queue jobs of `run` by what they were matched to (`answer`, `late`, …).
    async fn matched(e: &Env, run: &str) -> BTreeMap<String, Vec<serde_json::Value>> {
        let mut out: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
        for j in jobs(e, "replies").await.into_values() {
            if j["runId"] == run {
                let m = j["matched"].as_str().unwrap_or_default().to_string();
                out.entry(m).or_default().push(j);
            }
        }
        out
    }

    /// One question, one answer: the recipient does not pick up, the next person presses 2 on
    /// their call, then the recipient texts "YES". The key is the answer; the text is a late
    /// reply naming the run and who answered first, never a second answer.
    #[tokio::test]
    async fn a_key_from_the_next_person_then_the_recipients_text_is_one_answer_and_a_late_reply() {
        let e = cb::env(
            "ladder-two-answers",
            &format!(
                r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer"}},{{"to":"{ONCALL}","digits":"2"}}]}}"#
            ),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "two-answers-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Deploy build 7?", "expectReply": true,
            "replyWithin": "1h", "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1s", "stepWait": "1s", "then": [ONCALL]},
        });
        cb::add(&e, &data.to_string()).await;
        let answer = first_reply(&e).await;
        assert_eq!(
            [&answer["text"], &answer["via"], &answer["from"]],
            [
                &"NO".into(),
                &"call".into(),
                &serde_json::Value::from(ONCALL)
            ]
        );
        // more than the grace period after the key: a claim with no record would look void now
        tokio::time::sleep(ringback::callbacks::replies::PENDING_GRACE + Duration::from_secs(1))
            .await;
        assert_eq!(reply(&e, TO, &format!("SM{:032x}", 41), "YES").await, 200);
        let got = wait_for(
            SOON,
            "the recipient's text on the replies queue",
            || async {
                let m = matched(&e, run).await;
                m.contains_key("late").then_some(m)
            },
        )
        .await;
        assert_eq!(got["answer"].len(), 1, "one answer: {got:?}");
        let late = &got["late"][0];
        assert_eq!(late["text"], "YES");
        assert_eq!(late["firstAnswer"]["via"], "call", "{late}");
        assert_eq!(
            late["firstAnswer"]["id"],
            format!("call:{}", answer["callSid"].as_str().unwrap()),
            "{late}"
        );
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "keypad")
        );
        worker.stop().await;
    }

    /// An answer acknowledges its own run: the person answers another question of theirs (by
    /// its code) while a ladder climbs for the first; that ladder still calls them.
    #[tokio::test]
    async fn an_answer_to_one_question_leaves_another_questions_ladder_climbing() {
        let e = cb::env(
            "ladder-other-question",
            &format!(r#"{{"calls":[{{"to":"{TO}","digits":"1"}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let (q1, q2) = ("other-q1", "other-q2");
        let ask = |run: &str, ladder: serde_json::Value| {
            serde_json::json!({
                "runId": run, "to": TO, "body": format!("Question {run}?"), "expectReply": true,
                "replyWithin": "1h", "choices": ["YES", "NO"], "ladder": ladder,
            })
            .to_string()
        };
        cb::add(
            &e,
            &ask(q1, serde_json::json!({"callAfter": "4s", "then": []})),
        )
        .await;
        cb::add(&e, &ask(q2, serde_json::json!(false))).await;
        wait_for(SOON, "both questions texted", || async {
            (texts_to(&e, TO) == 2).then_some(())
        })
        .await;
        let q: String = e
            .redis
            .conn()
            .await
            .get(ringback::store::keys::question("agent-callback:", q2))
            .await
            .unwrap();
        let code = serde_json::from_str::<serde_json::Value>(&q).unwrap()["code"]
            .as_str()
            .unwrap()
            .to_string();
        let sms = format!("SM{:032x}", 51);
        assert_eq!(reply(&e, TO, &sms, &format!("{code} yes")).await, 200);
        let answered = wait_for(SOON, "q2's answer", || async {
            matched(&e, q2).await.remove("answer")
        })
        .await;
        assert_eq!(answered.len(), 1);
        assert_eq!(ladder(&e, q1).await["state"], "climbing", "q1 still climbs");
        // q1's ladder calls, and its key answers q1
        let got = wait_for(SOON, "q1 answered by its call", || async {
            matched(&e, q1).await.remove("answer")
        })
        .await;
        assert_eq!((got.len(), &got[0]["via"]), (1, &"call".into()));
        assert_eq!(e.sim.calls.to(TO).len(), 1);
        worker.stop().await;
    }

    /// A message that answers no question acknowledges a plain callback's ladder only where it
    /// is the one ladder still climbing that reached the sender.
    #[tokio::test]
    async fn an_uncoded_reply_stops_a_plain_ladder_only_when_it_is_the_only_one() {
        // no receipt comes: a delivered one would acknowledge a plain callback
        let e = cb::env("ladder-plain-reply", r#"{"callbacks":[{"none":true}]}"#).await;
        let worker = serve_and_climb(&e).await;
        let plain = |run: &str| {
            serde_json::json!({
                "runId": run, "to": TO, "body": format!("Run {run} finished."),
                "ladder": {"callAfter": "1h", "then": []},
            })
            .to_string()
        };
        cb::add(&e, &plain("plain-a")).await;
        cb::add(&e, &plain("plain-b")).await;
        let states = || async {
            [
                ladder(&e, "plain-a").await.remove("state"),
                ladder(&e, "plain-b").await.remove("state"),
            ]
        };
        let climbing = || Some("climbing".to_string());
        wait_for(SOON, "both ladders climbing", || async {
            (states().await == [climbing(), climbing()]).then_some(())
        })
        .await;
        assert_eq!(reply(&e, TO, &format!("SM{:032x}", 61), "on it").await, 200);
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            states().await,
            [climbing(), climbing()],
            "two climb: it stops neither"
        );
        // the other one ends (a key on its call): the one left is the reply's
        worker_ladders(&e)
            .await
            .ack(
                "plain-b",
                ringback::callbacks::ladder::record::Channel::Keypad,
                "test",
            )
            .await
            .unwrap();
        assert_eq!(reply(&e, TO, &format!("SM{:032x}", 62), "on it").await, 200);
        wait_for(
            SOON,
            "the one climbing ladder stopped by the reply",
            || async {
                let rec = ladder(&e, "plain-a").await;
                (rec["state"] == "stopped").then_some(())
            },
        )
        .await;
        worker.stop().await;
    }

    /// The ladders of `e`'s deployment, for a test that acts as a person would.
    async fn worker_ladders(e: &Env) -> ringback::callbacks::ladder::record::LadderRecord {
        let conn =
            ringback::store::connection::commands(&redis::Client::open(e.redis.url()).unwrap())
                .await
                .unwrap();
        cb::sms_config().ladders(conn)
    }

    /// A ladder ends after its last call has ended: a key pressed on a call still ringing past
    /// the step wait answers, and no `unacknowledged` page or `no-answer` comes beside it.
    #[tokio::test]
    async fn a_key_pressed_on_a_call_ringing_past_the_step_wait_answers_without_a_page() {
        let e = cb::env(
            "ladder-ring-past",
            &format!(r#"{{"calls":[{{"to":"{TO}","digits":"1","step_ms":1500}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "ring-past-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Deploy build 7?", "expectReply": true,
            "replyWithin": "2s", "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1s", "stepWait": "1s", "then": []},
        });
        cb::add(&e, &data.to_string()).await;
        let got = wait_for(SOON, "the key's answer", || async {
            matched(&e, run).await.remove("answer")
        })
        .await;
        assert_eq!((got.len(), &got[0]["text"]), (1, &"YES".into()));
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(
            jobs(&e, "escalations").await.is_empty(),
            "no page about an answered question"
        );
        let all = matched(&e, run).await;
        assert!(!all.contains_key("no-answer"), "{all:?}");
        assert_eq!(
            (ladder(&e, run).await["acked_by"].as_str(), all.len()),
            ("keypad", 1)
        );
        worker.stop().await;
    }

    /// Two questions whose ladders call one on-call number O, O pressing 1 on every call; the
    /// first call create to O answers 503 (`created`: the call was made anyway). While one
    /// step's call is unconfirmed, the other ladder neither creates a call to O nor takes one it
    /// finds for its own: each step rings O once, each with its own call, each question
    /// answered by its own key.
    async fn two_ladders_to_one_number(name: &str, created: bool) {
        let e = cb::env(
            name,
            &format!(
                r#"{{"call_create":[{{"to":"{ONCALL}","fault":"server_error","status":503,"created":{created},"times":1}}],"calls":[{{"to":"{ONCALL}","digits":"1"}}]}}"#
            ),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let runs = [format!("{name}-a"), format!("{name}-b")];
        for run in &runs {
            let data = serde_json::json!({
                "runId": run, "to": ONCALL, "body": "Deploy build 7?", "expectReply": true,
                "replyWithin": "1h", "choices": ["YES", "NO"],
                "ladder": {"callAfter": "1s", "stepWait": "1h", "then": []},
            });
            cb::add(&e, &data.to_string()).await;
        }
        for run in &runs {
            let got = wait_for(SOON, "each question's key", || async {
                matched(&e, run).await.remove("answer")
            })
            .await;
            assert_eq!(
                (got.len(), &got[0]["via"], &got[0]["text"]),
                (1, &"call".into(), &"YES".into()),
                "{run}: {got:?}"
            );
        }
        let calls = e.sim.calls.to(ONCALL);
        assert_eq!(calls.len(), 2, "O rang once per step: {calls:?}");
        let mut sids = vec![];
        for run in &runs {
            let rec = ladder(&e, run).await;
            let sid = rec["claim:1"]
                .strip_prefix("sent:")
                .unwrap_or_else(|| panic!("{run}: {rec:?}"))
                .to_string();
            // the step's call is the one whose webhooks name the step
            let call = calls
                .iter()
                .find(|c| c.call.sid == sid)
                .unwrap_or_else(|| panic!("{run}: {sid} among {calls:?}"));
            assert!(
                call.status_callback
                    .as_deref()
                    .is_some_and(|u| u.contains(run.as_str())),
                "{run}'s step marked another ladder's call: {call:?}"
            );
            sids.push(sid);
        }
        assert_ne!(sids[0], sids[1]);
        assert!(
            e.sim.calls.all().iter().all(|c| !c.gathered.is_empty()),
            "each call rang to its key, none ended by the other ladder"
        );
        tokio::time::sleep(Duration::from_secs(2)).await;
        for run in &runs {
            let all = matched(&e, run).await;
            assert!(!all.contains_key("no-answer"), "{run}: {all:?}");
        }
        worker.stop().await;
    }

    /// A step whose sender stopped between its mark and giving its number back holds the
    /// number no longer than the next step that needs it: that step gives it back on its
    /// behalf, with its call confirmed, and calls.
    #[tokio::test]
    async fn a_number_left_held_by_a_marked_step_is_given_back_by_the_next_step() {
        let e = cb::env(
            "one-number-left",
            &format!(r#"{{"calls":[{{"to":"{ONCALL}","digits":"1"}}]}}"#),
        )
        .await;
        let ghost_sid = format!("CA{}", "7".repeat(32));
        let mut c = e.redis.conn().await;
        let _: () = redis::pipe()
            .set(
                ringback::store::keys::ladder_number("agent-callback:", ONCALL),
                "ghost-run 1",
            )
            .hset(
                ringback::store::keys::ladder("agent-callback:", "ghost-run"),
                "claim:1",
                format!("sent:{ghost_sid}"),
            )
            .query_async(&mut c)
            .await
            .unwrap();
        let worker = serve_and_climb(&e).await;
        let run = "one-number-left-a";
        let data = serde_json::json!({
            "runId": run, "to": ONCALL, "body": "Deploy build 7?", "expectReply": true,
            "replyWithin": "1h", "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1s", "stepWait": "1h", "then": []},
        });
        cb::add(&e, &data.to_string()).await;
        let got = wait_for(SOON, "the key's answer", || async {
            matched(&e, run).await.remove("answer")
        })
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(e.sim.calls.to(ONCALL).len(), 1);
        let confirmed: Vec<String> = c
            .zrange(
                ringback::store::keys::ladder_number_calls("agent-callback:", ONCALL),
                0,
                -1,
            )
            .await
            .unwrap();
        assert!(
            confirmed.contains(&format!("{ghost_sid} ghost-run 1")),
            "{confirmed:?}"
        );
        worker.stop().await;
    }

    #[tokio::test]
    async fn two_ladders_calling_one_number_through_a_503_each_ring_it_once_with_their_own_call() {
        two_ladders_to_one_number("one-number", false).await;
    }

    #[tokio::test]
    async fn two_ladders_calling_one_number_through_a_503_that_made_the_call_each_ring_it_once() {
        two_ladders_to_one_number("one-number-made", true).await;
    }

    /// A call whose final status callback never came (lost, or refused for good) holds the
    /// ladder only while Twilio says the call goes on: past its ring time the call is fetched,
    /// and once Twilio's record has it ended (and a late key had time to come) the ladder runs
    /// out, not at its full bound.
    #[tokio::test]
    async fn a_call_whose_final_status_never_came_is_fetched_and_ends_the_ladder() {
        let e = cb::env(
            "ladder-silent-call",
            &format!(r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer","no_callbacks":true}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "silent-call-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Deploy build 7?", "expectReply": true,
            "replyWithin": "2s", "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1s", "stepWait": "1s", "then": []},
        });
        cb::add(&e, &data.to_string()).await;
        let sid = wait_for(SOON, "the call ended at Twilio", || async {
            let calls = e.sim.calls.to(TO);
            let call = calls.first()?;
            (call.call.end_time.is_some()).then(|| call.call.sid.clone())
        })
        .await;
        let rec = ladder(&e, run).await;
        assert_eq!(rec.get("ringing:1"), Some(&sid), "{rec:?}");
        // the call still rings by the record, well inside its bound: nothing ends the ladder
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert!(matched(&e, run).await.is_empty(), "no no-answer yet");
        assert_eq!(ladder(&e, run).await["state"], "climbing");
        // as if the call was created 100 s ago and ended 30 s ago
        let long_ago = |secs: i64| {
            (chrono::Utc::now() - chrono::Duration::seconds(secs))
                .format("%a, %d %b %Y %H:%M:%S +0000")
                .to_string()
        };
        assert!(
            e.sim
                .calls
                .update(&sid, |c| c.call.end_time = Some(long_ago(30)))
        );
        let sent: i64 = rec["sent:1"].parse().unwrap();
        let _: () = e
            .redis
            .conn()
            .await
            .hset(
                ringback::store::keys::ladder("agent-callback:", run),
                "sent:1",
                sent - 100_000,
            )
            .await
            .unwrap();
        let got = wait_for(SOON, "the no-answer", || async {
            matched(&e, run).await.remove("no-answer")
        })
        .await;
        assert_eq!(got.len(), 1);
        let rec = ladder(&e, run).await;
        assert_eq!(
            (
                rec["state"].as_str(),
                rec.get("status:1").map(String::as_str)
            ),
            ("exhausted", Some("no-answer")),
            "{rec:?}"
        );
        assert_eq!(e.sim.calls.to(TO).len(), 1, "called once");
        worker.stop().await;
    }

    /// A ladder opens wherever its callback is finished: a run whose claim already says sent
    /// (the legacy worker's, or a retry after the ladder's record was lost) opens it, and the
    /// recipient is called.
    #[tokio::test]
    async fn a_run_found_sent_opens_its_ladder() {
        let e = cb::env(
            "ladder-found-sent",
            &format!(r#"{{"calls":[{{"to":"{TO}"}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "found-sent-1";
        // the legacy worker took the run and texted it: its claim says `sent`
        let _: () = e
            .redis
            .conn()
            .await
            .set(format!("agent-callback:{run}"), "sent")
            .await
            .unwrap();
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Run finished.",
            "ladder": {"callAfter": "1s", "then": []},
        });
        cb::add(&e, &data.to_string()).await;
        wait_for(SOON, "the recipient called", || async {
            e.sim.calls.to(TO).into_iter().next()
        })
        .await;
        assert_eq!(texts_to(&e, TO), 0, "never texted again");
        let counted = ringback::telemetry::global()
            .ladder_steps
            .get_or_create(&ringback::telemetry::LadderLabels {
                channel: "ladder",
                outcome: "legacy_sent",
            })
            .get();
        assert!(counted >= 1, "the legacy worker's text is counted");
        worker.stop().await;
    }

    /// A run whose worker died right after its claim, sent by the orphan sweep from the attempt
    /// record: the ladder its job asked for opens (the record keeps no ladder; the job does).
    #[tokio::test]
    async fn an_orphan_sent_by_the_sweep_opens_the_ladder_its_job_asked_for() {
        orphan_opens_its_ladder("orphan-ladder-1", false).await;
    }

    /// The attempt record keeps the question and the ladder: an orphan whose job is gone
    /// (removed by hand, or its record's job a sweep's own) asks the same question, with its
    /// choices, and opens the same ladder.
    #[tokio::test]
    async fn an_orphan_whose_job_is_gone_asks_its_question_and_opens_its_ladder() {
        orphan_opens_its_ladder("orphan-ladder-2", true).await;
    }

    async fn orphan_opens_its_ladder(run: &str, job_gone: bool) {
        let e = cb::env(run, r#"{"callbacks":[{"none":true}]}"#).await;
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Deploy?",
            "expectReply": true, "replyWithin": "2h", "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1h", "stepWait": "20m", "then": [ONCALL]},
        });
        let job = cb::add(&e, &data.to_string()).await;
        let crashed = cb::spawn_binary(&e, Some("after-claim"));
        let exited = tokio::time::timeout(
            SOON,
            tokio::task::spawn_blocking(move || {
                let mut crashed = crashed;
                crashed.0.wait().unwrap()
            }),
        )
        .await
        .expect("the worker exits at its claim")
        .unwrap();
        assert!(!exited.success(), "the worker died at its claim");
        if job_gone {
            let mut c = e.redis.conn().await;
            let _: () = redis::pipe()
                .del(e.keys.job(&job))
                .lrem(e.keys.active(), 0, &job)
                .query_async(&mut c)
                .await
                .unwrap();
        }
        let conn =
            ringback::store::connection::commands(&redis::Client::open(e.redis.url()).unwrap())
                .await
                .unwrap();
        let p = cb::processor(&e, conn, cb::sms_config());
        let cancel = Default::default();
        let resolved = wait_for(SOON, "the orphan swept and sent", || async {
            let done = ringback::callbacks::orphans::sweep(&p, None, &cancel)
                .await
                .unwrap();
            (!done.is_empty()).then_some(done)
        })
        .await;
        assert_eq!(resolved, [run]);
        assert_eq!(texts_to(&e, TO), 1);
        let rec = ladder(&e, run).await;
        assert_eq!(
            rec.get("state").map(String::as_str),
            Some("climbing"),
            "{rec:?}"
        );
        let plan: serde_json::Value = serde_json::from_str(&rec["plan"]).unwrap();
        assert_eq!(plan["question"], true, "{plan}");
        assert_eq!(plan["choices"], serde_json::json!(["YES", "NO"]), "{plan}");
        assert_eq!(plan["stepWaitMs"], 1_200_000, "{plan}");
        assert!(plan.to_string().contains(ONCALL), "{plan}");
        // the first call an hour after the text, not the deployment's default
        let first_due: f64 = redis::cmd("ZSCORE")
            .arg(ringback::store::keys::ladder_due("agent-callback:"))
            .arg(run)
            .query_async(&mut e.redis.conn().await)
            .await
            .unwrap();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as f64;
        assert!(
            first_due > now_ms + 50.0 * 60_000.0,
            "callAfter 1h kept: due {first_due}, now {now_ms}; {rec:?}"
        );
    }

    /// A rollback tells a person about every climbing ladder: `drain` refuses while one climbs
    /// and no worker is alive; `--end-ladders` ends it and escalates it once (`rollback`).
    #[tokio::test]
    async fn drain_refuses_while_ladders_climb_and_ends_them_escalated_once_when_asked() {
        let e = cb::env("ladder-drain", r#"{"callbacks":[{"none":true}]}"#).await;
        let worker = serve_and_climb(&e).await;
        let run = "drain-ladder-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Run finished.",
            "ladder": {"callAfter": "1h", "then": [ONCALL]},
        });
        cb::add(&e, &data.to_string()).await;
        wait_for(SOON, "the ladder open", || async {
            (ladder(&e, run).await.get("state").map(String::as_str) == Some("climbing"))
                .then_some(())
        })
        .await;
        worker.stop().await;
        let drain = |extra: &[&str]| {
            let mut cmd = cb::ringback_command(&e, "drain", cb::Timings::Production);
            cmd.args(extra)
                .args(["--timeout-ms", "20000"])
                .stderr(std::process::Stdio::piped());
            cmd.output().unwrap()
        };
        let refused = wait_for(SOON, "drain refusing for the ladder", || async {
            let out = drain(&[]);
            let why = String::from_utf8_lossy(&out.stderr).to_string();
            (out.status.code() == Some(3) && why.contains("1 escalation ladder(s) still climb"))
                .then_some(why)
        })
        .await;
        assert!(refused.contains("--end-ladders"), "{refused}");
        assert!(jobs(&e, "escalations").await.is_empty());
        for _ in 0..2 {
            let out = drain(&["--end-ladders"]);
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let escalations = jobs(&e, "escalations").await;
        assert_eq!(escalations.len(), 1, "escalated once: {escalations:?}");
        assert_eq!(
            escalations[&format!("escalation:{run}")]["kind"],
            "rollback"
        );
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "drain")
        );
        assert!(e.sim.calls.all().is_empty(), "nobody called");
    }

    /// The next person the ladder texted answers the question by text: their reply is the
    /// question's answer (once, first answer wins) and stops the ladder before their call.
    #[tokio::test]
    async fn the_next_persons_text_reply_answers_the_question() {
        let e = cb::env(
            "ladder-next-reply",
            &format!(r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer"}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "next-reply-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Deploy build 7?", "expectReply": true,
            "replyWithin": "1h", "choices": ["YES", "NO"],
            "ladder": {"callAfter": "1s", "stepWait": "3s", "then": [ONCALL]},
        });
        cb::add(&e, &data.to_string()).await;
        wait_for(SOON, "the next person texted", || async {
            (texts_to(&e, ONCALL) == 1).then_some(())
        })
        .await;
        assert_eq!(reply(&e, ONCALL, &format!("SM{:032x}", 2), "no").await, 200);
        let answer = first_reply(&e).await;
        let got = ["runId", "matched", "text", "from"].map(|f| answer[f].clone());
        assert_eq!(
            got,
            [run, "answer", "no", ONCALL].map(serde_json::Value::from)
        );
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "reply"),
            "{rec:?}"
        );
        // the recipient's late reply is not a second answer
        assert_eq!(reply(&e, TO, &format!("SM{:032x}", 3), "yes").await, 200);
        tokio::time::sleep(Duration::from_millis(3500)).await;
        let answers: Vec<_> = jobs(&e, "replies")
            .await
            .into_values()
            .filter(|j| j["matched"] == "answer")
            .collect();
        assert_eq!(answers.len(), 1, "{answers:?}");
        assert!(
            e.sim.calls.to(ONCALL).is_empty(),
            "no call after the answer"
        );
        worker.stop().await;
    }

    #[tokio::test]
    async fn a_call_whose_answer_was_lost_is_found_never_placed_twice() {
        let e = cb::env(
            "ladder-lost-create",
            &format!(
                r#"{{"call_create":[{{"to":"{TO}","fault":"create_then_drop","times":1}}],
                    "calls":[{{"to":"{TO}","outcome":"no-answer","no_callbacks":true}}]}}"#
            ),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "lost-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Run 3 finished.", "expectReply": true,
            "ladder": {"callAfter": "1s", "stepWait": "20s", "then": []},
        });
        cb::add(&e, &data.to_string()).await;
        // the lease (the create's timeout and the reconcile window) passes, the sweep takes the
        // claim, finds the call in Twilio's list and marks it
        called_once(&e, run, "the lost call found").await;
        worker.stop().await;
    }

    /// A Redis that lost its last writes (an AOF a second old, a replica promoted behind)
    /// forgot the step it had claimed and whose call went out: the step claimed again within the
    /// lost-writes window looks for its call first, and the person is not called twice.
    #[tokio::test]
    async fn a_step_a_redis_that_lost_its_last_writes_forgot_is_never_called_twice() {
        let e = cb::env(
            "ladder-forgot",
            &format!(r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer","no_callbacks":true}}]}}"#),
        )
        .await;
        let worker = serve_and_climb(&e).await;
        let run = "forgot-1";
        let data = serde_json::json!({
            "runId": run, "to": TO, "body": "Run 4 finished.", "expectReply": true,
            "ladder": {"callAfter": "1s", "stepWait": "60s", "then": []},
        });
        cb::add(&e, &data.to_string()).await;
        wait_for(SOON, "the call placed and marked", || async {
            let rec = ladder(&e, run).await;
            rec.get("claim:1")
                .is_some_and(|c| c.starts_with("sent:CA"))
                .then_some(())
        })
        .await;
        // the Redis that comes back is another server that never saw the step: the record as
        // it was before the advance, the due index with it
        let mut c = e.redis.conn().await;
        let key = ringback::store::keys::ladder("agent-callback:", run);
        let _: () = redis::pipe()
            .hset_multiple(&key, &[("step", "0"), ("due", "0")])
            .hdel(&key, &["claim:1", "started:1", "callsid:1"])
            .zadd(ringback::store::keys::ladder_due("agent-callback:"), run, 0)
            .hset(
                ringback::store::keys::redis_identity(),
                "run",
                "0".repeat(40),
            )
            .query_async(&mut c)
            .await
            .unwrap();
        called_once(&e, run, "the step claimed again and its call found").await;
        worker.stop().await;
    }

    #[tokio::test]
    async fn a_step_claimed_by_a_worker_that_died_before_its_create_is_created_once() {
        let e = cb::env(
            "ladder-orphan",
            &format!(r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer"}}]}}"#),
        )
        .await;
        // a worker opened the ladder, claimed its first step and died before the create
        let client = redis::Client::open(e.redis.url()).unwrap();
        let conn = ringback::store::connection::commands(&client)
            .await
            .unwrap();
        let l = cb::sms_config().ladders(conn);
        let run = "orphan-1";
        let plan = one_call(20_000, &[]);
        assert!(l.start(run, 1, Duration::ZERO, &plan).await.unwrap());
        let ringback::callbacks::ladder::record::Advance::Claimed { step: 1, .. } =
            l.advance(run, 0, Duration::from_secs(20)).await.unwrap()
        else {
            panic!("step 1 claimed")
        };
        let worker = serve_and_climb(&e).await;
        // past the lease, the sweep takes the claim, finds no call and creates it, once
        let rec = wait_for(SOON, "the orphaned step sent", || async {
            let rec = ladder(&e, run).await;
            rec.get("claim:1")
                .is_some_and(|c| c.starts_with("sent:CA"))
                .then_some(rec)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let calls = e.sim.calls.to(TO);
        assert_eq!(calls.len(), 1, "created once");
        assert_eq!(rec["claim:1"], format!("sent:{}", calls[0].call.sid));
        worker.stop().await;
    }

    #[tokio::test]
    async fn quiet_hours_hold_a_step_in_its_persons_zone_and_the_cap_skips_a_call() {
        let e = cb::env(
            "ladder-quiet",
            &format!(r#"{{"calls":[{{"to":"{TO}","outcome":"no-answer"}}]}}"#),
        )
        .await;
        // quiet now in UTC (the deployment's zone, the next person's), not in Tokyo (the
        // recipient's); one call per number an hour
        let mut sms = cb::sms_config();
        sms.quiet = Some(cb::quiet_around_now(None).0);
        sms.ladder.calls_per_hour = 1;
        let worker = serve_and_climb_with(&e, sms).await;
        let ask = |run: &str| {
            serde_json::json!({
                "runId": run, "to": TO, "body": "Run finished.", "timeZone": "Asia/Tokyo",
                "expectReply": true,
                "ladder": {"callAfter": "1s", "stepWait": "1s", "then": [ONCALL]},
            })
            .to_string()
        };
        cb::add(&e, &ask("quiet-1")).await;
        let rec = wait_for(SOON, "the next person's step deferred", || async {
            let rec = ladder(&e, "quiet-1").await;
            (rec.contains_key("why:1")
                && rec.get("due").and_then(|d| d.parse::<i64>().ok())
                    > Some(ringback::clock::now_ms() + 1_800_000))
            .then_some(rec)
        })
        .await;
        assert_eq!(
            rec["step"], "1",
            "the recipient was called in their own zone"
        );
        // the same recipient again within the hour: the call is skipped, never queued
        cb::add(&e, &ask("quiet-2")).await;
        let rec2 = wait_for(SOON, "the second call skipped", || async {
            let rec = ladder(&e, "quiet-2").await;
            rec.get("claim:1")
                .filter(|c| c.starts_with("sent:none"))
                .cloned()
        })
        .await;
        assert_eq!(rec2, "sent:none:cap");
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert_eq!(
            e.sim.calls.to(TO).len(),
            1,
            "one call an hour to the number"
        );
        assert_eq!(
            texts_to(&e, ONCALL),
            0,
            "nobody texted inside their quiet hours"
        );
        assert_eq!(ladder(&e, "quiet-1").await["step"], "1");
        worker.stop().await;
    }

    #[tokio::test]
    async fn a_question_without_a_ladder_gets_one_no_answer_at_its_reply_within() {
        let e = cb::env("ladder-none-no-answer", "").await;
        let worker = serve_and_climb(&e).await;
        for (run, within) in [
            ("plain-q-1", "2s"),
            ("plain-q-2", "2s"),
            ("plain-q-3", "1h"),
        ] {
            let data = serde_json::json!({
                "runId": run, "to": TO, "body": format!("Ship {run}?"), "expectReply": true,
                "replyWithin": within,
            });
            cb::add(&e, &data.to_string()).await;
        }
        // the second is answered in time: no no-answer for it
        wait_for(SOON, "the questions texted", || async {
            (texts_to(&e, TO) == 3).then_some(())
        })
        .await;
        let replies = ringback::callbacks::sms::SmsConfig {
            sent_ttl: Duration::from_secs(3600),
            ..Default::default()
        }
        .replies(
            ringback::store::connection::commands(&redis::Client::open(e.redis.url()).unwrap())
                .await
                .unwrap(),
            "bull",
            &e.queue,
        );
        assert_eq!(
            replies
                .keypad_answer(
                    "plain-q-2",
                    "CA00000000000000000000000000000002",
                    "yes",
                    "1",
                    TO
                )
                .await
                .unwrap(),
            ringback::callbacks::replies::Claimed::Ours
        );
        let got = wait_for(SOON, "the no-answer job", || async {
            let j = jobs(&e, "replies").await;
            j.contains_key("no-answer:plain-q-1").then_some(j)
        })
        .await;
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let got2 = jobs(&e, "replies").await;
        assert_eq!(got.len(), got2.len(), "once: {got2:?}");
        assert_eq!(got2["no-answer:plain-q-1"]["matched"], "no-answer");
        assert!(
            !got2.contains_key("no-answer:plain-q-2"),
            "answered: {got2:?}"
        );
        assert!(
            !got2.contains_key("no-answer:plain-q-3"),
            "still open: {got2:?}"
        );
        worker.stop().await;
    }

    #[tokio::test]
    async fn a_keypad_answer_cut_short_by_a_crash_of_serve_is_finished_by_its_sweep_once() {
        let e = cb::env("ladder-keypad-crash", "").await;
        let conn =
            ringback::store::connection::commands(&redis::Client::open(e.redis.url()).unwrap())
                .await
                .unwrap();
        let sms = cb::sms_config();
        let replies = sms.replies(conn.clone(), "bull", &e.queue);
        let run = "keypad-crash-1";
        let plan = one_call(60_000, &["YES", "NO"]);
        let l = sms.ladders(conn);
        assert!(l.start(run, 1, Duration::ZERO, &plan).await.unwrap());
        // serve kept the answer, then died before it acknowledged or answered anything
        let k = ringback::callbacks::replies::keypad::Keypad {
            run_id: run.into(),
            call_sid: "CA0000000000000000000000000000000a".into(),
            choice: "NO".into(),
            digits: "2".into(),
            who: TO.into(),
            question: true,
        };
        let at = ringback::clock::now_ms();
        replies.keep_keypad_only(&k, at).await.unwrap();
        assert_eq!(
            replies.finish_keypads(at + 1000).await.unwrap(),
            0,
            "its own handler may still be at work"
        );
        assert_eq!(replies.finish_keypads(at + 20_000).await.unwrap(), 1);
        assert_eq!(
            replies.finish_keypads(at + 40_000).await.unwrap(),
            0,
            "once"
        );
        // Twilio posting it again changes nothing
        replies.keypad(&k, at + 41_000).await.unwrap();
        let got = jobs(&e, "replies").await;
        assert_eq!(got.len(), 1, "{got:?}");
        let answer = &got[&format!("call:{}", k.call_sid)];
        assert_eq!(
            (&answer["text"], &answer["via"], &answer["runId"]),
            (&"NO".into(), &"call".into(), &run.into())
        );
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "keypad")
        );
    }

    /// A call status posted to `serve`'s call-status route for `run`'s step `k`, signed.
    async fn call_status(e: &Env, run: &str, k: u32, sid: &str, status: &str) -> u16 {
        let base = e
            .status_callback
            .get()
            .unwrap()
            .replace("/webhook/status", "/webhook/call-status");
        let url = format!("{base}?run={run}&step={k}");
        let params = [
            ("CallSid", sid),
            ("AccountSid", cb::ACCOUNT),
            ("CallStatus", status),
            ("To", TO),
        ];
        signed_post(&url, &params).await
    }

    /// `serve` may die between recording a ladder webhook and acting on it
    /// (`ladder-after-webhook`); Twilio, told by the URL's overrides, posts it again. A call's
    /// end recorded by a `serve` that died before it climbed climbs on the repeat; a key
    /// pressed and kept by a `serve` that died is that call's answer when the call's end comes,
    /// not "answered without a key".
    #[tokio::test]
    async fn a_call_status_or_a_key_that_a_crash_of_serve_cut_short_is_taken_on_twilios_repeat() {
        let e = cb::env("ladder-webhook-crash", "").await;
        let mut sms = cb::sms_config();
        cb::serve_receipts(&e, &mut sms).await;
        let conn =
            ringback::store::connection::commands(&redis::Client::open(e.redis.url()).unwrap())
                .await
                .unwrap();
        let replies = sms.replies(conn.clone(), "bull", &e.queue);
        let l = sms.ladders(conn);
        let mut plan = one_call(60_000, &["YES", "NO"]);
        plan.steps.push(plan.steps[0].clone());
        let open = |run: &'static str, sid: &'static str| {
            let (l, plan) = (l.clone(), plan.clone());
            async move {
                assert!(l.start(run, 2, Duration::ZERO, &plan).await.unwrap());
                let ringback::callbacks::ladder::record::Advance::Claimed { step, token, .. } =
                    l.advance(run, 0, Duration::from_secs(60)).await.unwrap()
                else {
                    panic!("{run}: the first step is not claimed");
                };
                l.mark(run, step, &token, sid, true, false).await.unwrap();
            }
        };

        // the call's end was recorded, then serve died: the repeat climbs
        let (run, sid) = ("webhook-crash-1", "CA00000000000000000000000000000001");
        open(run, sid).await;
        l.call_status(run, 1, sid, "no-answer", None, Some(3))
            .await
            .unwrap();
        assert!(
            !ladder(&e, run).await.contains_key("why:1"),
            "not climbed yet"
        );
        assert_eq!(call_status(&e, run, 1, sid, "no-answer").await, 200);
        let rec = ladder(&e, run).await;
        assert_eq!(rec.get("why:1").map(String::as_str), Some("call no-answer"));
        let now: i64 = ringback::clock::now_ms();
        assert!(
            rec["due"].parse::<i64>().unwrap() <= now,
            "the next step is due now: {rec:?}"
        );

        // a key kept, then serve died; the call's end arrives: the key answers
        let (run, sid) = ("webhook-crash-2", "CA00000000000000000000000000000002");
        open(run, sid).await;
        let k = ringback::callbacks::replies::keypad::Keypad {
            run_id: run.into(),
            call_sid: sid.into(),
            choice: "YES".into(),
            digits: "1".into(),
            who: TO.into(),
            question: true,
        };
        replies
            .keep_keypad_only(&k, ringback::clock::now_ms())
            .await
            .unwrap();
        assert_eq!(call_status(&e, run, 1, sid, "completed").await, 200);
        let rec = ladder(&e, run).await;
        assert_eq!(
            (rec["state"].as_str(), rec["acked_by"].as_str()),
            ("stopped", "keypad"),
            "{rec:?}"
        );
        assert!(!rec.contains_key("why:1"), "no climb: {rec:?}");
        let got = jobs(&e, "replies").await;
        assert_eq!(got[&format!("call:{sid}")]["text"], "YES", "{got:?}");
        // and the pending entry is gone: the sweep finishes nothing more
        assert_eq!(
            replies
                .finish_keypads(ringback::clock::now_ms() + 60_000)
                .await
                .unwrap(),
            0
        );
    }
}
