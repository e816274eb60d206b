// The drills by name, run one after another, and their reports for a person.
'use strict';

const { stall } = require('./stall');
const { cutover } = require('./cutover');
const { chaos } = require('./chaos');
const { mixed } = require('./mixed');
const { rollback } = require('./rollback');
const { edges } = require('./edges');
const { replies } = require('./replies');
const { ladder } = require('./ladder');
const { timingProfiles, describeTimings } = require('./lab');

const DRILLS = { stall, cutover, chaos, mixed, rollback, edges, replies, ladder };

/**
 * Runs each drill of `names` once per timing profile (`opts.timings`: a list, or a
 * comma-separated string; default env DRILL_TIMINGS, else compressed and prod), one after
 * another; one report per drill and profile, each naming its profile.
 */
async function runDrills(names, opts = {}) {
  const profiles = Array.isArray(opts.timings) ? opts.timings : timingProfiles(opts.timings);
  const reports = [];
  for (const name of names) {
    for (const timings of profiles) {
      const t0 = Date.now();
      const report = await DRILLS[name]({ ...opts, timings });
      reports.push({ ...report, timings, cluster: Boolean(opts.cluster), ms: Date.now() - t0 });
    }
  }
  return reports;
}

const list = (xs) => (xs.length ? xs.slice(0, 10).join(', ') + (xs.length > 10 ? `, … (${xs.length})` : '') : 'none');

function formatVerdict(v) {
  return [
    `texts ${v.texts} for ${v.runs} runs; duplicates: ${list(v.duplicates)}; lost: ${list(v.lost)}` +
      (v.legacyDropped.length ? `; dropped by the legacy worker's own retry after its provider call failed: ${list(v.legacyDropped)}` : ''),
    v.settled ? `settled in ${v.settleMs} ms` : `NOT settled (still busy ${v.stillBusy}, open attempts: ${list(v.stillOpen)})`,
  ].join('; ');
}

/** The replies drill's messages, counted per MessageSid at the replies queue's consumer. */
function formatReplies(d) {
  return `messages ${d.messages}, consumed ${d.consumed} time(s); duplicates: ${list(d.duplicates)}; lost: ${list(d.lost)}` + (d.unexpected.length ? `; unexpected: ${list(d.unexpected)}` : '');
}

function formatReport(r) {
  const timings = (r.timings ? ` at timings ${describeTimings(r.timings)}` : '') + (r.cluster ? ' on a Redis Cluster (3 masters + 3 replicas)' : '');
  const lines = [`drill ${r.drill}${timings}: ${r.ok ? 'PASSED' : 'FAILED'} in ${(r.ms / 1000).toFixed(1)} s`];
  for (const c of r.cases || []) {
    const extra = (c.notes || []).map((n) => `; ${n}`).join('');
    lines.push(
      `  ${c.ok ? 'ok    ' : 'FAILED'} [${c.timings || r.timings}] ${c.case}: died ${c.died}, recovered in ${c.recoveredMs} ms, ${c.stalledEvents} stalled event(s)${extra}; ${formatVerdict(c)}`,
    );
  }
  for (const p of r.phases || []) lines.push(`  ${p}`);
  for (const c of r.checks || []) lines.push(`  check ${c}`);
  if (r.verdict) lines.push(`  ${formatVerdict(r.verdict)}`);
  if (r.replies) lines.push(`  ${formatReplies(r.replies)}`);
  for (const [k, v] of Object.entries(r.figures || {})) lines.push(`  ${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`);
  return `${lines.join('\n')}\n`;
}

module.exports = { DRILLS, runDrills, formatReport };
