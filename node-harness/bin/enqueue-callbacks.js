#!/usr/bin/env node
// Enqueues N agent-callback jobs as the legacy API does (same name and options; jobId left to
// BullMQ, so a repeated run enqueues a second job, as a retrying agent would).
//   enqueue-callbacks.js -n 100 [--prefix-run run] [--queue notify] [--url redis://...]
'use strict';

const path = require('node:path');
const { parseArgs } = require('node:util');
const { load, defaultVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
const { JOB_NAME, JOB_OPTIONS, callbackData } = require(path.join(__dirname, '..', 'lib', 'legacy.js'));

async function main() {
  const { values } = parseArgs({
    options: {
      count: { type: 'string', short: 'n', default: '1' },
      'prefix-run': { type: 'string', default: 'run' },
      queue: { type: 'string', default: process.env.RINGBACK_QUEUE || 'notify' },
      prefix: { type: 'string', default: process.env.RINGBACK_PREFIX || 'bull' },
      url: { type: 'string', default: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
    },
  });
  const { Queue } = load(defaultVersion());
  const queue = new Queue(values.queue, { connection: connectionFromUrl(values.url), prefix: values.prefix });
  const n = Number(values.count);
  const jobs = [];
  for (let i = 0; i < n; i++) {
    jobs.push({ name: JOB_NAME, data: callbackData(i, values['prefix-run']), opts: { ...JOB_OPTIONS } });
  }
  for (let i = 0; i < jobs.length; i += 1000) await queue.addBulk(jobs.slice(i, i + 1000));
  console.log(JSON.stringify({ queue: values.queue, added: n }));
  await queue.close();
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
