// The drills through the agreed one-command surface, `ringback drill <name> --json`, at sizes
// that keep CI short: each must pass, and must have met what it claims to survive. Each drill
// runs once per timing profile (DRILL_TIMINGS, default compressed and prod: issue 10), so each
// test checks one report per profile. The mixed-fleet and rollback drills run through
// `bin/drill.js` (the binary's `ringback drill` names only stall, cutover, chaos and all).
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, it } = require('node:test');
const { ringbackBin } = require('../lib/harness/twilio-sim');
const { runToEnd } = require('../lib/harness/reaper');
const { timingProfiles } = require('../lib/drill/lab');

const HARNESS = path.resolve(__dirname, '..');
const PROFILES = timingProfiles();

/** The reports are one per profile, in order, each naming it. */
function perProfile(reports, drill) {
  assert.deepEqual(
    reports.map((r) => [r.drill, r.timings]),
    PROFILES.map((t) => [drill, t]),
  );
  return reports;
}

/** Runs `ringback drill ...args --json` (in `harness`); resolves {code, reports, out, stderr}. */
async function drill(args, { env = {}, harness = HARNESS, node = false } = {}) {
  const [cmd, argv] = node
    ? [process.execPath, [path.join(HARNESS, 'bin', 'drill.js'), ...args, '--json']]
    : [ringbackBin(), ['drill', ...args, '--json', ...(harness ? ['--harness', harness] : [])]];
  const { code, out, err } = await runToEnd(cmd, argv, {
    env: { ...process.env, ...(node ? { RINGBACK_BIN: ringbackBin() } : {}), ...env },
  });
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
    for (const report of perProfile(r.reports, 'stall')) {
      assert.deepEqual(
        report.cases.map((c) => [c.case, c.timings]),
        ['ringback@after-claim', 'ringback@after-provider-accept', 'ringback@after-sent-marker', 'ringback@before-complete', 'legacy@after-provider-accept'].map((c) => [c, report.timings]),
      );
      for (const c of report.cases) {
        assert.match(c.died, /^SIG(ABRT|KILL)$/, c.case);
        assert.ok(c.stalledEvents >= 1, `${c.case}: recovered through stall recovery`);
        clean(c);
      }
    }
  });

  it('mixed [prod]: ringback dies at each worst instant, only legacy recovers, ringback rejoins: one text per run', { timeout: 150_000 }, async () => {
    const r = await drill(['mixed', '--timings', 'prod'], { node: true });
    assert.equal(r.code, 0, `${r.out}\n${r.stderr}`);
    const [report] = r.reports;
    assert.equal(report.timings, 'prod');
    assert.equal(report.cases.length, 9);
    for (const c of report.cases) {
      if (c.case.includes('stall-limit')) assert.ok(c.stallLimitFailures >= 1, `${c.case}: the stall limit failed a job`);
      else assert.ok(c.stalledEvents >= 1, `${c.case}: recovered through stall recovery`);
      clean(c);
    }
  });

  for (const version of ['6', '5']) {
    it(`cutover [bullmq v${version}]: legacy API and workers replaced under traffic, nothing lost or resent`, { timeout: 120_000 }, async () => {
      const r = await drill(['cutover', '--runs', '100', '--bullmq', version]);
      assert.equal(r.code, 0, `${r.out}\n${r.stderr}`);
      for (const report of perProfile(r.reports, 'cutover')) {
        clean(report.verdict);
        const f = report.figures;
        assert.equal(f['calls refused'], 0);
        assert.ok(f['calls accepted by']['legacy API'] > 0 && f['calls accepted by']['ringback serve'] > 0, JSON.stringify(f));
        assert.ok(f['jobs completed by'].legacy > 0 && f['jobs completed by'].ringback > 0, JSON.stringify(f));
      }
    });
  }

  it('chaos: crashes, kills, Twilio faults and Redis trouble at once; one text per run', { timeout: 180_000 }, async () => {
    const r = await drill(['chaos', '--runs', '120']);
    assert.equal(r.code, 0, `${r.out}\n${r.stderr}`);
    for (const report of perProfile(r.reports, 'chaos')) {
      clean(report.verdict);
      const f = report.figures;
      assert.ok(f['of which SIGKILLs'] >= 1 && f['Redis connection kills'] >= 1 && f['script flushes'] >= 1, JSON.stringify(f));
      assert.equal(f['failed jobs'], 0);
    }
  });

  it('refuses an unknown timing profile, exit 2', async () => {
    const r = await drill(['stall'], { node: true, env: { DRILL_TIMINGS: 'compressed,fast' } });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /unknown profile\(s\) fast/);
  });

  it('refuses an unknown drill and a harness that is not there, exit 2', async () => {
    const unknown = await drill(['nonsense']);
    assert.equal(unknown.code, 2, unknown.stderr);
    const missing = await drill(['stall'], { env: { RINGBACK_HARNESS_DIR: '/nonexistent' }, harness: null });
    assert.equal(missing.code, 2, missing.stderr);
    assert.match(missing.stderr, /RINGBACK_HARNESS_DIR: no node-harness found \(looked in \/nonexistent\)/);
  });
});
