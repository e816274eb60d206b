// Deadline-based waiting: tests poll or wait on events, never assert after a fixed sleep.
'use strict';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `fn` (sync or async) every `intervalMs` until it returns a truthy value, which is returned.
 * Throws after `timeoutMs`, naming `what` and the last value or error seen.
 */
async function waitFor(fn, timeoutMs, what = 'condition', intervalMs = 25) {
  const deadline = Date.now() + timeoutMs;
  let last;
  let lastErr;
  for (;;) {
    try {
      last = await fn();
      lastErr = undefined;
      if (last) return last;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const seen = lastErr ? `last error: ${lastErr.stack || lastErr}` : `last value: ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; ${seen}`);
    }
    await sleep(Math.min(intervalMs, Math.max(1, deadline - Date.now())));
  }
}

/** Rejects with a named timeout error if `promise` does not settle within `timeoutMs`. */
function withTimeout(promise, timeoutMs, what = 'operation') {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

module.exports = { waitFor, withTimeout, sleep };
