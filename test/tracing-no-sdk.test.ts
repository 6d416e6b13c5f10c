// With @opentelemetry/api installed but no SDK registered, an add skips starting a span only
// when the span would carry nothing: a span active in the context is still propagated.
import { afterAll, describe, expect, it } from 'vitest';
import { context, propagation, trace, ROOT_CONTEXT, TraceFlags, type Context, type ContextManager } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { startProducerSpan } from '../src/ops/tracing.js';

/** The smallest synchronous context manager: context.with sets the active context for the call. */
class StackContextManager implements ContextManager {
  private current: Context = ROOT_CONTEXT;
  active(): Context {
    return this.current;
  }
  with<A extends unknown[], F extends (...args: A) => ReturnType<F>>(ctx: Context, fn: F, thisArg?: ThisParameterType<F>, ...args: A): ReturnType<F> {
    const prev = this.current;
    this.current = ctx;
    try {
      return fn.call(thisArg, ...args);
    } finally {
      this.current = prev;
    }
  }
  bind<T>(_ctx: Context, target: T): T {
    return target;
  }
  enable(): this {
    return this;
  }
  disable(): this {
    return this;
  }
}

afterAll(() => {
  context.disable();
  propagation.disable();
});

describe('producer spans without an SDK', () => {
  it('carries nothing with no active span, and the active span\'s context when there is one', () => {
    context.setGlobalContextManager(new StackContextManager());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    expect(startProducerSpan('q', 'job').carrier).toBeUndefined();
    const parent = { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: TraceFlags.SAMPLED };
    const carrier = context.with(trace.setSpanContext(ROOT_CONTEXT, parent), () => startProducerSpan('q', 'job').carrier);
    expect(carrier?.traceparent).toBe(`00-${parent.traceId}-${parent.spanId}-01`);
  });
});
