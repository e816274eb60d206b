// The port handover's ruleset (lib/drill/port-handover.nft) on its own, in a network namespace of
// its own: keep-alive connections opened before it loads stay with the old server (a plain
// redirect would take their next packet for a new connection and reset them: the SYN match is
// what prevents it), new connections to the port reach the new server on 127.0.0.1 and ::1,
// and deleting the table (the undo) sends new connections back. Skipped, saying why, only where
// no network namespace can be created.
'use strict';

const assert = require('node:assert/strict');
const path = require('node:path');
const { describe, it } = require('node:test');
const netns = require('../lib/drill/netns');
const { runToEnd } = require('../lib/harness/reaper');

const NETNS = netns.preflight();

// Runs inside the namespace: two servers, a keep-alive agent, the ruleset; prints what answered.
const SCRIPT = `
const http = require('node:http');
const netns = require(${JSON.stringify(path.join(__dirname, '..', 'lib', 'drill', 'netns.js'))});
const serve = (name, port) => new Promise((resolve) => {
  const s = http.createServer((req, res) => res.end(name));
  s.keepAliveTimeout = 30000;
  s.listen(port, '::', () => resolve(s));
});
const get = (url, agent) => new Promise((resolve) => {
  const req = http.get(url, { agent }, (res) => {
    let t = '';
    res.on('data', (c) => (t += c));
    res.on('end', () => resolve(t + '@' + req.socket.localPort));
  });
  req.on('error', (e) => resolve('error ' + (e.code || e.message)));
});
(async () => {
  const servers = [await serve('old', 3000), await serve('new', 3001)];
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const hosts = ['127.0.0.1', '[::1]'];
  const out = { before: [], pooledAfter: [], freshAfter: [], freshAfterUndo: [] };
  for (const h of hosts) out.before.push(await get('http://' + h + ':3000/', agent));
  out.table = netns.redirect(3000, 3001);
  for (const h of hosts) out.pooledAfter.push(await get('http://' + h + ':3000/', agent));
  for (const h of hosts) out.freshAfter.push(await get('http://' + h + ':3000/', false));
  require('node:child_process').execFileSync('nft', ['delete', 'table', 'inet', 'ringback_handover']);
  out.tableAfterUndo = netns.listTable();
  for (const h of hosts) out.freshAfterUndo.push(await get('http://' + h + ':3000/', false));
  process.stdout.write(JSON.stringify(out));
  agent.destroy();
  for (const s of servers) s.close();
  process.exit(0);
})();
`;

describe('the port handover ruleset', () => {
  const skip = NETNS.netns ? false : `cannot create a network namespace here: ${NETNS.problems.join('; ')}`;
  it('keeps open keep-alive connections on the old server, sends new ones (127.0.0.1 and ::1) to the new one, and undoes', { timeout: 30_000, skip }, async () => {
    assert.deepEqual(NETNS.problems, [], 'the machine has what the handover needs');
    const flags = process.getuid() === 0 ? ['--net'] : ['--user', '--map-root-user', '--net'];
    const r = await runToEnd('unshare', [...flags, '--', 'sh', '-c', 'ip link set lo up && exec "$0" -e "$1"', process.execPath, SCRIPT]);
    assert.equal(r.code, 0, `${r.out}\n${r.err}`);
    const out = JSON.parse(r.out);
    const who = (xs) => xs.map((x) => x.split('@')[0]);
    const port = (xs) => xs.map((x) => x.split('@')[1]);
    assert.deepEqual(who(out.before), ['old', 'old']);
    assert.match(out.table, /redirect to :3001/);
    // the same pooled sockets, still answered by the old server: not reset, not redirected
    assert.deepEqual(who(out.pooledAfter), ['old', 'old'], JSON.stringify(out));
    assert.deepEqual(port(out.pooledAfter), port(out.before));
    assert.deepEqual(who(out.freshAfter), ['new', 'new']);
    assert.equal(out.tableAfterUndo, null);
    assert.deepEqual(who(out.freshAfterUndo), ['old', 'old']);
  });
});
