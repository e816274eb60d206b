#!/usr/bin/env node
// One drill, or all of them, end to end: `node bin/drill.js
// <stall|cutover|chaos|mixed|rollback|edges|replies|ladder|all> [--runs N] [--bullmq 5|6] [--timings compressed,prod]
// [--cluster] [--json]`. Each drill starts its own redis-server (with `--cluster`: a real local
// Redis Cluster, three masters with a replica each, the queues under `{bull}`) and Twilio
// simulator and the ringback binary (env RINGBACK_BIN, as `ringback drill` sets it). Each drill
// runs once per timing profile (`--timings`, else env DRILL_TIMINGS, else compressed and prod).
// Prints a report per drill and profile; exits 0 when every drill passed, 1 when one failed, 2 on
// bad usage or when the lab cannot be set up (no redis-server, no ringback binary).
'use strict';

const path = require('node:path');
const { DRILLS, runDrills, formatReport } = require(path.join(__dirname, '..', 'lib', 'drill'));
const { timingProfiles } = require(path.join(__dirname, '..', 'lib', 'drill', 'lab'));

function usage(msg) {
  process.stderr.write(`${msg}\nusage: drill.js <${[...Object.keys(DRILLS), 'all'].join('|')}> [--runs N] [--bullmq 5|6] [--timings compressed,prod] [--cluster] [--json]\n`);
  process.exit(2);
}

async function main() {
  const args = process.argv.slice(2);
  const opts = { log: (line) => process.stderr.write(`${line}\n`) };
  let json = false;
  const names = [];
  for (let i = 0; i < args.length; i += 1) {
    const a = args[i];
    const value = () => {
      const v = args[++i];
      if (v === undefined || v.startsWith('-')) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--runs') opts.runs = Number(value());
    else if (a === '--bullmq') opts.version = value();
    else if (a === '--timings') opts.timings = value();
    else if (a === '--json') json = true;
    else if (a === '--cluster') opts.cluster = true;
    else if (a.startsWith('-')) usage(`unknown flag ${a}`);
    else names.push(a);
  }
  if (names.length !== 1) usage('name one drill');
  if (opts.runs !== undefined && !(Number.isInteger(opts.runs) && opts.runs > 0)) usage('--runs: expected a positive integer');
  if (opts.version !== undefined && !['5', '6'].includes(opts.version)) usage('--bullmq: expected 5 or 6');
  try {
    opts.timings = timingProfiles(opts.timings);
  } catch (err) {
    usage(err.message);
  }
  const which = names[0] === 'all' ? Object.keys(DRILLS) : names;
  for (const n of which) if (!DRILLS[n]) usage(`unknown drill ${n}`);
  const reports = await runDrills(which, opts);
  process.stdout.write(json ? `${JSON.stringify(reports, null, 2)}\n` : reports.map(formatReport).join('\n'));
  process.exit(reports.every((r) => r.ok) ? 0 : 1);
}

main().catch((err) => {
  // a lab that could not be set up is not a failed drill: exit 2, as for bad usage
  process.stderr.write(`drill: ${err.name === 'SetupError' ? err.message : err.stack || err}\n`);
  process.exit(err.name === 'SetupError' ? 2 : 1);
});
