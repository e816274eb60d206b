// A real Redis Sentinel set on throw-away ports: a primary, a replica of it, and three
// `redis-server --sentinel` monitoring the primary under one name (quorum 2), as a self-hosted
// high-availability Redis runs. Failure detection is compressed (down after 1 s) so a failover
// takes seconds. `url` is the redis+sentinel:// URL ringback reads; `connection` the ioredis
// options a Node deployment gives BullMQ (`{ sentinels, name }`).
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const IORedis = require('ioredis');
const { freePort, redisServerPath } = require('./redis');
const { track } = require('./reaper');
const { waitFor } = require('./wait');

const NAME = 'mymaster';
const DOWN_AFTER_MS = 1000;
const FAILOVER_TIMEOUT_MS = 6000;
const STARTUP_TIMEOUT_MS = 10_000;

/** One redis-server (data node or sentinel); `start()` again after `kill()` comes back on its port. */
class Node {
  constructor(bin, label, port, args, ready) {
    this.bin = bin;
    this.label = label;
    this.port = port;
    this.args = args;
    this.ready = ready;
    this.log = '';
  }

  get alive() {
    return Boolean(this.child) && this.child.exitCode === null && this.child.signalCode === null;
  }

  start() {
    this.log = '';
    return new Promise((resolve, reject) => {
      const child = track(spawn(this.bin, this.args(), { stdio: ['ignore', 'pipe', 'pipe'] }));
      this.child = child;
      let settled = false;
      const done = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          child.kill('SIGKILL');
          err.message += `\n--- ${this.label} log (port ${this.port}) ---\n${this.log}`;
          reject(err);
        } else resolve(this);
      };
      const onData = (chunk) => {
        this.log += chunk;
        if (this.ready.test(this.log)) done();
      };
      child.stdout.setEncoding('utf8').on('data', onData);
      child.stderr.setEncoding('utf8').on('data', onData);
      child.on('error', done);
      child.on('exit', (code, signal) => done(new Error(`${this.label} exited during startup (code ${code}, signal ${signal})`)));
      const timer = setTimeout(() => done(new Error(`${this.label} not ready after ${STARTUP_TIMEOUT_MS} ms`)), STARTUP_TIMEOUT_MS);
    });
  }

  async call(...args) {
    const c = new IORedis({ host: '127.0.0.1', port: this.port, maxRetriesPerRequest: 1, lazyConnect: false });
    c.on('error', () => {});
    try {
      return await c.call(...args);
    } finally {
      c.disconnect();
    }
  }

  async kill(signal = 'SIGKILL') {
    if (!this.alive) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.kill(signal);
    await exited;
  }
}

class SentinelSet {
  constructor(dir, data, sentinels) {
    this.dir = dir;
    this.data = data;
    this.sentinels = sentinels;
    this.name = NAME;
  }

  get url() {
    return `redis+sentinel://${this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/${NAME}`;
  }

  /** ioredis options for BullMQ, as a Node deployment on Sentinel gives them. */
  get connection() {
    return { sentinels: this.sentinels.map((s) => ({ host: '127.0.0.1', port: s.port })), name: NAME, maxRetriesPerRequest: null };
  }

  /** The data node the sentinels name as master now (asked of the first that answers). */
  async master() {
    for (const s of this.sentinels.filter((n) => n.alive)) {
      try {
        const [, port] = await s.call('SENTINEL', 'get-master-addr-by-name', NAME);
        return this.data.find((d) => d.port === Number(port));
      } catch {
        // the next sentinel
      }
    }
    throw new Error('no sentinel answers');
  }

  /**
   * SIGKILL of the master (with `behindMs`, its replica frozen that long before: promoted without
   * the master's last writes); resolves once every live sentinel names the replica and it says it
   * is a master: {killed, promoted, ms, restart()}. `restart()` brings the old master back, and
   * the sentinels make it the new master's replica.
   */
  async killMaster({ behindMs = 0 } = {}) {
    const master = await this.master();
    const replica = this.data.find((d) => d !== master);
    const t0 = Date.now();
    if (behindMs > 0) {
      // the replica frozen and its link cut (what the kernel had buffered for it is all it will
      // read) while the master takes writes: those die with the master, and the replica is
      // promoted that far behind
      replica.child.kill('SIGSTOP');
      await master.call('CLIENT', 'KILL', 'TYPE', 'replica');
      await new Promise((resolve) => setTimeout(resolve, behindMs));
    }
    await master.kill('SIGKILL');
    if (behindMs > 0) replica.child.kill('SIGCONT');
    await waitFor(
      async () => {
        const named = await Promise.all(this.sentinels.map((s) => s.call('SENTINEL', 'get-master-addr-by-name', NAME).catch(() => null)));
        if (!named.every((n) => n && Number(n[1]) === replica.port)) return false;
        const role = await replica.call('ROLE').catch(() => null);
        return Array.isArray(role) && role[0] === 'master';
      },
      DOWN_AFTER_MS + 4 * FAILOVER_TIMEOUT_MS,
      'the sentinels to promote the replica',
      100,
    );
    const ms = Date.now() - t0;
    return {
      killed: `127.0.0.1:${master.port}`,
      promoted: `127.0.0.1:${replica.port}`,
      ms,
      restart: async () => {
        await master.start();
        await waitFor(
          async () => /master_link_status:up/.test(await master.call('INFO', 'replication').catch(() => '')),
          DOWN_AFTER_MS + 4 * FAILOVER_TIMEOUT_MS,
          'the old master to rejoin as a replica',
          100,
        );
      },
    };
  }

  /**
   * `SENTINEL FAILOVER`: the master is demoted while it keeps running (it answers READONLY to
   * writes from then on) and its replica promoted; resolves once every sentinel names the
   * replica, it says it is a master and the old one says it is a replica: {demoted, promoted, ms}.
   */
  async failover() {
    const master = await this.master();
    const replica = this.data.find((d) => d !== master);
    const t0 = Date.now();
    await this.sentinels[0].call('SENTINEL', 'FAILOVER', NAME);
    await waitFor(
      async () => {
        const named = await Promise.all(this.sentinels.map((s) => s.call('SENTINEL', 'get-master-addr-by-name', NAME).catch(() => null)));
        if (!named.every((n) => n && Number(n[1]) === replica.port)) return false;
        const [promoted, demoted] = await Promise.all([replica.call('ROLE').catch(() => null), master.call('ROLE').catch(() => null)]);
        return Array.isArray(promoted) && promoted[0] === 'master' && Array.isArray(demoted) && demoted[0] === 'slave';
      },
      4 * FAILOVER_TIMEOUT_MS,
      'the sentinels to fail over to the replica',
      100,
    );
    return { demoted: `127.0.0.1:${master.port}`, promoted: `127.0.0.1:${replica.port}`, ms: Date.now() - t0 };
  }

  async stop() {
    await Promise.all([...this.sentinels, ...this.data].map((n) => n.kill()));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * Starts the set; resolves once every sentinel sees the replica and the other sentinels. A port
 * another process took between finding it free and binding it (labs starting side by side) starts
 * the set again on other ports.
 */
async function startSentinelSet() {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await startSentinelSetOnce();
    } catch (err) {
      if (attempt >= 3 || !/Address already in use/.test(err.message)) throw err;
    }
  }
}

async function startSentinelSetOnce() {
  const bin = redisServerPath();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringback-sentinel-'));
  const ports = new Set();
  while (ports.size < 5) ports.add(await freePort());
  const [p, r, ...s] = ports;
  const dataArgs = (port, extra) => () => {
    const d = path.join(dir, String(port));
    fs.mkdirSync(d, { recursive: true });
    return ['--port', String(port), '--bind', '127.0.0.1', '--dir', d, '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', '', ...extra];
  };
  const primary = new Node(bin, 'redis primary', p, dataArgs(p, []), /Ready to accept connections/);
  const replica = new Node(bin, 'redis replica', r, dataArgs(r, ['--replicaof', '127.0.0.1', String(p)]), /Ready to accept connections/);
  const sentinels = s.map((port) => {
    const conf = path.join(dir, `sentinel-${port}.conf`);
    fs.writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${NAME} 127.0.0.1 ${p} 2`,
        `sentinel down-after-milliseconds ${NAME} ${DOWN_AFTER_MS}`,
        `sentinel failover-timeout ${NAME} ${FAILOVER_TIMEOUT_MS}`,
        `sentinel parallel-syncs ${NAME} 1`,
        '',
      ].join('\n'),
    );
    return new Node(bin, 'redis sentinel', port, () => [conf, '--sentinel'], /\+monitor master/);
  });
  const set = new SentinelSet(dir, [primary, replica], sentinels);
  try {
    await primary.start();
    await replica.start();
    await Promise.all(sentinels.map((n) => n.start()));
    await waitFor(
      async () => {
        const views = await Promise.all(sentinels.map((n) => n.call('SENTINEL', 'master', NAME).catch(() => null)));
        return views.every((v) => {
          if (!Array.isArray(v)) return false;
          const field = (k) => Number(v[v.indexOf(k) + 1]);
          return field('num-slaves') === 1 && field('num-other-sentinels') === 2;
        });
      },
      30_000,
      'every sentinel to see the replica and the other sentinels',
      100,
    );
    await waitFor(async () => /master_link_status:up/.test(await replica.call('INFO', 'replication')), 30_000, 'the replica in sync', 100);
    return set;
  } catch (err) {
    await set.stop();
    throw err;
  }
}

module.exports = { startSentinelSet };
