// The cutover drill's network namespace of its own and the port handover's nftables redirect:
// what the drill needs from the machine is checked up front, every missing piece
// named at once; the drill then runs inside `unshare --net`, where port 3000 and the nftables
// ruleset are its own and nothing on the machine is touched.
'use strict';

const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');
const { track } = require('../harness/reaper');

/** The ruleset the drill loads and docs/runbook.md shows, with `$legacy_port` and `$serve_port`. */
const RULESET = path.join(__dirname, 'port-handover.nft');
const TABLE = 'inet ringback_handover';
/** Set in the drill's own namespace: the drill runs there instead of starting one. */
const INSIDE = 'RINGBACK_DRILL_NETNS';

function onPath(cmd) {
  return spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' }).status === 0;
}

/** The `unshare` flags: root gets a network namespace; anyone else needs a user namespace too. */
function unshareFlags() {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  return root ? ['--net'] : ['--user', '--map-root-user', '--net'];
}

const lastLines = (r) => `${r.stderr || ''}${r.stdout || ''}${r.error ? r.error.message : ''}`.trim().split('\n').slice(-3).join(' / ') || `exit ${r.status}`;

/**
 * What the machine lacks for the port handover drill, every piece at once: {netns, problems}.
 * `netns` is whether a network namespace can be created at all (the only reason a test may
 * skip the drill); `problems` is empty when the drill can run.
 */
function preflight() {
  const problems = [];
  if (process.platform !== 'linux') {
    return { netns: false, problems: [`the port handover drill needs Linux network namespaces and nftables; this is ${process.platform}`] };
  }
  const missing = ['unshare', 'ip', 'nft'].filter((c) => !onPath(c));
  if (missing.length) {
    problems.push(`not on PATH: ${missing.join(', ')} (Debian: apt-get install -y util-linux iproute2 nftables; scripts/lib.sh ensure_nft)`);
  }
  if (!onPath('unshare')) return { netns: false, problems };
  const flags = unshareFlags();
  const ns = spawnSync('unshare', [...flags, '--', 'true'], { encoding: 'utf8', timeout: 10_000 });
  if (ns.status !== 0) {
    const how = flags.includes('--user') ? 'not root, and unprivileged user namespaces are refused' : 'root, but the kernel or container refuses';
    problems.push(`cannot create a network namespace (unshare ${flags.join(' ')}: ${lastLines(ns)}; ${how}): run the drill as root on a machine that allows CLONE_NEWNET`);
    return { netns: false, problems };
  }
  if (!missing.length) {
    // The kernel features: nf_tables with NAT redirect on the output hook, both families.
    const probe = spawnSync('unshare', [...flags, '--', 'sh', '-c', `ip link set lo up && nft -D legacy_port=3000 -D serve_port=3001 -f '${RULESET}' && nft list table ${TABLE}`], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    if (probe.status !== 0 || !/redirect to :3001/.test(probe.stdout)) {
      problems.push(`the kernel refused the handover ruleset in a fresh network namespace (needs nf_tables with NAT redirect for IPv4 and IPv6: CONFIG_NF_TABLES, CONFIG_NF_TABLES_INET, CONFIG_NFT_NAT, CONFIG_NFT_REDIR): ${lastLines(probe)}`);
    }
  }
  return { netns: true, problems };
}

/** Whether this process is the drill inside its own namespace. */
function inside() {
  return process.env[INSIDE] === '1';
}

/**
 * Runs `node bin/drill.js <args>` in a network namespace of its own (loopback up) and resolves
 * {code, out, err}. `log` gets its stderr lines as they come. If this process dies, the drill
 * gets SIGTERM (unshare --kill-child) and stops what it started.
 */
function runInside(args, { log = () => {}, env = process.env } = {}) {
  const drillJs = path.join(__dirname, '..', '..', 'bin', 'drill.js');
  const argv = [...unshareFlags(), '--fork', '--kill-child=SIGTERM', '--', 'sh', '-c', 'ip link set lo up && exec "$0" "$@"', process.execPath, drillJs, ...args];
  return new Promise((resolve, reject) => {
    const child = track(spawn('unshare', argv, { env: { ...env, [INSIDE]: '1' }, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    let err = '';
    let partial = '';
    child.stdout.setEncoding('utf8').on('data', (c) => (out += c));
    child.stderr.setEncoding('utf8').on('data', (c) => {
      err += c;
      const lines = (partial + c).split('\n');
      partial = lines.pop();
      for (const l of lines) log(l);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (partial) log(partial);
      resolve({ code, out, err });
    });
  });
}

/** Loads the handover ruleset in this namespace: new connections to `legacyPort` go to `servePort`. */
function redirect(legacyPort, servePort) {
  const r = spawnSync('nft', ['-D', `legacy_port=${legacyPort}`, '-D', `serve_port=${servePort}`, '-f', RULESET], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`nft -f ${RULESET}: ${lastLines(r)}`);
  return listTable();
}

/** The handover table as `nft list table` prints it, or null when there is none. */
function listTable() {
  const r = spawnSync('nft', ['list', 'table', ...TABLE.split(' ')], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout : null;
}

module.exports = { preflight, inside, runInside, redirect, listTable, RULESET, TABLE, INSIDE };
