//! Differential property test of the cron port: node-harness/bin/cron-oracle.js generates cron
//! cases from a seed (patterns valid and not, DST zones, start times, startDate/endDate/utc) and
//! answers them with BullMQ's own getNextMillis of bullmq 5.81.5 (cron-parser 4) and 6.7.0
//! (cron-parser 5); ours must give the same next run, or refuse the same patterns with the same
//! message. CRON_CASES (default 3000) and CRON_SEED (default 1) size it; scripts/cron-property
//! runs the full size. Cases without a tz run in the zone given to Node as TZ (CRON_TZ).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use ringback::queue::cron::{CronError, Dialect, Schedule, Zone, next_millis};
use serde_json::Value;

fn env_or(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

/// Our answer in the oracle's terms: Ok(Some(next)) / Ok(None) / Err(message).
fn ours(dialect: Dialect, case: &Value, local: &Zone) -> Result<Option<i64>, String> {
    let s = Schedule {
        pattern: case["pattern"].as_str().unwrap_or_default().to_string(),
        tz: case["tz"].as_str().map(str::to_string),
        utc: case["utc"].as_bool().unwrap_or(false),
        start_date: case["startDate"].as_i64(),
        end_date: case["endDate"].as_i64(),
        immediately: false,
        hash_seed: case["hashSeed"].as_str().map(str::to_string),
    };
    let millis = case["millis"].as_i64().unwrap_or_default();
    next_millis(dialect, &s, millis, 0, local).map_err(|e| match e {
        CronError::Pattern { reason, .. } => reason,
        other => other.to_string(),
    })
}

fn theirs(answer: &Value) -> Result<Option<i64>, String> {
    match answer.get("error") {
        Some(e) => Err(e.as_str().unwrap_or_default().to_string()),
        None => Ok(answer["next"].as_i64()),
    }
}

#[test]
fn next_runs_and_refusals_match_node_on_both_majors() {
    let cases = env_or("CRON_CASES", "3000");
    let seed = env_or("CRON_SEED", "1");
    let tz = env_or("CRON_TZ", "America/New_York");
    let local = Zone::from_name(&tz).expect("CRON_TZ names a zone");
    let root = env!("CARGO_MANIFEST_DIR");
    let mut child = Command::new("node")
        .arg(format!("{root}/node-harness/bin/cron-oracle.js"))
        .args(["--count", &cases, "--seed", &seed])
        .env("TZ", &tz)
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs (the Node harness is installed by scripts/lib.sh ensure_node_harness)");
    let stdout = child.stdout.take().expect("piped stdout");
    let (mut total, mut runs, mut refused, mut skipped) = (0usize, 0usize, 0usize, 0usize);
    let mut majors_disagree = 0usize;
    let mut mismatches = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("oracle output");
        let case: Value = serde_json::from_str(&line).expect("oracle JSON");
        if case["v4"] != case["v5"] {
            majors_disagree += 1;
        }
        for (dialect, key) in [(Dialect::CronParser4, "v4"), (Dialect::CronParser5, "v5")] {
            total += 1;
            // cron-parser 5 draws H values at random without a hashSeed: nothing to compare
            if dialect == Dialect::CronParser5
                && case["pattern"].as_str().unwrap_or_default().contains('H')
                && case["hashSeed"].is_null()
            {
                skipped += 1;
                continue;
            }
            let want = theirs(&case[key]);
            let got = ours(dialect, &case, &local);
            match &want {
                Ok(Some(_)) => runs += 1,
                Err(_) => refused += 1,
                Ok(None) => {}
            }
            if got != want {
                mismatches.push(format!("{key} {line}\n   ours: {got:?}"));
            }
        }
    }
    let status = child.wait().expect("node exits");
    assert!(status.success(), "cron-oracle.js failed: {status}");
    eprintln!(
        "cron property: {total} answers ({runs} next runs, {refused} refusals, {skipped} unseeded H \
         patterns skipped; the two majors disagree on {majors_disagree} cases), {} mismatches",
        mismatches.len()
    );
    assert!(
        total > 0 && runs > total / 4,
        "the generator produced too few valid cases"
    );
    assert!(
        majors_disagree > 0,
        "no case where cron-parser 4 and 5 disagree: the test could not tell the majors apart"
    );
    let shown: Vec<_> = mismatches.iter().take(15).cloned().collect();
    assert!(
        mismatches.is_empty(),
        "{} mismatches, first:\n{}",
        mismatches.len(),
        shown.join("\n")
    );
}
