// Runs one differential scenario: two fresh queues get the same jobs from the real Node `Queue`;
// one is processed by the Node reference worker, the other by the subject (ringback's
// scripted_worker), both child processes with the same RINGBACK_* settings; then both keyspaces,
// the QueueEvents each queue produced and what Node's Queue/Job API reports (job counts, each
// job, and the connected workers read while they ran) are normalized and compared.
//
// Timeline (both sides in parallel): queue paused -> workers started and idle -> anchor time ->
// scenario.produce() -> queue resumed (the gate opens for both at once) -> scenario.during() ->
// scenario.done() holds on both -> Queue.getWorkers()/getWorkersCount() read -> workers stopped
// with SIGTERM -> QueueEvents caught up -> dump.
// The pause gate makes the start deterministic: every job is in place before either worker can
// take one, and both workers start at the same instant, so timestamps share one anchor.
'use strict';

const crypto = require('node:crypto');
const { load, ownedConnection, defaultPrefix } = require('../lib/bullmq');
const { EventLog, openQueue } = require('../lib/harness/scenario');
const { spawnSubject, spawnNodeWorker, describeSubject, subjectIsNode } = require('../lib/harness/subject');
const { waitFor } = require('../lib/harness/wait');
const { dumpQueue } = require('./dump');
const { normalizeDump, normalizeStacktrace, rewriteDeep, ts } = require('./normalize');
const { diffViews, classify, formatDiffs } = require('./diff');

// Both workers start at the same instant (the pause gate), so their times agree within a few ms
// on an idle machine; the margin is for a loaded 2-core CI machine.
const DEFAULT_TOLERANCE = { ts: 150, dur: 40 };
/** Worker settings both sides get unless the scenario overrides them. */
const DEFAULT_WORKER = {
  concurrency: 1,
  lockDurationMs: 2000,
  stalledIntervalMs: 1000,
  maxStalledCount: 1,
  shutdownGraceMs: 10_000,
  workerName: 'diff-worker',
};

/** One queue and the worker processing it. */
class Side {
  constructor({ label, redisUrl, version, scenario }) {
    this.label = label; // 'node' | 'ringback': which role this queue plays in the comparison
    // What actually processes it: the 'ringback' side runs the subject, which is the Node worker
    // itself when RINGBACK_WORKER_CMD is unset (the harness checking itself).
    this.kind = label === 'ringback' && !subjectIsNode() ? 'ringback' : 'node';
    this.redisUrl = redisUrl;
    this.version = String(version);
    this.bullmq = load(this.version);
    // `{bull}` on a cluster: every key of a queue in one hash slot, as BullMQ requires there
    this.prefix = defaultPrefix(redisUrl);
    this.queueName = `d-${scenario.name}-v${this.version}-${label === 'node' ? 'n' : 'r'}-${crypto.randomBytes(3).toString('hex')}`;
    this.settings = { ...DEFAULT_WORKER, ...(scenario.worker || {}) };
    this.events = new EventLog();
    this.added = [];
    this.processes = [];
    this.closers = [];
    this.notes = [];
  }

  key(suffix) {
    return `${this.prefix}:${this.queueName}:${suffix}`;
  }

  async start() {
    await openQueue(this, 500);
  }

  /** Starts this side's worker process (Node reference worker or the subject). */
  async startWorker(overrides = {}) {
    const settings = {
      redisUrl: this.redisUrl,
      queue: this.queueName,
      prefix: this.prefix,
      version: this.version,
      ...this.settings,
      ...overrides,
    };
    const n = this.processes.length + 1;
    const proc =
      this.label === 'node' ? spawnNodeWorker(settings, `node-worker#${n}`) : spawnSubject(settings, `subject#${n} (${describeSubject()})`);
    this.processes.push(proc);
    this.worker = proc;
    await proc.waitStarted();
    return proc;
  }

  /** Queue.add, remembering the id for the API comparison. */
  async add(name, data, opts) {
    const job = await this.queue.add(name, data, opts);
    this.added.push(job.id);
    return job;
  }

  /** FlowProducer.add on this queue (children default to this queue). */
  async flow(tree) {
    const fp = new this.bullmq.FlowProducer({ connection: ownedConnection(this.redisUrl, this.closers), prefix: this.prefix });
    this.closers.push(() => fp.close());
    const withQueue = (node) => ({ queueName: this.queueName, ...node, children: node.children && node.children.map(withQueue) });
    const result = await fp.add(withQueue(tree));
    const collect = (n) => {
      this.added.push(n.job.id);
      (n.children || []).forEach(collect);
    };
    collect(result);
    return result;
  }

  /** Job.getState(), 'missing', or 'unreadable' when Node cannot load the job (bad data). */
  async state(id) {
    let job;
    try {
      job = await this.bullmq.Job.fromId(this.queue, String(id));
    } catch {
      return 'unreadable';
    }
    return job ? job.getState() : 'missing';
  }

  /** Waits until job `id` is in one of `states`. */
  async waitState(id, states, timeoutMs = 15_000) {
    const want = [].concat(states);
    let state;
    await waitFor(
      async () => {
        state = await this.state(id);
        return want.includes(state);
      },
      timeoutMs,
      `[${this.label}] job ${id} to be ${want.join('|')} (now ${state})`,
    );
  }

  /** Nothing left to do: no job waiting, active, delayed, prioritized, paused or waiting for children. */
  async idle() {
    const c = await this.queue.getJobCounts('active', 'wait', 'paused', 'delayed', 'prioritized', 'waiting-children');
    return Object.values(c).every((n) => n === 0);
  }

  /**
   * What `Queue.getWorkersCount()` and `Queue.getWorkers()` report while this side's workers run
   * (what Bull Board's and Taskforce's worker views read), once as many workers are listed as
   * processes run (a started worker names its connection a moment after it says so; a killed
   * one's connection is closed a moment after it died), or at the deadline whatever is listed.
   * Only what a tool reads of an entry is kept: the queue `name`, and the connection name
   * `rawname` with the queue's base64 name written as `<base64 Q>`; address, port, id, age,
   * idle time, last command and client library are the connection's, not the worker's.
   */
  async workersView(timeoutMs = 5000) {
    const running = this.processes.filter((p) => p.running).length;
    await waitFor(async () => (await this.queue.getWorkersCount()) === running, timeoutMs, `[${this.label}] ${running} worker(s) listed`).catch(() => {});
    const base = `${this.prefix}:${Buffer.from(this.queueName).toString('base64')}`;
    const rawname = (name) => (name === base || String(name).startsWith(`${base}:`) ? `${this.prefix}:<base64 Q>${name.slice(base.length)}` : name);
    const workers = (await this.queue.getWorkers()).map((c) => ({ name: c.name, rawname: rawname(c.rawname) }));
    workers.sort((a, b) => (a.rawname < b.rawname ? -1 : a.rawname > b.rawname ? 1 : 0));
    return { getWorkersCount: await this.queue.getWorkersCount(), getWorkers: workers, processesRunning: running };
  }

  async stopWorkers() {
    await Promise.all(
      this.processes
        .filter((p) => p.running)
        .map(async (p) => {
          p.kill('SIGTERM');
          try {
            await p.waitExit(15_000);
          } catch {
            await p.destroy();
          }
        }),
    );
  }

  diagnostics() {
    const parts = [`--- ${this.label}: queue ${this.queueName} ---`];
    for (const p of this.processes) parts.push(`--- ${p.label} pid ${p.pid} exit ${JSON.stringify(p.exitInfo ?? 'running')} ---\n${p.output()}`);
    parts.push(`--- ${this.label} QueueEvents (${this.events.entries.length}) ---\n${this.events.dump()}`);
    return parts.join('\n');
  }

  async close() {
    await Promise.all(this.processes.map((p) => p.destroy()));
    for (const close of this.closers.reverse()) {
      try {
        await close();
      } catch {
        // best effort
      }
    }
  }
}

/** What Node's Queue and Job API report, per job and for the queue, as pseudo-keys. */
async function apiView(side, jobIds, anchor) {
  const view = {};
  const counts = await side.queue.getJobCounts('active', 'completed', 'delayed', 'failed', 'paused', 'prioritized', 'waiting', 'waiting-children');
  view['api:getJobCounts'] = { type: 'api', ttl: false, value: counts };
  if (side.workersSeen) view['api:getWorkers'] = { type: 'api', ttl: false, value: side.workersSeen };
  for (const id of jobIds) {
    let job;
    let value = null;
    try {
      job = await side.bullmq.Job.fromId(side.queue, String(id));
    } catch (err) {
      value = { unreadable: `Job.fromId throws: ${err.message}` };
    }
    if (job) {
      value = {
        state: await job.getState(),
        attemptsMade: job.attemptsMade,
        attemptsStarted: job.attemptsStarted,
        stalledCounter: job.stalledCounter,
        failedReason: job.failedReason,
        returnvalue: job.returnvalue,
        stacktrace: normalizeStacktrace(JSON.stringify(job.stacktrace ?? null)),
        finishedOn: job.finishedOn === undefined ? undefined : ts(job.finishedOn, anchor),
      };
      for (const k of Object.keys(value)) if (value[k] === undefined) delete value[k];
    }
    view[`api:job:${id}`] = { type: 'api', ttl: false, value };
  }
  return view;
}

/** QueueEvents as received (stream ids dropped, due times as timestamps), one list or per job. */
function eventsView(side, anchor, order) {
  const list = side.events.entries.map((e) => {
    const data = { event: e.event, ...e.data };
    if (e.event === 'delayed' && typeof data.delay === 'number') data.delay = ts(data.delay, anchor);
    return data;
  });
  if (order !== 'perJob') return { QueueEvents: { type: 'api', ttl: false, value: list } };
  const byJob = {};
  for (const e of list) {
    const id = e.jobId === undefined ? '(no job)' : e.jobId;
    (byJob[id] = byJob[id] || []).push(e);
  }
  return Object.fromEntries(Object.entries(byJob).map(([id, l]) => [`QueueEvents[${id}]`, { type: 'api', ttl: false, value: l }]));
}

/** The events stream grouped per job, for scenarios whose jobs run concurrently. */
function groupStreamPerJob(keys) {
  const stream = keys.events;
  if (!stream) return;
  delete keys.events;
  const byJob = {};
  for (const e of stream.value) {
    const jobId = (e.fields.find(([f]) => f === 'jobId') || [])[1] ?? '(no job)';
    (byJob[jobId] = byJob[jobId] || []).push(e);
  }
  for (const [id, entries] of Object.entries(byJob)) keys[`events[${id}]`] = { type: 'stream', ttl: false, value: entries };
}

/** Ids of the jobs a side knows: added by the scenario, or with a job hash in the dump. */
function jobIdsOf(side, dump) {
  const ids = new Set(side.added.map(String));
  const base = `${side.prefix}:${side.queueName}:`;
  for (const [k, e] of Object.entries(dump.keys)) {
    if (e.type === 'hash' && e.value.timestamp !== undefined && e.value.opts !== undefined) ids.add(k.slice(base.length));
  }
  return ids;
}

/** Ids chosen by the producer or the id counter mean the same job on both queues. */
const SHARED_ID = (id) => !/^[0-9a-f]{8}-[0-9a-f]{4}-/.test(id) && !/^repeat:/.test(id);

/**
 * Normalized view of one side: keyspace, QueueEvents, Node API (for its own jobs and for the
 * other side's jobs with shared ids, so a job missing on one side shows as null there).
 */
async function viewOf(side, dump, otherIds, scenario, anchor) {
  const { keys, dropped, rewrite } = normalizeDump(dump, { anchor });
  const order = scenario.order || 'global';
  if (order === 'perJob') groupStreamPerJob(keys);
  const jobIds = jobIdsOf(side, dump);
  for (const id of otherIds) if (SHARED_ID(id)) jobIds.add(id);
  const api = await apiView(side, [...jobIds].sort(), anchor);
  const events = eventsView(side, anchor, order);
  const view = {};
  for (const [k, v] of Object.entries({ ...keys, ...api, ...events })) {
    view[rewrite(k)] = { ...v, value: rewriteDeep(v.value, rewrite) };
  }
  if (scenario.ignoreDrained) {
    for (const v of Object.values(view)) {
      if (Array.isArray(v.value)) v.value = v.value.filter((e) => !(e && (e.event === 'drained' || (e.fields && e.fields.some(([f, x]) => f === 'event' && x === 'drained')))));
    }
    delete view['QueueEvents[(no job)]'];
    delete view['events[(no job)]'];
  }
  return { view, dropped, dump };
}

/** Declared differences, one line per reason with the keys they touched (DIFF_VERBOSE=1: all). */
function summarizeKnown(known) {
  if (process.env.DIFF_VERBOSE) return formatDiffs(known);
  const byReason = new Map();
  for (const d of known) {
    const keys = byReason.get(d.reason) || new Set();
    keys.add(d.key);
    byReason.set(d.reason, keys);
  }
  return [...byReason].map(([reason, keys]) => `  ${reason}: ${[...keys].join(', ')}`).join('\n');
}

/**
 * The declared differences that apply to this version. They excuse a difference, never require
 * one, so they also apply when the subject is the Node worker (where the keys they name are
 * timing-dependent, e.g. a job Node loops on).
 */
function expectedFor(scenario, version) {
  return (scenario.expect || []).filter((r) => !r.versions || r.versions.includes(String(version)));
}

/**
 * Runs `scenario` for bullmq `version` on the server at `redisUrl`.
 * Returns {unexpected, known, report, sides}; never throws for a difference (the caller asserts).
 */
async function runScenario({ redisUrl, version, scenario, log = () => {} }) {
  const sides = [new Side({ label: 'node', redisUrl, version, scenario }), new Side({ label: 'ringback', redisUrl, version, scenario })];
  const both = (fn) => Promise.all(sides.map(fn));
  try {
    await both((s) => s.start());
    const gate = scenario.gate !== false;
    if (gate) await both((s) => s.queue.pause());
    if (scenario.before) await both((s) => scenario.before(s));
    await both((s) => s.startWorker());
    const anchor = Date.now();
    await both((s) => scenario.produce(s));
    if (gate) await both((s) => s.queue.resume());
    if (scenario.during) await both((s) => scenario.during(s));
    const done = scenario.done || ((s) => s.idle());
    await both((s) => waitFor(() => done(s), scenario.timeoutMs || 20_000, `[${s.label}] scenario ${scenario.name} to finish`));
    // the connected-workers view, while the workers still run
    await both(async (s) => {
      s.workersSeen = await s.workersView();
    });
    await both((s) => s.stopWorkers());
    await both(async (s) => {
      const [last] = await s.redis.xrevrange(s.key('events'), '+', '-', 'COUNT', 1);
      const lastId = last && last[0];
      await waitFor(() => !lastId || s.events.entries.some((e) => e.id === lastId), 5000, `[${s.label}] QueueEvents to read the stream up to ${lastId}`);
    });
    const dumps = await Promise.all(sides.map((s) => dumpQueue(s.redis, s.prefix, s.queueName)));
    const ids = sides.map((s, i) => jobIdsOf(s, dumps[i]));
    const [node, ringback] = await Promise.all(sides.map((s, i) => viewOf(s, dumps[i], ids[1 - i], scenario, anchor)));
    if (scenario.eventsTail) {
      // Approximate trimming (MAXLEN ~) drops whole stream nodes, whose size depends on the
      // encoded entry ids (times): where the cut falls is timing, and so is which entries a
      // QueueEvents reader saw before they were trimmed. Compare the entries both streams still
      // hold, and the same number of last QueueEvents (the reader read up to the stream's end).
      const n = Math.min(node.view.events.value.length, ringback.view.events.value.length);
      for (const k of ['events', 'QueueEvents']) {
        for (const v of [node.view[k], ringback.view[k]]) v.value = v.value.slice(Math.max(0, v.value.length - n));
      }
    }
    const tolerance = { ...DEFAULT_TOLERANCE, ...(scenario.tolerance || {}) };
    const diffs = diffViews(node.view, ringback.view, tolerance);
    const { unexpected, known } = classify(diffs, expectedFor(scenario, version));
    const report = [
      `scenario ${scenario.name} [bullmq v${version}]: ${unexpected.length} unexpected, ${known.length} expected difference(s); ` +
        `times agree within ${diffs.maxSeen.ts} ms (tolerance ${tolerance.ts}), durations within ${diffs.maxSeen.dur} ms (tolerance ${tolerance.dur})`,
      unexpected.length ? `unexpected:\n${formatDiffs(unexpected)}` : '',
      known.length ? `expected (declared in the scenario):\n${summarizeKnown(known)}` : '',
    ]
      .filter(Boolean)
      .join('\n');
    log(report);
    if (scenario.check) {
      try {
        await scenario.check({ node: sides[0], ringback: sides[1], anchor, views: { node: node.view, ringback: ringback.view } });
      } catch (err) {
        // the comparison's report first: a check usually fails for a reason the diff shows
        err.message += `\n${report}`;
        throw err;
      }
    }
    return { unexpected, known, report, maxSeen: diffs.maxSeen, node, ringback, sides };
  } catch (err) {
    err.message += `\n${sides.map((s) => s.diagnostics()).join('\n')}`;
    throw err;
  } finally {
    await both((s) => s.close());
  }
}

module.exports = { runScenario, Side, DEFAULT_WORKER, DEFAULT_TOLERANCE };
