// The SMS path on a real Redis Cluster (three masters with a replica each), end to end
// with real processes: the Node BullMQ producer (an ioredis Cluster, prefix `{bull}`), ringback
// workers and `ringback serve` given REDIS_URL=redis+cluster://…, the Twilio simulator counting
// texts. At the production timing ratios (lib/drill/lab.js `prod`: claim 3 s < lock 6 s, stall
// sweep 2 s).
//   - the receipt webhook: signed status callbacks to `ringback serve` reach the run's record
//     (the webhook's one Redis call is in the run's slot), a repeat is applied once, a forged
//     one is refused;
//   - faults with callbacks in flight (every create answered after 200 ms, so dozens are
//     between claim and sent marker when the fault lands) on the master of the queue's slot:
//     CLUSTER FAILOVER on its replica, SIGKILL of it (its replica promoted), and the slot's
//     migration to another master. Verdict at the simulator: every run texted exactly once, none
//     lost, no attempt left open, no job failed, no worker died;
//   - the crash drill on its own cluster, the mixed-fleet one (lib/drill/mixed.js) because it
//     keeps legacy workers alive: ringback killed at each window point (after-claim,
//     after-provider-accept, after-sent-marker: on a cluster before the completion) with several callbacks in
//     flight, only legacy workers alive through stall recovery, then ringback rejoining; and a
//     legacy worker killed after Twilio accepted. One text per run. (`ringback drill stall
//     --cluster` runs the same points with ringback recovering.)
// Legacy workers are left out of the fault cases: their claim (SET NX) is not made durable, so a
// master killed right after it can lose it and the legacy worker texts again; that is the legacy
// service's flaw, which the crash drill's legacy case shows where it holds.
'use strict';

const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const twilio = require('twilio');
const { Lab, runData, passed, API_TOKEN } = require('../lib/drill/lab');
const { mixed } = require('../lib/drill/mixed');
const { WorkerProcess } = require('../lib/harness/subject');
const { slotOf } = require('../lib/harness/cluster');
const { waitFor, sleep } = require('../lib/harness/wait');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');

// The URL Twilio would call, as serve is told (RINGBACK_PUBLIC_URL): signatures cover it.
const PUBLIC_URL = 'https://ringback.test';
const AUTH_TOKEN = 'drill-auth-token';
const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';

let lab;
before(async () => {
  lab = await new Lab({ name: 'cluster-sms', timings: 'prod', cluster: true }).start();
});
after(async () => {
  await lab?.stop();
});

/** The hash slot every `{bull}` queue lives in. */
const queueSlot = () => slotOf('{bull}:any');

describe('receipt webhook on a cluster', () => {
  it('signed status callbacks reach the runs\' records; a repeat is applied once; a forged one is refused', { timeout: 60_000 }, async () => {
    const QUEUE = 'cluster-receipts';
    const worker = lab.ringbackWorker('ringback worker (receipts)', QUEUE);
    const serveEnv = { ...lab.ringbackEnv(QUEUE), RINGBACK_API_TOKEN: API_TOKEN, RINGBACK_PUBLIC_URL: PUBLIC_URL };
    delete serveEnv.RINGBACK_METRICS_LISTEN;
    const serve = await lab.listening(lab.track(new WorkerProcess('ringback serve (receipts)', lab.bin, ['serve', '--listen', '127.0.0.1:0'], serveEnv)));
    await worker.waitStarted();
    try {
      const q = lab.queue(QUEUE);
      const runs = Array.from({ length: 4 }, (_, i) => runData('receipt', i));
      await q.addBulk(runs.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS, jobId: d.runId } })));
      const verdict = await lab.settle(runs, [q], 30_000);
      assert.ok(passed(verdict), `texted once each: ${JSON.stringify(verdict)}\n${worker.output().slice(-2000)}`);

      const record = async (runId) => {
        const res = await fetch(`${serve.base}/api/notify/callbacks/${encodeURIComponent(runId)}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
        assert.equal(res.status, 200, `GET the record of ${runId}: ${res.status}`);
        return res.json();
      };
      const post = async (runId, params, token = AUTH_TOKEN) => {
        const target = `/api/notify/webhook/status?runId=${encodeURIComponent(runId)}`;
        const res = await fetch(`${serve.base}${target}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilio.getExpectedTwilioSignature(token, `${PUBLIC_URL}${target}`, params) },
          body: new URLSearchParams(params).toString(),
        });
        return { status: res.status, body: await res.text() };
      };
      // runs hash to different slots: the receipts land on more than one master
      const claimSlots = new Set(runs.map((d) => slotOf(`agent-callback:${d.runId}`)));
      const outcomes = [
        ['delivered', {}],
        ['undelivered', { ErrorCode: '30003' }],
        ['delivered', {}],
        ['failed', { ErrorCode: '30006' }],
      ];
      for (const [i, d] of runs.entries()) {
        const { messageSid } = await record(d.runId);
        assert.match(String(messageSid), /^SM[0-9a-f]{32}$/);
        const [status, extra] = outcomes[i];
        const params = { AccountSid: ACCOUNT_SID, MessageSid: messageSid, MessageStatus: status, To: d.to, From: '+15005550006', ...extra };
        const first = await post(d.runId, params);
        assert.equal(first.status, 200, `status callback ${status} for ${d.runId}: ${first.status} ${first.body}`);
        const again = await post(d.runId, params);
        assert.equal(again.status, 200, 'a repeat is answered 200');
        const forged = await post(d.runId, { ...params, MessageStatus: 'delivered' }, 'not-the-token');
        assert.equal(forged.status, 403, 'a wrong signature is refused');
        const rec = await record(d.runId);
        assert.equal(rec.status, status, `${d.runId}: the record shows ${status}: ${JSON.stringify(rec)}`);
        const fromWebhook = rec.history.filter((h) => h.source === 'webhook' && h.status === status);
        assert.equal(fromWebhook.length, 1, `${d.runId}: the webhook's status once in the history: ${JSON.stringify(rec.history)}`);
      }
      assert.ok(claimSlots.size > 1, 'the runs are in several slots');
    } finally {
      worker.kill('SIGTERM');
      serve.process.kill('SIGTERM');
      await Promise.all([worker.waitExit(15_000).catch(() => worker.destroy()), serve.process.waitExit(15_000).catch(() => serve.process.destroy())]);
    }
  });
});

/**
 * Two ringback workers on a fresh queue, the simulator answering every create after `slowMs`;
 * `runs` callbacks enqueued in three waves; `fault(slot)` once the first texts are in; then the
 * verdict. Returns {verdict, what, failed, workersDied}.
 */
async function smsUnderFault(name, fault, { runs = 120, slowMs = 200 } = {}) {
  const QUEUE = `cluster-${name}`;
  await lab.sim.putFaults({ create: [{ rate: 1, fault: 'slow', delay_ms: slowMs, created: true }] });
  const workers = [lab.ringbackWorker(`ringback-a (${name})`, QUEUE), lab.ringbackWorker(`ringback-b (${name})`, QUEUE)];
  try {
    await Promise.all(workers.map((w) => w.waitStarted()));
    const q = lab.queue(QUEUE);
    const data = Array.from({ length: runs }, (_, i) => runData(name, i));
    const before = (await lab.simStats()).total;
    // A producer that meets TRYAGAIN (keys of the slot on both masters) or NOSCRIPT (the new
    // master has not loaded BullMQ's script yet) while the queue's slot migrates adds the wave
    // again, as a real producer retries (a run added twice is still texted once).
    const addWave = async (jobs) => {
      for (let tries = 0; ; tries += 1) {
        try {
          return await q.addBulk(jobs);
        } catch (e) {
          if (!/TRYAGAIN|NOSCRIPT/.test(String(e && e.message)) || tries >= 50) throw e;
          await sleep(100);
        }
      }
    };
    const adding = (async () => {
      for (let w = 0; w < 3; w += 1) {
        const wave = data.filter((_, i) => i % 3 === w);
        await addWave(wave.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
        await sleep(500);
      }
    })();
    adding.catch(() => {}); // surfaced at `await adding` below, not as an unhandled rejection
    await waitFor(async () => (await lab.simStats()).total - before >= 10, 20_000, 'the first texts', 50);
    const what = await fault(queueSlot());
    await adding;
    const verdict = await lab.settle(data, [q], 90_000);
    const failed = await q.getFailed();
    const workersDied = workers.filter((w) => !w.running).map((w) => `${w.label}: ${JSON.stringify(w.exitInfo)} ${w.output().slice(-600)}`);
    if (!passed(verdict) || failed.length || workersDied.length) {
      const bad = [...verdict.duplicates.map((d) => d.split('×')[0]), ...verdict.lost].slice(0, 5);
      process.stderr.write(`\n===== ${name} =====\n${JSON.stringify(await lab.explain(bad, q), null, 1)}\n${workers.map((w) => `--- ${w.label}\n${w.output().slice(-3000)}`).join('\n')}\n`);
    }
    return { verdict, what, failed: failed.map((j) => `${j.id}: ${j.failedReason}`), workersDied };
  } finally {
    await lab.sim.putFaults({ create: [] });
    for (const w of workers) w.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.waitExit(15_000).catch(() => w.destroy())));
  }
}

function assertOneTextPerRun(r, t) {
  t.diagnostic(`fault ${JSON.stringify(r.what)}; texts ${r.verdict.texts} for ${r.verdict.runs} runs, settled in ${r.verdict.settleMs} ms`);
  assert.ok(passed(r.verdict), `one text per run: ${JSON.stringify({ ...r.verdict, duplicates: r.verdict.duplicates.slice(0, 10), lost: r.verdict.lost.slice(0, 10) })}`);
  assert.deepEqual(r.failed, [], 'no job failed');
  assert.deepEqual(r.workersDied, [], 'no worker died');
}

describe('faults on the queue master with SMS callbacks in flight', () => {
  it('CLUSTER FAILOVER on its replica', { timeout: 150_000 }, async (t) => {
    const r = await smsUnderFault('failover', (slot) => lab.redis.failover(slot));
    assertOneTextPerRun(r, t);
  });

  it('SIGKILL of the master (its replica promoted)', { timeout: 150_000 }, async (t) => {
    let killed;
    const r = await smsUnderFault('kill-master', async (slot) => {
      killed = await lab.redis.killMaster(slot);
      return { killed: killed.killed, promoted: killed.promoted, ms: killed.ms };
    });
    // three masters with a replica each again, for what follows
    await killed.restart();
    assertOneTextPerRun(r, t);
  });

  it("a migration of the queue's slot to another master", { timeout: 150_000 }, async (t) => {
    const r = await smsUnderFault('migrate', (slot) => lab.redis.migrateSlot(slot, { batch: 20, pauseMs: 10 }));
    assert.ok(r.what.keys > 0);
    assertOneTextPerRun(r, t);
  });
});

describe('crash drill on a cluster', () => {
  it('ringback killed at every window point, legacy workers alive; a legacy worker killed after Twilio accepted: one text per run (prod timings)', { timeout: 240_000 }, async (t) => {
    const only = ['ringback@after-claim', 'ringback@after-provider-accept', 'ringback@after-sent-marker', 'legacy@after-provider-accept'];
    const report = await mixed({ runs: 72, timings: 'prod', cluster: true, only, log: (l) => t.diagnostic(l) });
    assert.equal(report.cases.length, only.length);
    for (const c of report.cases) t.diagnostic(`${c.ok ? 'ok' : 'FAILED'} ${c.case}: died ${c.died}, recovered in ${c.recoveredMs} ms, texts ${c.texts}/${c.runs}`);
    assert.ok(report.ok, JSON.stringify(report.cases.filter((c) => !c.ok), null, 1));
  });
});
