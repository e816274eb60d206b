// The scripted processor: a job's data says what each activation of it does.
//
// Job data `{"script": [action, ...]}`. Activation n (1-based, BullMQ's
// `attemptsStarted`, hash field `ats`) runs `script[min(n, len) - 1]`; the last
// action repeats. Actions:
//   complete            -> returns {ok: true, attempt: attemptsMade + 1}
//   complete:<json>     -> returns the parsed JSON
//   fail:<msg>          -> throws Error(msg)
//   unrecoverable:<msg> -> throws UnrecoverableError(msg)
//   sleep:<ms>          -> waits, then behaves as `complete`
//   delay:<ms>          -> job.moveToDelayed(now + ms, token), throws DelayedError (no attempt used)
//   progress:<json>     -> job.updateProgress(json), then behaves as `complete`
//   logs:<n>            -> job.log('row 1') .. job.log('row n'), then behaves as `complete`
//   ratelimit:<ms>      -> worker.rateLimit(ms), throws RateLimitError (back to wait, no attempt used)
//   children:<n>        -> adds n children ({script: ['complete'], n: i}) with opts.parent, then
//                          job.moveToWaitingChildren(token) and throws WaitingChildrenError
//   crash               -> SIGKILLs this process at once
// No script (or data not an object) -> returns undefined (stored as "null").
'use strict';

/** Which activation this is, 1-based. */
function activation(job) {
  const started = Number(job.attemptsStarted) || 0;
  if (started > 0) return started;
  return (Number(job.attemptsMade) || 0) + 1;
}

/** The action string for this activation, or undefined when the job has no script. */
function actionFor(job) {
  const data = job.data;
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return undefined;
  const script = data.script;
  if (script === undefined || script === null) return undefined;
  const list = Array.isArray(script) ? script : [script];
  if (list.length === 0) return undefined;
  const n = Math.min(activation(job), list.length);
  return String(list[n - 1]);
}

/** Splits "verb:rest" at the first colon. */
function parse(action) {
  const i = action.indexOf(':');
  return i < 0 ? [action, undefined] : [action.slice(0, i), action.slice(i + 1)];
}

function completed(job) {
  return { ok: true, attempt: (Number(job.attemptsMade) || 0) + 1 };
}

/** Builds a processor `(job, token) => Promise` bound to one bullmq module (for its error classes). */
//
// `allowCrash: false` turns `crash` into a thrown error: in-process test workers
// use it so a bad activation count cannot kill the test runner.
// `worker` (a function returning the Worker) is needed by `ratelimit`.
function makeProcessor(bullmq, { onAction, allowCrash = true, worker } = {}) {
  const { UnrecoverableError, DelayedError } = bullmq;
  return async function scriptedProcessor(job, token) {
    const action = actionFor(job);
    if (onAction) onAction(job, action);
    if (action === undefined) return undefined;
    const [verb, arg] = parse(action);
    switch (verb) {
      case 'complete':
        return arg === undefined ? completed(job) : JSON.parse(arg);
      case 'fail':
        throw new Error(arg ?? '');
      case 'unrecoverable':
        throw new UnrecoverableError(arg ?? '');
      case 'sleep': {
        const ms = Number(arg);
        if (!Number.isFinite(ms) || ms < 0) throw new Error(`unknown script action ${JSON.stringify(action)}`);
        await new Promise((resolve) => setTimeout(resolve, ms));
        return completed(job);
      }
      case 'delay': {
        const ms = Number(arg);
        if (!Number.isFinite(ms) || ms < 0) throw new Error(`unknown script action ${JSON.stringify(action)}`);
        await job.moveToDelayed(Date.now() + ms, token);
        throw new DelayedError();
      }
      case 'progress':
        await job.updateProgress(JSON.parse(arg ?? ''));
        return completed(job);
      case 'ratelimit': {
        const ms = Number(arg);
        if (!Number.isFinite(ms) || ms < 0 || !worker) throw new Error(`unknown script action ${JSON.stringify(action)}`);
        await worker().rateLimit(ms);
        throw bullmq.Worker.RateLimitError();
      }
      case 'children': {
        const n = Number(arg);
        if (!Number.isInteger(n) || n < 0) throw new Error(`unknown script action ${JSON.stringify(action)}`);
        const queue = new bullmq.Queue(job.queueName, { connection: job.queue.opts.connection, prefix: job.queue.opts.prefix });
        try {
          for (let i = 1; i <= n; i++) {
            await queue.add('child', { script: ['complete'], n: i }, { parent: { id: job.id, queue: job.queueQualifiedName } });
          }
        } finally {
          await queue.close();
        }
        if (await job.moveToWaitingChildren(token)) throw new bullmq.WaitingChildrenError();
        return completed(job);
      }
      case 'logs': {
        const n = Number(arg);
        if (!Number.isInteger(n) || n < 0) throw new Error(`unknown script action ${JSON.stringify(action)}`);
        for (let i = 1; i <= n; i++) await job.log(`row ${i}`);
        return completed(job);
      }
      case 'crash':
        if (!allowCrash) throw new Error(`refusing to crash this process (activation ${activation(job)})`);
        process.kill(process.pid, 'SIGKILL');
        // SIGKILL is delivered asynchronously; never let the job finish meanwhile.
        return new Promise(() => {});
      default:
        throw new Error(`unknown script action ${JSON.stringify(action)}`);
    }
  };
}

module.exports = { makeProcessor, actionFor, activation };
