// The differential corpus, in run order. Each scenario:
//   name, covers[] (feature lines for COMPATIBILITY.md),
//   worker {...}      RINGBACK_* settings for both workers (run.js DEFAULT_WORKER otherwise),
//   before(side)      queue setup while paused, before the workers start (rate limits, ...),
//   produce(side)     adds the jobs (Side.add / Side.flow / Side.queue), run for both queues at once,
//   during(side)      actions after the gate opened (pause, restart a crashed worker, ...),
//   done(side)        finished? (default: nothing waiting, active, delayed or pending),
//   order             'global' (default) or 'perJob' when jobs run concurrently,
//   ignoreDrained     drop `drained` entries (their number depends on timing under concurrency),
//   eventsTail        compare only the common tail of the events stream and QueueEvents (trimmed),
//   tolerance         {ts, dur} in ms for timestamps and durations,
//   expect[]          intended differences {key, field?, reason, versions?} (ringback subject only),
//   versions          the bullmq majors it runs on (default: all),
//   todo              a known ringback gap: the test is reported as TODO instead of failing,
//   check({node, ringback, views})  extra assertions on both sides.
'use strict';

module.exports = [
  ...require('./basic'),
  ...require('./retries'),
  ...require('./removal'),
  ...require('./queue'),
  ...require('./dedup'),
  ...require('./flows'),
  ...require('./scheduler'),
  ...require('./stalls'),
  ...require('./delay'),
  ...require('./metrics'),
  ...require('./data'),
  ...require('./surface'),
  ...require('./telemetry'),
];
