// The drills through the agreed one-command surface, `ringback drill <name> --json`, at sizes
// that keep CI short: each must pass, and must have met what it claims to survive.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, it } = require('node:test');
const { ringbackBin } = require('../lib/harness/twilio-sim');
const { runToEnd } = require('../lib/harness/reaper');

const HARNESS = path.resolve(__dirname, '..');

/** Runs `ringback drill ...args --json` (in `harness`); resolves {code, reports, out, stderr}. */
async function drill(args, { env = {}, harness = HARNESS } = {}) {
  const { code, out, err } = await runToEnd(
    ringbackBin(),
    ['drill', ...args, '--json', ...(harness ? ['--harness', harness] : [])],
    { env: { ...process.env, ...env } },
  );
  let reports = null;
  try {
    reports = JSON.parse(out);
  } catch {
    // reported by the caller with the output
  }
  return { code, reports, out, stderr: err };
}

function clean(v) {
  assert.ok(v.settled, JSON.stringify(v));
  assert.deepEqual(v.duplicates, []);
  assert.deepEqual(v.lost, []);
  // runs the legacy worker failed to send itself are its own retry's drops (reported apart)
  assert.equal(v.texts + v.legacyDropped.length, v.runs);
}

describe('ringback drill', () => {
  it('stall: a worker dies at each worst instant and a fresh one recovers every callback once', { timeout: 120_000 }, async () => {
    const r = await drill(['stall', '--runs', '5']);
    assert.equal(r.code, 0, `${r.out}\n${r.stderr}`);
    const [report] = r.reports;
    assert.equal(report.drill, 'stall');
    assert.deepEqual(
      report.cases.map((c) => c.case),
      ['ringback@after-claim', 'ringback@after-provider-accept', 'ringback@after-sent-marker', 'ringback@before-complete', 'legacy@after-provider-accept'],
    );
    for (const c of report.cases) {
      assert.match(c.died, /^SIG(ABRT|KILL)$/, c.case);
      assert.ok(c.stalledEvents >= 1, `${c.case}: recovered through stall recovery`);
      clean(c);
    }
  });

  for (const version of ['6', '5']) {
    it(`cutover [bullmq v${version}]: legacy API and workers replaced under traffic, nothing lost or resent`, { timeout: 120_000 }, async () => {
      const r = await drill(['cutover', '--runs', '100', '--bullmq', version]);
      assert.equal(r.code, 0, `${r.out}\n${r.stderr}`);
      const [report] = r.reports;
      clean(report.verdict);
      const f = report.figures;
      assert.equal(f['calls refused'], 0);
      assert.ok(f['calls accepted by']['legacy API'] > 0 && f['calls accepted by']['ringback serve'] > 0, JSON.stringify(f));
      assert.ok(f['jobs completed by'].legacy > 0 && f['jobs completed by'].ringback > 0, JSON.stringify(f));
    });
  }

  it('chaos: crashes, kills, Twilio faults and Redis trouble at once; one text per run', { timeout: 180_000 }, async () => {
    const r = await drill(['chaos', '--runs', '120']);
    assert.equal(r.code, 0, `${r.out}\n${r.stderr}`);
    const [report] = r.reports;
    clean(report.verdict);
    const f = report.figures;
    assert.ok(f['of which SIGKILLs'] >= 1 && f['Redis connection kills'] >= 1 && f['script flushes'] >= 1, JSON.stringify(f));
    assert.equal(f['failed jobs'], 0);
  });

  it('refuses an unknown drill and a harness that is not there, exit 2', async () => {
    const unknown = await drill(['nonsense']);
    assert.equal(unknown.code, 2, unknown.stderr);
    const missing = await drill(['stall'], { env: { RINGBACK_HARNESS_DIR: '/nonexistent' }, harness: null });
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /RINGBACK_HARNESS_DIR: no node-harness found \(looked in \/nonexistent\)/);
  });
});
