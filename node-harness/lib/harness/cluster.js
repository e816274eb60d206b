// A real local Redis Cluster for the Node tests and drills: three masters with one replica each
// on random free ports, made by `redis-cli --cluster create`, torn down after; and the faults the
// cluster tests inject (a replica's CLUSTER FAILOVER, a master's SIGKILL, a slot's migration).
//
// The same cluster as scripts/redis-cluster (the Rust tests' helper): same node settings, same
// `redis-cli --cluster create`. The nodes are started here rather than by that script because a
// fault test needs each node as a child process: SIGKILL it, start it again on its own
// nodes.conf, and have the reaper kill every node when the test process dies (the script's
// nodes are daemons). The node timeout is short (CLUSTER_NODE_TIMEOUT_MS) so a killed master's
// replica is promoted within seconds, as a test can wait for; production keeps Redis's 15 s.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const IORedis = require('ioredis');
const { track, runToEnd } = require('./reaper');
const { freePort, redisServerPath } = require('./redis');
const { waitFor, withTimeout } = require('./wait');

// as scripts/redis-cluster's default: a killed master is failed over in about 2-4 s
const CLUSTER_NODE_TIMEOUT_MS = 2000;
const READY = /Ready to accept connections/;
const STARTUP_TIMEOUT_MS = 10_000;
const SLOTS = 16384;

// CRC16/XMODEM, the hash Redis Cluster maps keys to slots with (cluster-spec "Keys distribution model").
const CRC16_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i += 1) {
    let crc = i << 8;
    for (let b = 0; b < 8; b += 1) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    t[i] = crc;
  }
  return t;
})();

function crc16(buf) {
  let crc = 0;
  for (const byte of buf) crc = ((crc << 8) & 0xffff) ^ CRC16_TABLE[((crc >> 8) ^ byte) & 0xff];
  return crc;
}

/** The hash slot of `key`: of its first non-empty `{tag}` when it has one, else of the whole key. */
function slotOf(key) {
  const s = String(key);
  const open = s.indexOf('{');
  if (open !== -1) {
    const close = s.indexOf('}', open + 1);
    if (close > open + 1) return crc16(Buffer.from(s.slice(open + 1, close))) % SLOTS;
  }
  return crc16(Buffer.from(s)) % SLOTS;
}

/** One redis-server of the cluster; `start()` again after `kill()` rejoins with its nodes.conf. */
class ClusterNode {
  constructor(bin, port, busPort, dir) {
    this.bin = bin;
    this.host = '127.0.0.1';
    this.port = port;
    // the cluster bus port, free too (the default, port + 10000, may be taken or beyond 65535)
    this.busPort = busPort;
    this.dir = dir;
    this.log = '';
  }

  get addr() {
    return `${this.host}:${this.port}`;
  }

  get alive() {
    return Boolean(this.child) && this.child.exitCode === null && this.child.signalCode === null;
  }

  start() {
    fs.mkdirSync(this.dir, { recursive: true });
    const args = [
      '--port', String(this.port), '--bind', this.host, '--dir', this.dir,
      '--save', '', '--appendonly', 'no', '--daemonize', 'no', '--logfile', '', '--pidfile', path.join(this.dir, 'redis.pid'),
      '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-port', String(this.busPort),
      '--cluster-node-timeout', String(CLUSTER_NODE_TIMEOUT_MS),
      // a replica may always take over (the default refuses one that lost its master too long ago)
      '--cluster-replica-validity-factor', '0',
      // slots of a failed master do not stop the other masters from serving theirs
      '--cluster-require-full-coverage', 'no',
      // the topology stays what the test made: no replica wanders to an orphaned master
      '--cluster-allow-replica-migration', 'no',
    ];
    return new Promise((resolve, reject) => {
      const child = track(spawn(this.bin, args, { stdio: ['ignore', 'pipe', 'pipe'] }));
      this.child = child;
      let settled = false;
      const done = (err) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) {
          child.kill('SIGKILL');
          err.message += `\n--- redis-server log (cluster node ${this.addr}) ---\n${this.log}`;
          reject(err);
        } else resolve(this);
      };
      const onData = (chunk) => {
        this.log += chunk;
        if (READY.test(this.log)) done();
      };
      child.stdout.setEncoding('utf8').on('data', onData);
      child.stderr.setEncoding('utf8').on('data', onData);
      child.on('error', done);
      child.on('exit', (code, signal) => done(new Error(`redis-server exited during startup (code ${code}, signal ${signal})`)));
      const timer = setTimeout(() => done(new Error(`cluster node not ready after ${STARTUP_TIMEOUT_MS} ms`)), STARTUP_TIMEOUT_MS);
    });
  }

  /** A short-lived admin connection to this node alone (not following redirections). */
  client() {
    return new IORedis({ host: this.host, port: this.port, maxRetriesPerRequest: 1, lazyConnect: false, enableOfflineQueue: true });
  }

  async call(...args) {
    const c = this.client();
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

/** `CLUSTER NODES` as rows {id, addr, flags[], master, linkState, slots: [[from, to]]}. */
function parseClusterNodes(text) {
  return String(text)
    .trim()
    .split('\n')
    .map((line) => {
      const [id, addrRaw, flags, master, , , , linkState, ...slots] = line.trim().split(' ');
      return {
        id,
        addr: addrRaw.split('@')[0],
        flags: flags.split(','),
        master: master === '-' ? null : master,
        linkState,
        slots: slots
          .filter((s) => !s.startsWith('['))
          .map((s) => {
            const [a, b] = s.split('-').map(Number);
            return [a, b === undefined ? a : b];
          }),
      };
    });
}

class Cluster {
  constructor(nodes, dir) {
    this.nodes = nodes;
    this.dir = dir;
  }

  /** The seed list as {host, port} (every node: a client finds the rest from any of them). */
  get seeds() {
    return this.nodes.map((n) => ({ host: n.host, port: n.port }));
  }

  /** REDIS_URL for ringback and the Node side: `redis+cluster://host:port,host:port,…`. */
  get url() {
    return `redis+cluster://${this.nodes.map((n) => n.addr).join(',')}`;
  }

  nodeAt(addr) {
    return this.nodes.find((n) => n.addr === addr);
  }

  /** The topology as one live node sees it. */
  async topology(via) {
    const node = via || this.nodes.find((n) => n.alive);
    return parseClusterNodes(await node.call('CLUSTER', 'NODES'));
  }

  /** {master: ClusterNode, masterId, replicas: [ClusterNode]} owning `slot`, as a live node sees it. */
  async ownerOf(slot) {
    const rows = await this.topology();
    const m = rows.find((r) => r.flags.includes('master') && !r.flags.includes('fail') && r.slots.some(([a, b]) => slot >= a && slot <= b));
    if (!m) throw new Error(`no live master owns slot ${slot}`);
    const replicas = rows.filter((r) => r.master === m.id && !r.flags.includes('fail')).map((r) => this.nodeAt(r.addr));
    return { master: this.nodeAt(m.addr), masterId: m.id, replicas };
  }

  /** The master serving `key` (by its hash slot). */
  async masterOf(key) {
    return (await this.ownerOf(slotOf(key))).master;
  }

  /**
   * Waits until every live node agrees on who owns each slot, every slot is served by a live
   * master, and each live node says cluster_state:ok.
   */
  async waitStable(timeoutMs = 20_000, what = 'the cluster to agree on its topology') {
    await waitFor(
      async () => {
        const live = this.nodes.filter((n) => n.alive);
        const views = await Promise.all(live.map((n) => n.call('CLUSTER', 'SLOTS')));
        const infos = await Promise.all(live.map((n) => n.call('CLUSTER', 'INFO')));
        if (!infos.every((i) => /cluster_state:ok/.test(i) && /cluster_slots_assigned:16384/.test(i))) return false;
        const liveAddrs = new Set(live.map((n) => n.addr));
        const norm = (v) =>
          JSON.stringify(
            v
              .map(([a, b, master]) => [a, b, `${master[0]}:${master[1]}`])
              .sort((x, y) => x[0] - y[0]),
          );
        const first = norm(views[0]);
        if (!views.every((v) => norm(v) === first)) return false;
        return JSON.parse(first).every(([, , m]) => liveAddrs.has(m));
      },
      timeoutMs,
      what,
      100,
    );
  }

  /**
   * `CLUSTER FAILOVER` on the replica of the master owning `slot`: the planned failover, no
   * write lost. Resolves {from, to, ms} once every node agrees the replica is the master.
   */
  async failover(slot) {
    const t0 = Date.now();
    const { master, replicas } = await this.ownerOf(slot);
    const replica = replicas.find((r) => r.alive);
    if (!replica) throw new Error(`master ${master.addr} of slot ${slot} has no live replica`);
    await replica.call('CLUSTER', 'FAILOVER');
    await waitFor(async () => (await this.ownerOf(slot)).master === replica, 15_000, `replica ${replica.addr} to take slot ${slot}`, 50);
    await this.waitStable(15_000, `the cluster to agree after the failover to ${replica.addr}`);
    const ms = Date.now() - t0;
    // the old master is now the new one's replica: wait for it to sync, so the next fault finds one
    await this.waitReplicated(slot);
    return { from: master.addr, to: replica.addr, ms };
  }

  /** Waits until the master of `slot` has a live replica in sync (master_link_status:up). */
  async waitReplicated(slot, timeoutMs = 20_000) {
    await waitFor(
      async () => {
        const { replicas } = await this.ownerOf(slot);
        const live = replicas.filter((r) => r && r.alive);
        if (!live.length) return false;
        const infos = await Promise.all(live.map((r) => r.call('INFO', 'replication')));
        return infos.some((i) => /master_link_status:up/.test(i));
      },
      timeoutMs,
      `the master of slot ${slot} to have a replica in sync`,
      100,
    );
  }

  /**
   * SIGKILL of the master owning `slot`: its replica is promoted once the others mark it failed
   * (about twice the node timeout). Resolves {killed, promoted, ms, restart()} once they agree;
   * `restart()` brings the killed node back, and it rejoins as the new master's replica.
   */
  async killMaster(slot) {
    const t0 = Date.now();
    const { master, replicas } = await this.ownerOf(slot);
    const replica = replicas.find((r) => r.alive);
    if (!replica) throw new Error(`master ${master.addr} of slot ${slot} has no live replica`);
    await master.kill('SIGKILL');
    await waitFor(
      async () => {
        const rows = await this.topology(replica);
        const me = rows.find((r) => r.addr === replica.addr);
        return me.flags.includes('master') && me.slots.some(([a, b]) => slot >= a && slot <= b);
      },
      30_000,
      `replica ${replica.addr} to be promoted after ${master.addr} was killed`,
      50,
    );
    await this.waitStable(20_000, `the cluster to agree after ${master.addr} was killed`);
    const ms = Date.now() - t0;
    return {
      killed: master.addr,
      promoted: replica.addr,
      ms,
      restart: async () => {
        await master.start();
        await waitFor(
          async () => {
            const rows = await this.topology(replica);
            const back = rows.find((r) => r.addr === master.addr);
            return back && back.flags.includes('slave') && !back.flags.includes('fail') && back.linkState === 'connected';
          },
          20_000,
          `${master.addr} to rejoin as a replica`,
          100,
        );
        await waitFor(async () => /master_link_status:up/.test(await master.call('INFO', 'replication')), 20_000, `${master.addr} to sync`, 100);
      },
    };
  }

  /**
   * Moves `slot` to another master with its keys, the way `redis-cli --cluster reshard` does:
   * IMPORTING on the target, MIGRATING on the source, MIGRATE the keys in batches of `batch`
   * (pausing `pauseMs` between batches, so clients meet ASK and TRYAGAIN while keys are split),
   * then SETSLOT NODE on every master. Resolves {from, to, keys, ms}.
   */
  async migrateSlot(slot, { to, batch = 10, pauseMs = 20 } = {}) {
    const t0 = Date.now();
    const rows = await this.topology();
    const src = await this.ownerOf(slot);
    const masters = rows.filter((r) => r.flags.includes('master') && !r.flags.includes('fail') && this.nodeAt(r.addr).alive);
    const target = to ? masters.find((r) => r.addr === to.addr) : masters.find((r) => r.id !== src.masterId);
    if (!target) throw new Error(`no other live master to move slot ${slot} to`);
    const dst = this.nodeAt(target.addr);
    await dst.call('CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', src.masterId);
    await src.master.call('CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', target.id);
    let moved = 0;
    for (;;) {
      const keys = await src.master.call('CLUSTER', 'GETKEYSINSLOT', String(slot), String(batch));
      if (!keys.length) break;
      await src.master.call('MIGRATE', dst.host, String(dst.port), '', '0', '5000', 'REPLACE', 'KEYS', ...keys);
      moved += keys.length;
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    }
    // the target first, then the source, then everyone else (as redis-cli does)
    await dst.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id);
    await src.master.call('CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id);
    for (const m of masters) {
      if (m.id !== target.id && m.id !== src.masterId) await this.nodeAt(m.addr).call('CLUSTER', 'SETSLOT', String(slot), 'NODE', target.id);
    }
    await this.waitStable(15_000, `the cluster to agree slot ${slot} moved to ${dst.addr}`);
    return { from: src.master.addr, to: dst.addr, keys: moved, ms: Date.now() - t0 };
  }

  /** `INFO <section>` of every live master, by address (for CPU and command figures). */
  async mastersInfo(section) {
    const rows = await this.topology();
    const out = {};
    for (const r of rows.filter((x) => x.flags.includes('master') && !x.flags.includes('fail'))) {
      const node = this.nodeAt(r.addr);
      if (node && node.alive) out[r.addr] = await node.call('INFO', section);
    }
    return out;
  }

  async stop() {
    await Promise.all(this.nodes.map((n) => n.kill('SIGKILL')));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/**
 * A detached watchdog that SIGKILLs every node of `dir` (by its pidfile) and removes `dir` once
 * this process is gone: the reaper's exit hook does not run when the test process is killed
 * (SIGKILL, SIGPIPE of a closed output pipe), and six orphaned nodes would outlive it.
 */
function watchdog(dir) {
  const script = 'while kill -0 "$0" 2>/dev/null; do sleep 1; done; for f in "$1"/*/redis.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; rm -rf "$1"';
  const child = spawn('sh', ['-c', script, String(process.pid), dir], { detached: true, stdio: 'ignore' });
  child.unref();
}

/**
 * Starts a cluster of `masters` masters with `replicas` replica(s) each on free loopback ports.
 * Resolves a Cluster ({seeds, url, nodes, stop(), failover(slot), killMaster(slot),
 * migrateSlot(slot), masterOf(key), ownerOf(slot), waitStable()}) once every node says
 * cluster_state:ok, all agree on the slots and every replica is in sync.
 */
async function startCluster({ masters = 3, replicas = 1 } = {}) {
  const bin = redisServerPath();
  const cli = process.env.REDIS_CLI || 'redis-cli';
  const probe = spawnSync(cli, ['--version'], { encoding: 'utf8' });
  if (probe.error || probe.status !== 0) throw new Error(`redis-cli not found or not runnable (${cli}); the cluster is made with redis-cli --cluster create`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ringback-cluster-'));
  watchdog(dir);
  const count = masters * (1 + replicas);
  const nodes = [];
  const cluster = new Cluster(nodes, dir);
  try {
    // a port found free may be taken before the node binds it (labs started side by side):
    // the nodes start again on other ports
    for (let attempt = 1; ; attempt += 1) {
      const ports = new Set();
      while (ports.size < 2 * count) ports.add(await freePort());
      const [...all] = ports;
      nodes.length = 0;
      for (let i = 0; i < count; i += 1) nodes.push(new ClusterNode(bin, all[i], all[count + i], path.join(dir, String(all[i]))));
      const started = await Promise.allSettled(nodes.map((n) => n.start()));
      const failed = started.find((r) => r.status === 'rejected');
      if (!failed) break;
      await Promise.all(nodes.map((n) => n.kill()));
      if (attempt >= 5 || !/Address already in use|Failed listening/.test(failed.reason.message)) throw failed.reason;
    }
    const create = await withTimeout(
      runToEnd(cli, ['--cluster', 'create', ...nodes.map((n) => n.addr), '--cluster-replicas', String(replicas), '--cluster-yes']),
      30_000,
      'redis-cli --cluster create',
    );
    if (create.code !== 0) throw new Error(`redis-cli --cluster create failed (${create.code}):\n${create.out}\n${create.err}`);
    await cluster.waitStable(30_000, 'the new cluster to be ok on every node');
    // every replica attached and in sync, so that a failover test starts from a full copy
    await waitFor(
      async () => {
        const rows = await cluster.topology();
        const reps = rows.filter((r) => r.flags.includes('slave'));
        if (reps.length !== masters * replicas) return false;
        const infos = await Promise.all(reps.map((r) => cluster.nodeAt(r.addr).call('INFO', 'replication')));
        return infos.every((i) => /master_link_status:up/.test(i));
      },
      30_000,
      'every replica to be in sync',
      100,
    );
    return cluster;
  } catch (err) {
    await cluster.stop();
    throw err;
  }
}

module.exports = { startCluster, Cluster, ClusterNode, slotOf, crc16, parseClusterNodes, CLUSTER_NODE_TIMEOUT_MS };
