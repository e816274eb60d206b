// The replies drill: people answer questions by text while Twilio behaves as Twilio does and
// `ringback serve` crashes between recording a message and enqueuing it; every message must
// reach the producer's replies consumer exactly once, and every answer its question's run; every
// message that answers no question must also reach, at least once, the app that handled the
// number's inbound messages before. Once per timing profile:
//   - N questions (`expectReply: true`), several to the same person so that some carry a reply
//     code, added at once with the legacy API's job name and options; two ringback workers text
//     them through the simulator;
//   - a plain BullMQ Worker on `<queue>-replies` (job name `agent-reply`, job id the
//     MessageSid) consumes every message, counting each per MessageSid;
//   - the people read their texts and answer each question, starting with its code when the
//     text shows one ("\n\n(Start your reply with K7.)"); a person asked back which question a
//     reply meant ("Your reply could answer 2 questions…") sends it again with the code listed;
//     strangers write too (unmatched, each from a number of their own), and a few posts are
//     forged (wrong signature: 403);
//   - Twilio's side: each message posted 1–3 times, all posts shuffled and several in flight;
//     a post that got no answer (serve crashed, restarting, or 503 before Redis answers) is
//     posted again, as Twilio with connection overrides (`#rc=…&rp=all`) does, except that for
//     a third of the messages a post cut short after serve recorded it is left to serve's sweep
//     (it finishes a recorded message after 15 s, every 5 s) as Twilio without retries would;
//     once the jobs were consumed, a third of them are removed (as a retention would) and some
//     messages are posted again late;
//   - `ringback serve` runs with RINGBACK_CRASH_AT=after-reply-recorded:0.3 (it aborts right
//     after recording a message, before its job is added, on 3 posts in 10), supervised and
//     restarted on the same port, the public URL (signatures) unchanged;
//   - the app that handled the number's inbound messages before listens on loopback, and serve
//     forwards to it (RINGBACK_INBOUND_FORWARD_URL) every message that answers no question: the
//     strangers'. The app checks each forward's signature over its own URL as `twilio.webhook()`
//     does, notes its MessageSid, and accepts it with an empty `<Response/>` (relayed to Twilio
//     as serve's answer). A stranger's message whose first post a crash of serve cut short
//     right after its record is the sweep's to forward (15 s after it arrived), whether Twilio
//     posts it again or not: a retry of a recorded message is not forwarded in its request;
//   - a legacy Node worker joins the callback queue once every question was texted (a legacy
//     worker that took a question would text it as a plain callback, opening no question, so
//     its answer would land unmatched or on another question: that is not what this drill
//     proves); it then shares with ringback the "which one?" texts (runs `reply:<MessageSid>`)
//     and a few plain callbacks.
// Verdict: every question texted once; every message consumed exactly once (duplicates and lost
// by MessageSid); each run's answer reached it once, with the text sent (the code stripped); the
// forged posts added nothing; the strangers' messages came with runId null; each ambiguous
// message was asked back once; reply codes open to one person differ, and at most one of a
// person's questions was texted without its code; every stranger's message reached the app at
// least once, with every parameter Twilio sent and a valid signature, and nothing else did (no
// answer, no ambiguous message, no forgery); nothing is left on serve's forward schedule. A
// message the app got twice is at least once, as promised: counted, not a failure.
'use strict';

const { freePort } = require('../harness/ports');

const http = require('node:http');
const twilio = require('twilio');
const { Lab, API_TOKEN, AUTH_TOKEN, ACCOUNT_SID } = require('./lab');
const { JOB_NAME, JOB_OPTIONS, CLAIM_PREFIX } = require('../legacy');
const { load, ownedConnection } = require('../bullmq');
const { WorkerProcess } = require('../harness/subject');
const { waitFor, sleep } = require('../harness/wait');
const { messageSid, inboundParams, shownCode, textsTo, INBOUND_PATH, EMPTY_TWIML } = require('../harness/inbound');

const QUEUE = 'drill-replies';
const REPLIES = `${QUEUE}-replies`;
const OUR_NUMBER = '+15005550006'; // the lab's TWILIO_FROM: the number people answer
// where Twilio calls serve (behind a proxy): the signatures cover this URL, not the socket's
const PUBLIC_URL = 'https://ringback-drill.example.test';
const CRASH_AT = 'after-reply-recorded:0.3';
// the strangers: numbers no question went to, each writing once (so each message is unmatched)
const STRANGERS = [
  ['+15550799999', 'who is this? wrong number'],
  ['+15550799998', 'Is this the pharmacy? my refill'],
  ['+15550799997', 'sorry, wrong number'],
  ['+15550799996', 'can you call me back'],
];
// where the app that handled the number's inbound messages before listens (serve forwards there)
const APP_PATH = '/sms/incoming';
// the app's answer to every forward: empty TwiML, relayed to Twilio by serve as its own
const APP_TWIML = '<Response/>';
const ASK_BACK = /^Your reply could answer \d+ questions\. /;
// how many questions each person gets, in turn (12 runs: 8 people, 3 of them with several)
const SHARES = [3, 1, 2, 1, 2, 1, 1, 1];
// posts of one message Twilio may make while its answers are lost, as with `#rc=`: generous,
// since serve dies on 3 posts in 10 and other posts in flight die with it
const MAX_POSTS = 40;
const IN_FLIGHT = 4;

const shuffle = (xs) => {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
};
const pick = (n) => Math.floor(Math.random() * n);

/**
 * The app that handled the number's inbound messages before: a plain Node `http` server on a
 * free loopback port that checks each POST's signature over its own URL, as `twilio.webhook()`
 * does, notes it ({sid, valid, params}), and accepts it with empty TwiML.
 */
function startApp() {
  const received = [];
  const app = { received, url: null };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const params = Object.fromEntries(new URLSearchParams(Buffer.concat(chunks).toString('utf8')));
      let valid = false;
      try {
        valid = twilio.validateRequest(AUTH_TOKEN, req.headers['x-twilio-signature'], app.url, params);
      } catch {
        // an unreadable signature is an invalid one
      }
      received.push({ sid: params.MessageSid, valid, params, method: req.method, path: req.url });
      res.writeHead(200, { 'content-type': 'text/xml' });
      res.end(APP_TWIML);
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.unref(); // never what keeps the drill's process alive
      app.url = `http://127.0.0.1:${server.address().port}${APP_PATH}`;
      app.close = () =>
        new Promise((done) => {
          server.closeAllConnections();
          server.close(() => done());
        });
      resolve(app);
    });
  });
}

/** Runs `fn` on each of `items`, `n` at a time. */
async function pool(items, n, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(n, items.length) }, async () => {
      while (next < items.length) {
        const item = items[next];
        next += 1;
        await fn(item);
      }
    }),
  );
}

/** The questions: run i to person p (SHARES in turn), bodies short enough to be their own excerpt. */
function plan(runs, timings) {
  const questions = [];
  for (let person = 0, s = 0; questions.length < runs; person += 1, s += 1) {
    const to = `+1555070${String(person).padStart(4, '0')}`;
    for (let k = 0; k < SHARES[s % SHARES.length] && questions.length < runs; k += 1) {
      const i = questions.length;
      const runId = `replies-${timings[0]}-${i}`;
      questions.push({ runId, to, body: `Ship ${runId} to production?`, answer: `${i % 2 ? 'no, hold' : 'yes, ship'} ${runId}` });
    }
  }
  return questions;
}

/** The ways people write a code before their answer; each strips to the answer. */
const CODED = [(c, t) => `${c} ${t}`, (c, t) => `${c.toLowerCase()}: ${t}`, (c, t) => `${c}. ${t}`, (c, t) => `${c.toLowerCase()}-${t}`];

async function replies({ runs = 12, version = '6', timings = 'compressed', cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'replies', version, timings, cluster, log }).start();
  const tag = timings === 'prod' ? 0x2 : 0x1;
  const closeConsumer = [];
  const checks = [];
  const check = (ok, what) => checks.push(`${ok ? 'ok' : 'FAILED'}: ${what}`);
  const tally = { posts: 0, ok: 0, forbidden: 0, unanswered: 0, refused: [], leftToSweep: new Set(), cutShort: new Set(), relayed: 0, gaveUp: [], late: 0, removed: 0, resent: 0 };
  let app = null;
  try {
    const questions = plan(Math.max(runs, 6), timings);
    const people = [...new Set(questions.map((q) => q.to))];

    // the app that handled the number's inbound messages before: serve forwards to it
    app = await startApp();
    const forwardsKey = `ringback:inbound-forwards:${CLAIM_PREFIX}`;

    // `ringback serve`, crashing after it records a message, restarted on the same port
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const serveEnv = {
      ...lab.ringbackEnv(QUEUE),
      RINGBACK_API_TOKEN: API_TOKEN,
      RINGBACK_PUBLIC_URL: PUBLIC_URL,
      RINGBACK_CRASH_AT: CRASH_AT,
      RINGBACK_INBOUND_FORWARD_URL: app.url,
      RUST_LOG: process.env.DRILL_RUST_LOG || 'warn,ringback::edge::run=info',
    };
    lab.supervise('serve', (i) => lab.track(new WorkerProcess(`ringback-serve#${i}`, lab.bin, ['serve', '--listen', `127.0.0.1:${port}`], serveEnv)));
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status === 200, 20_000, 'ringback serve to be ready');

    // the producer's side: one plain Worker on the replies queue for every run
    const consumed = new Map(); // MessageSid -> [job data, per time it was handed over]
    const { Worker } = load(version);
    const consumer = new Worker(
      REPLIES,
      async (job) => {
        const seen = consumed.get(job.id) || [];
        seen.push({ name: job.name, ...job.data });
        consumed.set(job.id, seen);
        return { routed: job.data.runId === null ? 'inbox' : job.data.runId };
      },
      { connection: ownedConnection(lab.redis.url, closeConsumer), prefix: lab.prefix, concurrency: 4 },
    );
    consumer.on('error', () => {});
    closeConsumer.unshift(() => consumer.close());
    const repliesQueue = lab.queue(REPLIES);

    // the questions, texted by ringback alone
    const workers = [lab.ringbackWorker('ringback#1', QUEUE), lab.ringbackWorker('ringback#2', QUEUE)];
    await Promise.all(workers.map((w) => w.waitStarted()));
    await consumer.waitUntilReady();
    const q = lab.queue(QUEUE);
    const t0 = Date.now();
    await q.addBulk(questions.map((d) => ({ name: JOB_NAME, data: { runId: d.runId, to: d.to, body: d.body, expectReply: true, replyWithin: '1h' }, opts: { ...JOB_OPTIONS } })));
    log(`[replies ${timings}] ${questions.length} questions to ${people.length} people; serve crashing at ${CRASH_AT}, forwarding to ${app.url}`);
    const idle = async (queue) => {
      const c = await queue.getJobCounts('wait', 'active', 'delayed', 'prioritized', 'paused');
      return c.wait + c.active + c.delayed + c.prioritized + c.paused === 0;
    };
    const questionText = (d, texts) => texts.find((t) => t === d.body || (t.startsWith(`${d.body}\n\n`) && shownCode(t)));
    const textsOf = async () => Object.fromEntries(await Promise.all(people.map(async (p) => [p, await textsTo(lab.sim.base, p)])));
    let read = {};
    await waitFor(
      async () => {
        read = await textsOf();
        return questions.every((d) => questionText(d, read[d.to])) && (await idle(q));
      },
      30_000,
      'every question texted',
      100,
    ).catch((err) => check(false, `every question texted before the answers: ${err.message.slice(0, 300)}`));
    const textedMs = Date.now() - t0;

    // a legacy worker on the callback queue from now on, and a few plain callbacks for the fleet
    const legacy = lab.legacyWorker('legacy#1', QUEUE, { RINGBACK_CONCURRENCY: '2' });
    await legacy.waitStarted();
    const plain = Array.from({ length: 4 }, (_, i) => ({ runId: `replies-${timings[0]}-plain-${i}`, to: `+1555071${String(i).padStart(4, '0')}`, body: `Run replies-${timings[0]}-plain-${i} finished` }));
    await q.addBulk(plain.map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));

    // What each person read: the question's code when the text shows one.
    const messages = []; // every genuine message: {sid, from, body, runId (intended) | null, text}
    let n = 0;
    const message = (fields) => {
      n += 1;
      const m = { sid: messageSid(n, tag), retry: n % 3 !== 0, ...fields };
      messages.push(m);
      return m;
    };
    for (const [i, d] of questions.entries()) {
      const text = questionText(d, read[d.to] || []);
      d.code = text ? shownCode(text) : null;
      message({ from: d.to, runId: d.runId, text: d.answer, body: d.code ? CODED[i % CODED.length](d.code, d.answer) : d.answer, plain: !d.code });
    }
    // the strangers: every other one posted again by Twilio when a post is cut short, the
    // others left to serve's sweep (their forward too)
    const strangers = STRANGERS.map(([from, text], i) => message({ from, runId: null, text, body: text, stranger: true, retry: i % 2 === 0 }));
    // forged: two messages of their own, and a copy of a genuine one
    const forged = [{ sid: messageSid(900, tag), from: questions[0].to, body: 'k7 roll everything back' }, { sid: messageSid(901, tag), from: STRANGERS[0][0], body: 'yes' }, { ...messages[1] }];
    /** The form Twilio posts for `m` (a forward must carry it unchanged). */
    const paramsOf = (m) => inboundParams({ sid: m.sid, from: m.from, to: OUR_NUMBER, body: m.body, accountSid: ACCOUNT_SID });

    const recorded = async (sid) => (await lab.admin.exists(`ringback:inbound:${CLAIM_PREFIX}${sid}`)) === 1;
    /** Posts `m` as Twilio does, signed with `token`, again while no answer comes. */
    async function deliver(m, { token = AUTH_TOKEN, mayLeave = true } = {}) {
      const params = paramsOf(m);
      const signature = twilio.getExpectedTwilioSignature(token, `${PUBLIC_URL}${INBOUND_PATH}`, params);
      for (let attempt = 1; attempt <= MAX_POSTS; attempt += 1) {
        tally.posts += 1;
        const res = await fetch(`${base}${INBOUND_PATH}`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
          body: new URLSearchParams(params).toString(),
          signal: AbortSignal.timeout(15_000), // Twilio's webhook timeout
        }).then(
          async (r) => ({ status: r.status, body: await r.text().catch(() => null) }),
          () => ({ status: null }),
        );
        if (res.status === 200 && res.body !== null) {
          tally.ok += 1;
          // a stranger's message forwarded in its request: the app's TwiML, relayed
          if (m.stranger && res.body === APP_TWIML) tally.relayed += 1;
          else if (res.body !== EMPTY_TWIML) tally.refused.push(`${m.sid}: 200 with ${res.body.slice(0, 80)}`);
          return 'ok';
        }
        if (res.status === 403) {
          tally.forbidden += 1;
          if (token === AUTH_TOKEN) tally.refused.push(`${m.sid}: 403 for a genuine signature: ${String(res.body).slice(0, 120)}`);
          return 'forbidden';
        }
        if (res.status !== null && res.status !== 503 && res.status < 500) {
          tally.refused.push(`${m.sid}: ${res.status} ${String(res.body).slice(0, 120)}`);
          return 'refused';
        }
        // no answer (serve died or is restarting) or a 5xx: Twilio with connection overrides
        // posts again; without them it gives up, and a message serve recorded is the sweep's
        tally.unanswered += 1;
        tally.cutShort.add(m.sid);
        if (mayLeave && !m.retry && (await recorded(m.sid))) {
          tally.leftToSweep.add(m.sid);
          return 'left';
        }
        await sleep(150 + 100 * Math.min(attempt, 5));
      }
      tally.gaveUp.push(m.sid);
      return 'gave up';
    }
    const forgedAnswers = [];
    const deliveries = shuffle([
      ...messages.flatMap((m) => Array.from({ length: 1 + pick(3) }, () => () => deliver(m))),
      ...forged.map((m) => async () => forgedAnswers.push(await deliver(m, { token: 'not-the-account-auth-token', mayLeave: false }))),
    ]);

    // The people, meanwhile: one whose reply was ambiguous reads the ask-back that follows it
    // and sends the answer again, starting with the code listed for the question it answers.
    const resolved = new Set();
    const resending = [];
    async function resend(m) {
      const d = questions.find((x) => x.runId === m.runId);
      if (!d) {
        check(false, `${m.sid} (${m.runId === null ? "a stranger's" : m.runId}) was ambiguous`);
        return;
      }
      const askBacks = await waitFor(
        async () => {
          const got = (await textsTo(lab.sim.base, m.from)).filter((t) => ASK_BACK.test(t));
          return got.length ? got : null;
        },
        30_000,
        `the ask-back to ${m.from}`,
        100,
      ).catch(() => []);
      const listed = askBacks.flatMap((t) => [...t.matchAll(/([A-Z][0-9]{1,2}) for "([^"]*)"/g)]).find(([, , excerpt]) => d.body.startsWith(excerpt.replace(/…$/, '')));
      if (!listed) {
        check(false, `${m.sid} (for ${m.runId}) was ambiguous and no ask-back to ${m.from} lists its question: ${JSON.stringify(askBacks)}`);
        return;
      }
      tally.resent += 1;
      // posted again whenever no answer comes (not left to the sweep: the drill stays short)
      const again = message({ from: m.from, runId: m.runId, text: d.answer, body: CODED[tally.resent % CODED.length](listed[1], d.answer), resends: m.sid, retry: true });
      await Promise.all(Array.from({ length: 1 + pick(2) }, async () => {
        await sleep(pick(200));
        await deliver(again);
      }));
    }
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        for (const m of messages) {
          if (!resolved.has(m.sid) && consumed.get(m.sid)?.[0].matched === 'ambiguous') {
            resolved.add(m.sid);
            resending.push(resend(m));
          }
        }
        await sleep(100);
      }
    })();

    const t1 = Date.now();
    await pool(deliveries, IN_FLIGHT, async (post) => {
      await sleep(pick(40));
      await post();
    });
    // settled: every message consumed, every ambiguous one answered again, nothing pending for
    // serve's sweep, both queues idle, every stranger's message forwarded and none still
    // scheduled for forwarding
    const everyConsumed = () => messages.every((m) => consumed.has(m.sid));
    const pendingKey = `ringback:inbound-pending:${CLAIM_PREFIX}`;
    const everyForwarded = () => strangers.every((m) => app.received.some((f) => f.sid === m.sid));
    const quiet = async () => {
      await Promise.all(resending);
      return (
        everyConsumed() &&
        messages.every((m) => resolved.has(m.sid) || consumed.get(m.sid)[0].matched !== 'ambiguous') &&
        (await lab.admin.zcard(pendingKey)) === 0 &&
        everyForwarded() &&
        (await lab.admin.zcard(forwardsKey)) === 0 &&
        (await idle(q)) &&
        (await idle(repliesQueue))
      );
    };
    let settled = await waitFor(quiet, 60_000, 'the replies to settle', 100).then(
      () => true,
      () => false,
    );
    watching = false;
    await watcher;
    const settleMs = Date.now() - t1;
    log(`[replies ${timings}] ${settled ? 'settled' : 'NOT settled'} ${settleMs} ms after the first post (${tally.posts} posts, ${lab.crashes.serve || 0} crashes of serve, ${app.received.length} forwards); late retries next`);

    // Late: Twilio posts half of the messages again, long after their jobs were consumed; two
    // thirds of those jobs are removed first (as a retention would), the others kept completed.
    const late = messages.filter((_, i) => i % 2 === 0);
    for (const [i, m] of late.entries()) {
      if (i % 3 === 0) continue;
      const job = await repliesQueue.getJob(m.sid);
      if (job && (await job.isCompleted())) {
        await job.remove();
        tally.removed += 1;
      }
    }
    tally.late = late.length;
    await pool(shuffle(late.flatMap((m) => Array.from({ length: 1 + pick(2) }, () => () => deliver(m, { mayLeave: false })))), IN_FLIGHT, (post) => post());
    settled = settled && (await waitFor(quiet, 45_000, 'the late retries to settle', 100).then(() => true, () => false));
    // anything a late retry would have added shows up within a moment
    await sleep(1000);

    // The verdict.
    const sim = await lab.simStats();
    const textsFor = (d) =>
      sim.by_to_sent_body.filter((e) => e.to === d.to && (e.body === d.body || (e.body.startsWith(`${d.body}\n\n`) && shownCode(e.body)))).reduce((k, e) => k + e.count, 0);
    const runs_ = [...questions, ...plain];
    const texts = runs_.map((d) => [d.runId, textsFor(d)]);
    const drops = lab.legacyDrops();
    const verdict = {
      settled,
      settleMs,
      runs: runs_.length,
      texts: texts.reduce((k, [, c]) => k + c, 0),
      duplicates: texts.filter(([, c]) => c > 1).map(([id, c]) => `${id}×${c}`),
      lost: texts.filter(([id, c]) => c === 0 && !drops.has(id)).map(([id]) => id),
      legacyDropped: texts.filter(([id, c]) => c === 0 && drops.has(id)).map(([id]) => id),
      stillBusy: (await idle(q)) ? 0 : 1,
      stillOpen: await lab.admin.zrange(`ringback:open-attempts:${CLAIM_PREFIX}`, 0, -1),
    };

    const sids = new Set(messages.map((m) => m.sid));
    const delivered = {
      messages: messages.length,
      consumed: [...consumed.values()].reduce((k, s) => k + s.length, 0),
      duplicates: [...consumed].filter(([, s]) => s.length > 1).map(([sid, s]) => `${sid}×${s.length}`),
      lost: messages.filter((m) => !consumed.has(m.sid)).map((m) => `${m.sid}${m.runId ? ` (${m.runId})` : ''}`),
      unexpected: [...consumed.keys()].filter((sid) => !sids.has(sid)),
    };
    // each run: one answer, the one its person sent, with the text they wrote
    const answers = new Map();
    for (const [sid, seen] of consumed) {
      const d = seen[0];
      if (d.matched === 'answer') answers.set(d.runId, [...(answers.get(d.runId) || []), { sid, ...d }]);
    }
    // each run's question as ringback fixed it (its code, whether shown, what answered it)
    const fixed = new Map();
    for (const d of questions) fixed.set(d.runId, JSON.parse((await lab.admin.get(`ringback:question:{${CLAIM_PREFIX}${d.runId}}`)) || 'null'));
    delivered.wrong = [];
    for (const d of questions) {
      const got = answers.get(d.runId) || [];
      const mine = messages.filter((m) => m.runId === d.runId).map((m) => m.sid);
      const question = fixed.get(d.runId);
      if (got.length !== 1) delivered.wrong.push(`${d.runId}: ${got.length} answers`);
      else if (!mine.includes(got[0].sid) || got[0].text !== d.answer || got[0].code !== question?.code || got[0].name !== 'agent-reply') {
        delivered.wrong.push(`${d.runId}: answered by ${got[0].sid} (${got[0].name}) with ${JSON.stringify(got[0].text)}, code ${got[0].code} (the question's ${question?.code})`);
      } else if (question.answeredBy !== got[0].sid) {
        delivered.wrong.push(`${d.runId}: its question says answered by ${question.answeredBy}, the answer was ${got[0].sid}`);
      }
    }
    for (const [runId] of answers) if (!questions.some((d) => d.runId === runId)) delivered.wrong.push(`an answer to ${runId}, no question of this drill`);
    const bySid = (sid) => consumed.get(sid)?.[0];
    for (const m of messages) {
      const d = bySid(m.sid);
      if (d && (d.messageSid !== m.sid || d.from !== m.from || d.to !== OUR_NUMBER)) delivered.wrong.push(`${m.sid}: data ${JSON.stringify(d)}`);
      if (d && d.matched === 'answer' && d.runId !== m.runId) delivered.wrong.push(`${m.sid} (for ${m.runId}) answered ${d.runId}`);
    }
    check(delivered.wrong.length === 0, `each question's answer reached its run once, the code stripped (${answers.size} of ${questions.length} runs answered${delivered.wrong.length ? `; wrong: ${delivered.wrong.slice(0, 6).join('; ')}` : ''})`);
    const strangerWrong = [];
    for (const m of strangers) {
      const s = bySid(m.sid);
      if (!(s && s.runId === null && s.matched === 'unmatched' && s.text === m.text)) strangerWrong.push(`${m.sid} from ${m.from}: ${s ? `${s.matched}, runId ${s.runId}, text ${JSON.stringify(s.text)}` : 'not consumed'}`);
    }
    check(strangerWrong.length === 0, `the strangers' ${strangers.length} messages arrived unmatched, runId null${strangerWrong.length ? `: ${strangerWrong.join('; ')}` : ''}`);
    // forwarding: what the app behind RINGBACK_INBOUND_FORWARD_URL received
    const forwards = app.received;
    const forwardedTimes = new Map(); // MessageSid -> forwards received
    for (const f of forwards) forwardedTimes.set(f.sid, (forwardedTimes.get(f.sid) || 0) + 1);
    const stillScheduled = await lab.admin.zrange(forwardsKey, 0, -1);
    const neverForwarded = strangers.filter((m) => !forwardedTimes.has(m.sid));
    check(
      neverForwarded.length === 0 && stillScheduled.length === 0,
      `every stranger's message reached the app behind RINGBACK_INBOUND_FORWARD_URL at least once (${strangers.length - neverForwarded.length} of ${strangers.length}), none left on the forward schedule` +
        (neverForwarded.length ? `; never forwarded: ${neverForwarded.map((m) => m.sid).join(', ')}` : '') +
        (stillScheduled.length ? `; still scheduled: ${stillScheduled.slice(0, 6).join(', ')}` : ''),
    );
    const unsigned = forwards.filter((f) => !f.valid);
    check(
      forwards.length > 0 && unsigned.length === 0,
      `every forward (${forwards.length}) was signed for the forward URL with the account's auth token (twilio.validateRequest)${unsigned.length ? `; invalid: ${unsigned.slice(0, 6).map((f) => `${f.sid} (${f.method} ${f.path})`).join(', ')}` : ''}`,
    );
    const strangerBySid = new Map(strangers.map((m) => [m.sid, m]));
    const whose = (sid) => {
      const m = messages.find((x) => x.sid === sid);
      if (m) return `${sid} (${bySid(sid)?.matched || 'not consumed'}${m.runId ? `, for ${m.runId}` : ''})`;
      return forged.some((f) => f.sid === sid) ? `${sid} (forged)` : `${sid} (no message of this drill)`;
    };
    const notStrangers = [...forwardedTimes.keys()].filter((sid) => !strangerBySid.has(sid));
    check(notStrangers.length === 0, `only the strangers' messages were forwarded: no answer, ambiguous or forged message (${forwardedTimes.size} messages forwarded)${notStrangers.length ? `; also: ${notStrangers.slice(0, 6).map(whose).join(', ')}` : ''}`);
    const altered = [];
    for (const f of forwards) {
      const m = strangerBySid.get(f.sid);
      if (!m) continue;
      const sent = paramsOf(m);
      const keys = new Set([...Object.keys(sent), ...Object.keys(f.params)]);
      const diff = [...keys].filter((k) => sent[k] !== f.params[k]);
      if (f.method !== 'POST' || f.path !== APP_PATH || diff.length) altered.push(`${f.sid}: ${f.method} ${f.path}${diff.length ? `, ${diff.map((k) => `${k} ${JSON.stringify(f.params[k])} (sent ${JSON.stringify(sent[k])})`).join(', ')}` : ''}`);
    }
    check(altered.length === 0, `each forward POSTed every parameter Twilio sent, unchanged, to the forward URL${altered.length ? `: ${altered.slice(0, 4).join('; ')}` : ''}`);
    const forwardedTwice = [...forwardedTimes].filter(([, c]) => c > 1).map(([sid, c]) => `${sid}×${c}`);
    const forgedOnly = forged.slice(0, 2);
    const forgedTraces = [];
    for (const f of forgedOnly) {
      if (consumed.has(f.sid)) forgedTraces.push(`${f.sid} consumed`);
      if (await recorded(f.sid)) forgedTraces.push(`${f.sid} recorded`);
      if (await repliesQueue.getJob(f.sid)) forgedTraces.push(`${f.sid} queued`);
    }
    check(
      forgedAnswers.length === forged.length && forgedAnswers.every((a) => a === 'forbidden') && forgedTraces.length === 0,
      `the ${forged.length} forged posts were refused 403 and added nothing (${forgedAnswers.join(', ')}${forgedTraces.length ? `; ${forgedTraces.join(', ')}` : ''})`,
    );
    // each ambiguous message asked back once, to its sender
    const ambiguousBy = new Map();
    for (const m of messages) if (bySid(m.sid)?.matched === 'ambiguous') ambiguousBy.set(m.from, (ambiguousBy.get(m.from) || 0) + 1);
    const askBackWrong = [];
    for (const p of [...people, ...STRANGERS.map(([from]) => from)]) {
      const asked = sim.by_to_sent_body.filter((e) => e.to === p && ASK_BACK.test(e.body)).reduce((k, e) => k + e.count, 0);
      if (asked !== (ambiguousBy.get(p) || 0)) askBackWrong.push(`${p}: ${asked} ask-back(s) for ${ambiguousBy.get(p) || 0} ambiguous message(s)`);
    }
    const ambiguousCount = [...ambiguousBy.values()].reduce((k, c) => k + c, 0);
    check(askBackWrong.length === 0, `each ambiguous message (${ambiguousCount}) was asked back once${askBackWrong.length ? `: ${askBackWrong.join('; ')}` : ''}`);
    // reply codes: the questions to one person differ, and a person with several saw a code
    const codeWrong = [];
    for (const p of people) {
      const mine = questions.filter((d) => d.to === p);
      if (mine.length < 2) continue;
      const codes = mine.map((d) => fixed.get(d.runId)?.code);
      if (new Set(codes).size !== codes.length || codes.includes(undefined)) codeWrong.push(`${p}: codes ${codes.join(', ')}`);
      if (mine.filter((d) => !d.code).length > 1) codeWrong.push(`${p}: ${mine.filter((d) => !d.code).length} of ${mine.length} questions texted without a code`);
    }
    check(codeWrong.length === 0, `the questions open to one person carry different codes, at most one of them texted without its code${codeWrong.length ? `: ${codeWrong.join('; ')}` : ''}`);
    check(tally.refused.length === 0 && tally.gaveUp.length === 0, `every genuine post answered 200 with empty TwiML once serve was up${tally.refused.length + tally.gaveUp.length ? `: ${[...tally.refused, ...tally.gaveUp.map((x) => `${x}: no answer after ${MAX_POSTS} posts`)].slice(0, 5).join('; ')}` : ''}`);
    const crashes = lab.crashes.serve || 0;
    check(crashes >= 1, `serve crashed after recording a message (${crashes} times)`);
    const serveOutput = lab.processes.filter((p) => p.label.startsWith('ringback-serve')).map((p) => p.output());
    const sweptForwards = serveOutput.reduce((k, out) => k + [...out.matchAll(/[^\n]*inbound messages forwarded again[^\n]*/g)].reduce((a, [line]) => a + Number(/forwarded=(\d+)/.exec(line)?.[1] || 0), 0), 0);
    const swept = lab.processes.filter((p) => p.label.startsWith('ringback-serve')).reduce((k, p) => k + [...p.output().matchAll(/inbound messages recorded earlier were finished[^\n]*?finished=(\d+)|finished=(\d+)[^\n]*inbound messages recorded earlier were finished/g)].reduce((a, x) => a + Number(x[1] || x[2]), 0), 0);

    const ok =
      verdict.settled &&
      verdict.duplicates.length === 0 &&
      verdict.lost.length === 0 &&
      verdict.texts + verdict.legacyDropped.length === verdict.runs &&
      delivered.duplicates.length === 0 &&
      delivered.lost.length === 0 &&
      delivered.unexpected.length === 0 &&
      checks.every((c) => c.startsWith('ok')) &&
      lab.failures.length === 0;
    const report = {
      drill: 'replies',
      timings,
      ok,
      verdict,
      replies: delivered,
      checks,
      figures: {
        'questions / people': `${questions.length} / ${people.length} (${questions.filter((d) => d.code).length} texts showing a code)`,
        'questions texted in': `${textedMs} ms`,
        'reply codes per person (shown in the text, or (hidden))': people
          .filter((p) => questions.filter((d) => d.to === p).length > 1)
          .map((p) => `${p}: ${questions.filter((d) => d.to === p).map((d) => (d.code ? d.code : `(${fixed.get(d.runId)?.code})`)).join(' ')}`)
          .join('; '),
        'messages (answers, sent again after an ask-back, the strangers\')': `${messages.length} (${questions.length}, ${tally.resent}, ${strangers.length})`,
        'ambiguous messages asked back': ambiguousCount,
        'posts (genuine and forged, with Twilio\'s retries)': tally.posts,
        'posts without an answer (serve down or restarting)': tally.unanswered,
        'crashes of serve (after-reply-recorded)': crashes,
        'messages left to serve\'s sweep / finished by a sweep': `${tally.leftToSweep.size} / ${swept}`,
        'late retries (messages; jobs removed before)': `${tally.late}; ${tally.removed}`,
        'strangers\' messages with a post unanswered (serve down) / left to serve\'s sweep': `${strangers.filter((m) => tally.cutShort.has(m.sid)).length} / ${strangers.filter((m) => tally.leftToSweep.has(m.sid)).length} of ${strangers.length}`,
        'forwards the app received (messages forwarded; by serve\'s sweep; app TwiML relayed to Twilio)': `${forwards.length} (${forwardedTimes.size}; ${sweptForwards}; ${tally.relayed})`,
        'messages forwarded more than once (at least once allows it)': forwardedTwice.length ? `${forwardedTwice.length}: ${forwardedTwice.slice(0, 6).join(', ')}` : 0,
        'time to settle (first post to every message consumed and forwarded, nothing pending)': `${settleMs} ms`,
        'workers that failed by themselves': lab.failures.length ? lab.failures.slice(0, 5) : 0,
      },
    };
    log(`[replies ${timings}] ${ok ? 'ok' : 'FAILED'}: ${delivered.consumed} consumed for ${messages.length} messages, ${crashes} crashes of serve, ${forwards.length} forwards for ${strangers.length} strangers' messages`);
    return report;
  } finally {
    for (const close of closeConsumer) await close().catch(() => {});
    try {
      await lab.stop();
    } finally {
      if (app) await app.close();
    }
  }
}

module.exports = { replies };
