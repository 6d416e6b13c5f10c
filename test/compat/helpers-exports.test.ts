// BullMQ's exported pure helpers, called with the same inputs on both packages: the results
// must be equal (random jitter aside, which is checked for its range).
import { describe, expect, it } from 'vitest';
import * as bullmq from 'bullmq';
import * as echomq from '../../src/index.js';

type Lib = typeof echomq;
const libs = { bullmq: bullmq as unknown as Lib, echomq };
const both = <T>(fn: (lib: Lib) => T) => ({ bullmq: fn(libs.bullmq), echomq: fn(libs.echomq) });

describe('BullMQ helper exports (side by side)', () => {
  it('isRedisVersionLowerThan compares versions of the desired server type only', () => {
    const cases: Array<[string, string, string, string?]> = [
      ['6.2.0', '6.2.0', 'redis'], ['6.0.9', '6.2.0', 'redis'], ['7.2.4', '6.2.0', 'redis'],
      ['7.2.4-rc1', '7.2.5', 'redis'], ['5', '5.0.0', 'redis'], ['7.2.4', '8.0.0', 'valkey'], ['7.2.4', '8.0.0', 'valkey', 'valkey'],
    ];
    const r = both((lib) => cases.map(([c, m, t, d]) => lib.isRedisVersionLowerThan(c, m, t as never, d as never)));
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual([false, true, false, true, false, false, true]);
  });

  it('toString, tryCatch and errorObject', () => {
    const values: unknown[] = [null, undefined, 'a', 1, -0, 0, [1, null, [2, -0]], true, { a: 1 }, Symbol.for('s')];
    const r = both((lib) => {
      const strings = values.map((x) => lib.toString(x));
      const ok = lib.tryCatch((a: number, b: number) => a + b, null, [1, 2]);
      const failed = lib.tryCatch(() => { throw new Error('boom'); }, null, []);
      return { strings, ok, failedIsErrorObject: failed === lib.errorObject, caught: (lib.errorObject.value as Error).message };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('SpanKind, clientCommandMessageReg and forwardConnectionError', async () => {
    const { EventEmitter } = await import('node:events');
    const r = both((lib) => {
      const forwarded: unknown[] = [];
      const emitter = new EventEmitter();
      const connection = new EventEmitter();
      lib.forwardConnectionError(emitter, connection);
      connection.emit('error', new Error('unheard')); // no 'error' listener on the emitter: dropped, not thrown
      emitter.on('error', (e: Error) => forwarded.push(e.message));
      connection.emit('error', new Error('heard'));
      const texts = ["ERR unknown command 'client'", 'ERR unknown command `CLIENT`', "ERR unknown command 'clients'"];
      return {
        kinds: { ...lib.SpanKind }, producer: (lib.SpanKind as Record<number, string>)[3], forwarded,
        matches: texts.map((t) => lib.clientCommandMessageReg.test(t)), source: lib.clientCommandMessageReg.source,
      };
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.forwarded).toEqual(['heard']);
  });

  it('getNextMillis and defaultRepeatStrategy: every, pattern, startDate, immediately, both given', () => {
    const t = Date.UTC(2026, 0, 1, 10, 7, 30);
    const r = both((lib) => ({
      every: lib.getNextMillis(t, { every: 60_000 }),
      everyImmediately: lib.getNextMillis(t, { every: 60_000, immediately: true }),
      pattern: lib.getNextMillis(t, { pattern: '*/15 * * * *', tz: 'UTC' }),
      startLater: lib.getNextMillis(t, { pattern: '0 * * * *', startDate: new Date(t + 86_400_000), tz: 'UTC' }),
      strategy: lib.defaultRepeatStrategy(t, { pattern: '0 0 * * *', tz: 'UTC' }),
      both: (() => { try { return lib.getNextMillis(t, { every: 1000, pattern: '* * * * *' }); } catch (e) { return (e as Error).message; } })(),
      url: lib.LEGACY_REPEATABLE_JOBS_MIGRATION_URL,
    }));
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('Backoffs.normalize and calculate (fixed, exponential, custom, unknown); jitter stays in range', async () => {
    const err = new Error('x');
    const r = await Promise.all(Object.values(libs).map(async (lib) => ({
      normalized: [lib.Backoffs.normalize(500), lib.Backoffs.normalize({ type: 'exponential', delay: 10 }), lib.Backoffs.normalize(undefined as never)],
      fixed: lib.Backoffs.calculate({ type: 'fixed', delay: 300 }, 2, err, {} as never),
      exponential: [1, 2, 3, 4].map((n) => lib.Backoffs.calculate({ type: 'exponential', delay: 100 }, n, err, {} as never)),
      custom: await lib.Backoffs.calculate({ type: 'mine' }, 3, err, {} as never, (made: number) => made * 7),
      unknown: (() => { try { return lib.Backoffs.calculate({ type: 'mine' }, 3, err, {} as never); } catch (e) { return (e as Error).message.split('\n')[0]; } })(),
      builtin: [lib.Backoffs.builtinStrategies.fixed!(250)(1), lib.Backoffs.builtinStrategies.exponential!(250)(3)],
      jitter: Array.from({ length: 50 }, () => lib.Backoffs.calculate({ type: 'exponential', delay: 1000, jitter: 0.5 }, 2, err, {} as never) as number)
        .every((d) => d >= 1000 && d <= 2000),
    })));
    expect(r[1]).toEqual(r[0]);
  });
});
