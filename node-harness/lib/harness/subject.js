// Spawns "the worker under test" (env RINGBACK_WORKER_CMD, default the Node worker)
// as a child process configured only through the RINGBACK_* env contract.
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { withTimeout } = require('./wait');
const { track } = require('./reaper');

const HARNESS_DIR = path.resolve(__dirname, '..', '..');
const NODE_WORKER = path.join(HARNESS_DIR, 'bin', 'node-worker.js');
const STARTED = /worker started/;

// eslint-disable-next-line no-control-regex
const stripAnsi = (text) => text.replace(/\x1b\[[0-9;]*m/g, '');

/** [command, args] for the Node reference worker. */
function nodeWorkerCommand() {
  return [process.execPath, [NODE_WORKER]];
}

/**
 * [command, args] for the subject. RINGBACK_WORKER_CMD is a path to an executable; if no file
 * has that exact name it is split on whitespace (so "node bin/node-worker.js" also works).
 */
function subjectCommand() {
  const raw = (process.env.RINGBACK_WORKER_CMD || '').trim();
  if (!raw) return nodeWorkerCommand();
  if (fs.existsSync(raw)) return [path.resolve(raw), []];
  const [cmd, ...args] = raw.split(/\s+/);
  return [cmd, args];
}

function describeSubject() {
  const [cmd, args] = subjectCommand();
  return [cmd, ...args].join(' ');
}

/** Whether the subject is the default Node worker (some diagnostics differ). */
function subjectIsNode() {
  return !(process.env.RINGBACK_WORKER_CMD || '').trim();
}

/** Env for a worker process: RINGBACK_* settings as strings, plus REDIS_URL and BULLMQ_VERSION. */
function workerEnv({
  redisUrl,
  queue,
  prefix,
  version,
  concurrency,
  lockDurationMs,
  lockRenewTimeMs,
  stalledIntervalMs,
  maxStalledCount,
  shutdownGraceMs,
  drainDelayMs,
  workerName,
  limiter,
  maxStartedAttempts,
  removeOnComplete,
  removeOnFail,
  metricsDataPoints,
  telemetry,
  otlpEndpoint,
  extra,
}) {
  const env = { ...process.env, NO_COLOR: '1', REDIS_URL: redisUrl, RINGBACK_QUEUE: queue, BULLMQ_VERSION: String(version) };
  const set = (name, value) => {
    if (value !== undefined && value !== null) env[name] = String(value);
  };
  set('RINGBACK_PREFIX', prefix);
  set('RINGBACK_CONCURRENCY', concurrency);
  set('RINGBACK_LOCK_DURATION_MS', lockDurationMs);
  set('RINGBACK_STALLED_INTERVAL_MS', stalledIntervalMs);
  set('RINGBACK_MAX_STALLED_COUNT', maxStalledCount);
  set('RINGBACK_MAX_STARTED_ATTEMPTS', maxStartedAttempts);
  set('RINGBACK_SHUTDOWN_GRACE_MS', shutdownGraceMs);
  set('RINGBACK_LOCK_RENEW_TIME_MS', lockRenewTimeMs);
  set('RINGBACK_DRAIN_DELAY_MS', drainDelayMs);
  set('RINGBACK_WORKER_NAME', workerName);
  // "<max>/<duration_ms>"; an object {max, duration} is accepted too.
  set('RINGBACK_LIMITER', limiter && typeof limiter === 'object' ? `${limiter.max}/${limiter.duration}` : limiter);
  // true, false, a count or {age, count}: written as JSON, which both workers parse.
  set('RINGBACK_REMOVE_ON_COMPLETE', removeOnComplete === undefined ? undefined : JSON.stringify(removeOnComplete));
  set('RINGBACK_REMOVE_ON_FAIL', removeOnFail === undefined ? undefined : JSON.stringify(removeOnFail));
  set('RINGBACK_METRICS_DATA_POINTS', metricsDataPoints);
  // the Node worker's bullmq-otel add-on (ringback reads no such switch: its traces are on when
  // an OTLP endpoint is set)
  set('DIFF_TELEMETRY', telemetry ? '1' : undefined);
  if (otlpEndpoint) {
    set('OTEL_EXPORTER_OTLP_ENDPOINT', otlpEndpoint);
    set('OTEL_BSP_SCHEDULE_DELAY', 100);
  }
  Object.assign(env, extra || {});
  return env;
}

/**
 * A worker child process. `output()` is everything it wrote (stderr and stdout, interleaved).
 * `started` resolves when a line containing "worker started" appears.
 */
class WorkerProcess {
  constructor(label, cmd, args, env) {
    this.label = label;
    this.command = [cmd, ...args].join(' ');
    this.child = track(spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], cwd: HARNESS_DIR }));
    this.pid = this.child.pid;
    this.log = '';
    this.exit = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
      this.child.on('error', (err) => {
        this.log += `\n[harness] spawn error: ${err.message}\n`;
        this.exitInfo = { code: null, signal: null, error: err };
        resolve(this.exitInfo);
      });
    });
    const onData = (chunk) => {
      this.log += chunk;
    };
    this.child.stdout.setEncoding('utf8').on('data', onData);
    this.child.stderr.setEncoding('utf8').on('data', onData);
  }

  /** Everything the process wrote, without terminal colour codes. */
  output() {
    return stripAnsi(this.log);
  }

  get running() {
    return this.exitInfo === undefined;
  }

  /** Resolves once the process printed "worker started"; rejects if it exits or times out first. */
  async waitStarted(timeoutMs = 15_000) {
    const started = new Promise((resolve) => {
      const check = () => {
        if (STARTED.test(stripAnsi(this.log))) {
          this.child.stdout.off('data', check);
          this.child.stderr.off('data', check);
          resolve('started');
        }
      };
      this.child.stdout.on('data', check);
      this.child.stderr.on('data', check);
      check();
    });
    const exited = this.exit.then((info) => {
      throw new Error(`${this.label} exited before printing "worker started": ${JSON.stringify(info)}`);
    });
    await withTimeout(Promise.race([started, exited]), timeoutMs, `${this.label} to print "worker started"`);
    return this;
  }

  kill(signal = 'SIGTERM') {
    if (this.running) this.child.kill(signal);
  }

  /** Resolves with {code, signal, ms} (ms since the call); rejects after `timeoutMs`. */
  async waitExit(timeoutMs = 10_000) {
    const t0 = Date.now();
    const info = await withTimeout(this.exit, timeoutMs, `${this.label} (pid ${this.pid}) to exit`);
    return { ...info, ms: Date.now() - t0 };
  }

  /** SIGKILLs the process if it still runs and waits for it. */
  async destroy() {
    if (this.running) {
      this.child.kill('SIGKILL');
      await this.exit;
    }
  }
}

/** Spawns the worker under test. */
function spawnSubject(settings, label = 'subject') {
  const [cmd, args] = subjectCommand();
  return new WorkerProcess(label, cmd, args, workerEnv(settings));
}

/** Spawns the Node reference worker as a child process, whatever the subject is. */
function spawnNodeWorker(settings, label = 'node-worker child') {
  const [cmd, args] = nodeWorkerCommand();
  return new WorkerProcess(label, cmd, args, workerEnv(settings));
}

module.exports = { spawnSubject, spawnNodeWorker, describeSubject, subjectIsNode, subjectCommand, workerEnv, WorkerProcess };
