#!/usr/bin/env node
// Side-by-side throughput of worker processes on one Redis: for each subject, JOBS no-op jobs
// are added to a paused queue by the real Node Queue, the worker starts (concurrency CONC), the
// queue is resumed, and the clock runs until the queue is empty. Redis work per job is counted
// server-side (INFO: commands processed, and script calls), so every subject is measured alike.
//
//   node bin/bench.js --url redis://127.0.0.1:PORT --jobs 20000 --concurrency 50 \
//     --subject node=node,bin/node-worker.js --subject ringback=../target/release/examples/scripted_worker
// Prints one JSON line per subject, then a table with ratios to the first subject.
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

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
      jobs: { type: 'string', default: '20000' },
      concurrency: { type: 'string', default: '50' },
      subject: { type: 'string', multiple: true },
    },
  });
  const jobs = Number(values.jobs);
  const { Queue } = load(defaultVersion());
  const r = new IORedis(values.url);
  const results = [];
  for (const spec of values.subject || []) {
    const [name, command] = spec.split('=');
    const [cmd, ...args] = command.split(',');
    const queueName = `bench-${name}-${Date.now()}`;
    const queue = new Queue(queueName, { connection: connectionFromUrl(values.url) });
    await queue.pause();
    const opts = { removeOnComplete: { count: 1000 } };
    for (let i = 0; i < jobs; i += 1000) {
      const n = Math.min(1000, jobs - i);
      await queue.addBulk(Array.from({ length: n }, () => ({ name: 'agent-callback', data: {}, opts })));
    }
    const child = spawn(cmd, args, {
      cwd: path.join(__dirname, '..'),
      stdio: ['ignore', 'ignore', 'pipe'],
      env: {
        ...process.env, NO_COLOR: '1', RUST_LOG: 'warn', REDIS_URL: values.url, RINGBACK_QUEUE: queueName,
        RINGBACK_CONCURRENCY: values.concurrency, RINGBACK_METRICS_LISTEN: 'off',
      },
    });
    let log = '';
    child.stderr.on('data', (c) => { log += c; });
    // let the worker connect and block on the paused queue before the clock starts
    await new Promise((res) => setTimeout(res, 1500));
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
    };
    console.log(JSON.stringify(row));
    results.push(row);
  }
  await r.quit();
  if (results.length > 1) {
    const base = results[0];
    console.log(`\nsubject      jobs/s   x${base.subject}   redis cmds/job   scripts/job   redis µs/job   worker µs/job`);
    for (const x of results) {
      console.log(
        `${x.subject.padEnd(12)} ${String(x.jobsPerSecond).padStart(7)}   ${(x.jobsPerSecond / base.jobsPerSecond).toFixed(2).padStart(6)}   ` +
          `${String(x.redisCommandsPerJob).padStart(14)}   ${String(x.scriptCallsPerJob).padStart(11)}   ` +
          `${String(x.redisCpuMicrosPerJob).padStart(12)}   ${String(x.workerCpuMicrosPerJob).padStart(13)}`,
      );
    }
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
