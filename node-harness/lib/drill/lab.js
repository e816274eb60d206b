// What every drill starts and checks: its own redis-server and Twilio simulator, ringback and
// legacy processes configured alike, supervisors that restart what dies, and the verdict,
// counted at the simulator: every run texted exactly once, none lost, no attempt left open.
'use strict';

const path = require('node:path');
const { startRedis } = require('../harness/redis');
const { startCluster } = require('../harness/cluster');
const { startSentinelSet } = require('../harness/sentinel');
const { startTwilioSim, ringbackBin } = require('../harness/twilio-sim');
const { WorkerProcess } = require('../harness/subject');
const { waitFor, withTimeout, sleep } = require('../harness/wait');
const { load, ownedConnection, redisClient } = require('../bullmq');
const { CLAIM_PREFIX } = require('../legacy');

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
const AUTH_TOKEN = 'drill-auth-token';
const API_TOKEN = 'drill-api-token-0123456789';
const MAX_RESTARTS = 500;

/** The lab could not be set up (no redis-server, no binary, …): exit 2, not a failed drill. */
class SetupError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SetupError';
  }
}
const BIN_DIR = path.join(__dirname, '..', '..', 'bin');
const OPEN_ATTEMPTS = `ringback:open-attempts:${CLAIM_PREFIX}`;

/**
 * Timing profiles: the window and BullMQ settings every worker of a lab gets (legacy workers get
 * the same lock and stall settings). `compressed` has the lock SHORTER than ringback's claim, so stall recovery hands a dead worker's job back while its claim
 * still stands. `prod` keeps the defaults' order (15 s claim < 30 s lock, stall sweep every 30 s)
 * at a drill's scale: the claim (RINGBACK_PENDING_TTL_MS) is shorter than the lock, so stall
 * recovery hands the job back after the dead attempt's claim expired: the mixed-fleet case of
 * the model's v1 counterexample (docs/model-counterexample.md).
 */
const TIMINGS = Object.freeze({
  compressed: Object.freeze({ pendingTtlMs: 3000, lockMs: 1000, stalledIntervalMs: 300 }),
  prod: Object.freeze({ pendingTtlMs: 3000, lockMs: 6000, stalledIntervalMs: 2000 }),
});
const DEFAULT_TIMINGS = ['compressed', 'prod'];

/** `DRILL_TIMINGS=compressed,prod` (or a `--timings` value): the profiles to run, checked. */
function timingProfiles(spec = process.env.DRILL_TIMINGS) {
  if (spec === undefined || spec === '') return [...DEFAULT_TIMINGS];
  const names = String(spec)
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !TIMINGS[n]);
  if (unknown.length || !names.length) throw new SetupError(`timings: unknown profile(s) ${unknown.join(', ') || '(none)'}; known: ${Object.keys(TIMINGS).join(', ')}`);
  return names;
}

/** "prod (claim 3000 ms, lock 6000 ms, stall sweep 2000 ms)": for report lines. */
function describeTimings(name) {
  const t = TIMINGS[name];
  return `${name} (claim ${t.pendingTtlMs} ms, lock ${t.lockMs} ms, stall sweep ${t.stalledIntervalMs} ms)`;
}

/** Callback data for run i of a drill: the body names the run, so texts are counted per run. */
function runData(drill, i) {
  return {
    runId: `${drill}-${i}`,
    to: `+1555020${String(i % 10000).padStart(4, '0')}`,
    body: `Run ${drill}-${i} finished: approve the release`,
  };
}

class Lab {
  /**
   * `version`: the bullmq major the Node parts use; `log`: progress lines; `cluster`: run on a
   * real local Redis Cluster (three masters with a replica each) instead of one redis-server,
   * every client a cluster client and the queues under the hash-tagged prefix `{bull}`;
   * `sentinel`: on a real Redis Sentinel set (a primary, a replica, three sentinels), every Node
   * client through ioredis's sentinels and ringback through the redis+sentinel:// URL.
   */
  constructor({ name, version = '6', timings = 'compressed', cluster = false, sentinel = false, aof = false, replica = false, log = () => {} }) {
    if (!TIMINGS[timings]) throw new SetupError(`timings: unknown profile ${timings}; known: ${Object.keys(TIMINGS).join(', ')}`);
    this.name = name;
    this.cluster = Boolean(cluster);
    this.sentinel = Boolean(sentinel);
    // one server with its append-only file on (startRedis's copyAof and restartFrom)
    this.aof = Boolean(aof);
    // one server with a replica attached (one endpoint with replicas: ringback waits for it)
    this.withReplica = Boolean(replica);
    // BullMQ on a cluster: every key of a queue in one slot, by the prefix's hash tag
    this.prefix = this.cluster ? '{bull}' : 'bull';
    this.version = String(version);
    this.timings = timings;
    this.t = TIMINGS[timings];
    this.log = log;
    this.processes = [];
    this.loops = [];
    this.stopping = false;
    this.crashes = {};
    // workers that exited by themselves (not by the drill's signals): each fails the drill
    this.failures = [];
  }

  /** Starts redis-server and the simulator; on failure stops what started and throws a SetupError. */
  async start() {
    try {
      this.bin = ringbackBin();
      // `redis` is one server, a Cluster or a Sentinel set: each has `url` (redis://,
      // redis+cluster:// or redis+sentinel://) and `stop()`
      this.redis = this.cluster ? await startCluster() : this.sentinel ? await startSentinelSet() : await startRedis({ aof: this.aof });
      this.sim = await startTwilioSim({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
      this.admin = redisClient(this.redis.url, { maxRetriesPerRequest: null });
      if (this.withReplica) {
        this.replica = await startRedis();
        const r = redisClient(this.replica.url, { maxRetriesPerRequest: null });
        try {
          await r.call('REPLICAOF', '127.0.0.1', String(this.redis.port));
          await waitFor(async () => /master_link_status:up/.test(await r.call('INFO', 'replication')), 30_000, 'the replica in sync', 100);
        } finally {
          r.disconnect();
        }
      }
      return this;
    } catch (err) {
      await this.stop();
      throw new SetupError(err.message);
    }
  }

  /**
   * Settings both workers read (RINGBACK_* names), short so that a drill takes seconds; lock and
   * stall sweep from the lab's timing profile.
   */
  common(queue) {
    return {
      ...process.env,
      NO_COLOR: '1',
      // info for ringback_queue::worker: the drills wait for its "worker started" line
      RUST_LOG: process.env.DRILL_RUST_LOG || 'warn,ringback_queue::worker=info',
      REDIS_URL: this.redis.url,
      RINGBACK_QUEUE: queue,
      RINGBACK_PREFIX: this.prefix,
      BULLMQ_VERSION: this.version,
      // drill mode: RINGBACK_CRASH_AT is honoured only with it
      RINGBACK_DRILL: '1',
      RINGBACK_LOCK_DURATION_MS: String(this.t.lockMs),
      RINGBACK_STALLED_INTERVAL_MS: String(this.t.stalledIntervalMs),
      // crashes are frequent in drills: a job may stall several times before it is done
      RINGBACK_MAX_STALLED_COUNT: '20',
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: '+15005550006',
      TWILIO_API_BASE: this.sim.base,
    };
  }

  ringbackEnv(queue, extra = {}) {
    return {
      ...this.common(queue),
      RINGBACK_CONCURRENCY: '8',
      RINGBACK_DRAIN_DELAY_MS: '300',
      RINGBACK_PENDING_TTL_MS: String(this.t.pendingTtlMs),
      RINGBACK_RECONCILE_WINDOW_MS: '1500',
      RINGBACK_RECONCILE_POLL_MS: '200',
      TWILIO_TIMEOUT_MS: '500',
      RINGBACK_METRICS_LISTEN: '127.0.0.1:0',
      ...extra,
    };
  }

  /**
   * Runs one admin command on the server, or on every master of the cluster (CLIENT KILL,
   * SCRIPT FLUSH: per node). Resolves with the replies.
   */
  async onEveryMaster(...args) {
    const nodes = this.admin.isCluster ? this.admin.nodes('master') : [this.admin];
    return Promise.all(nodes.map((n) => n.call(...args)));
  }

  track(p) {
    this.processes.push(p);
    return p;
  }

  ringbackWorker(label, queue, extra) {
    return this.track(new WorkerProcess(label, this.bin, ['worker'], this.ringbackEnv(queue, extra)));
  }

  legacyWorker(label, queue, extra = {}) {
    const env = { ...this.common(queue), RINGBACK_CONCURRENCY: '4', ...extra };
    return this.track(new WorkerProcess(label, process.execPath, [path.join(BIN_DIR, 'legacy-worker.js')], env));
  }

  /** ZSET of live ringback workers' heartbeats (what `ringback drain` refuses on). */
  workersKey() {
    return `ringback:workers:${CLAIM_PREFIX}`;
  }

  /** The heartbeat names (`ringback worker pid N on host (id)`) younger than `withinMs`. */
  async heartbeats(withinMs = 3000) {
    const [secs, micros] = await this.admin.time();
    const now = Number(secs) * 1000 + Math.floor(Number(micros) / 1000);
    return this.admin.zrangebyscore(this.workersKey(), now - withinMs, '+inf');
  }

  /**
   * Runs `ringback drain --timeout-ms N --json` as an operator would, with the workers' env
   * for `queue`. Resolves {code, ms, report (the --json line, parsed), stderr, stdout}.
   */
  async drain(queue, { timeoutMs = 60_000, extra = {} } = {}) {
    const env = { ...this.ringbackEnv(queue, extra) };
    delete env.RINGBACK_CRASH_AT;
    delete env.RINGBACK_METRICS_LISTEN;
    const t0 = Date.now();
    const p = this.track(new WorkerProcess('ringback-drain', this.bin, ['drain', '--timeout-ms', String(timeoutMs), '--json'], env));
    const info = await p.waitExit(timeoutMs + 30_000).catch(async (err) => {
      await p.destroy();
      return { code: null, signal: null, error: err.message };
    });
    const out = p.output();
    let report = null;
    for (const line of out.split('\n')) {
      if (line.startsWith('{')) {
        try {
          report = JSON.parse(line);
        } catch {
          // not the report
        }
      }
    }
    return { code: info.code, signal: info.signal, ms: Date.now() - t0, report, output: out };
  }

  /**
   * Runs `ringback resend <runId>` as a person following the runbook would, with the workers'
   * env for `queue` (and `extra`). Resolves {code, output}.
   */
  async resend(queue, runId, { extra = {} } = {}) {
    const env = { ...this.ringbackEnv(queue, extra) };
    delete env.RINGBACK_CRASH_AT;
    delete env.RINGBACK_METRICS_LISTEN;
    const p = this.track(new WorkerProcess(`ringback-resend ${runId}`, this.bin, ['resend', runId], env));
    const info = await p.waitExit(60_000).catch(async (err) => {
      await p.destroy();
      return { code: null, error: err.message };
    });
    return { code: info.code, output: p.output() };
  }

  /** A process that prints "... listening on http://..."; resolves with it and its base URL. */
  async listening(p, timeoutMs = 15_000) {
    const exited = p.exit.then((info) => {
      throw new Error(`${p.label} exited before listening: ${JSON.stringify(info)}`);
    });
    const up = waitFor(() => /listening on (http:\/\/\S+)/.exec(p.output())?.[1], timeoutMs, `${p.label} to listen`);
    const base = await withTimeout(Promise.race([up, exited]), timeoutMs + 1000, `${p.label} to listen`).catch((err) => {
      throw new Error(`${err.message}\n${p.output()}`);
    });
    return { process: p, base };
  }

  /** The legacy API on `listen` (`[::]:3000`: both families, as Node's `listen(3000)`). */
  legacyApi(queue, { listen = '127.0.0.1:0', label = 'legacy-api' } = {}) {
    const env = { ...this.common(queue), LEGACY_API_TOKEN: API_TOKEN, LEGACY_API_LISTEN: listen };
    return this.listening(this.track(new WorkerProcess(label, process.execPath, [path.join(BIN_DIR, 'legacy-api.js')], env)));
  }

  /**
   * `ringback serve` on `listen`; `[::]` (both families) is allowed only with `publicBind`.
   * `publicUrl`: where Twilio calls it (signatures cover that URL).
   */
  ringbackServe(queue, { listen = '127.0.0.1:0', label = 'ringback-serve', publicBind = false, publicUrl = 'http://127.0.0.1:3000' } = {}) {
    const env = { ...this.ringbackEnv(queue), RINGBACK_API_TOKEN: API_TOKEN, RINGBACK_PUBLIC_URL: publicUrl };
    if (publicBind) env.RINGBACK_ALLOW_PUBLIC_BIND = 'true';
    return this.listening(this.track(new WorkerProcess(label, this.bin, ['serve', '--listen', listen], env)));
  }

  /**
   * Restarts `start(i)` whenever it dies until the lab stops. Deaths by signal are the drill's
   * doing and are counted; any other exit is a worker failing by itself, kept in `failures`
   * (the drill fails on it). A process that dies young is restarted after a pause, and a
   * supervisor gives up after MAX_RESTARTS, so a worker that cannot start does not spin.
   */
  supervise(name, start) {
    this.crashes[name] = this.crashes[name] || 0;
    const loop = async () => {
      for (let i = 0; !this.stopping; i += 1) {
        if (i >= MAX_RESTARTS) {
          this.failures.push(`${name}: restarted ${MAX_RESTARTS} times; giving up`);
          return;
        }
        const born = Date.now();
        const p = start(i);
        const info = await p.exit;
        if (this.stopping) return;
        if (info.signal) this.crashes[name] += 1;
        else this.failures.push(`${p.label} exited by itself (${JSON.stringify(info)}): ${p.output().slice(-400)}`);
        if (Date.now() - born < 500) await sleep(200);
      }
    };
    this.loops.push(loop());
  }

  queue(name) {
    const { Queue } = load(this.version);
    this.closers = this.closers || [];
    // the queue's own cluster client (if any) is quit after the queue closes
    const own = [];
    const q = new Queue(name, { connection: ownedConnection(this.redis.url, own), prefix: this.prefix });
    this.closers.push(async () => {
      await q.close();
      for (const close of own) await close();
    });
    return q;
  }

  async simStats() {
    const res = await fetch(`${this.sim.base}/sim/stats`);
    return res.json();
  }

  /** Texts per body, as the simulator counted them. */
  async textsByBody() {
    const stats = await this.simStats();
    const by = new Map();
    // by the body as created: a Messaging Service may store it rewritten
    for (const e of stats.by_to_sent_body) by.set(e.body, (by.get(e.body) || 0) + e.count);
    return { total: stats.total, by };
  }

  /**
   * Waits (up to `timeoutMs`) until every run in `runs` was texted, `queues` are idle and no
   * attempt is open; then the verdict: duplicates (texted more than once), lost (never texted),
   * and what was still open. Never throws for a wrong count: the caller reports it.
   */
  /**
   * Runs the legacy worker failed to send (its provider call threw): its own retry then finds
   * its 600 s claim and drops the callback, the legacy flaw ringback exists to end. No peer can
   * see or repair such a drop (the legacy claim holds no message), so drills report these
   * apart from ringback's results.
   */
  legacyDrops() {
    const drops = new Set();
    for (const p of this.processes) {
      for (const m of p.output().matchAll(/provider call failed for run (\S+):/g)) drops.add(m[1]);
    }
    return drops;
  }

  async settle(runs, queues, timeoutMs = 60_000) {
    const t0 = Date.now();
    let state = {};
    const look = async () => {
      const { total, by } = await this.textsByBody();
      const counts = await Promise.all(queues.map((q) => q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'completed', 'failed')));
      const busy = counts.reduce((n, c) => n + c.wait + c.active + c.delayed + c.prioritized, 0);
      const open = await this.admin.zrange(OPEN_ATTEMPTS, 0, -1);
      const drops = this.legacyDrops();
      const missing = runs.filter((d) => !by.get(d.body) && !drops.has(d.runId)).map((d) => d.runId);
      const failed = counts.reduce((n, c) => n + c.failed, 0);
      state = { total, by, busy, open, missing, failed };
      return busy === 0 && open.length === 0 && missing.length === 0;
    };
    const settled = await waitFor(look, timeoutMs, 'the drill to settle', 100).then(
      () => true,
      () => false,
    );
    const by = state.by || new Map();
    const drops = this.legacyDrops();
    const texts = runs.map((d) => [d.runId, by.get(d.body) || 0]);
    return {
      settled,
      settleMs: Date.now() - t0,
      runs: runs.length,
      texts: texts.reduce((n, [, c]) => n + c, 0),
      duplicates: texts.filter(([, c]) => c > 1).map(([id, c]) => `${id}×${c}`),
      lost: texts.filter(([id, c]) => c === 0 && !drops.has(id)).map(([id]) => id),
      // never texted because the legacy worker's provider call failed (see legacyDrops)
      legacyDropped: texts.filter(([id, c]) => c === 0 && drops.has(id)).map(([id]) => id),
      stillBusy: state.busy,
      stillOpen: state.open || [],
      failedJobs: state.failed,
    };
  }

  /** What Redis holds about `runIds` (claim, attempt record, their jobs): for failure reports. */
  async explain(runIds, q) {
    const jobs = await q.getJobs(['completed', 'failed', 'active', 'wait', 'delayed'], 0, -1);
    const out = {};
    for (const id of runIds) {
      const claimKey = `${CLAIM_PREFIX}${id}`;
      out[id] = {
        claim: await this.admin.get(claimKey),
        claimTtlMs: await this.admin.pttl(claimKey),
        attempt: await this.admin.hgetall(`ringback:attempt:{${claimKey}}`),
        jobs: jobs
          .filter((j) => j.data && j.data.runId === id)
          .map((j) => ({ id: j.id, state: j.finishedOn ? (j.failedReason ? 'failed' : 'completed') : 'open', returnvalue: j.returnvalue, attemptsMade: j.attemptsMade, stalledCounter: j.stalledCounter, processedBy: j.processedBy })),
        logs: this.processes.flatMap((p) =>
          p
            .output()
            .split('\n')
            .filter((l) => l.includes(id) || l.includes('crashing') || l.includes('aborting'))
            .map((l) => `${p.label}: ${l.slice(0, 300)}`),
        ),
      };
    }
    return out;
  }

  async stop() {
    this.stopping = true;
    await Promise.all(this.processes.map((p) => p.destroy()));
    await Promise.all(this.loops);
    for (const close of this.closers || []) await close().catch(() => {});
    await this.admin?.quit().catch(() => {});
    await this.sim?.stop();
    await this.redis?.stop();
    await this.replica?.stop();
  }
}

/** How many `stalled` events the queue's stream holds: the recoveries Node's tools saw. */
async function stalledEvents(lab, queueName) {
  const entries = await lab.admin.xrange(`${lab.prefix}:${queueName}:events`, '-', '+');
  return entries.filter(([, fields]) => fields[0] === 'event' && fields[1] === 'stalled').length;
}

/** Whether a settle() verdict is a pass: settled, every run texted exactly once. */
function passed(v) {
  return v.settled && v.duplicates.length === 0 && v.lost.length === 0 && v.texts + v.legacyDropped.length === v.runs;
}

module.exports = { Lab, SetupError, runData, passed, stalledEvents, API_TOKEN, AUTH_TOKEN, ACCOUNT_SID, TIMINGS, DEFAULT_TIMINGS, timingProfiles, describeTimings, OPEN_ATTEMPTS };
