// A processor that moves its own job to delayed (job.moveToDelayed + DelayedError in Node,
// Outcome::DelayUntil in ringback): no attempt used, run again when due.
'use strict';

module.exports = [
  {
    name: 'self-delay',
    covers: ['processor moves its own job to delayed (no attempt used)'],
    async produce(s) {
      // Due times far apart (500 ms vs ~300 ms), so the promotion order cannot race.
      await s.add('self-delay', { script: ['delay:500', 'complete'] }, { attempts: 2 });
      await s.add('twice', { script: ['delay:150', 'delay:150', 'complete'] });
      await s.add('plain', { script: ['complete'] });
    },
  },
];
