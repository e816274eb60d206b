// What Prometheus will scrape, checked on real processes: a ringback worker and
// `ringback serve` on a real redis-server and the Twilio simulator do real work (callbacks
// enqueued by the real bullmq Queue and texted, a signed status callback reporting one of them
// undelivered, which escalates it, and a badly signed one refused); then each /metrics is scraped
// and must pass `promtool check metrics`, and together they must hold every metric that
// deploy/alerts.yml names, with the `queue` label its alerts group by. The counters the alerts
// watch with increase() must be exported from 0 before their first event (a series born at 1
// has no increase: the first escalation after a restart would never alert). The Dockerfile's
// HEALTHCHECK command is run against both processes too, and `ringback check-config` reads
// deploy/ringback.env.example.
//
// promtool comes from Debian's `prometheus` package (scripts/check-deploy installs it): without
// it the promtool test is skipped, saying so; every other test runs.
'use strict';

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');
const twilio = require('twilio');
const { Lab, runData, API_TOKEN } = require('../lib/drill/lab');
const { WorkerProcess } = require('../lib/harness/subject');
const { waitFor } = require('../lib/harness/wait');
const { runToEnd } = require('../lib/harness/reaper');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');
const { freePort } = require('../lib/harness/redis');

const REPO = path.resolve(__dirname, '..', '..');
const ALERTS = path.join(REPO, 'deploy', 'alerts.yml');
const DOCKERFILE = path.join(REPO, 'Dockerfile');
const QUEUE = 'metrics-scrape';
const RUNS = 3;
// The URL Twilio would call, as serve is told (`RINGBACK_PUBLIC_URL`): signatures cover it.
const PUBLIC_URL = 'https://ringback.test';
// The drill lab's simulator account (lib/drill/lab.js).
const AUTH_TOKEN = 'drill-auth-token';
const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
// Every reason an escalation can have (docs/metrics.md, `ringback_escalations_total`; the
// metrics contract).
const ESCALATION_REASONS = ['undelivered', 'permanent', 'unknown', 'unknown_settled', 'receipt_missing', 'drain', 'held', 'invalid'];

function promtoolMissing() {
  const probe = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    return 'promtool not found: install Debian\'s prometheus package (scripts/check-deploy installs it); the promtool check of the scrapes is skipped';
  }
  return false;
}
const PROMTOOL_MISSING = promtoolMissing();


/**
 * The PromQL expressions of deploy/alerts.yml: `expr: <line>` or `expr: |` and the lines indented
 * below it (the file's two forms; scripts/check-deploy runs promtool on the file itself).
 */
function alertExpressions() {
  const lines = fs.readFileSync(ALERTS, 'utf8').split('\n');
  const exprs = [];
  for (let i = 0; i < lines.length; i++) {
    const m = /^(\s*)expr:\s*(.*)$/.exec(lines[i]);
    if (!m) continue;
    if (m[2] !== '|') {
      exprs.push(m[2]);
      continue;
    }
    const body = [];
    while (i + 1 < lines.length && (lines[i + 1].trim() === '' || lines[i + 1].search(/\S/) > m[1].length)) body.push(lines[++i]);
    exprs.push(body.join('\n'));
  }
  return exprs;
}

/** Metric names an expression selects (ringback's own; functions and labels are not names). */
function metricNames(expr) {
  return [...new Set([...expr.replace(/"[^"]*"/g, '""').matchAll(/\bringback_[a-z0-9_]+\b/g)].map((m) => m[0]))];
}

/** A scrape, parsed: samples (name, labels, value) and the declared TYPE of each family. */
function parseExposition(text) {
  const samples = [];
  const types = new Map();
  for (const line of text.split('\n')) {
    const t = /^# TYPE (\S+) (\S+)/.exec(line);
    if (t) types.set(t[1], t[2]);
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels = {};
    for (const l of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[4]) });
  }
  return { samples, types, text };
}

async function scrape(base) {
  const res = await fetch(`${base}/metrics`);
  assert.equal(res.status, 200, `${base}/metrics answered ${res.status}`);
  return parseExposition(await res.text());
}

/**
 * `promtool check metrics` on a scrape: {code, problems}. Exit 0 is clean, 3 lint problems (one a
 * line: `<metric> <text>`), anything else an error.
 */
function promtoolCheck(text) {
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  const problems = (r.stderr || '').split('\n').filter((l) => l.trim());
  return { code: r.status, problems, error: r.error };
}

/**
 * Lint problems that are the OpenMetrics text format, not ours: prometheus-client declares a
 * counter family without its `_total` suffix (`# HELP x`, `# TYPE x counter`, sample `x_total`), and
 * promtool's linter, reading the classic format, looks for `# HELP x_total`.
 */
function openMetricsArtefact(problem, scraped) {
  const m = /^(\S+)_total no help text$/.exec(problem);
  return Boolean(m && scraped.types.get(m[1]) === 'counter' && scraped.text.includes(`# HELP ${m[1]} `));
}

describe('metrics scrape: what deploy/alerts.yml watches, on a real worker and serve', () => {
  let lab;
  let worker;
  let serve;
  let workerBase;
  const scraped = {};

  before(async () => {
    lab = await new Lab({ name: 'metrics-scrape', timings: 'prod' }).start();
    // Production-like: no drill mode (lib/drill/lab.js turns it on for its crash points).
    const env = { ...lab.ringbackEnv(QUEUE) };
    delete env.RINGBACK_DRILL;
    const metricsPort = await freePort();
    workerBase = `http://127.0.0.1:${metricsPort}`;
    worker = lab.track(new WorkerProcess('ringback worker', lab.bin, ['worker'], { ...env, RINGBACK_METRICS_LISTEN: `127.0.0.1:${metricsPort}` }));
    const serveEnv = { ...env, RINGBACK_API_TOKEN: API_TOKEN, RINGBACK_PUBLIC_URL: PUBLIC_URL };
    delete serveEnv.RINGBACK_METRICS_LISTEN;
    serve = await lab.listening(lab.track(new WorkerProcess('ringback serve', lab.bin, ['serve', '--listen', '127.0.0.1:0'], serveEnv)));
    await worker.waitStarted();
    await waitFor(async () => (await fetch(`${workerBase}/healthz`).catch(() => null))?.ok, 15_000, 'the worker\'s metrics listener');

    // Real work: callbacks through the real bullmq Queue, texted at the simulator.
    const q = lab.queue(QUEUE);
    const runs = Array.from({ length: RUNS }, (_, i) => runData('scrape', i));
    await q.addBulk(runs.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS, jobId: d.runId } })));
    const verdict = await lab.settle(runs, [q], 30_000);
    assert.ok(verdict.settled && verdict.texts === RUNS && verdict.duplicates.length === 0, `the callbacks were texted once each: ${JSON.stringify(verdict)}\n${worker.output().slice(-2000)}`);

    // A signed status callback: run 0 undelivered (serve records it and escalates the run).
    const runId = runs[0].runId;
    const rec = await fetch(`${serve.base}/api/notify/callbacks/${runId}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
    assert.equal(rec.status, 200, `GET the callback record: ${rec.status} ${await rec.clone().text()}`);
    const sid = (await rec.json()).messageSid;
    assert.match(String(sid), /^SM[0-9a-f]{32}$/, 'the record names the message');
    const target = `/api/notify/webhook/status?runId=${encodeURIComponent(runId)}`;
    const params = { AccountSid: ACCOUNT_SID, MessageSid: sid, MessageStatus: 'undelivered', ErrorCode: '30003', To: runs[0].to, From: '+15005550006' };
    const post = (signature) =>
      fetch(`${serve.base}${target}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        body: new URLSearchParams(params).toString(),
      });
    const signed = await post(twilio.getExpectedTwilioSignature(AUTH_TOKEN, `${PUBLIC_URL}${target}`, params));
    assert.equal(signed.status, 200, `the signed status callback: ${signed.status} ${await signed.text()}`);
    const forged = await post(twilio.getExpectedTwilioSignature('not-the-token', `${PUBLIC_URL}${target}`, params));
    assert.equal(forged.status, 403, 'a wrong signature is refused');

    // The worker's Redis-derived gauges are refreshed by its sweep: scrape once they show the sends.
    scraped.worker = await waitFor(
      async () => {
        const s = await scrape(workerBase);
        const sent = s.samples.find((x) => x.name === 'ringback_sms_attempts_total' && x.labels.outcome === 'sent');
        return sent && sent.value >= RUNS ? s : null;
      },
      15_000,
      'the worker\'s /metrics to count the sends',
      200,
    );
    scraped.serve = await scrape(serve.base);
  });

  after(async () => {
    await lab?.stop();
  });

  it('each /metrics passes promtool check metrics', { skip: PROMTOOL_MISSING }, (t) => {
    for (const [who, s] of Object.entries(scraped)) {
      const r = promtoolCheck(s.text);
      assert.ifError(r.error);
      assert.ok(r.code === 0 || r.code === 3, `promtool check metrics on the ${who}'s scrape failed (exit ${r.code}):\n${r.problems.join('\n')}\n--- scrape ---\n${s.text}`);
      const artefacts = r.problems.filter((p) => openMetricsArtefact(p, s));
      const real = r.problems.filter((p) => !openMetricsArtefact(p, s));
      t.diagnostic(`${who}: promtool check metrics exit ${r.code}, ${s.samples.length} samples in ${s.types.size} families`);
      if (process.env.METRICS_SCRAPE_DUMP) fs.writeFileSync(path.join(process.env.METRICS_SCRAPE_DUMP, `${who}.prom`), s.text);
      if (artefacts.length) t.diagnostic(`${who}: ${artefacts.length} lint notes of the OpenMetrics counter naming (# HELP x, sample x_total): ${artefacts.join('; ')}`);
      assert.deepEqual(real, [], `promtool lint problems in the ${who}'s scrape`);
    }
  });

  it('the two scrapes hold every metric deploy/alerts.yml names, labelled with the queue', () => {
    const exprs = alertExpressions();
    assert.ok(exprs.length >= 8, `deploy/alerts.yml has its alerts (${exprs.length} expressions)`);
    const names = [...new Set(exprs.flatMap(metricNames))].sort();
    const all = [...scraped.worker.samples, ...scraped.serve.samples];
    const types = new Map([...scraped.worker.types, ...scraped.serve.types]);
    const missing = [];
    const unlabelled = [];
    for (const name of names) {
      const base = name.replace(/_(bucket|sum|count)$/, '');
      const wanted = base !== name && types.get(base) === 'histogram' ? [`${base}_bucket`, `${base}_sum`, `${base}_count`] : [name];
      for (const w of wanted) {
        const found = all.filter((s) => s.name === w);
        if (!found.length) missing.push(w);
        else if (found.some((s) => s.labels.queue !== QUEUE)) unlabelled.push(w);
      }
    }
    assert.deepEqual(missing, [], `metrics the alerts name but no scrape holds (worker: ${[...scraped.worker.types.keys()].join(', ')}; serve: ${[...scraped.serve.types.keys()].join(', ')})`);
    assert.deepEqual(unlabelled, [], `samples without queue="${QUEUE}"`);
    // The selectors with label matchers select something after real work: the creates' latency.
    assert.ok(all.some((s) => s.name === 'ringback_twilio_request_duration_seconds_count' && s.labels.operation === 'create' && s.value >= RUNS), 'Twilio create latency observed for each send');
    // …and the work shows: the undelivered callback escalated by serve, the forged one counted.
    assert.ok(scraped.serve.samples.some((s) => s.name === 'ringback_escalations_total' && s.labels.reason === 'undelivered' && s.value === 1), 'serve counted the escalation of the undelivered run');
    assert.ok(scraped.serve.samples.some((s) => s.name === 'ringback_bad_signatures_total' && s.value === 1), 'serve counted the bad signature');
  });

  it('the counters the alerts watch with increase() are exported at 0 before their first event', () => {
    const w = scraped.worker.samples;
    const series = (name, labels) => w.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
    const absent = [];
    const expect0 = [
      ['ringback_sms_attempts_total', { outcome: 'unknown' }],
      ['ringback_window_overruns_total', {}],
      ['ringback_lock_lost_total', {}],
      ...ESCALATION_REASONS.map((reason) => ['ringback_escalations_total', { reason }]),
    ];
    for (const [name, labels] of expect0) {
      const s = series(name, labels);
      if (!s) absent.push(`${name}${JSON.stringify(labels)}`);
      else assert.equal(s.value, 0, `${name}${JSON.stringify(labels)} counted without that event happening`);
    }
    assert.deepEqual(absent, [], 'the worker must export these series from its start (a series born at 1 has no increase(): its first event would not alert)');
  });

  it('deploy/ringback.env.example: check-config refuses it as shipped, naming the empty secrets and sender, and accepts it once they are set', async () => {
    const settings = {};
    for (const line of fs.readFileSync(path.join(REPO, 'deploy', 'ringback.env.example'), 'utf8').split('\n')) {
      const m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(line);
      if (m) settings[m[1]] = m[2];
    }
    const base = { PATH: process.env.PATH, NO_COLOR: '1' };
    const shipped = await runToEnd(lab.bin, ['check-config'], { env: { ...base, ...settings } });
    assert.equal(shipped.code, 2, `as shipped: ${shipped.out}${shipped.err}`);
    for (const name of ['TWILIO_ACCOUNT_SID', 'TWILIO_AUTH_TOKEN', 'TWILIO_FROM']) assert.match(shipped.err, new RegExp(`${name} \\(--[a-z-]+\\):`), `names ${name} and its flag`);
    // the shipped file talks to Twilio's own API: the values a live account has (an auth token
    // of 32 hex digits, a number outside the docs' fictional 555 area code)
    const filled = {
      ...settings,
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: 'fedcba9876543210fedcba9876543210',
      RINGBACK_API_TOKEN: API_TOKEN,
      TWILIO_FROM: '+14155550123',
    };
    const ok = await runToEnd(lab.bin, ['check-config'], { env: { ...base, ...filled } });
    assert.equal(ok.code, 0, `filled in: ${ok.out}${ok.err}`);
  });

  it('the Dockerfile\'s HEALTHCHECK command answers for the worker and serve, and fails on a closed port', async () => {
    const docker = fs.readFileSync(DOCKERFILE, 'utf8');
    const m = /^HEALTHCHECK [^\n]*\\\n\s*CMD (\[.*\])$/m.exec(docker);
    assert.ok(m, 'the Dockerfile has a HEALTHCHECK … CMD ["/bin/bash", "-c", "…"]');
    const [shell, flag, command] = JSON.parse(m[1]);
    assert.deepEqual([shell, flag], ['/bin/bash', '-c']);
    const check = (port) => runToEnd(shell, [flag, command], { env: { ...process.env, RINGBACK_HEALTH_PORT: String(port) } });
    const workerPort = new URL(workerBase).port;
    const servePort = new URL(serve.base).port;
    const onWorker = await check(workerPort);
    assert.equal(onWorker.code, 0, `healthcheck on the worker: ${onWorker.err}`);
    const onServe = await check(servePort);
    assert.equal(onServe.code, 0, `healthcheck on serve: ${onServe.err}`);
    const closed = await check(await freePort());
    assert.notEqual(closed.code, 0, 'the healthcheck fails when nothing listens');
  });
});
