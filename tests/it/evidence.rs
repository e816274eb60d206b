//! What counts as evidence of a send whose answer was lost: a receipt that names the run
//! proves it; a look-alike message nobody links to the run is never a reason to send again and
//! never taken as the run's on its own; a message from before the attempt or from a sender the
//! deployment never uses is ruled out. Against the Twilio simulator and a real redis-server.

use crate::common;

use std::time::Duration;

use common::callbacks::*;
use redis::AsyncCommands;
use ringback::callbacks::sms::SmsEvent;
use ringback::twilio::{CreateMessage, SendOutcome, Sender, TwilioClient};

/// The legacy worker's number (listed in `RINGBACK_SENDERS`) and a number of another product on
/// the same account (not listed).
const LEGACY_FROM: &str = "+15550199999";
const OTHER_FROM: &str = "+15550188888";

/// A templated verdict: every run and every look-alike carries the same body.
const TEMPLATED: &str = "Deploy finished \u{2014} 2 approvals needed";

/// Twilio answers the next create 503 and creates nothing: its outcome is unknown to ringback.
fn server_error_once() -> serde_json::Value {
    serde_json::json!({"create": [{"fault": "server_error", "status": 503, "times": 1}]})
}

/// Another sender of the account texts `TO` with `body`; the message's sid.
async fn look_alike(e: &Env, from: &str, body: &str) -> String {
    let client = TwilioClient::new(ringback::twilio::TwilioConfig {
        sender: Sender::From(from.into()),
        ..twilio_config(&e.sim_base)
    })
    .unwrap();
    let msg = CreateMessage {
        to: TO.into(),
        body: body.into(),
        from: None,
        status_callback: None,
        validity_period: None,
    };
    // a fault may drop the answer after the message was created: it exists either way
    for _ in 0..20 {
        if let SendOutcome::Accepted(m) = client.create_message(&msg).await {
            return m.sid;
        }
        let newest = e.sim.store.list(|m| m.from.as_deref() == Some(from));
        if let Some(m) = newest.first().filter(|m| m.body.as_deref() == Some(body)) {
            return m.sid.clone();
        }
    }
    panic!("the simulator took no look-alike");
}

/// `sid` as if Twilio had created it `secs` seconds ago.
fn backdate(e: &Env, sid: &str, secs: i64) {
    let then = chrono::Utc::now() - chrono::Duration::seconds(secs);
    e.sim.store.update(sid, |m| {
        m.date_created = Some(ringback::twilio_sim::twilio_date(then));
    });
}

/// A worker with `sms` texts `run`'s callback of `body` to [`TO`]: the worker and the job's
/// return value once it completed.
async fn callback(
    e: &Env,
    sms: ringback::callbacks::sms::SmsConfig,
    run: &str,
    body: &str,
) -> (Running, serde_json::Value) {
    let w = start_worker(e, sms).await;
    let data = serde_json::json!({"runId": run, "to": TO, "body": body}).to_string();
    let id = add(e, &data).await;
    let (state, h) = finished(e, &id).await;
    assert_eq!(state, "completed", "{h:?}");
    (w, returnvalue(&h))
}

/// The run whose attempt created `sid`, from the StatusCallback it was created with.
fn run_of(e: &Env, sid: &str) -> Option<String> {
    let url = e.sim.store.status_callback_of(sid)?;
    let query = url.split_once('?')?.1;
    serde_urlencoded::from_str::<Vec<(String, String)>>(query)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == "runId")
        .map(|(_, v)| v)
}

/// Nothing was created (a 503), and the only look-alikes are one from before the attempt and
/// one from a sender the deployment never uses: neither holds the send back, which goes out once
/// after the reconcile window, and nobody is told.
#[tokio::test]
async fn look_alikes_from_before_the_attempt_or_another_sender_are_ruled_out() {
    let e = env("ruled-out", "").await;
    let run = "ro1";
    let body = format!("Run {run} done \u{2014} approve?");
    // from the deployment's own sender, but two minutes before the attempt
    let old = look_alike(&e, "+15005550006", &body).await;
    backdate(&e, &old, 120);
    look_alike(&e, OTHER_FROM, &body).await;
    set_faults(&e, server_error_once()).await;
    let sms = ringback::callbacks::sms::SmsConfig {
        senders: vec![LEGACY_FROM.into()],
        ..sms_config()
    };
    let (w, rv) = callback(&e, sms, run, &body).await;
    assert_eq!(rv["deduplicated"], false, "sent, once: {rv}");
    assert_eq!(
        w.stats.get(SmsEvent::Lost),
        1,
        "sent after a lookup found nothing"
    );
    let mine = e
        .sim
        .store
        .list(|m| m.from.as_deref() == Some("+15005550006"));
    assert_eq!(mine.len(), 2, "the old look-alike and this run's one text");
    assert!(escalation_ids(&e).await.is_empty(), "nothing to tell");
    w.stop().await;
}

/// The same lost create with `RINGBACK_SENDERS` unset: any sender of the account may be this
/// deployment's, so the other product's look-alike holds the send back: settled unknown and
/// escalated, never sent on a guess.
#[tokio::test]
async fn without_a_sender_list_any_senders_look_alike_is_told_not_guessed() {
    let e = env("any-sender", "").await;
    let run = "as1";
    let body = format!("Run {run} done \u{2014} approve?");
    look_alike(&e, OTHER_FROM, &body).await;
    set_faults(&e, server_error_once()).await;
    let (w, rv) = callback(&e, sms_config(), run, &body).await;
    assert_eq!(rv["status"], "unknown");
    assert_eq!(w.stats.get(SmsEvent::Ambiguous), 1);
    assert_eq!(e.sim.store.all().len(), 1, "never sent on a guess");
    assert_eq!(escalation_ids(&e).await, [format!("escalation:{run}")]);
    w.stop().await;
}

/// The legacy worker claimed the run, texted it from its own number two minutes ago and died
/// before writing "sent"; ringback takes the live claim over. Its lookup reaches back the legacy
/// lookback and reads every sender, so the legacy text holds the send back: settled unknown and
/// told, never a second text.
#[tokio::test]
async fn a_claim_taken_from_the_legacy_worker_looks_back_for_its_send() {
    let e = env("taken", "").await;
    let run = "tk1";
    let body = format!("Run {run} done \u{2014} approve?");
    let sid = look_alike(&e, LEGACY_FROM, &body).await;
    backdate(&e, &sid, 120);
    let mut c = e.redis.conn().await;
    let claim = ringback::store::keys::WindowKeys::new("agent-callback:", run).claim;
    let _: () = c.set_ex(&claim, "pending", 600).await.unwrap();
    let sms = ringback::callbacks::sms::SmsConfig {
        senders: vec![LEGACY_FROM.into()],
        ..sms_config()
    };
    let (w, rv) = callback(&e, sms, run, &body).await;
    assert_eq!(rv["status"], "unknown");
    assert_eq!(e.sim.store.all().len(), 1, "no second text");
    assert_eq!(escalation_ids(&e).await, [format!("escalation:{run}")]);
    w.stop().await;
}

struct Tally {
    runs: usize,
    lost_answers: u64,
    unknowns: usize,
    escalated: usize,
    duplicates: usize,
    silent_sent: usize,
    look_alikes: usize,
}

/// A busy recipient: while 30 runs with one templated body are texted to the same person and
/// 30 % of create answers are lost, the legacy worker and another product of the account text
/// that person the same body every 150 ms. `receipts`: status callbacks reach `serve`
/// (otherwise they are posted where nothing listens).
async fn busy_recipient(name: &str, receipts: bool) -> Tally {
    let e = env(
        name,
        r#"{"create":[{"rate":0.3,"fault":"create_then_drop"}]}"#,
    )
    .await;
    let mut sms = ringback::callbacks::sms::SmsConfig {
        senders: vec![LEGACY_FROM.into()],
        ..sms_config()
    };
    if receipts {
        serve_receipts(&e, &mut sms).await;
    } else {
        sms.status_callback_url = Some("http://127.0.0.1:9/api/notify/webhook/status".into());
    }
    let w = start_worker(&e, sms).await;
    let stop = tokio_util::sync::CancellationToken::new();
    let noise = {
        let (stop, base) = (stop.clone(), e.sim_base.clone());
        tokio::spawn(async move {
            let mut n = 0;
            let e = Noise { sim_base: base };
            while !stop.is_cancelled() {
                let from = if n % 2 == 0 { LEGACY_FROM } else { OTHER_FROM };
                e.send(from).await;
                n += 1;
                tokio::time::sleep(Duration::from_millis(150)).await;
            }
            n
        })
    };
    let runs: Vec<String> = (0..30).map(|i| format!("{name}-{i}")).collect();
    let mut ids = vec![];
    for run in &runs {
        let data = serde_json::json!({"runId": run, "to": TO, "body": TEMPLATED}).to_string();
        ids.push(add(&e, &data).await);
    }
    let mut results = vec![];
    for id in &ids {
        let (state, h) = finished(&e, id).await;
        assert_eq!(state, "completed", "{h:?}");
        results.push(returnvalue(&h));
    }
    stop.cancel();
    let look_alikes = noise.await.unwrap();
    let all = e.sim.store.all();
    let escalated = escalation_ids(&e).await;
    let mut tally = Tally {
        runs: runs.len(),
        lost_answers: w.stats.get(SmsEvent::Ambiguous),
        unknowns: 0,
        escalated: escalated.len(),
        duplicates: 0,
        silent_sent: 0,
        look_alikes,
    };
    for (run, rv) in runs.iter().zip(&results) {
        let own = all
            .iter()
            .filter(|m| run_of(&e, &m.sid).as_deref() == Some(run.as_str()))
            .count();
        tally.duplicates += own.saturating_sub(1);
        assert!(own >= 1, "{run}: never texted");
        match rv["messageSid"].as_str() {
            // "sent" with a message that is not this run's own: the silent loss
            Some(sid) if run_of(&e, sid).as_deref() != Some(run.as_str()) => tally.silent_sent += 1,
            Some(_) => {}
            None => {
                assert_eq!(rv["status"], "unknown", "{rv}");
                tally.unknowns += 1;
                assert!(
                    escalated.contains(&format!("escalation:{run}")),
                    "{run}: an unknown is told"
                );
            }
        }
    }
    eprintln!(
        "busy recipient ({}): {} runs, {} look-alike texts, {} lost answers → {} unknowns (escalated: {}), {} duplicates, {} silent sent",
        if receipts {
            "receipts reach serve"
        } else {
            "no receipts"
        },
        tally.runs,
        tally.look_alikes,
        tally.lost_answers,
        tally.unknowns,
        tally.escalated,
        tally.duplicates,
        tally.silent_sent
    );
    w.stop().await;
    tally
}

/// Sends the look-alike noise (the simulator's faults apply to it as to every create).
struct Noise {
    sim_base: String,
}

impl Noise {
    async fn send(&self, from: &str) {
        let client = TwilioClient::new(ringback::twilio::TwilioConfig {
            sender: Sender::From(from.into()),
            ..twilio_config(&self.sim_base)
        })
        .unwrap();
        let _ = client
            .create_message(&CreateMessage {
                to: TO.into(),
                body: TEMPLATED.into(),
                from: None,
                status_callback: None,
                validity_period: None,
            })
            .await;
    }
}

/// The trade-off, measured: look-alikes never cause a second text or a silent "sent"; with
/// receipts reaching `serve` (the production set-up) they cause no unknowns either, because the
/// receipt that names the run proves its message; without receipts every lost answer among
/// look-alikes is settled unknown and told.
#[tokio::test]
async fn a_busy_recipient_with_lost_answers_gets_one_text_per_run_and_no_silent_sent() {
    let (with, without) = tokio::join!(
        busy_recipient("busy-receipts", true),
        busy_recipient("busy-silent", false)
    );
    for t in [&with, &without] {
        assert_eq!(t.duplicates, 0, "0 duplicates");
        assert_eq!(t.silent_sent, 0, "0 silent sent");
        assert!(t.look_alikes > 0);
    }
    assert_eq!(with.unknowns, 0, "receipts prove every lost answer");
    assert!(with.lost_answers > 0 && without.lost_answers > 0);
    assert_eq!(
        without.unknowns as u64, without.lost_answers,
        "each lost answer among look-alikes is told, not guessed"
    );
    assert_eq!(without.escalated, without.unknowns);
}
