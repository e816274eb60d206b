// Deduplication: simple (slot released when the job finishes), with a TTL (slot kept until it
// expires), and keepLastIfActive (the last duplicate added while the job runs is stored in
// `dn:<id>` and becomes a new job when the first finishes).
'use strict';

const assert = require('node:assert/strict');

module.exports = [
  {
    name: 'dedup-simple',
    covers: ['deduplication (simple): de:<id> released on finish, deduplicated events'],
    async produce(s) {
      await s.add('d-first', { script: ['complete'] }, { deduplication: { id: 'd1' } });
      await s.add('d-dup', { script: ['complete'] }, { deduplication: { id: 'd1' } });
      await s.add('d-fail', { script: ['fail:dedup fail'] }, { deduplication: { id: 'd2' } });
      await s.add('d-dup2', { script: ['complete'] }, { deduplication: { id: 'd2' } });
    },
    async during(s) {
      // Once the first job finished its slot is free: the same id makes a new job.
      await s.waitState(s.added[0], 'completed');
      await s.waitState(s.added[2], 'failed');
      await s.add('d-again', { script: ['complete'] }, { deduplication: { id: 'd1' } });
    },
  },
  {
    name: 'dedup-ttl',
    covers: ['deduplication with TTL: de:<id> kept (with its TTL) after the job finishes'],
    async produce(s) {
      await s.add('t-first', { script: ['complete'] }, { deduplication: { id: 't1', ttl: 10_000 } });
      await s.add('t-dup', { script: ['complete'] }, { deduplication: { id: 't1', ttl: 10_000 } });
    },
    async during(s) {
      await s.waitState(s.added[0], 'completed');
      await s.add('t-after', { script: ['complete'] }, { deduplication: { id: 't1', ttl: 10_000 } });
    },
    async check({ node }) {
      assert.ok((await node.redis.pttl(node.key('de:t1'))) > 0, 'the TTL slot outlives the job');
    },
  },
  {
    name: 'dedup-keep-last-if-active',
    covers: ['deduplication keepLastIfActive (dn:<id> turned into a new job when the active one finishes)'],
    async produce(s) {
      await s.add('k-first', { script: ['sleep:500'] }, { deduplication: { id: 'k1', keepLastIfActive: true } });
    },
    async during(s) {
      await s.waitState(s.added[0], 'active');
      await s.add('k-second', { script: ['complete:"second"'] }, { deduplication: { id: 'k1', keepLastIfActive: true } });
      await s.add('k-third', { script: ['complete:"third"'] }, { deduplication: { id: 'k1', keepLastIfActive: true } });
      await s.waitState(s.added[0], 'completed');
    },
  },
];
