// The drills through their one-command surface, `ringback drill <name> --json`, at sizes
// that keep CI short: each must pass, and must have met what it claims to survive. Each drill
// runs once per timing profile (DRILL_TIMINGS, default compressed and prod), so each
// test checks one report per profile. The mixed-fleet drill runs through `bin/drill.js`, at
// the `prod` profile alone.
'use strict';

const assert = require('node:assert/strict');
const { execSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { describe, it } = require('node:test');
const { ringbackBin } = require('../lib/harness/twilio-sim');
const { runToEnd } = require('../lib/harness/reaper');
const { timingProfiles } = require('../lib/drill/lab');
const { preflight, RULESET } = require('../lib/drill/netns');

const HARNESS = path.resolve(__dirname, '..');
const PROFILES = timingProfiles();
const NETNS = preflight();

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

/**
 * What a failed drill says first: each report's failed checks, the runs that went wrong and its
 * figures, then the end of stderr (a CI log keeps the start of a long message, so the verdict
 * comes before the raw output).
 */
function why(r) {
  const lines = [`exit ${r.code}`];
  for (const x of r.reports || []) {
    const failed = (x.checks || []).filter((c) => !c.startsWith('ok'));
    const v = x.verdict || {};
    lines.push(`${x.drill} ${x.timings}: ${x.ok ? 'ok' : 'FAILED'}`);
    for (const c of failed) lines.push(`  ${c}`);
    for (const k of ['duplicates', 'lost', 'legacyDropped', 'stillOpen']) if (v[k]?.length) lines.push(`  ${k}: ${JSON.stringify(v[k]).slice(0, 400)}`);
    if (x.replies) lines.push(`  replies: ${JSON.stringify(x.replies).slice(0, 600)}`);
    if (x.figures) lines.push(`  figures: ${JSON.stringify(x.figures).slice(0, 1500)}`);
  }
  if (!r.reports) lines.push(r.out.slice(-2000));
  lines.push(r.stderr.slice(-3000));
  return lines.join('\n');
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
    assert.equal(r.code, 0, why(r));
    for (const report of perProfile(r.reports, 'stall')) {
      assert.deepEqual(
        report.cases.map((c) => [c.case, c.timings]),
        ['ringback@after-claim', 'ringback@after-provider-accept', 'ringback@after-sent-marker', 'legacy@after-provider-accept'].map((c) => [c, report.timings]),
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
    assert.equal(r.code, 0, why(r));
    const [report] = r.reports;
    assert.equal(report.timings, 'prod');
    assert.equal(report.cases.length, 8);
    for (const c of report.cases) {
      if (c.case.includes('stall-limit')) assert.ok(c.stallLimitFailures >= 1, `${c.case}: the stall limit failed a job`);
      else assert.ok(c.stalledEvents >= 1, `${c.case}: recovered through stall recovery`);
      clean(c);
    }
  });

  // The cutover's port handover needs a network namespace of its own (and root, nftables):
  // skipped, saying why, only where the machine cannot create one; anything else missing (no
  // nft, a kernel without NAT redirect) fails the test with the drill's own message.
  const skipCutover = NETNS.netns ? false : `cannot create a network namespace here, so the port handover drill cannot run: ${NETNS.problems.join('; ')}`;
  for (const version of ['6', '5']) {
    it(`cutover [bullmq v${version}]: callers keep port 3000 from first call to last; the redirect loses none, the naive handover refuses some`, { timeout: 120_000, skip: skipCutover }, async () => {
      const r = await drill(['cutover', '--runs', '60', '--bullmq', version]);
      assert.equal(r.code, 0, why(r));
      for (const report of perProfile(r.reports, 'cutover')) {
        clean(report.verdict);
        const f = report.figures;
        const all = JSON.stringify(f);
        assert.equal(f['calls refused'], 0, all);
        assert.match(f['runs accepted'], /^(\d+) of \1$/);
        // every kind of caller reached the legacy API before the redirect and ringback after it,
        // on the same address
        for (const [caller, by] of Object.entries(f['calls per caller (port handover)'])) {
          assert.ok(by['legacy API'] > 0 && by['ringback serve'] > 0 && by.refused === 0, `${caller}: ${JSON.stringify(by)}`);
        }
        // pooled keep-alive sockets stayed on the legacy API after the redirect, and its stop
        // answered them (with connection: close) instead of cutting them
        assert.ok(f['legacy API answers on its open connections after the redirect'] >= 1, all);
        // the naive handover's gap is real: the fleet's calls fall into it
        assert.ok(f['naive handover (stop, then start on the port): calls refused'] >= 1, all);
        assert.ok(report.checks.length >= 5 && report.checks.every((c) => c.startsWith('ok: ')), report.checks.join('\n'));
        assert.ok(report.phases.some((p) => /legacy API gone \(exit 0\): legacy api stopped cleanly/.test(p)), report.phases.join('\n'));
        assert.ok(f['jobs completed by'].legacy > 0 && f['jobs completed by'].ringback > 0, all);
      }
    });
  }

  it('cutover: what the machine lacks for the port handover is named, all at once, exit 2', async () => {
    // a PATH with a shell and nothing else: no unshare, ip or nft
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-path-'));
    try {
      fs.symlinkSync(execSync('command -v sh', { encoding: 'utf8' }).trim(), path.join(bin, 'sh'));
      const r = await drill(['cutover', '--timings', 'compressed'], { node: true, env: { PATH: bin } });
      assert.equal(r.code, 2, `${r.out}\n${r.stderr}`);
      assert.match(r.stderr, /cutover: the port handover drill cannot run here: not on PATH: unshare, ip, nft \(Debian: apt-get install/);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it('cutover: a machine that refuses network namespaces is told so, with what else it lacks, exit 2', async () => {
    // an `unshare` that fails as a container without CLONE_NEWNET does; no ip, no nft
    const bin = fs.mkdtempSync(path.join(os.tmpdir(), 'drill-path-'));
    try {
      fs.symlinkSync(execSync('command -v sh', { encoding: 'utf8' }).trim(), path.join(bin, 'sh'));
      fs.writeFileSync(path.join(bin, 'unshare'), '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n', { mode: 0o755 });
      const r = await drill(['cutover', '--timings', 'compressed'], { node: true, env: { PATH: bin } });
      assert.equal(r.code, 2, `${r.out}\n${r.stderr}`);
      assert.match(r.stderr, /not on PATH: ip, nft .*; cannot create a network namespace \(unshare (--user --map-root-user )?--net: unshare: unshare failed: Operation not permitted; .*\): run the drill as root on a machine that allows CLONE_NEWNET/);
    } finally {
      fs.rmSync(bin, { recursive: true, force: true });
    }
  });

  it('the runbook shows the very ruleset the cutover drill loads, ports filled in', () => {
    const file = fs.readFileSync(RULESET, 'utf8').replaceAll('$legacy_port', '3000').replaceAll('$serve_port', '3001');
    const runbook = fs.readFileSync(path.join(HARNESS, '..', 'docs', 'runbook.md'), 'utf8');
    const blocks = [...runbook.matchAll(/```nft\n([\s\S]*?)```/g)].map((m) => m[1]);
    assert.equal(blocks.length, 1, 'one ```nft block in docs/runbook.md');
    assert.equal(blocks[0], file);
  });

  it('chaos: crashes, kills, Twilio faults and Redis trouble at once; one text per run', { timeout: 180_000 }, async () => {
    const r = await drill(['chaos', '--runs', '120']);
    assert.equal(r.code, 0, why(r));
    for (const report of perProfile(r.reports, 'chaos')) {
      clean(report.verdict);
      const f = report.figures;
      assert.ok(f['of which SIGKILLs'] >= 1 && f['Redis connection kills'] >= 1 && f['script flushes'] >= 1, JSON.stringify(f));
      assert.equal(f['failed jobs'], 0);
    }
  });

  it('edges: a rewriting Messaging Service, lost answers, a message created failed, a silent one, legacy alive: one text per run, every failure told', { timeout: 150_000 }, async () => {
    const r = await drill(['edges', '--runs', '20']);
    assert.equal(r.code, 0, why(r));
    for (const report of perProfile(r.reports, 'edges')) {
      clean(report.verdict);
      assert.ok(report.checks.length >= 5 && report.checks.every((c) => c.startsWith('ok')), report.checks.join('\n'));
    }
  });

  it('replies: answers posted as Twilio does (repeated, shuffled, late, forged) while serve crashes after recording them: each message consumed once, each answer at its run', { timeout: 180_000 }, async () => {
    // in CI at the production profile alone (the defaults' order: claim shorter than the lock);
    // both profiles by hand
    const profiles = process.env.CI ? ['prod'] : PROFILES;
    const r = await drill(['replies', '--runs', '12'], { env: { DRILL_TIMINGS: profiles.join(',') } });
    assert.equal(r.code, 0, why(r));
    assert.deepEqual(r.reports.map((x) => [x.drill, x.timings]), profiles.map((t) => ['replies', t]));
    for (const report of r.reports) {
      // every question (and plain callback) texted once, the legacy worker alive beside ringback
      clean(report.verdict);
      // every message reached the replies queue's consumer once, counted per MessageSid
      const m = report.replies;
      assert.deepEqual({ duplicates: m.duplicates, lost: m.lost, unexpected: m.unexpected, wrong: m.wrong }, { duplicates: [], lost: [], unexpected: [], wrong: [] });
      assert.equal(m.consumed, m.messages);
      assert.ok(m.messages >= 13, `12 answers and the stranger's message at least: ${m.messages}`);
      // answers at their runs, the stranger unmatched, forgeries refused, ask-backs once, codes
      // apart, and serve crashed after recording a message at least once
      assert.ok(report.checks.length >= 7 && report.checks.every((c) => c.startsWith('ok')), report.checks.join('\n'));
      assert.ok(report.checks.some((c) => /^ok: serve crashed after recording a message \([1-9]\d* times?\)/.test(c)), report.checks.join('\n'));
    }
  });

  it('ladder: workers and serve crashing at every ladder step, people answering by keypad, text and delivery, a legacy worker alive: every ladder ends once, no step twice', { timeout: 240_000 }, async () => {
    // in CI at the production profile alone (the defaults' order), compressed step times
    const profiles = process.env.CI ? ['prod'] : PROFILES;
    const r = await drill(['ladder', '--runs', '12'], { env: { DRILL_TIMINGS: profiles.join(',') } });
    assert.equal(r.code, 0, why(r));
    assert.deepEqual(r.reports.map((x) => [x.drill, x.timings]), profiles.map((t) => ['ladder', t]));
    for (const report of r.reports) {
      assert.ok(report.checks.length >= 7 && report.checks.every((c) => c.startsWith('ok')), report.checks.join('\n'));
      const [claim, create, serve] = report.figures['crashes (ladder-after-claim, ladder-after-create, serve)'].split(', ').map(Number);
      assert.ok(claim + create > 0, `the workers crashed at ladder steps: ${claim}, ${create}`);
      assert.ok(serve > 0, `serve crashed after recording a ladder webhook: ${serve}`);
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
