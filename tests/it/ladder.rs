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
use ringback::callbacks::ladder::record::{Ack, Advance, Channel, LadderRecord, Marked};
use ringback::store::scripts::RoundTrips;
use ringback::store::slots::Topology;

const PREFIX: &str = "agent-callback:";
const DAY: Duration = Duration::from_secs(86_400);

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
            Advance::Claimed { step, token } => {
                claimed.push(step);
                tokio::task::yield_now().await;
                let sid = format!("CA{step:032x}");
                marks.push(
                    l.mark(&run, step, &token, &sid, step % 2 == 1)
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
            assert!(l.start(&run, 4, Duration::ZERO).await.unwrap());
            assert!(
                !l.start(&run, 4, Duration::ZERO).await.unwrap(),
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
            assert!(l.escalated(&run).await.unwrap());
            assert!(!l.escalated(&run).await.unwrap(), "cleared once");
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
            l.start(&run, 4, Duration::ZERO).await.unwrap();
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

#[tokio::test]
async fn a_call_created_after_the_stop_is_hung_up_and_early_or_moved_steps_wait() {
    let server = RedisServer::start();
    let l = record(&server, Topology::Fused).await;
    let mut c = server.conn().await;

    // due in a minute: too early; a stale read: moved
    l.start("slow", 2, Duration::from_secs(60)).await.unwrap();
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

    l.start("late-call", 2, Duration::ZERO).await.unwrap();
    let Advance::Claimed { step, token } = l.advance("late-call", 0, Duration::ZERO).await.unwrap()
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
        l.mark("late-call", 1, &token, &sid, true).await.unwrap(),
        Marked::End
    );
    assert_eq!(
        l.mark("late-call", 1, "other", &sid, true).await.unwrap(),
        Marked::NotOurs
    );

    // a call ringing at the stop is named by it
    l.start("ringing", 2, Duration::ZERO).await.unwrap();
    let Advance::Claimed { token, .. } = l.advance("ringing", 0, Duration::ZERO).await.unwrap()
    else {
        panic!()
    };
    assert_eq!(
        l.mark("ringing", 1, &token, &sid, true).await.unwrap(),
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
