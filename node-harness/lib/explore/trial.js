// One trial of the explorer: a plan played on the real parts (redis-server, the bullmq npm
// package as producer and legacy worker, the Twilio simulator with its faults, ringback workers
// as supervised processes), then checked at quiescence. Each check is one invariant about one
// run (or one sample of the fleet); a violation names the invariant, the run and what was seen.
'use strict';

const { Lab, API_TOKEN } = require('../drill/lab');
const { freePort } = require('../harness/redis');
const { WorkerProcess } = require('../harness/subject');
const { JOB_OPTIONS, CLAIM_PREFIX } = require('../legacy');
const { waitFor, sleep } = require('../harness/wait');
const { faultClasses } = require('./plan');
const { ZONES } = require('./plan');
const { People } = require('./people');

const QUEUE = 'explore';
const ESCALATIONS = `${QUEUE}-escalations`;
const OPEN_ATTEMPTS = `ringback:open-attempts:${CLAIM_PREFIX}`;
const OUR_SENDER = '+15005550006';
const LEGACY_FROM = '+15005550007';
const SETTLE_MS = 90_000;
/** What an escalation of each kind claims, and so when it is true of a run texted `n` times. */
const TRUE_PAGE = {
  // still being resolved: true while the run is not settled, whatever it ends as
  unknown: () => true,
  // "may have been sent, not sent again": true of a run texted once, when no receipt could link
  // the message to it (receipts off, or serve down when Twilio called)
  unknown_settled: (n) => n === 1,
  // a ladder run out: checked against its record by checkLadders
  unacknowledged: () => true,
};

/**
 * A process's /metrics as sums and maxima by metric name prefix (and a label it must carry);
 * null when it does not answer.
 */
async function scrape(url) {
  const text = await fetch(url, { signal: AbortSignal.timeout(3000) }).then((r) => (r.ok ? r.text() : null), () => null);
  if (text === null) return null;
  const rows = text.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => {
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(l);
    return m ? { name: m[1], labels: m[2] || '', value: Number(m[3]) } : null;
  }).filter(Boolean);
  const of = (prefix, label) => rows.filter((r) => r.name.startsWith(prefix) && (!label || r.labels.includes(label)) && !r.name.endsWith('_created'));
  return {
    sum: (prefix, label) => of(prefix, label).reduce((a, r) => a + r.value, 0),
    max: (prefix, label) => Math.max(0, ...of(prefix, label).map((r) => r.value)),
  };
}

/** Minutes past midnight in `zone` at `ms`. */
function localMinutes(zone, ms) {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(new Date(ms));
  const get = (t) => Number(parts.find((p) => p.type === t).value);
  return get('hour') * 60 + get('minute');
}

const hhmm = (m) => `${String(Math.floor((((m % 1440) + 1440) % 1440) / 60)).padStart(2, '0')}:${String((((m % 1440) + 1440) % 1440) % 60).padStart(2, '0')}`;

/** Whether minute `m` is inside the window [start, end) (which may wrap past midnight). */
function inside({ start, end }, m) {
  return start <= end ? m >= start && m < end : m >= start || m < end;
}

/** Distance in minutes from `m` to the window's nearest edge. */
function margin({ start, end }, m) {
  const d = (a, b) => Math.min((((a - b) % 1440) + 1440) % 1440, (((b - a) % 1440) + 1440) % 1440);
  return Math.min(d(m, start), d(m, end));
}

/**
 * The quiet window of `plan` made concrete now: around the present in its zone when it covers
 * now, hours away when not; and each run's zone (a job `timeZone` inside or outside it).
 */
function resolveQuiet(plan, now) {
  const q = plan.config.quiet;
  if (!q) return null;
  const local = localMinutes(q.tz, now);
  const window = q.covers ? { start: (local + 1440 - 60) % 1440, end: (local + 120) % 1440 } : { start: (local + 240) % 1440, end: (local + 420) % 1440 };
  const zones = {};
  for (const run of plan.runs) {
    if (run.zone === 'default') continue;
    // a zone whose local time is well inside (or outside) the window for the whole trial
    const fits = ZONES.filter((z) => inside(window, localMinutes(z, now)) === (run.zone === 'inside') && margin(window, localMinutes(z, now)) >= 30);
    if (fits.length) zones[run.i] = fits[(plan.seed + run.i) % fits.length];
  }
  return { window, hours: `${hhmm(window.start)}-${hhmm(window.end)}`, tz: q.tz, zones };
}

/** Whether run `run` is expected to wait for the end of quiet hours (never texted by ringback now). */
function heldByQuiet(quiet, run, now) {
  if (!quiet || run.urgent || run.name !== 'agent-callback') return false;
  return inside(quiet.window, localMinutes(quiet.zones[run.i] || quiet.tz, now));
}

/** A run's runId as JSON text: the exact digits of a big number, else JSON.stringify. */
const runIdJson = (run) => (typeof run.runId === 'object' ? run.runId.json : JSON.stringify(run.runId));

/** A run's runId for a report line. */
const label = (run) => (typeof run.runId === 'object' ? run.runId.json : String(run.runId));

/** A run's runId as a Node producer or consumer holds it (a big number: the nearest double). */
const runIdValue = (run) => JSON.parse(runIdJson(run));

/**
 * The job data a producer sends for `run`, as JSON text (its body tagged so each text is counted
 * per run; a big runId with every digit, for a producer that keeps them).
 */
function jobData(plan, run, quiet) {
  const rest = { to: run.to, body: `[x${plan.seed}-${run.i}] run finished (${run.kind}): approve the release` };
  if (run.urgent) rest.urgent = true;
  if (quiet?.zones[run.i]) rest.timeZone = quiet.zones[run.i];
  if (run.question) Object.assign(rest, { expectReply: true, replyWithin: '1h' });
  if (run.ladder) rest.ladder = { callAfter: '1s', stepWait: '1s', then: [run.ladder.then] };
  return `{"runId":${runIdJson(run)},${JSON.stringify(rest).slice(1)}`;
}

/**
 * `add()` again while Redis is failing over (a Cluster master paused past its node timeout is
 * replaced: READONLY, CLUSTERDOWN, TRYAGAIN, a dropped connection), as a producer retries; at
 * most 20 s. A batch cut midway may be added twice: the same run added twice, which the checks
 * allow.
 */
async function addRetrying(add) {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await add();
    } catch (err) {
      if (!TRANSIENT.test(String(err.message)) || Date.now() > deadline) throw err;
      await sleep(250);
    }
  }
}

/** What a Redis failing over answers for a while (the harness's own reads retry it, as `add`s do). */
const TRANSIENT = /READONLY|CLUSTERDOWN|TRYAGAIN|MOVED|ECONNRESET|ECONNREFUSED|Connection is closed/;

/** The harness's own read of Redis, again while Redis is failing over (see [`addRetrying`]). */
const readRetrying = addRetrying;

/** Adds `jobs` ([{name, data: JSON text, opts}]) with BullMQ's Python port. */
async function addWithPython(lab, jobs) {
  const { spawn } = require('node:child_process');
  const child = spawn('python3', [PY_PRODUCER, QUEUE], {
    env: { ...process.env, REDIS_URL: lab.redis.url, RINGBACK_PREFIX: lab.prefix, PYTHONPATH: PYTHON_PATH },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (out += c));
  child.stdin.end(JSON.stringify(jobs));
  const code = await new Promise((resolve) => child.on('exit', resolve));
  if (code !== 0) throw new Error(`the Python producer exited ${code}: ${out.slice(-600)}`);
}

/**
 * The ladders of `plan` at rest: each ended (stopped, or run out with its escalation) or waiting
 * for quiet hours; no call placed twice for a run's step (the call reads the run's tagged body);
 * no next person texted twice for a run; one `unacknowledged` escalation for each ladder run out,
 * none for another.
 */
async function checkLadders({ lab, plan, callbacks, quiet, check, label }) {
  const ladders = callbacks.filter((r) => r.ladder);
  if (!ladders.length) return;
  const recordOf = (r) => lab.admin.hgetall(`ringback:ladder:{${CLAIM_PREFIX}${String(runIdValue(r))}}`);
  const restful = (rec) => {
    const unmarked = Object.keys(rec).some((k) => k.startsWith('claim:') && rec[k].startsWith('pending:'));
    if (!rec.state) return true; // never opened: its text was held, or the legacy worker sent it
    if (rec.state === 'climbing') return Boolean(quiet) && Number(rec.due) - Date.now() > 600_000;
    return !unmarked && rec.escalate === undefined;
  };
  let recs = [];
  const ended = await waitFor(
    async () => {
      recs = await Promise.all(ladders.map(recordOf));
      return recs.every(restful);
    },
    45_000,
    'every ladder to end',
    250,
  ).then(
    () => true,
    () => false,
  );
  ladders.forEach((r, k) => check(restful(recs[k]), 'every ladder ends once', `ladder ${JSON.stringify(Object.fromEntries(Object.entries(recs[k]).filter(([f]) => f !== 'plan'))).slice(0, 500)}${ended ? '' : ' (not ended in 45 s)'}`, label(r)));
  const calls = await fetch(`${lab.sim.base}/sim/calls`).then((x) => x.json());
  const texts = await fetch(`${lab.sim.base}/sim/messages`).then((x) => x.json());
  const tagged = (s) => {
    const m = /\[x(\d+)-(\d+)\]/.exec(s || '');
    return m && Number(m[1]) === plan.seed ? Number(m[2]) : null;
  };
  const count = (items, of) => {
    const per = new Map();
    for (const it of items) {
      const key = of(it);
      if (key) per.set(key, (per.get(key) || 0) + 1);
    }
    return per;
  };
  const callsPer = count(calls, (c) => (tagged(c.twiml) === null ? null : `${tagged(c.twiml)} ${c.call.to}`));
  const stepTexts = count(
    texts.filter((m) => /has not answered this yet\./.test(m.body || '')),
    (m) => (tagged(m.body) === null ? null : `${tagged(m.body)} ${m.to}`),
  );
  for (const r of ladders) {
    for (const to of [r.to, r.ladder.then]) {
      const n = callsPer.get(`${r.i} ${to}`) || 0;
      check(n <= 1, 'no ladder step sent twice', `${n} calls to ${to}`, label(r));
    }
    const n = stepTexts.get(`${r.i} ${r.ladder.then}`) || 0;
    check(n <= 1, 'no ladder step sent twice', `${n} texts to the next person ${r.ladder.then}`, label(r));
  }
  const pages = await lab.queue(ESCALATIONS).getJobs(['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized'], 0, -1);
  ladders.forEach((r, k) => {
    const unack = pages.filter((p) => p.data?.kind === 'unacknowledged' && String(p.data?.runId) === String(runIdValue(r))).length;
    check(unack === (recs[k].state === 'exhausted' ? 1 : 0), 'one unacknowledged escalation for each ladder run out, none else', `${unack} for a ladder ${recs[k].state || 'never opened'}`, label(r));
  });
}

// a run's tag at the start of a body (behind a trial account's prefix when Twilio stores one;
// an ask-back quoting a question's text is not the run's text)
const TAG = /^(?:Sent from your Twilio trial account - )?\[x(\d+)-(\d+)\]/;
const PY_PRODUCER = require('node:path').join(__dirname, '..', '..', 'bin', 'py-producer.py');
/** Where `bullmq` for Python is installed (scripts/lib.sh's ensure_python_bullmq). */
const PYTHON_PATH = process.env.EXPLORE_PYTHONPATH || require('node:path').join(__dirname, '..', '..', '.python');

/**
 * Plays `plan`; resolves { violations: [{invariant, run?, detail}], checks, faults, ms,
 * figures }. Never throws for a broken invariant; a lab that cannot start throws (SetupError).
 */
async function runTrial(plan, { log = () => {}, bin } = {}) {
  const t0 = Date.now();
  const lab = await new Lab({ name: 'explore', version: plan.config.bullmq, timings: plan.config.timings, cluster: Boolean(plan.config.cluster), aof: Boolean(plan.faults.forget), replica: plan.config.topology === 'replica', sentinel: plan.config.topology === 'sentinel', log }).start();
  if (bin) lab.bin = bin;
  const violations = [];
  let checks = 0;
  const check = (ok, invariant, detail, run) => {
    checks += 1;
    if (!ok) violations.push({ invariant, ...(run !== undefined ? { run } : {}), detail });
  };
  const timers = [];
  const tally = { sigkills: 0, serveKills: 0, clientKills: 0, scriptFlushes: 0, pauses: 0, forgets: 0, failovers: 0, drains: 0, heartbeatSamples: 0, orphanSamples: 0 };
  let pausedMs = 0;
  try {
    const now = Date.now();
    const quiet = resolveQuiet(plan, now);
    const held = new Set(plan.runs.filter((r) => heldByQuiet(quiet, r, now)).map((r) => r.i));
    const extra = {
      RINGBACK_DRAIN_DELAY_MS: String(plan.config.drainDelayMs),
      ...(plan.config.layout === 'per-slot' && !plan.config.cluster ? { RINGBACK_DRILL_PER_SLOT: '1' } : {}),
      ...(quiet ? { RINGBACK_QUIET_HOURS: quiet.hours, RINGBACK_QUIET_HOURS_TZ: quiet.tz } : {}),
      ...(plan.config.legacy ? { RINGBACK_SENDERS: LEGACY_FROM } : {}),
      TWILIO_FROM: OUR_SENDER,
    };
    const twilioFaults = {
      ...(plan.faults.sim.length ? { create: plan.faults.sim } : {}),
      ...(plan.faults.receipts?.length ? { callbacks: plan.faults.receipts.map((x) => ({ ...x.rule, rate: x.rate })) } : {}),
      ...(plan.faults.listOrder ? { list_order: plan.faults.listOrder } : {}),
      ...(plan.faults.rewrite === 'service' ? { rewrite: { smart_encoding: true, append: ' Reply STOP to opt out.' } } : {}),
      ...(plan.faults.rewrite === 'trial' ? { trial_prefix: true } : {}),
      ...(plan.faults.authRefusedMs ? { auth: { refuse: 'all', for_ms: plan.faults.authRefusedMs } } : {}),
      ...(plan.faults.listLagMs ? { list_lag_ms: plan.faults.listLagMs } : {}),
      ...(plan.faults.calls?.length ? { calls: plan.faults.calls, ...(plan.faults.sim.length ? { call_create: plan.faults.sim } : {}) } : {}),
    };
    if (Object.keys(twilioFaults).length) await lab.sim.putFaults(twilioFaults);

    // receipts: `ringback serve` takes Twilio's status callbacks, restarted when it is killed
    let serve = null;
    if (plan.config.receipts) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      extra.RINGBACK_STATUS_CALLBACK_URL = `${base}/api/notify/webhook/status`;
      const env = { ...lab.ringbackEnv(QUEUE, extra), RINGBACK_API_TOKEN: API_TOKEN, RINGBACK_PUBLIC_URL: base, ...(plan.serveEnv || {}) };
      delete env.RINGBACK_METRICS_LISTEN;
      lab.supervise('serve', (i) => {
        serve = lab.track(new WorkerProcess(`ringback-serve#${i}`, lab.bin, ['serve', '--listen', `127.0.0.1:${port}`], env));
        return serve;
      });
      await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status === 200, 30_000, 'ringback serve to be ready');
    }

    // the fleet: ringback workers (restarted when they die) and, maybe, a legacy worker; each
    // worker's /metrics on a port of its own (the alerts' inputs, read at rest)
    const live = new Set();
    const started = [];
    const metricsPorts = await Promise.all(plan.config.workers.map(() => freePort()));
    const current = [];
    plan.config.workers.forEach((w, k) => {
      lab.supervise(`ringback-${k}`, (i) => {
        const env = lab.ringbackEnv(QUEUE, {
          ...extra,
          RINGBACK_CONCURRENCY: String(w.concurrency),
          RINGBACK_METRICS_LISTEN: `127.0.0.1:${metricsPorts[k]}`,
          ...(w.crashAt ? { RINGBACK_CRASH_AT: w.crashAt } : {}),
          ...(w.clockSkewMs ? { RINGBACK_CLOCK_SKEW_MS: String(w.clockSkewMs) } : {}),
          // what a test changes to prove a check fails (a worker that texts nobody, …): null unsets
          ...(plan.workerEnv || {}),
        });
        for (const [name, value] of Object.entries(env)) if (value === null) delete env[name];
        const p = lab.track(new WorkerProcess(`ringback-${k}#${i}`, lab.bin, ['worker'], env));
        live.add(p);
        current[k] = p;
        p.exit.then(() => live.delete(p));
        if (i === 0) started.push(p.waitStarted(30_000));
        return p;
      });
    });
    if (plan.config.legacy) {
      const legacy = lab.legacyWorker('legacy', QUEUE, { RINGBACK_CONCURRENCY: '2', TWILIO_FROM: LEGACY_FROM });
      started.push(legacy.waitStarted(30_000));
    }
    await Promise.all(started);
    const q = lab.queue(QUEUE);
    const byIndex = new Map(plan.runs.map((r) => [r.i, r]));
    // the people answer the questions ringback texts them, while the faults last
    const people = plan.replies && serve
      ? new People({
          plan,
          lab,
          serve: extra.RINGBACK_STATUS_CALLBACK_URL.replace(/\/api\/.*$/, ''),
          queue: QUEUE,
          ourSender: OUR_SENDER,
          runIdKey: (run) => String(runIdValue(run)),
          runOfText: (body) => {
            const tag = TAG.exec(body);
            return tag && Number(tag[1]) === plan.seed ? byIndex.get(Number(tag[2])) : undefined;
          },
        })
      : null;
    people?.start();

    // the faults, on timers, while the arrivals last
    const every = (ms, fn) => ms && timers.push(setInterval(() => fn().catch(() => {}), ms));
    every(plan.faults.sigkillEveryMs, async () => {
      const ws = [...live].filter((p) => p.running);
      if (!ws.length) return;
      ws[(tally.sigkills * 7 + plan.seed) % ws.length].kill('SIGKILL');
      tally.sigkills += 1;
    });
    every(plan.faults.serveKillEveryMs, async () => {
      if (serve?.running) {
        serve.kill('SIGKILL');
        tally.serveKills += 1;
      }
    });
    every(plan.faults.clientKillEveryMs, async () => {
      await lab.onEveryMaster('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      tally.clientKills += 1;
    });
    every(plan.faults.scriptFlushEveryMs, async () => {
      await lab.onEveryMaster('SCRIPT', 'FLUSH');
      tally.scriptFlushes += 1;
    });
    // not on a Sentinel set: a paused master answers the sentinels nothing (even under `WRITE`,
    // their hello PUBLISH waits and their PING queues behind it), so past their
    // down-after-milliseconds (1 s here) it is failed over: a fault of its own, drawn apart
    for (const p of plan.config.topology === 'sentinel' ? [] : plan.faults.pauses) {
      timers.push(
        setTimeout(() => {
          lab.onEveryMaster('CLIENT', 'PAUSE', String(p.ms), 'ALL').then(() => {
            tally.pauses += 1;
            pausedMs += p.ms;
          }, () => {});
        }, p.atMs),
      );
    }
    // Redis restarted from a copy of its AOF taken lagMs earlier, atMs after the first text
    // (while texts are in flight): what it acknowledged since the copy is gone
    const forgetting = plan.faults.forget
      ? (async () => {
          const { atMs, lagMs } = plan.faults.forget;
          await waitFor(async () => (await lab.simStats()).total > 0, 30_000, 'the first text', 50).catch(() => {});
          await sleep(atMs);
          const copy = lab.redis.copyAof();
          await sleep(lagMs);
          await lab.redis.restartFrom(copy);
          tally.forgets += 1;
        })().catch((e) => log(`[explore ${plan.seed}] the restart from the AOF copy failed: ${e.message}`))
      : null;
    // a Sentinel set may also fail over unasked: a Redis pause past the sentinels'
    // down-after-milliseconds (1 s here) is a master down to them. Either way the writes the old
    // master took and did not pass on are lost, as a forgetting Redis's are
    const firstMaster = plan.config.topology === 'sentinel' ? (await lab.redis.master()).port : null;
    let masterMoved = false;
    const lostWrites = async () => {
      if (firstMaster !== null && !masterMoved) masterMoved = await lab.redis.master().then((m) => m.port !== firstMaster, () => false);
      return tally.forgets + tally.failovers > 0 || masterMoved;
    };
    // the Sentinel master demoted while it runs, atMs after the first text
    const failingOver = plan.faults.failover
      ? (async () => {
          await waitFor(async () => (await lab.simStats()).total > 0, 30_000, 'the first text', 50).catch(() => {});
          await sleep(plan.faults.failover.atMs);
          await lab.redis.failover();
          tally.failovers += 1;
        })().catch((e) => log(`[explore ${plan.seed}] the failover failed: ${e.message}`))
      : null;
    // an orphan must not wait past its bound while a worker lives: sampled every second
    const t = lab.t;
    const orphanBoundMs = t.pendingTtlMs + 2 * 200 + 1500;
    const overdue = new Map();
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        await sleep(1000);
        if (!sampling || !live.size) continue;
        const [entries, [secs, micros]] = await Promise.all([lab.admin.zrange(OPEN_ATTEMPTS, 0, -1, 'WITHSCORES'), lab.admin.time()]).catch(() => [[], [0, 0]]);
        const redisNow = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
        tally.orphanSamples += 1;
        for (let k = 0; k < entries.length; k += 2) {
          const late = redisNow - Number(entries[k + 1]);
          if (late > 3 * orphanBoundMs + pausedMs + 5000) overdue.set(entries[k], Math.max(late, overdue.get(entries[k]) || 0));
        }
      }
    })();

    // the arrivals, burst by burst; after an idle gap, the live-fleet checks
    for (const [b, burst] of plan.bursts.entries()) {
      if (burst.gapBeforeMs) await sleep(burst.gapBeforeMs);
      const idle = burst.gapBeforeMs > t.stalledIntervalMs * 2;
      if (idle && plan.drainCheck) {
        // a drawn failover or restart of Redis first: nobody can beat while it lasts
        await failingOver;
        await forgetting;
        // fresh within one liveness window (3 s here) of now, or of Redis answering again
        // after a pause (nobody can beat while Redis is paused; a second CLIENT PAUSE sent
        // during a first one waits for it, so pauses can chain past their drawn ends): the
        // wait starts once Redis answers
        await lab.admin.ping().catch(() => {});
        // a Sentinel set that failed over unasked (the sentinels name another master) gives the
        // workers the failover's seconds to follow it before they can beat again
        const moved = plan.config.topology === 'sentinel' && (await lostWrites());
        const beats = await waitFor(async () => {
          const b = await lab.heartbeats(3000);
          return b.length >= plan.config.workers.length ? b : null;
        }, moved ? 20_000 : 4000, 'fresh heartbeats', 200).catch(() => lab.heartbeats(3000));
        tally.heartbeatSamples += 1;
        check(beats.length >= plan.config.workers.length, 'idle workers keep beating', `after an idle gap of ${burst.gapBeforeMs} ms, ${beats.length} fresh heartbeat(s) for ${plan.config.workers.length} live worker(s)`);
        if (tally.drains === 0) {
          tally.drains += 1;
          const d = await lab.drain(QUEUE, { timeoutMs: 3000, extra });
          check(d.code === 3, 'drain refuses beside a live worker', `ringback drain exited ${d.code} with ${plan.config.workers.length} live worker(s): ${d.output.slice(-300)}`);
        }
      }
      const jobs = burst.adds.map((i) => ({ name: byIndex.get(i).name, data: jobData(plan, byIndex.get(i), quiet), opts: { ...JOB_OPTIONS } }));
      if (burst.producer === 'python') await addWithPython(lab, jobs);
      else await addRetrying(() => q.addBulk(jobs.map((j) => ({ ...j, data: JSON.parse(j.data) }))));
      log(`[explore ${plan.seed}] burst ${b + 1}/${plan.bursts.length}: ${burst.adds.length} add(s) by the ${burst.producer} producer`);
    }
    // faults stop; the system must come to rest (a drawn restart of Redis happens first)
    await forgetting;
    await failingOver;
    for (const tm of timers) clearInterval(tm);
    await sleep(Math.max(0, ...plan.faults.pauses.map((p) => p.atMs + p.ms)) - (Date.now() - now));
    await lab.onEveryMaster('CLIENT', 'UNPAUSE').catch(() => {});
    await lab.sim.putFaults({});

    const callbacks = plan.runs.filter((r) => r.name === 'agent-callback');
    // a job's run: by the tag in its body (its runId may have lost digits to a double)
    const runOf = (j) => {
      const tag = TAG.exec(j.data?.body || '');
      return tag && Number(tag[1]) === plan.seed ? byIndex.get(Number(tag[2])) : undefined;
    };
    const escalations = lab.queue(ESCALATIONS);
    const countTexts = async () => {
      const messages = await fetch(`${lab.sim.base}/sim/messages`).then((r) => r.json());
      const per = new Map();
      messages.forEach((m) => {
        const tag = TAG.exec(m.body || '');
        if (!tag || Number(tag[1]) !== plan.seed) return;
        const i = Number(tag[2]);
        // when Twilio created it (to the second: quiet windows are drawn 30 min from their edges)
        per.set(i, [...(per.get(i) || []), { from: m.from, atMs: Date.parse(m.date_created), sid: m.sid, body: m.body }]);
      });
      return per;
    };
    // runs beyond 2^53 whose producers sent different digits for one claim key: one run texted,
    // every other escalated naming both (its job failed), never a duplicate in silence
    const digitsSent = new Map(); // claim key -> Set of the digits producers sent
    for (const burst of plan.bursts) {
      for (const i of burst.adds) {
        const run = byIndex.get(i);
        if (typeof run.runId !== 'object' || run.name !== 'agent-callback') continue;
        const key = String(runIdValue(run));
        const digits = burst.producer === 'python' ? run.runId.json : String(runIdValue(run));
        digitsSent.set(key, new Set([...(digitsSent.get(key) || []), digits]));
      }
    }
    const shared = new Set([...digitsSent].filter(([, d]) => d.size > 1).map(([key]) => key));
    const sharing = (run) => typeof run.runId === 'object' && run.name === 'agent-callback' && shared.has(String(runIdValue(run)));
    let last = {};
    const look = async () => {
      const per = await countTexts();
      const drops = lab.legacyDrops();
      const jobs = await q.getJobs(['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized', 'waiting-children'], 0, -1);
      const open = await lab.admin.zrange(OPEN_ATTEMPTS, 0, -1);
      const groupTexted = (r) => callbacks.some((o) => sharing(o) && String(runIdValue(o)) === String(runIdValue(r)) && per.has(o.i));
      // a run whose every add Redis forgot (a drawn restart from an older AOF) has no job to text
      const withJob = new Set(jobs.map(runOf).filter(Boolean).map((r) => r.i));
      const lossy = await lostWrites();
      const forgotten = (r) => lossy && !withJob.has(r.i);
      const untexted = callbacks.filter((r) => !held.has(r.i) && !per.has(r.i) && !drops.has(String(runIdValue(r))) && !(sharing(r) && groupTexted(r)) && !forgotten(r)).map((r) => r.i);
      const unfinished = jobs.filter((j) => {
        const run = runOf(j);
        if (!run || run.name !== 'agent-callback') return false;
        return held.has(run.i) ? false : !j.finishedOn;
      });
      const openOthers = open.filter((id) => !plan.runs.some((r) => held.has(r.i) && String(runIdValue(r)) === id));
      last = { per, jobs, open, untexted, unfinished: unfinished.map((j) => `${j.id} (${j.data?.runId})`), openOthers, forgotten, lossy };
      return untexted.length === 0 && unfinished.length === 0 && openOthers.length === 0;
    };
    const settleMs = plan.settleMs || SETTLE_MS;
    const settled = await waitFor(look, settleMs, 'the trial to settle', 250).then(
      () => true,
      () => false,
    );
    check(settled, 'the system comes to rest', `after ${settleMs} ms: untexted runs ${JSON.stringify(last.untexted)}, unfinished jobs ${JSON.stringify(last.unfinished?.slice(0, 6))}, open attempts ${JSON.stringify(last.openOthers?.slice(0, 6))}`);
    // a second text would come within the reconcile window: look again after it
    await sleep(1500 + 2 * 200 + 1500);
    await look().catch(() => {});
    sampling = false;
    await sampler;
    if (people) {
      await people.stop();
      await people.late();
      await people.check(check, { label, skip: sharing });
    }

    for (const key of shared) {
      const group = callbacks.filter((r) => typeof r.runId === 'object' && String(runIdValue(r)) === key);
      const texts = group.reduce((k, r) => k + (last.per.get(r.i) || []).length, 0);
      const ours = group.reduce((k, r) => k + (last.per.get(r.i) || []).filter((x) => x.from === OUR_SENDER).length, 0);
      // inside their quiet hours the group waits: none texted by ringback yet (a legacy worker,
      // which knows no quiet hours, may text one)
      const heldGroup = group.every((r) => held.has(r.i));
      // the legacy worker may have taken one of the group's jobs and dropped the run after its
      // own provider failure (its bug, not ringback's): at most one text then
      const dropped = lab.legacyDrops().has(key);
      // the legacy worker knows no digits: with the key free (ringback's claim expired after
      // its worker died), it may text another run of the group, each run then texted once
      // (ringback's orphan found no text of its own run); never a run twice
      const twice = group.some((r) => (last.per.get(r.i) || []).length > 1);
      const ok = heldGroup ? ours === 0 && texts <= 1 : dropped ? texts <= 1 : texts === 1 || (!twice && texts > 1 && ours < texts);
      check(ok, 'runs sharing one key: one texted, the others escalated', `${texts} text(s), ${ours} by ringback, for runs ${group.map(label).join(', ')} on key ${key}${heldGroup ? ' (inside quiet hours)' : ''}`, key);
    }

    // the invariants, run by run
    const drops = lab.legacyDrops();
    for (const run of plan.runs) {
      const texts = last.per.get(run.i) || [];
      const ours = texts.filter((x) => x.from === OUR_SENDER);
      if (sharing(run)) {
        // counted by key above; quiet hours hold on each of them all the same
        if (quiet && !run.urgent) {
          const zone = quiet.zones[run.i] || quiet.tz;
          const inQuiet = ours.filter((x) => inside(quiet.window, localMinutes(zone, x.atMs)));
          check(inQuiet.length === 0, 'nothing not urgent is texted inside quiet hours', `${inQuiet.length} text(s) by ringback inside ${quiet.hours} ${zone}`, label(run));
        }
        continue;
      }
      if (run.name !== 'agent-callback') {
        check(ours.length === 0, 'a job of another name is never texted', `${texts.length} text(s)`, label(run));
        continue;
      }
      if (held.has(run.i)) {
        check(ours.length === 0 && texts.length <= 1, 'nothing not urgent is texted inside quiet hours', `${ours.length} text(s) by ringback, ${texts.length} in all, inside ${quiet.hours} ${quiet.zones[run.i] || quiet.tz}`, label(run));
      } else if (drops.has(String(runIdValue(run)))) {
        check(texts.length <= 1, 'each run is texted exactly once', `${texts.length} text(s) (the legacy worker dropped it after its own provider failure)`, label(run));
      } else if (last.forgotten?.(run)) {
        check(texts.length <= 1, 'each run is texted exactly once', `${texts.length} text(s) (its job was added in the writes Redis lost)`, label(run));
      } else {
        check(texts.length === 1, 'each run is texted exactly once', `${texts.length} text(s)${texts.length ? `: ${texts.map((x) => `${x.sid} from ${x.from} at ${new Date(x.atMs).toISOString()} ${JSON.stringify(x.body)}`).join('; ')}` : ''}`, label(run));
      }
      if (quiet && !run.urgent) {
        const zone = quiet.zones[run.i] || quiet.tz;
        const inQuiet = ours.filter((x) => inside(quiet.window, localMinutes(zone, x.atMs)));
        check(inQuiet.length === 0, 'nothing not urgent is texted inside quiet hours', `${inQuiet.length} text(s) by ringback inside ${quiet.hours} ${zone}`, label(run));
      }
    }
    // every job finished (or waiting for quiet hours' end); none failed (a failedReason alone
    // is an attempt that failed and was retried)
    const failed = new Set((await readRetrying(() => q.getJobs(['failed'], 0, -1))).map((j) => j.id));
    for (const j of last.jobs || []) {
      const run = runOf(j);
      if (!run) continue;
      if (run.name !== 'agent-callback') {
        check(!j.finishedOn, 'a job of another name is left to its own workers', `job ${j.id} ${failed.has(j.id) ? `failed: ${j.failedReason}` : 'completed'}`, label(run));
        continue;
      }
      if (sharing(run) && failed.has(j.id)) {
        check(/cannot share one key/.test(j.failedReason || ''), 'runs sharing one key: one texted, the others escalated', `job ${j.id} failed: ${j.failedReason}`, label(run));
        continue;
      }
      check(!failed.has(j.id), 'no callback job fails', `job ${j.id} failed: ${j.failedReason}`, label(run));
      if (!held.has(run.i)) check(Boolean(j.finishedOn), 'every job finishes', `job ${j.id} not finished`, label(run));
    }
    // one claim key per run, across both fleets
    const claimKeys = [];
    for (const node of lab.admin.isCluster ? lab.admin.nodes('master') : [lab.admin]) {
      let cursor = '0';
      do {
        const [next, keys] = await readRetrying(() => node.scan(cursor, 'MATCH', `${CLAIM_PREFIX}*`, 'COUNT', 1000));
        cursor = next;
        claimKeys.push(...keys);
      } while (cursor !== '0');
    }
    // as the legacy worker keys a run: JavaScript's String of the runId it parsed
    const expected = new Set(callbacks.map((r) => `${CLAIM_PREFIX}${String(runIdValue(r))}`));
    // a ladder's step texts run as `<runId>:ladder:<k>` (steps 2 and 4 at most: texts to the next person)
    for (const r of callbacks.filter((x) => x.ladder)) for (const k of [1, 2, 3]) expected.add(`${CLAIM_PREFIX}${String(runIdValue(r))}:ladder:${k}`);
    await checkLadders({ lab, plan, callbacks, quiet, check, label });
    // the "which one?" text asking a person back runs under `reply:<MessageSid>`
    for (const m of people?.messages || []) expected.add(`${CLAIM_PREFIX}reply:${m.sid}`);
    for (const key of claimKeys) check(expected.has(key), 'one claim key per run, across both fleets', `claim key ${key} belongs to no run`);
    // no orphan waited past its bound
    check(overdue.size === 0, 'an orphan is texted within its bound while a worker lives', [...overdue].map(([id, late]) => `open attempt of ${id} overdue by ${late} ms (bound ${orphanBoundMs} ms)`).join('; '));
    // pages tell the truth: in these trials nothing is undelivered, refused, held or invalid
    const pages = await readRetrying(() => escalations.getJobs(['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized'], 0, -1));
    for (const p of pages) {
      const kind = p.data?.kind;
      if (kind === 'resolved') continue;
      if (kind === 'invalid' && [...shared].some((key) => (p.data?.reason || '').includes(`keyed ${key} `))) continue;
      // a runId beyond 2^53 is escalated under its key, which runs sharing it name alike
      const named = plan.runs.filter((r) => String(runIdValue(r)) === String(p.data?.runId));
      const texts = named.reduce((k, r) => k + (last.per.get(r.i) || []).length, 0);
      check(Boolean(TRUE_PAGE[kind]?.(texts)), 'no page that is not true', `escalation ${kind} for ${p.data?.runId} (${texts} text(s)): ${p.data?.reason || ''}`.slice(0, 300), p.data?.runId);
    }
    // the alerts read what the processes count: at rest none may claim what did not happen
    // (a second text, an overrun, an attempt left open)
    const twice = callbacks.some((r) => !sharing(r) && (last.per.get(r.i) || []).length >= 2);
    for (const [k, p] of current.entries()) {
      if (!p?.running) continue;
      let m = await scrape(`http://127.0.0.1:${metricsPorts[k]}/metrics`);
      // a worker drawn to abort may do so between the look and the scrape, and its next process
      // listens only once it started: asked again after a second, of the process then current
      if (m === null && plan.config.workers[k].crashAt) {
        await sleep(1000);
        if (!current[k]?.running) continue;
        m = await scrape(`http://127.0.0.1:${metricsPorts[k]}/metrics`);
      }
      check(m !== null, 'every live process answers /metrics', `worker ${k} on port ${metricsPorts[k]}`);
      if (!m) continue;
      const age = m.max('ringback_open_attempt_oldest_age_seconds');
      check(age < 180, 'no alert that is not true', `RingbackOpenAttemptTooOld: worker ${k} reports an attempt open for ${age} s at rest`);
      const overruns = m.sum('ringback_window_overruns');
      // a sent marker written over a claim Redis forgot is an overrun indeed
      check(overruns === 0 || twice || last.lossy, 'no alert that is not true', `RingbackWindowOverrun: worker ${k} counted ${overruns} overrun(s), and no run was texted twice`);
    }
    if (serve?.running) {
      const m = await scrape(`${extra.RINGBACK_STATUS_CALLBACK_URL.replace(/\/api\/.*$/, '')}/metrics`);
      check(m !== null, 'every live process answers /metrics', 'ringback serve');
      const other = m ? m.sum('ringback_status_callbacks', 'outcome="other"') : 0;
      check(other === 0 || twice, 'no alert that is not true', `RingbackSecondText: serve counted ${other} status callback(s) of a second message, and no run was texted twice`);
    }
    check(lab.failures.length === 0, 'no worker fails by itself', lab.failures.slice(0, 3).join(' | ').slice(0, 600));
    // what each process said last, for a violation's report
    const logs = violations.length ? lab.processes.map((p) => `--- ${p.label}\n${p.output().slice(-Number(process.env.EXPLORE_LOG_CHARS || 1500))}`) : [];
    const faults = faultClasses(plan).length + tally.sigkills + tally.serveKills + tally.clientKills + tally.scriptFlushes + tally.pauses + tally.forgets + tally.failovers;
    return {
      seed: plan.seed,
      violations,
      logs,
      checks,
      faults,
      ms: Date.now() - t0,
      figures: { ...(people ? { replies: people.messages.length, replyPosts: people.tally.posts } : {}), runs: plan.runs.length, held: held.size, jobs: plan.bursts.reduce((k, b) => k + b.adds.length, 0), pages: pages.length, ...tally, crashes: Object.values(lab.crashes).reduce((a, b) => a + b, 0) },
    };
  } finally {
    for (const tm of timers) clearInterval(tm);
    await lab.onEveryMaster('CLIENT', 'UNPAUSE').catch(() => {});
    await lab.stop();
  }
}

module.exports = { runTrial, localMinutes, inside, resolveQuiet };
