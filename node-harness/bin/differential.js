#!/usr/bin/env node
// Runs differential scenarios and prints each report (differences named by key and field).
//   node bin/differential.js [-v 6|5] [scenario-name ...]
// Subject: RINGBACK_WORKER_CMD (as for the tests). Redis: REDIS_URL, else a throw-away server.
// DIFF_VERBOSE=1 also lists every declared (expected) difference. Exit 1 if any scenario has an
// unexpected difference, TODO scenarios included.
'use strict';

const path = require('node:path');
const { startRedis } = require(path.join(__dirname, '..', 'lib', 'harness', 'redis.js'));
const { runScenario } = require(path.join(__dirname, '..', 'differential', 'run.js'));
const scenarios = require(path.join(__dirname, '..', 'differential', 'scenarios'));

async function main() {
  const args = process.argv.slice(2);
  let versions = ['6', '5'];
  const names = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-v' || args[i] === '--version') versions = [args[++i]];
    else names.push(args[i]);
  }
  const unknown = names.filter((n) => !scenarios.some((s) => s.name === n));
  if (unknown.length) throw new Error(`unknown scenario(s) ${unknown.join(', ')}; known: ${scenarios.map((s) => s.name).join(', ')}`);
  const chosen = names.length ? scenarios.filter((s) => names.includes(s.name)) : scenarios;
  const server = process.env.REDIS_URL ? null : await startRedis();
  const redisUrl = process.env.REDIS_URL || server.url;
  let failed = 0;
  try {
    for (const version of versions) {
      for (const scenario of chosen) {
        const t0 = Date.now();
        const r = await runScenario({ redisUrl, version, scenario });
        if (r.unexpected.length) failed++;
        const tag = r.unexpected.length ? (scenario.todo ? 'TODO' : 'FAIL') : 'ok';
        process.stdout.write(`[${tag}] ${r.report} (${Date.now() - t0} ms)\n`);
      }
    }
  } finally {
    await server?.stop();
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  process.stderr.write(`${err.stack || err}\n`);
  process.exit(2);
});
