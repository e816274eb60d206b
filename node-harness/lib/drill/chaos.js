// The chaos drill: three supervised ringback workers on one queue while everything goes wrong
// at once, and every run must still be texted exactly once:
//   - each worker aborts at a random one of the worst instants (RINGBACK_CRASH_AT with a
//     probability), and a killer SIGKILLs a random live worker now and then;
//   - Twilio misbehaves at random: 429 with Retry-After, 503 with nothing created, 502 after
//     creating the message, answers slower than the client's timeout (message created),
//     creates then drops the connection;
//   - Redis drops every client connection (CLIENT KILL TYPE normal) and forgets its scripts
//     (SCRIPT FLUSH) on timers;
//   - every run's callback is enqueued twice, as two jobs (an agent retrying its "done" call);
//   - on a cluster (`--cluster`), the queue's slot is hit too, one fault at a time: a CLUSTER
//     FAILOVER of its master, then a migration of the slot to another master, in turn.
'use strict';

const { Lab, runData, passed, stalledEvents } = require('./lab');
const { slotOf } = require('../harness/cluster');
const { JOB_NAME, JOB_OPTIONS } = require('../legacy');
const { waitFor, sleep } = require('../harness/wait');

const QUEUE = 'drill-chaos';
const POINTS = ['after-claim', 'after-provider-accept', 'after-sent-marker', 'before-complete'];
const FAULTS = [
  { rate: 0.05, fault: 'rate_limited', retry_after_s: 1 },
  { rate: 0.05, fault: 'server_error', status: 503, created: false },
  { rate: 0.04, fault: 'server_error', status: 502, created: true },
  { rate: 0.03, fault: 'slow', delay_ms: 800, created: true },
  { rate: 0.03, fault: 'create_then_drop' },
];

async function chaos({ runs = 300, version = '6', timings = 'compressed', cluster = false, log = () => {} } = {}) {
  const lab = await new Lab({ name: 'chaos', version, timings, cluster, log }).start();
  const timers = [];
  const every = (ms, fn) => timers.push(setInterval(() => fn().catch(() => {}), ms));
  const tally = { connectionKills: 0, scriptFlushes: 0, sigkills: 0, failovers: 0, migrations: 0 };
  const clusterFaults = [];
  try {
    const q = lab.queue(QUEUE);
    // Rates are rolled per rule in turn, so the odds compound a little; about 1 create in 5 fails.
    await lab.sim.putFaults({ create: FAULTS });
    const live = new Set();
    lab.supervise('ringback', (i) => {
      const w = lab.ringbackWorker(`ringback#${i}`, QUEUE, { RINGBACK_CRASH_AT: `${POINTS[i % POINTS.length]}:0.1`, RINGBACK_CONCURRENCY: '4' });
      live.add(w);
      w.exit.then(() => live.delete(w));
      return w;
    });
    lab.supervise('ringback', (i) => {
      const w = lab.ringbackWorker(`ringback-b#${i}`, QUEUE, { RINGBACK_CRASH_AT: `${POINTS[(i + 2) % POINTS.length]}:0.1`, RINGBACK_CONCURRENCY: '4' });
      live.add(w);
      w.exit.then(() => live.delete(w));
      return w;
    });
    lab.supervise('ringback', (i) => {
      const w = lab.ringbackWorker(`ringback-c#${i}`, QUEUE, { RINGBACK_CONCURRENCY: '4' });
      live.add(w);
      w.exit.then(() => live.delete(w));
      return w;
    });
    every(900, async () => {
      const ws = [...live];
      const w = ws[Math.floor(Math.random() * ws.length)];
      if (w && w.running) {
        w.kill('SIGKILL');
        tally.sigkills += 1;
      }
    });
    every(1500, async () => {
      await lab.onEveryMaster('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      tally.connectionKills += 1;
    });
    every(2100, async () => {
      await lab.onEveryMaster('SCRIPT', 'FLUSH');
      tally.scriptFlushes += 1;
    });
    if (lab.cluster) {
      // one cluster fault at a time on the queue's slot, failover and migration in turn
      const slot = slotOf(`${lab.prefix}:${QUEUE}:wait`);
      let busy = false;
      every(2500, async () => {
        if (busy) return;
        busy = true;
        try {
          if (tally.failovers <= tally.migrations) {
            const f = await lab.redis.failover(slot);
            tally.failovers += 1;
            clusterFaults.push(`failover ${f.from} -> ${f.to} in ${f.ms} ms`);
          } else {
            const m = await lab.redis.migrateSlot(slot, { batch: 20, pauseMs: 10 });
            tally.migrations += 1;
            clusterFaults.push(`slot ${slot} moved ${m.from} -> ${m.to} (${m.keys} keys) in ${m.ms} ms`);
          }
        } finally {
          busy = false;
        }
      });
    }

    // Callbacks arrive in waves over a few seconds, so every kind of trouble meets work in flight.
    const data = Array.from({ length: runs }, (_, i) => runData('chaos', i));
    const waves = 4;
    for (let w = 0; w < waves; w += 1) {
      const wave = data.filter((_, i) => i % waves === w);
      await q.addBulk([...wave, ...wave].map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
      if (w < waves - 1) await sleep(800);
    }
    log(`[chaos ${timings}] ${runs} runs enqueued twice; workers crashing, Twilio and Redis misbehaving`);
    // A drill that did not meet each kind of trouble proves nothing: wait until it did.
    const chaosMet = () => tally.sigkills >= 1 && tally.connectionKills >= 1 && tally.scriptFlushes >= 1 && (!lab.cluster || (tally.failovers >= 1 && tally.migrations >= 1));
    await waitFor(chaosMet, 30_000, 'every kind of trouble to happen at least once').catch(() => {});
    const verdict = await lab.settle(data, [q], 120_000);
    for (const t of timers) clearInterval(t);
    const sim = await lab.simStats();
    const failed = await q.getFailed();
    return {
      drill: 'chaos',
      timings,
      ok: passed(verdict) && failed.length === 0 && chaosMet() && lab.failures.length === 0,
      verdict,
      figures: {
        'worker deaths (aborts at crash points and SIGKILLs)': lab.crashes.ringback,
        'of which SIGKILLs': tally.sigkills,
        'Redis connection kills': tally.connectionKills,
        'script flushes': tally.scriptFlushes,
        ...(lab.cluster ? { 'failovers of the queue master': tally.failovers, 'migrations of the queue slot': tally.migrations, 'cluster faults': clusterFaults.slice(0, 6) } : {}),
        'stalled jobs recovered': await stalledEvents(lab, QUEUE),
        'messages Twilio holds': sim.total,
        'failed jobs': failed.length ? failed.slice(0, 5).map((j) => `${j.id}: ${j.failedReason}`) : 0,
        'workers that failed by themselves': lab.failures.length ? lab.failures.slice(0, 5) : 0,
      },
    };
  } finally {
    for (const t of timers) clearInterval(t);
    await lab.stop();
  }
}

module.exports = { chaos };
