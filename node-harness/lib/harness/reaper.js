// Kills every child process the tests started (redis-server, workers) when the test process
// ends, including on SIGINT/SIGTERM, so nothing outlives a run.
'use strict';

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

module.exports = { track };
