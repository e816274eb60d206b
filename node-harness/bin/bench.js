#!/usr/bin/env node
// Side-by-side throughput of worker processes on one Redis: for each subject, on an emptied
// Redis (FLUSHALL), JOBS no-op jobs are added to a paused queue by the real Node Queue, the worker starts (concurrency CONC), the
// queue is resumed, and the clock runs until the queue is empty. Redis work per job is counted
// server-side (INFO: commands processed, and script calls), so every subject is measured alike.
//
//   node bin/bench.js --url redis://127.0.0.1:PORT --jobs 20000 --concurrency 50 \
//     --subject node=node,bin/node-worker.js --subject ringback=../target/release/examples/scripted_worker
// Prints one JSON line per subject, then a table with ratios to the first subject.
//
// `--twilio <simulator base>` makes the jobs callbacks ({runId, to, body}) and gives every
// subject the simulator as Twilio (TWILIO_API_BASE and test credentials): the SMS benchmark.
// `--slowlog` also breaks Redis's time down by command and script (SLOWLOG at 0 µs: it costs
// Redis time itself, so its run's totals are not the headline figures; a script's time includes
// the commands it ran, which are listed on their own too). `--commands` adds, per job, the calls
// and Redis µs of each command (INFO commandstats: a script's inner commands count on their own,
// and again inside EVALSHA's µs). Peak RSS is the worker's VmHWM.
//
// `--rate <jobs/s>` (with --twilio): the latency run. The worker runs first on an empty queue;
// the producer adds JOBS callbacks at that steady rate (Queue.add, paced every 10 ms), and each
// callback's latency is from just before its Queue.add to its arrival at the simulator
// (`/sim/arrivals`, ms). Prints p50/p90/p99/max per subject.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { parseArgs } = require('node:util');
const IORedis = require('ioredis');
const { load, defaultVersion, connectionFromUrl } = require(path.join(__dirname, '..', 'lib', 'bullmq.js'));

async function redisWork(r) {
  const stats = await r.info('stats');
  const commands = Number(/total_commands_processed:(\d+)/.exec(stats)[1]);
  const cs = await r.info('commandstats');
  let scripts = 0;
  for (const m of cs.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+)/g)) scripts += Number(m[2]);
  // the server's main thread CPU (user + sys), in seconds
  const cpu = await r.info('cpu');
  const cpuSeconds = Number(/used_cpu_user_main_thread:([\d.]+)/.exec(cpu)[1]) + Number(/used_cpu_sys_main_thread:([\d.]+)/.exec(cpu)[1]);
  return { commands, scripts, cpuSeconds };
}

/** INFO commandstats as {command: {calls, usec}}. */
async function commandStats(r) {
  const cs = await r.info('commandstats');
  const by = {};
  for (const m of cs.matchAll(/cmdstat_([\w|]+):calls=(\d+),usec=(\d+)/g)) by[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  return by;
}

/** Per job, each command's calls and µs between two commandStats snapshots, dearest first. */
function commandsPerJob(before, after, jobs) {
  const rows = [];
  for (const [cmd, a] of Object.entries(after)) {
    const b = before[cmd] || { calls: 0, usec: 0 };
    if (a.calls === b.calls) continue;
    rows.push([cmd, Number(((a.calls - b.calls) / jobs).toFixed(2)), Number(((a.usec - b.usec) / jobs).toFixed(2))]);
  }
  rows.sort((x, y) => y[2] - x[2]);
  return Object.fromEntries(rows.map(([c, calls, us]) => [c, { calls, us }]));
}

/** CPU seconds all of the machine's cores have been busy so far (/proc/stat: all but idle and
 * iowait), for what bounds a run: every process on the machine shares its cores. */
function machineBusySeconds() {
  const t = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = t.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - t[3] - t[4]) / 100; // USER_HZ is 100 on Linux
}

/** CPU seconds (user + sys) a process has used so far, from /proc (Linux). */
function processCpuSeconds(pid) {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return ticks / 100; // USER_HZ is 100 on Linux
}

const SIM_ACCOUNT = 'AC00000000000000000000000000000000';
const SIM_TOKEN = 'sim-auth-token';

/** Messages the simulator holds (its own count). */
async function texted(base) {
  const res = await fetch(`${base}/sim/messages`);
  if (!res.ok) return null;
  const body = await res.json();
  return Array.isArray(body) ? body.length : (body.messages || []).length;
}

/** The script names ringback's SHAs stand for: as crates/store/src/scripts.rs builds each body,
 * lua/include/common.lua, then the includes the `scripts!` table names for it
 * (`name => "file.lua" [window, finish]`), then "-- script: <file>" and the file. */
function scriptNames() {
  const root = path.join(__dirname, '..', '..');
  const read = (...p) => fs.readFileSync(path.join(root, ...p), 'utf8');
  const common = read('lua', 'include', 'common.lua');
  const table = read('src', 'store', 'scripts.rs');
  const names = new Map();
  for (const m of table.matchAll(/^\s*\w+ => "([\w.]+\.lua)"(?:\s*\[([\w,\s]+)\])?,/gm)) {
    const [, file, includes] = m;
    const parts = [common];
    for (const inc of (includes || '').split(',').map((x) => x.trim()).filter(Boolean)) {
      parts.push(`\n-- include: ${inc}.lua\n${read('lua', 'include', `${inc}.lua`)}`);
    }
    parts.push(`\n-- script: ${file}\n${read('lua', file)}`);
    names.set(require('node:crypto').createHash('sha1').update(parts.join('')).digest('hex'), file.replace(/\.lua$/, ''));
  }
  return names;
}

/** SLOWLOG entries kept per job in the `--slowlog` run. */
const SLOWLOG_PER_JOB = 64;

/** Redis µs per job by command (EVALSHA by script name), from SLOWLOG at 0 µs. A script's row
 * includes the commands it ran, which have their own rows as well. */
async function slowlogBreakdown(r, jobs) {
  const names = scriptNames();
  const entries = await r.slowlog('GET', -1);
  await r.config('SET', 'slowlog-log-slower-than', '10000');
  if (entries.length >= jobs * SLOWLOG_PER_JOB) throw new Error('SLOWLOG filled up: the breakdown would miss entries');
  const by = {};
  for (const [, , micros, args] of entries) {
    const cmd = String(args[0]).toLowerCase();
    const key = cmd === 'evalsha' ? (names.get(String(args[1])) || `evalsha:${String(args[1]).slice(0, 8)}`) : cmd;
    by[key] = (by[key] || 0) + Number(micros);
  }
  for (const k of Object.keys(by)) by[k] = Number((by[k] / jobs).toFixed(1));
  return Object.fromEntries(Object.entries(by).sort((a, b) => b[1] - a[1]));
}

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
      jobs: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '50' },
      subject: { type: 'string', multiple: true },
      twilio: { type: 'string' },
      slowlog: { type: 'boolean', default: false },
      commands: { type: 'boolean', default: false },
      'sim-pid': { type: 'string' },
      rate: { type: 'string' },
      table: { type: 'string' },
    },
  });
  if (values.table !== undefined) return table(values.table);
  if (values.rate !== undefined) return latency(values);
  const sms = values.twilio !== undefined;
  const jobs = Number(values.jobs);
  const { Queue } = load(defaultVersion());
  const r = new IORedis(values.url);
  const results = [];
  for (const spec of values.subject || []) {
    const [name, command] = spec.split('=');
    const [cmd, ...args] = command.split(',');
    const queueName = `bench-${name}-${Date.now()}`;
    // every subject starts on an empty Redis: none pays for the keys another left (a keyspace
    // grown by 100,000s of keys makes every lookup dearer)
    await r.flushall();
    if (sms) await fetch(`${values.twilio}/sim/reset`, { method: 'POST' });
    const queue = new Queue(queueName, { connection: connectionFromUrl(values.url) });
    await queue.pause();
    const opts = { removeOnComplete: { count: 1000 } };
    for (let i = 0; i < jobs; i += 1000) {
      const n = Math.min(1000, jobs - i);
      await queue.addBulk(Array.from({ length: n }, (_, k) => ({
        name: 'agent-callback',
        data: sms ? { runId: `${queueName}-${i + k}`, to: '+15558675310', body: `Run ${i + k} finished: 2 approvals needed` } : {},
        opts,
      })));
    }
    const child = spawn(cmd, args, {
      cwd: path.join(__dirname, '..'),
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env, NO_COLOR: '1', RUST_LOG: 'warn', REDIS_URL: values.url, RINGBACK_QUEUE: queueName,
        RINGBACK_CONCURRENCY: values.concurrency, RINGBACK_METRICS_LISTEN: 'off',
        ...(sms ? {
          TWILIO_API_BASE: values.twilio, TWILIO_ACCOUNT_SID: SIM_ACCOUNT, TWILIO_AUTH_TOKEN: SIM_TOKEN,
          TWILIO_FROM: '+15005550006', RINGBACK_PROCESSOR: 'sms',
        } : {}),
      },
    });
    let log = '';
    child.stderr.on('data', (c) => { log += c; });
    // let the worker connect and block on the paused queue before the clock starts
    await new Promise((res) => setTimeout(res, 1500));
    if (values.slowlog) {
      await r.config('SET', 'slowlog-log-slower-than', '0');
      // Redis 7 logs the commands a script runs too (~40 per SMS job): room for all of them,
      // or the breakdown would divide the last few thousand jobs' time by every job
      await r.config('SET', 'slowlog-max-len', String(jobs * SLOWLOG_PER_JOB));
      await r.slowlog('RESET');
    }
    const statsBefore = values.commands ? await commandStats(r) : undefined;
    const before = await redisWork(r);
    const workerBefore = processCpuSeconds(child.pid);
    const simPid = values['sim-pid'] ? Number(values['sim-pid']) : undefined;
    const simBefore = simPid ? processCpuSeconds(simPid) : 0;
    const machineBefore = machineBusySeconds();
    const t0 = process.hrtime.bigint();
    await queue.resume();
    for (;;) {
      const c = await queue.getJobCounts('wait', 'active', 'completed', 'failed');
      if (c.wait === 0 && c.active === 0) break;
      if (child.exitCode !== null) throw new Error(`${name} exited: ${log}`);
      await new Promise((res) => setTimeout(res, 5));
    }
    const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
    const after = await redisWork(r);
    const byCommand = values.commands ? commandsPerJob(statsBefore, await commandStats(r), jobs) : undefined;
    const workerCpu = processCpuSeconds(child.pid) - workerBefore;
    const machineCpu = machineBusySeconds() - machineBefore;
    const simCpu = simPid ? processCpuSeconds(simPid) - simBefore : undefined;
    const peakRssMb = Math.round(Number(/VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))[1]) / 1024);
    const breakdown = values.slowlog ? await slowlogBreakdown(r, jobs) : undefined;
    child.kill('SIGTERM');
    await new Promise((res) => child.once('exit', res));
    await queue.close();
    const row = {
      subject: name,
      jobs,
      concurrency: Number(values.concurrency),
      seconds: Number(seconds.toFixed(3)),
      jobsPerSecond: Math.round(jobs / seconds),
      // includes this script's own polling (a few commands per 5 ms), the same for every subject
      redisCommandsPerJob: Number(((after.commands - before.commands) / jobs).toFixed(2)),
      scriptCallsPerJob: Number(((after.scripts - before.scripts) / jobs).toFixed(2)),
      // CPU per job: Redis's main thread, and the worker process (all its threads)
      redisCpuMicrosPerJob: Number((((after.cpuSeconds - before.cpuSeconds) * 1e6) / jobs).toFixed(1)),
      workerCpuMicrosPerJob: Number(((workerCpu * 1e6) / jobs).toFixed(1)),
      peakRssMb,
      // every process on the machine (Redis, the worker, the simulator, this script), per job,
      // and how many cores were busy on average: what a run on a saturated machine is bound by
      machineCpuMicrosPerJob: Number(((machineCpu * 1e6) / jobs).toFixed(1)),
      machineBusyCores: Number((machineCpu / seconds).toFixed(2)),
      ...(simCpu !== undefined ? { simCpuMicrosPerJob: Number(((simCpu * 1e6) / jobs).toFixed(1)) } : {}),
      ...(sms ? { texts: await texted(values.twilio) } : {}),
      ...(breakdown ? { redisMicrosPerJobBy: breakdown } : {}),
      ...(byCommand ? { perJobByCommand: byCommand } : {}),
    };
    console.log(JSON.stringify(row));
    results.push(row);
  }
  await r.quit();
  if (results.length > 1) {
    const base = results[0];
    console.log(`\nsubject      jobs/s   x${base.subject}   redis cmds/job   scripts/job   redis µs/job   worker µs/job   peak RSS MB`);
    for (const x of results) {
      console.log(
        `${x.subject.padEnd(12)} ${String(x.jobsPerSecond).padStart(7)}   ${(x.jobsPerSecond / base.jobsPerSecond).toFixed(2).padStart(6)}   ` +
          `${String(x.redisCommandsPerJob).padStart(14)}   ${String(x.scriptCallsPerJob).padStart(11)}   ` +
          `${String(x.redisCpuMicrosPerJob).padStart(12)}   ${String(x.workerCpuMicrosPerJob).padStart(13)}   ${String(x.peakRssMb).padStart(11)}`,
      );
    }
  }
}

/** The median of numbers (undefined for none). */
function median(xs) {
  const s = xs.filter((x) => typeof x === 'number').sort((a, b) => a - b);
  if (s.length === 0) return undefined;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** `--table <file>`: the summary table from this script's JSON lines (SMS throughput rows and
 * latency rows; SLOWLOG runs left out), the median of each figure over the rounds, ratios to
 * Node; then the status webhook pair from bin/bench-webhook.js's lines (requests for jobs, the
 * server's CPU for the worker's, ratios to the Node express receiver). */
function table(file) {
  const all = fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
  const rows = all.filter((r) => r.webhook === undefined);
  const sms = rows.filter((r) => r.texts !== undefined && r.jobsPerSecond !== undefined && !r.redisMicrosPerJobBy);
  const lat = rows.filter((r) => r.p50Ms !== undefined);
  const names = [...new Set([...sms, ...lat].map((r) => r.subject))];
  const by = (list, name, field) => median(list.filter((r) => r.subject === name).map((r) => r[field]));
  const fig = Object.fromEntries(names.map((n) => [n, {
    jobsPerSecond: by(sms, n, 'jobsPerSecond'), rounds: sms.filter((r) => r.subject === n).length,
    redisCpu: by(sms, n, 'redisCpuMicrosPerJob'), cmds: by(sms, n, 'redisCommandsPerJob'),
    scripts: by(sms, n, 'scriptCallsPerJob'), workerCpu: by(sms, n, 'workerCpuMicrosPerJob'),
    machineCpu: by(sms, n, 'machineCpuMicrosPerJob'), busy: by(sms, n, 'machineBusyCores'),
    simCpu: by(sms, n, 'simCpuMicrosPerJob'),
    rss: by(sms, n, 'peakRssMb'), p50: by(lat, n, 'p50Ms'), p99: by(lat, n, 'p99Ms'),
  }]));
  const base = fig.node || fig[names[0]];
  const f = (x, d = 0) => (x === undefined ? '–' : Number(x).toFixed(d));
  const ratio = (a, b) => (a === undefined || b === undefined ? '–' : `${(a / b).toFixed(2)}×`);
  const head = ['subject', 'jobs/s', '× Node', '× official', 'Redis µs/job', 'Redis cmds/job', 'scripts/job',
    'worker µs/job', 'worker CPU ÷ Node', 'peak RSS MB', 'RSS ÷ Node', 'p50 ms', 'p99 ms'];
  console.log(`| ${head.join(' | ')} |`);
  console.log(`|${head.map(() => '---').join('|')}|`);
  for (const n of names) {
    const x = fig[n];
    console.log(`| ${[n, f(x.jobsPerSecond), ratio(x.jobsPerSecond, base.jobsPerSecond),
      ratio(x.jobsPerSecond, fig.official && fig.official.jobsPerSecond), f(x.redisCpu, 1), f(x.cmds, 1),
      f(x.scripts, 2), f(x.workerCpu, 1), ratio(x.workerCpu, base.workerCpu), f(x.rss),
      ratio(x.rss, base.rss), f(x.p50), f(x.p99)].join(' | ')} |`);
  }
  const cpu = names.filter((n) => fig[n].machineCpu !== undefined)
    .map((n) => `${n} ${f(fig[n].machineCpu, 1)} µs (${f(fig[n].busy, 2)} cores busy${fig[n].simCpu !== undefined ? `, the simulator's ${f(fig[n].simCpu, 1)} µs` : ''})`);
  const hooks = all.filter((r) => r.webhook !== undefined);
  const hook = (name, field) => median(hooks.filter((r) => r.webhook === name).map((r) => r[field]));
  const hookNode = { rps: hook('node', 'requestsPerSecond'), cpu: hook('node', 'serverCpuMicrosPerRequest'), rss: hook('node', 'peakRssMb') };
  for (const name of ['node', 'ringback']) {
    const x = hooks.find((r) => r.webhook === name);
    if (!x) continue;
    const rps = hook(name, 'requestsPerSecond');
    const cpu = hook(name, 'serverCpuMicrosPerRequest');
    const rss = hook(name, 'peakRssMb');
    console.log(`| ${[x.subject, `${f(rps)} req/s`, ratio(rps, hookNode.rps), '–',
      f(hook(name, 'redisCpuMicrosPerRequest'), 1), f(hook(name, 'redisCommandsPerRequest'), 1),
      `${f(hook(name, 'scriptCallsPerRequest'), 2)} (calls ${f(hook(name, 'redisCallsPerRequest'), 2)})`, f(cpu, 1), ratio(cpu, hookNode.cpu), f(rss), ratio(rss, hookNode.rss),
      f(hook(name, 'p50Ms'), 2), f(hook(name, 'p99Ms'), 2)].join(' | ')} |`);
  }
  if (hooks.length === 0) console.log('| status webhook (ringback serve vs Node express) | not in this run: `scripts/bench webhook` |');
  const rounds = names.map((n) => `${n} ${fig[n].rounds}`).join(', ');
  const hookRounds = hooks.filter((r) => r.webhook === 'ringback').length;
  console.log(`(medians; throughput rounds: ${rounds || 0}; latency rows: ${lat.length}; webhook rounds: ${hookRounds}, ` +
    `per request, wrk at ${hooks.length ? hooks[0].connections : '–'} connections, the server's CPU in the worker column)`);
  if (cpu.length) console.log(`(the whole machine's CPU per SMS job, every process: ${cpu.join('; ')})`);
}

/** The `q` quantile (0..1) of sorted numbers. */
function quantile(sorted, q) {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** `--rate`: add-to-text latency at a steady producer rate, subject after subject. */
async function latency(values) {
  const jobs = Number(values.jobs);
  const rate = Number(values.rate);
  const { Queue } = load(defaultVersion());
  const rows = [];
  for (const spec of values.subject || []) {
    const [name, command] = spec.split('=');
    const [cmd, ...args] = command.split(',');
    const queueName = `lat-${name}-${Date.now()}`;
    const r = new IORedis(values.url);
    await r.flushall();
    await r.quit();
    await fetch(`${values.twilio}/sim/reset`, { method: 'POST' });
    const queue = new Queue(queueName, { connection: connectionFromUrl(values.url) });
    const child = spawn(cmd, args, {
      cwd: path.join(__dirname, '..'),
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env, NO_COLOR: '1', RUST_LOG: 'warn', REDIS_URL: values.url, RINGBACK_QUEUE: queueName,
        RINGBACK_CONCURRENCY: values.concurrency, RINGBACK_METRICS_LISTEN: 'off',
        TWILIO_API_BASE: values.twilio, TWILIO_ACCOUNT_SID: SIM_ACCOUNT, TWILIO_AUTH_TOKEN: SIM_TOKEN,
        TWILIO_FROM: '+15005550006', RINGBACK_PROCESSOR: 'sms',
      },
    });
    let log = '';
    child.stderr.on('data', (c) => { log += c; });
    await new Promise((res) => setTimeout(res, 1500));
    const addedAt = new Array(jobs);
    const opts = { removeOnComplete: { count: 1000 } };
    const t0 = Date.now();
    // Paced: by each 10 ms tick, as many jobs as the rate asks for so far (no bursts of catch-up
    // beyond that; an add that falls behind is timed from its own Queue.add call).
    let sent = 0;
    const adds = [];
    while (sent < jobs) {
      const due = Math.min(jobs, Math.floor(((Date.now() - t0) * rate) / 1000) + 1);
      for (; sent < due; sent += 1) {
        const i = sent;
        addedAt[i] = Date.now();
        adds.push(queue.add('agent-callback', { runId: `${queueName}-${i}`, to: '+15558675310', body: `Run ${i} finished: 2 approvals needed` }, opts));
      }
      await new Promise((res) => setTimeout(res, 10));
    }
    await Promise.all(adds);
    const deadline = Date.now() + 60_000;
    let arrivals = [];
    for (;;) {
      arrivals = await (await fetch(`${values.twilio}/sim/arrivals`)).json();
      if (arrivals.length >= jobs || Date.now() > deadline) break;
      if (child.exitCode !== null) throw new Error(`${name} exited: ${log}`);
      await new Promise((res) => setTimeout(res, 50));
    }
    child.kill('SIGTERM');
    await new Promise((res) => child.once('exit', res));
    await queue.close();
    const lat = [];
    for (const a of arrivals) {
      const m = /^Run (\d+) finished/.exec(a.body);
      if (m && addedAt[Number(m[1])] !== undefined) lat.push(a.atMs - addedAt[Number(m[1])]);
    }
    lat.sort((a, b) => a - b);
    const row = {
      subject: name, jobs, rate, concurrency: Number(values.concurrency), texts: arrivals.length,
      p50Ms: quantile(lat, 0.5), p90Ms: quantile(lat, 0.9), p99Ms: quantile(lat, 0.99), maxMs: lat[lat.length - 1],
    };
    console.log(JSON.stringify(row));
    rows.push(row);
  }
  if (rows.length > 1) {
    console.log(`\nsubject      rate/s   p50 ms   p90 ms   p99 ms   max ms   texts`);
    for (const x of rows) {
      console.log(`${x.subject.padEnd(12)} ${String(x.rate).padStart(6)}   ${String(x.p50Ms).padStart(6)}   ${String(x.p90Ms).padStart(6)}   ${String(x.p99Ms).padStart(6)}   ${String(x.maxMs).padStart(6)}   ${String(x.texts).padStart(5)}`);
    }
  }
  process.exit(0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
