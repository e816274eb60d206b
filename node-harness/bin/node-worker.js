#!/usr/bin/env node
// A Node BullMQ Worker running the scripted processor; configured only by env,
// with the same variable names as the Rust worker binary.
// DIFF_TELEMETRY=1: the Worker gets `telemetry: new BullMQOtel(...)` (bullmq-otel), so it continues
// a job's `tm` trace context and writes `tm` on a retry, a backoff delay and a failure; ringback
// does the same when OTEL_EXPORTER_OTLP_ENDPOINT is set.
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

/** `true`, `false`, a count, or JSON `{"age":s,"count":n}` (as RINGBACK_REMOVE_ON_* for the Rust worker). */
function keepEnv(name) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  let v;
  try {
    v = JSON.parse(raw);
  } catch {
    v = undefined;
  }
  // A Worker only takes the KeepJobs object form (true or a number reach its Lua script as is and
  // break it), so the shorthands are resolved here the way a job option would be.
  if (typeof v === 'boolean') return { count: v ? 0 : -1 };
  if (typeof v === 'number' && Number.isInteger(v)) return { count: v };
  if (v && typeof v === 'object' && !Array.isArray(v)) return v;
  log(`invalid ${name}=${JSON.stringify(raw)}: expected true, false, a count or {"age":s,"count":n}`);
  process.exit(2);
}

/** `<max>/<duration_ms>` -> {max, duration}. */
function limiterEnv(name) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return undefined;
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(raw);
  if (!m || Number(m[1]) === 0 || Number(m[2]) === 0) {
    log(`invalid ${name}=${JSON.stringify(raw)}: expected <max>/<duration_ms>, both positive`);
    process.exit(2);
  }
  return { max: Number(m[1]), duration: Number(m[2]) };
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
  lockRenewTime: intEnv('RINGBACK_LOCK_RENEW_TIME_MS', undefined),
  drainDelayMs: intEnv('RINGBACK_DRAIN_DELAY_MS', undefined),
  name: process.env.RINGBACK_WORKER_NAME || undefined,
  limiter: limiterEnv('RINGBACK_LIMITER'),
  removeOnComplete: keepEnv('RINGBACK_REMOVE_ON_COMPLETE'),
  removeOnFail: keepEnv('RINGBACK_REMOVE_ON_FAIL'),
  metricsDataPoints: intEnv('RINGBACK_METRICS_DATA_POINTS', undefined),
  maxStartedAttempts: intEnv('RINGBACK_MAX_STARTED_ATTEMPTS', undefined),
  bullmqVersion: defaultVersion(),
};

// Options left undefined keep BullMQ's defaults, as the Rust worker keeps them.
const optional = {
  lockRenewTime: config.lockRenewTime,
  // BullMQ's drainDelay is in seconds.
  drainDelay: config.drainDelayMs === undefined ? undefined : Math.max(1, Math.ceil(config.drainDelayMs / 1000)),
  name: config.name,
  limiter: config.limiter,
  removeOnComplete: config.removeOnComplete,
  removeOnFail: config.removeOnFail,
  metrics: config.metricsDataPoints === undefined ? undefined : { maxDataPoints: config.metricsDataPoints },
  maxStartedAttempts: config.maxStartedAttempts,
  telemetry: process.env.DIFF_TELEMETRY === '1' ? require(path.join(__dirname, '..', 'lib', 'otel.js')).bullmqTelemetry('diff-worker') : undefined,
};
for (const k of Object.keys(optional)) if (optional[k] === undefined) delete optional[k];

const bullmq = load(config.bullmqVersion);

const worker = new bullmq.Worker(config.queue, makeProcessor(bullmq, { worker: () => worker }), {
  connection: connectionFromUrl(config.redisUrl),
  prefix: config.prefix,
  concurrency: Math.max(1, config.concurrency),
  lockDuration: config.lockDuration,
  stalledInterval: config.stalledInterval,
  maxStalledCount: config.maxStalledCount,
  ...optional,
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
      Object.keys(optional).length ? JSON.stringify({ ...optional, telemetry: optional.telemetry && 'bullmq-otel' }) : '',
    );
  })
  .catch((err) => {
    log('failed to start:', err && err.stack);
    process.exit(1);
  });
