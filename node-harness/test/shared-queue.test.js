// A Node worker and the worker under test consume one queue together: every job runs once.
'use strict';

const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { startRedis } = require('../lib/harness/redis');
const { scenarioTest, VERSIONS } = require('../lib/harness/scenario');
const { assertQuiescent } = require('../lib/harness/checks');

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});

const JOBS = 200;

for (const version of VERSIONS) {
  describe(`shared queue [bullmq v${version}]`, () => {
    it(
      `${JOBS} jobs split between an in-process Node worker and the subject, each completed exactly once`,
      { timeout: 40_000 },
      scenarioTest(() => redis, version, 'shared', async (s, t) => {
        await s.startSubject({ concurrency: 2 });
        const node = await s.nodeWorker({ concurrency: 2 });
        const byNode = new Map();
        node.on('completed', (job) => byNode.set(job.id, (byNode.get(job.id) || 0) + 1));

        // Short sleeps keep both workers busy at once, so neither can drain the queue alone.
        const jobs = await s.queue.addBulk(Array.from({ length: JOBS }, (_, i) => ({ name: `j${i}`, data: { script: ['sleep:15'] } })));
        const ids = jobs.map((j) => j.id);
        await s.events.wait('completed', undefined, 30_000, JOBS);

        for (const id of ids) {
          const done = s.events.of(id, 'completed');
          assert.equal(done.length, 1, `job ${id}: ${done.length} completed events`);
          assert.deepEqual(done[0].data.returnvalue, { ok: true, attempt: 1 }, `job ${id} returnvalue`);
          assert.equal(s.events.count('active', id), 1, `job ${id} activated once`);
        }
        assert.equal(s.events.count('failed'), 0, 'no failures');
        assert.equal(s.events.count('stalled'), 0, 'no stalls');

        const pipeline = s.redis.pipeline();
        for (const id of ids) pipeline.hmget(s.key(id), 'ats', 'atm', 'stc', 'returnvalue');
        const rows = await pipeline.exec();
        rows.forEach(([err, [ats, atm, stc, returnvalue]], i) => {
          assert.equal(err, null);
          assert.deepEqual({ ats, atm, stc, returnvalue }, { ats: '1', atm: '1', stc: null, returnvalue: '{"ok":true,"attempt":1}' }, `job ${ids[i]} hash`);
        });
        assert.equal(await s.redis.zcard(s.key('completed')), JOBS);

        const nodeCount = byNode.size;
        assert.ok([...byNode.values()].every((n) => n === 1), 'the Node worker completed no job twice');
        const subjectCount = JOBS - nodeCount;
        assert.ok(nodeCount > 0, 'the Node worker took some jobs');
        assert.ok(subjectCount > 0, `the subject took some jobs (Node took all ${nodeCount})`);
        assert.deepEqual(s.workerErrors.map((e) => e.message), [], 'the Node worker saw no lock errors');
        const counts = await s.counts();
        assert.deepEqual({ ...counts, completed: 0 }, { ...Object.fromEntries(Object.keys(counts).map((k) => [k, 0])) }, `counts ${JSON.stringify(counts)}`);
        await assertQuiescent(s);
        t.diagnostic(`jobs done by the Node worker: ${nodeCount}, by the subject: ${subjectCount}`);
      }),
    );
  });
}
