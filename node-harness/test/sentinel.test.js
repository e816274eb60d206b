// ringback on Redis Sentinel, end to end with real processes: a real Sentinel set (a primary, a
// replica, three `redis-server --sentinel`), the Node BullMQ producer connected through
// ioredis's sentinels (`{ sentinels, name }`, as a Node deployment on Sentinel configures it),
// ringback workers given REDIS_URL=redis+sentinel://…/mymaster, the Twilio simulator counting
// texts, at the production timing ratios (claim 3 s < lock 6 s). With callbacks in flight
// (every create answered after 200 ms), the master is SIGKILLed (the sentinels promote the
// replica), or demoted while it runs (`SENTINEL FAILOVER`: it takes writes until the sentinels
// demote it, seconds after its replica was promoted, then answers READONLY), or killed with its
// replica a second behind and no replica wait (the replica's link cut while it is frozen: it is
// promoted without the master's last writes, and the workers' claims after it look first); the
// workers follow the master the sentinels name. Verdict at the simulator: no run texted twice; every run whose
// job the new master holds texted once and its job finished; no job failed, no worker died.
'use strict';

const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const { describe, it, before, after } = require('node:test');
const { Lab, runData, passed } = require('../lib/drill/lab');
const { waitFor, sleep } = require('../lib/harness/wait');
const { JOB_NAME, JOB_OPTIONS } = require('../lib/legacy');

let lab;
before(async () => {
  lab = await new Lab({ name: 'sentinel', timings: 'prod', sentinel: true }).start();
});
after(async () => {
  await lab?.stop();
});

/**
 * Two ringback workers on a fresh queue, every create answered after 200 ms; `runs` callbacks
 * added in three waves by the Node producer (through the sentinels); `fault()` once the first
 * texts are in; then the verdict over the runs whose job the new master holds, and the
 * duplicates over every run.
 */
async function smsUnderFault(name, fault, { runs = 90, env = {} } = {}) {
  const QUEUE = `sentinel-${name}`;
  await lab.sim.putFaults({ create: [{ rate: 1, fault: 'slow', delay_ms: 200, created: true }] });
  const workers = [lab.ringbackWorker(`ringback-a (${name})`, QUEUE, env), lab.ringbackWorker(`ringback-b (${name})`, QUEUE, env)];
  try {
    await Promise.all(workers.map((w) => w.waitStarted()));
    const q = lab.queue(QUEUE);
    const data = Array.from({ length: runs }, (_, i) => runData(name, i));
    const before = (await lab.simStats()).total;
    // a producer that meets the failover (a connection closed under it, READONLY from the
    // demoted master) adds the wave again, as a real producer retries (a run added twice is
    // still texted once)
    const addWave = async (jobs) => {
      for (let tries = 0; ; tries += 1) {
        try {
          return await q.addBulk(jobs);
        } catch (e) {
          if (tries >= 100) throw e;
          await sleep(100);
        }
      }
    };
    const adding = (async () => {
      for (let w = 0; w < 3; w += 1) {
        await addWave(data.filter((_, i) => i % 3 === w).map((d) => ({ name: JOB_NAME, data: d, opts: { ...JOB_OPTIONS } })));
        await sleep(700);
      }
    })();
    adding.catch(() => {});
    await waitFor(async () => (await lab.simStats()).total - before >= 10, 20_000, 'the first texts', 50);
    const what = await fault();
    await adding;
    // the runs whose job the new master holds (an add the demoted master took is gone)
    const jobs = await q.getJobs(['completed', 'waiting', 'active', 'delayed', 'prioritized', 'failed']);
    const kept = new Set(jobs.map((j) => j.data.runId));
    const verdict = await lab.settle(data.filter((d) => kept.has(d.runId)), [q], 90_000);
    const { by } = await lab.textsByBody();
    const twice = data.filter((d) => (by.get(d.body) || 0) > 1).map((d) => `${d.runId}×${by.get(d.body)}`);
    const failed = (await q.getFailed()).map((j) => `${j.id}: ${j.failedReason}`);
    const died = workers.filter((w) => !w.running).map((w) => `${w.label}: ${JSON.stringify(w.exitInfo)} ${w.output().slice(-600)}`);
    const master = await lab.redis.master();
    const beats = await lab.heartbeats(3000);
    const logs = workers.map((w) => `--- ${w.label}\n${w.output().slice(-3000)}`).join('\n');
    const followed = workers.filter((w) => /the sentinels name a new master/.test(w.output())).length;
    const held = workers.filter((w) => /replicas did not acknowledge the claim in time/.test(w.output())).length;
    const looked = workers.filter((w) => /Redis is not the one that acknowledged ringback's writes/.test(w.output())).length;
    return { verdict, twice, runs, kept: kept.size, what, failed, died, master: `127.0.0.1:${master.port}`, beats, logs, followed, held, looked };
  } finally {
    await lab.sim.putFaults({ create: [] });
    for (const w of workers) w.kill('SIGTERM');
    await Promise.all(workers.map((w) => w.waitExit(15_000).catch(() => w.destroy())));
  }
}

/**
 * `allKept`: the new master holds every job the producer added (a kill: what the master
 * acknowledged had reached its replica, the workers' claims included, as they wait for it).
 */
function assertFollowed(r, promoted, t, { allKept }) {
  const v = r.verdict;
  t.diagnostic(`${JSON.stringify(r.what)}; the new master holds ${r.kept} of the jobs; texts ${v.texts} for those ${v.runs} runs, settled in ${v.settleMs} ms; workers that held a send for an unacknowledged claim: ${r.held}`);
  assert.deepEqual(r.twice, [], `no run texted twice\n${r.logs}`);
  assert.ok(passed(v), `one text per kept run: ${JSON.stringify({ ...v, duplicates: v.duplicates.slice(0, 10), lost: v.lost.slice(0, 10) })}\n${r.logs}`);
  assert.deepEqual(r.failed, [], 'no job failed');
  assert.deepEqual(r.died, [], 'no worker died');
  assert.equal(r.master, promoted, 'the sentinels name the promoted replica');
  if (allKept) assert.equal(r.kept, r.runs, 'the new master holds every job');
  assert.ok(r.beats.length >= 2, `both workers beat on the new master: ${JSON.stringify(r.beats)}`);
  assert.equal(r.followed, 2, `each worker says it follows the new master\n${r.logs}`);
}

describe('ringback on Redis Sentinel, callbacks in flight', () => {
  it('the master killed: the sentinels promote its replica, the workers follow it, every run texted once', { timeout: 180_000 }, async (t) => {
    let killed;
    try {
      const r = await smsUnderFault('kill-master', async () => {
        killed = await lab.redis.killMaster();
        return { killed: killed.killed, promoted: killed.promoted, ms: killed.ms };
      });
      assertFollowed(r, killed.promoted, t, { allKept: true });
    } finally {
      // a primary with a replica again, for what follows
      await killed?.restart();
    }
  });

  it('a replica a second behind promoted without a wait (RINGBACK_REDIS_WAIT_REPLICAS=0): the claims after it look first, no run texted twice', { timeout: 180_000 }, async (t) => {
    let killed;
    try {
      const r = await smsUnderFault(
        'replica-behind',
        async () => {
          killed = await lab.redis.killMaster({ behindMs: 1500 });
          return { killed: killed.killed, promoted: killed.promoted, ms: killed.ms };
        },
        { env: { RINGBACK_REDIS_WAIT_REPLICAS: '0' } },
      );
      assertFollowed(r, killed.promoted, t, { allKept: false });
      assert.ok(r.looked >= 1, `a worker noticed the new server and looked before sending\n${r.logs}`);
    } finally {
      await killed?.restart();
    }
  });

  it('SENTINEL FAILOVER: the master demoted while it runs, the workers leave it for the new one, no run texted twice', { timeout: 180_000 }, async (t) => {
    let done;
    const r = await smsUnderFault('failover', async () => {
      done = await lab.redis.failover();
      return done;
    });
    assertFollowed(r, done.promoted, t, { allKept: false });
  });
});

describe('check-config on Redis Sentinel', () => {
  it('asks the sentinels for the master name: a name none knows is an error naming it; sentinels out of reach are a warning', { timeout: 60_000 }, () => {
    const check = (url) => {
      const r = spawnSync(lab.bin, ['check-config'], { env: { ...lab.ringbackEnv('sentinel-check'), REDIS_URL: url }, encoding: 'utf8' });
      return { status: r.status, out: r.stdout + r.stderr };
    };
    const right = check(lab.redis.url);
    assert.equal(right.status, 0, right.out);
    const typo = check(lab.redis.url.replace('/mymaster', '/mymastr'));
    assert.equal(typo.status, 2, typo.out);
    assert.match(typo.out, /REDIS_URL.*no sentinel of .* names a master `mymastr`.*sentinel monitor/);
    const away = check('redis+sentinel://127.0.0.1:9,127.0.0.1:10/mymaster');
    assert.equal(away.status, 0, away.out);
    assert.match(away.out, /warning: could not ask the sentinels of redis\+sentinel:\/\/127\.0\.0\.1:9,127\.0\.0\.1:10\/mymaster for master `mymaster`/);
  });
});
