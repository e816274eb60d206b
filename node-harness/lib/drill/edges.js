// The edges drill: what Twilio does to messages that the window must survive, with legacy
// workers alive beside ringback on the same queue, once per timing profile:
//   - a Messaging Service (TWILIO_MESSAGING_SERVICE_SID) that rewrites what it stores (Smart
//     Encoding, link shortening, an appended opt-out line) and sends from a pool of numbers;
//   - 30 % of create answers lost after Twilio created the message (connection dropped);
//   - a message Twilio creates already failed (201 with status `failed`, 30007);
//   - a message whose status callbacks never come (the receipt poll finds its status);
//   - verdicts full of typographic punctuation and a link, as autonomous jobs write them;
//   - status callbacks reaching `ringback serve`, as in production.
// Verdict: every run texted exactly once (counted by the body as sent), every message created
// failed escalated (`undelivered`), every run settled unknown escalated, the silent run's
// record ends in its final status by polling. Then the runbook's step for an undelivered run,
// `ringback resend <runId>`, run twice: one more text, not two.
'use strict';

const { freePort } = require('../harness/ports');

const { Lab, passed } = require('./lab');
const { JOB_NAME, JOB_OPTIONS } = require('../legacy');
const { waitFor } = require('../harness/wait');

const QUEUE = 'drill-edges';
const SERVICE = 'MG0123456789abcdef0123456789abcdef';
const POOL = ['+15550100001', '+15550100002', '+15550100003'];

/** Run `i`'s callback: its own recipient, a verdict as an agent writes it. */
function edgeRun(timings, i) {
  const runId = `edges-${timings}-${i}`;
  return {
    runId,
    to: `+1555030${String(i % 10000).padStart(4, '0')}`,
    body: `Run ${runId} done \u2014 the rollback\u2019s plan\u2026 is ready: https://acme.dev/runs/${runId}`,
  };
}

async function edges({ runs = 30, version = '6', timings = 'compressed', cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'edges', version, timings, cluster, log }).start();
  try {
    const data = Array.from({ length: Math.max(runs, 8) }, (_, i) => edgeRun(timings, i));
    const createdFailed = [data[3], data[7]];
    const silent = data[5];
    await lab.sim.putFaults({
      create: [
        ...createdFailed.map((d) => ({ to: d.to, fault: 'created_failed', error_code: 30007 })),
        { rate: 0.3, fault: 'create_then_drop' },
      ],
      callbacks: [{ to: silent.to, none: true }],
      rewrite: { smart_encoding: true, shorten_urls: true, append: ' Reply STOP to opt out.' },
      service_pool: POOL,
    });
    const port = await freePort();
    const publicUrl = `http://127.0.0.1:${port}`;
    await lab.ringbackServe(QUEUE, { listen: `127.0.0.1:${port}`, publicUrl });
    const env = {
      TWILIO_FROM: '',
      TWILIO_MESSAGING_SERVICE_SID: SERVICE,
      RINGBACK_STATUS_CALLBACK_URL: `${publicUrl}/api/notify/webhook/status`,
      RINGBACK_RECEIPT_POLL_AFTER_MS: '1000',
      RINGBACK_SENDERS: '+15005550006',
    };
    const workers = [lab.ringbackWorker('ringback#1', QUEUE, env), lab.ringbackWorker('ringback#2', QUEUE, env)];
    const legacy = lab.legacyWorker('legacy#1', QUEUE);
    await Promise.all([...workers, legacy].map((w) => w.waitStarted()));
    const q = lab.queue(QUEUE);
    await q.addBulk(data.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
    log(`[edges ${timings}] ${data.length} runs through a rewriting Messaging Service, 30 % of answers lost, a legacy worker alive`);
    const verdict = await lab.settle(data, [q], 90_000);

    const escalations = lab.queue(`${QUEUE}-escalations`);
    const escalation = async (runId) => {
      const job = await escalations.getJob(`escalation:${runId}`);
      return job ? job.data : null;
    };
    const checks = [];
    const check = (ok, what) => checks.push(`${ok ? 'ok' : 'FAILED'}: ${what}`);
    // a run the legacy worker took is the legacy design's (it escalates nothing and polls
    // nothing): told apart by its plain claim, "sent", or "pending" when its create's answer was
    // lost and its own retry dropped the run
    const byLegacy = async (runId) => ['sent', 'pending'].includes(await lab.admin.get(`agent-callback:${runId}`));
    for (const d of createdFailed) {
      const e = await escalation(d.runId);
      const legacySent = !e && (await byLegacy(d.runId));
      check((e && e.kind === 'undelivered') || legacySent, `${d.runId}, created already failed, ${legacySent ? 'sent by the legacy worker (which escalates nothing)' : `escalated undelivered (${e ? e.kind : 'none'})`}`);
    }
    const recordKey = (runId) => `ringback:callback:{agent-callback:${runId}}`;
    const claimOf = (runId) => lab.admin.get(`agent-callback:${runId}`);
    // settled unknown: the claim is a sent marker without a MessageSid (the answer was lost and
    // no receipt proved the message); each must have been escalated
    const unknown = [];
    for (const d of data) if ((await claimOf(d.runId)) === 'sent:') unknown.push(d.runId);
    const untold = [];
    for (const runId of unknown) if (!(await escalation(runId))) untold.push(runId);
    check(untold.length === 0, `every run settled unknown is escalated (unknown: ${unknown.join(', ') || 'none'}; untold: ${untold.join(', ') || 'none'})`);
    // the silent run: its receipt comes by polling, unless the legacy worker sent it or its own
    // answer was lost too (then nothing can prove it: settled unknown and escalated, above)
    const silentLegacy = await byLegacy(silent.runId);
    const silentUnknown = unknown.includes(silent.runId);
    const silentStatus = silentLegacy || silentUnknown ? null : await waitFor(
      async () => (await lab.admin.hget(recordKey(silent.runId), 'status')) === 'delivered' || null,
      20_000,
      'the silent run to be polled',
    ).then(
      () => 'delivered',
      async () => lab.admin.hget(recordKey(silent.runId), 'status'),
    );
    const silentClaim = await claimOf(silent.runId);
    const how = silentLegacy
      ? 'sent by the legacy worker'
      : silentUnknown
        ? 'its answer lost too: settled unknown and escalated'
        : `ends delivered by polling (status ${silentStatus}, claim ${silentClaim})`;
    check(silentStatus === 'delivered' || silentLegacy || silentUnknown, `${silent.runId}, no status callback ever, ${how}`);
    // The runbook's step for an undelivered run: `ringback resend <runId>`, once; run twice (a
    // person unsure it went), it texts once.
    for (const d of createdFailed) {
      if (!(await escalation(d.runId))) continue;
      const first = await lab.resend(QUEUE, d.runId, { extra: env });
      const again = await lab.resend(QUEUE, d.runId, { extra: env });
      const { by } = await lab.textsByBody();
      check(
        first.code === 0 && again.code === 0 && /already resent/.test(again.output) && by.get(d.body) === 2,
        `${d.runId}: the runbook's resend texts once, a second resend nothing (exit ${first.code}, ${again.code}; ${by.get(d.body)} messages of the run)`,
      );
    }
    const sim = await lab.simStats();
    const rewritten = sim.by_to_body.filter((e) => e.body.includes('twil.io')).length;
    check(rewritten > 0, `Twilio stored the bodies rewritten (${rewritten} of ${sim.total})`);
    return {
      drill: 'edges',
      timings,
      ok: passed(verdict) && checks.every((c) => c.startsWith('ok')) && lab.failures.length === 0,
      verdict,
      checks,
      figures: {
        'messages Twilio holds': sim.total,
        'runs settled unknown (escalated; a lost answer no receipt can prove, or a legacy claim taken over whose message nothing links to the run)': unknown.length,
      },
    };
  } finally {
    await lab.stop();
  }
}

module.exports = { edges };
