// Plain, delayed, prioritized, lifo and custom-id jobs; big and unicode data; worker name; the
// connected workers Node's Queue lists.
'use strict';

const assert = require('node:assert/strict');

const UNICODE = 'é ü ß — “quotes” 日本語 中文 한국어 עברית العربية 🙂👍🏽 e\u0301 \u2028\u2029 \\ / \t';

module.exports = [
  {
    name: 'plain',
    covers: ['plain jobs', 'return values: none ("null"), object, custom JSON', 'worker name (pb)'],
    async produce(s) {
      await s.add('no-script', {});
      await s.add('complete', { script: ['complete'] });
      await s.add('json', { script: ['complete:{"x":1,"nested":{"a":[1,"two",null]},"s":"é","n":-0.5}'] });
      await s.add('scalar', { script: ['complete:"just a string"'] });
      await s.add('sleepy', { script: ['sleep:50'] });
    },
  },
  {
    name: 'return-value-encoding',
    covers: ['return values are stored as Node writes them (JSON.stringify): numbers, empty containers, strings with escapes'],
    async produce(s) {
      const values = ['null', '0', 'false', '[]', '{}', '""', '"line\\nbreak \\u00e9 \\ud83d\\ude00"', '-5', '0.5', '1e-7', '123456789012'];
      for (const v of values) await s.add(`rv ${v}`, { script: [`complete:${v}`] });
    },
  },
  {
    name: 'return-value-floats',
    covers: ['return values with integral floats and exponents (1.0, 1e3, -0, 2^64)'],
    // Node readers parse both forms to the same number; the stored text differs.
    async produce(s) {
      for (const v of ['1.0', '1e3', '-0', '12345678901234567890', '{"n":2.50}']) await s.add(`rf ${v}`, { script: [`complete:${v}`] });
    },
  },
  {
    name: 'empty-error-messages',
    covers: ['failures with an empty message (Error and UnrecoverableError)', 'multi-line failure messages'],
    async produce(s) {
      await s.add('empty-fail', { script: ['fail:'] });
      await s.add('empty-unrecoverable', { script: ['unrecoverable:'] }, { attempts: 2 });
      await s.add('multiline', { script: ['fail:first line\nsecond line'] });
    },
  },
  {
    name: 'no-worker-name',
    covers: ['worker without a name: no pb field'],
    worker: { workerName: undefined },
    async produce(s) {
      await s.add('a', { script: ['complete'] });
    },
  },
  {
    name: 'connected-workers',
    covers: [
      'Queue.getWorkers() and getWorkersCount() while the workers run (what Bull Board and Taskforce show): one entry per worker process, its connection named `<prefix>:<base64 queue>:w:<name>`, or `<prefix>:<base64 queue>` without a name',
    ],
    async produce(s) {
      await s.add('a', { script: ['complete'] });
    },
    async during(s) {
      // a second, unnamed worker once the job is done, so which worker ran it is not timing
      await s.waitState(s.added[0], 'completed');
      await s.startWorker({ workerName: undefined });
    },
    async check({ node, ringback }) {
      // what run.js recorded while both workers ran (the diff compares the sides; this also
      // holds the Node reference to what BullMQ documents)
      for (const side of [node, ringback]) {
        const seen = side.workersSeen;
        assert.equal(seen.getWorkersCount, 2, `[${side.label}] two workers counted: ${JSON.stringify(seen)}`);
        const names = seen.getWorkers.map((w) => w.rawname);
        assert.deepEqual(names, [`${side.prefix}:<base64 Q>`, `${side.prefix}:<base64 Q>:w:diff-worker`], `[${side.label}] connection names`);
      }
    },
  },
  {
    name: 'delayed',
    covers: ['delayed jobs (promotion order, delay field reset, waiting prev=delayed)'],
    async produce(s) {
      await s.add('later', { script: ['complete'] }, { delay: 700 });
      await s.add('soon', { script: ['complete'] }, { delay: 350 });
      await s.add('now', { script: ['complete'] });
      // One timestamp for both, so they are due at the same millisecond: added a few ms apart
      // (a cluster's round trips), the second one's promotion raced the first one's run, and
      // the two subjects' event orders differed by timing alone.
      const at = Date.now();
      await s.add('same-time-a', { script: ['complete'] }, { delay: 500, timestamp: at });
      await s.add('same-time-b', { script: ['complete'] }, { delay: 500, timestamp: at });
    },
  },
  {
    name: 'prioritized',
    covers: ['prioritized jobs, several priorities; plain before prioritized; FIFO within a priority; pc counter'],
    async produce(s) {
      const specs = [['p0-a', 0], ['prio-3', 3], ['prio-1', 1], ['p0-b', 0], ['prio-2', 2], ['prio-1-b', 1], ['prio-big', 2097151], ['p0-c', 0]];
      for (const [name, priority] of specs) await s.add(name, { script: ['complete'] }, priority ? { priority } : {});
    },
  },
  {
    name: 'prioritized-retries',
    covers: ['prioritized jobs retried: immediate retry re-enters prioritized with a new counter; backoff retry promoted into prioritized'],
    async produce(s) {
      await s.add('p2-retry-now', { script: ['fail:p', 'complete'] }, { priority: 2, attempts: 2 });
      await s.add('p2-peer', { script: ['complete'] }, { priority: 2 });
      await s.add('p1-backoff', { script: ['fail:b', 'complete'] }, { priority: 1, attempts: 2, backoff: 200 });
      await s.add('p3-last', { script: ['complete'] }, { priority: 3 });
      await s.add('p1-delayed', { script: ['complete'] }, { priority: 1, delay: 300 });
    },
  },
  {
    name: 'lifo',
    covers: ['lifo jobs (RPUSH), mixed with FIFO'],
    async produce(s) {
      await s.add('fifo-1', { script: ['complete'] });
      await s.add('lifo-1', { script: ['complete'] }, { lifo: true });
      await s.add('fifo-2', { script: ['complete'] });
      await s.add('lifo-2', { script: ['complete'] }, { lifo: true });
    },
  },
  {
    name: 'custom-job-id',
    covers: ['custom jobId (with colons), duplicate jobId ignored by the producer ("duplicated" event)'],
    async produce(s) {
      await s.add('custom', { script: ['complete'] }, { jobId: 'order-42' });
      await s.add('colon', { script: ['complete:{"id":"colon"}'] }, { jobId: 'user:7:welcome' });
      await s.add('dup', { script: ['complete'] }, { jobId: 'order-42' });
      await s.add('auto', { script: ['complete'] });
    },
  },
  {
    name: 'big-and-unicode-data',
    covers: ['job data of 1 MB', 'unicode data and return values'],
    async produce(s) {
      await s.add('big', { script: ['complete'], blob: 'x'.repeat(1024 * 1024) });
      await s.add('unicode', { script: [`complete:${JSON.stringify({ echo: UNICODE })}`], text: UNICODE });
      await s.add(`name ${UNICODE}`, { script: ['fail:' + UNICODE] });
    },
  },
];
