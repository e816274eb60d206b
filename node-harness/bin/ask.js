#!/usr/bin/env node
// Ask a person a question by text and wait for their answer: the example to copy.
//
// A question is an ordinary callback job (the legacy API's job name and options) whose data
// also says `expectReply: true` and `replyWithin` ("30s", "90m", "24h", "2d"). ringback texts
// it. When the person answers, `ringback serve` (Twilio's inbound webhook) adds ONE job named
// `agent-reply` to the replies queue `<queue>-replies` (RINGBACK_REPLIES_QUEUE if set), its id
// the message's MessageSid (Twilio's retries never add a second one), its data:
//
//   { runId,       // the run whose question it answers; null when it answers none
//     text,        // what the person wrote, without the reply code ("K7 yes" -> "yes")
//     from, to,    // their number, and ours
//     receivedAt, messageSid, media: [{ url, contentType }],
//     matched,     // "answer" | "ambiguous" | "unmatched" | "opt_out"
//     code, ambiguous, optOutType }
//
// As a module:
//
//   const { ask } = require('./ask');
//   const answer = await ask({
//     connection: { host: '127.0.0.1', port: 6379 },   // what BullMQ takes
//     queue: 'notify',
//     runId: 'run-42',
//     to: '+15558675310',
//     body: 'Deploy web-3 to production?',
//     replyWithin: '1h',
//   });
//   answer.text; // "yes, ship it"
//
// From the command line (REDIS_URL, RINGBACK_QUEUE, RINGBACK_PREFIX, as the workers read them):
//
//   node bin/ask.js --to +15558675310 --body 'Deploy web-3 to production?' \
//     [--run-id run-42] [--within 1h] [--timeout-ms 60000] [--queue notify]
//
// prints the answer (the reply job's data) as one JSON line and exits 0; exits 1 when no
// answer came in time.
'use strict';

const path = require('node:path');
const { parseArgs } = require('node:util');
const { randomUUID } = require('node:crypto');
const { JOB_NAME, JOB_OPTIONS } = require(path.join(__dirname, '..', 'lib', 'legacy.js'));

/** How long a reply to another run waits before any worker may take it again. */
const HAND_BACK_MS = 1000;

/** "90m" -> 5_400_000: replyWithin as ringback reads it (a whole number and s, m, h or d). */
function durationMs(within) {
  const m = /^(\d+)\s*([smhd])$/.exec(String(within).trim());
  if (!m || Number(m[1]) === 0) throw new Error(`replyWithin must be like "30s", "90m", "24h" or "2d", got ${JSON.stringify(within)}`);
  return Number(m[1]) * { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[m[2]];
}

/**
 * Adds the question: a callback job as the legacy API adds one, its runId as the job id, so
 * asking again (a producer restarted) is the same job, never a second text.
 */
async function addQuestion(queue, { runId, to, body, from, replyWithin = '24h' }) {
  durationMs(replyWithin);
  const data = { runId, to, body, expectReply: true, replyWithin };
  if (from) data.from = from;
  return queue.add(JOB_NAME, data, { ...JOB_OPTIONS, jobId: runId });
}

/**
 * A Worker on the replies queue that resolves with the first reply to `runId` (the job's
 * data). The job completes once the answer was handed over: a process that dies before that
 * leaves the job to be taken again.
 *
 * Replies to other runs, and messages that answered no question (runId null), are not ours:
 * this asker waits for one run, so it hands each back untouched (moved to delayed for a second,
 * no attempt used) for whoever owns it. A real app runs ONE replies worker for all its runs and
 * routes each job by `runId` (to the waiting agent, a database row, ...), and sends the
 * `runId: null` ones ("unmatched", "opt_out", "ambiguous": ringback has already asked the person
 * which question they meant) to a human's inbox.
 */
function waitForReply({ bullmq, connection, prefix = 'bull', repliesQueue, runId, timeoutMs, signal }) {
  const { Worker, DelayedError } = bullmq;
  let answered;
  const answer = new Promise((resolve) => {
    answered = resolve;
  });
  const worker = new Worker(
    repliesQueue,
    async (job, token) => {
      if (job.data.runId === runId) {
        answered(job.data);
        return { answered: runId };
      }
      await job.moveToDelayed(Date.now() + HAND_BACK_MS, token);
      throw new DelayedError();
    },
    { connection, prefix },
  );
  worker.on('error', (err) => process.stderr.write(`replies worker: ${err.message}\n`));
  let gaveUp = false;
  let stop;
  const giveUp = new Promise((_, reject) => {
    stop = (err) => {
      gaveUp = true;
      reject(err);
    };
  });
  const timer = setTimeout(() => stop(new Error(`no answer to ${runId} within ${timeoutMs} ms`)), timeoutMs);
  const onAbort = () => stop(signal.reason);
  if (signal?.aborted) onAbort();
  signal?.addEventListener('abort', onAbort, { once: true });
  const reply = Promise.race([answer, giveUp]).finally(async () => {
    clearTimeout(timer);
    signal?.removeEventListener('abort', onAbort);
    // answered: wait for the answer's job to complete; gave up: close at once (nothing of
    // ours is running, and Redis may be the reason nothing came)
    await worker.close(gaveUp);
  });
  return {
    ready: worker.waitUntilReady(),
    reply,
    /** Stops waiting: `reply` rejects with `err` once the worker closed. */
    cancel: (err) => {
      stop(err);
      return reply.catch(() => {});
    },
  };
}

/**
 * Texts `body` to `to` as run `runId` and resolves with the answer (the reply job's data);
 * rejects when none came within `timeoutMs` (default: `replyWithin`), or when `signal` (an
 * AbortSignal) aborts. `bullmq`: the BullMQ module to use (default require('bullmq')).
 */
async function ask({
  connection,
  queue = 'notify',
  prefix = 'bull',
  repliesQueue = `${queue}-replies`,
  runId = randomUUID(),
  to,
  body,
  from,
  replyWithin = '24h',
  timeoutMs = durationMs(replyWithin),
  signal,
  bullmq = require('bullmq'),
}) {
  // listen first: the answer may come before this process would otherwise be ready for it
  const waiting = waitForReply({ bullmq, connection, prefix, repliesQueue, runId, timeoutMs, signal });
  const callbacks = new bullmq.Queue(queue, { connection, prefix });
  try {
    await waiting.ready;
    await addQuestion(callbacks, { runId, to, body, from, replyWithin });
  } catch (err) {
    await waiting.cancel(err);
    throw err;
  } finally {
    await callbacks.close();
  }
  return waiting.reply;
}

module.exports = { ask, addQuestion, waitForReply, durationMs };

if (require.main === module) {
  const env = process.env;
  const { values } = parseArgs({
    options: {
      to: { type: 'string' },
      body: { type: 'string' },
      from: { type: 'string' },
      'run-id': { type: 'string' },
      within: { type: 'string', default: '24h' },
      'timeout-ms': { type: 'string' },
      queue: { type: 'string', default: env.RINGBACK_QUEUE || 'notify' },
    },
  });
  // The harness's helpers: REDIS_URL as BullMQ connection options, and the BullMQ major of
  // BULLMQ_VERSION (the harness pins 5 and 6); an app passes its own.
  const harness = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
  const main = async () => {
    if (!values.to || !values.body) throw new Error('usage: ask.js --to <E.164 number> --body <question> [--run-id id] [--within 1h] [--timeout-ms n] [--queue notify]');
    const answer = await ask({
      connection: harness.connectionFromUrl(env.REDIS_URL || 'redis://127.0.0.1:6379'),
      queue: values.queue,
      prefix: env.RINGBACK_PREFIX || 'bull',
      repliesQueue: env.RINGBACK_REPLIES_QUEUE || `${values.queue}-replies`,
      runId: values['run-id'],
      to: values.to,
      body: values.body,
      from: values.from,
      replyWithin: values.within,
      timeoutMs: values['timeout-ms'] ? Number(values['timeout-ms']) : undefined,
      bullmq: harness.load(),
    });
    process.stdout.write(`${JSON.stringify(answer)}\n`);
  };
  main().then(
    () => process.exit(0),
    (err) => {
      process.stderr.write(`ask: ${err.message}\n`);
      process.exit(1);
    },
  );
}
