#!/usr/bin/env node
// A Node BullMQ Worker running the scripted processor; configured only by env,
// with the same variable names as the Rust worker binary.
'use strict';

const path = require('node:path');
const { load, defaultVersion, packageVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
const { makeProcessor } = require(path.join(__dirname, '..', 'lib', 'scripted-processor.js'));

function log(...parts) {
  process.stderr.write(`[node-worker ${process.pid}] ${parts.join(' ')}\n`);
}

function intEnv(name, fallback) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    log(`invalid ${name}=${JSON.stringify(raw)}: expected a non-negative integer`);
    process.exit(2);
  }
  return n;
}

const config = {
  redisUrl: process.env.REDIS_URL || 'redis://127.0.0.1:6379',
  queue: process.env.RINGBACK_QUEUE || 'notify',
  prefix: process.env.RINGBACK_PREFIX || 'bull',
  concurrency: intEnv('RINGBACK_CONCURRENCY', 1),
  lockDuration: intEnv('RINGBACK_LOCK_DURATION_MS', 30000),
  stalledInterval: intEnv('RINGBACK_STALLED_INTERVAL_MS', 30000),
  maxStalledCount: intEnv('RINGBACK_MAX_STALLED_COUNT', 1),
  shutdownGraceMs: intEnv('RINGBACK_SHUTDOWN_GRACE_MS', 30000),
  bullmqVersion: defaultVersion(),
};

const bullmq = load(config.bullmqVersion);

const worker = new bullmq.Worker(config.queue, makeProcessor(bullmq), {
  connection: connectionFromUrl(config.redisUrl),
  prefix: config.prefix,
  concurrency: Math.max(1, config.concurrency),
  lockDuration: config.lockDuration,
  stalledInterval: config.stalledInterval,
  maxStalledCount: config.maxStalledCount,
});

worker.on('error', (err) => log('error:', err && err.message));
worker.on('failed', (job, err) => log(`job ${job && job.id} failed: ${err && err.message}`));
worker.on('completed', (job) => log(`job ${job.id} completed`));
worker.on('stalled', (jobId) => log(`job ${jobId} stalled`));

let closing = false;
async function shutdown(signal) {
  if (closing) return;
  closing = true;
  log(`${signal}: closing (grace ${config.shutdownGraceMs} ms)`);
  const timer = setTimeout(() => {
    log('grace period over; exiting with jobs still active');
    process.exit(1);
  }, config.shutdownGraceMs);
  timer.unref();
  try {
    await worker.close();
    log('closed');
    process.exit(0);
  } catch (err) {
    log('close failed:', err && err.message);
    process.exit(1);
  }
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

worker
  .waitUntilReady()
  .then(() => {
    log(
      `worker started: bullmq ${packageVersion(config.bullmqVersion)} queue=${config.queue} prefix=${config.prefix}`,
      `concurrency=${config.concurrency} lockDuration=${config.lockDuration}`,
      `stalledInterval=${config.stalledInterval} maxStalledCount=${config.maxStalledCount}`,
    );
  })
  .catch((err) => {
    log('failed to start:', err && err.stack);
    process.exit(1);
  });
