// Worker metrics (RINGBACK_METRICS_DATA_POINTS / Worker `metrics.maxDataPoints`).
'use strict';

const assert = require('node:assert/strict');

module.exports = [
  {
    name: 'metrics',
    covers: ['metrics (metrics:completed / metrics:failed counts)'],
    worker: { metricsDataPoints: 60 },
    async produce(s) {
      for (let i = 1; i <= 3; i++) await s.add(`m-ok-${i}`, { script: ['complete'] });
      await s.add('m-bad', { script: ['fail:m'] });
      await s.add('m-retry', { script: ['fail:r', 'complete'] }, { attempts: 2 });
    },
    async check({ node }) {
      assert.equal(await node.redis.hget(node.key('metrics:completed'), 'count'), '4');
      assert.equal(await node.redis.hget(node.key('metrics:failed'), 'count'), '1');
    },
  },
];
