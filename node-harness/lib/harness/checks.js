// Assertions shared by the interop tests: queue hygiene and Node-visible job snapshots.
'use strict';

const assert = require('node:assert/strict');
const { scanAll } = require('../bullmq');

/** All keys of the scenario's queue matching `pattern` (a suffix glob). */
async function scanKeys(s, pattern) {
  return scanAll(s.redis, s.key(pattern));
}

/** Nothing left in flight: `active` empty, no lock keys, `stalled` set empty. */
async function assertQuiescent(s) {
  assert.deepEqual(await s.redis.lrange(s.key('active'), 0, -1), [], 'active list must be empty when all jobs finished');
  assert.deepEqual(await scanKeys(s, '*:lock'), [], 'no job lock may survive its job');
  assert.deepEqual(await s.redis.smembers(s.key('stalled')), [], 'stalled set must be empty when no job is active');
}

/** Asserts `ts` (a hash field string) is an integer millisecond timestamp within [min, max]. */
function assertMs(ts, min, max, what) {
  assert.match(String(ts), /^\d+$/, `${what} must be an integer ms timestamp, got ${JSON.stringify(ts)}`);
  const n = Number(ts);
  assert.ok(n >= min && n <= max, `${what}=${n} must be within [${min}, ${max}]`);
  return n;
}

/**
 * A job hash with run-dependent values replaced by their shape, for comparing two workers:
 * timestamps become "<ms>", a stacktrace becomes its length and first lines (stacks differ by runtime).
 */
function normalizeHash(h) {
  const out = {};
  for (const [k, v] of Object.entries(h)) {
    if (['timestamp', 'processedOn', 'finishedOn'].includes(k)) out[k] = /^\d+$/.test(v) ? '<ms>' : `<bad ms ${v}>`;
    else if (k === 'stacktrace') {
      let st;
      try {
        st = JSON.parse(v);
      } catch {
        st = `<invalid JSON ${v}>`;
      }
      out[k] = Array.isArray(st) ? `<${st.length} entries>` : st;
    } else out[k] = v;
  }
  return out;
}

/** One job's events without stream ids; `delayed.delay` (absolute due time) becomes "<ms>". */
function eventTrail(s, id) {
  return s.events.of(id).map((e) => {
    const { jobId, ...data } = e.data;
    if (e.event === 'delayed') data.delay = typeof data.delay === 'number' && data.delay > 0 ? '<ms>' : `<bad ${data.delay}>`;
    return { event: e.event, ...data };
  });
}

module.exports = { scanKeys, assertQuiescent, assertMs, normalizeHash, eventTrail };
