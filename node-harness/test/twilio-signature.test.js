// X-Twilio-Signature interop: the official twilio SDK (pinned 6.3.1) must accept every status
// callback `ringback twilio-sim` signs, and the reference vectors of the worked example in Twilio's security docs (plus the
// SDK-computed fixtures the Rust side checks itself against) must be what the SDK computes.
'use strict';

const assert = require('node:assert/strict');
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const { describe, it, before, after } = require('node:test');
const twilio = require('twilio');
const { startTwilioSim } = require('../lib/harness/twilio-sim');
const { waitFor } = require('../lib/harness/wait');
const { SPECS, document } = require('../lib/signature-vectors');

const ACCOUNT_SID = 'AC0123456789abcdef0123456789abcdef';
const AUTH_TOKEN = 'f3e1c0ffee5eed0ddba11c0de0123456';
const FIXTURE = path.join(__dirname, '..', 'fixtures', 'signature-vectors.json');

/** Form fields as the SDK expects them: one string per name, an array for repeated names. */
function decodeForm(body) {
  const params = {};
  for (const [k, v] of new URLSearchParams(body)) {
    if (k in params) params[k] = [].concat(params[k], v);
    else params[k] = v;
  }
  return params;
}

/** A loopback HTTP server recording every POST: {url, headers, params}. */
async function startReceiver() {
  const received = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => {
      body += c;
    });
    req.on('end', () => {
      received.push({ method: req.method, path: req.url, headers: req.headers, body, params: decodeForm(body) });
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  return { port, received, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('twilio-sim status callbacks validate with the twilio SDK', () => {
  let sim;
  let receiver;
  before(async () => {
    receiver = await startReceiver();
    sim = await startTwilioSim({ accountSid: ACCOUNT_SID, authToken: AUTH_TOKEN });
  });
  after(async () => {
    await sim?.stop();
    await receiver?.close();
  });

  /** Creates a message with a StatusCallback and waits for `n` callbacks for its SID. */
  async function sendAndCollect(to, runId, n) {
    const callbackUrl = `http://127.0.0.1:${receiver.port}/status?runId=${runId}`;
    const created = await sim.createMessage({ To: to, From: '+15005550006', Body: `ringback signature test ${runId} ✓`, StatusCallback: callbackUrl });
    assert.equal(created.status, 201, `create answered ${created.status}: ${JSON.stringify(created.body)}\n${sim.output()}`);
    const sid = created.body.sid;
    assert.match(sid, /^SM[0-9a-f]{32}$/);
    const mine = () => receiver.received.filter((r) => r.params.MessageSid === sid);
    await waitFor(() => mine().length >= n, 10_000, `${n} status callbacks for ${sid}`);
    return { callbackUrl, sid, callbacks: mine() };
  }

  function assertSigned(cb, url) {
    const sig = cb.headers['x-twilio-signature'];
    assert.ok(sig, `callback ${cb.params.MessageStatus} carries X-Twilio-Signature`);
    assert.equal(cb.method, 'POST');
    assert.match(cb.headers['content-type'], /^application\/x-www-form-urlencoded/);
    assert.equal(cb.path, new URL(url).pathname + new URL(url).search, 'posted to the StatusCallback path and query');
    assert.ok(twilio.validateRequest(AUTH_TOKEN, sig, url, cb.params), `SDK validates the ${cb.params.MessageStatus} callback: ${cb.body}`);
    // Negative controls: the SDK must reject a tampered param, a wrong token and another URL.
    const firstKey = Object.keys(cb.params).sort()[0];
    const tampered = { ...cb.params, [firstKey]: `${cb.params[firstKey]}x` };
    assert.equal(twilio.validateRequest(AUTH_TOKEN, sig, url, tampered), false, `tampered ${firstKey} must fail`);
    assert.equal(twilio.validateRequest(`${AUTH_TOKEN}0`, sig, url, cb.params), false, 'wrong token must fail');
    assert.equal(twilio.validateRequest(AUTH_TOKEN, sig, url.replace('runId=', 'runId=x'), cb.params), false, 'other query must fail');
    const { MessageStatus, ...withoutOne } = cb.params;
    assert.equal(twilio.validateRequest(AUTH_TOKEN, sig, url, withoutOne), false, 'a dropped param must fail');
    assert.ok(MessageStatus);
  }

  it('delivered path: sent then delivered, each signed over the exact StatusCallback URL', async () => {
    const { callbackUrl, sid, callbacks } = await sendAndCollect('+15558675310', 'r1', 2);
    assert.deepEqual(callbacks.map((c) => c.params.MessageStatus).sort(), ['delivered', 'sent']);
    for (const cb of callbacks) {
      assert.equal(cb.params.AccountSid, ACCOUNT_SID);
      assert.equal(cb.params.SmsSid, sid);
      assert.equal(cb.params.To, '+15558675310');
      assert.equal(cb.params.From, '+15005550006');
      assert.equal(cb.params.ErrorCode, undefined, 'no ErrorCode on a delivered path');
      assertSigned(cb, callbackUrl);
    }
  });

  it('undelivered path via fault rules: sent then undelivered with ErrorCode, signed', async () => {
    await sim.putFaults({ callbacks: [{ to: '+15550000003', final: 'undelivered', error_code: 30003 }] });
    const { callbackUrl, callbacks } = await sendAndCollect('+15550000003', 'r2', 2);
    const byStatus = Object.fromEntries(callbacks.map((c) => [c.params.MessageStatus, c]));
    assert.deepEqual(Object.keys(byStatus).sort(), ['sent', 'undelivered']);
    assert.equal(byStatus.undelivered.params.ErrorCode, '30003');
    assert.equal(byStatus.sent.params.ErrorCode, undefined);
    for (const cb of callbacks) assertSigned(cb, callbackUrl);
  });
});

describe('signature vectors computed with the twilio SDK', () => {
  it('the reference vectors of the worked example equal what the SDK computes', () => {
    for (const spec of SPECS.filter((s) => s.expected)) {
      const got = twilio.getExpectedTwilioSignature(spec.token, spec.url, spec.params, spec.algorithm);
      assert.equal(got, spec.expected, spec.name);
      assert.ok(twilio.validateRequest(spec.token, spec.expected, spec.url, spec.params, spec.algorithm), `${spec.name}: validateRequest`);
    }
    // The docs vector's first signature also validates against the :443 URL; http does not.
    const docs = SPECS[0];
    assert.ok(twilio.validateRequest(docs.token, docs.expected, 'https://mycompany.com:443/myapp.php?foo=1&bar=2', docs.params));
    assert.equal(twilio.validateRequest(docs.token, docs.expected, 'http://mycompany.com/myapp.php?foo=1&bar=2', docs.params), false);
    // JSON body vector: the URL's bodySHA256 is the body's hash and validateRequestWithBody accepts it.
    const json = SPECS.find((s) => s.body !== undefined);
    assert.ok(json.url.endsWith(`bodySHA256=${twilio.getExpectedBodyHash(json.body)}`));
    assert.ok(twilio.validateRequestWithBody(json.token, json.expected, json.url, json.body));
  });

  it('each vector says which URL forms the SDK accepts, as its spec expects', () => {
    const vectors = document().vectors;
    assert.ok(vectors.filter((v) => v.source === 'sdk').length >= 6, 'at least 6 SDK-generated vectors');
    vectors.forEach((v, i) => {
      const spec = SPECS[i];
      assert.deepEqual(v.valid_url_forms, [spec.url, ...spec.also_valid], `${v.name}: valid forms`);
      assert.deepEqual(v.invalid_url_forms, spec.invalid, `${v.name}: invalid forms`);
      if (spec.expected) assert.equal(v.signature, spec.expected, v.name);
    });
  });

  it('fixtures/signature-vectors.json is current (regenerate: node bin/signature-vectors.js)', () => {
    const onDisk = JSON.parse(fs.readFileSync(FIXTURE, 'utf8'));
    assert.deepEqual(onDisk, document());
  });
});
