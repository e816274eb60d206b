// BullMQ's OpenTelemetry add-on (bullmq-otel) in a harness process, set up as an app that traces
// registers it: a tracer provider, an async-context manager (so a worker's failure span is a child
// of its `process` span across awaits) and the W3C propagator (the `tm` carrier's format), each
// registered once per process. Spans go nowhere: what the harness compares is the context BullMQ
// stores in Redis.
'use strict';

const { trace, context, propagation } = require('@opentelemetry/api');
const { BasicTracerProvider } = require('@opentelemetry/sdk-trace-base');
const { W3CTraceContextPropagator } = require('@opentelemetry/core');
const { AsyncLocalStorageContextManager } = require('@opentelemetry/context-async-hooks');
const { BullMQOtel } = require('bullmq-otel');

let registered = false;

/** Registers the OpenTelemetry globals, the first time only. */
function registerOtelGlobals() {
  if (registered) return;
  registered = true;
  trace.setGlobalTracerProvider(new BasicTracerProvider());
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
}

/** A `telemetry` option for a Queue or Worker, with the globals registered. */
function bullmqTelemetry(tracerName) {
  registerOtelGlobals();
  return new BullMQOtel({ tracerName });
}

module.exports = { registerOtelGlobals, bullmqTelemetry };
