// One test's world: a fresh queue on the shared Redis, Node producer/QueueEvents/workers of
// one BullMQ version, worker processes, and cleanup that prints their logs when the test failed.
'use strict';

const crypto = require('node:crypto');
const { load, ownedConnection, redisClient, defaultPrefix } = require('../bullmq');
const { makeProcessor } = require('../scripted-processor');
const { spawnSubject, spawnNodeWorker, describeSubject } = require('./subject');
const { waitFor } = require('./wait');

const VERSIONS = ['6', '5'];
// single Redis; on a cluster the prefix is hash-tagged (`{bull}`), see defaultPrefix
const PREFIX = 'bull';

/** Every event QueueEvents emitted, in stream order, with the stream id's millisecond part. */
class EventLog {
  constructor() {
    this.entries = [];
    this.errors = [];
  }

  attach(queueEvents) {
    const original = queueEvents.emit.bind(queueEvents);
    queueEvents.emit = (event, ...args) => {
      if (event === 'error') {
        this.errors.push(args[0]);
      } else if (event === 'drained') {
        this.entries.push({ event, jobId: undefined, data: {}, id: args[0], ms: streamMs(args[0]) });
      } else if (args[0] && typeof args[0] === 'object' && typeof args[1] === 'string' && !isPerJobEcho(event, args[0])) {
        this.entries.push({ event, jobId: args[0].jobId, data: args[0], id: args[1], ms: streamMs(args[1]) });
      }
      return original(event, ...args);
    };
  }

  /** Entries for one job (or all), optionally of one event name. */
  of(jobId, event) {
    return this.entries.filter((e) => (jobId === undefined || e.jobId === String(jobId)) && (event === undefined || e.event === event));
  }

  /** Event names for one job in stream order, e.g. ['added', 'waiting', 'active', 'completed']. */
  sequence(jobId) {
    return this.of(jobId).map((e) => e.event);
  }

  count(event, jobId) {
    return this.of(jobId, event).length;
  }

  /** Waits until at least `n` `event` entries for `jobId` (undefined = any job) were received. */
  async wait(event, jobId, timeoutMs = 10_000, n = 1) {
    await waitFor(() => this.count(event, jobId) >= n, timeoutMs, `${n}× QueueEvents "${event}"${jobId === undefined ? '' : ` for job ${jobId}`}`);
    return this.of(jobId, event);
  }

  dump() {
    return this.entries.map((e) => `${e.id} ${e.event} ${JSON.stringify(e.data)}`).join('\n');
  }
}

function streamMs(id) {
  return Number(String(id).split('-')[0]);
}

/** QueueEvents also emits `<event>:<jobId>`; record each stream entry once. */
function isPerJobEcho(event, data) {
  return data.jobId !== undefined && event.endsWith(`:${data.jobId}`) && event.includes(':');
}

/**
 * Opens what a test needs on one fresh queue, on `side` ({redisUrl, bullmq, prefix, queueName,
 * events, closers}): a raw Redis connection (`side.redis`, an ioredis Cluster on a cluster URL),
 * the Node `Queue` (`side.queue`), and a `QueueEvents` recorded into `side.events`; each is
 * closed by `side.closers`.
 */
async function openQueue(side, blockingTimeout) {
  side.redis = redisClient(side.redisUrl, { maxRetriesPerRequest: null });
  side.closers.push(() => side.redis.quit());
  side.queue = new side.bullmq.Queue(side.queueName, { connection: ownedConnection(side.redisUrl, side.closers), prefix: side.prefix });
  side.closers.push(() => side.queue.close());
  // Read the stream from its start: the queue is new, so nothing can be missed or mixed in.
  side.queueEvents = new side.bullmq.QueueEvents(side.queueName, {
    connection: ownedConnection(side.redisUrl, side.closers),
    prefix: side.prefix,
    lastEventId: '0-0',
    blockingTimeout,
  });
  side.events.attach(side.queueEvents);
  side.closers.push(() => side.queueEvents.close());
  await Promise.all([side.queue.waitUntilReady(), side.queueEvents.waitUntilReady()]);
}

class Scenario {
  constructor({ redisUrl, version, label, prefix }) {
    this.redisUrl = redisUrl;
    this.version = String(version);
    this.bullmq = load(this.version);
    this.prefix = prefix || defaultPrefix(redisUrl);
    const slug = label.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '').slice(0, 40);
    this.queueName = `rb-${slug}-v${this.version}-${crypto.randomBytes(3).toString('hex')}`;
    this.closers = [];
    this.processes = [];
    this.workerErrors = [];
    this.events = new EventLog();
  }

  /** Full Redis key for a queue suffix or job id: `bull:<queue>:<suffix>`. */
  key(suffix) {
    return `${this.prefix}:${this.queueName}:${suffix}`;
  }

  async start() {
    await openQueue(this, 1000);
    return this;
  }

  /** Settings shared by every worker process of this scenario; override per call. */
  workerSettings(overrides = {}) {
    return {
      redisUrl: this.redisUrl,
      queue: this.queueName,
      prefix: this.prefix,
      version: this.version,
      concurrency: 1,
      lockDurationMs: 2000,
      stalledIntervalMs: 1000,
      maxStalledCount: 1,
      shutdownGraceMs: 10_000,
      ...overrides,
    };
  }

  /** Starts the worker under test and waits for "worker started". */
  async startSubject(overrides = {}, label = `subject#${this.processes.length + 1}`) {
    const proc = spawnSubject(this.workerSettings(overrides), `${label} (${describeSubject()})`);
    this.processes.push(proc);
    await proc.waitStarted();
    return proc;
  }

  /** Starts the Node reference worker as a child process and waits for "worker started". */
  async startNodeChild(overrides = {}, label = `node-child#${this.processes.length + 1}`) {
    const proc = spawnNodeWorker(this.workerSettings(overrides), label);
    this.processes.push(proc);
    await proc.waitStarted();
    return proc;
  }

  /**
   * An in-process Node Worker running the scripted processor (`crash` refused so it cannot
   * kill the test runner). Options override the short test timings.
   */
  async nodeWorker(opts = {}) {
    const worker = new this.bullmq.Worker(this.queueName, makeProcessor(this.bullmq, { allowCrash: false }), {
      connection: ownedConnection(this.redisUrl, this.closers),
      prefix: this.prefix,
      concurrency: 1,
      lockDuration: 2000,
      stalledInterval: 1000,
      maxStalledCount: 1,
      ...opts,
    });
    worker.on('error', (err) => this.workerErrors.push(err));
    this.closers.push(() => worker.close(true));
    await worker.waitUntilReady();
    return worker;
  }

  async getJob(id) {
    return this.queue.getJob(String(id));
  }

  async hash(id) {
    return this.redis.hgetall(this.key(id));
  }

  /** Queue.getJobCounts for the usual states, as a plain object. */
  async counts() {
    return this.queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed', 'prioritized', 'waiting-children');
  }

  /** Waits until `id` is in one of `states` (a string or an array). */
  async waitState(id, states, timeoutMs = 10_000) {
    const want = [].concat(states);
    let state;
    await waitFor(
      async () => {
        const job = await this.getJob(id);
        state = job ? await job.getState() : 'missing';
        return want.includes(state);
      },
      timeoutMs,
      `job ${id} to be ${want.join('|')} (now ${state})`,
    );
    return state;
  }

  /** Another fresh queue on the same server and version, closed and reported with this one. */
  async sibling(label) {
    const other = new Scenario({ redisUrl: this.redisUrl, version: this.version, label, prefix: this.prefix });
    this.siblings = this.siblings || [];
    this.siblings.push(other);
    await other.start();
    return other;
  }

  /** Text printed when a test fails: what every process wrote, and the event stream. */
  diagnostics() {
    const parts = [`queue ${this.queueName} (bullmq v${this.version}, subject ${describeSubject()})`];
    for (const p of this.processes) {
      parts.push(`--- ${p.label} pid ${p.pid} exit ${JSON.stringify(p.exitInfo ?? 'running')} ---\n${p.output()}`);
    }
    parts.push(`--- QueueEvents (${this.events.entries.length}) ---\n${this.events.dump()}`);
    if (this.workerErrors.length) parts.push(`--- in-process worker errors ---\n${this.workerErrors.map((e) => e.stack || e).join('\n')}`);
    if (this.events.errors.length) parts.push(`--- QueueEvents errors ---\n${this.events.errors.map((e) => e.stack || e).join('\n')}`);
    for (const other of this.siblings || []) parts.push(`===== sibling =====\n${other.diagnostics()}`);
    return parts.join('\n');
  }

  async close() {
    for (const other of this.siblings || []) await other.close();
    await Promise.all(this.processes.map((p) => p.destroy()));
    for (const close of this.closers.reverse()) {
      try {
        await close();
      } catch {
        // best effort: the test result is already decided
      }
    }
  }
}

/**
 * Runs `fn(scenario)` against a fresh queue; on failure prints the diagnostics, always cleans up.
 * `getRedis` returns the started server (set up in a `before` hook).
 */
function scenarioTest(getRedis, version, label, fn) {
  return async (t) => {
    const s = new Scenario({ redisUrl: getRedis().url, version, label });
    t.diagnostic(`subject: ${describeSubject()}; queue ${s.queueName}`);
    try {
      await s.start();
      await fn(s, t);
    } catch (err) {
      process.stderr.write(`\n===== FAILED: ${label} [bullmq v${version}] =====\n${s.diagnostics()}\n===== end =====\n`);
      throw err;
    } finally {
      await s.close();
    }
  };
}

module.exports = { Scenario, scenarioTest, EventLog, openQueue, VERSIONS, PREFIX };
