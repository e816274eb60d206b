// Flows made by FlowProducer (parent and children in the same queue): the parent waits for its
// children and moves on when they finish; failure policies of children.
'use strict';

const assert = require('node:assert/strict');

const ok = (name, extra = {}) => ({ name, data: { script: [`complete:${JSON.stringify({ from: name })}`] }, ...extra });

module.exports = [
  {
    name: 'flow-parent-two-children',
    covers: ['flow: parent with two children (waiting-children, parent released when both finish, :processed values)'],
    async produce(s) {
      await s.flow({ ...ok('parent'), children: [ok('child-a'), ok('child-b')] });
    },
    async check({ node }) {
      const parent = node.added[0];
      assert.equal(await node.state(parent), 'completed');
      assert.equal(Object.keys(await node.redis.hgetall(node.key(`${parent}:processed`))).length, 2, 'both children recorded in :processed');
    },
  },
  {
    name: 'flow-custom-ids',
    covers: ['flow with custom job ids and a grandchild'],
    async produce(s) {
      await s.flow({
        ...ok('top', { opts: { jobId: 'top' } }),
        children: [ok('mid', { opts: { jobId: 'mid' }, children: [ok('leaf', { opts: { jobId: 'leaf' } })] }), ok('side', { opts: { jobId: 'side' } })],
      });
    },
  },
  {
    name: 'flow-fail-parent-on-failure',
    covers: ['flow: failing child with failParentOnFailure (parent gets a deferred failure and fails)'],
    async produce(s) {
      await s.flow({
        ...ok('fp-parent'),
        children: [
          { name: 'fp-bad', data: { script: ['fail:child broke'] }, opts: { failParentOnFailure: true } },
          ok('fp-good'),
        ],
      });
    },
    async check({ node }) {
      const parent = await node.bullmq.Job.fromId(node.queue, node.added[0]);
      assert.equal(await parent.getState(), 'failed');
      assert.match(parent.failedReason, /^child bull:.*:.* failed$/);
    },
  },
  {
    name: 'flow-ignore-remove-dependency',
    covers: ['flow: ignoreDependencyOnFailure and removeDependencyOnFailure children'],
    async produce(s) {
      await s.flow({
        ...ok('ig-parent'),
        children: [{ name: 'ig-bad', data: { script: ['fail:ignored'] }, opts: { ignoreDependencyOnFailure: true } }, ok('ig-good')],
      });
      await s.flow({
        ...ok('rd-parent'),
        children: [{ name: 'rd-bad', data: { script: ['fail:removed'] }, opts: { removeDependencyOnFailure: true } }],
      });
    },
  },
  {
    name: 'flow-continue-parent-on-failure',
    covers: ['flow: continueParentOnFailure child fails while a sibling is still pending (parent runs early; completing it hits -4 pending dependencies)'],
    timeoutMs: 15_000,
    async produce(s) {
      await s.flow({
        ...ok('co-parent'),
        children: [{ name: 'co-bad', data: { script: ['fail:continue'] }, opts: { continueParentOnFailure: true } }, ok('co-slow', { data: { script: ['sleep:300'] } })],
      });
    },
  },
  {
    name: 'flow-child-retries',
    covers: ['flow: child that succeeds after a retry; parent delayed after release'],
    async produce(s) {
      await s.flow({
        ...ok('rp-parent', { opts: { delay: 300 } }),
        children: [{ name: 'rp-child', data: { script: ['fail:once', 'complete'] }, opts: { attempts: 2, backoff: 100 } }],
      });
    },
  },
];
