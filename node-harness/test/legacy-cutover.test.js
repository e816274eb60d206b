// The legacy Node worker and ringback on one queue, both crashing at the worst instants and
// restarted by a supervisor: every run is texted exactly once (counted at the simulator).
//
// Legacy crashes are drawn only after its provider call (after-provider-accept,
// before-complete): a legacy crash right after its own claim loses the callback by the legacy
// design (`if (!claimed) return;` on its own retry), which no peer can see or repair.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, it } = require('node:test');
const IORedis = require('ioredis');
const { startRedis } = require('../lib/harness/redis');
const { startTwilioSim, ringbackBin } = require('../lib/harness/twilio-sim');
const { WorkerProcess } = require('../lib/harness/subject');
const { waitFor } = require('../lib/harness/wait');
const { load, connectionFromUrl, VERSIONS } = require('../lib/bullmq');
const { JOB_NAME, JOB_OPTIONS, callbackData } = require('../lib/legacy');

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
const AUTH_TOKEN = 'cutover-token';
const RUNS = 40;
const RINGBACK_POINTS = ['after-claim', 'after-provider-accept', 'after-sent-marker', 'before-complete'];
const LEGACY_POINTS = ['after-provider-accept', 'before-complete'];

for (const version of process.env.CUTOVER_VERSIONS ? process.env.CUTOVER_VERSIONS.split(",") : VERSIONS) {
  describe(`legacy worker and ringback share a queue, crashing [bullmq v${version}]`, () => {
    it('texts every run exactly once', { timeout: 120_000 }, async (t) => {
      const redis = await startRedis();
      const sim = await startTwilioSim({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
      const queue = `cutover-v${version}-${Date.now()}`;
      const common = {
        ...process.env,
        NO_COLOR: '1',
        RUST_LOG: 'warn',
        REDIS_URL: redis.url,
        RINGBACK_QUEUE: queue,
        BULLMQ_VERSION: version,
        RINGBACK_CONCURRENCY: '4',
        RINGBACK_LOCK_DURATION_MS: '1000',
        RINGBACK_STALLED_INTERVAL_MS: '300',
        // crashes are frequent here: a job may stall several times before it is done
        RINGBACK_MAX_STALLED_COUNT: '20',
        TWILIO_ACCOUNT_SID: ACCOUNT_SID,
        TWILIO_AUTH_TOKEN: AUTH_TOKEN,
        TWILIO_FROM: '+15005550006',
        TWILIO_API_BASE: sim.base,
      };
      const ringbackEnv = (i) => ({
        ...common,
        RINGBACK_DRAIN_DELAY_MS: '300',
        RINGBACK_PENDING_TTL_MS: '3000',
        RINGBACK_RECONCILE_WINDOW_MS: '1500',
        RINGBACK_RECONCILE_POLL_MS: '200',
        TWILIO_TIMEOUT_MS: '500',
        RINGBACK_CRASH_AT: `${RINGBACK_POINTS[i % RINGBACK_POINTS.length]}:0.15`,
      });
      const legacyEnv = (i) => ({ ...common, LEGACY_CRASH_AT: `${LEGACY_POINTS[i % LEGACY_POINTS.length]}:0.3` });

      // Supervisors: restart each worker whenever it dies, with the next crash point.
      let stopping = false;
      const crashes = { ringback: 0, legacy: 0 };
      const live = [];
      const supervise = (name, start) => {
        let i = 0;
        const loop = async () => {
          while (!stopping) {
            const w = start(i++);
            live.push(w);
            const info = await w.exit;
            if (!stopping && info.signal) crashes[name] += 1;
          }
        };
        return loop();
      };
      const bin = ringbackBin();
      const legacyBin = path.join(__dirname, '..', 'bin', 'legacy-worker.js');
      const loops = [
        supervise('ringback', (i) => new WorkerProcess(`ringback#${i}`, bin, ['worker'], ringbackEnv(i))),
        supervise('legacy', (i) => new WorkerProcess(`legacy#${i}`, process.execPath, [legacyBin], legacyEnv(i))),
      ];

      const { Queue } = load(version);
      const q = new Queue(queue, { connection: connectionFromUrl(redis.url) });
      const runs = Array.from({ length: RUNS }, (_, i) => callbackData(i, `cut${version}`));
      await q.addBulk(runs.map((data) => ({ name: JOB_NAME, data, opts: { ...JOB_OPTIONS } })));
      const r = new IORedis(redis.url);
      let last = {};
      try {
        await waitFor(
          async () => {
            const counts = await q.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'completed', 'failed');
            const open = await r.zrange('ringback:open-attempts:agent-callback:', 0, -1);
            const res = await fetch(`${sim.base}/sim/stats`);
            const stats = await res.json();
            const idle = counts.wait + counts.active + counts.delayed + counts.prioritized === 0;
            const missing = runs.filter((d) => !(stats.by_to[d.to] >= 1)).map((d) => d.runId);
            last = { counts, open, missing, crashes, texts: stats.total };
            return idle && open.length === 0 && missing.length === 0;
          },
          90_000,
          'every run texted and the queue idle',
        ).catch(async (err) => {
          const details = [];
          const failed = await q.getFailed();
          details.push(failed.map((j) => [j.id, j.data.runId, j.failedReason, j.attemptsMade]));
          for (const id of [...(last.missing || []), ...(last.open || [])]) {
            details.push([id, await r.get(`agent-callback:${id}`), await r.pttl(`agent-callback:${id}`), await r.hgetall(`ringback:attempt:{agent-callback:${id}}`), await r.zscore('ringback:open-attempts:agent-callback:', id), Date.now()]);
          }
          throw new Error(`${err.message}\n${JSON.stringify(last)}\n${JSON.stringify(details)}`);
        });
        const stats = await (await fetch(`${sim.base}/sim/stats`)).json();
        const counts = runs.map((d) => [d.runId, stats.by_to[d.to] || 0]);
        const wrong = counts.filter(([, n]) => n !== 1);
        assert.deepEqual(wrong, [], `runs not texted exactly once (crashes: ${JSON.stringify(crashes)})`);
        assert.equal(stats.total, RUNS);
        t.diagnostic(`crashes survived: ${JSON.stringify(crashes)}`);
      } finally {
        stopping = true;
        for (const w of live) await w.destroy();
        await Promise.all(loops);
        await r.quit();
        await q.close();
        await sim.stop();
        await redis.stop();
      }
    });
  });
}
