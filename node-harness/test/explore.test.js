// The explorer: its CI seeds find no violation, a seed draws the same plan every time,
// `--coverage` counts what the seeds draw without playing them, and its checks catch a broken
// fleet (a worker that texts nobody, quiet hours the workers ignore, a serve that refuses
// Twilio's posts).
'use strict';

const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const path = require('node:path');
const { describe, it } = require('node:test');
const { runToEnd } = require('../lib/harness/reaper');
const { ringbackBin } = require('../lib/harness/twilio-sim');
const { drawPlan, faultClasses, without } = require('../lib/explore/plan');
const { runTrial } = require('../lib/explore/trial');

const SCRIPT = path.join(__dirname, '..', '..', 'scripts', 'explore');
const EXPLORE = path.join(__dirname, '..', 'bin', 'explore.js');
// CI's seeds: together they draw both timing profiles, concurrency 1 with idle gaps, the
// per-slot layout, a real Redis Cluster, quiet hours covering now, the legacy worker alive, receipts through serve,
// the Python producer and two runs on one key, the live-fleet checks, crashes, kills, Redis
// pauses, Twilio's faults, its list sorted by DateSent and receipts shuffled, late or missing,
// and people answering (coded, codeless, strangers, a forged post) while the faults last,
// Redis restarted from a copy of its AOF with texts in flight (without the claims' look after a
// change, 30072 texts runs twice), one endpoint with a replica, a replica that never
// acknowledges, and a Sentinel set, failed over with texts in flight (the test below checks
// that they do); and the people around ladders
// (34810, 47281 and 30072 draw every class of LADDER_CLASSES between them: without an answer
// acknowledging only its own run's ladder, 34810 and 47281 stop one by another run's answer)
const CI_SEEDS = [25325, 25316, 25303, 25304, 25311, 25308, 25326, 25323, 25321, 30072, 40000, 34810, 47281];
const LADDER_CLASSES = ['two-next-people', 'shared-oncall-number', 'choices', 'next-person-answers', 'answers-another-question', 'ladder-crash', 'calls-in-quiet-hours', 'ring-past-step-wait', 'rollback-with-ladders'];
const LAST = /^explore: (\d+) trials, (\d+) faults, (\d+) invariant checks, (\d+) violations$/;

describe('the explorer', () => {
  it('a seed draws the same plan every time, and shrinking switches one fault class off', () => {
    for (const seed of [1, 59737, 424242]) {
      assert.deepEqual(drawPlan(seed), drawPlan(seed));
      const plan = drawPlan(seed);
      for (const cls of new Set(faultClasses(plan))) assert.ok(!faultClasses(without(plan, cls)).includes(cls), `${seed}: ${cls}`);
    }
    assert.notDeepEqual(drawPlan(1), drawPlan(2));
  });

  it("CI's seeds draw every feature and fault class between them", () => {
    const plans = CI_SEEDS.map(drawPlan);
    const some = (f) => plans.some(f);
    assert.ok(some((p) => p.config.timings === 'prod') && some((p) => p.config.timings === 'compressed'), 'both timing profiles');
    assert.ok(some((p) => p.config.workers.some((w) => w.concurrency === 1) && p.bursts.some((b) => b.gapBeforeMs > 4000)), 'concurrency 1 with an idle gap');
    assert.ok(some((p) => p.config.layout === 'per-slot'), 'the per-slot layout');
    assert.ok(some((p) => p.config.cluster), 'a real Redis Cluster');
    assert.ok(some((p) => p.config.quiet?.covers), 'quiet hours covering now');
    assert.ok(some((p) => p.config.legacy), 'a legacy worker alive');
    assert.ok(some((p) => p.config.receipts), 'receipts through serve');
    assert.ok(some((p) => p.bursts.some((b) => b.producer === 'python')), 'the Python producer');
    assert.ok(some((p) => p.runs.some((r) => r.kind === 'bignum-twin')), 'two runs on one key');
    assert.ok(some((p) => p.drainCheck), 'heartbeats and drain beside a live fleet');
    assert.ok(some((p) => p.runs.some((r) => r.ladder) && p.config.receipts) && some((p) => p.runs.some((r) => r.ladder) && !p.config.receipts), 'ladders, with and without serve');
    assert.ok(some((p) => p.runs.some((r) => r.ladder) && p.config.quiet?.covers) && some((p) => p.runs.some((r) => r.ladder) && p.config.legacy), 'ladders beside quiet hours and a legacy worker');
    const answers = plans.flatMap((p) => Object.values(p.replies?.answers || {}));
    assert.ok(answers.some((a) => a.codeless) && answers.some((a) => !a.codeless), 'coded and codeless answers');
    assert.ok(some((p) => p.replies?.strangers) && some((p) => p.replies?.forged), 'strangers and a forged post');
    assert.ok(some((p) => p.replies?.optOut?.restart) && some((p) => p.replies?.optOut && !p.replies.optOut.restart), 'STOP, and STOP then START');
    assert.ok(some((p) => p.replies && (p.faults.pauses.length || p.faults.serveKillEveryMs)), 'answers while Redis pauses or serve dies');
    const classes = new Set(plans.flatMap(faultClasses));
    for (const t of ['replica', 'sentinel']) assert.ok(some((p) => p.config.topology === t), `Redis as ${t}`);
    for (const c of ['crash-at', 'sigkill', 'serve-kill', 'client-kill', 'script-flush', 'redis-pause', 'redis-forget', 'sentinel-failover', 'clock-skew', 'silent-replica']) assert.ok(classes.has(c), `fault class ${c}: ${[...classes]}`);
    assert.ok([...classes].some((c) => c.startsWith('twilio-server')), 'a Twilio fault');
    for (const c of ['twilio-call-no-answer', 'twilio-call-busy', 'twilio-call-machine', 'twilio-list-date_sent', 'twilio-receipts-shuffled', 'twilio-receipts-none', 'twilio-receipts-late', 'twilio-rewrite-trial', 'twilio-auth-refused']) assert.ok(classes.has(c), `fault class ${c}`);
  });

  it("--coverage plays nothing and counts the plans of CI's seeds drawing each ladder class", () => {
    const out = execFileSync(process.execPath, [EXPLORE, '--coverage', '--seeds', CI_SEEDS.join(',')], { encoding: 'utf8', env: { ...process.env, RINGBACK_BIN: '/nonexistent' } });
    const counts = new Map(out.trim().split('\n').map((line) => {
      const m = /^(\S+): (\d+) trials$/.exec(line);
      assert.ok(m, `a line of --coverage: ${line}`);
      return [m[1], Number(m[2])];
    }));
    assert.deepEqual([...counts.keys()], [...counts.keys()].sort(), 'sorted by name');
    for (const cls of LADDER_CLASSES) assert.ok(counts.get(cls) > 0, `${cls}: ${counts.get(cls) || 0} trials\n${out}`);
  });

  it("CI's seeds: no violation, and the last line counts trials, faults, checks and violations", { timeout: 720_000 }, async () => {
    // through the command the docs give (RINGBACK_BIN: the binary under test, not a release build)
    const r = await runToEnd(SCRIPT, ['--seeds', CI_SEEDS.join(','), '--replays', '0', '--shrink', '0'], {
      env: { ...process.env, RINGBACK_BIN: ringbackBin() },
    });
    const lines = r.out.trim().split('\n');
    const m = LAST.exec(lines[lines.length - 1]);
    assert.ok(m, `last line: ${lines[lines.length - 1]}\n${r.err.slice(-2000)}`);
    assert.equal(Number(m[1]), CI_SEEDS.length);
    assert.ok(Number(m[2]) > 0 && Number(m[3]) > 100, lines[lines.length - 1]);
    assert.equal(r.code, 0, `${r.out}\n${r.err.slice(-3000)}`);
    assert.equal(Number(m[4]), 0);
  });

  it('a worker that texts nobody breaks "each run is texted exactly once"', { timeout: 120_000 }, async () => {
    // (no need to wait the full settle bound for texts that never come)
    const plan = { ...drawPlan(207), workerEnv: { RINGBACK_PROCESSOR: 'scripted' }, settleMs: 10_000 };
    const r = await runTrial(plan);
    assert.ok(r.violations.some((v) => v.invariant === 'each run is texted exactly once'), JSON.stringify(r.violations.slice(0, 3)));
  });

  it('a serve that refuses Twilio\'s posts breaks "Twilio\'s genuine posts are taken"', { timeout: 120_000 }, async () => {
    const plan = drawPlan(25314);
    assert.ok(Object.keys(plan.replies?.answers || {}).length, 'seed 25314 draws answers');
    const r = await runTrial({ ...plan, serveEnv: { RINGBACK_PUBLIC_URL: 'https://elsewhere.example.test' } });
    assert.ok(r.violations.some((v) => v.invariant === "Twilio's genuine posts are taken"), JSON.stringify(r.violations.slice(0, 3)));
  });

  it('workers that ignore quiet hours break "nothing not urgent is texted inside quiet hours"', { timeout: 120_000 }, async () => {
    const plan = drawPlan(256);
    assert.ok(plan.config.quiet?.covers, 'seed 256 draws quiet hours covering now');
    const r = await runTrial({ ...plan, workerEnv: { RINGBACK_QUIET_HOURS: null, RINGBACK_QUIET_HOURS_TZ: null } });
    assert.ok(r.violations.some((v) => v.invariant === 'nothing not urgent is texted inside quiet hours'), JSON.stringify(r.violations.slice(0, 3)));
  });
});
