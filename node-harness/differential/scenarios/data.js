// Jobs Node cannot process: data that is not JSON, an unknown (custom) backoff strategy.
// ringback fails them once with a readable reason; Node loops or leaves them to stall recovery.
// These differences are intended and declared below with their reasons.
'use strict';

const assert = require('node:assert/strict');
const { waitFor } = require('../../lib/harness/wait');

module.exports = [
  {
    name: 'non-json-data',
    covers: ['job data that is not valid JSON (intended difference: ringback fails it, Node loops)'],
    worker: { lockDurationMs: 1000, stalledIntervalMs: 500 },
    tolerance: { ts: 1500 },
    order: 'perJob',
    async produce(s) {
      await s.add('good', { script: ['complete'] });
      const bad = await s.add('bad', { script: ['complete'] });
      // Queue.add always writes JSON; a producer in another language might not.
      await s.redis.hset(s.key(bad.id), 'data', '{not json');
    },
    // Node: JSON.parse throws before the processor runs, the job is left locked in active, a stall
    // sweep re-queues it, and it loops (stc grows; the deferred failure is never applied).
    // ringback: fails it at once as unrecoverable, naming the problem.
    async done(s) {
      const [good, bad] = s.added;
      if ((await s.state(good)) !== 'completed') return false;
      // Node's Job.fromId cannot read the job: look at the failed set directly.
      if (s.kind === 'ringback') return (await s.redis.zscore(s.key('failed'), bad)) !== null;
      const stc = Number(await s.redis.hget(s.key(bad), 'stc'));
      return stc >= 2;
    },
    timeoutMs: 20_000,
    expect: [
      // The bad job (id 2): everything about it differs by design.
      { key: '2', reason: 'non-JSON data: Node loops through stall recovery, ringback fails the job once with a clear reason' },
      { key: '2:lock', reason: 'non-JSON data: Node leaves the job locked in active between stall sweeps' },
      { key: 'events[2]', reason: 'non-JSON data: Node emits waiting/stalled/active cycles, ringback active then failed' },
      { key: 'QueueEvents[2]', reason: 'non-JSON data: as the events stream' },
      { key: 'api:getJobCounts', field: /^(active|failed|waiting)$/, reason: 'non-JSON data: Node has the job active or waiting, ringback failed' },
      { key: /^(active|wait|failed|stalled)$/, reason: 'non-JSON data: where the looping job happens to be on the Node side' },
      { key: 'events[(no job)]', reason: 'non-JSON data: ringback drains the queue after failing the job; Node never does' },
      { key: 'QueueEvents[(no job)]', reason: 'non-JSON data: as the events stream' },
    ],
    async check({ node, ringback }) {
      if (ringback.kind !== 'ringback') return; // the harness checking itself: Node on both sides
      const bad = ringback.added[1];
      const h = await ringback.redis.hgetall(ringback.key(bad));
      assert.match(h.failedReason, /not valid JSON/, `ringback names the problem: ${h.failedReason}`);
      assert.notEqual(await ringback.redis.zscore(ringback.key('failed'), bad), null, 'ringback failed it');
      assert.ok(Number((await node.redis.hgetall(node.key(node.added[1]))).stc) >= 2, 'Node loops on it');
      // Node's own API cannot read such a job on either side (Job.fromId throws on the data).
      assert.equal(await node.state(node.added[1]), 'unreadable');
      assert.equal(await ringback.state(bad), 'unreadable');
      await waitFor(async () => (await node.state(node.added[0])) === 'completed', 1000, 'the good job completed on Node');
    },
  },
  {
    name: 'custom-backoff-type',
    covers: ['unknown (custom) backoff strategy (intended difference: ringback fails the job with a clear reason; Node throws in its failure path and the job stalls until the stall limit fails it)'],
    worker: { lockDurationMs: 1000, stalledIntervalMs: 500, maxStalledCount: 0 },
    tolerance: { ts: 1500 },
    order: 'perJob',
    async produce(s) {
      await s.add('custom-backoff', { script: ['fail:needs custom backoff'] }, { attempts: 3, backoff: { type: 'my-strategy', delay: 100 } });
    },
    timeoutMs: 20_000,
    expect: [
      { key: '1', reason: 'custom backoff: Node cannot compute it and the job stalls ("job stalled more than allowable limit", atm 0); ringback fails it at once naming the strategy' },
      { key: 'events[1]', reason: 'custom backoff: Node goes through stall recovery; ringback fails directly' },
      { key: 'QueueEvents[1]', reason: 'custom backoff: as the events stream' },
      { key: 'api:job:1', reason: 'custom backoff: failedReason, attemptsMade and stalledCounter differ as above' },
      { key: 'failed', field: /\[0\]\[1\]/, reason: 'custom backoff: failure time (stall sweep vs at once)' },
      { key: 'events[(no job)]', field: /\.at$/, reason: 'custom backoff: on Node the queue drains only after the stall sweep' },
    ],
    async check({ node, ringback }) {
      if (ringback.kind !== 'ringback') return;
      const r = await ringback.redis.hgetall(ringback.key(ringback.added[0]));
      assert.match(r.failedReason, /my-strategy/, `ringback names the strategy: ${r.failedReason}`);
      const n = await node.redis.hgetall(node.key(node.added[0]));
      assert.equal(n.failedReason, 'job stalled more than allowable limit');
    },
  },
];
