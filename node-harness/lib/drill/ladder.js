// The ladder drill: callbacks climb their escalation ladders (a call to the recipient, then each
// next person texted and called) while ringback workers crash at every ladder step and people
// answer on every channel at once; every ladder must stop once or run out once, no step sent
// twice, nothing silent. Once per timing profile:
//   - N callbacks, seven kinds in turn, each to numbers of its own (so every text and call is
//     told by its number): `keypad` (a question; the recipient's call answered, 1 pressed),
//     `oncall-keypad` (the recipient does not answer; the next person's call is answered, 2
//     pressed), `reply` (the recipient's call rings long and the person answers by text
//     meanwhile), `oncall-reply` (the recipient does not answer; the next person answers the
//     question by text once texted), `nobody` (no answer, busy, an answering machine: the ladder
//     runs out), and two
//     plain callbacks: `delivered` (its delivered receipt acknowledges it before any call) and
//     `undelivered` (its text undelivered: the ladder climbs at once);
//   - ladders at compressed step times (`callAfter` 1 s, `stepWait` 2 s), the defaults' order
//     of the lab's timing profile for the window;
//   - two ringback workers, one aborting right after it claims a ladder step
//     (ladder-after-claim:0.3), one right after a step's call or text went out, before it is
//     marked (ladder-after-create:0.3), both restarted; `ringback serve` takes the keypad
//     answers, the call statuses (shuffled and repeated) and the replies, and aborts right
//     after it recorded a key pressed or a call's status, before it acknowledges or climbs
//     (ladder-after-webhook:0.3), restarted on its port; the webhooks' URLs carry the connection
//     overrides the docs give (`#rc=5&rp=ct,rt,5xx`), which the simulator honours as Twilio
//     does; a legacy Node worker joins once the callbacks were texted and shares the steps' texts.
// Verdict: each ladder ended as its kind says (stopped by keypad, reply or delivery; run out
// with one `unacknowledged` escalation and one `no-answer`); each step called or texted at most
// once; no call left ringing; each callback texted once; no escalation of another kind for a
// run whose ladder took its failure.
'use strict';

const { freePort } = require('../harness/ports');

const { Lab, AUTH_TOKEN, ACCOUNT_SID, API_TOKEN } = require('./lab');
const { JOB_NAME, JOB_OPTIONS } = require('../legacy');
const { WorkerProcess } = require('../harness/subject');
const { waitFor } = require('../harness/wait');
const { messageSid, inboundParams, INBOUND_PATH } = require('../harness/inbound');
const twilio = require('twilio');

const QUEUE = 'drill-ladder';
const KINDS = ['keypad', 'oncall-keypad', 'reply', 'oncall-reply', 'nobody', 'delivered', 'undelivered'];
const LADDER = { callAfter: '1s', stepWait: '2s' };
// Twilio's connection overrides on every webhook URL, as docs/http-api.md gives them
const OVERRIDES = '#rc=5&rp=ct,rt,5xx';
const SERVE_CRASH_AT = 'ladder-after-webhook:0.1';

/** Run i: its kind, its numbers (recipient and two next people) and job data. */
function planRun(i, timings) {
  const kind = KINDS[i % KINDS.length];
  const n = (k) => `+1555090${String(i * 3 + k).padStart(4, '0')}`;
  const [to, first, second] = [n(0), n(1), n(2)];
  const runId = `ladder-${timings[0]}-${i}`;
  const question = !['delivered', 'undelivered'].includes(kind);
  const data = {
    runId,
    to,
    body: `Run ${runId} finished: ship it?`,
    ladder: { ...LADDER, then: [first, second] },
    // `nobody`'s question is over before its ladder runs out: its no-answer comes at the end
    ...(question ? { expectReply: true, replyWithin: kind === 'nobody' ? '4s' : '1h', choices: ['YES', 'NO'] } : {}),
  };
  return { i, kind, runId, to, first, second, question, data };
}

/** The simulator's rules for run `r`: how its calls go, and its receipts. */
function rulesOf(r) {
  const calls = [];
  const callbacks = [];
  const call = (to, rule) => calls.push({ to, shuffled: true, duplicate: true, ...rule });
  switch (r.kind) {
    case 'keypad':
      call(r.to, { outcome: 'answered', digits: '1' });
      break;
    case 'oncall-keypad':
      call(r.to, { outcome: 'no-answer' });
      call(r.first, { outcome: 'answered', digits: '2', second_gather: true });
      break;
    case 'reply':
      call(r.to, { outcome: 'answered', digits: '', step_ms: 1500 });
      break;
    case 'oncall-reply':
      call(r.to, { outcome: 'no-answer' });
      call(r.first, { outcome: 'no-answer' });
      call(r.second, { outcome: 'no-answer' });
      break;
    case 'nobody':
      call(r.to, { outcome: 'no-answer' });
      call(r.first, { outcome: 'busy' });
      call(r.second, { outcome: 'machine' });
      break;
    case 'undelivered':
      callbacks.push({ to: r.to, final: 'undelivered', error_code: 30003 });
      call(r.to, { outcome: 'no-answer' });
      call(r.first, { outcome: 'no-answer' });
      call(r.second, { outcome: 'no-answer' });
      break;
    default:
      break;
  }
  return { calls, callbacks };
}

async function ladder({ runs = 12, version = '6', timings = 'compressed', cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'ladder', version, timings, cluster, log }).start();
  const checks = [];
  const check = (ok, what) => checks.push(`${ok ? 'ok' : 'FAILED'}: ${what}`);
  try {
    const plan = Array.from({ length: Math.max(runs, KINDS.length) }, (_, i) => planRun(i, timings));
    const rules = plan.map(rulesOf);
    await lab.sim.putFaults({ calls: rules.flatMap((r) => r.calls), callbacks: rules.flatMap((r) => r.callbacks) });

    // serve: the ladder's webhooks, the receipts and the replies, where Twilio calls it
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const statusUrl = `${base}/api/notify/webhook/status${OVERRIDES}`;
    const serveEnv = { ...lab.ringbackEnv(QUEUE), RINGBACK_PUBLIC_URL: base, RINGBACK_API_TOKEN: API_TOKEN, RINGBACK_STATUS_CALLBACK_URL: statusUrl, RINGBACK_CRASH_AT: SERVE_CRASH_AT };
    lab.supervise('serve', (i) => lab.track(new WorkerProcess(`ringback-serve#${i}`, lab.bin, ['serve', '--listen', `127.0.0.1:${port}`], serveEnv)));
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status === 200, 20_000, 'ringback serve to be ready');

    // two ringback workers, each aborting at a ladder point now and then, restarted
    const worker = (label, crashAt) => (i) =>
      lab.ringbackWorker(`${label}#${i}`, QUEUE, { RINGBACK_STATUS_CALLBACK_URL: statusUrl, RINGBACK_CRASH_AT: crashAt, RINGBACK_CONCURRENCY: '2' });
    lab.supervise('ringback@ladder-after-claim', worker('ringback@ladder-after-claim', 'ladder-after-claim:0.3'));
    lab.supervise('ringback@ladder-after-create', worker('ringback@ladder-after-create', 'ladder-after-create:0.3'));

    const q = lab.queue(QUEUE);
    const t0 = Date.now();
    await q.addBulk(plan.map((r) => ({ name: JOB_NAME, data: r.data, opts: { ...JOB_OPTIONS } })));
    log(`[ladder ${timings}] ${plan.length} callbacks with ladders (${KINDS.join(', ')}); workers crashing at ladder-after-claim and ladder-after-create, serve at ${SERVE_CRASH_AT}`);

    // once every callback was texted, a legacy worker shares the queue (the steps' texts)
    const sims = async (path) => (await fetch(`${lab.sim.base}${path}`)).json();
    const texted = async () => {
      const texts = await sims('/sim/messages');
      return plan.every((r) => texts.some((m) => m.to === r.to && m.body === r.data.body));
    };
    await waitFor(texted, 30_000, 'every callback texted', 100).catch((err) => check(false, `every callback texted: ${err.message.slice(0, 200)}`));
    const legacy = lab.legacyWorker('legacy#1', QUEUE, { RINGBACK_CONCURRENCY: '2' });
    await legacy.waitStarted();

    // the `reply` people answer by text while their call rings; the `oncall-reply` next
    // person once their text came
    let n = 0;
    const replied = new Set();
    const answerWhileRinging = async () => {
      const calls = await sims('/sim/calls');
      const sent = await sims('/sim/messages');
      const due = (x) =>
        (x.kind === 'reply' && calls.some((c) => c.call.to === x.to)) || (x.kind === 'oncall-reply' && sent.some((m) => m.to === x.first));
      for (const r of plan.filter((x) => !replied.has(x.runId) && due(x))) {
        replied.add(r.runId);
        n += 1;
        const from = r.kind === 'reply' ? r.to : r.first;
        const params = inboundParams({ sid: messageSid(n, 0x1ad), from, to: '+15005550006', body: r.kind === 'reply' ? 'YES' : 'no', accountSid: ACCOUNT_SID });
        const url = `${base}${INBOUND_PATH}`;
        const signature = twilio.getExpectedTwilioSignature(AUTH_TOKEN, url, params);
        // posted until serve answers (it may be restarting)
        await waitFor(
          async () => {
            const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature }, body: new URLSearchParams(params).toString() }).catch(() => null);
            return res?.status === 200;
          },
          20_000,
          `the reply of ${r.runId} taken`,
          200,
        );
      }
    };

    // every ladder ends: stopped or run out (with its escalation added)
    const ladderOf = (r) => lab.admin.hgetall(`ringback:ladder:{agent-callback:${r.runId}}`);
    const isEnded = (rec) => (rec.state === 'stopped' || rec.state === 'exhausted') && rec.escalate === undefined && !Object.keys(rec).some((k) => k.startsWith('claim:') && rec[k].startsWith('pending:'));
    let open = [];
    const ended = async () => {
      await answerWhileRinging();
      const recs = await Promise.all(plan.map(ladderOf));
      open = plan.filter((_, i) => !isEnded(recs[i])).map((r, i) => `${r.runId}: ${JSON.stringify(Object.fromEntries(Object.entries(recs[plan.indexOf(r)]).filter(([k]) => !['plan', 'recipient', 'question', 'opened'].includes(k))))}`);
      return open.length === 0;
    };
    const settled = await waitFor(ended, 60_000, 'every ladder to end', 250).then(
      () => true,
      () => false,
    );
    const settleMs = Date.now() - t0;
    check(settled, `every ladder ended within 60 s (${settleMs} ms)${settled ? '' : `: ${open.slice(0, 3).join('; ').slice(0, 900)}`}`);
    // calls still ringing when a ladder stopped are ended by a worker's next round
    await waitFor(async () => (await sims('/sim/calls')).every((c) => ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(c.call.status)), 20_000, 'no call ringing', 250).catch(() => {});

    // the verdict
    const calls = await sims('/sim/calls');
    const texts = await sims('/sim/messages');
    const escalations = await lab.queue(`${QUEUE}-escalations`).getJobs(['wait', 'completed', 'failed', 'delayed'], 0, -1);
    const replies = await lab.queue(`${QUEUE}-replies`).getJobs(['wait', 'completed', 'failed', 'delayed'], 0, -1);
    const ringing = calls.filter((c) => !['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(c.call.status));
    check(ringing.length === 0, `no call left ringing (${ringing.length}: ${ringing.slice(0, 3).map((c) => `${c.call.to} ${c.call.status}`).join(', ')})`);
    const expect = {
      keypad: { state: 'stopped', by: ['keypad'] },
      'oncall-keypad': { state: 'stopped', by: ['keypad'] },
      reply: { state: 'stopped', by: ['reply'] },
      'oncall-reply': { state: 'stopped', by: ['reply'] },
      nobody: { state: 'exhausted' },
      delivered: { state: 'stopped', by: ['delivered'] },
      // its next person's text is the legacy worker's or ringback's: acknowledged by its
      // delivery, or by nobody when the legacy worker sent it (its receipts are not serve's)
      undelivered: { state: ['stopped', 'exhausted'] },
    };
    const wrong = { ended: [], twice: [], escalation: [], replies: [], texts: [] };
    let stepsCalled = 0;
    for (const r of plan) {
      const rec = await ladderOf(r);
      const e = expect[r.kind];
      const states = [e.state].flat();
      if (!states.includes(rec.state) || (e.by && rec.state === 'stopped' && !e.by.includes(rec.acked_by))) wrong.ended.push(`${r.runId} (${r.kind}): ${rec.state} by ${rec.acked_by || '-'}`);
      // each step at most once: calls by the step their status callback names, texts by number
      const mine = calls.filter((c) => (c.status_callback || '').includes(`run=${encodeURIComponent(r.runId)}&`));
      const bySteps = new Map();
      for (const c of mine) {
        const step = new URL(c.status_callback).searchParams.get('step');
        bySteps.set(step, (bySteps.get(step) || 0) + 1);
      }
      stepsCalled += bySteps.size;
      for (const [step, count] of bySteps) if (count > 1) wrong.twice.push(`${r.runId} step ${step} called ${count} times`);
      for (const to of [r.first, r.second]) {
        const got = texts.filter((m) => m.to === to && (m.body || '').includes(r.data.body)).length;
        if (got > 1) wrong.twice.push(`${r.runId}: ${to} texted ${got} times`);
      }
      const firsts = texts.filter((m) => m.to === r.to && m.body === r.data.body).length;
      if (firsts !== 1) wrong.texts.push(`${r.runId}: texted ${firsts} times`);
      const esc = escalations.filter((j) => j.data?.runId === r.runId);
      const unack = esc.filter((j) => j.data.kind === 'unacknowledged').length;
      const others = esc.filter((j) => j.data.kind !== 'unacknowledged').map((j) => j.data.kind);
      if (unack !== (rec.state === 'exhausted' ? 1 : 0) || others.length) wrong.escalation.push(`${r.runId} (${rec.state}): ${unack} unacknowledged, others ${others.join(',') || 'none'}`);
      const all = replies.filter((j) => j.data?.runId === r.runId);
      // a key or text after the first answer (a key kept through a crash of serve, finished
      // after another person's) is a late reply naming the first: never a second answer
      const late = all.filter((j) => j.data.matched === 'late');
      const rs = all.filter((j) => j.data.matched !== 'late');
      const via = rs.filter((j) => j.data.via === 'call').length;
      const noAnswer = rs.filter((j) => j.data.matched === 'no-answer').length;
      if (late.some((j) => !j.data.firstAnswer)) wrong.replies.push(`${r.runId}: a late reply that names no first answer`);
      if (r.question) {
        const byText = (from) => noAnswer === 0 && via === 0 && rs.length === 1 && rs[0].data.matched === 'answer' && rs[0].data.from === from;
        const okReplies = r.kind === 'nobody' ? noAnswer === 1 && via === 0 : r.kind === 'reply' ? byText(r.to) : r.kind === 'oncall-reply' ? byText(r.first) : via === 1 && noAnswer === 0;
        if (!okReplies) wrong.replies.push(`${r.runId} (${r.kind}): ${rs.map((j) => `${j.data.matched}${j.data.via ? `/${j.data.via}` : ''}`).join(', ') || 'none'}`);
      }
    }
    check(wrong.ended.length === 0, `each ladder ended as its kind says${wrong.ended.length ? `: ${wrong.ended.slice(0, 6).join('; ')}` : ''}`);
    check(wrong.twice.length === 0, `no step called or texted twice${wrong.twice.length ? `: ${wrong.twice.slice(0, 6).join('; ')}` : ''}`);
    check(wrong.texts.length === 0, `each callback texted once${wrong.texts.length ? `: ${wrong.texts.slice(0, 6).join('; ')}` : ''}`);
    check(wrong.escalation.length === 0, `one unacknowledged escalation for each ladder run out, none else${wrong.escalation.length ? `: ${wrong.escalation.slice(0, 6).join('; ')}` : ''}`);
    check(wrong.replies.length === 0, `each question's answer (keypad via call, or text) or its no-answer, once${wrong.replies.length ? `: ${wrong.replies.slice(0, 6).join('; ')}` : ''}`);
    check((lab.crashes.serve || 0) >= 1, `serve crashed after recording a ladder webhook (${lab.crashes.serve || 0} times)`);
    check(lab.failures.length === 0, `no process failed by itself${lab.failures.length ? `: ${lab.failures.slice(0, 2).join(' | ').slice(0, 400)}` : ''}`);
    const ok = checks.every((c) => c.startsWith('ok'));
    const report = {
      drill: 'ladder',
      timings,
      ok,
      checks,
      figures: {
        'callbacks (kinds)': `${plan.length} (${KINDS.join(', ')})`,
        'calls placed / steps called': `${calls.length} / ${stepsCalled}`,
        'texts (callbacks and steps)': texts.length,
        'crashes (ladder-after-claim, ladder-after-create, serve)': `${lab.crashes['ringback@ladder-after-claim'] || 0}, ${lab.crashes['ringback@ladder-after-create'] || 0}, ${lab.crashes.serve || 0}`,
        'time for every ladder to end': `${settleMs} ms`,
      },
    };
    log(`[ladder ${timings}] ${ok ? 'ok' : 'FAILED'}: ${plan.length} ladders ended in ${settleMs} ms, ${calls.length} calls`);
    return report;
  } finally {
    await lab.stop();
  }
}

module.exports = { ladder };
