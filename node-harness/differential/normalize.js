// Normalizes a queue dump so that two runs of the same scenario on two queues can be compared:
// only what legitimately differs between runs is rewritten, everything else is kept verbatim.
//
//   queue name       -> <Q> (in key names and in every value: parentKey, queueKey, dependencies)
//   random job ids   -> v6 flow UUIDs become <uuid:NAME> (NAME = the job's name); scheduler job
//                       ids repeat:<id>:<ms> become repeat:<id>:#<n> (n-th iteration by time)
//   timestamps       -> {$ts: ms since the scenario's anchor}, compared within a tolerance:
//                       hash timestamp/processedOn/finishedOn, completed/failed/waiting-children/
//                       repeat/unsuccessful scores, delayed scores (due ms; the in-ms sequence
//                       is dropped), marker "1", stream entry times, `delayed` event due times,
//                       metrics prevTS, scheduler opts.prevMillis
//   durations        -> {$dur: ms} (hash `delay`, scheduler opts.delay and `offset`), within a
//                       tolerance
//   lock tokens      -> <token> (random per worker process)
//   stream ids       -> dropped (entry time kept as $ts)
//   trace contexts   -> bullmq-otel's `tm` (a JSON W3C carrier, in opts and on the job hash):
//                       each traceparent becomes "<version>-<trace>-<span>-<flags>" with the
//                       random ids named by what they are: in opts, the producer's own
//                       (<trace>, <span>); on the hash (a worker's retry/delay/fail span),
//                       <producer trace> or <other trace> (equal to opts.tm's trace id or not)
//                       and <new span> or <producer span> (a valid span id other than the
//                       producer's, or the producer's); other carrier entries are kept
//   stack traces     -> each entry without its frame lines ("    at ..."): frames are runtime
//                       specific (Node source positions vs none); "Error: <message>" is kept
//   volatile keys    -> `stalled-check` (SET PX stalledInterval by each sweep) and `limiter`
//                       (PX window) exist or not depending on wall-clock time: left out; so is
//                       the base marker member "0" (a wake-up hint that is there or not
//                       depending on whether the idle worker's BZPOPMIN ran before it stopped);
//                       the delayed marker "1" is kept
'use strict';

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const UUID_EXACT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VOLATILE = new Set(['stalled-check', 'limiter']);
const TS_FIELDS = new Set(['timestamp', 'processedOn', 'finishedOn']);
const TS_ZSETS = new Set(['completed', 'failed', 'waiting-children', 'repeat']);

const ts = (ms, anchor) => ({ $ts: Number(ms) - anchor });
const dur = (ms) => ({ $dur: Number(ms) });

function escapeRegExp(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Each stacktrace entry without its frame lines ("    at ..."); unparsable text is kept. */
function normalizeStacktrace(raw) {
  let st;
  try {
    st = JSON.parse(raw);
  } catch {
    return `<not JSON: ${raw}>`;
  }
  if (!Array.isArray(st)) return st;
  return st.map((e) => (typeof e === 'string' ? e.split('\n').filter((l) => !/^\s+at /.test(l)).join('\n') : e));
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO = /^0+$/;

/** {trace, span} of a bullmq-otel carrier (a JSON string), or null. */
function traceIds(carrier) {
  try {
    const m = TRACEPARENT.exec(JSON.parse(carrier).traceparent);
    return m ? { trace: m[2], span: m[3] } : null;
  } catch {
    return null;
  }
}

/**
 * A bullmq-otel `tm` carrier without its random ids. `producer` is the job's opts.tm (null for
 * opts.tm itself): the ids are then named relative to it, see the header.
 */
function normalizeCarrier(raw, producer) {
  let c;
  try {
    c = JSON.parse(raw);
  } catch {
    return `<not JSON: ${raw}>`;
  }
  if (!c || typeof c !== 'object' || Array.isArray(c)) return `<not a carrier: ${raw}>`;
  const out = { ...c };
  const m = TRACEPARENT.exec(c.traceparent);
  if (c.traceparent !== undefined && !m) out.traceparent = `<not a traceparent: ${c.traceparent}>`;
  if (m) {
    const [, version, trace, span, flags] = m;
    let t;
    let sp;
    if (ZERO.test(trace)) t = '<zero trace>';
    else if (!producer) t = '<trace>';
    else t = producer.trace === trace ? '<producer trace>' : '<other trace>';
    if (ZERO.test(span)) sp = '<zero span>';
    else if (!producer) sp = '<span>';
    else sp = producer.span === span ? '<producer span>' : '<new span>';
    out.traceparent = `${version}-${t}-${sp}-${flags}`;
  }
  return out;
}

function normalizeOpts(raw, anchor) {
  let o;
  try {
    o = JSON.parse(raw);
  } catch {
    return `<not JSON: ${raw}>`;
  }
  if (o && typeof o === 'object' && (o.repeatJobKey !== undefined || o.prevMillis !== undefined)) {
    // Scheduler-produced jobs: delay = next run - now, prevMillis = the slot (both clock-based).
    if (typeof o.delay === 'number') o.delay = dur(o.delay);
    if (typeof o.prevMillis === 'number') o.prevMillis = ts(o.prevMillis, anchor);
  }
  // a timestamp the producer gave (a scheduler's, or a scenario's own) is the clock's
  if (o && typeof o === 'object' && typeof o.timestamp === 'number') o.timestamp = ts(o.timestamp, anchor);
  if (o && typeof o === 'object' && typeof o.tm === 'string') o.tm = normalizeCarrier(o.tm, null);
  return o;
}

/**
 * Builds the string rewriter for one dump: queue name, then UUID and scheduler ids.
 * UUIDs are named after the job hash they key (names are unique within a scenario).
 */
function idRewriter(dump) {
  const base = `${dump.prefix}:${dump.queue}:`;
  const q = new RegExp(escapeRegExp(dump.queue), 'g');
  const uuidNames = new Map();
  const schedulerMs = new Map(); // scheduler id -> sorted ms of its iterations
  const seenUuids = [];
  const visit = (s) => {
    if (typeof s !== 'string') return;
    for (const u of s.match(UUID) || []) if (!seenUuids.includes(u)) seenUuids.push(u);
    for (const m of s.matchAll(/repeat:([^:]+):(\d{10,})/g)) {
      const list = schedulerMs.get(m[1]) || new Set();
      list.add(Number(m[2]));
      schedulerMs.set(m[1], list);
    }
  };
  for (const [key, entry] of Object.entries(dump.keys)) {
    visit(key);
    const walk = (v) => {
      if (typeof v === 'string') visit(v);
      else if (Array.isArray(v)) v.forEach(walk);
      else if (v && typeof v === 'object') Object.entries(v).forEach(([k, x]) => (visit(k), walk(x)));
    };
    walk(entry.value);
    const suffix = key.slice(base.length);
    if (entry.type === 'hash' && UUID_EXACT.test(suffix) && entry.value.name !== undefined) {
      uuidNames.set(suffix, entry.value.name);
    }
  }
  let anon = 0;
  for (const u of seenUuids) if (!uuidNames.has(u)) uuidNames.set(u, `?${++anon}`);
  const schedulerIndex = new Map();
  for (const [id, set] of schedulerMs) {
    [...set].sort((a, b) => a - b).forEach((ms, i) => schedulerIndex.set(`repeat:${id}:${ms}`, `repeat:${id}:#${i + 1}`));
  }
  return (s) => {
    if (typeof s !== 'string') return s;
    let out = s.replace(q, '<Q>');
    out = out.replace(UUID, (u) => `<uuid:${uuidNames.get(u)}>`);
    out = out.replace(/repeat:([^:]+):(\d{10,})/g, (m) => schedulerIndex.get(m) || m);
    return out;
  };
}

/** Deeply rewrites strings (keys of objects too). */
function rewriteDeep(v, f) {
  if (typeof v === 'string') return f(v);
  if (Array.isArray(v)) return v.map((x) => rewriteDeep(x, f));
  if (v && typeof v === 'object') {
    if ('$ts' in v || '$dur' in v) return v;
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [f(k), rewriteDeep(x, f)]));
  }
  return v;
}

/** What a queue key suffix is: a queue-level key name, or a job key ({id, part}). */
function classify(suffix, jobIds) {
  const queueKeys = ['wait', 'active', 'paused', 'prioritized', 'pc', 'delayed', 'marker', 'completed', 'failed', 'stalled', 'stalled-check', 'limiter', 'meta', 'events', 'id', 'waiting-children', 'repeat', 'priority'];
  if (queueKeys.includes(suffix)) return { queue: suffix };
  if (/^metrics:(completed|failed)(:data)?$/.test(suffix)) return { queue: 'metrics', data: suffix.endsWith(':data') };
  if (/^(de|dn):/.test(suffix)) return { queue: suffix.slice(0, 2) };
  if (jobIds.has(suffix)) return { job: suffix, part: 'hash' };
  const m = /^(.*):(lock|logs|dependencies|processed|failed|unsuccessful)$/.exec(suffix);
  if (m && jobIds.has(m[1])) return { job: m[1], part: m[2] };
  if (/^repeat:[^:]+$/.test(suffix)) return { queue: 'scheduler' };
  return { other: true };
}

/**
 * Time-scored sets sorted by member (after ids are rewritten): members whose times are within the
 * tolerance may swap ranks between runs (equal scores sort by member), and the times themselves
 * are compared anyway.
 */
function byMember(entries) {
  return [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/**
 * Stream entries: the id becomes the entry's time; a `delayed` event's due time becomes a
 * timestamp, and the delay it announces (due - entry time) is added as `(announced)`, a duration
 * compared with the tight duration tolerance: it is where a wrong backoff shows.
 */
function normalizeStream(entries, anchor) {
  return entries.map(({ id, fields }) => {
    const obj = Object.fromEntries(fields);
    const at = Number(id.split('-')[0]);
    const out = fields.map(([f, v]) => [f, obj.event === 'delayed' && f === 'delay' ? ts(v, anchor) : v]);
    if (obj.event === 'delayed' && obj.delay !== undefined) out.push(['(announced)', dur(Number(obj.delay) - at)]);
    return { at: ts(at, anchor), fields: out };
  });
}

/**
 * Normalized dump: {keys: {normalizedKey: {type, ttl, value}}, dropped: [suffixes]}.
 * `anchor` is the scenario's time origin (ms), the same for both queues.
 */
function normalizeDump(dump, { anchor }) {
  const base = `${dump.prefix}:${dump.queue}:`;
  const rewrite = idRewriter(dump);
  // Job hashes: hashes carrying a job's creation time.
  const jobIds = new Set();
  for (const [key, e] of Object.entries(dump.keys)) {
    if (e.type === 'hash' && e.value.timestamp !== undefined && (e.value.data !== undefined || e.value.opts !== undefined)) {
      jobIds.add(key.slice(base.length));
    }
  }
  const keys = {};
  const dropped = [];
  for (const [key, e] of Object.entries(dump.keys)) {
    const suffix = key.slice(base.length);
    const kind = classify(suffix, jobIds);
    if (VOLATILE.has(kind.queue)) {
      dropped.push(suffix);
      continue;
    }
    let value = e.value;
    let sortMembers = false;
    if (kind.part === 'hash') {
      value = { ...value };
      let producerTm = null;
      try {
        producerTm = traceIds(JSON.parse(value.opts).tm);
      } catch {
        // no opts, or opts without a trace context: every hash `tm` is then <other trace>
      }
      for (const f of Object.keys(value)) {
        if (TS_FIELDS.has(f)) value[f] = ts(value[f], anchor);
        else if (f === 'delay') value[f] = dur(value[f]);
        else if (f === 'stacktrace') value[f] = normalizeStacktrace(value[f]);
        else if (f === 'opts') value[f] = normalizeOpts(value[f], anchor);
        else if (f === 'tm') value[f] = normalizeCarrier(value[f], producerTm || { trace: null, span: null });
      }
    } else if (kind.part === 'lock') {
      value = '<token>';
    } else if (kind.part === 'unsuccessful' || (e.type === 'zset' && TS_ZSETS.has(kind.queue))) {
      value = value.map(([m, s]) => [m, ts(s, anchor)]);
      sortMembers = true;
    } else if (kind.queue === 'delayed') {
      value = value.map(([m, s]) => [m, ts(Math.floor(s / 4096), anchor)]);
      sortMembers = true;
    } else if (kind.queue === 'marker') {
      value = value.filter(([m]) => m !== '0').map(([m, s]) => [m, m === '1' ? ts(s, anchor) : s]);
      if (value.length === 0) {
        dropped.push('marker "0"');
        continue;
      }
    } else if (kind.queue === 'events') {
      value = normalizeStream(value, anchor);
    } else if (kind.queue === 'metrics' && !kind.data) {
      value = { ...value };
      if (value.prevTS !== undefined) value.prevTS = ts(value.prevTS, anchor);
    } else if (kind.queue === 'scheduler') {
      value = { ...value };
      for (const f of ['startDate', 'endDate']) if (value[f] !== undefined) value[f] = ts(value[f], anchor);
      // `every` schedulers store the phase of the upsert time within the period
      if (value.offset !== undefined) value.offset = dur(value.offset);
    }
    value = rewriteDeep(value, rewrite);
    if (sortMembers) value = byMember(value);
    keys[rewrite(suffix)] = { type: e.type, ttl: e.ttl, value };
  }
  return { keys, dropped, rewrite };
}

module.exports = { normalizeDump, normalizeStacktrace, normalizeCarrier, traceIds, idRewriter, rewriteDeep, ts, dur };
