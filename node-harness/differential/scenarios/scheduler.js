// Job schedulers: the worker, not the producer, creates the next iteration when it activates a
// scheduler's job, as a Node worker does at activation.
'use strict';

const assert = require('node:assert/strict');

/** Waits until 500 ms into a 2 s slot: both sides then add their schedule within one slot. */
async function slotStart() {
  const now = Date.now();
  const target = now - (now % 2000) + 500 + (now % 2000 >= 500 ? 2000 : 0);
  await new Promise((resolve) => setTimeout(resolve, target - now));
}

/** Ids of the delayed iterations, and their run times (the id's millis). */
async function delayedIds(side) {
  return (await side.queue.getJobs(['delayed'])).map((j) => j.id).sort();
}

/** Both sides created the same next iteration, at a run time the pattern allows. */
async function sameNextIteration({ node, ringback }, id, periodMs) {
  const [n, r] = [await delayedIds(node), await delayedIds(ringback)];
  assert.equal(n.length, 1, 'Node created the next iteration at activation');
  assert.match(n[0], new RegExp(`^repeat:${id}:\\d+$`));
  assert.equal(Number(n[0].split(':').at(-1)) % periodMs, 0, 'on the pattern');
  assert.deepEqual(r, n, 'ringback created the same iteration (same id, so same run time)');
}

module.exports = [
  {
    name: 'job-scheduler-every',
    covers: ['job scheduler (upsertJobScheduler with every): next iteration upserted at activation'],
    // Iteration slots are multiples of `every`: both queues get the same ones when they start
    // within one slot. Both sides compute the same instant, 500 ms into a slot, in one tick (the
    // runner starts both produce calls before either awaits), and add the scheduler then.
    async produce(s) {
      await slotStart();
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
  {
    name: 'job-scheduler-cron',
    covers: ['job scheduler with a cron pattern (seconds field): next iteration computed and upserted at activation, same id, delay, keys and events as Node'],
    async produce(s) {
      await slotStart();
      await s.queue.upsertJobScheduler('cron-2s', { pattern: '*/2 * * * * *' }, { name: 'tick', data: { script: ['complete'] }, opts: { removeOnComplete: false } });
    },
    async done(s) {
      const done = await s.queue.getJobs(['completed', 'failed']);
      return done.length >= 1 && (await s.redis.zscore(s.key('marker'), '1')) === null;
    },
    // A Node process's first cron computation loads luxon and the zone data (about 50 ms, and
    // over 130 ms on a loaded 2-core machine), so its next iteration's delay (run time - now) is
    // that much shorter than ringback's; the next iteration's own time is compared exactly
    // (`sameNextIteration`).
    tolerance: { dur: 200 },
    check: (sides) => sameNextIteration(sides, 'cron-2s', 2000),
  },
  {
    name: 'job-scheduler-cron-options',
    covers: ['cron scheduler options: tz, immediately, limit (the last iteration creates no next one), endDate'],
    tolerance: { dur: 200 }, // as job-scheduler-cron
    async produce(s) {
      await slotStart();
      await s.queue.upsertJobScheduler(
        'cron-tz',
        { pattern: '*/2 * * * * *', tz: 'Asia/Kolkata', immediately: true, limit: 2, endDate: Date.now() - (Date.now() % 2000) + 60_000 },
        { name: 'tick', data: { script: ['complete'] }, opts: { removeOnComplete: false } },
      );
    },
    async done(s) {
      return (await s.queue.getJobs(['completed', 'failed'])).length >= 2 && (await s.idle());
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        const done = await side.queue.getJobs(['completed']);
        assert.equal(done.length, 2, `[${side.label}] two iterations (limit 2), then none`);
      }
    },
  },
  {
    name: 'repeat-cron-legacy',
    versions: ['5'],
    covers: ['v5 repeatable job (Queue.add with repeat.pattern): next iteration created at activation as Node does'],
    tolerance: { dur: 200 }, // as job-scheduler-cron
    async produce(s) {
      await slotStart();
      await s.add('tick', { script: ['complete'] }, { repeat: { pattern: '*/2 * * * * *' }, removeOnComplete: false });
    },
    async done(s) {
      const done = await s.queue.getJobs(['completed', 'failed']);
      return done.length >= 1 && (await s.redis.zscore(s.key('marker'), '1')) === null;
    },
    async check({ node, ringback }) {
      const [n, r] = [await delayedIds(node), await delayedIds(ringback)];
      assert.equal(n.length, 1, 'Node created the next iteration at activation');
      assert.equal(r.length, 1, 'ringback created the next iteration at activation');
      // the id's hash names the queue, so only the run times compare
      assert.equal(r[0].split(':').at(-1), n[0].split(':').at(-1), 'same run time');
    },
  },
  {
    name: 'repeat-every-legacy',
    versions: ['5'],
    covers: ['v5 repeatable job with `every` (Queue.add with repeat.every): next iteration created at activation as Node does'],
    async produce(s) {
      await slotStart();
      await s.add('tick', { script: ['complete'] }, { repeat: { every: 2000 }, removeOnComplete: false });
    },
    async done(s) {
      const done = await s.queue.getJobs(['completed', 'failed']);
      return done.length >= 1 && (await s.redis.zscore(s.key('marker'), '1')) === null;
    },
    async check({ node, ringback }) {
      const [n, r] = [await delayedIds(node), await delayedIds(ringback)];
      assert.equal(n.length, 1, 'Node created the next iteration at activation');
      assert.equal(r.length, 1, 'ringback created the next iteration at activation');
      assert.equal(r[0].split(':').at(-1), n[0].split(':').at(-1), 'same run time');
    },
  },
  {
    name: 'repeat-cron-legacy-dates',
    versions: ['5'],
    covers: ['v5 repeatable job with a cron pattern and startDate/endDate given as Dates (stored as ISO text, read as ms)'],
    tolerance: { dur: 200 }, // as job-scheduler-cron
    async produce(s) {
      await slotStart();
      const slot = Date.now() - (Date.now() % 2000);
      const repeat = { pattern: '*/2 * * * * *', startDate: new Date(slot + 3000), endDate: new Date(slot + 60_000) };
      await s.add('tick', { script: ['complete'] }, { repeat, removeOnComplete: false });
    },
    async done(s) {
      const done = await s.queue.getJobs(['completed', 'failed']);
      return done.length >= 1 && (await s.redis.zscore(s.key('marker'), '1')) === null;
    },
    async check({ node, ringback }) {
      const [n, r] = [await delayedIds(node), await delayedIds(ringback)];
      assert.equal(n.length, 1, 'Node created the next iteration at activation');
      assert.equal(r.length, 1, 'ringback created the next iteration at activation');
      assert.equal(r[0].split(':').at(-1), n[0].split(':').at(-1), 'same run time');
    },
  },
];
