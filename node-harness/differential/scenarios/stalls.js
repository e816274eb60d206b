// Stalled jobs: the worker process dies mid-job (the `crash` action SIGKILLs / aborts it), a new
// worker of the same implementation is started, and its stall sweep recovers the job, or fails it
// once maxStalledCount is exceeded (deferred failure `defa`, failed by the next fetch).
'use strict';

const assert = require('node:assert/strict');
const { waitFor } = require('../../lib/harness/wait');

/** The Node reference left the job as a Node stall sweep leaves it (guards the harness itself). */
async function assertHash(side, id, want) {
  const h = await side.redis.hgetall(side.key(id));
  const got = Object.fromEntries(Object.keys(want).map((k) => [k, h[k]]));
  assert.deepEqual(got, want, `[${side.label}] job ${id}`);
}

/** Waits for the current worker process to die from the crash action, then starts another. */
async function replaceCrashedWorker(s) {
  await s.worker.waitExit(10_000);
  await s.startWorker();
}

const LOCK_MS = 1000;
const SWEEP_MS = 500;

/**
 * Each recovery on each side came when BullMQ's stall rules allow it: not before the dead
 * worker's lock expired (it was written at activation, when the `crash` action ran), and within a
 * sweep period after that plus the time a replacement worker takes to start.
 */
function assertStallTiming(side) {
  const entries = side.events.entries;
  entries.forEach((stalled, i) => {
    if (stalled.event !== 'stalled') return;
    // the activation the dead worker made: the job's last `active` before this entry, in stream order
    const activation = entries.slice(0, i).findLast((e) => e.event === 'active' && e.jobId === stalled.jobId);
    const delay = stalled.ms - activation.ms;
    assert.ok(delay >= LOCK_MS - 50 && delay <= LOCK_MS + SWEEP_MS + 1500, `[${side.label}] job ${stalled.jobId} re-queued ${delay} ms after its activation (lock ${LOCK_MS}, sweep ${SWEEP_MS})`);
  });
}

/**
 * When a stall is noticed depends on lock expiry, the sweep phase (up to stalledInterval) and how
 * fast the replacement worker starts (a Node process takes ~300 ms longer), once per stall: times
 * are compared loosely, and each side's recovery times are checked against the rules instead.
 */
const STALL = {
  worker: { lockDurationMs: LOCK_MS, stalledIntervalMs: SWEEP_MS },
  tolerance: { ts: 1500 },
  timeoutMs: 20_000,
};

module.exports = [
  {
    name: 'stall-recovered',
    covers: ['stalled job recovered (maxStalledCount 1): stc, waiting prev=active + stalled events, no attempt used'],
    ...STALL,
    async produce(s) {
      await s.add('crash-once', { script: ['crash', 'complete'] });
      await s.add('after', { script: ['complete'] });
    },
    async during(s) {
      await replaceCrashedWorker(s);
    },
    async check({ node, ringback }) {
      [node, ringback].forEach(assertStallTiming);
      await assertHash(node, node.added[0], { ats: '2', atm: '1', stc: '1', defa: undefined, returnvalue: '{"ok":true,"attempt":1}' });
    },
  },
  {
    name: 'stall-max-0',
    covers: ['stalled job with maxStalledCount 0: deferred failure "job stalled more than allowable limit"'],
    ...STALL,
    worker: { ...STALL.worker, maxStalledCount: 0 },
    async produce(s) {
      await s.add('crash-fails', { script: ['crash', 'complete'] }, { attempts: 3 });
    },
    async during(s) {
      await replaceCrashedWorker(s);
    },
    async check({ node, ringback }) {
      [node, ringback].forEach(assertStallTiming);
      await assertHash(node, node.added[0], { ats: '2', atm: '1', stc: '1', defa: undefined, failedReason: 'job stalled more than allowable limit' });
    },
  },
  {
    name: 'stall-max-1-deferred',
    covers: ['stalled job with maxStalledCount 1 stalling twice: deferred failure on the next fetch'],
    ...STALL,
    worker: { ...STALL.worker, maxStalledCount: 1 },
    // Two stalls in a row: their timing spreads add up.
    tolerance: { ts: 2500 },
    timeoutMs: 25_000,
    async produce(s) {
      await s.add('crash-twice', { script: ['crash', 'crash', 'complete'] });
    },
    async during(s) {
      await replaceCrashedWorker(s);
      // The recovered job crashes the second worker too; the third fails it on fetch.
      await waitFor(() => s.events.count('stalled') >= 1, 15_000, `[${s.label}] first stall`);
      await replaceCrashedWorker(s);
    },
    async check({ node, ringback }) {
      [node, ringback].forEach(assertStallTiming);
      await assertHash(node, node.added[0], { ats: '3', atm: '1', stc: '2', failedReason: 'job stalled more than allowable limit' });
    },
  },
  {
    name: 'stall-while-paused',
    covers: ['stalled job re-queued while the queue is paused (v5: into the paused list)'],
    ...STALL,
    async produce(s) {
      await s.add('crash-then-pause', { script: ['crash', 'complete'] });
      await s.add('waiting', { script: ['complete'] });
    },
    async during(s) {
      await s.worker.waitExit(10_000);
      await s.queue.pause();
      await s.startWorker();
      // The sweep puts the job back where ready jobs of a paused queue live.
      await waitFor(() => s.events.count('stalled') >= 1, 15_000, `[${s.label}] stall recovery while paused`);
      await s.waitState(s.added[0], ['waiting', 'paused'], 5000);
      await s.queue.resume();
    },
    async check({ node, ringback }) {
      [node, ringback].forEach(assertStallTiming);
    },
  },
  {
    name: 'lock-renewal',
    covers: ['lock renewal: a job running longer than lockDuration is not stalled'],
    worker: { lockDurationMs: 600, stalledIntervalMs: 300 },
    async produce(s) {
      await s.add('long', { script: ['sleep:1800'] });
      await s.add('next', { script: ['complete'] });
    },
  },
];
