// The explorer's loop: trials drawn from seeds, each checked; a violation replayed from its seed
// (how often it repeats) and shrunk (its faults switched off one class at a time while it still
// fails). Real processes are not deterministic: a seed replays the same plan, not always the
// same interleaving, so the report says how often a violation came back.
'use strict';

const { drawPlan, faultClasses, without } = require('./plan');
const { runTrial } = require('./trial');

// the harness's own Node client meeting a failover it drew (READONLY from a demoted master
// until its slot map or its primary is read again) breaks the trial, not an invariant
const harnessFailover = (err) => err.name === 'ReplyError' && /READONLY|CLUSTERDOWN|TRYAGAIN/.test(String(err.message));

/**
 * Plays `plan` (a first play, a replay or a shrink's): a trial broken by the harness's own
 * client in a failover is played once more from its seed; a trial that throws (a lab that broke
 * midway, a reply the harness did not expect, a second failover break) is a violation of its
 * own, reported with its seed, and the run goes on.
 */
async function play(plan, opts) {
  const broke = (err) => {
    if (err.name === 'SetupError') throw err;
    return { seed: plan.seed, violations: [{ invariant: 'the trial runs to its end', detail: String(err.stack || err).slice(0, 600) }], logs: [], checks: 1, faults: 0, ms: 0, figures: { runs: plan.runs.length, jobs: 0, held: 0 } };
  };
  return runTrial(plan, opts).catch((err) => (harnessFailover(err) ? runTrial(plan, opts).catch(broke) : broke(err)));
}

/** Plays `plan` and says whether it broke an invariant. */
async function fails(plan, opts) {
  const r = await play(plan, opts);
  return r.violations.length > 0 ? r : null;
}

/**
 * Shrinks a failing plan: each fault class switched off in turn, kept off when the trial still
 * fails; at most `budget` trials. Resolves the smallest failing plan found.
 */
async function shrink(plan, { budget = 6, ...opts } = {}) {
  let current = plan;
  let spent = 0;
  for (const cls of [...new Set(faultClasses(plan))]) {
    if (spent >= budget) break;
    const candidate = without(current, cls);
    spent += 1;
    if (await fails(candidate, opts)) current = candidate;
  }
  return { plan: current, trials: spent };
}

/** A plan in a few lines: what a person needs to read a failure. */
function describePlan(plan) {
  const c = plan.config;
  const workers = c.workers.map((w) => `c${w.concurrency}${w.crashAt ? ` crash ${w.crashAt}` : ''}${w.clockSkewMs ? ` skew ${w.clockSkewMs} ms` : ''}`).join(', ');
  return [
    `config: timings ${c.timings}, bullmq ${c.bullmq}, layout ${c.cluster ? 'a real Cluster' : c.layout}, drainDelay ${c.drainDelayMs} ms, workers [${workers}], legacy ${c.legacy ? 'alive' : 'none'}, quiet ${c.quiet ? `${c.quiet.covers ? 'covering now' : 'not now'} in ${c.quiet.tz}` : 'none'}`,
    `runs: ${plan.runs.map((r) => `${r.i}:${r.kind}${r.name !== 'agent-callback' ? `(${r.name})` : ''}${r.urgent ? '!' : ''}${r.question ? '?' : ''}${r.zone !== 'default' ? `@${r.zone}` : ''}${r.ladder ? ` ladder[${r.ladder.then.join(',')}]${r.ladder.silent ? ` silent to ${r.ladder.silent.upTo}, answered by ${r.ladder.silent.by || 'nobody'}` : ''}` : ''}`).join(' ')}`,
    `arrivals: ${plan.bursts.map((b) => `+${b.gapBeforeMs}ms ${b.producer === 'python' ? 'py' : ''}[${b.adds.join(',')}]`).join(' ')}`,
    `faults: ${faultClasses(plan).join(', ') || 'none'}${plan.faults.sigkillEveryMs ? `; SIGKILL every ${plan.faults.sigkillEveryMs} ms` : ''}${plan.faults.pauses.length ? `; pauses ${plan.faults.pauses.map((p) => `${p.ms} ms at +${p.atMs}`).join(', ')}` : ''}${plan.faults.silentReplica ? `; silent replica ${plan.faults.silentReplica.atMs === null ? 'before the workers' : `${plan.faults.silentReplica.atMs} ms after the first burst`}` : ''}`,
  ];
}

/**
 * Runs trials: `seeds` (a list) or seeds from `firstSeed` on, until `trials` ran or `minutes`
 * passed, `jobs` trials at a time (each on a lab of its own: its own redis-server, simulator
 * and processes). `replays`: how many times a violation's seed is played again. Calls
 * `out(line)` per line (a trial's lines together); resolves the totals.
 */
async function explore({ seeds, firstSeed = 1, trials = Infinity, minutes = Infinity, jobs = 1, replays = 2, shrinkBudget = 6, out = () => {}, log = () => {} }) {
  const deadline = Date.now() + minutes * 60_000;
  const totals = { trials: 0, faults: 0, checks: 0, violations: 0, failing: [] };
  const list = seeds || null;
  let next = 0;
  let started = 0;
  const lane = async () => {
    while (started < trials && Date.now() < deadline && (!list || next < list.length)) {
      const k = next++;
      started += 1;
      await one(list ? list[k] : firstSeed + k);
    }
  };
  const one = async (seed) => {
    const lines = [];
    const say = (line) => lines.push(line);
    await trial(seed, { totals, replays, shrinkBudget, out: say, log });
    for (const line of lines) out(line);
  };
  await Promise.all(Array.from({ length: Math.max(1, jobs) }, lane));
  return totals;
}

/** One trial of `seed`, its totals added; a violation replayed and shrunk. */
async function trial(seed, { totals, replays, shrinkBudget, out, log }) {
  {
    const plan = drawPlan(seed);
    const r = await play(plan, { log });
    totals.trials += 1;
    totals.faults += r.faults;
    totals.checks += r.checks;
    totals.violations += r.violations.length;
    const f = r.figures;
    out(`trial ${totals.trials} seed ${seed}: ${r.violations.length ? `${r.violations.length} VIOLATION(S)` : 'ok'}: ${f.runs} runs (${f.jobs} jobs, ${f.held} held by quiet hours${f.replies ? `, ${f.replies} replies in ${f.replyPosts} posts` : ''}), ${r.faults} faults, ${r.checks} checks, ${(r.ms / 1000).toFixed(1)} s`);
    if (!r.violations.length) return;
    for (const line of describePlan(plan)) out(`  ${line}`);
    for (const v of r.violations.slice(0, 12)) out(`  violated: ${v.invariant}${v.run !== undefined ? ` [run ${v.run}]` : ''}: ${v.detail}`);
    for (const l of r.logs || []) log(l);
    let again = 0;
    for (let i = 0; i < replays; i += 1) if (await fails(plan, { log })) again += 1;
    out(`  replayed ${replays} time(s) from seed ${seed}: violated again ${again} time(s)`);
    if (shrinkBudget > 0) {
      const s = await shrink(plan, { budget: shrinkBudget, log });
      out(`  shrunk in ${s.trials} trial(s) to:`);
      for (const line of describePlan(s.plan)) out(`    ${line}`);
    }
    totals.failing.push(seed);
  }
}

module.exports = { explore, describePlan, shrink };
