// The cutover drill: the legacy service (its `/api/notify/send` API and two legacy workers) is
// replaced by ringback, worker first, while an agent fleet keeps calling the API:
//   1. legacy API + legacy workers take the traffic;
//   2. ringback workers join the same queue (they share the claim keys with the legacy ones);
//   3. one legacy worker stops gracefully (SIGTERM), the other is SIGKILLed mid-flight, its
//      active jobs left to ringback's stall recovery;
//   4. `ringback serve` starts, the traffic moves to it, and the legacy API stops gracefully.
// Each agent call is made for a fresh run, and one in ten runs is called twice (an agent retrying
// its "done" call). The verdict: every run the APIs accepted is texted exactly once, and no call
// was refused during the switch (the loss window is zero).
'use strict';

const { Lab, SetupError, runData, passed, stalledEvents, API_TOKEN } = require('./lab');
const { sleep } = require('../harness/wait');

const QUEUE = 'drill-cutover';

const MIN_RUNS = 20;

async function cutover({ runs = 200, version = '6', timings = 'compressed', log = () => {} } = {}) {
  if (runs < MIN_RUNS) throw new SetupError(`cutover: --runs must be at least ${MIN_RUNS}, so that traffic flows through every phase`);
  const lab = await new Lab({ name: 'cutover', version, timings, log }).start();
  const phases = [];
  const mark = (what) => {
    phases.push(`${String(Date.now() - t0).padStart(6)} ms  ${what}`);
    log(`[cutover ${timings}] ${what}`);
  };
  let t0 = Date.now();
  try {
    const q = lab.queue(QUEUE);
    // Every send takes a while at Twilio, so that a worker killed at any instant has sends in
    // flight (well under the clients' timeouts).
    await lab.sim.putFaults({ create: [{ fault: 'slow', delay_ms: 150, created: true }] });
    const legacyApi = await lab.legacyApi(QUEUE);
    const legacy = [lab.legacyWorker('legacy#1', QUEUE), lab.legacyWorker('legacy#2', QUEUE)];
    await Promise.all(legacy.map((w) => w.waitStarted()));
    t0 = Date.now();
    mark(`legacy API at ${legacyApi.base} and 2 legacy workers take the traffic`);

    // The agent fleet: calls the API that `target` names, one run every few ms.
    let target = legacyApi.base;
    const data = Array.from({ length: runs }, (_, i) => runData('cut', i));
    const accepted = [];
    const refused = [];
    const callsBy = new Map();
    const call = async (d) => {
      const base = target;
      try {
        const res = await fetch(`${base}/api/notify/send`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${API_TOKEN}` },
          body: JSON.stringify(d),
        });
        if (res.status === 202 || res.status === 200) {
          accepted.push(d);
          callsBy.set(base, (callsBy.get(base) || 0) + 1);
        } else refused.push(`${d.runId}: ${res.status} ${await res.text()}`);
      } catch (err) {
        refused.push(`${d.runId}: ${err.cause?.code || err.message}`);
      }
    };
    const inflight = [];
    const at = (fraction) => Math.floor(runs * fraction);
    const steps = new Map([
      [at(0.25), async () => {
        const rb = [lab.ringbackWorker('ringback#1', QUEUE), lab.ringbackWorker('ringback#2', QUEUE)];
        await Promise.all(rb.map((w) => w.waitStarted()));
        mark('2 ringback workers joined the queue');
      }],
      [at(0.45), async () => {
        legacy[0].kill('SIGTERM');
        const info = await legacy[0].waitExit(15_000);
        mark(`legacy#1 stopped gracefully (exit ${info.code})`);
        legacy[1].kill('SIGKILL');
        await legacy[1].waitExit(5000);
        mark('legacy#2 SIGKILLed mid-flight: its jobs are left to stall recovery');
      }],
      [at(0.6), async () => {
        const serve = await lab.ringbackServe(QUEUE);
        target = serve.base;
        mark(`ringback serve at ${serve.base} takes the traffic`);
        legacyApi.process.kill('SIGTERM');
        const info = await legacyApi.process.waitExit(15_000);
        mark(`legacy API stopped gracefully (exit ${info.code}) after answering what was in flight`);
      }],
    ]);
    // Steps run beside the traffic (the fleet does not wait for an operator), one after another;
    // a step that fails is reported and fails the drill.
    const stepErrors = [];
    let pending = Promise.resolve();
    for (const [i, d] of data.entries()) {
      const step = steps.get(i);
      if (step) pending = pending.then(step).catch((err) => stepErrors.push(err.message));
      inflight.push(call(d));
      if (i % 10 === 3) inflight.push(call(d));
      await sleep(20);
    }
    await pending;
    await Promise.all(inflight);
    mark(`the fleet made ${inflight.length} calls for ${runs} runs`);
    const acceptedRuns = [...new Map(accepted.map((d) => [d.runId, d])).values()];
    const verdict = await lab.settle(acceptedRuns, [q], 60_000);
    mark(verdict.settled ? 'every accepted run texted; queue idle' : 'did not settle');
    const stalled = await stalledEvents(lab, QUEUE);
    const done = await q.getJobs(['completed'], 0, -1);
    const byWorker = { legacy: 0, ringback: 0 };
    // the legacy worker returns {sid}; ringback {runId, messageSid, …}; a legacy drop returns nothing
    for (const j of done) {
      const rv = j.returnvalue || {};
      if ('sid' in rv) byWorker.legacy += 1;
      else if ('messageSid' in rv) byWorker.ringback += 1;
    }
    const servedBy = (base) => callsBy.get(base) || 0;
    const ok =
      passed(verdict) &&
      refused.length === 0 &&
      acceptedRuns.length === runs &&
      stepErrors.length === 0 &&
      lab.failures.length === 0 &&
      phases.length === 8 &&
      servedBy(legacyApi.base) > 0 &&
      [...callsBy.keys()].some((b) => b !== legacyApi.base) &&
      byWorker.legacy > 0 &&
      byWorker.ringback > 0;
    return {
      drill: 'cutover',
      timings,
      ok,
      phases,
      verdict,
      figures: {
        'calls accepted by': Object.fromEntries([...callsBy].map(([b, n]) => [b === legacyApi.base ? 'legacy API' : 'ringback serve', n])),
        'calls refused': refused.length ? refused.slice(0, 10) : 0,
        'runs accepted': `${acceptedRuns.length} of ${runs}`,
        'jobs completed by': byWorker,
        'stalled jobs recovered': stalled,
        'step errors': stepErrors.length ? stepErrors : 0,
        'workers that failed by themselves': lab.failures.length ? lab.failures : 0,
      },
    };
  } finally {
    await lab.stop();
  }
}

module.exports = { cutover };
