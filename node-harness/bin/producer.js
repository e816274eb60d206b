#!/usr/bin/env node
// Adds N jobs with the given data and options to a BullMQ queue (for drills and benchmarks).
'use strict';

const path = require('node:path');
const { parseArgs } = require('node:util');
const { load, defaultVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));

const USAGE = `usage: producer.js [options]
  -q, --queue NAME     queue name            (default: env RINGBACK_QUEUE or "notify")
  -n, --count N        number of jobs        (default: 1)
  -d, --data JSON      job data              (default: {})
  -o, --opts JSON      job options, e.g. '{"attempts":3,"backoff":100}'
      --name NAME      job name              (default: "job")
      --bulk N         jobs per addBulk call (default: 1000)
      --prefix P       key prefix            (default: env RINGBACK_PREFIX or "bull")
      --url URL        Redis URL             (default: env REDIS_URL or redis://127.0.0.1:6379)
      --version 5|6    BullMQ major          (default: env BULLMQ_VERSION or 6)
Prints one JSON line {"queue","added","ms","firstId","lastId"} to stdout.`;

function fail(msg) {
  process.stderr.write(`${msg}\n${USAGE}\n`);
  process.exit(2);
}

function json(text, what) {
  try {
    return JSON.parse(text);
  } catch (err) {
    return fail(`--${what} is not JSON: ${err.message}`);
  }
}

async function main() {
  let values;
  try {
    ({ values } = parseArgs({
      options: {
        queue: { type: 'string', short: 'q' },
        count: { type: 'string', short: 'n', default: '1' },
        data: { type: 'string', short: 'd', default: '{}' },
        opts: { type: 'string', short: 'o', default: '{}' },
        name: { type: 'string', default: 'job' },
        bulk: { type: 'string', default: '1000' },
        prefix: { type: 'string' },
        url: { type: 'string' },
        version: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    fail(err.message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const count = Number(values.count);
  const bulk = Number(values.bulk);
  if (!Number.isInteger(count) || count < 0) fail('--count must be a non-negative integer');
  if (!Number.isInteger(bulk) || bulk < 1) fail('--bulk must be a positive integer');
  const data = json(values.data, 'data');
  const opts = json(values.opts, 'opts');
  const queueName = values.queue || process.env.RINGBACK_QUEUE || 'notify';

  const bullmq = load(values.version || defaultVersion());
  const queue = new bullmq.Queue(queueName, {
    connection: connectionFromUrl(values.url || process.env.REDIS_URL),
    prefix: values.prefix || process.env.RINGBACK_PREFIX || 'bull',
  });
  const started = Date.now();
  let firstId;
  let lastId;
  try {
    for (let done = 0; done < count; ) {
      const n = Math.min(bulk, count - done);
      const jobs = await queue.addBulk(Array.from({ length: n }, () => ({ name: values.name, data, opts })));
      firstId ??= jobs[0] && jobs[0].id;
      lastId = jobs[jobs.length - 1] && jobs[jobs.length - 1].id;
      done += n;
    }
  } finally {
    await queue.close();
  }
  process.stdout.write(
    `${JSON.stringify({ queue: queueName, added: count, ms: Date.now() - started, firstId, lastId })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`producer: ${err && err.stack}\n`);
  process.exit(1);
});
