// Bull Board, the dashboard people put in front of BullMQ queues, in a real browser: headless
// Chromium from Debian's packages (/usr/bin/chromium, or CHROMIUM_PATH; scripts/test installs it
// when missing) driven by playwright-core. The queue is served only by ringback's scripted worker
// (RINGBACK_WORKER_CMD, else ../target/debug/examples/scripted_worker) with RINGBACK_WORKER_NAME
// set; the jobs are added by the real Node BullMQ 6 Queue; the board is @bull-board/express with
// the BullMQAdapter over that Queue, on a loopback port. The checks read what a person sees: the
// queue in the list, its completed and failed counts and jobs (each "by" the ringback worker), the
// queue info's worker count and the connected worker's name; once the worker is stopped, no
// worker. A screenshot of each page goes to target/bull-board/ (at the repository root); a failed
// check names the screenshot taken when it failed.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');
const express = require('express');
const { chromium } = require('playwright-core');
const { createBullBoard } = require('@bull-board/api');
const { BullMQAdapter } = require('@bull-board/api/bullMQAdapter');
const { ExpressAdapter } = require('@bull-board/express');
const { startRedis } = require('../lib/harness/redis');
const { WorkerProcess, subjectCommand, subjectIsNode, workerEnv } = require('../lib/harness/subject');
const { waitFor } = require('../lib/harness/wait');
const { load, connectionFromUrl } = require('../lib/bullmq');

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const ROOT = path.resolve(__dirname, '..', '..');
const SHOTS = path.join(ROOT, 'target', 'bull-board');
const SCRIPTED_WORKER = path.join(ROOT, 'target', 'debug', 'examples', 'scripted_worker');
const QUEUE = 'texts';
const WORKER_NAME = 'ringback-board-1';
const BASE_PATH = '/board';
const COMPLETED = ['run-1', 'run-2', 'run-3'];
const FAILED = 'run-refused';
const FAILED_REASON = 'Twilio refused the number';
// How long the page may take to show what it was asked for (it polls the API every few seconds).
const SEEN_MS = 15_000;
const DIALOG = '[role="dialog"]';

/** The worker under test: RINGBACK_WORKER_CMD when set (as every other test), else the scripted worker. */
function workerCommand() {
  if (!subjectIsNode()) return subjectCommand();
  assert.ok(fs.existsSync(SCRIPTED_WORKER), `${SCRIPTED_WORKER} is missing: cargo build --examples (or set RINGBACK_WORKER_CMD)`);
  return [SCRIPTED_WORKER, []];
}

describe('Bull Board in headless Chromium shows a queue served by a ringback worker', { timeout: 120_000 }, () => {
  let redis;
  let worker;
  let queue;
  let server;
  let board;
  let browser;
  let page;
  const outside = [];

  before(async () => {
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing: scripts/test installs it (apt-get install -y chromium)`);
    fs.mkdirSync(SHOTS, { recursive: true });
    redis = await startRedis();
    const [cmd, args] = workerCommand();
    const env = workerEnv({ redisUrl: redis.url, queue: QUEUE, prefix: 'bull', version: '6', concurrency: 1, workerName: WORKER_NAME });
    worker = new WorkerProcess('ringback scripted worker', cmd, args, env);
    await worker.waitStarted();

    const { Queue } = load('6');
    queue = new Queue(QUEUE, { connection: connectionFromUrl(redis.url) });
    for (const jobId of COMPLETED) await queue.add('text', { script: ['complete'], runId: jobId }, { jobId });
    await queue.add('text', { script: [`fail:${FAILED_REASON}`], runId: FAILED }, { jobId: FAILED });
    await waitFor(
      async () => {
        const c = await queue.getJobCounts('completed', 'failed', 'wait', 'active');
        return c.completed === COMPLETED.length && c.failed === 1 && c.wait === 0 && c.active === 0;
      },
      15_000,
      'the ringback worker to complete three jobs and fail one',
    ).catch((err) => {
      throw new Error(`${err.message}\n--- ${worker.label} ---\n${worker.output().slice(-3000)}`);
    });
    // what the board will read: one connection, named as a Node Worker names its own
    const names = (await queue.getWorkers()).map((w) => w.rawname);
    assert.deepEqual(names, [`bull:${Buffer.from(QUEUE).toString('base64')}:w:${WORKER_NAME}`], 'Queue.getWorkers() before the board asks');

    const serverAdapter = new ExpressAdapter();
    serverAdapter.setBasePath(BASE_PATH);
    createBullBoard({ queues: [new BullMQAdapter(queue)], serverAdapter });
    const app = express();
    app.use(BASE_PATH, serverAdapter.getRouter());
    server = await new Promise((resolve, reject) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
      s.once('error', reject);
    });
    board = `http://127.0.0.1:${server.address().port}${BASE_PATH}`;

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    // The board's stylesheet asks for web fonts from outside; nothing leaves the loopback
    // (the page falls back to local fonts).
    await context.route('**/*', (route) => {
      if (route.request().url().startsWith(board)) return route.continue();
      outside.push(route.request().url());
      return route.abort();
    });
    page = await context.newPage();
  });

  after(async () => {
    await browser?.close().catch(() => {});
    if (server) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await queue?.close().catch(() => {});
    if (worker?.running) {
      worker.kill('SIGTERM');
      await worker.waitExit(20_000).catch(() => worker.destroy());
    }
    await redis?.stop();
  });

  /**
   * Runs the checks of one page; saves its screenshot as <name>.png, or <name>-failed.png when a
   * check failed, whose message then names that file (and ends with the worker's output). A
   * dialog is taken as the window shows it (`fullPage: false`).
   */
  async function shows(name, checks, { fullPage = true } = {}) {
    try {
      await checks();
    } catch (err) {
      const file = path.join(SHOTS, `${name}-failed.png`);
      await page.screenshot({ path: file, fullPage }).catch((e) => {
        err.message += `\n(no screenshot: ${e.message})`;
      });
      err.message += `\nscreenshot: ${file}\npage: ${page.url()}\n--- ${worker.label} ---\n${worker.output().slice(-2000)}`;
      throw err;
    }
    await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage });
  }

  /**
   * Waits until the visible text of the element `selector` (CSS; default the whole page) matches
   * `re`; on the deadline fails with the text it showed.
   */
  async function seeText(re, what, selector = 'body') {
    try {
      await page.waitForFunction(
        ([sel, src, flags]) => {
          const el = document.querySelector(sel);
          return !!el && new RegExp(src, flags).test(el.innerText);
        },
        [selector, re.source, re.flags],
        { timeout: SEEN_MS, polling: 100 },
      );
    } catch (err) {
      const text = await page.locator(selector).first().innerText({ timeout: 1000 }).catch(() => '(nothing there)');
      assert.fail(`${what}: ${selector} never showed ${re} within ${SEEN_MS} ms (${err.message.split('\n')[0]}); it shows:\n${text.slice(0, 1500)}`);
    }
  }

  /** Waits until the visible text of `selector` no longer matches `re` (a list being replaced). */
  async function seeNoText(re, what, selector = 'body') {
    try {
      await page.waitForFunction(
        ([sel, src, flags]) => {
          const el = document.querySelector(sel);
          return !!el && !new RegExp(src, flags).test(el.innerText);
        },
        [selector, re.source, re.flags],
        { timeout: SEEN_MS, polling: 100 },
      );
    } catch (err) {
      const text = await page.locator(selector).first().innerText({ timeout: 1000 }).catch(() => '(nothing there)');
      assert.fail(`${what}: ${selector} still showed ${re} after ${SEEN_MS} ms (${err.message.split('\n')[0]}); it shows:\n${text.slice(0, 1500)}`);
    }
  }

  it('lists the queue with its completed and failed counts', async () => {
    await page.goto(`${board}/`);
    await shows('overview', async () => {
      const link = page.getByRole('link', { name: QUEUE, exact: true }).first();
      await link.waitFor({ state: 'visible', timeout: SEEN_MS });
      await seeText(/COMPLETED\s*3\b/i, 'the completed count');
      await seeText(/FAILED\s*1\b/i, 'the failed count');
      await seeText(/\b4 Jobs\b/i, 'the queue total');
    });
  });

  it('shows the completed and the failed jobs, each processed by the ringback worker', async () => {
    await page.getByRole('link', { name: QUEUE, exact: true }).first().click();
    await page.waitForURL(`${board}/queue/${QUEUE}**`, { timeout: SEEN_MS });
    await shows('queue-completed', async () => {
      await page.getByRole('link', { name: /^completed/i }).click({ timeout: SEEN_MS });
      await page.waitForURL(/status=completed/, { timeout: SEEN_MS });
      for (const id of COMPLETED) await seeText(new RegExp(`\\b${id}\\b`), `completed job ${id}`, 'main');
      await seeText(new RegExp(`by ${WORKER_NAME}`), 'the completed jobs processed "by" the ringback worker', 'main');
      await seeText(/Finished at/, 'a finish time', 'main');
      await seeNoText(new RegExp(FAILED), 'the failed job gone from the Completed list', 'main');
    });
    await shows('queue-failed', async () => {
      await page.getByRole('link', { name: /^failed/i }).click({ timeout: SEEN_MS });
      await page.waitForURL(/status=failed/, { timeout: SEEN_MS });
      await seeText(new RegExp(`\\b${FAILED}\\b`), 'the failed job', 'main');
      await seeText(new RegExp(FAILED_REASON), 'its failure reason', 'main');
      await seeText(new RegExp(`by ${WORKER_NAME}`), 'the failed job processed "by" the ringback worker', 'main');
      await seeNoText(new RegExp(`\\b(${COMPLETED.join('|')})\\b`), 'the completed jobs gone from the Failed list', 'main');
    });
  });

  it("counts one connected worker in the queue's info and names it", async () => {
    await shows(
      'queue-info-count',
      async () => {
        await page.getByRole('button', { name: 'Queue info' }).click({ timeout: SEEN_MS });
        await page.getByRole('dialog').waitFor({ state: 'visible', timeout: SEEN_MS });
        await seeText(/Workers\s*1\b/, 'the worker count', DIALOG);
        await page.getByRole('dialog').getByText('Workers', { exact: true }).scrollIntoViewIfNeeded({ timeout: SEEN_MS });
      },
      { fullPage: false },
    );
    await shows(
      'queue-info-workers',
      async () => {
        const dialog = page.getByRole('dialog');
        await dialog.getByText('Connected workers').click({ timeout: SEEN_MS });
        await seeText(new RegExp(`\\b${WORKER_NAME}\\b`), 'the connected worker by name', DIALOG);
        assert.equal(await dialog.locator('li', { hasText: WORKER_NAME }).count(), 1, 'one worker listed');
      },
      { fullPage: false },
    );
  });

  it('shows no worker once the ringback worker has stopped', async () => {
    worker.kill('SIGTERM');
    const exit = await worker.waitExit(20_000).catch((err) => ({ error: err.message }));
    await page.goto(`${board}/queue/${QUEUE}`);
    await shows(
      'queue-info-no-worker',
      async () => {
        assert.equal(exit.code, 0, `the worker exits cleanly on SIGTERM: ${JSON.stringify(exit)}`);
        await page.getByRole('button', { name: 'Queue info' }).click({ timeout: SEEN_MS });
        await page.getByRole('dialog').waitFor({ state: 'visible', timeout: SEEN_MS });
        await seeText(/Workers\s*No workers/, 'no worker counted', DIALOG);
        await seeNoText(new RegExp(WORKER_NAME), 'the stopped worker gone from the queue info', DIALOG);
        // the board's stylesheet asks for its web fonts; nothing else went out
        const others = outside.filter((u) => !/^https:\/\/fonts\.(googleapis|gstatic)\.com\//.test(u));
        assert.deepEqual(others, [], 'the board asked nothing else from outside the loopback');
      },
      { fullPage: false },
    );
  });
});
