// Job schedulers: the worker, not the producer, creates the next iteration when it activates a
// scheduler's job (bullmq-protocol.md section 5).
'use strict';

const assert = require('node:assert/strict');

module.exports = [
  {
    name: 'job-scheduler-every',
    covers: ['job scheduler (upsertJobScheduler with every): next iteration upserted at activation'],
    // Iteration slots are multiples of `every`: both queues get the same ones when they start
    // within one slot. Both sides compute the same instant, 500 ms into a slot, in one tick (the
    // runner starts both produce calls before either awaits), and add the scheduler then.
    async produce(s) {
      const now = Date.now();
      const target = now - (now % 2000) + 500 + (now % 2000 >= 500 ? 2000 : 0);
      await new Promise((resolve) => setTimeout(resolve, target - now));
      await s.queue.upsertJobScheduler('every-2s', { every: 2000 }, { name: 'tick', data: { script: ['complete'] }, opts: { removeOnComplete: false } });
    },
    // Done when the first iteration completed (by then a Node worker has created the next one)
    // and the idle worker's BZPOPMIN has taken the next iteration's delayed marker: whether it
    // had when the worker stopped is timing, so wait for the state both reach.
    async done(s) {
      const done = await s.queue.getJobs(['completed', 'failed']);
      return done.length >= 1 && (await s.redis.zscore(s.key('marker'), '1')) === null;
    },
    async check({ node }) {
      const delayed = await node.queue.getJobs(['delayed']);
      assert.equal(delayed.length, 1, 'Node created the next iteration at activation');
      assert.match(delayed[0].id, /^repeat:every-2s:\d+$/);
    },
  },
];
