// OpenTelemetry: a PRODUCER span per add, a CONSUMER span per processor run whose parent is the
// add's span (the trace context travels in job.opts.telemetry), errors recorded on the span.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trace, propagation, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { Queue, Worker } from '../src/index.js';
import { qname, redisUrl, waitFor } from './helpers.js';

const exporter = new InMemorySpanExporter();

beforeAll(() => {
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  trace.setGlobalTracerProvider(provider);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
});
afterAll(() => {
  trace.disable();
  propagation.disable();
});

describe('tracing', () => {
  it('links the process span to the add span across the queue, and records failures', async () => {
    const name = qname('otel');
    const queue = new Queue(name, { connection: redisUrl() });
    const worker = new Worker(name, async (job) => {
      if (job.name === 'bad') throw new Error('boom');
      return 1;
    }, { connection: redisUrl() });
    worker.on('error', () => {});
    try {
      const ok = await queue.add('ok', {});
      await queue.addBulk([{ name: 'bad', data: {} }]);
      expect((ok.opts as { telemetry?: { traceparent?: string } }).telemetry?.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/);
      await waitFor(() => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER).length === 2, 5000, 'process spans');

      const spans = exporter.getFinishedSpans();
      const adds = spans.filter((s) => s.kind === SpanKind.PRODUCER && s.name === `add ${name}`);
      const procs = spans.filter((s) => s.kind === SpanKind.CONSUMER && s.name === `process ${name}`);
      expect(adds).toHaveLength(2);
      expect(procs).toHaveLength(2);
      for (const p of procs) {
        const parent = adds.find((a) => a.spanContext().spanId === p.parentSpanContext?.spanId);
        expect(parent, 'process span has its add span as parent').toBeDefined();
        expect(p.spanContext().traceId).toBe(parent!.spanContext().traceId);
        expect(p.attributes['messaging.destination.name']).toBe(name);
      }
      const failed = procs.find((p) => p.attributes['echomq.job.name'] === 'bad')!;
      expect(failed.status.code).toBe(SpanStatusCode.ERROR);
      expect(failed.events.some((e) => e.name === 'exception')).toBe(true);
      expect(adds.find((a) => a.attributes['messaging.batch.message_count'] === 1 && a.attributes['echomq.job.name'] === 'bulk')).toBeDefined();
    } finally {
      await worker.close();
      await queue.close();
    }
  });

  it('a job added without a trace gets a root process span once an SDK is registered, none before', async () => {
    const name = qname('otel-late');
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    trace.disable(); // no SDK: adds carry no trace context, runs make no span
    const queue = new Queue(name, { connection: redisUrl() });
    const seen: string[] = [];
    const run = async (job: { name: string }) => { seen.push(job.name); };
    const procs = () => exporter.getFinishedSpans().filter((s) => s.kind === SpanKind.CONSUMER && s.name === `process ${name}`);
    let worker = new Worker(name, run, { connection: redisUrl() });
    try {
      const before = await queue.add('before', {});
      expect((before.opts as { telemetry?: unknown }).telemetry).toBeUndefined();
      await waitFor(() => seen.length === 1, 5000, 'first run');
      await worker.close();
      const after = await queue.add('after', {});
      expect((after.opts as { telemetry?: unknown }).telemetry).toBeUndefined();
      expect(procs()).toHaveLength(0);
      trace.setGlobalTracerProvider(provider);
      worker = new Worker(name, run, { connection: redisUrl() });
      await waitFor(() => procs().length === 1, 5000, 'process span');
      expect(seen).toEqual(['before', 'after']);
      expect(procs()[0]!.attributes['echomq.job.name']).toBe('after');
      expect(procs()[0]!.parentSpanContext).toBeUndefined();
    } finally {
      await worker.close();
      await queue.close();
    }
  });
});
