// Starts `ringback twilio-sim` on a free loopback port and talks to it: create a message,
// set fault rules. The binary is env RINGBACK_BIN (default ../target/debug/ringback).
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { track } = require('./reaper');
const { withTimeout } = require('./wait');

const HARNESS_DIR = path.resolve(__dirname, '..', '..');
const LISTENING = /twilio-sim listening on (http:\/\/\S+)/;

function ringbackBin() {
  const bin = path.resolve(HARNESS_DIR, process.env.RINGBACK_BIN || '../target/debug/ringback');
  if (!fs.existsSync(bin)) {
    throw new Error(`ringback binary not found at ${bin}: build it (cargo build) or set RINGBACK_BIN`);
  }
  return bin;
}

/**
 * Spawns the simulator with `--listen 127.0.0.1:0` and waits for the line naming its address.
 * Returns {base, output(), stop(), createMessage(form), putFaults(rules)}.
 */
async function startTwilioSim({ accountSid, authToken, timeoutMs = 15_000 }) {
  const bin = ringbackBin();
  const child = track(
    spawn(bin, ['twilio-sim', '--listen', '127.0.0.1:0', '--account-sid', accountSid, '--auth-token', authToken], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', RUST_LOG: process.env.RUST_LOG || 'warn' },
    }),
  );
  let log = '';
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const base = await withTimeout(
    new Promise((resolve, reject) => {
      const onData = (chunk) => {
        log += chunk;
        const m = LISTENING.exec(log);
        if (m) resolve(m[1]);
      };
      child.stdout.setEncoding('utf8').on('data', onData);
      child.stderr.setEncoding('utf8').on('data', onData);
      child.once('error', reject);
      exited.then((info) => reject(new Error(`twilio-sim exited before listening: ${JSON.stringify(info)}\n${log}`)));
    }),
    timeoutMs,
    'twilio-sim to print its address',
  );
  const auth = `Basic ${Buffer.from(`${accountSid}:${authToken}`).toString('base64')}`;
  return {
    base,
    output: () => log,
    async createMessage(form) {
      const res = await fetch(`${base}/2010-04-01/Accounts/${accountSid}/Messages.json`, {
        method: 'POST',
        headers: { authorization: auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form).toString(),
      });
      return { status: res.status, body: await res.json() };
    },
    async putFaults(rules) {
      const res = await fetch(`${base}/sim/faults`, {
        method: 'PUT',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(rules),
      });
      if (!res.ok) throw new Error(`PUT /sim/faults answered ${res.status}: ${await res.text()}`);
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

module.exports = { startTwilioSim, ringbackBin };
