#!/usr/bin/env node
// Waits until a queue's completed + failed counts reach --expect (as Node's Queue sees them),
// prints Queue.getJobCounts() as JSON, exits 1 on timeout.
'use strict';

const path = require('node:path');
const { parseArgs } = require('node:util');
const { load, defaultVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));

async function main() {
  const { values } = parseArgs({
    options: {
      queue: { type: 'string', default: process.env.RINGBACK_QUEUE || 'notify' },
      prefix: { type: 'string', default: process.env.RINGBACK_PREFIX || 'bull' },
      url: { type: 'string', default: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
      expect: { type: 'string' },
      'timeout-ms': { type: 'string', default: '60000' },
    },
  });
  const { Queue } = load(defaultVersion());
  const queue = new Queue(values.queue, { connection: connectionFromUrl(values.url), prefix: values.prefix });
  const expect = Number(values.expect);
  const deadline = Date.now() + Number(values['timeout-ms']);
  let counts;
  for (;;) {
    counts = await queue.getJobCounts();
    if (counts.completed + counts.failed >= expect) break;
    if (Date.now() > deadline) {
      console.error(`timed out: ${JSON.stringify(counts)}, expected ${expect} finished`);
      await queue.close();
      process.exit(1);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  console.log(JSON.stringify(counts));
  await queue.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
