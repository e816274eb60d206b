// The legacy Node worker and ringback on one queue, both crashing at the worst instants and
// restarted by a supervisor: every run is texted exactly once (counted at the simulator).
// Built on the drills' lab (lib/drill/lab.js): the same processes and settings as the drills.
//
// Legacy crashes are drawn only after its provider call (after-provider-accept,
// before-complete): a legacy crash right after its own claim loses the callback by the legacy
// design (`if (!claimed) return;` on its own retry), which no peer can see or repair.
'use strict';

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');
const { Lab, runData } = require('../lib/drill/lab');
const { VERSIONS } = require('../lib/bullmq');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');

const RUNS = 40;
const RINGBACK_POINTS = ['after-claim', 'after-provider-accept', 'after-sent-marker', 'before-complete'];
const LEGACY_POINTS = ['after-provider-accept', 'before-complete'];
const QUEUE = 'cutover';

for (const version of process.env.CUTOVER_VERSIONS ? process.env.CUTOVER_VERSIONS.split(',') : VERSIONS) {
  describe(`legacy worker and ringback share a queue, crashing [bullmq v${version}]`, () => {
    it('texts every run exactly once', { timeout: 120_000 }, async (t) => {
      const lab = await new Lab({ name: `cutover-v${version}`, version }).start();
      try {
        lab.supervise('ringback', (i) =>
          lab.ringbackWorker(`ringback#${i}`, QUEUE, {
            RINGBACK_CONCURRENCY: '4',
            RINGBACK_CRASH_AT: `${RINGBACK_POINTS[i % RINGBACK_POINTS.length]}:0.15`,
          }),
        );
        lab.supervise('legacy', (i) =>
          lab.legacyWorker(`legacy#${i}`, QUEUE, { LEGACY_CRASH_AT: `${LEGACY_POINTS[i % LEGACY_POINTS.length]}:0.3` }),
        );
        const q = lab.queue(QUEUE);
        const runs = Array.from({ length: RUNS }, (_, i) => runData(`cut${version}`, i));
        await q.addBulk(runs.map((data) => ({ name: JOB_NAME, data, opts: { ...JOB_OPTIONS } })));
        const verdict = await lab.settle(runs, [q], 90_000);
        assert.ok(verdict.settled, `did not settle: ${JSON.stringify(verdict)}`);
        assert.deepEqual(verdict.duplicates, [], `runs texted more than once (crashes: ${JSON.stringify(lab.crashes)})`);
        assert.deepEqual(verdict.lost, []);
        assert.equal(verdict.texts, RUNS);
        assert.deepEqual(lab.failures, [], 'no worker exited by itself');
        t.diagnostic(`crashes survived: ${JSON.stringify(lab.crashes)}`);
      } finally {
        await lab.stop();
      }
    });
  });
}
