// BullMQ's OpenTelemetry add-on (bullmq-otel): a producer Queue with `telemetry` stores its trace
// context in each job's options (`tm`, a JSON W3C carrier); a Worker with `telemetry` continues
// that trace and writes the context of its `retry|delay|fail <queue>` span on the job hash as
// `tm` (a completion writes none). The Node worker gets the add-on (DIFF_TELEMETRY=1), ringback
// an OTLP endpoint: a receiver here that answers 200 to every `POST /v1/traces`.
// normalize.js names the random ids by what they are (the producer's trace or another, the
// producer's span or a new one), so both sides' `tm` fields compare exactly.
'use strict';

const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const http = require('node:http');
const { context, trace, createTraceState, TraceFlags } = require('@opentelemetry/api');
const { ownedConnection } = require('../../lib/bullmq');
const { bullmqTelemetry } = require('../../lib/otel');

/** An OTLP/HTTP receiver that accepts and counts span exports; `url` is the base endpoint. */
async function startReceiver() {
  const receiver = { posts: 0, bytes: 0, other: [] };
  const server = http.createServer((req, res) => {
    let n = 0;
    req.on('data', (chunk) => {
      n += chunk.length;
    });
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') {
        receiver.posts += 1;
        receiver.bytes += n;
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } else {
        receiver.other.push(`${req.method} ${req.url}`);
        res.writeHead(404).end();
      }
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${server.address().port}`;
  receiver.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return receiver;
}

/** The producer's context in a remote parent's trace that carries a vendor's trace state. */
function withTraceState(state, fn) {
  const parent = trace.setSpanContext(context.active(), {
    traceId: crypto.randomBytes(16).toString('hex'),
    spanId: crypto.randomBytes(8).toString('hex'),
    traceFlags: TraceFlags.SAMPLED,
    isRemote: true,
    traceState: createTraceState(state),
  });
  return context.with(parent, fn);
}

// What each job's normalized hash must hold on both sides: its opts.tm (the producer's `add`
// span) and its own tm (the worker's last retry/delay/fail span, in the producer's trace).
const PRODUCER = { traceparent: '00-<trace>-<span>-01' };
const WRITTEN = { traceparent: '00-<producer trace>-<new span>-01' };
const STATE = 'rb=t1,other=x';
// name, data, opts, how it is added, hash tm expected
const JOBS = [
  ['traced-complete', { script: ['complete'] }, {}, 'traced', undefined],
  ['traced-backoff', { script: ['fail:b1', 'complete'] }, { attempts: 3, backoff: { type: 'fixed', delay: 300 } }, 'traced', WRITTEN],
  ['traced-backoff-exhausted', { script: ['fail:x1', 'fail:x2'] }, { attempts: 2, backoff: { type: 'fixed', delay: 200 } }, 'traced', WRITTEN],
  ['traced-retry', { script: ['fail:r1', 'complete'] }, { attempts: 2 }, 'traced', WRITTEN],
  ['traced-fail', { script: ['fail:final'] }, { attempts: 1 }, 'traced', WRITTEN],
  // a trace state rides along: the producer's span inherits it, the worker's spans too
  ['tracestate-fail', { script: ['fail:state'] }, { attempts: 1 }, 'tracestate', { ...WRITTEN, tracestate: STATE }],
  // no producer context: the worker's span starts a trace of its own, whose context it writes
  ['untraced-fail', { script: ['fail:alone'] }, { attempts: 1 }, 'untraced', { traceparent: '00-<other trace>-<new span>-01' }],
];
const OPTS_TM = { traced: PRODUCER, tracestate: { ...PRODUCER, tracestate: STATE }, untraced: undefined };

module.exports = [
  {
    name: 'telemetry',
    covers: ['OpenTelemetry: `tm` continued and written back on retry, delay, failure (bullmq-otel)'],
    worker: { telemetry: true },
    async before(s) {
      // the producer: a Queue with the add-on on this side's queue (s.queue stays untraced)
      s.tracedQueue = new s.bullmq.Queue(s.queueName, {
        connection: ownedConnection(s.redisUrl, s.closers),
        prefix: s.prefix,
        telemetry: bullmqTelemetry('diff-producer'),
      });
      s.closers.push(() => s.tracedQueue.close());
      if (s.label === 'ringback') {
        s.receiver = await startReceiver();
        s.closers.push(() => s.receiver.close());
        s.settings.otlpEndpoint = s.receiver.url;
      }
    },
    async produce(s) {
      for (const [name, data, opts, how] of JOBS) {
        const add = () => (how === 'untraced' ? s.queue : s.tracedQueue).add(name, data, opts);
        const job = await (how === 'tracestate' ? withTraceState(STATE, add) : add());
        s.added.push(job.id);
      }
    },
    async check({ node, ringback, views }) {
      for (const side of [node, ringback]) {
        const view = views[side.label];
        JOBS.forEach(([name, , , how, tm], i) => {
          const hash = view[String(side.added[i])].value;
          assert.deepEqual(hash.opts.tm, OPTS_TM[how], `[${side.label}] ${name}: opts.tm`);
          assert.deepEqual(hash.tm, tm, `[${side.label}] ${name}: tm on the job hash`);
        });
        if (side.kind === 'ringback') {
          assert.ok(side.receiver.posts > 0, `[${side.label}] spans exported to the receiver (${side.receiver.posts} posts)`);
          assert.deepEqual(side.receiver.other, [], `[${side.label}] only POST /v1/traces reached the receiver`);
        }
      }
    },
  },
];
