// Node BullMQ and the worker under test on a real Redis Cluster (three masters with a
// replica each, lib/harness/cluster.js), the queue under the hash-tagged prefix `{bull}`, every
// Node client an ioredis Cluster, the subject given REDIS_URL=redis+cluster://….
//
// Which of the single-Redis suites run here, and why these: what changes on a cluster is where
// keys live (one slot per queue, on one master, that may move) and how clients reach them
// (MOVED, ASK, per-node script caches), not BullMQ's semantics, which the single-Redis suites
// prove. So:
//   - interop core: Node produces every kind of job the scripts treat differently (plain,
//     retried with backoff, failed, unrecoverable, delayed, prioritized) and reads the subject's
//     results through its API (producer.test.js / process.test.js in one); a Node worker and the
//     subject share a queue (shared-queue.test.js: both sets of scripts on one slot); the
//     subject SIGKILLed mid-job and a Node worker recovering it (stall.test.js: the stalled
//     sweep's keys);
//   - differential subset (differential/scenarios): one scenario per script family whose keys
//     differ: add/complete (`plain`), fail and retry (`backoff-fixed-exponential`,
//     `retries-exhausted`), delay (`delayed`), priority (`prioritized`), stall (`stall-recovered`),
//     the job scheduler's repeat keys (`job-scheduler-every`), flows' parent/child keys
//     (`flow-parent-two-children`) and deduplication keys (`dedup-simple`); keyspaces compared
//     key by key as on one Redis (the dump SCANs every master);
//   - faults with jobs in flight: CLUSTER FAILOVER on the queue master's replica, SIGKILL of that
//     master (the replica promoted), and a migration of the queue's slot to another master: no
//     job lost, none finished twice (counted in the events stream the new master holds), the
//     subject still fetching afterwards (its blocking connection followed the slot).
// The SMS path on a cluster (texts counted at the simulator, faults with callbacks in flight,
// the receipt webhook, a crash drill at every window point) is test/cluster-sms.test.js.
'use strict';

const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { startCluster, slotOf } = require('../lib/harness/cluster');
const { scenarioTest, VERSIONS } = require('../lib/harness/scenario');
const { waitFor, sleep } = require('../lib/harness/wait');
const { assertQuiescent } = require('../lib/harness/checks');
const { runScenario } = require('../differential/run');
const scenarios = require('../differential/scenarios');

let cluster;
before(async () => {
  cluster = await startCluster();
});
after(async () => {
  await cluster?.stop();
});
const getRedis = () => ({ url: cluster.url });

const LOCK_MS = 1000;
const STALLED_MS = 500;
const DIFFERENTIAL = [
  'plain',
  'backoff-fixed-exponential',
  'retries-exhausted',
  'delayed',
  'prioritized',
  'stall-recovered',
  'job-scheduler-every',
  'flow-parent-two-children',
  'dedup-simple',
];

/** Every key of the queue is on the master owning `{bull}`'s slot, and on no other master. */
async function assertOneSlot(s) {
  const slot = slotOf(s.key('wait'));
  const owner = await cluster.masterOf(s.key('wait'));
  const masters = s.redis.nodes('master');
  let elsewhere = 0;
  let onOwner = 0;
  for (const m of masters) {
    const keys = await m.keys(`${s.prefix}:${s.queueName}:*`);
    if (`${m.options.host}:${m.options.port}` === owner.addr) onOwner += keys.length;
    else elsewhere += keys.length;
  }
  assert.ok(onOwner > 0, `the queue's keys are on ${owner.addr}, the master of slot ${slot}`);
  assert.equal(elsewhere, 0, 'no key of the queue on another master');
}

/**
 * How many `event` entries per job the queue's events stream holds now (read from its master),
 * and the longest pause between two of them (ms, by stream id): what a fault cost the workers.
 */
async function streamCounts(s, event) {
  const entries = await s.redis.xrange(s.key('events'), '-', '+');
  const by = new Map();
  let last;
  by.longestGapMs = 0;
  for (const [id, fields] of entries) {
    const f = Object.fromEntries(fields.reduce((acc, v, i) => (i % 2 ? acc : [...acc, [v, fields[i + 1]]]), []));
    if (f.event !== event) continue;
    by.set(f.jobId, (by.get(f.jobId) || 0) + 1);
    const ms = Number(id.split('-')[0]);
    if (last !== undefined) by.longestGapMs = Math.max(by.longestGapMs, ms - last);
    last = ms;
  }
  return by;
}

for (const version of VERSIONS) {
  describe(`cluster interop core [bullmq v${version}]`, () => {
    it(
      'Node produces every kind of job on {bull}; the subject runs them; Node reads the results',
      { timeout: 30_000 },
      scenarioTest(getRedis, version, 'cluster-core', async (s) => {
        assert.equal(s.prefix, '{bull}');
        const jobs = await s.queue.addBulk([
          ...Array.from({ length: 20 }, (_, i) => ({ name: `plain-${i}`, data: { script: ['complete'] } })),
          { name: 'retry', data: { script: ['fail:once', 'complete'] }, opts: { attempts: 3, backoff: { type: 'fixed', delay: 100 } } },
          { name: 'fail', data: { script: ['fail:always'] }, opts: { attempts: 2 } },
          { name: 'unrec', data: { script: ['unrecoverable:stop'] }, opts: { attempts: 5 } },
          { name: 'delayed', data: { script: ['complete'] }, opts: { delay: 300 } },
          { name: 'prio', data: { script: ['complete'] }, opts: { priority: 3 } },
        ]);
        await s.startSubject({ concurrency: 4 });
        const byName = Object.fromEntries(jobs.map((j) => [j.name, j.id]));
        await s.events.wait('completed', undefined, 15_000, 23);
        await s.events.wait('failed', undefined, 15_000, 2);
        await s.waitState(byName.fail, 'failed');
        await s.waitState(byName.unrec, 'failed');
        const retry = await s.getJob(byName.retry);
        assert.deepEqual(retry.returnvalue, { ok: true, attempt: 2 });
        assert.equal(retry.attemptsMade, 2);
        const fail = await s.getJob(byName.fail);
        assert.equal(fail.failedReason, 'always');
        assert.equal(fail.attemptsMade, 2);
        const unrec = await s.getJob(byName.unrec);
        assert.equal(unrec.attemptsMade, 1, 'an unrecoverable error ends the job at once');
        const delayed = s.events.of(byName.delayed, 'completed')[0];
        const added = s.events.of(byName.delayed, 'delayed')[0] || s.events.of(byName.delayed, 'added')[0];
        assert.ok(delayed.ms - added.ms >= 250, 'the delayed job ran after its delay');
        const counts = await s.counts();
        assert.deepEqual({ completed: counts.completed, failed: counts.failed, waiting: counts.waiting, active: counts.active, delayed: counts.delayed }, { completed: 23, failed: 2, waiting: 0, active: 0, delayed: 0 });
        await assertQuiescent(s);
        await assertOneSlot(s);
      }),
    );

    it(
      'a Node worker and the subject share a queue: every job completed exactly once',
      { timeout: 30_000 },
      scenarioTest(getRedis, version, 'cluster-shared', async (s, t) => {
        const JOBS = 100;
        await s.startSubject({ concurrency: 2 });
        const node = await s.nodeWorker({ concurrency: 2 });
        const byNode = new Map();
        node.on('completed', (job) => byNode.set(job.id, (byNode.get(job.id) || 0) + 1));
        const jobs = await s.queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ name: `j${i}`, data: { script: ['sleep:15'] } })));
        await s.events.wait('completed', undefined, 25_000, JOBS);
        for (const j of jobs) assert.equal(s.events.count('completed', j.id), 1, `job ${j.id} completed once`);
        assert.equal(s.events.count('stalled'), 0);
        assert.ok(byNode.size > 0 && byNode.size < JOBS, `both took jobs (Node ${byNode.size} of ${JOBS})`);
        assert.deepEqual(s.workerErrors.map((e) => e.message), []);
        await assertQuiescent(s);
        t.diagnostic(`Node worker ${byNode.size}, subject ${JOBS - byNode.size}`);
      }),
    );

    it(
      'the subject SIGKILLed mid-job: a Node worker recovers it through the stalled sweep',
      { timeout: 30_000 },
      scenarioTest(getRedis, version, 'cluster-stall', async (s) => {
        const subject = await s.startSubject({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
        const job = await s.queue.add('long', { script: ['sleep:60000', 'complete'] });
        await s.events.wait('active', job.id, 10_000);
        await waitFor(() => s.redis.exists(s.key(`${job.id}:lock`)), 5000, 'the lock');
        subject.kill('SIGKILL');
        await subject.waitExit(5000);
        await s.nodeWorker({ lockDuration: LOCK_MS, stalledInterval: STALLED_MS });
        await s.events.wait('stalled', job.id, 15_000);
        const [done] = await s.events.wait('completed', job.id, 15_000);
        assert.deepEqual(done.data.returnvalue, { ok: true, attempt: 1 });
        const h = await s.hash(job.id);
        assert.deepEqual({ ats: h.ats, atm: h.atm, stc: h.stc }, { ats: '2', atm: '1', stc: '1' });
        await assertQuiescent(s);
      }),
    );
  });
}

describe('cluster differential subset', () => {
  for (const version of VERSIONS) {
    for (const name of DIFFERENTIAL) {
      const scenario = scenarios.find((sc) => sc.name === name);
      it(`${name} [bullmq v${version}]`, { timeout: (scenario.timeoutMs || 20_000) + 20_000 }, async (t) => {
        const result = await runScenario({ redisUrl: cluster.url, version, scenario });
        if (result.unexpected.length || result.known.length) t.diagnostic(result.report);
        assert.equal(result.unexpected.length, 0, `\n${result.report}`);
      });
    }
  }
});

/**
 * A steady stream of short jobs on one queue, the subject (concurrency 4) working it while
 * `fault()` hits the queue's slot; then: every job completed, each exactly once in the events
 * stream the slot's master now holds, nothing active, and a job added after the fault completes
 * too (the blocking fetch followed the slot).
 */
async function faultRun(s, t, fault) {
  const JOBS = 60;
  await s.startSubject({ concurrency: 4, lockDurationMs: 4000, stalledIntervalMs: 2000, maxStalledCount: 5 });
  const ids = [];
  const producing = (async () => {
    for (let i = 0; i < JOBS; i += 1) {
      const j = await s.queue.add(`f${i}`, { script: ['sleep:40'] });
      ids.push(j.id);
      await sleep(25);
    }
  })();
  await s.events.wait('completed', undefined, 15_000, 10);
  const slot = slotOf(s.key('wait'));
  const what = await fault(slot);
  t.diagnostic(`fault: ${JSON.stringify(what)}`);
  await producing;
  await waitFor(async () => (await s.queue.getCompletedCount()) >= JOBS, 40_000, `all ${JOBS} jobs completed`, 100);
  const after = await s.queue.add('after-fault', { script: ['complete'] });
  await s.waitState(after.id, 'completed', 15_000);
  const completed = await streamCounts(s, 'completed');
  t.diagnostic(`longest pause between two completions: ${completed.longestGapMs} ms (jobs took 40 ms, one added every 25 ms)`);
  for (const id of [...ids, after.id]) assert.equal(completed.get(id) || 0, 1, `job ${id}: ${completed.get(id) || 0} completed events`);
  const counts = await s.counts();
  assert.deepEqual({ failed: counts.failed, active: counts.active, waiting: counts.waiting }, { failed: 0, active: 0, waiting: 0 });
  await waitFor(async () => (await s.redis.llen(s.key('active'))) === 0, 5000, 'active empty');
  return what;
}

describe('cluster faults with jobs in flight [bullmq v6]', () => {
  it(
    'CLUSTER FAILOVER on the replica of the queue master',
    { timeout: 90_000 },
    scenarioTest(getRedis, '6', 'cluster-failover', async (s, t) => {
      const what = await faultRun(s, t, (slot) => cluster.failover(slot));
      assert.notEqual(what.from, what.to);
    }),
  );

  it(
    'SIGKILL of the queue master: its replica is promoted',
    { timeout: 90_000 },
    scenarioTest(getRedis, '6', 'cluster-kill-master', async (s, t) => {
      let killed;
      await faultRun(s, t, async (slot) => {
        killed = await cluster.killMaster(slot);
        return { killed: killed.killed, promoted: killed.promoted, ms: killed.ms };
      });
      // the next tests find three masters with a replica each again
      await killed.restart();
    }),
  );

  it(
    "a migration of the queue's slot to another master",
    { timeout: 90_000 },
    scenarioTest(getRedis, '6', 'cluster-migrate', async (s, t) => {
      const what = await faultRun(s, t, (slot) => cluster.migrateSlot(slot, { batch: 20, pauseMs: 10 }));
      assert.ok(what.keys > 0, 'keys moved');
      await assertOneSlot(s);
    }),
  );
});
