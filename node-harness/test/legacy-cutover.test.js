// The legacy Node worker and ringback on one queue, both crashing at the worst instants and
// restarted by a supervisor: every run is texted exactly once (counted at the simulator).
// Built on the drills' lab (lib/drill/lab.js): the same processes and settings as the drills.
//
// Legacy crashes are drawn only after its provider call (after-provider-accept,
// before-complete), and each legacy worker runs one job at a time: a legacy worker that dies
// right after its own claim (itself, or a sibling job's crash taking the process down) loses
// the callback by the legacy design (`if (!claimed) return;` on its own retry), which no peer
// can see or repair: the legacy claim holds no message. The same holds when the legacy
// worker's provider call fails; those runs are told apart by its log (Lab.legacyDrops).
'use strict';

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');
const { Lab, runData, timingProfiles } = require('../lib/drill/lab');
const { VERSIONS } = require('../lib/bullmq');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');

const RUNS = 40;
const RINGBACK_POINTS = ['after-claim', 'after-provider-accept', 'after-sent-marker'];
const LEGACY_POINTS = ['after-provider-accept', 'before-complete'];
const QUEUE = 'cutover';

// Each timing profile (compressed, and prod: the claim's liveness shorter than the lock).
for (const timings of timingProfiles())
for (const version of process.env.CUTOVER_VERSIONS ? process.env.CUTOVER_VERSIONS.split(',') : VERSIONS) {
  describe(`legacy worker and ringback share a queue, crashing [bullmq v${version}, ${timings}]`, () => {
    it('texts every run exactly once', { timeout: 180_000 }, async (t) => {
      const lab = await new Lab({ name: `cutover-v${version}-${timings}`, version, timings }).start();
      try {
        lab.supervise('ringback', (i) =>
          lab.ringbackWorker(`ringback#${i}`, QUEUE, {
            RINGBACK_CONCURRENCY: '4',
            RINGBACK_CRASH_AT: `${RINGBACK_POINTS[i % RINGBACK_POINTS.length]}:0.15`,
          }),
        );
        lab.supervise('legacy', (i) =>
          lab.legacyWorker(`legacy#${i}`, QUEUE, {
            RINGBACK_CONCURRENCY: '1',
            LEGACY_CRASH_AT: `${LEGACY_POINTS[i % LEGACY_POINTS.length]}:0.3`,
          }),
        );
        const q = lab.queue(QUEUE);
        const runs = Array.from({ length: RUNS }, (_, i) => runData(`cut${version}`, i));
        await q.addBulk(runs.map((data) => ({ name: JOB_NAME, data, opts: { ...JOB_OPTIONS } })));
        const verdict = await lab.settle(runs, [q], 90_000);
        const wrong = [...verdict.lost, ...verdict.duplicates.map((d) => d.split('×')[0])];
        assert.ok(verdict.settled, `did not settle: ${JSON.stringify(verdict)}\n${JSON.stringify(await lab.explain(wrong, q), null, 1)}`);
        assert.deepEqual(verdict.duplicates, [], `runs texted more than once (crashes: ${JSON.stringify(lab.crashes)})`);
        assert.deepEqual(verdict.lost, []);
        // a run the legacy worker itself failed to send is dropped by its own retry (the legacy
        // flaw); every other run is texted once
        assert.equal(verdict.texts + verdict.legacyDropped.length, RUNS);
        if (verdict.legacyDropped.length) t.diagnostic(`dropped by the legacy design: ${verdict.legacyDropped}`);
        assert.deepEqual(lab.failures, [], 'no worker exited by itself');
        t.diagnostic(`crashes survived: ${JSON.stringify(lab.crashes)}`);
      } finally {
        await lab.stop();
      }
    });
  });
}
