// One trial of the explorer: a plan played on the real parts (redis-server, the bullmq npm
// package as producer and legacy worker, the Twilio simulator with its faults, ringback workers
// as supervised processes), then checked at quiescence. Each check is one invariant about one
// run (or one sample of the fleet); a violation names the invariant, the run and what was seen.
'use strict';

const { Lab, API_TOKEN, SetupError } = require('../drill/lab');
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
  // a ladder run out, or ended by `ringback drain --end-ladders`: checked against its record by
  // checkLadders
  unacknowledged: () => true,
  rollback: () => true,
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

/** A run's ladder record (lua/ladder_start.lua). */
const ladderKey = (run) => `ringback:ladder:{${CLAIM_PREFIX}${String(runIdValue(run))}}`;

/** A number as ringback records it on a ladder (`acked_who`): the last four digits. */
const mask = (n) => (n.length <= 4 ? '****' : `${'*'.repeat(n.length - 4)}${n.slice(-4)}`);

/** Where worker `k` of `plan` may abort (RINGBACK_CRASH_AT): a window point, or a ladder's. */
const crashAtOf = (plan, k) => plan.config.workers[k].crashAt || (plan.faults.ladderCrash?.worker === k ? plan.faults.ladderCrash.at : null);

/** Twilio's retry fragment on a webhook URL, as docs/http-api.md gives it. */
const OVERRIDES = '#rc=5&rp=ct,rt,5xx';

/**
 * How the calls of `plan` go (the simulator's call rules; the first that matches applies): the
 * silent people's unanswered (a ladder's recipient, and its next people up to the one who
 * answers, or all), then the drawn outcomes at their rates, else answered and 1 pressed; each
 * step of each call `ringMs` long when drawn (a call still ringing when the next step is due).
 */
function callRules(plan) {
  const silent = plan.runs
    .filter((r) => r.ladder?.silent)
    .flatMap((r) => [r.to, ...r.ladder.then.slice(0, r.ladder.silent.by ? r.ladder.silent.upTo : undefined)])
    .map((to) => ({ to, outcome: 'no-answer' }));
  const rules = [...silent, ...(plan.faults.calls || [])];
  return plan.faults.ringMs ? [...rules, {}].map((c) => ({ ...c, step_ms: plan.faults.ringMs })) : rules;
}

/**
 * The job data a producer sends for `run`, as JSON text (its body tagged so each text is counted
 * per run; a big runId with every digit, for a producer that keeps them).
 */
function jobData(plan, run, quiet) {
  const rest = { to: run.to, body: `[x${plan.seed}-${run.i}] run finished (${run.kind}): approve the release` };
  if (run.urgent) rest.urgent = true;
  if (quiet?.zones[run.i]) rest.timeZone = quiet.zones[run.i];
  if (run.question) Object.assign(rest, { expectReply: true, replyWithin: run.replyWithin || '1h' });
  if (run.choices) rest.choices = run.choices;
  if (run.ladder) rest.ladder = { callAfter: '1s', stepWait: '1s', then: run.ladder.then };
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
 * no next person texted twice for a run; each stopped by its own run's acknowledgement (a key
 * on its call, its question's answer; for a plain callback also a delivered receipt or a reply
 * answering no other run, read with `readReplies`); each of a run ringback
 * texted (`texted(run)`) opened, unless Redis lost writes (`lossy`), and ended once: stopped,
 * run out with one `unacknowledged` escalation, or ended by a drain with one `rollback`.
 */
async function checkLadders({ lab, plan, callbacks, quiet, check, label, readReplies, texted, lossy }) {
  const ladders = callbacks.filter((r) => r.ladder);
  if (!ladders.length) return;
  const recordOf = (r) => lab.admin.hgetall(ladderKey(r));
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
    for (const to of [r.to, ...r.ladder.then]) {
      const n = callsPer.get(`${r.i} ${to}`) || 0;
      check(n <= 1, 'no ladder step sent twice', `${n} calls to ${to}`, label(r));
    }
    for (const to of r.ladder.then) {
      const n = stepTexts.get(`${r.i} ${to}`) || 0;
      check(n <= 1, 'no ladder step sent twice', `${n} texts to the next person ${to}`, label(r));
    }
  }
  // read once the ladders ended: a reply is on the queue before it acknowledges
  const replies = await readReplies();
  ladders.forEach((r, k) => {
    const rec = recs[k];
    if (rec.state !== 'stopped' || !['reply', 'keypad', 'delivered'].includes(rec.acked_by)) return;
    const key = String(runIdValue(r));
    const reached = [r.to, ...r.ladder.then].map(mask).includes(rec.acked_who);
    const theirs = replies.filter((d) => d.from && mask(d.from) === rec.acked_who);
    const own = (d) => (d.matched === 'answer' ? String(d.runId) === key : !r.question && (d.matched === 'unmatched' || d.matched === 'ambiguous'));
    const ok = rec.acked_by === 'delivered' ? !r.question : reached && (rec.acked_by === 'keypad' || (rec.acked_by === 'reply' && theirs.some(own)));
    check(ok, "no ladder stopped by another run's answer", `${r.question ? 'a question' : 'a plain callback'} acknowledged by ${rec.acked_by} from ${rec.acked_who}${reached ? '' : ', whom it never reached'}; their messages: ${theirs.map((d) => `${d.matched} ${d.runId}`).join(', ') || 'none'}`, label(r));
  });
  const pages = await lab.queue(ESCALATIONS).getJobs(['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized'], 0, -1);
  ladders.forEach((r, k) => {
    const rec = recs[k];
    const of = (kind) => pages.filter((p) => p.data?.kind === kind && String(p.data?.runId) === String(runIdValue(r))).length;
    const [unack, rollback] = [of('unacknowledged'), of('rollback')];
    const held = rec.state === 'climbing' && restful(rec);
    const ok = !rec.state
      ? !texted(r) || lossy
      : held
        ? unack + rollback === 0
        : rollback
          ? rollback === 1 && unack === 0 && rec.state !== 'climbing'
          : rec.state === 'stopped'
            ? Boolean(rec.acked_by) && unack === 0
            : rec.state === 'exhausted' && unack === 1;
    check(ok, 'every ladder of a texted run opens and ends once', `a ladder ${rec.state || 'never opened'}${rec.acked_by ? ` (acknowledged by ${rec.acked_by})` : ''}, ${unack} unacknowledged and ${rollback} rollback escalation(s), ${texted(r) ? '' : 'not '}texted by ringback`, label(r));
  });
}

/**
 * The answers at rest on the replies queue (`replies`: its jobs' data): at most one `answer` per
 * question, whoever answered it and on whichever channel (a later one is `late`), and no
 * `no-answer` beside it. `skip(run)`: runs sharing one key.
 */
function checkAnswers({ callbacks, replies, check, skip }) {
  for (const r of callbacks.filter((x) => x.question && !skip(x))) {
    const key = String(runIdValue(r));
    const mine = replies.filter((d) => d.runId !== null && d.runId !== undefined && String(d.runId) === key);
    const answers = mine.filter((d) => d.matched === 'answer');
    check(answers.length <= 1, 'one answer per question', `${answers.length} answers: ${answers.map((d) => `${d.via || 'text'} from ${mask(d.from || '')} ${JSON.stringify(d.text)}`).join('; ')}`, label(r));
    const none = mine.filter((d) => d.matched === 'no-answer').length;
    check(none === 0 || answers.length === 0, 'no no-answer beside an answer', `${none} no-answer job(s) beside ${answers.length} answer(s)`, label(r));
  }
}

/**
 * `ringback drain` as an operator runs it in a rollback, the workers' env and `args` added
 * (`--end-ladders`); resolves {code, output}.
 */
async function drainWith(lab, extra, args) {
  const env = lab.ringbackEnv(QUEUE, extra);
  delete env.RINGBACK_CRASH_AT;
  delete env.RINGBACK_METRICS_LISTEN;
  const p = lab.track(new WorkerProcess('ringback-drain', lab.bin, ['drain', '--timeout-ms', '30000', ...args], env));
  const info = await p.waitExit(60_000).catch(async (err) => {
    await p.destroy();
    return { code: null, error: err.message };
  });
  return { code: info.code, output: p.output() };
}

/** A replica Redis lists online that the lab did not start: `redis-cli --replica` (port 0). */
const SILENT_ONLINE = /slave\d+:ip=[^,]*,port=0,state=online/;
/** ringback's default wait counts a replica that acknowledged within this (`lag`, whole seconds). */
const ACK_WITHIN_MS = 10_000;

/**
 * A replica that never acknowledges on the lab's one Redis: `redis-cli --replica` syncs, then
 * never sends REPLCONF ACK again, while Redis lists it online with its `lag` growing. Tracked
 * by the lab, so that its stop ends it, on an error too. Resolves {process, syncedAt} once
 * Redis lists it online: its silence counts from then.
 */
async function attachSilentReplica(lab) {
  const { spawnSync } = require('node:child_process');
  const cli = process.env.REDIS_CLI || 'redis-cli';
  const probe = spawnSync(cli, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new SetupError(`redis-cli not found or not runnable (${cli}); a silent replica is a redis-cli --replica`);
  // what it prints is every write Redis passes on: not kept (exec: the process killed is redis-cli)
  const p = lab.track(new WorkerProcess('redis-cli --replica', 'sh', ['-c', 'exec "$0" -p "$1" --replica >/dev/null', cli, String(lab.redis.port)], process.env));
  await waitFor(
    async () => {
      if (!p.running) throw new Error(`redis-cli --replica exited (${JSON.stringify(p.exitInfo)}): ${p.output().slice(-300)}`);
      return SILENT_ONLINE.test(await lab.admin.call('INFO', 'replication'));
    },
    30_000,
    'the silent replica in sync',
    100,
  );
  return { process: p, syncedAt: Date.now() };
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
  const tally = { sigkills: 0, serveKills: 0, clientKills: 0, scriptFlushes: 0, pauses: 0, forgets: 0, failovers: 0, rollbacks: 0, silentReplicas: 0, drains: 0, heartbeatSamples: 0, orphanSamples: 0 };
  let pausedMs = 0;
  // while a rollback lasts, no worker starts: the supervisors wait on `halted`, until `resume`
  let halted = null;
  let resume = () => {};
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
      ...(callRules(plan).length ? { calls: callRules(plan), ...(plan.faults.sim.length ? { call_create: plan.faults.sim } : {}) } : {}),
    };
    if (Object.keys(twilioFaults).length) await lab.sim.putFaults(twilioFaults);

    // a silent replica drawn before the workers: synced before any process of ringback starts,
    // so that the first texts are the ones it holds; drawn later, attached after the first
    // burst (`attaching`), where what breaks it is the invariant's to report
    let silent = null;
    let silentError = null;
    let attaching = null;
    const attachSilent = async () => {
      silent = await attachSilentReplica(lab);
      tally.silentReplicas += 1;
      log(`[explore ${plan.seed}] a silent replica (redis-cli --replica, pid ${silent.process.pid}) synced`);
    };
    if (plan.faults.silentReplica && plan.faults.silentReplica.atMs === null) await attachSilent();

    // receipts: `ringback serve` takes Twilio's status callbacks, restarted when it is killed
    let serve = null;
    if (plan.config.receipts) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      // a serve that aborts in a ladder's webhook is posted again, as Twilio does with the
      // retry fragment the docs give
      const serveCrashAt = plan.faults.ladderCrash?.serve;
      extra.RINGBACK_STATUS_CALLBACK_URL = `${base}/api/notify/webhook/status${serveCrashAt ? OVERRIDES : ''}`;
      const env = { ...lab.ringbackEnv(QUEUE, extra), RINGBACK_API_TOKEN: API_TOKEN, RINGBACK_PUBLIC_URL: base, ...(serveCrashAt ? { RINGBACK_CRASH_AT: serveCrashAt } : {}), ...(plan.serveEnv || {}) };
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
        // (a worker slot left empty while the rollback lasts)
        if (halted) return { label: `ringback-${k}#${i}`, running: false, exit: halted, output: () => '' };
        const env = lab.ringbackEnv(QUEUE, {
          ...extra,
          RINGBACK_CONCURRENCY: String(w.concurrency),
          RINGBACK_METRICS_LISTEN: `127.0.0.1:${metricsPorts[k]}`,
          ...(crashAtOf(plan, k) ? { RINGBACK_CRASH_AT: crashAtOf(plan, k) } : {}),
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
    // a rollback while ladders climb: once one climbs (or 20 s on), every ringback worker is
    // stopped (SIGTERM) and none started; `ringback drain` refuses while a ladder climbs, and
    // `--end-ladders` ends each (escalated once, `rollback`); then the workers start again
    const rolledBack = new Set(); // the labels of the workers it stopped
    const rollingBack = plan.faults.rollback
      ? (async () => {
          const ladders = plan.runs.filter((r) => r.ladder);
          const climbing = async () => (await Promise.all(ladders.map((r) => lab.admin.hget(ladderKey(r), 'state')))).filter((st) => st === 'climbing').length;
          await waitFor(async () => (await climbing()) > 0, 20_000, 'a ladder to climb', 100).catch(() => {});
          await sleep(plan.faults.rollback.atMs);
          const stoppedAt = Date.now();
          halted = new Promise((resolve) => (resume = resolve));
          const stopping = [...live];
          for (const p of stopping) {
            rolledBack.add(p.label);
            p.kill('SIGTERM');
          }
          await Promise.all(stopping.map((p) => p.waitExit(30_000).catch(() => p.destroy())));
          // a heartbeat outlives a worker killed meanwhile by a few seconds
          await waitFor(async () => (await lab.heartbeats(3000)).length === 0, 15_000, 'no live heartbeat', 200).catch(() => {});
          const before = await climbing();
          const refused = await drainWith(lab, extra, []);
          const after = await climbing();
          check(refused.code === 3 ? /ladder/.test(refused.output) : refused.code === 0 && after === 0, 'drain refuses while a ladder climbs', `ringback drain exited ${refused.code} with ${before} ladder(s) climbing before it and ${after} after: ${refused.output.slice(-300)}`);
          const ended = await drainWith(lab, extra, ['--end-ladders']);
          check(ended.code === 0, 'drain --end-ladders ends the climbing ladders', `ringback drain --end-ladders exited ${ended.code}: ${ended.output.slice(-300)}`);
          tally.rollbacks += 1;
          log(`[explore ${plan.seed}] rollback: ${stopping.length} worker(s) stopped; drain exited ${refused.code} with ${before} ladder(s) climbing, then ${ended.code} with --end-ladders, ${Date.now() - stoppedAt} ms after the workers were told to stop`);
        })()
          .catch((e) => log(`[explore ${plan.seed}] the rollback failed: ${e.message}`))
          .finally(() => {
            halted = null;
            resume({ code: null, signal: 'rollback' });
          })
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
      if (b === 0 && plan.faults.silentReplica && plan.faults.silentReplica.atMs !== null) {
        attaching = sleep(plan.faults.silentReplica.atMs)
          .then(attachSilent)
          .catch((e) => (silentError = e));
      }
      log(`[explore ${plan.seed}] burst ${b + 1}/${plan.bursts.length}: ${burst.adds.length} add(s) by the ${burst.producer} producer`);
    }
    // faults stop; the system must come to rest (a drawn restart of Redis happens first)
    await forgetting;
    await failingOver;
    await rollingBack;
    await attaching;
    if (silentError?.name === 'SetupError') throw silentError;
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
    // a ladder's step texts run as `<runId>:ladder:<k>` (steps 2, 4, …: texts to the next people)
    for (const r of callbacks.filter((x) => x.ladder)) for (let k = 1; k <= 1 + 2 * r.ladder.then.length; k += 1) expected.add(`${CLAIM_PREFIX}${String(runIdValue(r))}:ladder:${k}`);
    const repliesQueue = lab.queue(`${QUEUE}-replies`);
    const readReplies = async () => (await readRetrying(() => repliesQueue.getJobs(['completed', 'failed', 'active', 'wait', 'delayed', 'prioritized'], 0, -1))).map((j) => j.data || {});
    const texted = (r) => (last.per.get(r.i) || []).some((x) => x.from === OUR_SENDER);
    await checkLadders({ lab, plan, callbacks, quiet, check, label, readReplies, texted, lossy: last.lossy });
    if (serve) checkAnswers({ callbacks, replies: await readReplies(), check, skip: sharing });
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
      // a worker drawn to abort (or killed) may go between the look and the scrape, and its
      // next process listens only once it started, which on a Cluster includes noting every
      // slot's Redis identity (up to 15 s): asked again, of the process then current, until then
      const startedBy = Date.now() + 20_000;
      while (m === null && Date.now() < startedBy && current[k]?.running) {
        await sleep(500);
        m = await scrape(`http://127.0.0.1:${metricsPorts[k]}/metrics`);
      }
      if (!current[k]?.running) continue;
      check(m !== null, 'every live process answers /metrics', `worker ${k} on port ${metricsPorts[k]}`);
      if (!m) continue;
      const age = m.max('ringback_open_attempt_oldest_age_seconds');
      check(age < 180, 'no alert that is not true', `RingbackOpenAttemptTooOld: worker ${k} reports an attempt open for ${age} s at rest`);
      const overruns = m.sum('ringback_window_overruns');
      // a sent marker written over a claim Redis forgot is an overrun indeed
      check(overruns === 0 || twice || last.lossy, 'no alert that is not true', `RingbackWindowOverrun: worker ${k} counted ${overruns} overrun(s), and no run was texted twice`);
      if (plan.faults.silentReplica) {
        // the worker reads Redis's replicas every sweep: the replica is silent to it once its
        // lag passed 10 s (a whole second more, as INFO counts it) and the worker looked again
        const namedBy = silent ? silent.syncedAt + ACK_WITHIN_MS + 1000 + 5000 : 0;
        let named = m.max('ringback_redis_replicas_silent');
        while (named < 1 && Date.now() < namedBy && current[k]?.running) {
          await sleep(500);
          named = (await scrape(`http://127.0.0.1:${metricsPorts[k]}/metrics`))?.max('ringback_redis_replicas_silent') ?? named;
        }
        const replica = !silent ? `never synced: ${silentError?.message || 'not attached'}`.slice(0, 300) : `synced ${Date.now() - silent.syncedAt} ms ago${silent.process.running ? '' : `, exited since (${JSON.stringify(silent.process.exitInfo)})`}`;
        check(named >= 1, 'a silent replica is named', `worker ${k} reports ringback_redis_replicas_silent ${named} at rest; the redis-cli --replica ${replica}`);
      }
    }
    if (serve?.running) {
      const metricsUrl = `${extra.RINGBACK_STATUS_CALLBACK_URL.replace(/\/api\/.*$/, '')}/metrics`;
      let m = await scrape(metricsUrl);
      // a serve drawn to abort in a ladder's webhook may do so meanwhile: asked again after a second
      if (m === null && plan.faults.ladderCrash?.serve) {
        await sleep(1000);
        m = await scrape(metricsUrl);
      }
      check(m !== null, 'every live process answers /metrics', 'ringback serve');
      const other = m ? m.sum('ringback_status_callbacks', 'outcome="other"') : 0;
      check(other === 0 || twice, 'no alert that is not true', `RingbackSecondText: serve counted ${other} status callback(s) of a second message, and no run was texted twice`);
    }
    // (a worker the rollback stopped exits by itself, as it was asked to)
    const failures = lab.failures.filter((f) => ![...rolledBack].some((l) => f.startsWith(`${l} `)));
    check(failures.length === 0, 'no worker fails by itself', failures.slice(0, 3).join(' | ').slice(0, 600));
    // what each process said last, for a violation's report
    const logs = violations.length ? lab.processes.map((p) => `--- ${p.label}\n${p.output().slice(-Number(process.env.EXPLORE_LOG_CHARS || 1500))}`) : [];
    const faults = faultClasses(plan).length + tally.sigkills + tally.serveKills + tally.clientKills + tally.scriptFlushes + tally.pauses + tally.forgets + tally.failovers + tally.rollbacks + tally.silentReplicas;
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
    resume({ code: null, signal: 'rollback' });
    for (const tm of timers) clearInterval(tm);
    await lab.onEveryMaster('CLIENT', 'UNPAUSE').catch(() => {});
    await lab.stop();
  }
}

module.exports = { runTrial, localMinutes, inside, resolveQuiet };
