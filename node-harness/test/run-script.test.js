// The README's main command, `scripts/run`, at a small size, in the recommended setup (serve
// receiving the simulator's status callbacks): it must exit 0 with its success line last (a text
// and a final receipt per run), and leave nothing it started running (redis-server, the simulator, serve, the worker) nor
// its redis-server's temp folder. A script that no test runs can break unnoticed: an exit 1
// after its success line, or a redis-server left behind.
'use strict';

const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { describe, it } = require('node:test');
const { ringbackBin } = require('../lib/harness/twilio-sim');
const { runToEnd } = require('../lib/harness/reaper');
const { waitFor } = require('../lib/harness/wait');

const ROOT = path.resolve(__dirname, '..', '..');

/** Pids of live processes whose environment holds `mark` (every child of scripts/run inherits it). */
function marked(mark) {
  const found = [];
  for (const pid of fs.readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let environ;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, 'latin1');
    } catch {
      continue; // gone meanwhile, or not ours
    }
    if (environ.split('\0').includes(mark)) found.push(Number(pid));
  }
  return found;
}

/** Runs `scripts/run` with `env`; resolves {code, out, err}. */
function run(env) {
  return runToEnd(path.join(ROOT, 'scripts', 'run'), [], { cwd: ROOT, env: { ...process.env, ...env } });
}

describe('scripts/run', () => {
  it('finds marked processes (the check below can see a leftover)', async () => {
    const mark = `RINGBACK_RUN_TEST=${crypto.randomUUID()}`;
    const [key, value] = mark.split('=');
    const sleeper = spawn('sleep', ['30'], { env: { ...process.env, [key]: value }, stdio: 'ignore' });
    try {
      // until the child has exec'd, its environment is still ours
      await waitFor(() => marked(mark).length > 0, 5_000, 'the marked sleeper to show');
      assert.deepEqual(marked(mark), [sleeper.pid]);
    } finally {
      sleeper.kill('SIGKILL');
    }
  });

  it('texts once per run, exits 0 with its success line last, and leaves nothing behind', { timeout: 120_000 }, async () => {
    const id = crypto.randomUUID();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'run-script-'));
    try {
      const r = await run({
        JOBS: '20',
        RINGBACK_BIN: ringbackBin(),
        RINGBACK_QUEUE: `run-script-${id.slice(0, 8)}`,
        RINGBACK_METRICS_LISTEN: 'off',
        RINGBACK_RUN_TEST: id,
        TMPDIR: tmp, // where start_redis makes its folder
      });
      const lines = r.out.trim().split('\n');
      assert.equal(r.code, 0, `${r.out}\n${r.err}`);
      assert.equal(
        lines.at(-1),
        'ringback processed 20 agent-callback jobs for 10 runs; the simulator received 10 texts, and serve recorded 10 final receipts',
        r.out,
      );
      assert.ok(
        lines.some((l) => /^job counts \(Node's Queue\.getJobCounts\(\)\): \{.*"completed":20/.test(l)),
        `the counts line is labelled: ${r.out}`,
      );
      assert.deepEqual(marked(`RINGBACK_RUN_TEST=${id}`), [], 'processes left running');
      assert.deepEqual(fs.readdirSync(tmp), [], "redis-server's temp folder left behind");
    } finally {
      for (const pid of marked(`RINGBACK_RUN_TEST=${id}`)) spawnSync('kill', ['-9', String(pid)]);
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
