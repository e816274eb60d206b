#!/usr/bin/env node
// The SMS benchmark on one Redis or on a Redis Cluster, measured per Redis node (scripts/bench-cluster
// runs it). JOBS callbacks ({runId, to, body}) are split over QUEUES queues, added by the real Node
// BullMQ Queue to paused queues; one ringback worker per queue (full window, Twilio simulator)
// starts, all queues are resumed at once, and the clock runs until every queue is empty.
//
//   node bin/bench-cluster.js --url redis+cluster://127.0.0.1:p1,... --nodes 127.0.0.1:p1,...,127.0.0.1:p6 \
//     --twilio http://127.0.0.1:PORT --jobs 20000 --queues 3 --concurrency 50 [--wait-replicas 0] [--label x]
//
// On a cluster each queue gets its own hash tag as prefix (`{bull}` for one queue; for several,
// the first tags `{bull-N}` whose slots sit on different masters, round robin), because a queue's
// keys share one slot and so one master. Redis work is counted on EVERY node listed in --nodes
// (masters and replicas), from INFO before and after: main-thread CPU (used_cpu_user/sys_main_thread)
// and every command executed, including those inside scripts and, on a replica, those replicated to
// it (the sum of INFO commandstats calls; on Redis 7 the same as total_commands_processed). Worker CPU
// (all threads, /proc) and peak RSS (VmHWM) per worker process. Prints one JSON line.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { parseArgs } = require('node:util');
const IORedis = require('ioredis');
const { load, defaultVersion, connectionFromUrl, isClusterUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));
const { slotOf } = require(path.join(__dirname, '..', 'lib', 'harness', 'cluster.js'));

const SIM_ACCOUNT = 'AC00000000000000000000000000000000';
const SIM_TOKEN = 'sim-auth-token';

/** One node's counters: main-thread CPU seconds, executed calls, scripts, WAITs, role, its master. */
async function nodeWork(r) {
  const info = await r.info('all');
  const num = (re) => Number((re.exec(info) || [0, 0])[1]);
  let calls = 0;
  let scripts = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls += Number(m[2]);
    if (/^(evalsha|eval|fcall)$/.test(m[1])) scripts += Number(m[2]);
  }
  return {
    role: /role:(\w+)/.exec(info)[1],
    cpu: num(/used_cpu_user_main_thread:([\d.]+)/) + num(/used_cpu_sys_main_thread:([\d.]+)/),
    master: /master_port:(\d+)/.test(info) ? `${/master_host:([^\r\n]+)/.exec(info)[1]}:${/master_port:(\d+)/.exec(info)[1]}` : null,
    calls,
    scripts,
    wait: num(/cmdstat_wait:calls=(\d+)/),
  };
}

function processCpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

function peakRssMb(pid) {
  return Math.round(Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) / 1024);
}

/** The master (host:port) serving each slot, from CLUSTER SLOTS. */
async function slotOwners(r) {
  const owners = [];
  for (const [from, to, [host, port]] of await r.cluster('SLOTS')) owners.push({ from, to, addr: `${host}:${port}` });
  return (slot) => owners.find((o) => slot >= o.from && slot <= o.to).addr;
}

/** QUEUES prefixes: `{bull}` alone, or hash tags spread round robin over the masters. */
async function prefixes(url, admin, n) {
  if (!isClusterUrl(url)) return Array.from({ length: n }, () => ({ prefix: 'bull', master: 'single' }));
  const owner = await slotOwners(admin);
  if (n === 1) return [{ prefix: '{bull}', master: owner(slotOf('{bull}')) }];
  const masters = [...new Set((await admin.cluster('SLOTS')).map(([, , [h, p]]) => `${h}:${p}`))].sort();
  const out = [];
  const used = new Set();
  for (let i = 0; out.length < n && i < 100000; i += 1) {
    const tag = `bull-${i}`;
    const master = owner(slotOf(`{${tag}}`));
    if (master !== masters[out.length % masters.length] || used.has(tag)) continue;
    used.add(tag);
    out.push({ prefix: `{${tag}}`, master });
  }
  return out;
}

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      nodes: { type: 'string' },
      twilio: { type: 'string' },
      jobs: { type: 'string', default: '20000' },
      queues: { type: 'string', default: '1' },
      concurrency: { type: 'string', default: '50' },
      'wait-replicas': { type: 'string' },
      label: { type: 'string', default: '' },
      bin: { type: 'string', default: path.join(__dirname, '..', '..', 'target', 'release', 'ringback') },
    },
  });
  const url = values.url;
  const jobs = Number(values.jobs);
  const nq = Number(values.queues);
  const { Queue } = load(defaultVersion());
  const nodeAddrs = values.nodes.split(',');
  const nodes = nodeAddrs.map((a) => {
    const [host, port] = a.split(':');
    return new IORedis({ host, port: Number(port), lazyConnect: false });
  });
  const admin = isClusterUrl(url) ? connectionFromUrl(url) : nodes[0];
  const plan = await prefixes(url, admin, nq);
  await fetch(`${values.twilio}/sim/reset`, { method: 'POST' });
  const stamp = Date.now();
  const queues = [];
  const perQueue = Math.ceil(jobs / nq);
  for (let q = 0; q < nq; q += 1) {
    const name = `scale-${stamp}-${q}`;
    const queue = new Queue(name, { connection: connectionFromUrl(url), prefix: plan[q].prefix });
    await queue.pause();
    const count = Math.min(perQueue, jobs - q * perQueue);
    for (let i = 0; i < count; i += 1000) {
      const n = Math.min(1000, count - i);
      await queue.addBulk(Array.from({ length: n }, (_, k) => ({
        name: 'agent-callback',
        data: { runId: `${name}-${i + k}`, to: '+15558675310', body: `Run ${i + k} finished: 2 approvals needed` },
        opts: { removeOnComplete: { count: 1000 } },
      })));
    }
    queues.push({ name, queue, count, ...plan[q] });
  }
  const workers = queues.map(({ name, prefix }) => {
    const env = {
      ...process.env, NO_COLOR: '1', RUST_LOG: 'warn', REDIS_URL: url, RINGBACK_QUEUE: name, RINGBACK_PREFIX: prefix,
      RINGBACK_CONCURRENCY: values.concurrency, RINGBACK_METRICS_LISTEN: 'off', RINGBACK_PROCESSOR: 'sms',
      TWILIO_API_BASE: values.twilio, TWILIO_ACCOUNT_SID: SIM_ACCOUNT, TWILIO_AUTH_TOKEN: SIM_TOKEN, TWILIO_FROM: '+15005550006',
    };
    if (values['wait-replicas'] !== undefined) env.RINGBACK_REDIS_WAIT_REPLICAS = values['wait-replicas'];
    else delete env.RINGBACK_REDIS_WAIT_REPLICAS;
    const child = spawn(values.bin, ['worker'], { stdio: ['ignore', 'ignore', 'pipe'], env });
    const w = { child, log: '' };
    child.stderr.on('data', (c) => { w.log += c; });
    return w;
  });
  // let the workers connect and block on their paused queues before the clock starts
  await new Promise((res) => setTimeout(res, 2000));
  const before = await Promise.all(nodes.map(nodeWork));
  const cpuBefore = workers.map((w) => processCpuSeconds(w.child.pid));
  const t0 = process.hrtime.bigint();
  await Promise.all(queues.map((q) => q.queue.resume()));
  const pending = new Set(queues);
  while (pending.size) {
    for (const q of [...pending]) {
      const c = await q.queue.getJobCounts('wait', 'active');
      if (c.wait === 0 && c.active === 0) pending.delete(q);
    }
    for (const w of workers) if (w.child.exitCode !== null) throw new Error(`a worker exited: ${w.log}`);
    if (pending.size) await new Promise((res) => setTimeout(res, 10));
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const after = await Promise.all(nodes.map(nodeWork));
  const workerCpu = workers.reduce((s, w, i) => s + processCpuSeconds(w.child.pid) - cpuBefore[i], 0);
  const rss = workers.map((w) => peakRssMb(w.child.pid));
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => (w.child.exitCode !== null ? null : new Promise((res) => w.child.once('exit', res)))));
  const completed = (await Promise.all(queues.map((q) => q.queue.getJobCounts('completed', 'failed'))));
  const failed = completed.reduce((s, c) => s + c.failed, 0);
  for (const q of queues) await q.queue.close();
  const res = await fetch(`${values.twilio}/sim/messages`);
  const body = await res.json();
  const texts = Array.isArray(body) ? body.length : (body.messages || []).length;
  const perJob = (x, digits = 1) => Number(((x) / jobs).toFixed(digits));
  const nodeRows = nodeAddrs.map((addr, i) => ({
    node: addr,
    role: after[i].role === 'master' ? 'master' : 'replica',
    queues: queues.filter((q) => q.master === addr).length,
    cpuMicrosPerJob: perJob((after[i].cpu - before[i].cpu) * 1e6),
    ...(after[i].master ? { replicaOf: after[i].master } : {}),
    callsPerJob: perJob(after[i].calls - before[i].calls, 2),
    scriptsPerJob: perJob(after[i].scripts - before[i].scripts, 2),
    waitsPerJob: perJob(after[i].wait - before[i].wait, 2),
  }));
  const sum = (k, role) => Number(nodeRows.filter((n) => !role || n.role === role).reduce((s, n) => s + n[k], 0).toFixed(2));
  const row = {
    label: values.label,
    cluster: isClusterUrl(url),
    jobs,
    queues: nq,
    prefixes: queues.map((q) => `${q.prefix}@${q.master}`),
    concurrency: Number(values.concurrency),
    waitReplicas: values['wait-replicas'] ?? 'default',
    seconds: Number(seconds.toFixed(3)),
    jobsPerSecond: Math.round(jobs / seconds),
    texts,
    failed,
    redisCpuMicrosPerJob: { masters: sum('cpuMicrosPerJob', 'master'), replicas: sum('cpuMicrosPerJob', 'replica') },
    callsPerJob: { masters: sum('callsPerJob', 'master'), replicas: sum('callsPerJob', 'replica') },
    scriptsPerJob: sum('scriptsPerJob', 'master'),
    waitsPerJob: sum('waitsPerJob', 'master'),
    workerCpuMicrosPerJob: perJob(workerCpu * 1e6),
    peakRssMb: rss,
    nodes: nodeRows,
  };
  console.log(JSON.stringify(row));
  for (const n of nodes) n.disconnect();
  if (admin !== nodes[0]) admin.disconnect();
  process.exit(texts === jobs && failed === 0 ? 0 : 1);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
