// At production ratios (claim shorter than the lock, as the defaults): a mixed fleet of legacy
// Node and ringback workers, and the rollback to the legacy worker alone.
//
// The replay is the model's v1 counterexample (docs/model-counterexample.md): a ringback worker dies
// after Twilio accepted (RINGBACK_CRASH_AT=after-provider-accept) with 4 callbacks in flight, at
// RINGBACK_PENDING_TTL_MS=3000, RINGBACK_LOCK_DURATION_MS=6000, RINGBACK_STALLED_INTERVAL_MS=2000;
// only the legacy worker is alive while stall recovery hands the jobs back (after the dead
// attempt's 3 s claim), then a ringback worker joins again. A window whose claim expires with the
// attempt's liveness (v1) lets the legacy worker's SET NX succeed and text a second time; every
// run must be texted once.
//
// `ringback drain` must refuse (exit 3, naming the worker) while a ringback worker is alive, and
// exit 0 once it stopped with nothing open; the rollback case: crash with callbacks in flight,
// drain, then the legacy worker alone, one text per run.
'use strict';

const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { Lab, TIMINGS } = require('../lib/drill/lab');
const { mixedCase, CASES: MIXED } = require('../lib/drill/mixed');
const { rollbackCase, drainRefuses, operatorDrain, CASES: ROLLBACK } = require('../lib/drill/rollback');
const { runData } = require('../lib/drill/lab');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');

const IN_FLIGHT = 4;

/** Failure message: the verdict and what Redis and the workers' logs say about the wrong runs. */
const why = (c) => JSON.stringify(c, null, 1).slice(0, 12_000);

describe('mixed fleet and rollback at production timings', () => {
  let lab;
  before(async () => {
    // the replay's settings, stated: claim 3000 ms < lock 6000 ms, stall sweep 2000 ms
    assert.deepEqual(TIMINGS.prod, { pendingTtlMs: 3000, lockMs: 6000, stalledIntervalMs: 2000 });
    lab = await new Lab({ name: 'mixed-fleet', timings: 'prod' }).start();
  });
  after(async () => {
    await lab?.stop();
  });

  it('replay: ringback dies after-provider-accept with 4 in flight, only legacy recovers, ringback rejoins: one text per run', { timeout: 60_000 }, async () => {
    const c = MIXED.find((x) => x.id === 'ringback@after-provider-accept');
    const r = await mixedCase(lab, c, 100, { inFlight: IN_FLIGHT, log: () => {} });
    assert.equal(r.died, 'SIGABRT', why(r));
    assert.ok(r.stalledEvents >= 1, `recovered through stall recovery: ${why(r)}`);
    assert.ok(r.settled, why(r));
    assert.deepEqual(r.duplicates, [], `texted twice: ${why(r)}`);
    assert.deepEqual(r.lost, [], `never texted: ${why(r)}`);
    assert.equal(r.texts, IN_FLIGHT, why(r));
    assert.ok(r.ok, why(r));
  });

  it('drain refuses while a ringback worker is alive (exit 3, naming it), exits 0 once it stopped with nothing open', { timeout: 60_000 }, async () => {
    const q = 'drain-refuses';
    const w = lab.ringbackWorker('ringback alive', q);
    await w.waitStarted();
    const refused = await drainRefuses(lab, q, w);
    assert.ok(refused.ok, `${refused.note}\n${refused.output}`);
    w.kill('SIGTERM');
    await w.waitExit(15_000);
    const d = await lab.drain(q, { timeoutMs: 10_000 });
    assert.equal(d.code, 0, d.output);
    assert.ok(d.report, `--json report on stdout: ${d.output}`);
    assert.deepEqual(d.report.still_open, [], d.output);
  });

  it('rollback: crash after-provider-accept with 4 in flight, drain, then legacy alone: one text per run', { timeout: 60_000 }, async () => {
    const c = ROLLBACK.find((x) => x.id === 'ringback@after-provider-accept');
    const r = await rollbackCase(lab, c, 101, { inFlight: IN_FLIGHT, log: () => {} });
    assert.equal(r.drain.refusedWhileAlive.code, 3, why(r));
    assert.equal(r.drain.code, 0, why(r));
    assert.deepEqual(r.duplicates, [], why(r));
    assert.deepEqual(r.lost, [], why(r));
    assert.equal(r.texts, IN_FLIGHT, why(r));
    assert.ok(r.ok, why(r));
  });

  it('drain gives up at --timeout-ms with an attempt still open (Twilio answers 503): exit 4, listed; a later drain sends it once', { timeout: 60_000 }, async () => {
    const queueName = 'drain-timeout';
    const q = lab.queue(queueName);
    const data = [0, 1].map((i) => runData('draintimeout', i));
    const dying = lab.ringbackWorker('ringback@after-claim (timeout)', queueName, { RINGBACK_CRASH_AT: 'after-claim', RINGBACK_CONCURRENCY: '2' });
    await dying.waitStarted();
    await q.addBulk(data.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
    await dying.waitExit(30_000);
    await lab.sim.putFaults({ create: [{ fault: 'server_error', status: 503, created: false }] });
    try {
      const d = await operatorDrain(lab, queueName, { timeoutMs: 4000 });
      assert.equal(d.code, 4, d.output);
      assert.ok(d.report && d.report.still_open.length >= 1, d.output);
      for (const run of d.report.still_open) assert.match(d.output, new RegExp(`still open[^\\n]*${run}`), d.output);
    } finally {
      await lab.sim.putFaults({ create: [] });
    }
    const again = await operatorDrain(lab, queueName, { timeoutMs: 20_000 });
    assert.equal(again.code, 0, again.output);
    const { by } = await lab.textsByBody();
    // the crashed run was drained: texted once; a sibling with no attempt waits for a worker
    const texted = data.filter((d) => by.get(d.body));
    for (const d of texted) assert.equal(by.get(d.body), 1, `${d.runId} texted ${by.get(d.body)} times`);
    assert.ok(texted.length >= 1, 'the drained run was texted');
  });
});
