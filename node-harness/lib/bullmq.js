// Loads one of the two pinned BullMQ releases and builds connection options for it.
'use strict';

const IORedis = require('ioredis');

const VERSIONS = {
  5: 'bullmq5', // npm:bullmq@5.81.5
  6: 'bullmq6', // npm:bullmq@6.7.0
};

/** The BullMQ version this process uses: `BULLMQ_VERSION` ("5" or "6"), default "6". */
function defaultVersion() {
  return String(process.env.BULLMQ_VERSION || '6');
}

/** Returns the bullmq module for major version "5" or "6" (default: env `BULLMQ_VERSION`). */
function load(version = defaultVersion()) {
  const pkg = VERSIONS[String(version)];
  if (!pkg) {
    throw new Error(`unsupported BULLMQ_VERSION ${JSON.stringify(version)} (expected "5" or "6")`);
  }
  return require(pkg);
}

/** The exact package version behind an alias, e.g. "6.7.0". */
function packageVersion(version = defaultVersion()) {
  return require(`${VERSIONS[String(version)]}/package.json`).version;
}

const CLUSTER_URL = /^(rediss?)\+cluster:\/\/(.*)$/;

/** Whether `url` names a Redis Cluster (`redis+cluster://` or `rediss+cluster://`), as ringback reads REDIS_URL. */
function isClusterUrl(url) {
  return CLUSTER_URL.test(String(url || ''));
}

/**
 * `redis+cluster://[user:pass@]host:port[,host:port…]` -> {seeds: [{host, port}], redisOptions}.
 * No database path: a cluster has only db 0.
 */
function parseClusterUrl(url) {
  const m = CLUSTER_URL.exec(String(url));
  if (!m) throw new Error(`REDIS_URL must be redis+cluster:// or rediss+cluster://, got ${url}`);
  let rest = m[2].replace(/\/+$/, '');
  const redisOptions = { maxRetriesPerRequest: null };
  const at = rest.lastIndexOf('@');
  if (at !== -1) {
    const [user, pass] = rest.slice(0, at).split(':');
    if (user) redisOptions.username = decodeURIComponent(user);
    if (pass !== undefined) redisOptions.password = decodeURIComponent(pass);
    rest = rest.slice(at + 1);
  }
  if (rest.includes('/')) throw new Error(`REDIS_URL: a cluster URL takes no database path, got ${url}`);
  const seeds = rest.split(',').map((hp) => {
    const i = hp.lastIndexOf(':');
    const host = i === -1 ? hp : hp.slice(0, i);
    const port = i === -1 ? 6379 : Number(hp.slice(i + 1));
    if (!host || !Number.isInteger(port) || port <= 0) throw new Error(`REDIS_URL: bad cluster seed ${JSON.stringify(hp)} in ${url}`);
    return { host: host.replace(/^\[|\]$/g, ''), port };
  });
  if (m[1] === 'rediss') redisOptions.tls = {};
  return { seeds, redisOptions };
}

/**
 * A new ioredis `Cluster` for a cluster URL. It follows MOVED and ASK itself, retries
 * TRYAGAIN and CLUSTERDOWN, and refreshes its slot table after a failover; the delays are short
 * because the test clusters fail over in seconds. A multi-key command (every BullMQ script) meets
 * TRYAGAIN for as long as its slot's keys are split between two masters during a migration,
 * each retry counting as a redirection: the budget (1000 × 50 ms) outlasts a migration of a
 * busy slot. BullMQ needs maxRetriesPerRequest: null on every connection it may block on, which
 * is in `redisOptions` for a Cluster.
 */
function clusterClient(url, extra = {}) {
  const { seeds, redisOptions } = parseClusterUrl(url);
  const client = new IORedis.Cluster(seeds, {
    redisOptions: { ...redisOptions, ...(extra.redisOptions || {}) },
    maxRedirections: 1000,
    retryDelayOnFailover: 200,
    retryDelayOnClusterDown: 200,
    retryDelayOnTryAgain: 50,
    slotsRefreshTimeout: 2000,
    ...extra,
  });
  // A node killed by a fault test refuses connections until the cluster drops it: commands see
  // the error (and are retried); without a listener ioredis would also print each one.
  client.on('error', () => {});
  return client;
}

/**
 * A raw ioredis client for `url`: a `Redis` for redis:// and rediss://, a `Cluster` for the
 * cluster forms. The caller closes it (quit()).
 */
function redisClient(url, extra = {}) {
  if (isClusterUrl(url)) return clusterClient(url);
  return new IORedis({ ...connectionFromUrl(url), ...extra });
}

/**
 * ioredis's Sentinel options for `redis+sentinel://[user:pass@]host:port[,host:port…]/<name>[/<db>]`
 * (as ringback reads REDIS_URL): `{ sentinels: [...], name }`, the way a Node deployment on
 * Sentinel configures BullMQ; null for any other URL.
 */
function sentinelOptions(url) {
  const m = /^(rediss?)\+sentinel:\/\/(?:([^@/]*)@)?([^/]+)\/([^/]+)(?:\/(\d+))?$/.exec(String(url || ''));
  if (!m) return null;
  const [, scheme, auth, hosts, name, db] = m;
  const opts = {
    sentinels: hosts.split(',').map((h) => {
      const [host, port] = h.split(':');
      return { host, port: port ? Number(port) : 26379 };
    }),
    name: decodeURIComponent(name),
    maxRetriesPerRequest: null,
  };
  if (auth) {
    const [user, pass] = auth.split(':');
    if (user) opts.username = decodeURIComponent(user);
    if (pass !== undefined) opts.password = decodeURIComponent(pass);
  }
  if (db) opts.db = Number(db);
  if (scheme === 'rediss') opts.tls = {};
  return opts;
}

/**
 * The `connection` option for BullMQ from a URL. For `redis://[user:pass@]host:port[/db]`:
 * ioredis options (host/port form works for both majors; v5 has no `url` connection option),
 * from which BullMQ makes and closes its own clients. For a cluster URL: a NEW ioredis
 * `Cluster`, which BullMQ uses as given (it duplicates it for blocking reads) and does NOT
 * close: the caller quits it after closing the BullMQ object, or lets the process end.
 */
function connectionFromUrl(url) {
  if (isClusterUrl(url)) return clusterClient(url);
  const sentinel = sentinelOptions(url);
  if (sentinel) return sentinel;
  const u = new URL(url || 'redis://127.0.0.1:6379');
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new Error(`REDIS_URL must be redis://, rediss://, redis+cluster:// or rediss+cluster://, got ${url}`);
  }
  const opts = {
    host: u.hostname || '127.0.0.1',
    port: u.port ? Number(u.port) : 6379,
    // Workers need this on their blocking connection; harmless elsewhere.
    maxRetriesPerRequest: null,
  };
  if (u.username) opts.username = decodeURIComponent(u.username);
  if (u.password) opts.password = decodeURIComponent(u.password);
  const db = u.pathname.replace(/^\//, '');
  if (db) opts.db = Number(db);
  if (u.protocol === 'rediss:') opts.tls = {};
  return opts;
}

/**
 * The BullMQ `connection` for `url`, owned by whoever holds `closers`: the options for a single
 * server (BullMQ closes the clients it makes), or a new Cluster whose quit() is pushed on
 * `closers` (closers run last-in first-out, so the BullMQ object closes before its client).
 */
function ownedConnection(url, closers) {
  const conn = connectionFromUrl(url);
  if (isClusterUrl(url)) closers.push(() => conn.quit());
  return conn;
}

/**
 * Every key matching `pattern` on `redis`: SCAN on one server, or on each master of a Cluster
 * (SCAN is per node), sorted and without duplicates.
 */
async function scanAll(redis, pattern) {
  const nodes = redis.isCluster ? redis.nodes('master') : [redis];
  const keys = new Set();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const k of batch) keys.add(k);
    } while (cursor !== '0');
  }
  return [...keys].sort();
}

/** The BullMQ prefix for a URL: `{bull}` on a cluster (one hash slot per queue's keys), else `bull`. */
function defaultPrefix(url) {
  return isClusterUrl(url) ? '{bull}' : 'bull';
}

module.exports = {
  load,
  defaultVersion,
  packageVersion,
  connectionFromUrl,
  ownedConnection,
  redisClient,
  isClusterUrl,
  parseClusterUrl,
  scanAll,
  defaultPrefix,
  VERSIONS: Object.keys(VERSIONS),
};
