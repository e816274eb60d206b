// The drills by name, run one after another, and their reports for a person.
'use strict';

const { stall } = require('./stall');
const { cutover } = require('./cutover');
const { chaos } = require('./chaos');

const DRILLS = { stall, cutover, chaos };

async function runDrills(names, opts = {}) {
  const reports = [];
  for (const name of names) {
    const t0 = Date.now();
    const report = await DRILLS[name](opts);
    reports.push({ ...report, ms: Date.now() - t0 });
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

function formatReport(r) {
  const lines = [`drill ${r.drill}: ${r.ok ? 'PASSED' : 'FAILED'} in ${(r.ms / 1000).toFixed(1)} s`];
  for (const c of r.cases || []) {
    lines.push(`  ${c.ok ? 'ok    ' : 'FAILED'} ${c.case}: died ${c.died}, recovered in ${c.recoveredMs} ms, ${c.stalledEvents} stalled event(s); ${formatVerdict(c)}`);
  }
  for (const p of r.phases || []) lines.push(`  ${p}`);
  if (r.verdict) lines.push(`  ${formatVerdict(r.verdict)}`);
  for (const [k, v] of Object.entries(r.figures || {})) lines.push(`  ${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`);
  return `${lines.join('\n')}\n`;
}

module.exports = { DRILLS, runDrills, formatReport };
