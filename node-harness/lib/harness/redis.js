// Starts a throw-away redis-server on a random free port in a temp dir.
// A missing redis-server fails the run loudly; tests never skip.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { track } = require('./reaper');

const READY = /Ready to accept connections/;
const STARTUP_TIMEOUT_MS = 10_000;


function redisServerPath() {
  const bin = process.env.REDIS_SERVER || 'redis-server';
  const probe = spawnSync(bin, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) {
    throw new Error(
      `redis-server not found or not runnable (${bin}): ${probe.error ? probe.error.message : probe.stderr}. ` +
        'Install it (apt-get install redis-server) or set REDIS_SERVER; the interop tests need a real server.',
    );
  }
  return bin;
}

/** A port that was free a moment ago (the server may still lose a race for it; startRedis retries). */
function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function startOnce(bin, port, dir, aof = false) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      bin,
      ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', aof ? 'yes' : 'no', '--appendfsync', 'everysec', '--daemonize', 'no', '--logfile', ''],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    track(child);
    let log = '';
    let settled = false;
    const done = (err) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        child.kill('SIGKILL');
        err.message += `\n--- redis-server log (port ${port}) ---\n${log}`;
        reject(err);
      } else {
        resolve({ child, getLog: () => log });
      }
    };
    const onData = (chunk) => {
      log += chunk;
      if (READY.test(log)) done();
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', onData);
    child.on('error', (err) => done(err));
    child.on('exit', (code, signal) => {
      done(new Error(`redis-server exited during startup (code ${code}, signal ${signal})`));
    });
    const timer = setTimeout(() => done(new Error(`redis-server not ready after ${STARTUP_TIMEOUT_MS} ms`)), STARTUP_TIMEOUT_MS);
  });
}

function copyDir(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const f of fs.readdirSync(from)) fs.copyFileSync(path.join(from, f), path.join(to, f));
}

async function killNow(child) {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
  }
}

/**
 * Starts redis-server; returns {url, port, dir, log(), stop()}, and with `aof` (the append-only
 * file on, `appendfsync everysec`) also copyAof() (the AOF's files as they stand now, copied
 * aside) and restartFrom(copy) (SIGKILL, then the same port from that copy: a Redis that lost
 * every write since). Retries on a new port if the chosen one was taken in between.
 */
async function startRedis({ aof = false } = {}) {
  const bin = redisServerPath();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringback-redis-'));
  let lastErr;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      let { child, getLog } = await startOnce(bin, port, dir, aof);
      const aofDir = path.join(dir, 'appendonlydir');
      const copies = [];
      return {
        url: `redis://127.0.0.1:${port}`,
        port,
        dir,
        log: () => getLog(),
        copyAof() {
          const to = path.join(dir, `aof-copy-${copies.length}`);
          copyDir(aofDir, to);
          copies.push(to);
          return to;
        },
        async restartFrom(copy) {
          await killNow(child);
          fs.rmSync(aofDir, { recursive: true, force: true });
          copyDir(copy, aofDir);
          ({ child, getLog } = await startOnce(bin, port, dir, aof));
        },
        async stop() {
          await killNow(child);
          fs.rmSync(dir, { recursive: true, force: true });
        },
      };
    } catch (err) {
      lastErr = err;
      if (!/Address already in use/.test(err.message)) break;
    }
  }
  fs.rmSync(dir, { recursive: true, force: true });
  throw lastErr;
}

module.exports = { startRedis, freePort, redisServerPath };
