// The rollback drill (a rollback loses nothing): ringback crashes at one of the worst
// instants with several callbacks in flight; the operator runs `ringback drain` (which must
// refuse, exit 3 naming it, while a ringback worker is alive: checked first, before the crash),
// then goes back to the legacy worker alone. Verdict per case: the drain exits 0 and leaves no
// attempt open, and with only legacy workers left every run is texted exactly once, none lost.
'use strict';

const { Lab, runData, passed, stalledEvents, OPEN_ATTEMPTS } = require('./lab');
const { JOB_NAME, JOB_OPTIONS } = require('../legacy');
const { waitFor, sleep } = require('../harness/wait');

const MIN_IN_FLIGHT = 4;
const CASES = [
  { id: 'ringback@after-claim', point: 'after-claim' },
  { id: 'ringback@after-provider-accept', point: 'after-provider-accept' },
  { id: 'ringback@after-sent-marker', point: 'after-sent-marker' },
];

/**
 * Runs `ringback drain` while `worker` (a live ringback worker) heartbeats: it must refuse with
 * exit 3 and name the worker (its pid). Returns {ok, code, ms, note}.
 */
async function drainRefuses(lab, queueName, worker) {
  // the heartbeat is written by the worker's sweep loop; wait for it rather than race it
  const named = (names) => names.some((n) => n.includes(`pid ${worker.pid} `));
  const seen = await waitFor(async () => named(await lab.heartbeats(60_000)), 10_000, `a heartbeat of ${worker.label}`, 50).then(
    () => true,
    () => false,
  );
  const d = await lab.drain(queueName, { timeoutMs: 10_000 });
  const namesIt = d.output.includes(`pid ${worker.pid} `);
  const ok = seen && d.code === 3 && namesIt;
  const note = `drain while ${worker.label} (pid ${worker.pid}) alive: exit ${d.code} in ${d.ms} ms${namesIt ? ', naming it' : ', NOT naming it'}${seen ? '' : ' (no heartbeat of it seen in 10 s)'}`;
  return { ok, code: d.code, ms: d.ms, note, output: d.output };
}

/**
 * The operator's drain after the crash: a crashed worker's heartbeat stays young for a few
 * seconds, so a refusal (exit 3) is retried each second for up to `refuseForMs`. Returns the
 * last drain's result and how many refusals came first.
 */
async function operatorDrain(lab, queueName, { refuseForMs = 20_000, timeoutMs = 60_000 } = {}) {
  const t0 = Date.now();
  let refusals = 0;
  for (;;) {
    const d = await lab.drain(queueName, { timeoutMs });
    if (d.code !== 3 || Date.now() - t0 > refuseForMs) return { ...d, refusals, totalMs: Date.now() - t0 };
    refusals += 1;
    await sleep(1000);
  }
}

async function rollbackCase(lab, c, n, { inFlight, log }) {
  const { timings } = lab;
  const queueName = `drill-rollback-${n}`;
  const q = lab.queue(queueName);
  const data = Array.from({ length: inFlight }, (_, i) => runData(`rollback${n}${timings[0]}`, i));
  const notes = [];
  const dying = lab.ringbackWorker(`ringback@${c.point}`, queueName, { RINGBACK_CRASH_AT: c.point, RINGBACK_CONCURRENCY: String(inFlight) });
  await dying.waitStarted();
  const refused = await drainRefuses(lab, queueName, dying);
  notes.push(refused.note);
  await q.addBulk(data.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
  const died = await dying.waitExit(30_000);
  const diedAt = Date.now();
  const openAtCrash = await lab.admin.zcard(OPEN_ATTEMPTS);
  log(`[rollback ${timings}] ${c.id}: ${dying.label} died (${died.signal || `exit ${died.code}`}) with ${openAtCrash} attempt(s) open; the operator drains`);
  const drain = await operatorDrain(lab, queueName);
  const openAfterDrain = await lab.admin.zrange(OPEN_ATTEMPTS, 0, -1);
  const textsNow = (await lab.textsByBody()).by;
  const textedByDrain = data.filter((d) => textsNow.get(d.body)).length;
  notes.push(
    `drain exit ${drain.code} in ${drain.ms} ms (${drain.refusals} refusal(s) while the dead worker's heartbeat was young; ${drain.totalMs} ms from the first try)` +
      (drain.report ? `, resolved ${drain.report.resolved?.length ?? '?'}, still open ${drain.report.still_open?.length ?? '?'}` : ''),
    `${openAtCrash} attempt(s) open at the crash, ${openAfterDrain.length} after the drain; ${textedByDrain} of ${data.length} runs texted when the legacy workers took over`,
  );
  // Back to the legacy worker alone.
  const legacy = [1, 2].map((i) => lab.legacyWorker(`legacy#${i} after rollback ${c.id}`, queueName, { RINGBACK_CONCURRENCY: '4' }));
  await Promise.all(legacy.map((w) => w.waitStarted()));
  // a failed drain leaves attempts open that no legacy worker resolves: no need to wait long
  const verdict = await lab.settle(data, [q], drain.code === 0 ? 60_000 : 15_000);
  const stalled = await stalledEvents(lab, queueName);
  await Promise.all(
    legacy.map(async (w) => {
      w.kill('SIGTERM');
      await w.waitExit(15_000).catch(() => w.destroy());
    }),
  );
  const result = {
    case: c.id,
    timings,
    died: died.signal || `exit ${died.code}`,
    recoveredMs: Date.now() - diedAt,
    drain: { code: drain.code, ms: drain.ms, refusals: drain.refusals, totalMs: drain.totalMs, report: drain.report, refusedWhileAlive: { code: refused.code, ms: refused.ms, ok: refused.ok } },
    ...verdict,
    ok: Boolean(died.signal) && refused.ok && drain.code === 0 && openAfterDrain.length === 0 && passed(verdict),
    stalledEvents: stalled,
    notes,
  };
  if (!result.ok) {
    const wrong = [...verdict.lost, ...verdict.duplicates.map((d) => d.split('×')[0]), ...openAfterDrain];
    result.explain = await lab.explain([...new Set(wrong)], q);
    result.drainOutput = drain.output.slice(-2000);
    if (!refused.ok) result.refusalOutput = refused.output.slice(-1000);
  }
  log(`[rollback ${timings}] ${c.id}: ${result.ok ? 'ok' : 'FAILED'} (drain exit ${drain.code}; ${verdict.texts} texts for ${verdict.runs} runs; duplicates ${verdict.duplicates.length}, lost ${verdict.lost.length})`);
  return result;
}

async function rollback({ runs = 24, version = '6', timings = 'prod', only, cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'rollback', version, timings, cluster, log }).start();
  const chosen = only ? CASES.filter((c) => only.includes(c.id)) : CASES;
  const inFlight = Math.max(MIN_IN_FLIGHT, Math.ceil(runs / CASES.length));
  const cases = [];
  try {
    for (const c of chosen) cases.push(await rollbackCase(lab, c, CASES.indexOf(c), { inFlight, log }));
  } finally {
    await lab.stop();
  }
  return { drill: 'rollback', timings, ok: cases.length > 0 && cases.every((c) => c.ok), cases };
}

module.exports = { rollback, rollbackCase, drainRefuses, operatorDrain, CASES };
