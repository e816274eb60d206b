//! The window laid out for Redis Cluster (`Topology::PerSlot`) on a single real redis-server:
//! every script call stays in one slot (the wrapper's slot check refuses anything else), the
//! end state equals the single-Redis layout's, and a cut between two split calls is repaired
//! by the sweep or the reconciler. The whole exactly-once suites also run in this layout with
//! `RINGBACK_DRILL_PER_SLOT=1 cargo test --test sms --test exactly_once`.

use crate::common;

use std::time::Duration;

use common::callbacks::*;
use redis::AsyncCommands;
use ringback::callbacks::window::{Claim, MarkSent, Marked, Window};
use ringback::store::keys::{self, WindowKeys};
use ringback::store::slots::Topology;
use ringback::twilio::{CreateMessage, SendOutcome, TwilioClient};

const PREFIX: &str = "agent-callback:";

async fn window(e: &Env, topology: Topology, pending_ms: u64) -> Window {
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    common::callbacks::window(e, conn, pending_ms).with_topology(topology)
}

async fn claim(w: &Window, run: &str, token: &str, supersede: Option<&str>) -> Claim {
    w.claim(run, token, supersede, "job-1", "worker-1", TO, "", "hello")
        .await
        .unwrap()
}

fn sid(n: u32) -> String {
    format!("SM{n:032x}")
}

async fn index_score(c: &mut redis::aio::MultiplexedConnection, run: &str) -> Option<i64> {
    c.zscore(keys::open_attempts(PREFIX), run).await.unwrap()
}

#[tokio::test]
async fn per_slot_and_fused_leave_the_same_keys() {
    let e = env("slots-same", "").await;
    let mut c = e.redis.conn().await;
    for (n, topology) in [Topology::Fused, Topology::PerSlot].into_iter().enumerate() {
        let w = window(&e, topology, 3000).await;
        let run = format!("same-{n}");
        let Claim::Claimed { token } = claim(&w, &run, "t1", None).await else {
            panic!("{topology:?}: not claimed");
        };
        assert!(index_score(&mut c, &run).await.is_some(), "{topology:?}");
        let recent: Option<i64> = c.zscore(keys::recent_runs(PREFIX), &run).await.unwrap();
        assert!(recent.is_some(), "{topology:?}: recent runs");
        let sid = sid(n as u32);
        let marked = w
            .mark_sent(&run, &token, &sid, "queued", Marked::Sent)
            .await
            .unwrap();
        assert_eq!(marked, MarkSent::Marked, "{topology:?}");
        let k = WindowKeys::new(PREFIX, &run);
        let v: String = c.get(&k.claim).await.unwrap();
        assert_eq!(v, format!("sent:{sid}"), "{topology:?}");
        assert_eq!(index_score(&mut c, &run).await, None, "{topology:?}");
        let link: Option<String> = c.get(keys::message_link(&sid)).await.unwrap();
        assert_eq!(link.as_deref(), Some(run.as_str()), "{topology:?}");
        let poll: Option<i64> = c
            .zscore(keys::reconcile_schedule(PREFIX), &sid)
            .await
            .unwrap();
        assert!(poll.is_some(), "{topology:?}: the poll is scheduled");
        let rec_sid: Option<String> = c.hget(&k.record, "sid").await.unwrap();
        assert_eq!(rec_sid.as_deref(), Some(sid.as_str()), "{topology:?}");
        assert_eq!(
            claim(&w, &run, "t2", None).await,
            Claim::Sent(Some(sid.clone()))
        );
    }
}

#[tokio::test]
async fn the_slot_check_refuses_a_cross_slot_call_before_sending_it() {
    let e = env("slots-refuse", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let mut conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let k = WindowKeys::new(PREFIX, "refused");
    // the single-Redis layout of window_hold: the index is in another slot
    let keys = [k.claim.clone(), k.attempt, keys::open_attempts(PREFIX)];
    let args = ["t1", "1000", "1000", "why", "refused"];
    let trips = ringback::store::scripts::RoundTrips::default();
    let r: redis::RedisResult<i64> = ringback::store::scripts::scripts()
        .window_hold
        .run_in(Topology::PerSlot, &mut conn, &trips, &keys, &args)
        .await;
    assert_eq!(r.unwrap_err().code(), Some("CROSSSLOT"));
    assert_eq!(trips.get(), 0, "nothing was sent");
    // the same call is fine on a single Redis
    let r: i64 = ringback::store::scripts::scripts()
        .window_hold
        .run_in(Topology::Fused, &mut conn, &trips, &keys, &args)
        .await
        .unwrap();
    assert_eq!(r, 0);
}

/// A cut right after the claim's intent (the index ZADD), before the claim script: an index
/// entry for a run with no attempt. The sweep drops it when it comes due.
#[tokio::test]
async fn a_cut_after_the_claims_intent_is_dropped_by_the_sweep() {
    let e = env("slots-intent", "").await;
    let w = window(&e, Topology::PerSlot, 3000).await;
    let mut c = e.redis.conn().await;
    let _: () = c
        .zadd(keys::open_attempts(PREFIX), "intent-only", w.now() - 1)
        .await
        .unwrap();
    assert_eq!(
        w.overdue(10).await.unwrap(),
        vec!["intent-only".to_string()]
    );
    assert_eq!(w.sweep("intent-only").await.unwrap(), None);
    assert_eq!(index_score(&mut c, "intent-only").await, None, "dropped");
}

/// A cut after the sent marker, before the index ZREM: a sent run still indexed. The sweep
/// drops it and re-enqueues nothing.
#[tokio::test]
async fn a_cut_before_the_index_zrem_is_dropped_by_the_sweep() {
    let e = env("slots-zrem", "").await;
    let w = window(&e, Topology::PerSlot, 3000).await;
    let Claim::Claimed { token } = claim(&w, "zrem", "t1", None).await else {
        panic!("not claimed");
    };
    w.mark_sent("zrem", &token, &sid(7), "queued", Marked::Sent)
        .await
        .unwrap();
    let mut c = e.redis.conn().await;
    // the entry the skipped ZREM would have removed, come due
    let _: () = c
        .zadd(keys::open_attempts(PREFIX), "zrem", w.now() - 1)
        .await
        .unwrap();
    assert_eq!(w.sweep("zrem").await.unwrap(), None);
    assert_eq!(index_score(&mut c, "zrem").await, None, "dropped");
}

/// A cut after the link and the scheduled poll, before the sent marker: Twilio has the
/// message, the run's attempt is still `claimed` and indexed. The reconciler polls the sid and
/// writes its status into the run's record; the attempt's resolver (once the claim is dead)
/// sees that receipt and marks the message found: one text, nothing lost.
#[tokio::test]
async fn a_cut_before_the_sent_marker_is_repaired_by_the_reconciler() {
    let e = env("slots-marker", "").await;
    let pending_ms = 400;
    let w = window(&e, Topology::PerSlot, pending_ms).await;
    let run = "marker";
    let Claim::Claimed { token } = claim(&w, run, "t1", None).await else {
        panic!("not claimed");
    };
    let twilio = TwilioClient::new(twilio_config(&e.sim_base)).unwrap();
    let SendOutcome::Accepted(m) = twilio
        .create_message(&CreateMessage {
            to: TO.into(),
            body: "hello".into(),
            from: None,
            status_callback: None,
            validity_period: None,
        })
        .await
    else {
        panic!("not accepted");
    };
    let sid = m.sid.clone();
    // the calls mark_sent makes before the marker (link, schedule, due now), then the cut
    let mut c = e.redis.conn().await;
    let _: () = c.set(keys::message_link(&sid), run).await.unwrap();
    let _: () = c
        .zadd(keys::reconcile_schedule(PREFIX), &sid, 0)
        .await
        .unwrap();
    assert!(index_score(&mut c, run).await.is_some(), "still indexed");

    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let mut sms = sms_config();
    sms.pending_ttl = Duration::from_millis(pending_ms);
    let reconciler = processor(&e, conn, sms).reconciler();
    assert_eq!(reconciler.run_once().await.unwrap(), 1);
    let rec_sid: Option<String> = c
        .hget(WindowKeys::new(PREFIX, run).record, "sid")
        .await
        .unwrap();
    assert_eq!(rec_sid.as_deref(), Some(sid.as_str()), "the poll found it");

    tokio::time::sleep(Duration::from_millis(pending_ms + 100)).await;
    let Claim::Resolve(u) = claim(&w, run, "t2", None).await else {
        panic!("the dead claim is not resolved");
    };
    assert_eq!(u.token, token);
    assert_eq!(u.receipt_sid.as_deref(), Some(sid.as_str()));
    assert_eq!(
        w.mark_sent(run, &u.token, &sid, "queued", Marked::Found)
            .await
            .unwrap(),
        MarkSent::Marked
    );
    assert_eq!(claim(&w, run, "t3", None).await, Claim::Sent(Some(sid)));
    assert_eq!(index_score(&mut c, run).await, None);
    assert_eq!(e.sim.store.stats().total, 1, "one text");
}

/// A resolver's find is refused when the message is linked to another run (PerSlot checks the
/// link in its own call before the marker).
#[tokio::test]
async fn a_found_message_of_another_run_is_refused_per_slot() {
    let e = env("slots-other", "").await;
    let w = window(&e, Topology::PerSlot, 3000).await;
    let mut c = e.redis.conn().await;
    let _: () = c.set(keys::message_link(&sid(9)), "someone").await.unwrap();
    let Claim::Claimed { token } = claim(&w, "mine", "t1", None).await else {
        panic!("not claimed");
    };
    assert_eq!(
        w.mark_sent("mine", &token, &sid(9), "queued", Marked::Found)
            .await
            .unwrap(),
        MarkSent::OtherRun
    );
    let v: String = c.get(WindowKeys::new(PREFIX, "mine").claim).await.unwrap();
    assert_eq!(v, "pending:t1", "no marker");
}

/// The sweep's take (index alone) then the per-run script: a sweep whose process is cut after
/// the take leaves the run pushed on, and it comes due again.
#[tokio::test]
async fn a_dead_claim_is_swept_per_slot_once() {
    let e = env("slots-sweep", "").await;
    let w = window(&e, Topology::PerSlot, 200).await;
    let Claim::Claimed { .. } = claim(&w, "orphan", "t1", None).await else {
        panic!("not claimed");
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(w.overdue(10).await.unwrap(), vec!["orphan".to_string()]);
    let (a, b) = tokio::join!(w.sweep("orphan"), w.sweep("orphan"));
    let taken = [a.unwrap(), b.unwrap()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    assert_eq!(taken.len(), 1, "taken once: {taken:?}");
    assert_eq!(taken[0].token, "t1");
    assert!(w.overdue(10).await.unwrap().is_empty(), "pushed on");
}

/// The claim's intent came due before the claim script ran (the process stalled longer than
/// the pending TTL between its two calls): a sweep may have taken and may drop the entry, so
/// the script opens no attempt and answers busy; the caller comes back with a new intent.
#[tokio::test]
async fn a_claim_whose_intent_came_due_opens_nothing() {
    let e = env("slots-due", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let mut conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let k = WindowKeys::new(PREFIX, "late");
    let keys = [k.claim.clone(), k.attempt.clone(), k.record];
    let args = [
        "t1", "job", "worker", "", "3000", "6000", "3600000", TO, "", "hi", "late", "30000",
        "20000", "1", // the intent came due at 1 ms after the epoch
    ];
    let trips = ringback::store::scripts::RoundTrips::default();
    let reply: Vec<String> = ringback::store::scripts::scripts()
        .window_claim
        .run_in(Topology::PerSlot, &mut conn, &trips, &keys, &args)
        .await
        .unwrap();
    assert_eq!(reply[..2], ["busy".to_string(), "1".to_string()]);
    let mut c = e.redis.conn().await;
    let exists: bool = c.exists(&k.claim).await.unwrap();
    assert!(!exists, "no claim written");
    // in time, the same claim opens the attempt
    let w = window(&e, Topology::PerSlot, 3000).await;
    assert!(matches!(
        claim(&w, "late", "t2", None).await,
        Claim::Claimed { .. }
    ));
}

/// The send's own history entry lives in the record (`send`), not in a list of its own: a run
/// without status callbacks has no history list at all, and the API still shows the send first.
/// A status callback that beat the marker keeps both in the list, in arrival order. The record
/// and the list live the record TTL from their first write; later statuses refresh neither.
#[tokio::test]
async fn the_send_entry_is_the_records_and_lifetimes_count_from_the_first_write() {
    use ringback::callbacks::receipts::{ReceiptTimes, Receipts, Source, StatusUpdate};
    let e = env("slots-send-entry", "").await;
    let mut c = e.redis.conn().await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let times = ReceiptTimes {
        record_ttl: Duration::from_secs(600),
        poll_after: Duration::from_secs(60),
    };
    let update = |run: &str, sid: &str, status: &str| StatusUpdate {
        run_id: run.to_string(),
        sid: sid.to_string(),
        status: status.to_string(),
        error_code: None,
        raw_dlr_done_date: None,
        source: Source::Webhook,
        repeat_id: None,
        attempt: None,
    };
    let summary = |r: &ringback::callbacks::receipts::CallbackRecord| -> Vec<String> {
        r.history
            .iter()
            .map(|h| {
                format!(
                    "{}:{}",
                    h["source"].as_str().unwrap(),
                    h["status"].as_str().unwrap()
                )
            })
            .collect()
    };
    for (n, topology) in [Topology::Fused, Topology::PerSlot].into_iter().enumerate() {
        let w = window(&e, topology, 3000).await;
        let conn = ringback::store::connection::commands(&client)
            .await
            .unwrap();
        let receipts =
            Receipts::new(conn, PREFIX.to_string(), times.clone()).with_topology(topology);

        // the usual run: the marker starts the record
        let run = format!("first-{n}");
        let Claim::Claimed { token } = claim(&w, &run, "t1", None).await else {
            panic!("{topology:?}: not claimed");
        };
        let first = sid(10 + n as u32);
        w.mark_sent(&run, &token, &first, "queued", Marked::Sent)
            .await
            .unwrap();
        let k = WindowKeys::new(PREFIX, &run);
        let history = keys::callback_history(PREFIX, &run);
        let listed: bool = c.exists(&history).await.unwrap();
        assert!(!listed, "{topology:?}: no history list for the send alone");
        // the send's entry is "<at> <status> <attempt>", short enough that Redis keeps the
        // record in its compact encoding (its JSON, ~150 bytes, made every record a hash table)
        let entry: String = c.hget(&k.record, "send").await.unwrap();
        let accepted_at: String = c.hget(&k.record, "accepted_at").await.unwrap();
        assert_eq!(
            entry,
            format!("{accepted_at} queued {token}"),
            "{topology:?}"
        );
        let encoding: String = redis::cmd("OBJECT")
            .arg("ENCODING")
            .arg(&k.record)
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(
            encoding == "listpack" || encoding == "ziplist",
            "{topology:?}: the record is a {encoding}"
        );
        let r = receipts.record(&run, None).await.unwrap();
        assert_eq!(summary(&r), ["send:queued"], "{topology:?}");
        // the API's entry is rebuilt whole: the record's sid, the send's time and token
        assert_eq!(
            r.history[0],
            serde_json::json!({"status": "queued", "sid": first, "source": "send",
                "outcome": "applied", "attempt": token,
                "at": accepted_at.parse::<u64>().unwrap()}),
            "{topology:?}"
        );
        receipts
            .apply(&update(&run, &first, "delivered"))
            .await
            .unwrap();
        let r = receipts.record(&run, None).await.unwrap();
        assert_eq!(
            summary(&r),
            ["send:queued", "webhook:delivered"],
            "{topology:?}"
        );
        let ttl: i64 = c.pttl(&history).await.unwrap();
        assert!(
            ttl > 0,
            "{topology:?}: the list a status callback starts expires ({ttl})"
        );
        // later statuses refresh neither lifetime (both are counted from their first write)
        let _: () = c.pexpire(&k.record, 100_000).await.unwrap();
        let _: () = c.pexpire(&history, 100_000).await.unwrap();
        receipts.apply(&update(&run, &first, "read")).await.unwrap();
        for key in [&k.record, &history] {
            let ttl: i64 = c.pttl(key).await.unwrap();
            assert!(
                (1..=100_000).contains(&ttl),
                "{topology:?}: {key} refreshed: {ttl}"
            );
        }
        let r = receipts.record(&run, None).await.unwrap();
        assert_eq!(
            summary(&r),
            ["send:queued", "webhook:delivered", "webhook:read"],
            "{topology:?}"
        );

        // a status callback that beat the marker: both in the list, in arrival order
        let run = format!("raced-{n}");
        let Claim::Claimed { token } = claim(&w, &run, "t1", None).await else {
            panic!("{topology:?}: not claimed");
        };
        let raced = sid(20 + n as u32);
        receipts
            .apply(&update(&run, &raced, "sending"))
            .await
            .unwrap();
        w.mark_sent(&run, &token, &raced, "queued", Marked::Sent)
            .await
            .unwrap();
        let k = WindowKeys::new(PREFIX, &run);
        let inline: Option<String> = c.hget(&k.record, "send").await.unwrap();
        assert_eq!(inline, None, "{topology:?}");
        let r = receipts.record(&run, None).await.unwrap();
        assert_eq!(
            summary(&r),
            ["webhook:sending", "send:queued"],
            "{topology:?}"
        );
        assert_eq!(
            r.status.as_deref(),
            Some("sending"),
            "{topology:?}: ranks decide"
        );

        // a run escalated before any status: the flag's record expires (the record TTL), and
        // its first status gives it the whole record TTL again
        let run = format!("flagged-{n}");
        let k = WindowKeys::new(PREFIX, &run);
        assert!(receipts.mark_escalated(&run, "test").await.unwrap());
        let ttl: i64 = c.pttl(&k.record).await.unwrap();
        assert!((100_000..=600_000).contains(&ttl), "{topology:?}: {ttl}");
        let _: () = c.pexpire(&k.record, 100_000).await.unwrap();
        assert!(!receipts.mark_escalated(&run, "again").await.unwrap());
        let ttl: i64 = c.pttl(&k.record).await.unwrap();
        assert!(
            ttl <= 100_000,
            "{topology:?}: a second flag refreshed it: {ttl}"
        );
        receipts
            .apply(&update(&run, &sid(30 + n as u32), "sent"))
            .await
            .unwrap();
        let ttl: i64 = c.pttl(&k.record).await.unwrap();
        assert!(ttl > 100_000, "{topology:?}: {ttl}");

        // repeat markers are fields of the record, not keys: a repeat is told apart, and a
        // marker that starts a record (a status we do not rank, for a run with no record) gives
        // it the record TTL
        let run = format!("repeated-{n}");
        let k = WindowKeys::new(PREFIX, &run);
        let repeated = |status: &str, id: &str| StatusUpdate {
            repeat_id: Some(id.to_string()),
            ..update(&run, &sid(40 + n as u32), status)
        };
        let outcome = |a: ringback::callbacks::receipts::Applied| a.outcome;
        let first = receipts
            .apply(&repeated("no-such-status", "token:a"))
            .await
            .unwrap();
        assert_eq!(outcome(first), "unknown", "{topology:?}");
        let ttl: i64 = c.pttl(&k.record).await.unwrap();
        assert!(
            (1..=600_000).contains(&ttl),
            "{topology:?}: a record started by a marker expires ({ttl})"
        );
        let again = receipts
            .apply(&repeated("no-such-status", "token:a"))
            .await
            .unwrap();
        assert_eq!(outcome(again), "repeat", "{topology:?}");
        let sent = receipts.apply(&repeated("sent", "token:b")).await.unwrap();
        assert_eq!(outcome(sent), "applied", "{topology:?}");
        let sent = receipts.apply(&repeated("sent", "token:b")).await.unwrap();
        assert_eq!(outcome(sent), "repeat", "{topology:?}");
        let fields: Vec<String> = c.hkeys(&k.record).await.unwrap();
        for marker in ["seen:token:a", "seen:token:b"] {
            assert!(
                fields.iter().any(|f| f == marker),
                "{topology:?}: {marker} in {fields:?}"
            );
        }
        let r = receipts.record(&run, None).await.unwrap();
        assert_eq!(r.status.as_deref(), Some("sent"), "{topology:?}");
        let stray: Vec<String> = c.keys("ringback:receipt-seen:*").await.unwrap();
        assert!(stray.is_empty(), "{topology:?}: no marker keys: {stray:?}");
    }
}

/// The open-attempts index is kept in Redis's skiplist encoding (the claim converts it with a
/// long member it adds and removes in the same step, see `keepIndexWide` in
/// lua/include/window.lua): no reader ever sees that member, the index holds exactly the runs
/// in flight, an index emptied by the markers is deleted and the next claim widens the new one.
/// A user whose ACL refuses OBJECT still claims (the index then keeps the compact encoding).
#[tokio::test]
async fn the_open_index_is_a_skiplist_and_never_shows_its_pad() {
    let e = env("slots-wide-index", "").await;
    let mut c = e.redis.conn().await;
    let index = keys::open_attempts(PREFIX);
    let encoding = |c: &mut redis::aio::MultiplexedConnection| {
        let index = index.clone();
        let mut c = c.clone();
        async move {
            let enc: Option<String> = redis::cmd("OBJECT")
                .arg("ENCODING")
                .arg(&index)
                .query_async(&mut c)
                .await
                .unwrap();
            enc
        }
    };
    let w = window(&e, Topology::Fused, 3000).await;
    let mut tokens = Vec::new();
    for n in 0..3 {
        let run = format!("wide-{n}");
        let Claim::Claimed { token } = claim(&w, &run, &format!("t{n}"), None).await else {
            panic!("{run}: not claimed");
        };
        tokens.push((run, token));
        assert_eq!(encoding(&mut c).await.as_deref(), Some("skiplist"));
        let members: Vec<String> = c.zrange(&index, 0, -1).await.unwrap();
        assert_eq!(members.len(), n + 1, "{members:?}");
        assert!(
            members.iter().all(|m| m.starts_with("wide-")),
            "{members:?}"
        );
    }
    for (n, (run, token)) in tokens.iter().enumerate() {
        let marked = w
            .mark_sent(run, token, &sid(100 + n as u32), "queued", Marked::Sent)
            .await
            .unwrap();
        assert_eq!(marked, MarkSent::Marked);
    }
    let exists: bool = c.exists(&index).await.unwrap();
    assert!(!exists, "an index emptied by the markers is deleted");
    assert!(matches!(
        claim(&w, "wide-again", "t9", None).await,
        Claim::Claimed { .. }
    ));
    assert_eq!(encoding(&mut c).await.as_deref(), Some("skiplist"));
    let _: i64 = c.del(&index).await.unwrap();

    // an ACL without OBJECT: the claim goes on, the index stays compact
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "no-object",
            "on",
            ">pw",
            "~*",
            "&*",
            "+@all",
            "-object",
        ])
        .query_async(&mut c)
        .await
        .unwrap();
    let url = e.redis.url().replace("redis://", "redis://no-object:pw@");
    let client = redis::Client::open(url).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let limited = common::callbacks::window(&e, conn, 3000).with_topology(Topology::Fused);
    assert!(matches!(
        claim(&limited, "compact", "t10", None).await,
        Claim::Claimed { .. }
    ));
    assert_eq!(encoding(&mut c).await.as_deref(), Some("listpack"));
    let members: Vec<String> = c.zrange(&index, 0, -1).await.unwrap();
    assert_eq!(members, ["compact"]);
}
