// Queue-level controls: pause/resume mid-run (v5 `paused` list, v6 meta.paused), global rate
// limit, the worker's own limiter, global concurrency.
'use strict';

const assert = require('node:assert/strict');

/** Largest number of jobs active at once, from the QueueEvents of one side. */
function maxActiveAtOnce(side) {
  let active = 0;
  let max = 0;
  for (const e of side.events.entries) {
    if (e.event === 'active') max = Math.max(max, ++active);
    if (e.event === 'completed' || e.event === 'failed') active--;
  }
  return max;
}

/** Starts of jobs per `windowMs` bucket since the first start. */
function startsPerWindow(side, windowMs) {
  const starts = side.events.of(undefined, 'active').map((e) => e.ms);
  const t0 = starts[0];
  const buckets = {};
  for (const t of starts) buckets[Math.floor((t - t0) / windowMs)] = (buckets[Math.floor((t - t0) / windowMs)] || 0) + 1;
  return Object.values(buckets);
}

module.exports = [
  {
    name: 'paused-resumed',
    covers: ['a paused queue resumed later (v5 paused list, v6 meta.paused)', 'delayed job promoted into a paused queue'],
    async produce(s) {
      // 1 fails and is delayed 300 ms; 2 runs 700 ms, during which the queue is paused; when 2
      // finishes, 1 (due) is promoted into the paused queue; 3 waits. Resume runs 1 and 3.
      await s.add('retry-while-paused', { script: ['fail:first', 'complete'] }, { attempts: 2, backoff: 300 });
      await s.add('long', { script: ['sleep:700'] });
      await s.add('waits', { script: ['complete'] });
    },
    async during(s) {
      const [retry, long, waits] = s.added;
      await s.waitState(long, 'active');
      await s.queue.pause();
      await s.waitState(long, 'completed', 5000);
      // Promoted while paused: v5 keeps it in the `paused` list, v6 in `wait` with meta.paused.
      await s.waitState(retry, ['waiting', 'paused'], 5000);
      assert.ok(['waiting', 'paused'].includes(await s.state(waits)));
      const c = await s.queue.getJobCounts('active', 'completed');
      assert.deepEqual(c, { active: 0, completed: 1 }, `[${s.label}] nothing runs while paused`);
      await s.queue.resume();
    },
  },
  {
    name: 'global-rate-limit',
    covers: ['global rate limit (Queue.setGlobalRateLimit, meta max/duration)'],
    tolerance: { ts: 250 },
    async before(s) {
      await s.queue.setGlobalRateLimit(2, 600);
    },
    async produce(s) {
      for (let i = 1; i <= 5; i++) await s.add(`rl-${i}`, { script: ['complete'] });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        for (const n of startsPerWindow(side, 600)) assert.ok(n <= 2, `[${side.label}] at most 2 starts per 600 ms window: ${startsPerWindow(side, 600)}`);
      }
    },
    timeoutMs: 15_000,
  },
  {
    name: 'worker-rate-limit',
    covers: ['worker rate limiter (RINGBACK_LIMITER / Worker limiter)'],
    worker: { limiter: '2/600' },
    tolerance: { ts: 250 },
    async produce(s) {
      for (let i = 1; i <= 5; i++) await s.add(`wl-${i}`, { script: ['complete'] });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        for (const n of startsPerWindow(side, 600)) assert.ok(n <= 2, `[${side.label}] at most 2 starts per 600 ms window: ${startsPerWindow(side, 600)}`);
      }
    },
    timeoutMs: 15_000,
  },
  {
    name: 'rate-limit-precedence',
    covers: ["rate limit precedence: meta max wins over the worker's max, the worker's duration over meta duration"],
    worker: { limiter: '1/400' },
    tolerance: { ts: 250 },
    async before(s) {
      await s.queue.setGlobalRateLimit(3, 5000);
    },
    async produce(s) {
      for (let i = 1; i <= 7; i++) await s.add(`rp-${i}`, { script: ['complete'] });
    },
    async check({ node, ringback }) {
      // max 3 (meta) per 400 ms (worker): 7 jobs in three windows, well under 5 s.
      for (const side of [node, ringback]) {
        const starts = side.events.of(undefined, 'active').map((e) => e.ms);
        assert.ok(starts.at(-1) - starts[0] < 2500, `[${side.label}] the worker's 400 ms window applies: ${starts.map((t) => t - starts[0])}`);
        for (const n of startsPerWindow(side, 400)) assert.ok(n <= 3, `[${side.label}] at most 3 per window: ${startsPerWindow(side, 400)}`);
      }
    },
    timeoutMs: 15_000,
  },
  {
    name: 'manual-rate-limit',
    covers: ['manual rate limit (Queue.rateLimit) honoured by a worker with a limiter'],
    worker: { limiter: '50/1000' },
    tolerance: { ts: 250 },
    async before(s) {
      s.rateLimitedAt = Date.now();
      await s.queue.rateLimit(700);
    },
    async produce(s) {
      for (let i = 1; i <= 3; i++) await s.add(`mr-${i}`, { script: ['complete'] });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        const [first] = side.events.of(undefined, 'active');
        const after = first.ms - side.rateLimitedAt;
        assert.ok(after >= 650, `[${side.label}] nothing starts while the manual limit holds (first start ${after} ms after Queue.rateLimit(700))`);
      }
    },
  },
  {
    name: 'manual-rate-limit-no-max',
    covers: ['manual rate limit ignored by a worker without a limiter (as Node)'],
    async before(s) {
      await s.queue.rateLimit(5000);
    },
    async produce(s) {
      for (let i = 1; i <= 3; i++) await s.add(`mn-${i}`, { script: ['complete'] });
    },
  },
  {
    name: 'events-trimmed',
    covers: ['events stream trimmed to the queue\'s maxLenEvents (MAXLEN ~)'],
    // Where an approximate trim cuts depends on entry sizes (ids encode times): tails compared.
    eventsTail: true,
    async before(s) {
      await s.redis.hset(s.key('meta'), 'opts.maxLenEvents', 30);
    },
    async produce(s) {
      await s.queue.addBulk(Array.from({ length: 120 }, (_, i) => ({ name: `bulk-${i}`, data: { script: ['complete'] } })));
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        const len = await side.redis.xlen(side.key('events'));
        assert.ok(len < 200, `[${side.label}] the stream was trimmed (${len} of ~480 entries left)`);
      }
    },
  },
  {
    name: 'global-concurrency',
    covers: ['global concurrency (Queue.setGlobalConcurrency, meta concurrency) below the worker concurrency'],
    worker: { concurrency: 4 },
    order: 'perJob',
    ignoreDrained: true,
    tolerance: { ts: 250 },
    async before(s) {
      await s.queue.setGlobalConcurrency(2);
    },
    async produce(s) {
      for (let i = 1; i <= 6; i++) await s.add(`gc-${i}`, { script: ['sleep:150'] });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) assert.equal(maxActiveAtOnce(side), 2, `[${side.label}] exactly 2 jobs at once`);
    },
  },
  {
    name: 'worker-concurrency',
    covers: ['worker concurrency > 1'],
    worker: { concurrency: 3 },
    order: 'perJob',
    ignoreDrained: true,
    tolerance: { ts: 250 },
    async produce(s) {
      for (let i = 1; i <= 6; i++) await s.add(`wc-${i}`, { script: ['sleep:150'] });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) assert.equal(maxActiveAtOnce(side), 3, `[${side.label}] 3 jobs at once`);
    },
  },
];
