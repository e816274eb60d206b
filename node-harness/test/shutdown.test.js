// SIGTERM: the subject finishes what it is running, takes nothing new, and exits 0.
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

for (const version of VERSIONS) {
  describe(`graceful shutdown [bullmq v${version}]`, () => {
    for (const signal of ['SIGTERM', 'SIGINT']) {
      it(
        `${signal} while a job runs: the job completes, no new job is taken, exit 0`,
        T,
        scenarioTest(getRedis, version, `shutdown-${signal}`, async (s) => {
          const GRACE = 5000;
          const subject = await s.startSubject({ concurrency: 1, shutdownGraceMs: GRACE, lockDurationMs: 2000 });
          const running = await s.queue.add('running', { script: ['sleep:1500'] });
          await s.events.wait('active', running.id, 10_000);
          // Queued behind the running job (concurrency 1): must still be waiting after the exit.
          const queued = await s.queue.add('queued', { script: ['complete'] });
          const signalledAt = Date.now();
          subject.kill(signal);
          const exit = await subject.waitExit(GRACE + 2000);
          const exitedAt = Date.now();

          assert.deepEqual({ code: exit.code, signal: exit.signal }, { code: 0, signal: null }, `exit after ${signal}`);
          const [done] = await s.events.wait('completed', running.id, 2000);
          assert.deepEqual(done.data.returnvalue, { ok: true, attempt: 1 });
          const h = await s.hash(running.id);
          assert.ok(Number(h.finishedOn) >= signalledAt, 'the job finished after the signal (it was not abandoned)');
          assert.ok(Number(h.finishedOn) <= exitedAt, 'the process exited after finishing the job');
          assert.ok(Number(h.finishedOn) - Number(h.processedOn) >= 1500, 'the job ran to its end');
          assert.equal(await (await s.getJob(running.id)).getState(), 'completed');

          assert.equal(await (await s.getJob(queued.id)).getState(), 'waiting', 'no job is taken after the signal');
          assert.equal((await s.hash(queued.id)).ats, undefined, 'the queued job was never activated');
          assert.equal(s.events.count('active', queued.id), 0);
          await assertQuiescent(s);
        }),
      );
    }

    it(
      'SIGTERM with a job longer than the grace period: exits in time, the job is not lost',
      T,
      scenarioTest(getRedis, version, 'shutdown-grace', async (s) => {
        const GRACE = 500;
        const LOCK = 1000;
        const subject = await s.startSubject({ concurrency: 1, shutdownGraceMs: GRACE, lockDurationMs: LOCK, stalledIntervalMs: 500 });
        const job = await s.queue.add('too-long', { script: ['sleep:60000', 'complete'] });
        await s.events.wait('active', job.id, 10_000);
        subject.kill('SIGTERM');
        const exit = await subject.waitExit(GRACE + 2500);
        assert.ok(exit.ms <= GRACE + 2500, `exited ${exit.ms} ms after SIGTERM`);
        assert.equal(s.events.count('completed', job.id) + s.events.count('failed', job.id), 0, 'the unfinished job is neither completed nor failed');
        // Whatever the subject left (active with a lock to expire, or back in wait), a Node
        // worker must end up completing it exactly once.
        await s.nodeWorker({ lockDuration: LOCK, stalledInterval: 500 });
        const [done] = await s.events.wait('completed', job.id, 15_000);
        assert.deepEqual(done.data.returnvalue, { ok: true, attempt: 1 }, 'abandoning the job used no attempt');
        await waitFor(async () => (await (await s.getJob(job.id)).getState()) === 'completed', 2000, 'completed state');
        assert.equal(s.events.count('completed', job.id), 1);
        assert.equal(s.events.count('failed', job.id), 0);
        await assertQuiescent(s);
      }),
    );
  });
}
