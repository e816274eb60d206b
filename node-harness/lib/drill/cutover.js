// The cutover drill: the legacy service (its `/api/notify/send` API and two legacy workers) is
// replaced by ringback, worker first, while an agent fleet keeps calling ONE fixed address, the
// legacy API's port 3000 on 127.0.0.1 and ::1, from the first call to the last (the real
// caller is an old app posting to localhost:3000 that can be neither reconfigured nor made
// to retry):
//   1. legacy API (on [::]:3000, both families) + legacy workers take the traffic;
//   2. ringback workers join the same queue (they share the claim keys with the legacy ones);
//   3. one legacy worker stops gracefully (SIGTERM), the other is SIGKILLed mid-flight, its
//      active jobs left to ringback's stall recovery;
//   4. the port handover: `ringback serve` starts on a port of its own and answers /readyz;
//      an nftables redirect (port-handover.nft) sends new connections to port 3000 to it; the
//      legacy API stops gracefully, answering what its open (keep-alive) connections still carry;
//      at the end `ringback serve` answers on port 3000 and the legacy API is gone.
// Then, for comparison, the naive handover on a second fixed port (4000): the legacy API stops, then
// `ringback serve` starts on its port; the calls it refused are counted.
// The fleet's callers take turns: fetch (keep-alive, Node's pool), node:http with a keep-alive
// Agent, node:http without keep-alive; each to 127.0.0.1 and to ::1. Each call is made for a
// fresh run, and one in ten runs is called twice (an agent retrying its "done" call). Verdict:
// no call refused in the handover, every accepted run texted exactly once.
//
// The drill runs in a network namespace of its own (netns.js): port 3000 and the ruleset are
// its own. Called outside one, it checks the machine and re-runs itself inside one.
'use strict';

const http = require('node:http');
const { Lab, SetupError, runData, passed, stalledEvents, API_TOKEN } = require('./lab');
const netns = require('./netns');
const { sleep, waitFor } = require('../harness/wait');

const QUEUE = 'drill-cutover';
const MIN_RUNS = 20;
/** The legacy API's port: the callers' one address. */
const LEGACY_PORT = 3000;
/** The naive handover's port (the same story on a port of its own). */
const NAIVE_PORT = 4000;
const CALL_TIMEOUT_MS = 10_000;
const EVERY_MS = 20;

const CALLERS = [
  { name: 'fetch keep-alive', host: '127.0.0.1' },
  { name: 'http keep-alive', host: '[::1]' },
  { name: 'http no keep-alive', host: '127.0.0.1' },
  { name: 'fetch keep-alive', host: '[::1]' },
  { name: 'http keep-alive', host: '127.0.0.1' },
  { name: 'http no keep-alive', host: '[::1]' },
];

/** A caller's POST; resolves {status, server, error}: `server` says who answered. */
function post(kind, agent, url, payload) {
  const body = JSON.stringify(payload);
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${API_TOKEN}` };
  if (kind === 'fetch keep-alive') {
    return fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) }).then(
      async (res) => ({ status: res.status, server: res.headers.get('server'), text: await res.text() }),
      (err) => ({ error: err.cause?.code || err.name || err.message }),
    );
  }
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', headers, agent: kind === 'http keep-alive' ? agent : false, timeout: CALL_TIMEOUT_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, server: res.headers.server, text }));
      res.on('error', (err) => resolve({ error: err.code || err.message }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ error: err.code || err.message }));
    req.end(body);
  });
}

/** Who answers a fresh connection to `host:port` (GET /readyz): 'ringback serve', 'legacy API', or the error. */
async function whoAnswers(host, port) {
  const r = await new Promise((resolve) => {
    const req = http.get(`http://${host}:${port}/readyz`, { agent: false, timeout: 5000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, server: res.headers.server }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ error: err.code || err.message }));
  });
  if (r.error) return r.error;
  if (r.server === 'legacy-api') return 'legacy API';
  return r.status === 200 ? 'ringback serve' : `ringback serve, not ready (${r.status})`;
}

/**
 * A fleet calling `port` on its callers' hosts for fresh runs `${tag}-i`, one every 20 ms, while
 * `steps` (index → async step) run one after another beside it. It makes at least `runs` runs and
 * goes on until the steps are done and `tail` more runs were made after them.
 */
async function fleet({ tag, port, runs, tail, steps, mark }) {
  const agent = new http.Agent({ keepAlive: true });
  const data = [];
  const accepted = [];
  const refused = [];
  const by = {};
  for (const c of CALLERS) by[c.name] = by[c.name] || { 'legacy API': 0, 'ringback serve': 0, refused: 0 };
  let i = 0;
  let endAt = Infinity;
  const stepErrors = [];
  const stepsDone = (async () => {
    for (const [at, step] of steps) {
      await waitFor(() => i >= at, 600_000, `the fleet to reach run ${at}`, 5);
      try {
        await step();
      } catch (err) {
        stepErrors.push(err.message);
        mark(`step failed: ${err.message}`);
        break;
      }
    }
    endAt = Math.max(runs, i + tail);
  })();
  const inflight = [];
  const call = async (d, caller) => {
    const r = await post(caller.name, agent, `http://${caller.host}:${port}/api/notify/send`, d);
    if (r.status === 202 || r.status === 200) {
      accepted.push(d);
      by[caller.name][r.server === 'legacy-api' ? 'legacy API' : 'ringback serve'] += 1;
    } else {
      by[caller.name].refused += 1;
      refused.push(`${d.runId} (${caller.name} ${caller.host}): ${r.error || `${r.status} ${r.text}`}`);
    }
  };
  // a cap, so that a step that hangs cannot make the fleet run for ever
  const cap = runs * 20;
  for (; i < endAt && i < cap; i += 1) {
    const d = runData(tag, i);
    data.push(d);
    inflight.push(call(d, CALLERS[i % CALLERS.length]));
    if (i % 10 === 3) inflight.push(call(d, CALLERS[(i + 1) % CALLERS.length]));
    await sleep(EVERY_MS);
  }
  if (i >= cap) stepErrors.push(`the steps did not finish while the fleet made ${cap} runs`);
  await stepsDone;
  await Promise.all(inflight);
  agent.destroy();
  const acceptedRuns = [...new Map(accepted.map((d) => [d.runId, d])).values()];
  return { runs: data.length, calls: inflight.length, acceptedRuns, refused, by, stepErrors };
}

const sum = (by, key) => Object.values(by).reduce((n, c) => n + c[key], 0);

async function cutover(opts = {}) {
  if (netns.inside()) return cutoverHere(opts);
  const { runs = 200, version = '6', timings = 'compressed', cluster = false, log = () => {} } = opts;
  if (runs < MIN_RUNS) throw new SetupError(`cutover: --runs must be at least ${MIN_RUNS}, so that traffic flows through every phase`);
  const { problems } = netns.preflight();
  if (problems.length) throw new SetupError(`cutover: the port handover drill cannot run here: ${problems.join('; ')}`);
  const r = await netns.runInside(['cutover', '--runs', String(runs), '--bullmq', String(version), '--timings', timings, ...(cluster ? ['--cluster'] : []), '--json'], { log });
  let reports = null;
  try {
    reports = JSON.parse(r.out);
  } catch {
    // below
  }
  if (r.code === 2) throw new SetupError(r.err.trim().split('\n').pop() || 'cutover: setup failed in its network namespace');
  if (!Array.isArray(reports) || reports.length !== 1) throw new Error(`cutover in its network namespace exited ${r.code} without a report:\n${r.out}\n${r.err.slice(-3000)}`);
  // runDrills times the drill itself
  const report = { ...reports[0] };
  delete report.ms;
  return report;
}

async function cutoverHere({ runs = 200, version = '6', timings = 'compressed', cluster = false, log = () => {} } = {}) {
  if (runs < MIN_RUNS) throw new SetupError(`cutover: --runs must be at least ${MIN_RUNS}, so that traffic flows through every phase`);
  if (netns.listTable() !== null) throw new SetupError(`cutover: this namespace already holds table ${netns.TABLE}; the drill wants a namespace of its own`);
  const lab = await new Lab({ name: 'cutover', version, timings, cluster, log }).start();
  const phases = [];
  let t0 = Date.now();
  const mark = (what) => {
    phases.push(`${String(Date.now() - t0).padStart(6)} ms  ${what}`);
    log(`[cutover ${timings}] ${what}`);
  };
  const checks = [];
  /** A check after a step: recorded, and a failed one fails the step. */
  const check = (what, ok, seen) => {
    checks.push(`${ok ? 'ok' : 'FAILED'}: ${what}${seen === undefined ? '' : ` (${seen})`}`);
    if (!ok) throw new Error(`check failed: ${what}${seen === undefined ? '' : ` (${seen})`}`);
  };
  const answeredBy = async (port, who) => {
    const seen = await Promise.all(['127.0.0.1', '[::1]'].map(async (h) => `${h}:${port} → ${await whoAnswers(h, port)}`));
    check(`a new connection to port ${port} on 127.0.0.1 and ::1 is answered by ${who}`, seen.every((s) => s.endsWith(`→ ${who}`)), seen.join(', '));
  };
  try {
    const q = lab.queue(QUEUE);
    // Every send takes a while at Twilio, so that a worker killed at any instant has sends in
    // flight (well under the clients' timeouts).
    await lab.sim.putFaults({ create: [{ fault: 'slow', delay_ms: 150, created: true }] });
    const legacyApi = await lab.legacyApi(QUEUE, { listen: `[::]:${LEGACY_PORT}` });
    const legacy = [lab.legacyWorker('legacy#1', QUEUE), lab.legacyWorker('legacy#2', QUEUE)];
    await Promise.all(legacy.map((w) => w.waitStarted()));
    await answeredBy(LEGACY_PORT, 'legacy API');
    t0 = Date.now();
    mark(`legacy API at ${legacyApi.base} and 2 legacy workers take the traffic; every caller calls port ${LEGACY_PORT} throughout`);

    let serve = null;
    let redirectedAt = null;
    let legacyStopLine = null;
    const at = (fraction) => Math.floor(runs * fraction);
    const main = await fleet({
      tag: 'cut',
      port: LEGACY_PORT,
      runs,
      tail: at(0.2),
      mark,
      steps: [
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
          serve = await lab.ringbackServe(QUEUE, { listen: '[::]:0', publicBind: true });
          const port = Number(new URL(serve.base).port);
          await waitFor(async () => (await whoAnswers('127.0.0.1', port)) === 'ringback serve', 15_000, 'ringback serve to be ready');
          await answeredBy(port, 'ringback serve');
          mark(`ringback serve at ${serve.base} answers /readyz on its own port`);
          netns.redirect(LEGACY_PORT, port);
          redirectedAt = Date.now();
          await answeredBy(LEGACY_PORT, 'ringback serve');
          mark(`nftables redirect ${LEGACY_PORT} → ${port} loaded (127.0.0.1 and ::1): new connections go to ringback serve`);
          legacyApi.process.kill('SIGTERM');
          const info = await legacyApi.process.waitExit(30_000);
          legacyStopLine = /legacy api stopped .*/.exec(legacyApi.process.output())?.[0] || '(no stop line)';
          check('the legacy API stopped by itself within its drain deadline, cutting no connection', info.code === 0 && legacyStopLine.includes('cleanly'), `exit ${info.code}: ${legacyStopLine}`);
          mark(`legacy API gone (exit ${info.code}): ${legacyStopLine}`);
        }],
      ],
    });
    await answeredBy(LEGACY_PORT, 'ringback serve');
    mark(`the fleet made ${main.calls} calls for ${main.runs} runs to port ${LEGACY_PORT}; ringback serve answers there, the legacy API is gone`);

    // The naive handover: stop the legacy API, then start ringback serve on its port.
    const naiveApi = await lab.legacyApi(QUEUE, { listen: `[::]:${NAIVE_PORT}`, label: 'legacy-api-naive' });
    let gap = null;
    const naiveRuns = Math.max(MIN_RUNS, at(0.5));
    const naive = await fleet({
      tag: 'naive',
      port: NAIVE_PORT,
      runs: naiveRuns,
      tail: Math.floor(naiveRuns * 0.3),
      mark,
      steps: [
        [Math.floor(naiveRuns * 0.4), async () => {
          const stopAt = Date.now();
          naiveApi.process.kill('SIGTERM');
          await naiveApi.process.waitExit(30_000);
          const s2 = await lab.ringbackServe(QUEUE, { listen: `[::]:${NAIVE_PORT}`, publicBind: true, label: 'ringback-serve-naive' });
          await waitFor(async () => (await whoAnswers('127.0.0.1', NAIVE_PORT)) === 'ringback serve', 15_000, 'the naive ringback serve to be ready');
          gap = Date.now() - stopAt;
          mark(`naive handover on port ${NAIVE_PORT}: legacy API stopped, then ${s2.base} started and ready, ${gap} ms after the stop began`);
        }],
      ],
    });
    mark(`naive: ${naive.calls} calls for ${naive.runs} runs, ${naive.refused.length} refused`);

    const acceptedRuns = [...main.acceptedRuns, ...naive.acceptedRuns];
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
    const afterRedirect = legacyStopLine ? Number(/(\d+) request\(s\) answered while stopping/.exec(legacyStopLine)?.[1] || 0) : 0;
    const stepErrors = [...main.stepErrors, ...naive.stepErrors];
    const keepAliveMoved = ['fetch keep-alive', 'http keep-alive', 'http no keep-alive'].every((k) => main.by[k]['legacy API'] > 0 && main.by[k]['ringback serve'] > 0);
    const ok =
      passed(verdict) &&
      main.refused.length === 0 &&
      main.acceptedRuns.length === main.runs &&
      // the naive handover must have refused calls, or the fleet did not cover its gap and the
      // 0 above would prove nothing
      naive.refused.length > 0 &&
      stepErrors.length === 0 &&
      lab.failures.length === 0 &&
      keepAliveMoved &&
      byWorker.legacy > 0 &&
      byWorker.ringback > 0;
    return {
      drill: 'cutover',
      timings,
      ok,
      phases,
      verdict,
      checks,
      figures: {
        'calls refused': main.refused.length ? main.refused.slice(0, 10) : 0,
        'calls accepted by': { 'legacy API': sum(main.by, 'legacy API'), 'ringback serve': sum(main.by, 'ringback serve') },
        'calls per caller (port handover)': main.by,
        'legacy API answers on its open connections after the redirect': afterRedirect,
        'runs accepted': `${main.acceptedRuns.length} of ${main.runs}`,
        'naive handover (stop, then start on the port): calls refused': naive.refused.length,
        'naive handover: calls made, gap ms': { calls: naive.calls, 'gap ms': gap },
        'naive handover: calls per caller': naive.by,
        'naive handover: refusals (first 5)': naive.refused.slice(0, 5),
        'jobs completed by': byWorker,
        'stalled jobs recovered': stalled,
        'redirect loaded, ms after the start': redirectedAt ? redirectedAt - t0 : null,
        'step errors': stepErrors.length ? stepErrors : 0,
        'workers that failed by themselves': lab.failures.length ? lab.failures : 0,
      },
    };
  } finally {
    await lab.stop();
  }
}

module.exports = { cutover, LEGACY_PORT, NAIVE_PORT };
