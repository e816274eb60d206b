// Jobs produced by Node BullMQ and processed by the worker under test: Node must see exactly
// what a Node worker would leave behind (states, hash fields, QueueEvents).
'use strict';

const assert = require('node:assert/strict');
const { describe, it, before, after } = require('node:test');
const { startRedis } = require('../lib/harness/redis');
const { scenarioTest, VERSIONS } = require('../lib/harness/scenario');
const { waitFor } = require('../lib/harness/wait');
const { assertQuiescent, assertMs, normalizeHash, eventTrail } = require('../lib/harness/checks');

let redis;
before(async () => {
  redis = await startRedis();
});
after(async () => {
  await redis?.stop();
});
const getRedis = () => redis;

const T = { timeout: 30_000 };

/** Waits until every id is completed or failed (per Queue.getJobCounts and getState). */
async function waitAllFinished(s, ids, timeoutMs = 15_000) {
  await waitFor(
    async () => {
      for (const id of ids) {
        const job = await s.getJob(id);
        const state = job && (await job.getState());
        if (state !== 'completed' && state !== 'failed') return false;
      }
      return true;
    },
    timeoutMs,
    `jobs ${ids.join(',')} to finish`,
  );
}

/** Asserts the event names for a job, in stream order, ignoring producer-side `added`/initial `waiting`. */
function assertWorkerEvents(s, id, expected) {
  const seq = s.events.sequence(id);
  const start = seq.indexOf('active');
  assert.deepEqual(seq.slice(start), expected, `QueueEvents for job ${id}: ${seq.join(' → ')}`);
}

/** The backoff a `delayed` event announces: its absolute due time minus the stream entry's time. */
function announcedDelays(s, id) {
  return s.events.of(id, 'delayed').map((e) => e.data.delay - e.ms);
}

for (const version of VERSIONS) {
  describe(`process [bullmq v${version}]`, () => {
    it(
      'return values, failures, retries and unrecoverable errors match Node',
      T,
      scenarioTest(getRedis, version, 'outcomes', async (s) => {
        // Started first: every job below wakes an idle worker through the marker.
        await s.startSubject();
        const add = (name, data, opts) => s.queue.add(name, data, opts).then((j) => j.id);
        const plain = await add('plain', {}, {});
        const json = await add('json', { script: ['complete:{"x":1,"nested":{"a":[1,"two",null]},"s":"é"}'] }, {});
        const retryBackoff = await add('retry-backoff', { script: ['fail:boom', 'complete'] }, { attempts: 2, backoff: { type: 'fixed', delay: 100 } });
        const retryNow = await add('retry-now', { script: ['fail:again', 'complete'] }, { attempts: 2 });
        const failOnce = await add('fail-once', { script: ['fail:boom'] }, { attempts: 1 });
        const failDefault = await add('fail-default', { script: ['fail:kaput'] }, {});
        const unrecoverable = await add('unrecoverable', { script: ['unrecoverable:nope'] }, { attempts: 3 });
        const exponential = await add('exponential', { script: ['fail:a', 'fail:b', 'complete'] }, { attempts: 3, backoff: { type: 'exponential', delay: 100 } });
        const exhausted = await add('exhausted', { script: ['fail:first', 'fail:second'] }, { attempts: 2 });
        const all = [plain, json, retryBackoff, retryNow, failOnce, failDefault, unrecoverable, exponential, exhausted];

        await waitAllFinished(s, all);
        const t1 = Date.now();

        const counts = await s.counts();
        assert.equal(counts.completed, 5, `counts ${JSON.stringify(counts)}`);
        assert.equal(counts.failed, 4, `counts ${JSON.stringify(counts)}`);
        for (const k of ['waiting', 'active', 'delayed', 'prioritized']) assert.equal(counts[k], 0, `${k} count in ${JSON.stringify(counts)}`);

        // Completed jobs: returnvalue deep-equal, as Node parses it, on the job and in the event.
        const completedCases = [
          [plain, null, 1, 1],
          [json, { x: 1, nested: { a: [1, 'two', null] }, s: 'é' }, 1, 1],
          [retryBackoff, { ok: true, attempt: 2 }, 2, 2],
          [retryNow, { ok: true, attempt: 2 }, 2, 2],
          [exponential, { ok: true, attempt: 3 }, 3, 3],
        ];
        for (const [id, value, attemptsMade, ats] of completedCases) {
          const job = await s.getJob(id);
          assert.equal(await job.getState(), 'completed', `job ${id} state`);
          assert.deepEqual(job.returnvalue, value, `job ${id} returnvalue`);
          assert.equal(job.attemptsMade, attemptsMade, `job ${id} attemptsMade`);
          const h = await s.hash(id);
          assert.equal(h.ats, String(ats), `job ${id} hash ats (activations)`);
          assert.equal(h.atm, String(attemptsMade), `job ${id} hash atm`);
          assert.equal(h.returnvalue, JSON.stringify(value), `job ${id} hash returnvalue is JSON text`);
          // `now` is read before the script's round trip, so a fetch sent just before the add can
          // stamp processedOn a few ms before the job's timestamp (seen once with a cold connection).
          const processedOn = assertMs(h.processedOn, Number(h.timestamp) - 250, t1, `job ${id} processedOn`);
          assertMs(h.finishedOn, processedOn, t1, `job ${id} finishedOn`);
          assert.equal(await s.redis.zscore(s.key('completed'), id), h.finishedOn, `job ${id} completed-set score = finishedOn`);
          const done = await s.events.wait('completed', id);
          assert.equal(done.length, 1, `exactly one completed event for job ${id}`);
          assert.deepEqual(done[0].data.returnvalue, value, `completed event returnvalue for job ${id}`);
          assert.equal(done[0].data.prev, 'active');
          assert.equal(h.failedReason === undefined, attemptsMade === 1, `job ${id}: failedReason kept from retries only`);
        }
        assert.equal((await s.getJob(retryBackoff)).failedReason, 'boom', 'a retried job keeps the last failedReason');
        assert.equal((await s.getJob(exponential)).failedReason, 'b');
        assert.equal((await s.getJob(exponential)).stacktrace.length, 2, 'one stacktrace entry per failed attempt');

        // Failed jobs.
        const failedCases = [
          // id, reason, attemptsMade, ats, stacktrace entries, retries-exhausted?
          [failOnce, 'boom', 1, 1, 1, true],
          [failDefault, 'kaput', 1, 1, 1, true],
          [unrecoverable, 'nope', 1, 1, 1, false],
          [exhausted, 'second', 2, 2, 2, true],
        ];
        for (const [id, reason, attemptsMade, ats, traces, exhaustedEvent] of failedCases) {
          const job = await s.getJob(id);
          assert.equal(await job.getState(), 'failed', `job ${id} state`);
          assert.equal(job.failedReason, reason, `job ${id} failedReason`);
          assert.equal(job.attemptsMade, attemptsMade, `job ${id} attemptsMade`);
          assert.ok(Array.isArray(job.stacktrace), `job ${id} stacktrace is an array`);
          assert.equal(job.stacktrace.length, traces, `job ${id} stacktrace entries: ${JSON.stringify(job.stacktrace)}`);
          for (const line of job.stacktrace) assert.equal(typeof line, 'string');
          assert.ok(job.stacktrace.at(-1).includes(reason), `job ${id} last stacktrace entry mentions "${reason}": ${job.stacktrace.at(-1)}`);
          assert.equal(job.returnvalue, null, `job ${id} has no returnvalue`);
          const h = await s.hash(id);
          assert.equal(h.ats, String(ats), `job ${id} hash ats`);
          assert.equal(h.returnvalue, undefined, `job ${id} hash has no returnvalue field`);
          assert.equal(h.defa, undefined);
          assert.equal(await s.redis.zscore(s.key('failed'), id), h.finishedOn, `job ${id} failed-set score = finishedOn`);
          const failed = await s.events.wait('failed', id);
          assert.equal(failed.length, 1, `exactly one failed event for job ${id}`);
          assert.equal(failed[0].data.failedReason, reason);
          assert.equal(failed[0].data.prev, 'active');
          const ex = s.events.of(id, 'retries-exhausted');
          assert.deepEqual(
            ex.map((e) => e.data.attemptsMade),
            exhaustedEvent ? [String(attemptsMade)] : [],
            `retries-exhausted events for job ${id}`,
          );
        }
        assert.match((await s.getJob(unrecoverable)).stacktrace[0], /nope/);

        // Event trails: retries through moveToDelayed (backoff) and retryJob (no backoff).
        assertWorkerEvents(s, plain, ['active', 'completed']);
        assertWorkerEvents(s, retryBackoff, ['active', 'delayed', 'waiting', 'active', 'completed']);
        assert.equal(s.events.of(retryBackoff, 'waiting').at(-1).data.prev, 'delayed');
        assertWorkerEvents(s, retryNow, ['active', 'waiting', 'active', 'completed']);
        assert.equal(s.events.of(retryNow, 'waiting').at(-1).data.prev, 'active');
        assertWorkerEvents(s, exponential, ['active', 'delayed', 'waiting', 'active', 'delayed', 'waiting', 'active', 'completed']);
        assertWorkerEvents(s, failOnce, ['active', 'failed', 'retries-exhausted']);
        assertWorkerEvents(s, unrecoverable, ['active', 'failed']);
        assertWorkerEvents(s, exhausted, ['active', 'waiting', 'active', 'failed', 'retries-exhausted']);

        // Backoff: fixed 100 ms; exponential 100 then 200 ms (the delayed event carries the due time).
        // d = due − stream time ≤ the delay; it is shorter by the script's latency (allow 90 ms under load).
        const within = (got, want) => got.length === want.length && got.every((d, i) => d <= want[i] + 5 && d >= want[i] - 90);
        assert.ok(within(announcedDelays(s, retryBackoff), [100]), `fixed backoff delays ${announcedDelays(s, retryBackoff)}`);
        assert.ok(within(announcedDelays(s, exponential), [100, 200]), `exponential backoff delays ${announcedDelays(s, exponential)}`);
        for (const id of [retryBackoff, exponential]) {
          assert.equal((await s.hash(id)).delay, '0', `job ${id}: promotion resets the delay field`);
          const actives = s.events.of(id, 'active');
          const delays = s.events.of(id, 'delayed');
          delays.forEach((d, i) => assert.ok(actives[i + 1].ms >= d.data.delay, `job ${id} re-activated before its backoff was due`));
        }

        // The queue drained after the last job.
        const lastIndex = (names) => s.events.entries.findLastIndex((e) => names.includes(e.event));
        await waitFor(() => lastIndex(['drained']) > lastIndex(['completed', 'failed']), 5000, 'a drained event after the last finish');
        await assertQuiescent(s);
      }),
    );

    it(
      'delayed jobs and the delay action',
      T,
      scenarioTest(getRedis, version, 'delayed', async (s) => {
        await s.startSubject();
        const delayed = await s.queue.add('delayed', { script: ['complete'] }, { delay: 300 });
        assert.equal(await delayed.getState(), 'delayed');
        const selfDelay = await s.queue.add('self-delay', { script: ['delay:200', 'complete'] }, { attempts: 2 });

        const [done] = await s.events.wait('completed', delayed.id, 5000);
        const h = await s.hash(delayed.id);
        const due = Number(h.timestamp) + 300;
        const processedOn = assertMs(h.processedOn, due, due + 1000, 'delayed job processedOn (due + promotion latency ≤ 1 s)');
        assert.deepEqual(done.data.returnvalue, { ok: true, attempt: 1 });
        assertWorkerEvents(s, delayed.id, ['active', 'completed']);
        const promoted = s.events.of(delayed.id, 'waiting').at(-1);
        assert.equal(promoted.data.prev, 'delayed', 'promotion is announced as waiting prev=delayed');
        assert.deepEqual(s.events.of(delayed.id, 'delayed').map((e) => e.data.delay), [due], 'the producer announced the due time');
        assert.equal(h.delay, '0', 'promotion resets the delay field');
        assert.ok(processedOn >= due);

        // delay:200 moves the job to delayed without using an attempt, then it completes.
        const [selfDone] = await s.events.wait('completed', selfDelay.id, 5000);
        assert.deepEqual(selfDone.data.returnvalue, { ok: true, attempt: 1 }, 'the delay action used no attempt');
        assertWorkerEvents(s, selfDelay.id, ['active', 'delayed', 'waiting', 'active', 'completed']);
        const sh = await s.hash(selfDelay.id);
        assert.equal(sh.atm, '1', 'atm counts the completion only');
        assert.equal(sh.ats, '2', 'two activations');
        assert.equal(sh.failedReason, undefined);
        assert.equal(sh.stacktrace, undefined, 'DelayedError is not a failure');
        const [firstActive, secondActive] = s.events.of(selfDelay.id, 'active');
        const [moved] = s.events.of(selfDelay.id, 'delayed');
        assert.ok(moved.data.delay - moved.ms <= 205 && moved.data.delay - moved.ms >= 110, `delay action due in ~200 ms, got ${moved.data.delay - moved.ms}`);
        assert.ok(secondActive.ms >= moved.data.delay, 're-activated only when due');
        assert.ok(secondActive.ms - firstActive.ms < 1500, 'promoted promptly');
        assert.equal(s.events.count('failed'), 0);
        await assertQuiescent(s);
      }),
    );

    it(
      'FIFO within plain jobs, plain before prioritized, priorities ascending',
      T,
      scenarioTest(getRedis, version, 'priority', async (s) => {
        // Added before the worker starts, so the order is decided by the queue alone.
        const specs = [
          ['p0-a', 0],
          ['prio-3', 3],
          ['prio-1', 1],
          ['p0-b', 0],
          ['prio-2', 2],
          ['prio-1-b', 1],
          ['p0-c', 0],
        ];
        const ids = {};
        for (const [name, priority] of specs) {
          const job = await s.queue.add(name, { script: ['complete'] }, priority ? { priority } : {});
          ids[job.id] = name;
        }
        const counts = await s.counts();
        assert.equal(counts.waiting, 3);
        assert.equal(counts.prioritized, 4);
        await s.startSubject({ concurrency: 1 });
        await s.events.wait('completed', undefined, 10_000, specs.length);
        const order = s.events.entries.filter((e) => e.event === 'active').map((e) => ids[e.jobId]);
        assert.deepEqual(order, ['p0-a', 'p0-b', 'p0-c', 'prio-1', 'prio-1-b', 'prio-2', 'prio-3']);
        for (const id of Object.keys(ids)) {
          const job = await s.getJob(id);
          assert.equal(await job.getState(), 'completed');
          assert.equal((await s.hash(id)).priority, String(specs.find(([n]) => n === ids[id])[1]), 'priority field untouched');
        }
        assert.equal(await s.redis.exists(s.key('pc')), 0, 'priority counter deleted once prioritized is empty');
        await assertQuiescent(s);
      }),
    );

    it(
      'removeOnComplete and removeOnFail',
      T,
      scenarioTest(getRedis, version, 'remove-on', async (s) => {
        await s.startSubject({ concurrency: 1 });
        const gone = await s.queue.add('gone', { script: ['complete:7'] }, { removeOnComplete: true });
        const kept = await s.queue.add('kept', { script: ['complete:8'] }, { removeOnComplete: false });
        const failIds = [];
        for (let i = 0; i < 4; i++) failIds.push((await s.queue.add(`f${i}`, { script: [`fail:f${i}`] }, { removeOnFail: 2 })).id);
        const keepTwo = [];
        for (let i = 0; i < 3; i++) keepTwo.push((await s.queue.add(`c${i}`, { script: ['complete'] }, { removeOnComplete: { count: 2 } })).id);

        await s.events.wait('failed', failIds.at(-1), 10_000);
        await s.events.wait('completed', keepTwo.at(-1), 10_000);

        const [goneDone] = await s.events.wait('completed', gone.id);
        assert.equal(goneDone.data.returnvalue, 7, 'completed event still carries the returnvalue');
        assert.equal(await s.getJob(gone.id), undefined, 'removeOnComplete:true deletes the job');
        assert.equal(await s.redis.exists(s.key(gone.id)), 0);
        assert.equal(await s.redis.zscore(s.key('completed'), gone.id), null);
        assert.equal((await s.events.wait('completed', kept.id))[0].data.returnvalue, 8);

        // removeOnFail: 2 keeps the two newest failed jobs (processed FIFO, so the last two).
        assert.deepEqual((await s.redis.zrange(s.key('failed'), 0, -1)).sort(), failIds.slice(-2).sort());
        for (const id of failIds.slice(0, 2)) assert.equal(await s.redis.exists(s.key(id)), 0, `failed job ${id} pruned`);
        for (const id of failIds.slice(-2)) assert.equal((await s.getJob(id)).failedReason, `f${failIds.indexOf(id)}`);
        assert.equal(s.events.count('failed'), 4, 'every failure was announced');

        // removeOnComplete {count: 2} trims the whole completed set to its two newest entries,
        // including `kept`, which finished earlier without that option.
        const completed = await s.redis.zrange(s.key('completed'), 0, -1);
        assert.deepEqual(completed.sort(), keepTwo.slice(-2).sort());
        for (const id of [kept.id, keepTwo[0]]) assert.equal(await s.redis.exists(s.key(id)), 0, `completed job ${id} pruned`);
        await assertQuiescent(s);
      }),
    );

    it(
      'leaves the same Redis state and events as the Node reference worker',
      T,
      scenarioTest(getRedis, version, 'differential', async (s) => {
        const ref = await s.sibling('differential-ref');
        const jobs = [
          ['plain', {}, {}],
          ['string-data', 'just a string', {}],
          ['json', { script: ['complete:[1,{"a":"b"},true]'] }, { attempts: 5 }],
          ['retry', { script: ['fail:one', 'complete'] }, { attempts: 3, backoff: 50 }],
          ['retry-now', { script: ['fail:one', 'fail:two', 'complete:"done"'] }, { attempts: 3 }],
          ['fail', { script: ['fail:bad thing'] }, { attempts: 2, backoff: { type: 'fixed', delay: 30 } }],
          ['unrec', { script: ['unrecoverable:stop'] }, { attempts: 4 }],
          ['self-delay', { script: ['delay:50', 'complete'] }, {}],
          ['prio', { script: ['complete:{"p":true}'] }, { priority: 5 }],
          ['named-id', { script: ['complete'] }, { jobId: 'custom-id-1' }],
          ['trace-limit', { script: ['fail:s1', 'fail:s2', 'fail:s3'] }, { attempts: 3, stackTraceLimit: 2 }],
        ];
        const addAll = async (scn) => {
          const ids = [];
          for (const [name, data, opts] of jobs) ids.push((await scn.queue.add(name, data, opts)).id);
          return ids;
        };
        const ids = await addAll(s);
        const refIds = await addAll(ref);
        assert.deepEqual(ids, refIds);

        await s.startSubject({ concurrency: 1 });
        await ref.nodeWorker({ concurrency: 1 });
        await waitAllFinished(s, ids);
        await waitAllFinished(ref, ids);

        for (const id of ids) {
          assert.deepEqual(normalizeHash(await s.hash(id)), normalizeHash(await ref.hash(id)), `job ${id} hash (subject vs Node)`);
          assert.deepEqual(eventTrail(s, id), eventTrail(ref, id), `job ${id} QueueEvents (subject vs Node)`);
          const [a, b] = [await s.getJob(id), await ref.getJob(id)];
          assert.equal(await a.getState(), await b.getState(), `job ${id} state`);
          assert.equal(a.stacktrace.length, b.stacktrace.length, `job ${id} stacktrace length`);
        }
        for (const key of ['completed', 'failed']) {
          assert.deepEqual((await s.redis.zrange(s.key(key), 0, -1)).sort(), (await ref.redis.zrange(ref.key(key), 0, -1)).sort(), `${key} set`);
        }
        assert.deepEqual(await s.counts(), await ref.counts());
        await assertQuiescent(s);
        await assertQuiescent(ref);
      }),
    );
  });
}
