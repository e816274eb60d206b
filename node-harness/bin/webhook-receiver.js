#!/usr/bin/env node
// A Node express receiver of Twilio status callbacks, doing the work `ringback serve`'s
// `POST /api/notify/webhook/status` does, for `scripts/bench webhook` to measure side by side:
// the signature check (the twilio package's validateRequest, over PUBLIC_URL + the request
// target, as Twilio signed it), the same 400s and 403s, the run from the URL's `runId` (else the
// MessageSid's link), the repeat key (the `I-Twilio-Idempotency-Token`, else a hash of the
// signed parameters) and then ONE Redis call: bin/webhook-rank.lua (repeat check, ranking,
// record and history). A second call only links a MessageSid the record did not know, as
// ringback does. Keys are of the same kind as ringback's, in the run's slot.
//
// Env: REDIS_URL, WEBHOOK_LISTEN (127.0.0.1:0; the address chosen is printed as "webhook
// receiver listening on http://..."), PUBLIC_URL (the base Twilio calls), TWILIO_AUTH_TOKEN,
// WEBHOOK_PREFIX (node-receiver), WEBHOOK_RECORD_TTL_MS (86400000, ringback's sent TTL).
// GET /healthz answers 200 once Redis answers.
'use strict';

const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const express = require('express');
const IORedis = require('ioredis');
const twilio = require('twilio');

const env = process.env;
const token = env.TWILIO_AUTH_TOKEN;
const publicUrl = (env.PUBLIC_URL || '').replace(/\/+$/, '');
if (!token || !publicUrl) {
  console.error('webhook-receiver: TWILIO_AUTH_TOKEN and PUBLIC_URL are required');
  process.exit(2);
}
const prefix = env.WEBHOOK_PREFIX || 'node-receiver';
const recordTtlMs = env.WEBHOOK_RECORD_TTL_MS || '86400000';
// a repeat is recognised as long as the record lives (its marker is a field of the record)

const redis = new IORedis(env.REDIS_URL || 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
redis.defineCommand('rankStatus', {
  numberOfKeys: 2,
  lua: fs.readFileSync(path.join(__dirname, 'webhook-rank.lua'), 'utf8'),
});

const run = (id) => `{${prefix}:${id}}`;
const keys = {
  record: (id) => `${prefix}:callback:${run(id)}`,
  history: (id) => `${prefix}:callback-history:${run(id)}`,
  link: (sid) => `${prefix}:message:${sid}`,
};

/** A stable hash of the signed parameters, for a repeat that carries no idempotency token. */
function paramsHash(params) {
  const h = crypto.createHash('sha1');
  for (const k of Object.keys(params).sort()) h.update(`${k}\n${params[k]}\n`);
  return h.digest('hex');
}

const app = express();
app.disable('x-powered-by');
const form = express.urlencoded({ extended: false, limit: '64kb' });

app.get('/healthz', (_req, res) => res.sendStatus(200));

app.post('/api/notify/webhook/status', form, async (req, res, next) => {
  try {
    const params = req.body;
    if (!req.is('application/x-www-form-urlencoded') || typeof params !== 'object') {
      return res.status(400).json({ error: 'body is not a form-encoded status callback' });
    }
    const signature = req.get('X-Twilio-Signature') || '';
    if (!signature || !twilio.validateRequest(token, signature, publicUrl + req.originalUrl, params)) {
      return res.status(403).json({ error: 'invalid X-Twilio-Signature' });
    }
    const sid = params.MessageSid || params.SmsSid || '';
    if (!/^(SM|MM)[0-9a-fA-F]{32}$/.test(sid)) {
      return res.status(400).json({ error: 'MessageSid is missing or malformed', field: 'MessageSid' });
    }
    const status = params.MessageStatus || params.SmsStatus || '';
    if (!status) return res.status(400).json({ error: 'MessageStatus is missing', field: 'MessageStatus' });
    const runId = (typeof req.query.runId === 'string' && req.query.runId)
      || (await redis.get(keys.link(sid)))
      || `unattributed:${sid}`;
    const idem = req.get('I-Twilio-Idempotency-Token');
    const repeat = idem ? `token:${idem}` : `params:${paramsHash(params)}`;
    const attempt = typeof req.query.attempt === 'string' ? req.query.attempt : '';
    const [, , , link] = await redis.rankStatus(
      keys.record(runId), keys.history(runId),
      runId, sid, status, params.ErrorCode || '', params.RawDlrDoneDate || '', Date.now(),
      repeat, recordTtlMs, attempt,
    );
    if (link === '1') await redis.set(keys.link(sid), runId, 'PX', recordTtlMs);
    return res.sendStatus(200);
  } catch (err) {
    return next(err);
  }
});

app.use((err, _req, res, _next) => {
  console.error('webhook-receiver:', err.message);
  res.status(500).json({ error: 'internal error' });
});

const [host, port] = (env.WEBHOOK_LISTEN || '127.0.0.1:0').split(/:(?=\d+$)/);
redis.ping().then(() => {
  const server = app.listen(Number(port), host, () => {
    const a = server.address();
    console.log(`webhook receiver listening on http://${a.address}:${a.port}`);
  });
  const stop = () => server.close(() => redis.quit().finally(() => process.exit(0)));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}, (err) => {
  console.error('webhook-receiver: Redis does not answer:', err.message);
  process.exit(1);
});
