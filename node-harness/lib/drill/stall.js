// The stall drill: a worker dies at each of the worst instants with several callbacks in flight,
// and a fresh worker recovers them through stall recovery alone. One case per instant:
//   ringback at after-claim, after-provider-accept, after-sent-marker, before-complete
//     (RINGBACK_CRASH_AT, an abort as kill -9 would), recovered by a fresh ringback worker;
//   legacy at after-provider-accept (the legacy worker SIGKILLs itself after Twilio took the
//     message, before its `sent` marker), recovered by ringback.
// Each case: every callback texted exactly once, none lost; how long recovery took.
'use strict';

const { Lab, runData, passed, stalledEvents } = require('./lab');
const { JOB_NAME, JOB_OPTIONS } = require('../legacy');

const CASES = [
  { id: 'ringback@after-claim', dies: 'ringback', point: 'after-claim' },
  { id: 'ringback@after-provider-accept', dies: 'ringback', point: 'after-provider-accept' },
  { id: 'ringback@after-sent-marker', dies: 'ringback', point: 'after-sent-marker' },
  { id: 'ringback@before-complete', dies: 'ringback', point: 'before-complete' },
  { id: 'legacy@after-provider-accept', dies: 'legacy', point: 'after-provider-accept' },
];

async function stall({ runs = 20, version = '6', timings = 'compressed', cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'stall', version, timings, cluster, log }).start();
  const perCase = Math.max(2, Math.ceil(runs / CASES.length));
  const cases = [];
  try {
    for (const [n, c] of CASES.entries()) {
      const queueName = `drill-stall-${n}`;
      const q = lab.queue(queueName);
      const data = Array.from({ length: perCase }, (_, i) => runData(`stall${n}`, i));
      // Every callback in flight at once in the worker that dies.
      const concurrency = String(perCase);
      const dying =
        c.dies === 'ringback'
          ? lab.ringbackWorker(`ringback@${c.point}`, queueName, { RINGBACK_CRASH_AT: c.point, RINGBACK_CONCURRENCY: concurrency })
          : lab.legacyWorker(`legacy@${c.point}`, queueName, { LEGACY_CRASH_AT: c.point, RINGBACK_CONCURRENCY: concurrency });
      await dying.waitStarted();
      await q.addBulk(data.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
      const died = await dying.waitExit(30_000);
      const diedAt = Date.now();
      log(`[stall ${timings}] ${c.id}: ${dying.label} died (${died.signal || `exit ${died.code}`}); starting a fresh ringback worker`);
      const fresh = lab.ringbackWorker(`ringback recovering ${c.id}`, queueName);
      await fresh.waitStarted();
      const verdict = await lab.settle(data, [q], 45_000);
      const stalled = await stalledEvents(lab, queueName);
      fresh.kill('SIGTERM');
      await fresh.waitExit(15_000).catch(() => fresh.destroy());
      cases.push({
        case: c.id,
        timings,
        died: died.signal || `exit ${died.code}`,
        recoveredMs: Date.now() - diedAt,
        ...verdict,
        // died by the drill's signal, recovered through stall recovery, one text per run
        ok: Boolean(died.signal) && stalled >= 1 && passed(verdict),
        stalledEvents: stalled,
      });
      log(`[stall ${timings}] ${c.id}: ${passed(verdict) ? 'ok' : 'FAILED'} (${verdict.texts} texts for ${verdict.runs} runs)`);
    }
  } finally {
    await lab.stop();
  }
  return { drill: 'stall', timings, ok: cases.every((c) => c.ok), cases };
}

module.exports = { stall, CASES };
