// Dumps every key of one queue (`<prefix>:<queue>:*`) with its type and whole content, so two
// queues processed by different workers can be compared key by key.
'use strict';

// All keys matching a pattern, sorted: on one server, or on every master of a cluster.
const { scanAll } = require('../lib/bullmq');

/** Redis glob metacharacters in a queue name must not widen the match. */
function globEscape(s) {
  return s.replace(/[*?[\]\\]/g, '\\$&');
}

/** Pairs [[k, v], ...] from a flat [k1, v1, k2, v2] reply. */
function pairs(flat) {
  const out = [];
  for (let i = 0; i < flat.length; i += 2) out.push([flat[i], flat[i + 1]]);
  return out;
}

/**
 * One key's content:
 *   string -> value; hash -> {field: value}; list -> [items] (head first); set -> sorted [members];
 *   zset -> [[member, score]] by rank; stream -> [{id, fields: [[f, v], ...]}] in stream order.
 * `ttl` is true when the key expires (its remaining time is wall-clock noise, so not kept).
 */
async function dumpKey(redis, key) {
  const type = await redis.type(key);
  const pttl = await redis.pttl(key);
  let value;
  switch (type) {
    case 'string':
      value = await redis.get(key);
      break;
    case 'hash':
      value = await redis.hgetall(key);
      break;
    case 'list':
      value = await redis.lrange(key, 0, -1);
      break;
    case 'set':
      value = (await redis.smembers(key)).sort();
      break;
    case 'zset':
      value = pairs(await redis.zrange(key, 0, -1, 'WITHSCORES')).map(([m, s]) => [m, Number(s)]);
      break;
    case 'stream':
      value = (await redis.xrange(key, '-', '+')).map(([id, fields]) => ({ id, fields: pairs(fields) }));
      break;
    case 'none':
      return undefined; // vanished between SCAN and TYPE
    default:
      value = `<unsupported type ${type}>`;
  }
  return { type, ttl: pttl >= 0, value };
}

/** {prefix, queue, keys: {fullKey: {type, ttl, value}}} for every key of the queue. */
async function dumpQueue(redis, prefix, queue) {
  const base = `${prefix}:${queue}:`;
  const keys = {};
  for (const key of await scanAll(redis, `${globEscape(base)}*`)) {
    const entry = await dumpKey(redis, key);
    if (entry) keys[key] = entry;
  }
  return { prefix, queue, keys };
}

module.exports = { dumpQueue, dumpKey, scanAll };
