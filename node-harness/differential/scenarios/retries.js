// Attempts, backoffs (fixed, exponential, jitter), immediate retries, unrecoverable failures,
// retries exhausted, stack trace limits.
'use strict';

const assert = require('node:assert/strict');

/** `delayed` QueueEvents of a job: announced backoff = due time - stream time. */
function announced(side, id) {
  return side.events.of(String(id), 'delayed').map((e) => e.data.delay - e.ms);
}

module.exports = [
  {
    name: 'backoff-fixed-exponential',
    covers: ['attempts with fixed backoff', 'attempts with exponential backoff', 'numeric backoff (stored as fixed)'],
    async produce(s) {
      await s.add('fixed', { script: ['fail:f1', 'fail:f2', 'complete'] }, { attempts: 3, backoff: { type: 'fixed', delay: 400 } });
      await s.add('exponential', { script: ['fail:e1', 'fail:e2', 'fail:e3', 'complete'] }, { attempts: 4, backoff: { type: 'exponential', delay: 150 } });
      await s.add('numeric', { script: ['fail:n1', 'complete'] }, { attempts: 2, backoff: 250 });
    },
    timeoutMs: 20_000,
  },
  {
    name: 'backoff-jitter',
    covers: ['backoff with jitter (fixed and exponential)'],
    // Jitter is random: times may differ by up to the jitter range, and the two jobs' retries may
    // interleave differently (events compared per job); the check below pins the range.
    tolerance: { ts: 700, dur: 400 },
    order: 'perJob',
    ignoreDrained: true,
    async produce(s) {
      await s.add('fixed-jitter', { script: ['fail:j1', 'fail:j2', 'complete'] }, { attempts: 3, backoff: { type: 'fixed', delay: 400, jitter: 0.5 } });
      await s.add('exp-jitter', { script: ['fail:k1', 'fail:k2', 'complete'] }, { attempts: 3, backoff: { type: 'exponential', delay: 200, jitter: 0.5 } });
    },
    async check({ node, ringback }) {
      for (const side of [node, ringback]) {
        const [fj, ej] = side.added;
        const a = announced(side, fj);
        assert.equal(a.length, 2, `[${side.label}] fixed-jitter retried twice`);
        // floor(rand*delay*j + delay*(1-j)): [200, 400]; announced = due - stream time, a few ms less
        for (const d of a) assert.ok(d >= 150 && d <= 400, `[${side.label}] fixed jitter delay ${d} in [200, 400]`);
        const b = announced(side, ej);
        assert.equal(b.length, 2);
        // (jitter 1 could draw 0, which Node turns into an immediate retry: 0.5 keeps the shape stable)
        assert.ok(b[0] >= 50 && b[0] <= 200, `[${side.label}] exponential jitter 1st delay ${b[0]} in [100, 200]`);
        assert.ok(b[1] >= 150 && b[1] <= 400, `[${side.label}] exponential jitter 2nd delay ${b[1]} in [200, 400]`);
      }
    },
  },
  {
    name: 'immediate-retry',
    covers: ['immediate retry: attempts without backoff, backoff 0 (retryJob, waiting prev=active)', 'lifo retry goes to the front'],
    async produce(s) {
      await s.add('no-backoff', { script: ['fail:r1', 'fail:r2', 'complete'] }, { attempts: 3 });
      await s.add('zero-backoff', { script: ['fail:z1', 'complete'] }, { attempts: 2, backoff: { type: 'fixed', delay: 0 } });
      await s.add('zero-exponential', { script: ['fail:x1', 'complete'] }, { attempts: 2, backoff: { type: 'exponential', delay: 0 } });
      await s.add('plain-after', { script: ['complete'] });
      await s.add('lifo-retry', { script: ['fail:l1', 'complete'] }, { attempts: 2, lifo: true });
      await s.add('plain-last', { script: ['complete'] });
    },
  },
  {
    name: 'unrecoverable',
    covers: ['unrecoverable failure (UnrecoverableError skips remaining attempts; no retries-exhausted)'],
    async produce(s) {
      await s.add('unrecoverable', { script: ['unrecoverable:nope'] }, { attempts: 3 });
      await s.add('unrecoverable-after-retry', { script: ['fail:first', 'unrecoverable:stop now'] }, { attempts: 5 });
    },
  },
  {
    name: 'retries-exhausted',
    covers: ['retries exhausted (retries-exhausted event)', 'failure without attempts option', 'stackTraceLimit'],
    async produce(s) {
      await s.add('exhausted', { script: ['fail:first', 'fail:second'] }, { attempts: 2 });
      await s.add('default-attempts', { script: ['fail:kaput'] });
      await s.add('one-attempt', { script: ['fail:once'] }, { attempts: 1 });
      await s.add('stack-limit', { script: ['fail:s1', 'fail:s2', 'fail:s3'] }, { attempts: 3, stackTraceLimit: 1 });
      await s.add('stack-none', { script: ['fail:t1'] }, { attempts: 1, stackTraceLimit: 0 });
    },
  },
];
