// The mixed-fleet drill: a ringback worker dies at one of the worst instants with
// several callbacks in flight; ONLY legacy Node workers are alive while stall recovery hands the
// jobs back (the legacy worker drops a run whose claim it finds: `if (!claimed) return;`); once
// stall recovery has happened, a ringback worker joins again and its orphan sweep must text what
// the legacy worker dropped. Verdict per case: every run texted exactly once, none lost.
//
// At the `prod` timings (claim shorter than the lock) this is the model's v1 counterexample
// (docs/model-counterexample.md): a window whose claim expires with the dead attempt's liveness
// lets the legacy worker's SET NX succeed after stall recovery, and the run is texted twice.
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

// At least 4 callbacks in flight in the worker that dies; the default --runs gives 12 per case,
// enough for that flaw to show as runs texted twice.
const MIN_IN_FLIGHT = 4;

const CASES = [
  { id: 'ringback@after-claim', dies: 'ringback', point: 'after-claim' },
  { id: 'ringback@after-provider-accept', dies: 'ringback', point: 'after-provider-accept' },
  { id: 'ringback@after-sent-marker', dies: 'ringback', point: 'after-sent-marker' },
  // The stall limit fails the jobs (maxStalledCount 0 on the legacy worker
  // that runs the stall check) with an attempt open or before any attempt; the rejoining ringback
  // worker must still text each run once. The last one throttles the sweep's create (429: the
  // first create of each run untexted when ringback rejoins): the sweep must retry it, since no
  // job is left to.
  { id: 'ringback@after-claim+stall-limit', dies: 'ringback', point: 'after-claim', maxStalled: 0 },
  { id: 'ringback@after-provider-accept+stall-limit', dies: 'ringback', point: 'after-provider-accept', maxStalled: 0 },
  { id: 'ringback@after-claim+stall-limit+429', dies: 'ringback', point: 'after-claim', maxStalled: 0, throttle: true },
  { id: 'legacy@after-provider-accept', dies: 'legacy', point: 'after-provider-accept' },
  { id: 'legacy@before-complete', dies: 'legacy', point: 'before-complete' },
];

/** How many of `queue`'s jobs are not finished yet: {active, waiting, failed}. */
async function unfinished(q) {
  const c = await q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused', 'failed');
  return { active: c.active, waiting: c.wait + c.delayed + c.prioritized + c.paused, failed: c.failed };
}

const STALL_LIMIT = /stalled more than allowable limit/;

/**
 * One case on a fresh queue of `lab`: returns the case report. `inFlight` callbacks, all in the
 * dying ringback worker at once (its concurrency; a dying legacy worker runs one at a time).
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
  const limit = c.maxStalled === undefined ? {} : { RINGBACK_MAX_STALLED_COUNT: String(c.maxStalled) };
  const legacy = [lab.legacyWorker(`legacy recovering ${c.id}`, queueName, { RINGBACK_CONCURRENCY: '4', ...limit })];
  await legacy[0].waitStarted();
  log(`[mixed ${timings}] ${c.id}: ${dying.label} died (${died.signal || `exit ${died.code}`}); only a legacy worker is alive`);
  // Stall recovery: at least one `stalled` event (or a job the stall limit failed), and no job
  // left active or waiting (the legacy worker took every job stall recovery handed back: sent it,
  // or dropped it on the claim).
  let recovered = true;
  await waitFor(
    async () => {
      const u = await unfinished(q);
      return ((await stalledEvents(lab, queueName)) >= 1 || u.failed >= 1) && u.active === 0 && u.waiting === 0;
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
  const untexted = data.filter((d) => !beforeRejoin.by.get(d.body));
  const droppedByLegacy = untexted.length;
  // the first create of every run still untexted is answered 429 (the rejoining worker's sweep)
  if (c.throttle) await lab.sim.putFaults({ create: untexted.map((d) => ({ to: d.to, times: 1, fault: 'rate_limited', retry_after_s: 1 })) });
  // Then a ringback worker joins again (the legacy worker stays: a mixed fleet).
  const fresh = lab.ringbackWorker(`ringback rejoining ${c.id}`, queueName, { RINGBACK_CONCURRENCY: '4' });
  await fresh.waitStarted();
  const rejoinedAt = Date.now();
  const verdict = await lab.settle(data, [q], 60_000);
  const stalled = await stalledEvents(lab, queueName);
  const limitFailed = (await q.getFailed()).filter((j) => STALL_LIMIT.test(j.failedReason || '')).length;
  if (c.throttle) await lab.sim.putFaults({ create: [] });
  if (c.maxStalled !== undefined) notes.push(`${limitFailed} job(s) failed by the stall limit`);
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
    ok: Boolean(died.signal) && recovered && (c.maxStalled === undefined ? stalled >= 1 : limitFailed >= 1) && passed(verdict),
    stallLimitFailures: limitFailed,
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

/** The drill: every case of CASES (or those `only` names) in one lab at `timings`. */
async function mixed({ runs = 108, version = '6', timings = 'prod', only, cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'mixed', version, timings, cluster, log }).start();
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
