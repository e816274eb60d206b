// One trial's plan, drawn from its seed alone: the configuration (timings, concurrency, layout,
// quiet hours, the legacy fleet, clocks), the arrivals (callbacks of every runId kind producers
// send, duplicates, other job names, idle gaps longer than every sweep and heartbeat interval)
// and the faults. A plan is data: printed with a failure, replayed by its seed, shrunk by
// switching its faults off one at a time.
'use strict';

const { rng } = require('./rng');
const { TIMINGS } = require('../drill/lab');

/** Time zones far apart, so that a window around "now" in one is outside it in others. */
const ZONES = ['UTC', 'Europe/Paris', 'America/New_York', 'America/Los_Angeles', 'Asia/Tokyo', 'Asia/Kolkata', 'Australia/Sydney', 'Pacific/Auckland', 'America/Sao_Paulo', 'Asia/Kathmandu'];

/** The runId kinds producers send (the Node producer sends numbers as JSON numbers). */
const RUN_ID_KINDS = ['plain', 'plain', 'plain', 'number', 'bignum', 'long', 'braces', 'colons', 'unicode', 'escalation'];

/** The crash points a ringback worker may abort at (RINGBACK_CRASH_AT). */
const CRASH_POINTS = ['after-claim', 'after-provider-accept', 'after-sent-marker'];

/** Twilio's misbehaviours the simulator plays (create rules), as the chaos drill draws them. */
const SIM_FAULTS = [
  { fault: 'rate_limited', retry_after_s: 1 },
  { fault: 'server_error', status: 503, created: false },
  { fault: 'server_error', status: 502, created: true },
  { fault: 'slow', delay_ms: 800, created: true },
  { fault: 'create_then_drop' },
];

/** How a ladder's calls go (the simulator's call rules, at a drawn rate; otherwise answered, 1). */
const CALL_OUTCOMES = [{ outcome: 'no-answer' }, { outcome: 'busy' }, { outcome: 'machine' }, { outcome: 'answered', digits: '' }, { outcome: 'answered', digits: '1', duplicate: true, shuffled: true }];

/** How Twilio's receipts misbehave (the simulator's callback rules, at a drawn rate). */
const RECEIPT_FAULTS = [
  { name: 'shuffled', rule: { reversed: true, duplicate: true } },
  { name: 'none', rule: { none: true } },
  // a message Twilio holds in its queue a while (no date_sent yet)
  { name: 'late', rule: { delay_ms: 5000 } },
];

/** The runId of kind `kind` for run `i` of trial `seed` (a JSON number for the numeric kinds). */
function runIdOf(kind, seed, i) {
  const tag = `x${seed}-${i}`;
  switch (kind) {
    case 'number':
      return 7_000_000 + (seed % 100_000) * 100 + i;
    case 'bignum':
      // beyond 2^53, odd: a Python producer sends these digits, a Node producer the nearest
      // double (JSON text here, so that no digit is lost before a producer sends it)
      return { json: (2n ** 60n + BigInt((seed % 1000) * 100 + i) * 4096n + 1n).toString() };
    case 'long':
      return `${tag}-${'l'.repeat(240)}`;
    case 'braces':
      return `{${tag}}`;
    case 'colons':
      return `org:${tag}:step:1`;
    case 'unicode':
      return `récap-🚀-${tag}`;
    case 'escalation':
      return `${tag}:escalation`;
    default:
      return tag;
  }
}

/** Draws trial `seed`'s plan. */
function drawPlan(seed) {
  const r = rng(seed);
  const timings = r.weighted([[3, 'prod'], [2, 'compressed']]);
  const t = TIMINGS[timings];
  const legacy = r.chance(0.4);
  const nWorkers = r.weighted([[3, 1], [3, 2], [1, 3]]);
  const kills = r.chance(0.45);
  const workers = Array.from({ length: nWorkers }, () => ({
    concurrency: r.weighted([[4, 1], [2, 2], [2, 4], [1, 8]]),
    crashAt: kills && r.chance(0.5) ? `${r.pick(CRASH_POINTS)}:${r.pick([0.05, 0.15, 0.3])}` : null,
    clockSkewMs: r.chance(0.12) ? r.pick([-3_600_000, -30_000, 30_000]) : 0,
  }));
  const config = {
    timings,
    bullmq: r.weighted([[3, '6'], [1, '5']]),
    layout: r.weighted([[3, 'fused'], [2, 'per-slot']]),
    // BullMQ's drainDelay: the default (5 s) keeps an idle worker's fetch blocked, holding its permit
    drainDelayMs: r.pick([300, 5000]),
    workers,
    legacy,
    quiet: r.chance(0.35) ? { covers: r.chance(0.6), tz: r.pick(ZONES) } : null,
    // BullMQ's Python port adding some of the bursts beside the Node producer
    python: r.chance(0.35),
    // `ringback serve` taking Twilio's status callbacks (RINGBACK_STATUS_CALLBACK_URL), or
    // receipts by polling alone
    receipts: r.chance(0.6),
  };
  // the runs, each a callback (or a job of another name), added in bursts
  const nRuns = r.int(4, 14);
  const runs = [];
  for (let i = 0; runs.length < nRuns; i += 1) {
    const kind = r.pick(RUN_ID_KINDS);
    const other = !legacy && r.chance(0.08);
    runs.push({
      i,
      kind,
      runId: runIdOf(kind, seed, i),
      name: other ? 'agent-digest' : 'agent-callback',
      // a few people get several texts (questions to one person carry different codes)
      to: `+1555031${String((seed * 7 + (r.chance(0.3) ? 0 : i + 1)) % 10000).padStart(4, '0')}`,
      urgent: config.quiet ? r.chance(0.4) : r.chance(0.1),
      zone: config.quiet ? r.weighted([[3, 'default'], [1, 'inside'], [1, 'outside']]) : 'default',
      question: r.chance(0.25),
    });
    // a second run whose digits round to the same double: another run on the same claim key,
    // which only a producer that keeps every digit (Python's) can send
    if (kind === 'bignum' && config.python && r.chance(0.35)) {
      const twin = runs[runs.length - 1];
      runs.push({ ...twin, i: ++i, kind: 'bignum-twin', runId: { json: (BigInt(twin.runId.json) + 2n).toString() }, twinOf: twin.i, pythonOnly: true });
    }
  }
  const nBursts = r.int(2, 5);
  const idleMs = 2 * t.stalledIntervalMs + t.pendingTtlMs + 1500;
  const bursts = Array.from({ length: nBursts }, (_, b) => ({
    gapBeforeMs: b === 0 ? 0 : r.weighted([[3, r.int(0, 400)], [2, idleMs + r.int(0, 2000)]]),
    producer: config.python && r.chance(0.5) ? 'python' : 'node',
    adds: [],
  }));
  const pythonBursts = bursts.map((bu, k) => k).filter((k) => bursts[k].producer === 'python');
  for (const run of runs) {
    if (run.pythonOnly && !pythonBursts.length) bursts[0].producer = 'python';
    const from = run.pythonOnly ? (pythonBursts.length ? pythonBursts : [0]) : bursts.map((bu, k) => k);
    const b = r.pick(from);
    bursts[b].adds.push(run.i);
    // the agent's "done" call retried: the same run added again, now or later
    if (r.chance(0.2)) bursts[r.pick(from.filter((k) => k >= b))].adds.push(run.i);
  }
  const faults = {
    sigkillEveryMs: kills && r.chance(0.5) ? r.int(1200, 4000) : null,
    serveKillEveryMs: config.receipts && r.chance(0.3) ? r.int(1500, 5000) : null,
    clientKillEveryMs: r.chance(0.3) ? r.int(900, 3000) : null,
    scriptFlushEveryMs: r.chance(0.15) ? r.int(1500, 4000) : null,
    pauses: r.chance(0.25) ? Array.from({ length: r.int(1, 2) }, () => ({ atMs: r.int(0, 4000), ms: r.int(1500, 4500) })) : [],
    sim: r.chance(0.45) ? r.shuffle(SIM_FAULTS).slice(0, r.int(1, 3)).map((f) => ({ ...f, rate: r.pick([0.03, 0.06, 0.1]) })) : [],
  };
  // the live-fleet checks (heartbeats fresh after an idle gap, drain refused) need workers that
  // are not being killed
  const steady = !faults.sigkillEveryMs && workers.every((w) => !w.crashAt);
  const drainCheck = steady && r.chance(0.6);
  // the people: each question answered by text while the faults last (with its code when the
  // text shows one, or without), each message posted 1-3 times as Twilio retries; strangers
  // writing; a forged post; some messages posted again late (drawn last: the draws above are
  // each seed's as before)
  const replies = config.receipts && r.chance(0.7)
    ? {
        answers: Object.fromEntries(runs.filter((run) => run.question).map((run) => [run.i, { codeless: r.chance(0.3), posts: r.int(1, 3), lateAgain: r.chance(0.3) }])),
        strangers: r.int(0, 2),
        forged: r.chance(0.3),
      }
    : null;
  // Twilio's list sorted by DateSent (queued messages last) and receipts that come shuffled
  // and twice, never, or late (drawn last, as the replies)
  faults.listOrder = r.chance(0.3) ? 'date_sent' : null;
  faults.receipts = r.chance(0.4) ? r.shuffle(RECEIPT_FAULTS).slice(0, r.int(1, 2)).map((f) => ({ ...f, rate: r.pick([0.1, 0.3]) })) : [];
  // a real Redis Cluster (three masters), where the Python producer does not go (BullMQ's
  // Python port takes no cluster URL)
  const cluster = r.chance(0.15);
  config.cluster = cluster && !config.python;
  // the account stores bodies rewritten (a Messaging Service's Smart Encoding and appended
  // text, or a trial account's prefix), and a deployment fault: Twilio refusing the
  // credentials for a few seconds (a rotated token), every create held meanwhile
  faults.rewrite = r.chance(0.25) ? r.pick(['service', 'trial']) : null;
  faults.authRefusedMs = r.chance(0.15) ? r.int(1500, 4000) : null;
  // Twilio's list showing a message only a while after its create (within the reconcile
  // window less the provider's timeout, which the window tolerates by design)
  faults.listLagMs = r.chance(0.2) ? r.int(200, 900) : null;
  // a person who is no run's recipient texting STOP, and START again after it (drawn last)
  if (replies) replies.optOut = r.chance(0.4) ? { restart: r.chance(0.5) } : null;
  // Redis restarted from a copy of its append-only file taken `lagMs` earlier (an `everysec` AOF
  // after a power loss, a replica that far behind promoted): every write since is lost. The copy
  // is taken `atMs` after the first text, while texts are in flight. Drawn
  // last, and only on one Redis in its own layout (a Cluster's claims do not look: its shards
  // wait for a replica instead), without a legacy fleet (which does not look: a claim of its
  // that Redis forgot texts again) and without people (a message answered 200 and then lost is
  // one Twilio does not post again)
  faults.forget = !config.legacy && !config.cluster && config.layout === 'fused' && !replies && r.chance(0.3) ? { atMs: r.int(0, 600), lagMs: r.int(300, 1500) } : null;
  // where that Redis runs: one server, one endpoint with a replica (ringback waits for it by
  // default, the fused finish off), or a Sentinel set (a primary, a replica, three sentinels:
  // ringback through redis+sentinel://, the Node producer through ioredis's sentinels) whose
  // master may be failed over (SENTINEL FAILOVER: it takes writes until demoted, and what it
  // took then is lost) with texts in flight. Not with a forgetting Redis nor the Python
  // producer (BullMQ's Python port takes no sentinels); a failover not beside people nor the
  // legacy worker (nothing of its waits for a replica: a failover can make it text again, the
  // legacy bug itself). Drawn last.
  config.topology = !config.cluster && !faults.forget && !config.python ? r.weighted([[6, 'one'], [2, 'replica'], [2, 'sentinel']]) : 'one';
  faults.failover = config.topology === 'sentinel' && !replies && !config.legacy && r.chance(0.5) ? { atMs: r.int(0, 800) } : null;
  // escalation ladders (a call, the next person's text and call) on some callbacks of plain
  // runIds (their steps' runs are named after them), at compressed step times; their calls go as
  // drawn while the faults last, and Twilio's create faults hit call creates too. Drawn last.
  config.ladders = r.chance(0.35);
  if (config.ladders) {
    for (const run of runs) {
      if (run.kind === 'plain' && run.name === 'agent-callback' && !run.pythonOnly && r.chance(0.5)) run.ladder = { then: [`+1555032${String((seed * 3 + run.i) % 10000).padStart(4, '0')}`] };
    }
    faults.calls = r.shuffle(CALL_OUTCOMES).slice(0, r.int(1, 3)).map((c) => ({ ...c, rate: r.pick([0.3, 0.6]) }));
    drawLadderPeople(r, { seed, config, runs, bursts, faults, drainCheck, replies });
  }
  // a question's choices (a keypad digit or a reply such as `no` answers it). Drawn last.
  for (const run of runs) if (run.question && r.chance(0.4)) run.choices = ['YES', 'NO'];
  // a replica that never acknowledges (`redis-cli --replica`: it syncs, then stays silent)
  // attached to the one Redis for the whole trial, before the workers start (`atMs` null) or
  // `atMs` after the first burst's adds: ringback's default wait counts only the replicas that
  // acknowledged within 10 s, so texts may be held that long after its sync, and must flow
  // after. Not on a Cluster, nor on a Redis restarted from its AOF (the restart cuts the
  // replica's link), nor on a Sentinel set (its sentinels would take it for one of their
  // master's replicas: another fault). Drawn last.
  faults.silentReplica = !config.cluster && !faults.forget && config.topology !== 'sentinel' && r.chance(0.15) ? { atMs: r.chance(0.5) ? r.int(0, 3000) : null } : null;
  return { seed, config, runs, bursts, faults, drainCheck, replies, workerEnv: {} };
}

/**
 * The people around the ladders of a plan, as they are: most ladders ask (a delivered receipt
 * stops a plain callback's ladder before its first call); a second next person; one on-call
 * number in several ladders at once; the recipient silent (no text answer, the call unanswered)
 * and the next people up to one of them too, who answers by text or by key, or nobody does; a
 * question nobody answers by text, over before its ladder runs out; a person the ladder reached
 * answering another question of theirs while it climbs; calls ringing past the step wait;
 * workers and `serve` aborting at the ladder's points; and a rollback while ladders climb (the
 * workers stopped, `ringback drain --end-ladders`, the workers started again). The live-fleet
 * checks need workers nobody stops.
 */
function drawLadderPeople(r, { seed, config, runs, bursts, faults, drainCheck, replies }) {
  const oncall = `+1555033${String((seed * 11) % 10000).padStart(4, '0')}`;
  const answer = () => ({ codeless: r.chance(0.3), posts: r.int(1, 3), lateAgain: false });
  for (const run of runs.filter((x) => x.ladder)) {
    if (!run.question && r.chance(0.6)) run.question = true;
    if (r.chance(0.7)) run.ladder.then[0] = oncall;
    if (r.chance(0.35)) run.ladder.then.push(`+1555034${String((seed * 5 + run.i) % 10000).padStart(4, '0')}`);
    // `upTo`: the next people before this one are silent too; `by`: how it answers (keys need
    // `serve`, which takes the calls' webhooks; a text answers a question the people read)
    if (r.chance(0.55)) {
      const upTo = r.int(0, run.ladder.then.length - 1);
      const by = r.chance(0.7) ? r.pick(['text', 'key']) : null;
      run.ladder.silent = { upTo, by: by === 'key' && !config.receipts ? null : by === 'text' && !(replies && run.question) ? null : by };
      if (run.ladder.silent.by === 'text' && !replies.answers[run.i]) replies.answers[run.i] = answer();
    }
    const textAnswer = replies?.answers[run.i] && (!run.ladder.silent || run.ladder.silent.by === 'text');
    if (run.question && !textAnswer && r.chance(0.5)) run.replyWithin = '4s';
    if (replies && run.question && run.ladder.silent && r.chance(0.5)) {
      const i = Math.max(...runs.map((x) => x.i)) + 1;
      const to = r.pick([run.to, ...run.ladder.then.slice(0, run.ladder.silent.upTo + 1)]);
      runs.push({ i, kind: 'plain', runId: runIdOf('plain', seed, i), name: 'agent-callback', to, urgent: run.urgent, zone: run.zone, question: true });
      replies.answers[i] = { ...answer(), during: run.i };
      bursts.find((b) => b.adds.includes(run.i)).adds.push(i);
    }
  }
  faults.ringMs = r.chance(0.3) ? r.int(700, 1500) : null;
  // a worker aborts at one point: the ladder's go to one that has none
  const free = config.workers.map((w, k) => k).filter((k) => !config.workers[k].crashAt);
  const crash = !drainCheck && r.chance(0.3)
    ? { worker: free.length ? r.pick(free) : null, at: `${r.pick(['ladder-after-claim', 'ladder-after-create'])}:${r.pick([0.1, 0.3])}`, serve: config.receipts && r.chance(0.5) ? 'ladder-after-webhook:0.1' : null }
    : null;
  faults.ladderCrash = crash && (crash.worker !== null || crash.serve) ? crash : null;
  faults.rollback = !drainCheck && r.chance(0.3) ? { atMs: r.int(0, 1500) } : null;
}

/** A Twilio fault's class name: `twilio-server_error-503`. */
const simFaultName = (s) => `twilio-${s.fault}${s.status ? `-${s.status}` : ''}`;

/** How many faults the plan injects, by class (for the report). */
function faultClasses(plan) {
  const f = plan.faults;
  return [
    ...plan.config.workers.filter((w) => w.crashAt).map(() => 'crash-at'),
    ...(f.sigkillEveryMs ? ['sigkill'] : []),
    ...(f.serveKillEveryMs ? ['serve-kill'] : []),
    ...(f.clientKillEveryMs ? ['client-kill'] : []),
    ...(f.scriptFlushEveryMs ? ['script-flush'] : []),
    ...f.pauses.map(() => 'redis-pause'),
    ...f.sim.map(simFaultName),
    ...plan.config.workers.filter((w) => w.clockSkewMs).map(() => 'clock-skew'),
    ...(f.listOrder ? [`twilio-list-${f.listOrder}`] : []),
    ...(f.rewrite ? [`twilio-rewrite-${f.rewrite}`] : []),
    ...(f.authRefusedMs ? ['twilio-auth-refused'] : []),
    ...(f.listLagMs ? ['twilio-list-lag'] : []),
    ...(f.receipts || []).map((x) => `twilio-receipts-${x.name}`),
    ...(f.forget ? ['redis-forget'] : []),
    ...(f.failover ? ['sentinel-failover'] : []),
    ...(f.calls || []).map((c) => `twilio-call-${c.outcome}`),
    ...(f.ringMs ? ['ring-past-step-wait'] : []),
    ...(f.ladderCrash ? ['ladder-crash'] : []),
    ...(f.rollback ? ['rollback-with-ladders'] : []),
    ...(f.silentReplica ? ['silent-replica'] : []),
  ];
}

/**
 * What `plan` draws, by class: its features and its fault classes, each named once (for
 * `--coverage`, and for CI's seeds, which draw every class between them).
 */
function planClasses(plan) {
  const { config: c, runs, replies } = plan;
  // the ladders that climb: a question's (a delivered receipt stops a plain callback's), not
  // held by quiet hours covering now; and those that reach the next people
  const held = (r) => c.quiet?.covers && !r.urgent && r.zone !== 'outside';
  const ladders = runs.filter((r) => r.ladder && r.question && !held(r));
  const reaching = ladders.filter((r) => r.ladder.silent);
  // the next people a silent recipient's ladder reaches: up to the one who answers, or all
  const reached = (r) => r.ladder.then.slice(0, r.ladder.silent.by ? r.ladder.silent.upTo + 1 : undefined);
  const byIndex = new Map(runs.map((r) => [r.i, r]));
  const answers = Object.values(replies?.answers || {});
  const features = {
    [`timings-${c.timings}`]: true,
    [`bullmq-${c.bullmq}`]: true,
    'layout-per-slot': c.layout === 'per-slot' && !c.cluster,
    'redis-cluster': c.cluster,
    [`redis-${c.topology}`]: !c.cluster,
    'concurrency-1-idle-gap': c.workers.some((w) => w.concurrency === 1) && plan.bursts.some((b) => b.gapBeforeMs > 4000),
    'quiet-hours-now': c.quiet?.covers,
    'quiet-hours-later': c.quiet && !c.quiet.covers,
    'legacy-worker': c.legacy,
    'receipts-through-serve': c.receipts,
    'python-producer': plan.bursts.some((b) => b.producer === 'python'),
    'two-runs-one-key': runs.some((r) => r.kind === 'bignum-twin'),
    'run-added-twice': plan.bursts.flatMap((b) => b.adds).some((i, k, all) => all.indexOf(i) !== k),
    'job-of-another-name': runs.some((r) => r.name !== 'agent-callback'),
    questions: runs.some((r) => r.question),
    'live-fleet-checks': plan.drainCheck,
    'answers-coded': answers.some((a) => !a.codeless),
    'answers-codeless': answers.some((a) => a.codeless),
    strangers: replies?.strangers > 0,
    'forged-post': replies?.forged,
    'opt-out-stop': replies?.optOut && !replies.optOut.restart,
    'opt-out-stop-start': replies?.optOut?.restart,
    ladders: runs.some((r) => r.ladder && !held(r)),
    'ladders-held-by-quiet-hours': runs.some((r) => r.ladder && held(r)),
    'ladder-runs-out': reaching.some((r) => !r.ladder.silent.by),
    'question-over-before-ladder': ladders.some((r) => r.replyWithin),
    'two-next-people': reaching.some((r) => reached(r).length > 1),
    'shared-oncall-number': reaching.some((r) => reached(r).some((n) => reaching.filter((o) => reached(o).includes(n)).length > 1)),
    choices: runs.some((r) => r.choices && r.name === 'agent-callback'),
    'next-person-answers': reaching.some((r) => r.ladder.silent.by),
    'answers-another-question': Object.entries(replies?.answers || {}).some(([i, a]) => a.during !== undefined && !held(byIndex.get(Number(i))) && reaching.includes(byIndex.get(a.during))),
    'calls-in-quiet-hours': c.quiet?.covers && ladders.length > 0,
  };
  for (const r of runs) if (r.kind !== 'bignum-twin') features[`runid-${r.kind}`] = true;
  // a ladder's faults, where no ladder opens, are drawn in vain
  const inVain = ladders.length ? [] : ['ring-past-step-wait', 'ladder-crash', 'rollback-with-ladders'];
  return [...new Set([...Object.keys(features).filter((k) => features[k]), ...faultClasses(plan).filter((cls) => !inVain.includes(cls))])];
}

/** The plan without the faults of `cls` (for shrinking). */
function without(plan, cls) {
  const p = JSON.parse(JSON.stringify(plan));
  if (cls === 'crash-at') for (const w of p.config.workers) w.crashAt = null;
  if (cls === 'sigkill') p.faults.sigkillEveryMs = null;
  if (cls === 'serve-kill') p.faults.serveKillEveryMs = null;
  if (cls === 'client-kill') p.faults.clientKillEveryMs = null;
  if (cls === 'script-flush') p.faults.scriptFlushEveryMs = null;
  if (cls === 'redis-pause') p.faults.pauses = [];
  if (cls.startsWith('twilio-')) p.faults.sim = p.faults.sim.filter((s) => simFaultName(s) !== cls);
  if (cls === 'clock-skew') for (const w of p.config.workers) w.clockSkewMs = 0;
  if (cls.startsWith('twilio-list-')) p.faults.listOrder = null;
  if (cls.startsWith('twilio-rewrite-')) p.faults.rewrite = null;
  if (cls === 'twilio-auth-refused') p.faults.authRefusedMs = null;
  if (cls === 'twilio-list-lag') p.faults.listLagMs = null;
  if (cls === 'redis-forget') p.faults.forget = null;
  if (cls === 'sentinel-failover') p.faults.failover = null;
  if (cls.startsWith('twilio-call-')) p.faults.calls = p.faults.calls.filter((c) => `twilio-call-${c.outcome}` !== cls);
  if (cls.startsWith('twilio-receipts-')) p.faults.receipts = p.faults.receipts.filter((x) => `twilio-receipts-${x.name}` !== cls);
  if (cls === 'ring-past-step-wait') p.faults.ringMs = null;
  if (cls === 'ladder-crash') p.faults.ladderCrash = null;
  if (cls === 'rollback-with-ladders') p.faults.rollback = null;
  if (cls === 'silent-replica') p.faults.silentReplica = null;
  return p;
}

/** How many of `plans` draw each class, sorted by name: [[class, trials], …]. */
function coverage(plans) {
  const per = new Map();
  for (const p of plans) for (const cls of planClasses(p)) per.set(cls, (per.get(cls) || 0) + 1);
  return [...per].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

module.exports = { drawPlan, faultClasses, planClasses, coverage, without, ZONES };
