/**
 * The package root exports every runtime name BullMQ's does (type-only names do not exist at
 * runtime and are not compared here). Names are grouped by the part of echomq that owns them:
 * errors, constants and the event classes must be present; the rest is printed, so the list
 * of what is still missing stays visible until every part is done, and BullMQ's datastore
 * backends (PostgreSQL, Relay), which echomq does not have, are listed apart.
 */
import * as bullmq from 'bullmq';
import { describe, expect, it } from 'vitest';
import * as echomq from '../../src/index.js';

/** Names owned by errors.ts, constants.ts and the event classes: each must be exported. */
const REQUIRED = [
  'ConnectionClosedError', 'CONNECTION_CLOSED_ERROR_MSG', 'DelayedError', 'DELAYED_ERROR', 'WaitingChildrenError',
  'WAITING_CHILDREN_ERROR', 'WaitingError', 'WAITING_ERROR', 'RateLimitError', 'RATE_LIMIT_ERROR', 'UnrecoverableError',
  'UNRECOVERABLE_ERROR', 'ErrorCode', 'PRIORITY_LIMIT', 'MetricsTime', 'ClientType', 'QUEUE_EVENT_SUFFIX',
  'BULLMQ_MAJOR_VERSION', 'DELAY_TIME_1', 'DELAY_TIME_5', 'QueueEvents', 'QueueEventsProducer',
] as const;

/** BullMQ's PostgreSQL and Relay backends: no echomq counterpart (echomq runs on Redis only). */
const OTHER_BACKENDS = /Postgres|POSTGRES|Relay|RELAY|Schema|SCHEMA|MIGRATION_ADVISORY|runMigrations|isPgPool/;

const runtimeNames = (m: object) => Object.keys(m).filter((k) => k !== 'default' && k !== '__esModule');

describe('package root exports (BullMQ 6 value exports)', () => {
  it('exports every error class and constant of BullMQ, with the same values', () => {
    const b = bullmq as unknown as Record<string, unknown>;
    const e = echomq as unknown as Record<string, unknown>;
    for (const name of REQUIRED) {
      expect(name in b, `${name} is a BullMQ export`).toBe(true);
      expect(typeof e[name], name).toBe(typeof b[name]);
      if (typeof b[name] !== 'function') expect(e[name], name).toEqual(b[name]);
    }
  });

  it('error classes have BullMQ name, default message, own fields and base class', () => {
    const shape = (lib: Record<string, unknown>, cls: string) => {
      const E = lib[cls] as new (...a: unknown[]) => Error;
      const err = new E();
      const custom = new E('custom text');
      return {
        name: err.name, message: err.message, keys: Object.keys(err).sort(), isError: err instanceof Error,
        custom: custom.message, instance: err instanceof E, stack: typeof err.stack,
      };
    };
    for (const cls of ['ConnectionClosedError', 'DelayedError', 'WaitingChildrenError', 'WaitingError', 'RateLimitError', 'UnrecoverableError']) {
      expect(shape(echomq as never, cls), cls).toEqual(shape(bullmq as never, cls));
    }
    // A subclass keeps its own name, as in BullMQ (name = the constructing class).
    class MyUnrecoverable extends echomq.UnrecoverableError {}
    class BullUnrecoverable extends bullmq.UnrecoverableError {}
    expect(new MyUnrecoverable().name).toBe('MyUnrecoverable');
    expect(new BullUnrecoverable().name).toBe('BullUnrecoverable');
    const cause = new Error('socket');
    expect(new echomq.ConnectionClosedError(undefined, cause).cause).toBe(cause);
  });

  it('lists the names of BullMQ that echomq does not export yet (owned by other parts)', () => {
    const mine = new Set(runtimeNames(echomq));
    const missing = runtimeNames(bullmq).filter((n) => !mine.has(n)).sort();
    const backends = missing.filter((n) => OTHER_BACKENDS.test(n));
    const others = missing.filter((n) => !OTHER_BACKENDS.test(n));
    // Printed, not asserted: the lead turns this into a strict check once every part landed.
    console.log(`BullMQ exports echomq lacks (${others.length}): ${others.join(', ')}`);
    console.log(`BullMQ datastore-backend exports with no echomq counterpart (${backends.length}): ${backends.join(', ')}`);
    for (const name of REQUIRED) expect(missing).not.toContain(name);
  });
});
