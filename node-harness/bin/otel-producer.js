#!/usr/bin/env node
// A producer with BullMQ's OpenTelemetry add-on (bullmq-otel), as a team that traces its Node
// app runs one: inside an "agent run" span it adds one agent-callback job per JSON object given
// in JOBS (its data), and prints one line per job: {"jobId", "tm"} (the trace context the add-on
// stored in the job's options). Spans go nowhere (the test reads the context from Redis and the
// worker's spans from its own OTLP receiver).
//
// env: REDIS_URL, QUEUE, PREFIX (default bull), JOBS (a JSON array of job data)
'use strict';

const { trace, context, propagation } = require('@opentelemetry/api');
const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { BullMQOtel } = require('bullmq-otel');
const { Queue } = require('bullmq6');

async function main() {
  trace.setGlobalTracerProvider(new BasicTracerProvider());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());

  const url = new URL(process.env.REDIS_URL || 'redis://127.0.0.1:6379');
  const queue = new Queue(process.env.QUEUE || 'notify', {
    connection: { host: url.hostname, port: Number(url.port || 6379) },
    prefix: process.env.PREFIX || 'bull',
    telemetry: new BullMQOtel('agent-producer'),
  });
  const jobs = JSON.parse(process.env.JOBS || '[]');
  const tracer = trace.getTracer('agent');
  await tracer.startActiveSpan('agent run', async (span) => {
    for (const data of jobs) {
      const job = await queue.add('agent-callback', data, { attempts: 1 });
      const stored = await queue.getJob(job.id);
      const tm = stored && stored.opts && stored.opts.telemetry ? stored.opts.telemetry.metadata : null;
      process.stdout.write(`${JSON.stringify({ jobId: job.id, tm })}\n`);
    }
    span.end();
  });
  await queue.close();
}

main().catch((e) => {
  process.stderr.write(`${e.stack || e}\n`);
  process.exit(1);
});
