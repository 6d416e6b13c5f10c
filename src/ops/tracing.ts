/**
 * Optional OpenTelemetry spans through `@opentelemetry/api` (an optional peer dependency):
 * a PRODUCER span around each add and a CONSUMER span around each processor run, its parent
 * the add's span. The trace context travels inside the job, in `job.opts.telemetry`
 * (W3C `traceparent` / `tracestate`), so producer and worker may be different processes.
 *
 * Without the package installed every function here is a no-op behind one check; with the
 * package but no SDK registered, the API's no-op tracer makes spans nearly free.
 */
import { createRequire } from 'node:module';
import type * as Otel from '@opentelemetry/api';

/**
 * Loaded synchronously (the API ships CommonJS) rather than with a top-level `await import`:
 * a module graph with top-level await cannot be loaded by `require()`, and CommonJS projects
 * (most NestJS apps) load echomq that way.
 */
function loadApi(): typeof Otel | undefined {
  try {
    return createRequire(import.meta.url)('@opentelemetry/api') as typeof Otel;
  } catch {
    return undefined;
  }
}

const api: typeof Otel | undefined = loadApi();

const TRACER = 'echomq';

/** The carrier stored with a job: W3C trace context headers. */
export interface TraceCarrier {
  traceparent?: string;
  tracestate?: string;
}

export interface ProducerSpan {
  /** Trace context to store with the job (undefined when not tracing). */
  readonly carrier: TraceCarrier | undefined;
  end(err?: unknown): void;
}

const NO_SPAN: ProducerSpan = { carrier: undefined, end() {} };

/** True when @opentelemetry/api is installed. */
export const tracingAvailable = api !== undefined;

function endSpan(span: Otel.Span, err: unknown): void {
  if (!api) return;
  if (err !== undefined) {
    span.recordException(err instanceof Error ? err : String(err));
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
  }
  span.end();
}

/**
 * echomq's tracer, fetched again only when the global provider object changes (trace.disable()
 * makes a new one). Without an SDK, getTracer makes a new proxy tracer on every call.
 */
let tracerOf: { provider: Otel.TracerProvider; tracer: Otel.Tracer } | undefined;
function tracer(a: typeof Otel): Otel.Tracer {
  const provider = a.trace.getTracerProvider();
  if (tracerOf?.provider !== provider) tracerOf = { provider, tracer: provider.getTracer(TRACER) };
  return tracerOf.tracer;
}

/** The API's no-op provider: the delegate of a proxy provider that no SDK was registered with. */
const NOOP_PROVIDER = api ? new api.ProxyTracerProvider().getDelegate() : undefined;

/** True when no SDK is registered: the global proxy provider delegates to the no-op one. */
function noSdk(a: typeof Otel): boolean {
  const provider = a.trace.getTracerProvider();
  return provider instanceof a.ProxyTracerProvider && provider.getDelegate() === NOOP_PROVIDER;
}

/**
 * True when a span started now would have nothing to record or carry: no SDK and no span in the
 * active context (the no-op tracer then gives an invalid span).
 */
function nothingToTrace(a: typeof Otel): boolean {
  return noSdk(a) && a.trace.getSpanContext(a.context.active()) === undefined;
}

/** Starts the span of one add (or one addBulk call, shared by its jobs). */
export function startProducerSpan(queue: string, jobName: string, jobs = 1): ProducerSpan {
  if (!api || nothingToTrace(api)) return NO_SPAN;
  const span = tracer(api).startSpan(`add ${queue}`, {
    kind: api.SpanKind.PRODUCER,
    attributes: {
      'messaging.system': 'echomq', 'messaging.destination.name': queue, 'messaging.operation': 'publish',
      'echomq.job.name': jobName, 'messaging.batch.message_count': jobs,
    },
  });
  // No SDK registered: the no-op tracer's span has no valid context, so there is nothing to
  // record or carry (a sampled-out span of a real SDK still has one, and is propagated).
  if (!span.isRecording() && !api.trace.isSpanContextValid(span.spanContext())) return NO_SPAN;
  const carrier: TraceCarrier = {};
  api.propagation.inject(api.trace.setSpan(api.context.active(), span), carrier);
  return { carrier: carrier.traceparent ? carrier : undefined, end: (err?: unknown) => endSpan(span, err) };
}

/** Runs a processor inside a CONSUMER span whose parent is the job's stored trace context. */
export function traceProcess<R>(
  job: { id: string; name: string; lane: string; attemptsStarted: number; queueName: string; opts: unknown },
  run: () => Promise<R> | R,
): Promise<R> | R {
  if (!api) return run();
  const stored = (job.opts as { telemetry?: TraceCarrier } | undefined)?.telemetry;
  if (stored === undefined && noSdk(api)) return run();
  const parent = api.propagation.extract(api.ROOT_CONTEXT, stored ?? {});
  const span = tracer(api).startSpan(`process ${job.queueName}`, {
    kind: api.SpanKind.CONSUMER,
    attributes: {
      'messaging.system': 'echomq', 'messaging.destination.name': job.queueName, 'messaging.operation': 'process',
      'messaging.message.id': job.id, 'echomq.job.name': job.name, 'echomq.lane': job.lane, 'echomq.attempt': job.attemptsStarted,
    },
  }, parent);
  // Nothing to record and no trace to continue (no SDK registered): run without a context.
  if (stored === undefined && !span.isRecording() && !api.trace.isSpanContextValid(span.spanContext())) return run();
  return runInSpan(span, parent, run);
}

async function runInSpan<R>(span: Otel.Span, parent: Otel.Context, run: () => Promise<R> | R): Promise<R> {
  try {
    const result = await api!.context.with(api!.trace.setSpan(parent, span), run);
    endSpan(span, undefined);
    return result;
  } catch (err) {
    endSpan(span, err);
    throw err;
  }
}
