// Replies with the real Node BullMQ: a producer asks a question through bin/ask.js (the example
// the docs point at), `ringback worker` texts it through the simulator, the person's answer is
// posted to `ringback serve`'s signed inbound webhook as Twilio posts it (repeated, concurrent,
// forged), and a plain BullMQ Worker on `<queue>-replies` receives it once.
//
// - per BullMQ major (6 and 5): the question and its answer end to end; three posts of one
//   message (Twilio's retries, at once) add one job with the documented data; a forged
//   signature is refused; once the job was consumed and removed, a late retry adds nothing;
// - mixed fleet: the legacy Node worker texts a question as a plain callback (no code, no
//   question opened), so the reply lands unmatched (runId null); then a ringback worker's
//   question to the same number carries no code either, and its reply (through the CLI form
//   of ask.js) answers it, the unmatched one left in the queue for its owner;
// - two questions open to one person: a reply without a code is asked back once ("Your reply
//   could answer 2 questions…") whatever the repeats, and the coded answer reaches its run
//   (and the other's, right after it, with its code);
// - two questions to one person taken by the worker at the same moment: one of them shows its
//   code (both were open), and their codes differ.
//
// Built on the drills' lab (lib/drill/lab.js) at production timings: one redis-server and one
// simulator for the file, a `serve` and workers per case, each case on a queue of its own.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');
const { Lab, API_TOKEN, AUTH_TOKEN, ACCOUNT_SID } = require('../lib/drill/lab');
const { load, connectionFromUrl, VERSIONS } = require('../lib/bullmq');
const { waitFor, withTimeout } = require('../lib/harness/wait');
const { WorkerProcess } = require('../lib/harness/subject');
const { messageSid, inboundParams, postInbound, textsTo, shownCode, EMPTY_TWIML } = require('../lib/harness/inbound');
const { ask, addQuestion } = require('../bin/ask');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');

const OUR_NUMBER = '+15005550006'; // the lab's TWILIO_FROM: the number people answer
// where Twilio calls serve (behind a proxy): the signatures cover this URL, not the socket's
const PUBLIC_URL = 'https://ringback.example.test';
const ASK_JS = path.join(__dirname, '..', 'bin', 'ask.js');
const T = 20_000;

const ASK_BACK = /^Your reply could answer 2 questions\. /;

describe('replies: questions, signed answers and the replies queue, with Node BullMQ', { timeout: 150_000 }, () => {
  let lab;
  const closers = [];
  // every ask() of the file: stopped before Redis is (a failed case leaves no Worker behind)
  const stopAsking = new AbortController();
  const asking = [];

  before(async () => {
    lab = await new Lab({ name: 'replies', timings: 'prod' }).start();
  });
  after(async () => {
    stopAsking.abort(new Error('the test file ended'));
    await Promise.allSettled(asking);
    for (const close of closers.reverse()) await close().catch(() => {});
    await lab?.stop();
  });

  /** ask.js's ask() with bullmq `version`, on the lab's Redis; awaited by the caller or after(). */
  function askAs(version, opts) {
    const p = ask({ bullmq: load(version), connection: connectionFromUrl(lab.redis.url), signal: stopAsking.signal, replyWithin: '1h', timeoutMs: 40_000, ...opts });
    p.catch(() => {}); // awaited later; a rejection before then is not unhandled
    asking.push(p);
    return p;
  }

  /** `ringback serve` for `queue`, ready; its inbound webhook signed for PUBLIC_URL. */
  async function serve(queue) {
    const { process: p, base } = await lab.ringbackServe(queue, { label: `serve ${queue}`, publicUrl: PUBLIC_URL });
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status === 200, 15_000, `serve ${queue} ready`);
    const hook = { base, publicUrl: PUBLIC_URL, authToken: AUTH_TOKEN };
    return {
      process: p,
      post: (params) => postInbound(hook, params),
      forge: (params) => postInbound({ ...hook, authToken: 'not-the-account-auth-token' }, params),
      async record(runId) {
        const res = await fetch(`${base}/api/notify/callbacks/${encodeURIComponent(runId)}`, { headers: { authorization: `Bearer ${API_TOKEN}` } });
        assert.equal(res.status, 200, `GET callbacks/${runId}`);
        return res.json();
      },
    };
  }

  async function ringbackWorker(queue) {
    const w = lab.ringbackWorker(`ringback worker ${queue}`, queue, { RINGBACK_CONCURRENCY: '4' });
    await w.waitStarted();
    return w;
  }

  /** A Node Queue (bullmq `version`) closed after the file. */
  function nodeQueue(name, version = '6') {
    const { Queue } = load(version);
    const q = new Queue(name, { connection: connectionFromUrl(lab.redis.url) });
    closers.push(() => q.close());
    return q;
  }

  /** Waits until `n` texts reached `to`; returns their bodies. */
  const texted = (to, n, what) => waitFor(async () => {
    const t = await textsTo(lab.sim.base, to);
    return t.length >= n ? t : null;
  }, T, what);

  /** The events a queue's stream holds for job `id`, by name: {added: 1, active: 1, …}. */
  async function eventsOf(queue, id) {
    const counts = {};
    for (const [, fields] of await lab.admin.xrange(`bull:${queue}:events`, '-', '+')) {
      const f = {};
      for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]] = fields[i + 1];
      if (f.jobId === id) counts[f.event] = (counts[f.event] || 0) + 1;
    }
    return counts;
  }

  /** Runs `fn`; a failure carries what every process of the lab printed. */
  async function withLogs(fn) {
    try {
      return await fn();
    } catch (err) {
      const logs = lab.processes.map((p) => `--- ${p.label}\n${p.output().slice(-1500)}`).join('\n');
      err.message += `\n${logs}`;
      throw err;
    }
  }

  /** Stops the case's processes (SIGKILL: nothing is in flight once a case has asserted). */
  const stop = (...ps) => Promise.all(ps.filter(Boolean).map((p) => p.destroy()));

  for (const version of VERSIONS) {
    it(`bullmq v${version}: ask.js asks, the signed reply is one job in <queue>-replies, even retried after removal`, () =>
      withLogs(async () => {
        const queue = `ask-v${version}`;
        const replies = nodeQueue(`${queue}-replies`, version);
        const runId = `ask-v${version}-run`;
        const to = `+1555030000${version}`;
        const body = 'Deploy web-3 to production?';
        const sid = messageSid(1, Number(version));
        const media = [{ url: `https://api.twilio.com/2010-04-01/Accounts/${ACCOUNT_SID}/Messages/MM${'0'.repeat(32)}/Media/ME${'1'.repeat(32)}`, contentType: 'image/jpeg' }];
        const s = await serve(queue);
        const worker = await ringbackWorker(queue);
        const t0 = Date.now();
        const answer = askAs(version, { queue, runId, to, body });

        // the question alone: texted as written, no code
        assert.deepEqual(await texted(to, 1, 'the question texted'), [body]);
        const asked = await s.record(runId);
        assert.equal(asked.question.shown, false);
        assert.match(asked.question.code, /^[A-Z][0-9]{1,2}$/);
        assert.ok(Math.abs(asked.question.openUntil - (t0 + 3_600_000)) < 60_000, `open for 1h: ${JSON.stringify(asked.question)}`);
        assert.equal(asked.question.answeredBy, null);

        const params = inboundParams({ sid, from: to, to: OUR_NUMBER, body: 'yes, ship it', media, accountSid: ACCOUNT_SID });
        // forged first, with the real message's sid: refused, and nothing recorded or queued
        const forged = await s.forge(params);
        assert.equal(forged.status, 403);
        assert.deepEqual(await eventsOf(`${queue}-replies`, sid), {});
        // Twilio's retries, at once: each answered with empty TwiML, one job
        const posts = await Promise.all([1, 2, 3].map(() => s.post(params)));
        for (const p of posts) assert.deepEqual(p, { status: 200, type: 'text/xml', body: EMPTY_TWIML });

        const data = await withTimeout(answer, T, 'ask() to resolve with the answer');
        assert.ok(data.receivedAt >= t0 && data.receivedAt <= Date.now(), `receivedAt ${data.receivedAt}`);
        assert.deepEqual(data, {
          runId,
          text: 'yes, ship it',
          from: to,
          to: OUR_NUMBER,
          receivedAt: data.receivedAt,
          messageSid: sid,
          media,
          matched: 'answer',
          code: asked.question.code,
          ambiguous: null,
          optOutType: null,
        });
        // exactly one job, taken once, completed by ask.js's plain Worker
        const job = await waitFor(async () => {
          const j = await replies.getJob(sid);
          // read again once completed: a job read while still active has no returnvalue
          return j && (await j.getState()) === 'completed' ? replies.getJob(sid) : null;
        }, T, 'the reply job completed');
        assert.equal(job.name, 'agent-reply');
        assert.deepEqual(job.returnvalue, { answered: runId });
        assert.deepEqual(await replies.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'completed', 'failed'), { wait: 0, active: 0, delayed: 0, prioritized: 0, completed: 1, failed: 0 });
        const events = await eventsOf(`${queue}-replies`, sid);
        assert.equal(events.added, 1, JSON.stringify(events));
        assert.equal(events.active, 1, JSON.stringify(events));
        assert.equal(events.duplicated, undefined, `retries stopped by the marker, not by the job: ${JSON.stringify(events)}`);

        // the run's record: the question answered by it, the reply with its job, the sender masked
        const rec = await s.record(runId);
        assert.deepEqual(rec.question, { ...asked.question, answeredBy: sid });
        assert.deepEqual(rec.replies, [{ messageSid: sid, from: `${'*'.repeat(to.length - 4)}${to.slice(-4)}`, text: 'yes, ship it', media, receivedAt: data.receivedAt, matched: 'answer', runId, jobId: sid }]);

        // consumed and removed: a late retry adds nothing (and decides nothing anew)
        await job.remove();
        assert.equal(await replies.getJob(sid), undefined);
        const late = await s.post(params);
        assert.equal(late.status, 200);
        assert.equal(await replies.getJob(sid), undefined, 'a retry after removal added the job again');
        assert.deepEqual(await replies.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'completed', 'failed'), { wait: 0, active: 0, delayed: 0, prioritized: 0, completed: 0, failed: 0 });
        assert.equal((await eventsOf(`${queue}-replies`, sid)).added, 1);
        assert.deepEqual((await s.record(runId)).replies.length, 1);
        assert.deepEqual(await textsTo(lab.sim.base, to), [body], 'nothing texted back');
        await stop(worker, s.process);
      }),
    );
  }

  it('mixed fleet: a legacy worker opens no question (its reply lands unmatched); a ringback question to the same number then shows no code and is answered', () =>
    withLogs(async () => {
      const queue = 'mixed-replies';
      const replies = nodeQueue(`${queue}-replies`);
      const callbacks = nodeQueue(queue);
      const to = '+15550400001';
      const s = await serve(queue);

      // only the legacy worker: it texts the body as given, and opens nothing
      const legacy = lab.legacyWorker('legacy worker', queue, { RINGBACK_CONCURRENCY: '1' });
      await legacy.waitStarted();
      const legacyBody = 'Roll back api-7? (asked through the legacy worker)';
      await addQuestion(callbacks, { runId: 'mixed-legacy-q', to, body: legacyBody, replyWithin: '1h' });
      assert.deepEqual(await texted(to, 1, 'the legacy worker to text the question'), [legacyBody]);
      const legacyJob = await waitFor(async () => {
        const j = await callbacks.getJob('mixed-legacy-q');
        return j && (await j.getState()) === 'completed' ? callbacks.getJob('mixed-legacy-q') : null;
      }, T, 'the legacy job completed');
      assert.match(legacyJob.returnvalue.sid, /^SM[0-9a-f]{32}$/, 'sent by the legacy worker');
      const sid1 = messageSid(1, 0xb);
      assert.equal((await s.post(inboundParams({ sid: sid1, from: to, to: OUR_NUMBER, body: 'yes', accountSid: ACCOUNT_SID }))).status, 200);
      const unmatched = await replies.getJob(sid1);
      assert.deepEqual(
        { runId: unmatched.data.runId, matched: unmatched.data.matched, code: unmatched.data.code, text: unmatched.data.text },
        { runId: null, matched: 'unmatched', code: null, text: 'yes' },
      );
      assert.equal((await s.record('mixed-legacy-q')).question, undefined, 'the legacy worker opened no question');
      legacy.kill('SIGTERM');
      await legacy.waitExit(15_000);

      // a ringback worker now; the question asked from the command line (ask.js's CLI form)
      const worker = await ringbackWorker(queue);
      const body = 'Deploy web-3 to production?';
      const cli = lab.track(
        new WorkerProcess('ask.js', process.execPath, [ASK_JS, '--to', to, '--body', body, '--run-id', 'mixed-ringback-q', '--within', '1h', '--timeout-ms', String(T)], {
          ...process.env,
          REDIS_URL: lab.redis.url,
          RINGBACK_QUEUE: queue,
          BULLMQ_VERSION: '6',
        }),
      );
      const texts = await texted(to, 2, 'the ringback question texted');
      assert.deepEqual(texts, [legacyBody, body], 'no code: the legacy question opened nothing');
      const rec = await s.record('mixed-ringback-q');
      assert.equal(rec.question.shown, false);
      const sid2 = messageSid(2, 0xb);
      assert.equal((await s.post(inboundParams({ sid: sid2, from: to, to: OUR_NUMBER, body: 'no, keep it', accountSid: ACCOUNT_SID }))).status, 200);
      const done = await cli.waitExit(T + 5_000);
      assert.equal(done.code, 0, `ask.js: ${cli.output()}`);
      const printed = JSON.parse(cli.output().trim()); // its one line: the answer
      assert.deepEqual(
        { runId: printed.runId, text: printed.text, matched: printed.matched, code: printed.code, messageSid: printed.messageSid },
        { runId: 'mixed-ringback-q', text: 'no, keep it', matched: 'answer', code: rec.question.code, messageSid: sid2 },
      );
      assert.equal((await s.record('mixed-ringback-q')).question.answeredBy, sid2);
      // the unmatched message (waiting when ask.js started) was taken and handed back, not
      // consumed: still in the queue for its owner
      assert.ok(['waiting', 'delayed'].includes(await (await replies.getJob(sid1)).getState()), 'the unmatched reply is left in the queue');
      const handedBack = await eventsOf(`${queue}-replies`, sid1);
      assert.ok(handedBack.active >= 1 && handedBack.delayed >= 1, `taken and handed back: ${JSON.stringify(handedBack)}`);
      assert.equal(handedBack.completed, undefined, JSON.stringify(handedBack));
      assert.equal(await (await replies.getJob(sid2)).getState(), 'completed');
      await stop(worker, s.process);
    }),
  );

  it('two questions open to one person: a reply without a code is asked back once, whatever the repeats; the coded answer reaches its run', () =>
    withLogs(async () => {
      const queue = 'ambiguous-replies';
      const replies = nodeQueue(`${queue}-replies`);
      const callbacks = nodeQueue(queue);
      const to = '+15550500001';
      const s = await serve(queue);
      const worker = await ringbackWorker(queue);
      const askAbout = (runId, body) => askAs('6', { queue, runId, to, body });
      // asked one after the other: the second sees the first open and shows its code
      const bodyA = 'Roll back api-7?';
      const bodyB = 'Deploy web-3 to production?';
      const askA = askAbout('amb-a', bodyA);
      await texted(to, 1, 'question A texted');
      const askB = askAbout('amb-b', bodyB);
      const [textA, textB] = await texted(to, 2, 'question B texted');
      assert.equal(textA, bodyA, 'alone: no code');
      const codeB = shownCode(textB);
      assert.ok(codeB, `the second question shows its code: ${JSON.stringify(textB)}`);
      assert.equal(textB, `${bodyB}\n\n(Start your reply with ${codeB}.)`);
      const codeA = (await s.record('amb-a')).question.code;
      assert.equal((await s.record('amb-b')).question.code, codeB);
      assert.notEqual(codeA, codeB);
      let answered = 0;
      askA.then(() => (answered += 1));
      askB.then(() => (answered += 1));

      // "yes", no code: ambiguous. Twice at once, then again once the person was asked back.
      const sid = messageSid(1, 0xc);
      const yes = inboundParams({ sid, from: to, to: OUR_NUMBER, body: 'yes', accountSid: ACCOUNT_SID });
      const first = await Promise.all([s.post(yes), s.post(yes)]);
      for (const p of first) assert.deepEqual(p, { status: 200, type: 'text/xml', body: EMPTY_TWIML });
      const texts = await texted(to, 3, 'the person asked back');
      const askBack = texts.filter((t) => ASK_BACK.test(t));
      assert.equal(askBack.length, 1, JSON.stringify(texts));
      const which = await waitFor(async () => {
        const j = await callbacks.getJob(`reply:${sid}`);
        // read again once completed: a job read while still active has no finishedOn
        return j && (await j.getState()) === 'completed' ? callbacks.getJob(`reply:${sid}`) : null;
      }, T, `the ask-back run reply:${sid} completed`);
      assert.equal(which.data.to, to);
      assert.equal((await s.post(yes)).status, 200);
      // every repeat answered; still one ask-back job, done, and nothing left to text
      assert.equal((await callbacks.getJob(`reply:${sid}`)).finishedOn, which.finishedOn);
      assert.deepEqual(await callbacks.getJobCounts('wait', 'active', 'delayed', 'prioritized'), { wait: 0, active: 0, delayed: 0, prioritized: 0 });
      assert.equal((await textsTo(lab.sim.base, to)).filter((t) => ASK_BACK.test(t)).length, 1);
      // it names both questions by code and first words
      const named = Object.fromEntries([...askBack[0].matchAll(/([A-Z][0-9]{1,2}) for "([^"]*)"/g)].map((m) => [m[1], m[2]]));
      assert.deepEqual(named, { [codeA]: bodyA, [codeB]: bodyB }, askBack[0]);
      // the message itself: one job, runId null, both candidates named
      const amb = await replies.getJob(sid);
      assert.equal(amb.data.matched, 'ambiguous');
      assert.equal(amb.data.runId, null);
      assert.deepEqual([...amb.data.ambiguous].sort(), ['amb-a', 'amb-b']);
      assert.equal((await eventsOf(`${queue}-replies`, sid)).added, 1);
      assert.equal(answered, 0, 'an ambiguous reply answers no question');

      // the answer with A's code (seen only in the ask-back): reaches A, code stripped
      const sidA = messageSid(2, 0xc);
      const postedA = await s.post(inboundParams({ sid: sidA, from: to, to: OUR_NUMBER, body: `${codeA.toLowerCase()}: roll it back`, accountSid: ACCOUNT_SID }));
      assert.equal(postedA.status, 200);
      // two askers share the replies queue, each handing the other's jobs back: allow the
      // hand-backs' round trips on a loaded machine
      const a = await withTimeout(askA, 3 * T, 'ask(amb-a) answered');
      assert.deepEqual({ runId: a.runId, text: a.text, code: a.code, matched: a.matched, messageSid: a.messageSid }, { runId: 'amb-a', text: 'roll it back', code: codeA, matched: 'answer', messageSid: sidA });
      assert.equal((await s.record('amb-a')).question.answeredBy, sidA);
      assert.equal((await s.record('amb-b')).question.answeredBy, null, 'B still open');
      // only B is open now, but A was answered a moment ago: words without a code would be
      // asked back (they may be more about A); with B's code they answer B
      const sidB = messageSid(3, 0xc);
      const postedB = await s.post(inboundParams({ sid: sidB, from: to, to: OUR_NUMBER, body: `${codeB} ship it`, accountSid: ACCOUNT_SID }));
      assert.equal(postedB.status, 200);
      const b = await withTimeout(askB, 3 * T, 'ask(amb-b) answered');
      assert.deepEqual({ runId: b.runId, text: b.text, code: b.code, matched: b.matched }, { runId: 'amb-b', text: 'ship it', code: codeB, matched: 'answer' });
      assert.deepEqual((await s.record('amb-b')).replies.map((r) => [r.messageSid, r.text]), [[sidB, 'ship it']]);
      assert.equal((await textsTo(lab.sim.base, to)).length, 3, 'questions A and B, and one ask-back');
      await stop(worker, s.process);
    }),
  );

  it('two questions to one person taken at the same moment: the second to open shows its code, and the codes differ', () =>
    withLogs(async () => {
      // ringback opens a question (its code, and whether to show it) before the first claim; two
      // workers (or one at concurrency > 1) may do so for two questions to one person at once
      const queue = 'concurrent-questions';
      const callbacks = nodeQueue(queue);
      const s = await serve(queue);
      const worker = await ringbackWorker(queue);
      // three people, two questions each, all added in one call (as the legacy API's options)
      const people = [1, 2, 3].map((i) => ({ to: `+155506000${i}0`, runs: [`conc-${i}-a`, `conc-${i}-b`] }));
      const jobs = people.flatMap(({ to, runs }) =>
        runs.map((runId) => ({ name: JOB_NAME, data: { runId, to, body: `Question ${runId}?`, expectReply: true, replyWithin: '1h' }, opts: { ...JOB_OPTIONS, jobId: runId } })),
      );
      await callbacks.addBulk(jobs);
      for (const { to, runs } of people) {
        const texts = await texted(to, 2, `both questions texted to ${to}`);
        const codes = await Promise.all(runs.map(async (r) => (await s.record(r)).question.code));
        assert.notEqual(codes[0], codes[1], `two open questions to ${to} share the code ${codes[0]}`);
        assert.ok(
          texts.some((t) => shownCode(t) !== null),
          `both questions were open to ${to} at once, yet neither text shows its code: ${JSON.stringify(texts)}`,
        );
      }
      await stop(worker, s.process);
    }),
  );
});
