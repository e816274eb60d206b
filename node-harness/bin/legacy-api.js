#!/usr/bin/env node
// The legacy Node API ringback replaces at the end of a cutover: `POST /api/notify/send` with
// JSON {runId, to, body, from?} enqueues an `agent-callback` job (the runId as job id, the legacy
// options) and answers 202 {jobId}. A bearer token is checked when LEGACY_API_TOKEN is set.
// SIGTERM stops accepting connections, answers the requests in flight, then exits: the drills
// switch traffic to `ringback serve` and stop this one without losing a request.
//
// Env: REDIS_URL, RINGBACK_QUEUE, RINGBACK_PREFIX, BULLMQ_VERSION, LEGACY_API_LISTEN
// (127.0.0.1:0; the chosen address is printed as "legacy api listening on http://..."),
// LEGACY_API_TOKEN.
'use strict';

const http = require('node:http');
const path = require('node:path');
const { load, defaultVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
const { JOB_NAME, JOB_OPTIONS } = require(path.join(__dirname, '..', 'lib', 'legacy.js'));

const env = process.env;
const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
const MAX_BODY = 64 * 1024;

function answer(res, status, body) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks = [];
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) reject(Object.assign(new Error('body too large'), { status: 413 }));
      else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function main() {
  const { Queue } = load(defaultVersion());
  const queue = new Queue(env.RINGBACK_QUEUE || 'notify', { connection: connectionFromUrl(redisUrl), prefix: env.RINGBACK_PREFIX || 'bull' });
  await queue.waitUntilReady();
  const token = env.LEGACY_API_TOKEN;

  const server = http.createServer(async (req, res) => {
    try {
      if (req.method !== 'POST' || req.url !== '/api/notify/send') return answer(res, 404, { error: 'not found' });
      if (token && req.headers.authorization !== `Bearer ${token}`) return answer(res, 401, { error: 'unauthorized' });
      let data;
      try {
        data = JSON.parse(await readBody(req));
      } catch (err) {
        return answer(res, err.status || 400, { error: err.status ? err.message : 'body is not JSON' });
      }
      if (data === null || typeof data !== 'object' || Array.isArray(data)) return answer(res, 400, { error: 'body must be a JSON object' });
      for (const field of ['runId', 'to', 'body']) {
        if (typeof data[field] !== 'string' || data[field] === '') return answer(res, 400, { error: `${field} is required` });
      }
      const { runId, to, body, from } = data;
      const job = await queue.add(JOB_NAME, { runId, to, body, ...(from ? { from } : {}) }, { ...JOB_OPTIONS, jobId: runId });
      return answer(res, 202, { jobId: job.id });
    } catch (err) {
      return answer(res, 500, { error: err.message });
    }
  });
  const [host, port] = (env.LEGACY_API_LISTEN || '127.0.0.1:0').split(':');
  await new Promise((resolve) => server.listen(Number(port), host, resolve));
  const addr = server.address();
  process.stdout.write(`legacy api listening on http://${addr.address}:${addr.port}\n`);

  const stop = () => {
    server.close(async () => {
      await queue.close();
      process.exit(0);
    });
    server.closeIdleConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
