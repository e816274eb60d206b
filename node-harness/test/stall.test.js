// Stall recovery across implementations: a dead worker's job is re-queued by the other side's
// stalled checker and completes; the stall limit becomes a deferred failure.
'use strict';

const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { startRedis } = require('../lib/harness/redis');
const { scenarioTest, VERSIONS } = require('../lib/harness/scenario');
const { waitFor } = require('../lib/harness/wait');
const { assertQuiescent } = require('../lib/harness/checks');

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});
const getRedis = () => redis;

const T = { timeout: 30_000 };
const LOCK_MS = 1000;
const STALLED_MS = 500;

/** Waits for the job's first `active` event and for its lock key to exist. */
async function waitActiveWithLock(s, id) {
  await s.events.wait('active', id, 10_000);
  await waitFor(() => s.redis.exists(s.key(`${id}:lock`)), 5000, `lock of job ${id}`);
}

/** The job was re-queued once by a stall sweep, then completed by a second activation. */
async function assertRecovered(s, id, killedAt) {
  const [stalled] = await s.events.wait('stalled', id, 15_000);
  const [done] = await s.events.wait('completed', id, 15_000);
  assert.deepEqual(done.data.returnvalue, { ok: true, attempt: 1 }, 'a stall uses no attempt');
  const seq = s.events.sequence(id);
  assert.deepEqual(seq.slice(seq.indexOf('active')), ['active', 'waiting', 'stalled', 'active', 'completed'], `events ${seq.join(' → ')}`);
  const requeued = s.events.of(id, 'waiting').at(-1);
  assert.equal(requeued.data.prev, 'active', 'the sweep announces waiting prev=active');
  // Not before the dead worker's lock could have expired.
  assert.ok(stalled.ms >= killedAt, 'stalled only after the kill');
  const h = await s.hash(id);
  assert.deepEqual({ ats: h.ats, atm: h.atm, stc: h.stc, defa: h.defa }, { ats: '2', atm: '1', stc: '1', defa: undefined });
  assert.equal(await (await s.getJob(id)).getState(), 'completed');
  assert.equal(s.events.count('failed', id), 0);
  await assertQuiescent(s);
}

for (const version of VERSIONS) {
  describe(`stall recovery [bullmq v${version}]`, () => {
    it(
      'subject SIGKILLed mid-job: an in-process Node worker recovers the job',
      T,
      scenarioTest(getRedis, version, 'stall-subject-killed', async (s) => {
        const subject = await s.startSubject({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
        const job = await s.queue.add('long', { script: ['sleep:60000', 'complete'] });
        await waitActiveWithLock(s, job.id);
        const lock = await s.redis.get(s.key(`${job.id}:lock`));
        assert.ok(lock, 'lock holds a token');
        const pttl = await s.redis.pttl(s.key(`${job.id}:lock`));
        assert.ok(pttl > 0 && pttl <= LOCK_MS, `lock TTL ${pttl} ms must follow RINGBACK_LOCK_DURATION_MS=${LOCK_MS}`);
        subject.kill('SIGKILL');
        const killedAt = Date.now();
        await subject.waitExit(5000);
        await s.nodeWorker({ lockDuration: LOCK_MS, stalledInterval: STALLED_MS });
        await assertRecovered(s, job.id, killedAt);
      }),
    );

    it(
      'subject crashes itself (crash action): an in-process Node worker recovers the job',
      T,
      scenarioTest(getRedis, version, 'stall-subject-crash', async (s) => {
        const subject = await s.startSubject({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
        const job = await s.queue.add('crashy', { script: ['crash', 'complete'] });
        const exit = await subject.waitExit(10_000);
        const crashedAt = Date.now();
        assert.ok(exit.signal !== null || exit.code !== 0, `crash must end the process abnormally: ${JSON.stringify(exit)}`);
        assert.equal(s.events.count('active', job.id), 1, 'the job was taken before the crash');
        await s.nodeWorker({ lockDuration: LOCK_MS, stalledInterval: STALLED_MS });
        await assertRecovered(s, job.id, crashedAt - LOCK_MS);
      }),
    );

    it(
      'Node worker SIGKILLed mid-job: the subject recovers the job',
      T,
      scenarioTest(getRedis, version, 'stall-node-killed', async (s) => {
        const node = await s.startNodeChild({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
        const job = await s.queue.add('long', { script: ['sleep:60000', 'complete'] });
        await waitActiveWithLock(s, job.id);
        node.kill('SIGKILL');
        const killedAt = Date.now();
        await node.waitExit(5000);
        await s.startSubject({ lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS });
        await assertRecovered(s, job.id, killedAt);
      }),
    );

    it(
      'RINGBACK_MAX_STALLED_COUNT=0: the next subject fails a stalled job without running it',
      T,
      scenarioTest(getRedis, version, 'max-stalled', async (s) => {
        const settings = { lockDurationMs: LOCK_MS, stalledIntervalMs: STALLED_MS, maxStalledCount: 0 };
        const first = await s.startSubject(settings, 'subject#1 (crashes)');
        // Running it again would crash the second subject too: the test then fails on its exit.
        const job = await s.queue.add('crash-always', { script: ['crash'] });
        await first.waitExit(10_000);
        const second = await s.startSubject(settings, 'subject#2');
        const [failed] = await s.events.wait('failed', job.id, 15_000);
        assert.equal(failed.data.failedReason, 'job stalled more than allowable limit');
        assert.ok(second.running, `the second subject must not have run the job: ${JSON.stringify(second.exitInfo)}`);
        const seq = s.events.sequence(job.id);
        assert.deepEqual(seq.slice(seq.indexOf('active')), ['active', 'waiting', 'stalled', 'active', 'failed', 'retries-exhausted'], `events ${seq.join(' → ')}`);
        const h = await s.hash(job.id);
        assert.deepEqual(
          { ats: h.ats, atm: h.atm, stc: h.stc, defa: h.defa, failedReason: h.failedReason },
          { ats: '2', atm: '1', stc: '1', defa: undefined, failedReason: 'job stalled more than allowable limit' },
        );
        const j = await s.getJob(job.id);
        assert.equal(await j.getState(), 'failed');
        assert.equal(j.attemptsMade, 1);
        assert.ok(Array.isArray(j.stacktrace), 'stacktrace is an array');
        assert.equal(s.events.of(job.id, 'retries-exhausted')[0].data.attemptsMade, '1');
        assert.equal(s.events.count('completed'), 0);
        await assertQuiescent(s);
      }),
    );
  });
}
