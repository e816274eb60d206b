//! Replies lost after Redis ran the call: every window call and the fused finish (single and
//! grouped) sent through a proxy that cuts the connection once the call went through, so Redis
//! ran it and the worker never heard. The worker sends the call again; each re-execution must
//! answer as its first run did: one text per run, no overrun counted, no lock counted lost, no
//! job left active, every run finished within seconds. The timings are the defaults' order (the
//! claim's liveness shorter than the lock), and the lock is long enough that stall recovery
//! (a job left active) could not finish a run within the deadline.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use common::callbacks::*;
use common::proxy::LossyProxy;
use common::wait_for;
use redis::AsyncCommands;
use ringback::callbacks::sms::SmsEvent;
use ringback::store::scripts::scripts;
use ringback::{Worker, WorkerConfig};
use tokio_util::sync::CancellationToken;

/// Every run must be finished this soon after the worker starts (a loaded 2-core machine runs
/// this file's tests side by side). A job left active for stall recovery fails a lost-reply
/// test anyway: there each job must have been started once (`ats`).
const WITHIN: Duration = Duration::from_secs(20);

struct Rig {
    e: Env,
    proxy: LossyProxy,
}

async fn rig(test: &str) -> Rig {
    let e = env(test, "").await;
    let proxy = LossyProxy::start(format!("127.0.0.1:{}", e.redis.port).parse().unwrap()).await;
    Rig { e, proxy }
}

/// A worker whose every connection goes through the proxy, on `runs` callbacks added before it
/// starts (runs `<name>-0`, `<name>-1`, ...).
struct Started {
    names: Vec<String>,
    ids: Vec<String>,
    sms: Arc<ringback::callbacks::sms::SmsStats>,
    stats: Arc<ringback::queue::worker::WorkerStats>,
    cancel: CancellationToken,
    handle: tokio::task::JoinHandle<Result<ringback::Stopped, ringback::Error>>,
}

async fn start(r: &Rig, name: &str, runs: usize, fused: bool, concurrency: usize) -> Started {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let e = &r.e;
    let names: Vec<String> = (0..runs).map(|i| format!("{name}-{i}")).collect();
    let mut ids = vec![];
    for run in &names {
        ids.push(add(e, &data(run)).await);
    }
    let client = redis::Client::open(r.proxy.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let processor = processor(e, conn, sms_config()).with_fused_finish(fused);
    let sms = processor.stats();
    let config = WorkerConfig {
        redis_url: r.proxy.url(),
        concurrency,
        lock_duration: Duration::from_secs(10),
        lock_renew_time: Duration::from_secs(5),
        stalled_interval: Duration::from_secs(5),
        ..worker_config(e)
    };
    let worker = Worker::new(config, processor).unwrap();
    let stats = worker.stats();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    Started {
        names,
        ids,
        sms,
        stats,
        cancel,
        handle,
    }
}

impl Started {
    /// Every job completed within [`WITHIN`], each run texted once, no job left active; then
    /// the worker stops.
    async fn each_texted_once(mut self, r: &Rig) -> Self {
        let e = &r.e;
        for id in &self.ids {
            let (state, _) = finished_within(e, id, WITHIN).await;
            assert_eq!(state, "completed", "job {id}");
        }
        for run in &self.names {
            assert_eq!(texts(e, run), 1, "{run} texted once");
        }
        let mut c = e.redis.conn().await;
        let active: Vec<String> = c.lrange(e.keys.active(), 0, -1).await.unwrap();
        assert!(active.is_empty(), "no job left active: {active:?}");
        self.cancel.cancel();
        let _ = (&mut self.handle).await;
        self
    }
}

/// Run `runs` callbacks with the proxy's losses armed; assert the outcome described in the
/// module docs.
async fn run_through(r: &Rig, runs: usize, fused: bool, concurrency: usize) {
    let overruns = ringback::callbacks::window::window_overruns();
    let run = start(r, "lost", runs, fused, concurrency)
        .await
        .each_texted_once(r)
        .await;
    assert_eq!(
        r.proxy.pending(),
        0,
        "every reply meant to be lost was lost"
    );
    let mut c = r.e.redis.conn().await;
    for id in &run.ids {
        let started: Option<String> = c.hget(r.e.keys.job(id), "ats").await.unwrap();
        assert_eq!(
            started.as_deref(),
            Some("1"),
            "job {id} started once: no stall recovery ran it again"
        );
    }
    nothing_counted_twice(&run.stats, &run.sms, overruns, runs);
}

/// No lock counted lost, no overrun, no claim that waited for another attempt, one send per
/// run. One run per job, so no claim ever waits for another attempt: a re-executed claim that
/// did not know its own attempt would wait for that attempt's liveness and resolve it.
fn nothing_counted_twice(
    stats: &ringback::queue::worker::WorkerStats,
    sms: &ringback::callbacks::sms::SmsStats,
    overruns_before: u64,
    runs: usize,
) {
    assert_eq!(
        stats.lock_lost.load(Ordering::Relaxed),
        0,
        "no lock counted lost"
    );
    assert_eq!(
        ringback::callbacks::window::window_overruns(),
        overruns_before,
        "no overrun counted"
    );
    for event in [SmsEvent::Busy, SmsEvent::Lost, SmsEvent::Reconciled] {
        assert_eq!(sms.get(event), 0, "{event:?}");
    }
    assert_eq!(sms.get(SmsEvent::Sent), runs as u64);
}

#[tokio::test]
async fn a_lost_fused_finish_reply_answers_the_same_job_and_claim_again() {
    let r = rig("lost-fused").await;
    // one job at a time: every finish is a single finish_sent call
    r.proxy.lose_script(scripts().finish_sent.hash(), 4);
    run_through(&r, 20, true, 1).await;
    assert_eq!(r.proxy.lost.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn a_lost_grouped_finish_reply_answers_each_job_again() {
    let r = rig("lost-batch").await;
    // many at once: finishes queue behind the ones in flight and leave as one batch call
    r.proxy.lose_script(scripts().finish_sent_batch.hash(), 3);
    run_through(&r, 120, true, 16).await;
    assert_eq!(r.proxy.lost.load(Ordering::SeqCst), 3);
}

/// A finishing call sent again only after an outage longer than what it prepared stays fresh
/// (the claim's freshness bound, here 1 s): its answer is still there for the re-send, so the
/// job it fetched runs at once (no lock counted lost, no stall recovery), and the stale claim is
/// given back before anything is sent with it.
async fn after_an_outage(name: &str, sha: &str, losses: usize, runs: usize, concurrency: usize) {
    let r = rig(name).await;
    r.proxy.outage_after_loss(Duration::from_millis(2500));
    r.proxy.lose_script(sha, losses);
    run_through(&r, runs, true, concurrency).await;
    assert_eq!(r.proxy.lost.load(Ordering::SeqCst), losses);
}

#[tokio::test]
async fn a_finish_sent_again_after_an_outage_still_answers_as_its_first_run() {
    after_an_outage("lost-outage", scripts().finish_sent.hash(), 2, 6, 1).await;
}

#[tokio::test]
async fn a_lost_batch_reply_after_an_outage_answers_each_job_again() {
    after_an_outage(
        "lost-batch-outage",
        scripts().finish_sent_batch.hash(),
        1,
        60,
        16,
    )
    .await;
}

#[tokio::test]
async fn a_lost_claim_reply_claims_for_the_same_attempt_again() {
    let r = rig("lost-claim").await;
    // fused finish off: every run's claim is its own window_claim call
    r.proxy.lose_script(scripts().window_claim.hash(), 4);
    run_through(&r, 20, false, 2).await;
}

#[tokio::test]
async fn a_lost_marker_reply_marks_without_an_overrun() {
    let r = rig("lost-mark").await;
    r.proxy.lose_script(scripts().window_mark_sent.hash(), 4);
    run_through(&r, 20, false, 2).await;
}

#[tokio::test]
async fn a_lost_plain_claim_reply_on_the_first_job_of_a_fused_worker() {
    let r = rig("lost-first-claim").await;
    // the first job has no finish before it: it claims with window_claim even when fused
    r.proxy.lose_script(scripts().window_claim.hash(), 1);
    r.proxy.lose_script(scripts().finish_sent.hash(), 1);
    run_through(&r, 6, true, 1).await;
}

/// A claim answered later than its freshness bound (pending TTL less the provider timeout and
/// the safety margin, and never under 1 s: here 1 s) starts no send: the worker gives the claim back and claims
/// again, so the attempt that sends always has its whole provider timeout inside its liveness.
async fn late_answers(r: &Rig, sha: &str, fused: bool) -> Arc<ringback::callbacks::sms::SmsStats> {
    r.proxy.slow_script(sha, 2, Duration::from_millis(1500));
    start(r, "late", 6, fused, 1)
        .await
        .each_texted_once(r)
        .await
        .sms
}

#[tokio::test]
async fn a_claim_answered_too_late_is_given_back_before_any_send() {
    let r = rig("late-claim").await;
    let sms = late_answers(&r, scripts().window_claim.hash(), false).await;
    // each late claim was given back (the job came back at once), then claimed afresh
    assert_eq!(sms.get(SmsEvent::Busy), 2);
    assert_eq!(sms.get(SmsEvent::Sent), 6);
    sent_within_the_bound_of_their_claim(&r).await;
}

#[tokio::test]
async fn a_fused_finish_answered_too_late_gives_its_next_claim_back() {
    let r = rig("late-fused").await;
    let sms = late_answers(&r, scripts().finish_sent.hash(), true).await;
    assert_eq!(sms.get(SmsEvent::Sent), 6);
    sent_within_the_bound_of_their_claim(&r).await;
}

/// Every run's message was marked sent within the freshness bound of the claim that sent it
/// (a late answer that had been used would show ~1.5 s between them).
async fn sent_within_the_bound_of_their_claim(r: &Rig) {
    let mut c = r.e.redis.conn().await;
    for i in 0..6 {
        let k = ringback::store::keys::WindowKeys::new(
            &sms_config().claim_prefix,
            &format!("late-{i}"),
        );
        let (claimed, sent): (i64, i64) = redis::cmd("HMGET")
            .arg(&k.attempt)
            .arg("claimed_at")
            .arg("sent_at")
            .query_async(&mut c)
            .await
            .unwrap();
        assert!(
            sent - claimed < 1000,
            "late-{i}: sent {} ms after its claim",
            sent - claimed
        );
    }
}

/// Each window call run twice on the same arguments answers the second time as the first.
#[tokio::test]
async fn every_window_call_run_twice_answers_as_its_first_run() {
    let e = env("twice", "").await;
    let client = redis::Client::open(e.redis.url()).unwrap();
    let conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    let w = window(&e, conn, 3000);
    let claim = |run: &'static str, token: &'static str| {
        let w = w.clone();
        async move {
            w.claim(run, token, None, "1", "worker", TO, "", "hello")
                .await
                .unwrap()
        }
    };
    use ringback::callbacks::window::Claim;
    // a claim: the second run is the same caller's claim, not another attempt's (busy)
    for _ in 0..2 {
        assert!(
            matches!(claim("twice-claim", "t1").await, Claim::Claimed { token } if token == "t1")
        );
    }
    // a permanent refusal closes the run: the second run says it did
    claim("twice-failed", "t2").await;
    for _ in 0..2 {
        assert!(
            w.release("twice-failed", "t2", "21211", "send-failed", Duration::ZERO)
                .await
                .unwrap()
        );
    }
    // a retry-later release keeps the claim: the second run finds it as the first left it
    claim("twice-retry", "t3").await;
    for _ in 0..2 {
        assert!(
            w.release("twice-retry", "t3", "429", "released", Duration::ZERO)
                .await
                .unwrap()
        );
    }
    // an unknown send settled after a person was told
    claim("twice-unknown", "t4").await;
    for _ in 0..2 {
        assert!(
            w.settle_unknown("twice-unknown", "t4", "look-alikes")
                .await
                .unwrap()
        );
    }
    // and none of them is taken for another attempt's: a different token is still refused
    assert!(
        !w.settle_unknown("twice-unknown", "t5", "look-alikes")
            .await
            .unwrap()
    );
    assert!(
        !w.release("twice-failed", "t6", "21211", "send-failed", Duration::ZERO)
            .await
            .unwrap()
    );
}

/// The same losses on a real Redis Cluster: each node behind a proxy of its own, announced as
/// the node's address (`cluster-announce-port`), so every connection the cluster client makes,
/// after a MOVED too, goes through a proxy. The cluster layout's scripts (`PerSlot`) lose their
/// replies on each master: the claim and the sent marker (with the cluster client's own retry
/// of a request whose connection broke, which re-sends the call as ringback does).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_a_cluster_lost_claim_and_marker_replies_text_each_run_once() {
    use common::cluster::RedisCluster;
    let cluster = RedisCluster::start();
    let e = env("lost-cluster", "").await;
    let mut proxies = vec![];
    for port in cluster.ports() {
        let proxy = LossyProxy::start(format!("127.0.0.1:{port}").parse().unwrap()).await;
        let mut node = cluster.node(port);
        for (setting, value) in [
            ("cluster-announce-bus-port", port + 10000),
            ("cluster-announce-port", proxy.addr.port()),
        ] {
            let _: () = redis::cmd("CONFIG")
                .arg("SET")
                .arg(setting)
                .arg(value)
                .query(&mut node)
                .unwrap();
        }
        proxies.push((port, proxy));
    }
    // every node lists every node at its proxy before the worker connects
    let announced: Vec<u16> = proxies.iter().map(|(_, p)| p.addr.port()).collect();
    let ports = cluster.ports();
    wait_for(
        Duration::from_secs(20),
        "every node to announce its proxy",
        || {
            let (cluster, ports, announced) = (&cluster, ports.clone(), announced.clone());
            async move {
                ports
                    .iter()
                    .all(|port| {
                        let nodes: String = redis::cmd("CLUSTER")
                            .arg("NODES")
                            .query(&mut cluster.node(*port))
                            .unwrap_or_default();
                        nodes.lines().all(|l| {
                            announced
                                .iter()
                                .any(|a| l.contains(&format!("127.0.0.1:{a}@")))
                        })
                    })
                    .then_some(())
            }
        },
    )
    .await;
    for (port, proxy) in &proxies {
        if cluster.is_master(*port) {
            proxy.lose_script(scripts().window_claim.hash(), 1);
            proxy.lose_script(scripts().window_mark_sent.hash(), 1);
        }
    }
    let seeds: Vec<String> = announced.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let url = format!("redis+cluster://{}", seeds.join(","));
    let q = e.queue.clone();
    let k = ringback::store::keys::QueueKeys::new("{bull}", &q);
    let client = ringback::store::connection::client(&url, &Default::default()).unwrap();
    let mut conn = ringback::store::connection::commands(&client)
        .await
        .unwrap();
    assert!(conn.is_cluster());
    let runs: Vec<String> = (0..30).map(|i| format!("lost-cluster-{i}")).collect();
    for (i, run) in runs.iter().enumerate() {
        let id = (i + 1).to_string();
        let _: () = redis::cmd("HSET")
            .arg(k.job(&id))
            .arg(&[
                ("name", "agent-callback"),
                ("data", data(run).as_str()),
                ("opts", r#"{"attempts":3}"#),
                ("timestamp", &ringback::clock::now_ms().to_string()),
                ("delay", "0"),
                ("priority", "0"),
            ])
            .query_async(&mut conn)
            .await
            .unwrap();
        let _: () = redis::cmd("LPUSH")
            .arg(k.wait())
            .arg(&id)
            .query_async(&mut conn)
            .await
            .unwrap();
    }
    let _: () = redis::cmd("ZADD")
        .arg(k.marker())
        .arg(0)
        .arg("0")
        .query_async(&mut conn)
        .await
        .unwrap();
    let overruns = ringback::callbacks::window::window_overruns();
    let processor = ringback::callbacks::sms::SmsProcessor::new(
        sms_config(),
        conn.clone(),
        ringback::twilio::TwilioClient::new(twilio_config(&e.sim_base)).unwrap(),
        "{bull}",
        &q,
    );
    let sms = processor.stats();
    let config = WorkerConfig {
        redis_url: url.clone(),
        prefix: "{bull}".into(),
        concurrency: 4,
        lock_duration: Duration::from_secs(10),
        lock_renew_time: Duration::from_secs(5),
        stalled_interval: Duration::from_secs(5),
        ..worker_config(&e)
    };
    let worker = Worker::new(config, processor).unwrap();
    let stats = worker.stats();
    let cancel = CancellationToken::new();
    let handle = tokio::spawn(worker.run(cancel.clone()));
    let done = wait_for(WITHIN, "every run to complete", || {
        let (mut c, k) = (conn.clone(), k.clone());
        async move {
            let n: usize = c.zcard(k.completed()).await.unwrap_or(0);
            (n == 30).then_some(n)
        }
    })
    .await;
    assert_eq!(done, 30);
    for run in &runs {
        assert_eq!(texts(&e, run), 1, "{run} texted once");
    }
    let active: Vec<String> = conn.lrange(k.active(), 0, -1).await.unwrap();
    assert!(active.is_empty(), "no job left active: {active:?}");
    let lost: usize = proxies
        .iter()
        .map(|(_, p)| p.lost.load(Ordering::SeqCst))
        .sum();
    let pending: usize = proxies.iter().map(|(_, p)| p.pending()).sum();
    assert_eq!(
        pending, 0,
        "every reply meant to be lost was lost ({lost} lost)"
    );
    assert_eq!(
        lost, 6,
        "a claim's and a marker's reply on each of the 3 masters"
    );
    nothing_counted_twice(&stats, &sms, overruns, 30);
    cancel.cancel();
    let _ = handle.await;
}
