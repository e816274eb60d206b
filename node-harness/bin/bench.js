#!/usr/bin/env node
// Side-by-side throughput of worker processes on one Redis: for each subject, JOBS no-op jobs
// are added to a paused queue by the real Node Queue, the worker starts (concurrency CONC), the
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
// Redis time itself, so its run's totals are not the headline figures). Peak RSS is the
// worker's VmHWM.
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

/** The script names ringback's SHAs stand for: lua/include/common.lua + "-- script: <file>" + body. */
function scriptNames() {
  const dir = path.join(__dirname, '..', '..', 'lua');
  const common = fs.readFileSync(path.join(dir, 'include', 'common.lua'), 'utf8');
  const names = new Map();
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.lua'))) {
    const code = `${common}\n-- script: ${f}\n${fs.readFileSync(path.join(dir, f), 'utf8')}`;
    names.set(require('node:crypto').createHash('sha1').update(code).digest('hex'), f.replace(/\.lua$/, ''));
  }
  return names;
}

/** Redis µs per job by command (EVALSHA by script name), from SLOWLOG at 0 µs. */
async function slowlogBreakdown(r, jobs) {
  const names = scriptNames();
  const entries = await r.slowlog('GET', -1);
  await r.config('SET', 'slowlog-log-slower-than', '10000');
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
    },
  });
  const sms = values.twilio !== undefined;
  const jobs = Number(values.jobs);
  const { Queue } = load(defaultVersion());
  const r = new IORedis(values.url);
  const results = [];
  for (const spec of values.subject || []) {
    const [name, command] = spec.split('=');
    const [cmd, ...args] = command.split(',');
    const queueName = `bench-${name}-${Date.now()}`;
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
      await r.config('SET', 'slowlog-max-len', String(jobs * 12));
      await r.slowlog('RESET');
    }
    const before = await redisWork(r);
    const workerBefore = processCpuSeconds(child.pid);
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
    const workerCpu = processCpuSeconds(child.pid) - workerBefore;
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
      ...(sms ? { texts: await texted(values.twilio) } : {}),
      ...(breakdown ? { redisMicrosPerJobBy: breakdown } : {}),
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

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
