#!/usr/bin/env node
// The status webhook pair (the summary table's last rows), side by side on one Redis: `ringback serve` and a Node
// express receiver doing the same work (bin/webhook-receiver.js), driven by wrk with pre-signed
// Twilio status callbacks (benches/webhook-wrk.lua). `scripts/bench webhook` runs it.
//
//   node bin/bench-webhook.js --url redis://127.0.0.1:PORT --ringback ../target/release/ringback \
//     [--duration 10] [--connections 50] [--threads 2] [--rounds 1] [--runs N] [--repeats 0.05]
//
// The requests: for each of N runs (default 40,000 per second of --duration: more than the
// fastest subject reaches, so no measured request is sent twice) the `sent` and `delivered`
// callbacks of its message, each with its own MessageSid, `I-Twilio-Idempotency-Token` and
// signature, over PUBLIC_URL + `/api/notify/webhook/status?runId=…&attempt=…` (ringback's own
// StatusCallback URLs carry both), and a share of repeats (--repeats, 5%: a request sent again
// a little later, token and all, as Twilio retries). Both subjects verify the same signatures
// with the same auth token and public URL.
//
// Per subject and round, subjects interleaved: Redis emptied (FLUSHALL), the server started,
// then a warm-up pass (not measured) sends the runs' `queued` callbacks, so each record knows
// its MessageSid, as the worker's sent marker leaves it before Twilio calls back (every run, or
// for a slow subject as many as it takes in twice --duration: more than it reaches); then wrk runs
// --duration seconds at --connections. Redis work is counted server-side around the measured
// run only: script calls (EVALSHA/EVAL) and commands (those inside scripts included) from INFO
// commandstats and stats, Redis main-thread CPU from INFO cpu; the server's own CPU from /proc,
// its peak RSS (VmHWM). The counting window is longer than --duration (wrk loads the request
// file before its clock starts): each line says how long it was and how many seconds of CPU
// Redis's main thread spent in it (`windowSeconds`, `redisCpuSeconds`), so a reader can check
// that the per-request figure adds up. One JSON line per subject and round (the lines `bench.js --table`
// reads), then a summary.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { parseArgs } = require('node:util');
const IORedis = require('ioredis');
const twilio = require('twilio');
const { freePort } = require('../lib/harness/redis');

const PUBLIC_URL = 'https://ringback.example.com';
const AUTH_TOKEN = 'bench-webhook-auth-token';
const ACCOUNT = 'AC0123456789abcdef0123456789abcdef';
const harness = path.join(__dirname, '..');

/** Redis's counters: commands processed (inside scripts too), script calls, main-thread CPU. */
async function redisCounters(r) {
  const num = (text, field) => Number(new RegExp(`${field}:([\\d.]+)`).exec(text)[1]);
  const stats = await r.info('stats');
  const cs = await r.info('commandstats');
  const cpu = await r.info('cpu');
  let scripts = 0;
  for (const m of cs.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+)/g)) scripts += Number(m[2]);
  return {
    commands: num(stats, 'total_commands_processed'),
    scripts,
    cpuSeconds: num(cpu, 'used_cpu_user_main_thread') + num(cpu, 'used_cpu_sys_main_thread'),
  };
}

/** CPU seconds (user + sys) a process has used, from /proc (Linux; USER_HZ 100). */
function cpuSeconds(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

function peakRssMb(pid) {
  const kb = /VmHWM:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))[1];
  return Math.round(Number(kb) / 1024);
}


const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

/** One signed status callback as a line of the request file (see benches/webhook-wrk.lua). */
function line(run, status) {
  const sid = `SM${run.n.toString(16).padStart(32, '0')}`;
  const params = {
    AccountSid: ACCOUNT, ApiVersion: '2010-04-01', From: '+15005550006', To: '+15558675310',
    MessageSid: sid, SmsSid: sid, MessageStatus: status, SmsStatus: status,
  };
  if (status === 'delivered') params.RawDlrDoneDate = '2612010715';
  const target = `/api/notify/webhook/status?runId=${run.id}&attempt=${run.attempt}`;
  const signature = twilio.getExpectedTwilioSignature(AUTH_TOKEN, PUBLIC_URL + target, params);
  const idem = `${sid.slice(2, 18)}-${status}-${run.n}`;
  return `${target}\t${signature}\t${idem}\t${new URLSearchParams(params).toString()}\n`;
}

/** The warm-up file (every run's `queued`) and the measured one (`sent`, `delivered`, repeats). */
function writeRequests(dir, runs, repeatShare) {
  const warm = [];
  const measured = [];
  const every = repeatShare > 0 ? Math.round(1 / repeatShare) : Infinity;
  for (let n = 0; n < runs; n += 1) {
    const run = { n, id: `run-${n.toString(36)}-${(n * 2654435761 >>> 0).toString(16)}`, attempt: (n * 40503 >>> 0).toString(16).padStart(32, '0') };
    warm.push(line(run, 'queued'));
    for (const status of ['sent', 'delivered']) {
      measured.push(line(run, status));
      // Twilio's retry: the same request again, a few hundred requests later
      if (measured.length % every === 0 && measured.length > 400) measured.push(measured[measured.length - 300]);
    }
  }
  const files = { warm: path.join(dir, 'warm.tsv'), measured: path.join(dir, 'measured.tsv') };
  fs.writeFileSync(files.warm, warm.join(''));
  fs.writeFileSync(files.measured, measured.join(''));
  return { ...files, measuredRequests: measured.length };
}

/** Start a subject's server; resolves once it answers on `ready`. */
async function startServer(subject, values, port) {
  const common = { ...process.env, REDIS_URL: values.url, TWILIO_AUTH_TOKEN: AUTH_TOKEN, NO_COLOR: '1' };
  const child = subject === 'ringback'
    ? spawn(values.ringback, ['serve'], {
      cwd: harness, stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...common, RUST_LOG: 'warn', RINGBACK_API_TOKEN: 'bench-webhook-api-token', RINGBACK_LISTEN: `127.0.0.1:${port}`, RINGBACK_PUBLIC_URL: PUBLIC_URL },
    })
    : spawn(process.execPath, [path.join(__dirname, 'webhook-receiver.js')], {
      cwd: harness, stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...common, NODE_ENV: 'production', WEBHOOK_LISTEN: `127.0.0.1:${port}`, PUBLIC_URL },
    });
  let log = '';
  child.stderr.on('data', (c) => { log += c; });
  const ready = subject === 'ringback' ? '/readyz' : '/healthz';
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${subject} exited: ${log}`);
    try {
      if ((await fetch(`http://127.0.0.1:${port}${ready}`)).ok) break;
    } catch { /* not listening yet */ }
    if (Date.now() > deadline) throw new Error(`${subject} not ready in 15 s: ${log}`);
    await sleep(50);
  }
  return { child, log: () => log };
}

async function stop(child) {
  if (child.exitCode !== null) return;
  child.kill('SIGTERM');
  const gone = new Promise((res) => child.once('exit', res));
  if (await Promise.race([gone.then(() => true), sleep(5000).then(() => false)])) return;
  child.kill('SIGKILL');
  await gone;
}

/** Run wrk from line `skip` of `file`; `until` (optional) decides when to stop it early
 * (SIGINT: wrk still reports). */
async function wrk(values, port, file, seconds, { until, skip = 0 } = {}) {
  const args = ['-t', values.threads, '-c', values.connections, '-d', `${seconds}s`, '--latency',
    '-s', values.script, `http://127.0.0.1:${port}`, '--', file, values.threads, String(skip)];
  const child = spawn(values.wrk, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c) => { out += c; });
  child.stderr.on('data', (c) => { out += c; });
  const exited = new Promise((res) => child.once('exit', res));
  if (until) {
    let running = true;
    exited.then(() => { running = false; });
    while (running && !(await until())) await sleep(250);
    if (running) child.kill('SIGINT');
  }
  await exited;
  const m = /^WRK (\{.*\})$/m.exec(out);
  if (!m) throw new Error(`wrk gave no report: ${out}`);
  return { report: JSON.parse(m[1]), text: out };
}

/**
 * Redis calls per request as the server makes them: a second, short wrk run (1 s, from line
 * `skip` on, so nothing measured is sent again) with SLOWLOG at 0 µs, which logs every command,
 * those a script runs too, but names the client of the server's own (a script's are `?:0`).
 * Not part of the measured run: SLOWLOG costs Redis time.
 */
async function clientCalls(r, values, port, files, skip) {
  await r.config('SET', 'slowlog-max-len', '2000000');
  await r.slowlog('RESET');
  await r.config('SET', 'slowlog-log-slower-than', '0');
  const { report } = await wrk(values, port, files.measured, 1, { skip });
  await r.config('SET', 'slowlog-log-slower-than', '10000');
  const entries = await r.slowlog('GET', -1);
  await r.slowlog('RESET');
  const ours = new Set(['slowlog', 'config', 'info', 'dbsize']);
  const by = {};
  let calls = 0;
  for (const [, , , args, client] of entries) {
    const cmd = String(args[0]).toLowerCase();
    if (String(client).startsWith('?') || ours.has(cmd)) continue;
    by[cmd] = (by[cmd] || 0) + 1;
    calls += 1;
  }
  for (const k of Object.keys(by)) by[k] = Number((by[k] / report.requests).toFixed(3));
  return { perRequest: Number((calls / report.requests).toFixed(3)), by };
}

async function measure(subject, values, files, r) {
  await r.flushall();
  const port = await freePort();
  const server = await startServer(subject, values, port);
  try {
    // warm-up: until every run has its record (the key count stops growing past one per run),
    // or for twice the measured time: the file is in run order and wrk keeps to it, so a subject
    // too slow to warm every run up in that time reaches less than half the warmed runs after
    let last = -1;
    let settled = false;
    const budget = Date.now() + 2000 * Math.max(10, Number(values.duration));
    const warm = await wrk(values, port, files.warm, 600, {
      until: async () => {
        const n = await r.dbsize();
        settled = n >= values.runs && n === last;
        last = n;
        return settled || Date.now() > budget;
      },
    });
    if (warm.report.non2xx || warm.report.connectErrors) throw new Error(`${subject} warm-up refused requests: ${warm.text}`);
    const warmed = settled ? values.runs : Math.min(values.runs, warm.report.requests);
    const before = await redisCounters(r);
    const t0 = Date.now();
    const cpu0 = cpuSeconds(server.child.pid);
    const { report, text } = await wrk(values, port, files.measured, values.duration);
    const after = await redisCounters(r);
    const windowSeconds = (Date.now() - t0) / 1000;
    const serverCpu = cpuSeconds(server.child.pid) - cpu0;
    const calls = await clientCalls(r, values, port, files, report.requests + 1000);
    const n = report.requests;
    const row = {
      subject: subject === 'ringback' ? 'status webhook: ringback serve' : 'status webhook: Node express',
      webhook: subject,
      requests: n,
      seconds: Number((report.micros / 1e6).toFixed(3)),
      connections: Number(values.connections),
      requestsPerSecond: Math.round(n / (report.micros / 1e6)),
      p50Ms: report.p50 / 1000, p90Ms: report.p90 / 1000, p99Ms: report.p99 / 1000, maxMs: report.max / 1000,
      // calls: what the server sent Redis (EVALSHA counts one), from the SLOWLOG pass after the
      // measured run; script calls are EVALSHA/EVAL; commands count those inside scripts too
      redisCallsPerRequest: calls.perRequest,
      redisCallsBy: calls.by,
      scriptCallsPerRequest: Number(((after.scripts - before.scripts) / n).toFixed(2)),
      redisCommandsPerRequest: Number(((after.commands - before.commands) / n).toFixed(2)),
      redisCpuMicrosPerRequest: Number((((after.cpuSeconds - before.cpuSeconds) * 1e6) / n).toFixed(1)),
      redisCpuSeconds: Number((after.cpuSeconds - before.cpuSeconds).toFixed(2)),
      windowSeconds,
      redisCommandsInWindow: after.commands - before.commands,
      serverCpuMicrosPerRequest: Number(((serverCpu * 1e6) / n).toFixed(1)),
      peakRssMb: peakRssMb(server.child.pid),
      non2xx: report.non2xx,
      socketErrors: report.connectErrors + report.readErrors + report.writeErrors + report.timeouts,
      wraps: report.wraps,
      // runs in the file, and how many the warm-up reached (all, or the first ones)
      runs: values.runs,
      warmedRuns: warmed,
    };
    if (report.wraps) console.error(`warning: ${subject} ran through all ${files.measuredRequests} requests (raise --runs): its figures include repeats`);
    if (report.non2xx) console.error(`warning: ${subject} refused ${report.non2xx} requests:\n${text}\n${server.log()}`);
    return row;
  } finally {
    await stop(server.child);
  }
}

async function main() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string', default: process.env.REDIS_URL || 'redis://127.0.0.1:6379' },
      ringback: { type: 'string', default: path.join(harness, '..', 'target', 'release', 'ringback') },
      duration: { type: 'string', default: '10' },
      connections: { type: 'string', default: '50' },
      threads: { type: 'string', default: '2' },
      rounds: { type: 'string', default: '1' },
      runs: { type: 'string' },
      repeats: { type: 'string', default: '0.05' },
      wrk: { type: 'string', default: 'wrk' },
      script: { type: 'string', default: path.join(harness, '..', 'benches', 'webhook-wrk.lua') },
    },
  });
  values.runs = Number(values.runs || 40_000 * Number(values.duration));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-webhook-'));
  const r = new IORedis(values.url);
  try {
    const t0 = Date.now();
    const files = writeRequests(dir, values.runs, Number(values.repeats));
    console.error(`${values.runs} runs: ${files.measuredRequests} measured requests signed in ${Date.now() - t0} ms`);
    const rows = [];
    for (let round = 0; round < Number(values.rounds); round += 1) {
      for (const subject of ['node', 'ringback']) {
        const row = await measure(subject, values, files, r);
        console.log(JSON.stringify(row));
        rows.push(row);
      }
    }
    console.error('\nsubject                          req/s   p50 ms  p99 ms  calls/req  scripts/req  cmds/req  Redis µs/req  server µs/req  peak RSS MB');
    for (const x of rows) {
      console.error(`${x.subject.padEnd(31)} ${String(x.requestsPerSecond).padStart(6)}  ${x.p50Ms.toFixed(2).padStart(6)}  ${x.p99Ms.toFixed(2).padStart(6)}  ${String(x.redisCallsPerRequest).padStart(9)}  ` +
        `${String(x.scriptCallsPerRequest).padStart(11)}  ${String(x.redisCommandsPerRequest).padStart(8)}  ${String(x.redisCpuMicrosPerRequest).padStart(12)}  ` +
        `${String(x.serverCpuMicrosPerRequest).padStart(13)}  ${String(x.peakRssMb).padStart(11)}`);
    }
  } finally {
    await r.quit();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
