// Job schedulers: the worker, not the producer, creates the next iteration when it activates a
// scheduler's job (bullmq-protocol.md section 5).
'use strict';

const assert = require('node:assert/strict');

module.exports = [
  {
    name: 'job-scheduler-every',
    covers: ['job scheduler (upsertJobScheduler with every): next iteration upserted at activation'],
    // Iteration slots are multiples of `every`: both queues get the same ones when they start
    // within one slot, which a 2 s period makes likely; ids are compared by ordinal anyway.
    async produce(s) {
      await s.queue.upsertJobScheduler('every-2s', { every: 2000 }, { name: 'tick', data: { script: ['complete'] }, opts: { removeOnComplete: false } });
    },
    // Done when the first iteration completed: by then a Node worker has created the next one.
    async done(s) {
      const done = await s.queue.getJobs(['completed', 'failed']);
      return done.length >= 1;
    },
    async check({ node }) {
      const delayed = await node.queue.getJobs(['delayed']);
      assert.equal(delayed.length, 1, 'Node created the next iteration at activation');
      assert.match(delayed[0].id, /^repeat:every-2s:\d+$/);
    },
  },
];
