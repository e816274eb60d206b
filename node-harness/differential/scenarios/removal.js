// removeOnComplete / removeOnFail: true, a count, {age, count}; worker defaults vs job options.
'use strict';

module.exports = [
  {
    name: 'remove-true',
    covers: ['removeOnComplete: true', 'removeOnFail: true'],
    async produce(s) {
      await s.add('gone-ok', { script: ['complete'] }, { removeOnComplete: true });
      await s.add('gone-fail', { script: ['fail:bye'] }, { removeOnFail: true });
      await s.add('gone-after-retry', { script: ['fail:once', 'complete'] }, { attempts: 2, removeOnComplete: true });
      await s.add('kept', { script: ['complete'] }, { removeOnComplete: false, removeOnFail: true });
    },
  },
  {
    name: 'remove-count',
    covers: ['removeOnComplete: n', 'removeOnFail: n'],
    async produce(s) {
      for (let i = 1; i <= 4; i++) await s.add(`ok-${i}`, { script: ['complete'] }, { removeOnComplete: 2 });
      for (let i = 1; i <= 3; i++) await s.add(`bad-${i}`, { script: [`fail:bad ${i}`] }, { removeOnFail: 1 });
      await s.add('zero', { script: ['complete'] }, { removeOnComplete: 0 });
    },
  },
  {
    name: 'remove-age-count',
    covers: ['removeOnComplete/removeOnFail: {age, count}'],
    async produce(s) {
      await s.add('old-ok', { script: ['complete'] }, { removeOnComplete: { age: 1, count: 10 } });
      await s.add('old-bad', { script: ['fail:old'] }, { removeOnFail: { age: 1, count: 10 } });
      // Finish more than a second later: the first two are then older than `age` and pruned.
      // Due 300 ms apart, so each has finished before the next is promoted: on a loaded
      // machine, two jobs due within a few ms of each other interleave their events in an
      // order that depends on each worker's speed, not on what it does.
      await s.add('late-ok', { script: ['complete'] }, { delay: 1300, removeOnComplete: { age: 1, count: 10 } });
      await s.add('late-bad', { script: ['fail:late'] }, { delay: 1600, removeOnFail: { age: 1 } });
      await s.add('count-only', { script: ['complete'] }, { delay: 1900, removeOnComplete: { count: 1 } });
    },
  },
  {
    name: 'remove-worker-defaults',
    covers: ['worker removeOnComplete/removeOnFail defaults (RINGBACK_REMOVE_ON_*); a job option wins'],
    worker: { removeOnComplete: 1, removeOnFail: { count: 1 } },
    async produce(s) {
      await s.add('w-ok-1', { script: ['complete'] });
      await s.add('w-ok-2', { script: ['complete'] });
      await s.add('w-keep', { script: ['complete'] }, { removeOnComplete: false });
      await s.add('w-bad-1', { script: ['fail:one'] });
      await s.add('w-bad-2', { script: ['fail:two'] });
      await s.add('w-ok-3', { script: ['complete'] });
    },
  },
  {
    name: 'remove-worker-true',
    covers: ['worker removeOnComplete/removeOnFail: true'],
    worker: { removeOnComplete: true, removeOnFail: true },
    async produce(s) {
      await s.add('a', { script: ['complete'] });
      await s.add('b', { script: ['fail:b'] });
      await s.add('c', { script: ['complete'] }, { removeOnComplete: 5 });
    },
  },
];
