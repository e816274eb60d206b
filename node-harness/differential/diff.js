// Compares two normalized views (Node's and ringback's) and reports every difference as
// {key, field, node, ringback}, with timestamps ({$ts}) and durations ({$dur}) equal within a
// tolerance, and formats them as a readable diff naming the key and field.
'use strict';

const MISSING = Symbol('missing');

const isTs = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && '$ts' in v;
const isDur = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && '$dur' in v;
const isPlain = (v) => v !== null && typeof v === 'object' && !Array.isArray(v) && !isTs(v) && !isDur(v);

/** Short text for a value in a diff line. */
function show(v) {
  if (v === MISSING) return '(absent)';
  if (isTs(v)) return `t${v.$ts >= 0 ? '+' : ''}${v.$ts}ms`;
  if (isDur(v)) return `${v.$dur}ms`;
  const text = JSON.stringify(v, (k, x) => (isTs(x) ? `t+${x.$ts}ms` : isDur(x) ? `${x.$dur}ms` : x));
  return text === undefined ? String(v) : text.length > 300 ? `${text.slice(0, 300)}…(${text.length} chars)` : text;
}

/**
 * Deep comparison; pushes {field, node, ringback, note} into `out`.
 * Arrays are compared by index (and length); objects by key.
 */
function compareValues(a, b, path, tol, out) {
  if (isTs(a) && isTs(b)) {
    if (Math.abs(a.$ts - b.$ts) <= tol.ts) tol.seen.ts = Math.max(tol.seen.ts, Math.abs(a.$ts - b.$ts));
    if (Math.abs(a.$ts - b.$ts) > tol.ts) out.push({ field: path, node: a, ringback: b, note: `timestamps differ by ${b.$ts - a.$ts} ms (tolerance ${tol.ts})` });
    return;
  }
  if (isDur(a) && isDur(b)) {
    if (Math.abs(a.$dur - b.$dur) <= tol.dur) tol.seen.dur = Math.max(tol.seen.dur, Math.abs(a.$dur - b.$dur));
    if (Math.abs(a.$dur - b.$dur) > tol.dur) out.push({ field: path, node: a, ringback: b, note: `durations differ by ${b.$dur - a.$dur} ms (tolerance ${tol.dur})` });
    return;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length === b.length) {
      for (let i = 0; i < a.length; i++) compareValues(a[i], b[i], `${path}[${i}]`, tol, out);
      return;
    }
    // Different lengths: align the two sequences first, so one missing event is reported as one
    // missing event rather than as every later entry shifted by one.
    out.push({ field: `${path}.length`, node: a.length, ringback: b.length });
    for (const [i, j] of align(a, b)) {
      if (i !== null && j !== null) compareValues(a[i], b[j], `${path}[${i}]`, tol, out);
      else if (i !== null) out.push({ field: `${path}[${i}]`, node: a[i], ringback: MISSING, note: 'only in node' });
      else out.push({ field: `${path}[~${j}]`, node: MISSING, ringback: b[j], note: `only in ringback (its index ${j})` });
    }
    return;
  }
  if (isPlain(a) && isPlain(b)) {
    const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
    for (const k of keys) {
      compareValues(k in a ? a[k] : MISSING, k in b ? b[k] : MISSING, path ? `${path}.${k}` : k, tol, out);
    }
    return;
  }
  if (a === MISSING && b === MISSING) return;
  if (a !== b) out.push({ field: path, node: a, ringback: b });
}

/** An entry's shape: its JSON with times blanked, so entries differing only in time align. */
function shape(v) {
  return JSON.stringify(v, (k, x) => (isTs(x) ? 't' : isDur(x) ? 'd' : x));
}

/** Longest-common-subsequence alignment of two arrays by shape: [[i|null, j|null], ...] in order. */
function align(a, b) {
  const sa = a.map(shape);
  const sb = b.map(shape);
  const n = a.length;
  const m = b.length;
  const L = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) L[i][j] = sa[i] === sb[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  }
  const pairs = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (sa[i] === sb[j]) pairs.push([i++, j++]);
    else if (L[i + 1][j] >= L[i][j + 1]) pairs.push([i++, null]);
    else pairs.push([null, j++]);
  }
  while (i < n) pairs.push([i++, null]);
  while (j < m) pairs.push([null, j++]);
  return pairs;
}

/** Differences of one key (type, expiry, content). */
function compareKey(key, a, b, tol) {
  const out = [];
  if (a === undefined || b === undefined) {
    return [{ key, field: '', node: a === undefined ? MISSING : a.value, ringback: b === undefined ? MISSING : b.value, note: a === undefined ? 'only in ringback' : 'only in node' }];
  }
  if (a.type !== b.type) return [{ key, field: '(type)', node: a.type, ringback: b.type }];
  if (a.ttl !== b.ttl) out.push({ field: '(expires)', node: a.ttl, ringback: b.ttl });
  compareValues(a.value, b.value, '', tol, out);
  return out.map((d) => ({ key, ...d }));
}

/**
 * All differences between two {key: {type, ttl, value}} maps; tolerance = {ts: ms, dur: ms}.
 * The array also carries `maxSeen` {ts, dur}: the largest accepted differences of paired times.
 */
function diffViews(node, ringback, tolerance) {
  const tol = { ...tolerance, seen: { ts: 0, dur: 0 } };
  const keys = [...new Set([...Object.keys(node), ...Object.keys(ringback)])].sort();
  const diffs = keys.flatMap((k) => compareKey(k, node[k], ringback[k], tol));
  // The largest differences of paired times that were accepted, to calibrate tolerances.
  diffs.maxSeen = tol.seen;
  return diffs;
}

/** Whether a difference is declared expected: {key: string|RegExp, field?: string|RegExp}. */
function matches(rule, d) {
  const m = (pattern, text) => pattern === undefined || (pattern instanceof RegExp ? pattern.test(text) : pattern === text);
  return m(rule.key, d.key) && m(rule.field, d.field);
}

/** Splits differences into unexpected and expected ones (each expected one carries its reason). */
function classify(diffs, expected = []) {
  const unexpected = [];
  const known = [];
  for (const d of diffs) {
    const rule = expected.find((r) => matches(r, d));
    if (rule) known.push({ ...d, reason: rule.reason });
    else unexpected.push(d);
  }
  return { unexpected, known };
}

function formatDiff(d) {
  const where = d.field ? `${d.key} ${d.field}` : d.key;
  const note = d.note ? `  [${d.note}]` : '';
  const reason = d.reason ? `  (expected: ${d.reason})` : '';
  return `  ${where}: node=${show(d.node)} ringback=${show(d.ringback)}${note}${reason}`;
}

function formatDiffs(diffs) {
  return diffs.map(formatDiff).join('\n');
}

module.exports = { diffViews, classify, formatDiff, formatDiffs, show, MISSING };
