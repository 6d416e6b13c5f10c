/**
 * BullMQ's Telemetry interface: the object its `telemetry` option takes (bullmq-otel's BullMQOtel
 * implements it). echomq accepts such an object and does not call it: it traces through
 * @opentelemetry/api when that is installed (src/ops/tracing.ts). Declared so that programs
 * typed against it compile; the shapes are BullMQ 6.7's.
 */
import type { SpanKind } from './core/constants.js';

export interface Telemetry<Context = any> {
  tracer: Tracer<Context>;
  contextManager: ContextManager<Context>;
  meter?: Meter;
}

export interface Tracer<Context = any> {
  startSpan(name: string, options?: SpanOptions, context?: Context): Span<Context>;
}

export interface SpanOptions {
  kind: SpanKind;
}

export interface Span<Context = any> {
  setSpanOnContext(ctx: Context): Context;
  setAttribute(key: string, value: AttributeValue): void;
  setAttributes(attributes: Attributes): void;
  addEvent(name: string, attributes?: Attributes): void;
  recordException(exception: Exception, time?: Time): void;
  end(): void;
}

/** Carries the active context across calls, and to and from the string stored with a job. */
export interface ContextManager<Context = any> {
  with<F extends (...args: any[]) => any>(context: Context, fn: F): ReturnType<F>;
  active(): Context;
  root?(): Context;
  getMetadata(context: Context): string;
  fromMetadata(activeContext: Context, metadata: string): Context;
}

export interface Meter {
  createCounter(name: string, options?: MetricOptions): Counter;
  createHistogram(name: string, options?: MetricOptions): Histogram;
  createGauge(name: string, options?: MetricOptions): Gauge;
}

export interface MetricOptions {
  description?: string;
  unit?: string;
}

export interface Counter {
  add(value: number, attributes?: Attributes): void;
}

export interface Histogram {
  record(value: number, attributes?: Attributes): void;
}

export interface Gauge {
  record(value: number, attributes?: Attributes): void;
}

export type AttributeValue =
  | string | number | boolean
  | Array<string | null | undefined> | Array<number | null | undefined> | Array<boolean | null | undefined>;

export interface Attributes {
  [name: string]: AttributeValue | undefined;
}

/** An error given to recordException: a string, or an object with a code, a message or a name. */
export type Exception = string | ExceptionType;
export type ExceptionType =
  | { code: string | number; name?: string; message?: string; stack?: string }
  | { code?: string | number; name?: string; message: string; stack?: string }
  | { code?: string | number; name: string; message?: string; stack?: string };

/** A point in time: [seconds, nanoseconds], ms since the epoch, or a Date. */
export type Time = [number, number] | number | Date;
