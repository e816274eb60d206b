// The rest of a Node Worker's surface a processor uses: progress and log rows.
'use strict';

const assert = require('node:assert/strict');

module.exports = [
  {
    name: 'logs-and-progress',
    covers: [
      'job.updateProgress from the processor (`progress` field and event)',
      'job.log from the processor (`<id>:logs` list), trimmed to `keepLogs`',
    ],
    async produce(s) {
      await s.add('p', { script: ['progress:{"pct":50,"step":"half"}'] });
      await s.add('l', { script: ['logs:3'] });
      await s.add('k', { script: ['logs:4'] }, { keepLogs: 2 });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        const [p, l, k] = side.added;
        const job = await side.bullmq.Job.fromId(side.queue, p);
        assert.deepEqual(job.progress, { pct: 50, step: 'half' }, `[${side.label}] progress`);
        assert.deepEqual((await side.queue.getJobLogs(l)).logs, ['row 1', 'row 2', 'row 3'], `[${side.label}] logs`);
        assert.deepEqual((await side.queue.getJobLogs(k)).logs, ['row 3', 'row 4'], `[${side.label}] keepLogs 2`);
      }
    },
  },
];

module.exports.push({
  name: 'rate-limit-error',
  covers: ['processor rate limit (Worker.rateLimit + RateLimitError): the job back to wait without using an attempt, nothing fetched while the limit holds'],
  async produce(s) {
    await s.add('limited', { script: ['ratelimit:700', 'complete'] });
    await s.add('next', { script: ['complete'] });
  },
  async check({ node, ringback }) {
    for (const side of [node, ringback]) {
      const [a, b] = await Promise.all(side.added.map((id) => side.bullmq.Job.fromId(side.queue, id)));
      assert.equal(a.attemptsMade, 1, `[${side.label}] one attempt used (the completing one)`);
      assert.equal(a.attemptsStarted, 2, `[${side.label}] activated twice`);
      assert.ok(b.processedOn - a.timestamp >= 650, `[${side.label}] nothing started while the limit held`);
    }
  },
});

module.exports.push({
  name: 'move-to-waiting-children',
  covers: ['processor adds children (Queue.add with opts.parent) and waits for them (moveToWaitingChildren + WaitingChildrenError); the parent runs again when they are done'],
  async produce(s) {
    await s.add('parent', { script: ['children:2', 'complete'] });
  },
  async check({ node, ringback }) {
    for (const side of [node, ringback]) {
      const parent = await side.bullmq.Job.fromId(side.queue, side.added[0]);
      assert.equal(await parent.getState(), 'completed', `[${side.label}] parent completed`);
      assert.equal(parent.attemptsStarted, 2, `[${side.label}] parent activated twice`);
      const values = await parent.getChildrenValues();
      assert.equal(Object.keys(values).length, 2, `[${side.label}] two children done`);
    }
  },
});

module.exports.push({
  name: 'max-started-attempts',
  covers: ['worker option maxStartedAttempts: a job activated more often fails ("job started more than allowable limit"); bullmq 6 also stops retrying a job started that many times'],
  worker: { maxStartedAttempts: 2 },
  async produce(s) {
    await s.add('retried', { script: ['fail:a', 'fail:b', 'fail:c', 'complete'] }, { attempts: 5 });
    await s.add('delayed', { script: ['delay:100', 'delay:100', 'complete'] });
  },
  async check({ node, ringback }) {
    for (const side of [node, ringback]) {
      const [r, d] = await Promise.all(side.added.map((id) => side.bullmq.Job.fromId(side.queue, id)));
      const want = side.version === '6' ? 'b' : 'job started more than allowable limit';
      assert.equal(r.failedReason, want, `[${side.label}] retried job`);
      assert.equal(d.failedReason, 'job started more than allowable limit', `[${side.label}] delayed job`);
    }
  },
});
