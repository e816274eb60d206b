#!/usr/bin/env node
// The Node side of the cron property test: generates cron cases (patterns, valid and not, time
// zones with DST changes, start times, startDate/endDate/utc) from a seed, and answers each with
// BullMQ's own getNextMillis of both pinned releases (bullmq 5.81.5 -> cron-parser 4.x, bullmq
// 6.7.0 -> cron-parser 5.x). One JSON line per case on stdout:
//   {"pattern","tz","utc","startDate","endDate","hashSeed","millis","v4":{"next"}|{"error"},"v5":...}
// ("next": null when the parser found no run). Usage: cron-oracle.js --count N --seed S
// Cases without tz use this process's zone: run it with TZ set and give the same zone to ours.
'use strict';

const { getNextMillis: next4 } = require('bullmq5');
const { getNextMillis: next5 } = require('bullmq6');

function arg(name, dflt) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
}

function mulberry32(seed) {
  return () => {
    let t = (seed += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const rand = mulberry32(Number(arg('seed', '1')) >>> 0);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const chance = (p) => rand() < p;

const ZONES = [
  'UTC', 'America/New_York', 'Europe/London', 'Europe/Berlin', 'Australia/Sydney', 'America/Sao_Paulo',
  'Asia/Kolkata', 'Pacific/Chatham', 'Australia/Lord_Howe', 'America/St_Johns', 'Asia/Tehran',
  'America/Santiago', 'Pacific/Auckland', 'Europe/Moscow', 'America/Los_Angeles', 'utc+3', null,
];
const BOUNDS = [
  [0, 59], [0, 59], [0, 23], [1, 31], [1, 12], [0, 7],
];
const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'];

/** One atom of field i: value, range, step, name, L, #, or (rarely) something broken. */
function atom(i) {
  const [lo, hi] = BOUNDS[i];
  // small spread around the bounds so out-of-range values occur
  const v = () => (chance(0.05) ? int(lo - 2, hi + 3) : int(lo, hi));
  const r = rand();
  if (r < 0.25) return String(v());
  if (r < 0.4) {
    const a = v();
    const b = chance(0.85) ? int(a, hi) : v();
    return `${a}-${b}`;
  }
  if (r < 0.55) return `${pick(['*', String(v()), `${v()}-${v()}`])}/${chance(0.05) ? 0 : int(1, Math.max(2, hi))}`;
  if (r < 0.62 && i === 4) return pick(MONTHS) + (chance(0.3) ? `-${pick(MONTHS)}` : '');
  if (r < 0.62 && i === 5) return pick(DAYS) + (chance(0.3) ? `-${pick(DAYS)}` : '');
  if (r < 0.68 && i === 3) return pick(['L', 'L', `${int(1, 31)}L`]);
  if (r < 0.68 && i === 5) return pick([`${int(0, 7)}L`, `${int(0, 7)}#${int(0, 6)}`, `${pick(DAYS)}#${int(1, 5)}`]);
  if (r < 0.72) return pick(['?', '*']);
  if (r < 0.76) return pick(['H', `H/${int(0, 20)}`, `H(${int(lo - 1, hi)}-${int(lo, hi + 1)})`, `H(${int(lo, hi)}-${int(lo, hi)})/${int(0, 9)}`, `1H`, 'H(1-2']);
  if (r < 0.74) return pick(['', '-', '1-', '-1', '/5', '5/', '1/2/3', 'x', 'L-2', 'L/2', '7-0', '1--2', '05', '1.5', 'H']);
  return '*';
}

function field(i) {
  if (chance(0.45)) return '*';
  const n = chance(0.8) ? 1 : int(2, 4);
  return Array.from({ length: n }, () => atom(i)).join(',');
}

function pattern() {
  const r = rand();
  if (r < 0.03) return pick(['@yearly', '@monthly', '@weekly', '@daily', '@hourly', '@annually', '@weekdays', '@minutely', '', '   ']);
  const six = chance(0.5);
  const fields = Array.from({ length: 6 }, (_, i) => field(i));
  // keep seconds coarse most of the time, so the search is not second by second to the limit
  if (chance(0.6)) fields[0] = String(int(0, 59));
  const p = six ? fields : fields.slice(1);
  if (chance(0.02)) p.push('*');
  return p.join(chance(0.05) ? '  ' : ' ');
}

/** A start instant: anywhere 2000-2035, or within hours of a spring/autumn change. */
function start() {
  if (chance(0.5)) return int(Date.UTC(2000, 0, 1), Date.UTC(2035, 11, 31)) + (chance(0.3) ? int(0, 999) : 0);
  const year = int(2005, 2032);
  const month = pick([2, 3, 3, 9, 9, 10, 10, 3]);
  const day = int(1, 31);
  return Date.UTC(year, month, day, int(0, 23), pick([0, 0, 30, int(0, 59)]), pick([0, 0, int(0, 59)]), chance(0.2) ? int(1, 999) : 0);
}

function answer(fn, millis, opts) {
  try {
    const next = fn(millis, { ...opts });
    return { next: typeof next === 'number' ? next : null };
  } catch (e) {
    return { error: String(e && e.message) };
  }
}

const count = Number(arg('count', '1000'));
const out = [];
for (let n = 0; n < count; n++) {
  const millis = start();
  const opts = { pattern: pattern() };
  const tz = pick(ZONES);
  if (tz) opts.tz = tz;
  if (chance(0.1)) opts.utc = true;
  if (chance(0.1)) opts.startDate = millis + int(-86_400_000, 30 * 86_400_000);
  if (chance(0.1)) opts.endDate = millis + int(-3_600_000, 60 * 86_400_000);
  // cron-parser 5 hashes H values with hashSeed; without one they are random in Node too
  if (opts.pattern.includes('H') && chance(0.8)) opts.hashSeed = pick(['job-1', 'scheduler', String(int(0, 99999)), 'é']);
  out.push(
    JSON.stringify({
      pattern: opts.pattern,
      tz: opts.tz ?? null,
      utc: !!opts.utc,
      startDate: opts.startDate ?? null,
      endDate: opts.endDate ?? null,
      hashSeed: opts.hashSeed ?? null,
      millis,
      v4: answer(next4, millis, opts),
      v5: answer(next5, millis, opts),
    }),
  );
  if (out.length >= 500) {
    process.stdout.write(out.join('\n') + '\n');
    out.length = 0;
  }
}
if (out.length) process.stdout.write(out.join('\n') + '\n');
