// Queue.getWorkers() / getWorkersCount() (what Bull Board's connected-workers view and Taskforce
// read) count a running ringback worker as they count a Node Worker: its blocking connection is
// named `<prefix>:<base64 queue>:w:<RINGBACK_WORKER_NAME>`, as a Node Worker with that name
// names its own; no other ringback connection (serve, the worker's command connection) matches;
// on one Redis and on a Redis Cluster.
'use strict';

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');
const { Lab } = require('../lib/drill/lab');
const { waitFor } = require('../lib/harness/wait');

async function countsLikeNode(cluster) {
  const lab = await new Lab({ name: 'get-workers', cluster }).start();
  try {
    const QUEUE = 'get-workers';
    const q = lab.queue(QUEUE);
    const serve = await lab.ringbackServe(QUEUE);
    assert.ok(serve.base);
    // the legacy worker: a plain Node BullMQ Worker, unnamed
    const legacy = lab.legacyWorker('legacy', QUEUE);
    await legacy.waitStarted();
    await waitFor(async () => (await q.getWorkersCount()) === 1 || null, 15_000, 'the Node worker to be listed');
    const rb = lab.ringbackWorker('ringback', QUEUE, { RINGBACK_WORKER_NAME: 'rb-1' });
    await rb.waitStarted();
    await waitFor(async () => (await q.getWorkersCount()) === 2 || null, 15_000, 'the ringback worker to be listed');
    const names = (await q.getWorkers()).map((w) => w.rawname).sort();
    const base = `${lab.prefix}:${Buffer.from(QUEUE).toString('base64')}`;
    assert.deepEqual(names, [base, `${base}:w:rb-1`].sort(), 'named as Node names its workers');
    rb.kill('SIGTERM');
    await rb.waitExit(20_000);
    await waitFor(async () => (await q.getWorkersCount()) === 1 || null, 15_000, 'the stopped worker to leave the list');
  } finally {
    await lab.stop();
  }
}

describe('Queue.getWorkers() lists ringback workers as Node workers', () => {
  it('on one Redis', { timeout: 60_000 }, () => countsLikeNode(false));
  it('on a Redis Cluster (the node with the most matches)', { timeout: 120_000 }, () => countsLikeNode(true));
});
