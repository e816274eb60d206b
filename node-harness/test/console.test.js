// The operators' console in a real browser: headless Chromium from Debian's packages
// (/usr/bin/chromium; scripts/test installs it when missing) driven by playwright-core, against
// a real redis-server, `ringback twilio-sim`, a `ringback worker` and `ringback serve`, with the
// jobs added by the real Node BullMQ Queue. It signs in, finds a run by id, opens its timeline
// and checks the states and their order; a run whose callbacks the simulator delivered in
// reverse shows both orders. A question asked through bin/ask.js shows its reply code, its
// answer (posted to the signed inbound webhook) and the replies-queue job a Node Worker
// completed; a message that answered no question is listed on the Inbound page.
// A screenshot of each page goes to node-harness/artifacts/.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');
const { chromium } = require('playwright-core');
const { startRedis, freePort } = require('../lib/harness/redis');
const { startTwilioSim, ringbackBin } = require('../lib/harness/twilio-sim');
const { WorkerProcess } = require('../lib/harness/subject');
const { waitFor, withTimeout } = require('../lib/harness/wait');
const { load, connectionFromUrl } = require('../lib/bullmq');
const { messageSid, inboundParams, postInbound, textsTo } = require('../lib/harness/inbound');
const { ask } = require('../bin/ask');

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ARTIFACTS = path.join(__dirname, '..', 'artifacts');
const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
const AUTH_TOKEN = 'f3e1c0ffee5eed0ddba11c0de0123456';
const API_TOKEN = 'console-api-token-0123456789';
const READ_TOKEN = 'console-read-token-0123456789';
const QUEUE = 'console';
const REVERSED_TO = '+15550009999';
const RUNS = ['console-run-1', 'console-run-2', 'console-run-3', 'console-run-4'];
const REVERSED = 'console-run-reversed';
const OUR_NUMBER = '+15005550006';
const QUESTION = { runId: 'console-question', to: '+15550007777', body: 'Deploy web-3 to production?' };
const STRANGER = '+15550008888';


describe('the console in headless Chromium', { timeout: 90_000 }, () => {
  let redis;
  let sim;
  let worker;
  let serve;
  let base;
  let queue;
  let context;
  let reportsDir;
  let userDataDir;
  const outside = [];
  const cspViolations = [];
  // ask.js's waits, stopped before Redis is (a failed case leaves no Worker behind)
  const stopAsking = new AbortController();
  const asking = [];

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/test installs it (apt-get install -y chromium)`);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    redis = await startRedis();
    sim = await startTwilioSim({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
    await sim.putFaults({ callbacks: [{ to: REVERSED_TO, reversed: true }] });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    reportsDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringback-drill-reports-'));
    // saved output of `DRILL_TIMINGS=compressed ringback drill stall --runs 6 --json` (a drill
    // run takes its own time; node-harness/test/drill.test.js runs them)
    fs.copyFileSync(path.join(__dirname, '..', '..', 'tests', 'fixtures', 'drill-stall-report.json'), path.join(reportsDir, 'stall.json'));
    const env = {
      ...process.env,
      NO_COLOR: '1',
      RUST_LOG: 'warn,ringback_queue::worker=info',
      REDIS_URL: redis.url,
      RINGBACK_QUEUE: QUEUE,
      TWILIO_ACCOUNT_SID: ACCOUNT_SID,
      TWILIO_AUTH_TOKEN: AUTH_TOKEN,
      TWILIO_FROM: OUR_NUMBER,
      TWILIO_API_BASE: sim.base,
      RINGBACK_STATUS_CALLBACK_URL: `${base}/api/notify/webhook/status`,
      RINGBACK_METRICS_LISTEN: '127.0.0.1:0',
    };
    worker = new WorkerProcess('ringback worker', ringbackBin(), ['worker'], env);
    serve = new WorkerProcess('ringback serve', ringbackBin(), ['serve', '--listen', `127.0.0.1:${port}`], {
      ...env,
      RINGBACK_PUBLIC_URL: base,
      RINGBACK_API_TOKEN: API_TOKEN,
      RINGBACK_READ_TOKEN: READ_TOKEN,
      RINGBACK_DRILL_REPORTS: reportsDir,
    });
    await worker.waitStarted();
    await waitFor(async () => (await fetch(`${base}/readyz`).catch(() => null))?.status === 200, 15_000, 'ringback serve to be ready');

    const { Queue } = load('6');
    queue = new Queue(QUEUE, { connection: connectionFromUrl(redis.url) });
    const runs = [...RUNS.map((runId, i) => [runId, `+1555000010${i}`]), [REVERSED, REVERSED_TO]];
    for (const [runId, to] of runs) {
      await queue.add('agent-callback', { runId, to, body: `Run ${runId} finished` }, { jobId: runId, attempts: 5 });
    }
    const record = async (runId) => (await fetch(`${base}/api/notify/callbacks/${runId}`, { headers: { authorization: `Bearer ${READ_TOKEN}` } })).json();
    await waitFor(
      async () => {
        const records = await Promise.all(runs.map(([runId]) => record(runId)));
        return records.every((r) => r.state === 'delivered' && r.history.length >= 3);
      },
      20_000,
      'every run delivered with its callbacks recorded',
    ).catch((err) => {
      throw new Error(`${err.message}\nworker:\n${worker.output().slice(-2000)}\nserve:\n${serve.output().slice(-2000)}`);
    });

    userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringback-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1200, height: 900 },
    });
    context.on('request', (req) => {
      if (!req.url().startsWith(base)) outside.push(req.url());
    });
    context.on('console', (msg) => {
      if (/Content[- ]Security[- ]Policy/i.test(msg.text())) cspViolations.push(msg.text());
    });
  });

  after(async () => {
    stopAsking.abort(new Error('the test file ended'));
    await Promise.allSettled(asking);
    await context?.close().catch(() => {});
    await queue?.close().catch(() => {});
    await serve?.destroy();
    await worker?.destroy();
    await sim?.stop();
    await redis?.stop();
    for (const dir of [reportsDir, userDataDir]) if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, `console-${name}.png`), fullPage: true });
  const texts = (page, selector) => page.locator(selector).allInnerTexts();

  it('signs in, finds a run by id, and shows its timeline in order; a reversed run shows both orders', async () => {
    const page = context.pages()[0] || (await context.newPage());

    // not signed in: the sign-in form; a wrong token is refused, said in words
    const first = await page.goto(`${base}/console/callbacks`);
    assert.equal(first.status(), 401);
    assert.match(first.headers()['content-security-policy'], /default-src 'none'/);
    await page.fill('#token', 'not-the-token-0123456789');
    await page.click('form.login button');
    assert.match(await page.locator('p.error').innerText(), /Wrong token/);
    assert.equal(page.url().includes('token'), false, 'no token in the URL');
    await shot(page, 'login');

    // the read token: a session cookie that is not the token, HttpOnly, SameSite=Strict
    await page.fill('#token', READ_TOKEN);
    await page.click('form.login button');
    await page.waitForURL(`${base}/console/callbacks`);
    const cookies = await context.cookies(`${base}/console/callbacks`);
    const session = cookies.find((c) => c.name === 'ringback_console');
    assert.ok(session, `cookies: ${JSON.stringify(cookies)}`);
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    assert.equal(session.value.includes(READ_TOKEN), false, 'the cookie is not the token');
    const listed = await page.locator('tr[data-run]').evaluateAll((rows) => rows.map((r) => r.dataset.run));
    assert.deepEqual(new Set(listed), new Set([...RUNS, REVERSED]));
    assert.equal(listed.length, RUNS.length + 1);
    const masked = await texts(page, 'td.mono.nowrap');
    assert.ok(masked.every((t) => /^\*+\d{4}$/.test(t)), `numbers masked: ${masked}`);
    await shot(page, 'callbacks');

    // filter by state: all delivered
    await page.selectOption('#state', 'delivered');
    await page.click('form.search button');
    await page.waitForURL(/state=delivered/);
    assert.equal(await page.locator('tr[data-run]').count(), RUNS.length + 1);
    await page.selectOption('#state', 'undelivered');
    await page.click('form.search button');
    await page.waitForURL(/state=undelivered/);
    assert.equal(await page.locator('tr[data-run]').count(), 0);

    // find the reversed run by id and open it
    await page.selectOption('#state', '');
    await page.fill('#q', REVERSED);
    await page.click('form.search button');
    await page.waitForURL(/q=console-run-reversed/);
    assert.deepEqual(await page.locator('tr[data-run]').evaluateAll((rows) => rows.map((r) => r.dataset.run)), [REVERSED]);
    await page.click(`a[href="/console/runs/${REVERSED}"]`);
    await page.waitForURL(`${base}/console/runs/${REVERSED}`);
    assert.equal(await page.locator('#run-id').innerText(), REVERSED);
    assert.match(await page.locator('#run-state').innerText(), /delivered/);
    assert.equal(await page.locator('#job-state').innerText(), 'completed');
    // which worker: the live worker's heartbeat name (pid and host), not only its id
    assert.match(await page.locator('#worker').innerText(), new RegExp(`pid ${worker.pid}\\b`));
    // arrival order as the simulator sent them (reversed), and the ranking's order. Twilio's
    // own answer (queued) is recorded when the worker gets it: before or after the callbacks.
    const arrival = await texts(page, '#arrival-order li');
    assert.deepEqual(arrival.filter((s) => s !== 'queued'), ['delivered', 'sent'], `arrival: ${arrival}`);
    assert.deepEqual(await texts(page, '#ranking-order li'), ['queued', 'sent', 'delivered']);
    const verdicts = await page.locator('#receipts tbody tr').evaluateAll((rows) =>
      rows.map((r) => [r.children[2].innerText, r.children[3].innerText, r.children[5].innerText]),
    );
    const callbacks = verdicts.filter(([source]) => source === 'webhook');
    assert.deepEqual(callbacks, [['webhook', 'delivered', 'in order'], ['webhook', 'sent', 'out of order']], JSON.stringify(verdicts));
    await shot(page, 'run-reversed');

    // a run in order: its timeline drawn in the order things happened, no disorder section
    await page.goto(`${base}/console/runs/${RUNS[0]}`);
    const titles = await texts(page, '#timeline .title');
    // causal chains only: Twilio may call back before the worker records its answer
    for (const chain of [
      ['Enqueued', 'Taken by a worker', 'Claimed', 'Sent', 'Job completed'],
      ['Claimed', 'Status callback: sent', 'Status callback: delivered'],
      ['Claimed', 'Twilio answered: queued'],
    ]) {
      const positions = chain.map((t) => titles.indexOf(t));
      assert.ok(positions.every((p) => p >= 0), `every step shown: ${titles}`);
      assert.deepEqual([...positions].sort((a, b) => a - b), positions, `in order: ${titles}`);
    }
    assert.equal(await page.locator('#disorder').count(), 0);
    const statuses = await texts(page, '#receipts td.status');
    assert.deepEqual(statuses.filter((s) => s !== 'queued'), ['sent', 'delivered'], `${statuses}`);
    await shot(page, 'run');

    // an unknown run and a hostile id: a clear page, nothing executed
    let dialogs = 0;
    page.on('dialog', (d) => {
      dialogs += 1;
      d.dismiss();
    });
    const unknown = await page.goto(`${base}/console/runs/${encodeURIComponent('<img src=x onerror=alert(1)>')}`);
    assert.equal(unknown.status(), 404);
    assert.match(await page.locator('p.error').innerText(), /Nothing is recorded for run “<img src=x onerror=alert\(1\)>”/);
    assert.equal(await page.locator('main img').count(), 0);
    assert.equal(dialogs, 0);

    // Now: nothing open, the hour's texts in the chart
    await page.click('nav a[href="/console/now"]');
    await page.waitForURL(`${base}/console/now`);
    assert.equal(await page.locator('#open-count').innerText(), '0');
    assert.match(await page.locator('p.legend').innerText(), /sent \(5\).*delivered \(5\)/);
    assert.ok((await page.locator('#chart rect.sent').count()) === 60);
    await shot(page, 'now');

    // Drills: the saved report
    await page.click('nav a[href="/console/drills"]');
    await page.waitForURL(`${base}/console/drills`);
    assert.match(await page.locator('main').innerText(), /drill stall · timings compressed · passed/);
    assert.match(await page.locator('table.cases').innerText(), /ringback@after-claim/);
    await shot(page, 'drills');

    // the stylesheet applied (served by ringback), nothing fetched elsewhere, no CSP complaint
    const brandColor = await page.locator('header.top').evaluate((el) => getComputedStyle(el).backgroundColor);
    assert.equal(brandColor, 'rgb(29, 36, 48)');
    assert.deepEqual(outside, []);
    assert.deepEqual(cspViolations, []);

    // sign out: back to the form
    await page.click('form.logout button');
    await page.waitForURL(`${base}/console/login`);
    const again = await page.goto(`${base}/console/now`);
    assert.equal(again.status(), 401);
  });

  it('shows a question, its answer and the replies-queue job a Node Worker completed; an unmatched message on Inbound', async () => {
    const page = context.pages()[0] || (await context.newPage());
    // the producer's side: ask.js adds the question and waits with a plain BullMQ Worker
    const answer = ask({ bullmq: load('6'), connection: connectionFromUrl(redis.url), queue: QUEUE, ...QUESTION, replyWithin: '1h', timeoutMs: 30_000, signal: stopAsking.signal });
    answer.catch(() => {});
    asking.push(answer);
    await waitFor(async () => (await textsTo(sim.base, QUESTION.to)).length === 1, 20_000, 'the question texted');
    const hook = { base, publicUrl: base, authToken: AUTH_TOKEN };
    const sid = messageSid(1, 0xc0);
    const posted = await postInbound(hook, inboundParams({ sid, from: QUESTION.to, to: OUR_NUMBER, body: 'yes, ship it', accountSid: ACCOUNT_SID }));
    assert.equal(posted.status, 200);
    const data = await withTimeout(answer, 20_000, 'ask() to get the answer');
    assert.deepEqual([data.runId, data.text, data.matched], [QUESTION.runId, 'yes, ship it', 'answer']);
    const { Queue } = load('6');
    const replies = new Queue(`${QUEUE}-replies`, { connection: connectionFromUrl(redis.url) });
    try {
      await waitFor(async () => (await (await replies.getJob(sid))?.getState()) === 'completed', 20_000, 'the reply job completed');
    } finally {
      await replies.close();
    }
    // a message from someone no question was asked
    const stray = messageSid(2, 0xc0);
    assert.equal((await postInbound(hook, inboundParams({ sid: stray, from: STRANGER, to: OUR_NUMBER, body: 'who is this?', accountSid: ACCOUNT_SID }))).status, 200);
    const record = await (await fetch(`${base}/api/notify/callbacks/${QUESTION.runId}`, { headers: { authorization: `Bearer ${READ_TOKEN}` } })).json();
    const { code } = record.question;

    // signed out by the first case: sign in again
    await page.goto(`${base}/console/login`);
    await page.fill('#token', READ_TOKEN);
    await page.click('form.login button');
    await page.waitForURL(`${base}/console/callbacks`);

    // the run page: the question, answered by the message, and the job that carried it
    await page.goto(`${base}/console/runs/${QUESTION.runId}`);
    assert.equal(await page.locator('#run-id').innerText(), QUESTION.runId);
    const question = page.locator('#question');
    assert.equal(await question.count(), 1);
    assert.match(await page.locator('#reply-code').innerText(), new RegExp(`^${code}\\b.*not shown in the text`));
    assert.equal(await page.locator('#answered').innerText(), `by ${sid}`);
    const rows = await page.locator('#replies tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.innerText)));
    assert.equal(rows.length, 1, JSON.stringify(rows));
    assert.deepEqual(await texts(page, '#replies td.reply-text'), ['yes, ship it']);
    const [, from, , messageSidCell, jobCell] = rows[0];
    assert.deepEqual([from, messageSidCell, jobCell], ['********7777', sid, sid]);
    const [jobState] = await texts(page, '#replies td.job-state');
    assert.match(jobState, /^completed at /);
    const titles = await texts(page, '#timeline .title');
    const replied = titles.indexOf('Reply from ********7777');
    assert.ok(replied >= 0 && titles.indexOf('Reply job completed') > replied, `the reply and its job in the timeline, in order: ${titles}`);
    await shot(page, 'run-question');

    // Inbound: the stranger's message, not the answer
    assert.equal(await page.locator('nav a[href="/console/inbound"]').innerText(), 'Inbound');
    await page.click('nav a[href="/console/inbound"]');
    await page.waitForURL(`${base}/console/inbound`);
    const unmatched = await page.locator('table#unmatched tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.children].map((td) => td.innerText)));
    assert.equal(unmatched.length, 1, JSON.stringify(unmatched));
    assert.deepEqual(unmatched[0].slice(1), ['********8888', 'who is this?', 'unmatched', stray]);
    assert.equal(await page.locator('table#opt-outs').count(), 0, 'no opt-out reported');
    assert.equal(await page.locator('nav a.active').innerText(), 'Inbound');
    await shot(page, 'inbound');
    assert.deepEqual(outside, []);
    assert.deepEqual(cspViolations, []);
  });
});
