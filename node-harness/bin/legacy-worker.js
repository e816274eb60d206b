#!/usr/bin/env node
// The legacy Node worker ringback replaces, as it ran in production: a BullMQ Worker on the
// callback queue that claims `agent-callback:<runId>` with SET NX EX 600, calls Twilio's
// messages.create, then writes `sent` with SET XX EX 86400. Its flaws are kept on purpose
// (`if (!claimed) return;` drops a retry that comes inside the claim's TTL); drills run it
// beside ringback to prove the cutover.
//
// Env: REDIS_URL, RINGBACK_QUEUE, RINGBACK_PREFIX, RINGBACK_CONCURRENCY,
// RINGBACK_LOCK_DURATION_MS, RINGBACK_STALLED_INTERVAL_MS, RINGBACK_CLAIM_PREFIX, BULLMQ_VERSION,
// TWILIO_ACCOUNT_SID, TWILIO_AUTH_TOKEN, TWILIO_FROM, TWILIO_API_BASE (the simulator),
// RINGBACK_STATUS_CALLBACK_URL, LEGACY_PENDING_TTL_S (600), and for drills
// LEGACY_CRASH_AT=<after-claim|after-provider-accept|before-complete>[:<probability>].
'use strict';

const path = require('node:path');
const twilio = require('twilio');
const { load, defaultVersion, connectionFromUrl, redisClient } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
const { CLAIM_PREFIX } = require(path.join(__dirname, '..', 'lib', 'legacy.js'));

const env = process.env;
const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
const pendingTtl = Number(env.LEGACY_PENDING_TTL_S || 600);

function crashHook() {
  const spec = env.LEGACY_CRASH_AT;
  if (!spec) return () => {};
  const [point, p] = spec.split(':');
  const probability = p === undefined ? 1 : Number(p);
  process.stderr.write(`legacy worker: LEGACY_CRASH_AT=${spec} (drill)\n`);
  return (here) => {
    if (here === point && Math.random() < probability) {
      process.stderr.write(`legacy worker: crashing at ${here}\n`);
      process.kill(process.pid, 'SIGKILL');
    }
  };
}

async function main() {
  const { Worker } = load(defaultVersion());
  const redis = redisClient(redisUrl, { maxRetriesPerRequest: null });
  const client = twilio(env.TWILIO_ACCOUNT_SID, env.TWILIO_AUTH_TOKEN);
  if (env.TWILIO_API_BASE) client.api.baseUrl = env.TWILIO_API_BASE;
  const crash = crashHook();

  const worker = new Worker(
    env.RINGBACK_QUEUE || 'notify',
    async (job) => {
      const { runId, to, body, from } = job.data;
      const key = `${CLAIM_PREFIX}${runId}`;
      const claimed = await redis.set(key, 'pending', 'NX', 'EX', pendingTtl);
      if (!claimed) return; // the legacy flaw: the callback is dropped
      crash('after-claim');
      let msg;
      try {
        msg = await client.messages.create({
          to,
          from: from || env.TWILIO_FROM,
          body,
          ...(env.RINGBACK_STATUS_CALLBACK_URL ? { statusCallback: `${env.RINGBACK_STATUS_CALLBACK_URL}?runId=${encodeURIComponent(runId)}` } : {}),
        });
      } catch (err) {
        // The legacy flaw: the 600 s claim stays, so this job's own retry finds it and drops the
        // callback. Said on stderr, so drills can tell this loss from one of ringback's.
        process.stderr.write(`legacy worker: provider call failed for run ${runId}: ${err.message}\n`);
        throw err;
      }
      crash('after-provider-accept');
      await redis.set(key, 'sent', 'XX', 'EX', 86400);
      crash('before-complete');
      return { sid: msg.sid };
    },
    {
      connection: connectionFromUrl(redisUrl),
      prefix: env.RINGBACK_PREFIX || 'bull',
      concurrency: Number(env.RINGBACK_CONCURRENCY || 1),
      lockDuration: Number(env.RINGBACK_LOCK_DURATION_MS || 30000),
      maxStalledCount: Number(env.RINGBACK_MAX_STALLED_COUNT || 1),
      stalledInterval: Number(env.RINGBACK_STALLED_INTERVAL_MS || 30000),
    },
  );
  worker.on('error', (err) => process.stderr.write(`legacy worker error: ${err.message}\n`));
  await worker.waitUntilReady();
  process.stderr.write('legacy worker started\n');
  const stop = async () => {
    await worker.close();
    await redis.quit();
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
