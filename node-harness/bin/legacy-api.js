#!/usr/bin/env node
// The legacy Node API ringback replaces at the end of a cutover: `POST /api/notify/send` with
// JSON {runId, to, body, from?} enqueues an `agent-callback` job (the runId as job id, the legacy
// options) and answers 202 {jobId}. A bearer token is checked when LEGACY_API_TOKEN is set. Every
// answer carries `server: legacy-api`, so a caller (the cutover drill) can tell who answered.
//
// SIGTERM is a graceful stop that loses no caller, keep-alive or not:
//   1. it closes the listening socket (new connections: refused, or, after the port handover's
//      redirect, sent to `ringback serve`);
//   2. every answer from then on says `connection: close`, so a caller's pooled socket is retired
//      after the request it carries;
//   3. idle keep-alive sockets are closed once idle for the keep-alive timeout this server
//      announces (`keep-alive: timeout=5`), never sooner: a caller that honours the hint (Node's
//      http Agent and fetch drop a socket 1 s before it) has dropped the socket by then. Closing
//      an idle socket at once (what `server.close()` does since Node 19) races with a caller that
//      is writing its next request on it: that request is lost (ECONNRESET), and a POST is never
//      retried by the caller;
//   4. when no socket is left it exits 0 (after LEGACY_API_DRAIN_MAX_MS, 15 s, it closes what
//      is left and exits anyway), printing what it answered while stopping.
//
// Env: REDIS_URL, RINGBACK_QUEUE, RINGBACK_PREFIX, BULLMQ_VERSION, LEGACY_API_LISTEN
// (127.0.0.1:0, or [::]:3000 for both families; the chosen address is printed as "legacy api
// listening on http://..."), LEGACY_API_TOKEN, LEGACY_API_DRAIN_MAX_MS.
'use strict';

const http = require('node:http');
const net = require('node:net');
const path = require('node:path');
const { load, defaultVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
const { JOB_NAME, JOB_OPTIONS } = require(path.join(__dirname, '..', 'lib', 'legacy.js'));

const env = process.env;
const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
const MAX_BODY = 64 * 1024;
// Node's default, stated: the hint callers get, and how long an idle socket is kept.
const KEEP_ALIVE_MS = 5000;

let stopping = false;
let answeredWhileStopping = 0;

function answer(res, status, body) {
  const headers = { 'content-type': 'application/json', server: 'legacy-api' };
  if (stopping) {
    headers.connection = 'close';
    answeredWhileStopping += 1;
  }
  res.writeHead(status, headers);
  res.end(JSON.stringify(body));
}

/** "127.0.0.1:0", "[::]:3000", ":3000" → {host, port}; throws naming the setting. */
function parseListen(spec) {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]*)):(\d+)$/.exec(spec);
  if (!m) throw new Error(`LEGACY_API_LISTEN: expected host:port or [v6-address]:port, got ${JSON.stringify(spec)}`);
  return { host: m[1] ?? (m[2] || '::'), port: Number(m[3]) };
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
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  // The listening socket is our own, handing each connection to the HTTP server: closing it
  // stops new connections without `server.close()`, which would also close idle keep-alive
  // sockets at once (see the top of this file).
  const sockets = new Set();
  const listener = net.createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    server.emit('connection', socket);
  });
  const { host, port } = parseListen(env.LEGACY_API_LISTEN || '127.0.0.1:0');
  await new Promise((resolve, reject) => {
    listener.once('error', reject);
    listener.listen(port, host, resolve);
  });
  const addr = listener.address();
  const shown = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  process.stdout.write(`legacy api listening on http://${shown}:${addr.port}\n`);

  const drainMaxMs = Number(env.LEGACY_API_DRAIN_MAX_MS || 15_000);
  const stop = () => {
    if (stopping) return;
    stopping = true;
    const t0 = Date.now();
    const open = sockets.size;
    listener.close();
    const done = async (how) => {
      clearInterval(poll);
      for (const s of sockets) s.destroy();
      await queue.close().catch(() => {});
      process.stdout.write(
        `legacy api stopped ${how} after ${Date.now() - t0} ms: ${open} connection(s) open at SIGTERM, ${answeredWhileStopping} request(s) answered while stopping\n`,
      );
      process.exit(0);
    };
    // No event says "the last socket closed" for sockets the HTTP server owns; look often.
    const poll = setInterval(() => {
      if (sockets.size === 0) done('cleanly');
      else if (Date.now() - t0 > drainMaxMs) done(`at LEGACY_API_DRAIN_MAX_MS with ${sockets.size} connection(s) cut`);
    }, 20);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(1);
});
