// Kills every child process the tests started (redis-server, workers) when the test process
// ends, including on SIGINT/SIGTERM, so nothing outlives a run; runs a child to its end.
'use strict';

const { spawn } = require('node:child_process');

const live = new Set();
let installed = false;

function killAll() {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

function install() {
  if (installed) return;
  installed = true;
  process.on('exit', killAll);
  for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
    process.once(signal, () => {
      killAll();
      process.exit(code);
    });
  }
}

/** Registers a child process; it is forgotten once it exits. */
function track(child) {
  install();
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

/**
 * Runs `cmd args` as a tracked child to its end; resolves {code, out, err} once its output is
 * closed ('close', not 'exit': stdout may still hold the last lines when the process exits).
 */
function runToEnd(cmd, args, options = {}) {
  return new Promise((resolve, reject) => {
    const child = track(spawn(cmd, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c) => (err += c));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

module.exports = { track, runToEnd };
