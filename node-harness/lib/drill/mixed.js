// The mixed-fleet drill (issue 10): a ringback worker dies at one of the worst instants with
// several callbacks in flight; ONLY legacy Node workers are alive while stall recovery hands the
// jobs back (the legacy worker drops a run whose claim it finds: `if (!claimed) return;`); once
// stall recovery has happened, a ringback worker joins again and its orphan sweep must text what
// the legacy worker dropped. Verdict per case: every run texted exactly once, none lost.
//
// At the `prod` timings (claim shorter than the lock) this is the exact case of the bug: on the
// v1 window the dead attempt's claim had expired before stall recovery, the legacy worker's
// SET NX succeeded and it texted a second time (3 of 12 runs at after-provider-accept).
//
// The legacy cases (a legacy worker dies after Twilio took its message, the recovery again by a
// legacy worker, then ringback joins) are only those where the legacy design does not lose by its
// own flaw: a legacy worker that dies holding its own `pending` claim before its provider call
// loses that callback (no peer can tell it was never sent), so those points are not drilled. Each
// legacy case runs one callback per dying legacy worker for the same reason (a sibling caught
// between its claim and its send would be lost by the design); runs the legacy worker failed to
// send itself are told apart by its log (Lab.legacyDrops).
'use strict';

const { Lab, runData, passed, stalledEvents } = require('./lab');
const { JOB_NAME, JOB_OPTIONS } = require('../legacy');
const { waitFor } = require('../harness/wait');

const MIN_IN_FLIGHT = 4;

const CASES = [
  { id: 'ringback@after-claim', dies: 'ringback', point: 'after-claim' },
  { id: 'ringback@after-provider-accept', dies: 'ringback', point: 'after-provider-accept' },
  { id: 'ringback@after-sent-marker', dies: 'ringback', point: 'after-sent-marker' },
  { id: 'ringback@before-complete', dies: 'ringback', point: 'before-complete' },
  { id: 'legacy@after-provider-accept', dies: 'legacy', point: 'after-provider-accept' },
  { id: 'legacy@before-complete', dies: 'legacy', point: 'before-complete' },
];

/** How many of `queue`'s jobs are not finished yet: {active, waiting}. */
async function unfinished(q) {
  const c = await q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused');
  return { active: c.active, waiting: c.wait + c.delayed + c.prioritized + c.paused };
}

/**
 * One case on a fresh queue of `lab`: returns the case report. `inFlight` callbacks, all in the
 * dying worker at once (its concurrency); `only` = the case ids to run (default all).
 */
async function mixedCase(lab, c, n, { inFlight, log }) {
  const { timings } = lab;
  const queueName = `drill-mixed-${n}`;
  const q = lab.queue(queueName);
  const data = Array.from({ length: inFlight }, (_, i) => runData(`mixed${n}${timings[0]}`, i));
  const concurrency = String(inFlight);
  const notes = [];
  const dying =
    c.dies === 'ringback'
      ? lab.ringbackWorker(`ringback@${c.point}`, queueName, { RINGBACK_CRASH_AT: c.point, RINGBACK_CONCURRENCY: concurrency })
      : lab.legacyWorker(`legacy@${c.point}`, queueName, { LEGACY_CRASH_AT: c.point, RINGBACK_CONCURRENCY: '1' });
  await dying.waitStarted();
  // a legacy worker dies with one callback; the others wait for the recovering legacy worker
  await q.addBulk(data.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
  const died = await dying.waitExit(30_000);
  const diedAt = Date.now();
  // Only legacy workers from here until stall recovery has handed every job back.
  const legacy = [lab.legacyWorker(`legacy recovering ${c.id}`, queueName, { RINGBACK_CONCURRENCY: '4' })];
  await legacy[0].waitStarted();
  log(`[mixed ${timings}] ${c.id}: ${dying.label} died (${died.signal || `exit ${died.code}`}); only a legacy worker is alive`);
  // Stall recovery: at least one `stalled` event, and no job left active or waiting (the legacy
  // worker took every job stall recovery handed back: sent it, or dropped it on the claim).
  let recovered = true;
  await waitFor(
    async () => {
      const u = await unfinished(q);
      return (await stalledEvents(lab, queueName)) >= 1 && u.active === 0 && u.waiting === 0;
    },
    Math.max(30_000, lab.t.lockMs * 4 + lab.t.stalledIntervalMs * 4),
    'stall recovery to hand every job back to the legacy worker',
    100,
  ).catch((err) => {
    recovered = false;
    notes.push(`stall recovery not seen: ${err.message.slice(0, 200)}`);
  });
  const stallRecoveredMs = Date.now() - diedAt;
  const beforeRejoin = await lab.textsByBody();
  const droppedByLegacy = data.filter((d) => !beforeRejoin.by.get(d.body)).length;
  // Then a ringback worker joins again (the legacy worker stays: a mixed fleet).
  const fresh = lab.ringbackWorker(`ringback rejoining ${c.id}`, queueName, { RINGBACK_CONCURRENCY: '4' });
  await fresh.waitStarted();
  const rejoinedAt = Date.now();
  const verdict = await lab.settle(data, [q], 60_000);
  const stalled = await stalledEvents(lab, queueName);
  const stops = [fresh, ...legacy].map(async (w) => {
    w.kill('SIGTERM');
    await w.waitExit(15_000).catch(() => w.destroy());
  });
  await Promise.all(stops);
  notes.push(`stall recovery by legacy alone in ${stallRecoveredMs} ms`, `${droppedByLegacy} of ${data.length} runs untexted when ringback rejoined`, `ringback rejoined → settled in ${Date.now() - rejoinedAt} ms`);
  const result = {
    case: c.id,
    timings,
    died: died.signal || `exit ${died.code}`,
    recoveredMs: Date.now() - diedAt,
    stallRecoveredMs,
    untextedAtRejoin: droppedByLegacy,
    ...verdict,
    ok: Boolean(died.signal) && recovered && stalled >= 1 && passed(verdict),
    stalledEvents: stalled,
    notes,
  };
  if (!passed(verdict)) {
    const wrong = [...verdict.lost, ...verdict.duplicates.map((d) => d.split('×')[0])];
    result.explain = await lab.explain(wrong, q);
  }
  log(`[mixed ${timings}] ${c.id}: ${result.ok ? 'ok' : 'FAILED'} (${verdict.texts} texts for ${verdict.runs} runs; duplicates ${verdict.duplicates.length}, lost ${verdict.lost.length})`);
  return result;
}

async function mixed({ runs = 24, version = '6', timings = 'prod', only, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'mixed', version, timings, log }).start();
  const cases = [];
  const chosen = only ? CASES.filter((c) => only.includes(c.id)) : CASES;
  const inFlight = Math.max(MIN_IN_FLIGHT, Math.ceil(runs / CASES.length));
  try {
    for (const c of chosen) cases.push(await mixedCase(lab, c, CASES.indexOf(c), { inFlight, log }));
  } finally {
    await lab.stop();
  }
  return { drill: 'mixed', timings, ok: cases.length > 0 && cases.every((c) => c.ok), cases };
}

module.exports = { mixed, mixedCase, CASES };
