// Loads one of the two pinned BullMQ releases and builds connection options for it.
'use strict';

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

/**
 * ioredis options from a `redis://[user:pass@]host:port[/db]` URL.
 * Host/port form works for both majors (v5 has no `url` connection option).
 */
function connectionFromUrl(url) {
  const u = new URL(url || 'redis://127.0.0.1:6379');
  if (u.protocol !== 'redis:' && u.protocol !== 'rediss:') {
    throw new Error(`REDIS_URL must be redis:// or rediss://, got ${url}`);
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

module.exports = { load, defaultVersion, packageVersion, connectionFromUrl, VERSIONS: Object.keys(VERSIONS) };
