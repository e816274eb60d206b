// Unit tests of the scripted processor against fake jobs (no Redis).
'use strict';

const assert = require('node:assert/strict');
const { describe, it } = require('node:test');
const { load } = require('../lib/bullmq');
const { makeProcessor, actionFor } = require('../lib/scripted-processor');
const { VERSIONS } = require('../lib/harness/scenario');

function fakeJob(data, { ats, atm = 0 } = {}) {
  const calls = [];
  return {
    data,
    attemptsStarted: ats,
    attemptsMade: atm,
    calls,
    async moveToDelayed(ts, token) {
      calls.push(['moveToDelayed', ts, token]);
    },
  };
}

for (const version of VERSIONS) {
  describe(`scripted processor [bullmq v${version}]`, () => {
    const bullmq = load(version);
    const run = makeProcessor(bullmq, { allowCrash: false });

    it('picks the action by activation count; the last one repeats', () => {
      const data = { script: ['a', 'b', 'c'] };
      assert.equal(actionFor(fakeJob(data, { ats: 1 })), 'a');
      assert.equal(actionFor(fakeJob(data, { ats: 2 })), 'b');
      assert.equal(actionFor(fakeJob(data, { ats: 3 })), 'c');
      assert.equal(actionFor(fakeJob(data, { ats: 9 })), 'c');
      // Missing/zero attemptsStarted falls back to attemptsMade + 1.
      assert.equal(actionFor(fakeJob(data, { ats: 0, atm: 1 })), 'b');
      assert.equal(actionFor(fakeJob(data, { atm: 0 })), 'a');
    });

    it('no script, or data that is not an object, completes with undefined', async () => {
      for (const data of [{}, null, 'text', 42, [1, 2], { script: [] }]) {
        assert.equal(await run(fakeJob(data, { ats: 1 }), 'tok'), undefined, JSON.stringify(data));
      }
    });

    it('complete, complete:<json>, sleep', async () => {
      assert.deepEqual(await run(fakeJob({ script: ['complete'] }, { ats: 2, atm: 1 }), 't'), { ok: true, attempt: 2 });
      assert.deepEqual(await run(fakeJob({ script: ['complete:{"a":[1,2]}'] }, { ats: 1 }), 't'), { a: [1, 2] });
      assert.equal(await run(fakeJob({ script: ['complete:"s:t"'] }, { ats: 1 }), 't'), 's:t');
      assert.deepEqual(await run(fakeJob({ script: ['sleep:5'] }, { ats: 1 }), 't'), { ok: true, attempt: 1 });
    });

    it('fail, unrecoverable, unknown and refused crash throw the right errors', async () => {
      await assert.rejects(run(fakeJob({ script: ['fail:boom:x'] }, { ats: 1 }), 't'), (e) => e.constructor === Error && e.message === 'boom:x');
      await assert.rejects(run(fakeJob({ script: ['unrecoverable:nope'] }, { ats: 1 }), 't'), (e) => e instanceof bullmq.UnrecoverableError && e.message === 'nope');
      await assert.rejects(run(fakeJob({ script: ['dance'] }, { ats: 1 }), 't'), /unknown script action "dance"/);
      await assert.rejects(run(fakeJob({ script: ['crash'] }, { ats: 1 }), 't'), /refusing to crash/);
    });

    it('delay:<ms> moves the job to delayed with the token and throws DelayedError', async () => {
      const job = fakeJob({ script: ['delay:200', 'complete'] }, { ats: 1 });
      const before = Date.now();
      await assert.rejects(run(job, 'tok-1'), (e) => e instanceof bullmq.DelayedError);
      assert.equal(job.calls.length, 1);
      const [, ts, token] = job.calls[0];
      assert.equal(token, 'tok-1');
      assert.ok(ts >= before + 200 && ts <= Date.now() + 200);
    });
  });
}
