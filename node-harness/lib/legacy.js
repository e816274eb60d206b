// The legacy Node service's conventions, in one place: the callback job's name and options as
// the legacy `/api/notify/send` API enqueued them, and the claim key the legacy worker writes.
'use strict';

const JOB_NAME = 'agent-callback';

// Options the legacy API passed to Queue.add (ringback's /api/notify/send must use the same).
const JOB_OPTIONS = Object.freeze({
  attempts: 5,
  backoff: { type: 'exponential', delay: 1000 },
  removeOnComplete: { count: 10000 },
  removeOnFail: { count: 10000 },
});

const CLAIM_PREFIX = process.env.RINGBACK_CLAIM_PREFIX || 'agent-callback:';

/** Callback job data for run i: a stable recipient and body, so texts can be counted per run. */
function callbackData(i, prefix = 'run') {
  return {
    runId: `${prefix}-${i}`,
    to: `+1555010${String(i % 10000).padStart(4, '0')}`,
    body: `Run ${prefix}-${i} finished: approve the release`,
  };
}

module.exports = { JOB_NAME, JOB_OPTIONS, CLAIM_PREFIX, callbackData };
