#!/usr/bin/env node
// The explorer: `node bin/explore.js [--seed S] [--trials N] [--minutes M] [--seeds a,b,c]
// [--jobs J] [--replays R] [--shrink B] [--coverage]`. Each trial draws a configuration,
// arrivals and faults from its seed, plays them on real processes (redis-server, the Twilio
// simulator, ringback workers from env RINGBACK_BIN, the bullmq npm package as producer and
// legacy worker) and checks every invariant at quiescence. `--seed S` replays one trial;
// without it, seeds count up from a random start. Last line: `explore: N trials, F faults, I
// invariant checks, V violations`; exit 1 on a violation, 2 on bad usage or a lab that cannot
// start. `--coverage` plays nothing: it draws the plans of `--seeds` (or of seeds 1 to
// `--trials`, 10 by default) and prints how many draw each feature and fault class, one
// `<class>: <n> trials` line each, by name.
'use strict';

const path = require('node:path');

function usage(msg) {
  process.stderr.write(`${msg}\nusage: explore.js [--seed S] [--seeds a,b,c] [--trials N] [--minutes M] [--jobs J] [--replays R] [--shrink B] [--verbose] [--coverage]\n`);
  process.exit(2);
}

/** The classes the plans of `seeds` draw, one line each (no binary, nothing played). */
function printCoverage(seeds) {
  const { drawPlan, coverage } = require(path.join(__dirname, '..', 'lib', 'explore', 'plan'));
  for (const [cls, n] of coverage(seeds.map(drawPlan))) process.stdout.write(`${cls}: ${n} trials\n`);
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { out: (line) => process.stdout.write(`${line}\n`) };
  let seed = null;
  let coverageOnly = false;
  const int = (a, v, min = 0) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) usage(`${a}: expected an integer of at least ${min}, got ${v}`);
    return n;
  };
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--seed') seed = int(a, value());
    else if (a === '--seeds') opts.seeds = value().split(',').map((s) => int('--seeds', s));
    else if (a === '--trials') opts.trials = int(a, value(), 1);
    else if (a === '--minutes') opts.minutes = Number(value()) > 0 ? Number(args[i]) : usage('--minutes: expected a positive number');
    else if (a === '--jobs') opts.jobs = int(a, value(), 1);
    else if (a === '--replays') opts.replays = int(a, value());
    else if (a === '--shrink') opts.shrinkBudget = int(a, value());
    else if (a === '--verbose') opts.log = (line) => process.stderr.write(`${line}\n`);
    else if (a === '--coverage') coverageOnly = true;
    else usage(`unknown argument ${a}`);
  }
  if (seed !== null) opts.seeds = [seed];
  if (coverageOnly) return printCoverage(opts.seeds || Array.from({ length: opts.trials ?? 10 }, (_, k) => k + 1));
  const { explore } = require(path.join(__dirname, '..', 'lib', 'explore'));
  if (!opts.seeds && opts.trials === undefined && opts.minutes === undefined) opts.trials = 10;
  opts.firstSeed = Math.floor(Math.random() * 1_000_000) + 1;
  if (!opts.seeds) opts.out(`explore: seeds from ${opts.firstSeed} on`);
  const t = await explore(opts);
  if (t.failing.length) opts.out(`explore: seeds with a violation: ${t.failing.join(', ')} (replay one: scripts/explore --seed S)`);
  opts.out(`explore: ${t.trials} trials, ${t.faults} faults, ${t.checks} invariant checks, ${t.violations} violations`);
  process.exit(t.violations ? 1 : 0);
}

main().catch((err) => {
  process.stderr.write(`explore: ${err.name === 'SetupError' ? err.message : err.stack || err}\n`);
  process.exit(err.name === 'SetupError' ? 2 : 1);
});
