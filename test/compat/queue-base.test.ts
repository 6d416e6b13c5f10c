/**
 * BullMQ's QueueBase and QueueGetters used on their own (not through Queue), the queue-name and
 * connection checks every queue makes at construction, and the version a queue reports when it
 * was told not to write its meta hash.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { closeConnections, sideBySide } from './harness.js';
import { redisUrl } from '../helpers.js';

afterAll(closeConnections);

/** What a constructor throws: BullMQ's error text is the start of echomq's message. */
function thrown(make: () => unknown): string {
  try {
    make();
  } catch (err) {
    return (err as Error).message;
  }
  return '(nothing thrown)';
}

describe('QueueBase and QueueGetters on their own', () => {
  it('new QueueBase(name, opts) connects, names the queue and closes', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const base = new lib.QueueBase(name, { connection, prefix: 'bull' } as never);
      await base.waitUntilReady();
      const seen = {
        name: base.name === name,
        qualifiedName: base.qualifiedName.replace(name, '<q>'),
        key: base.toKey('wait').replace(name, '<q>'),
      };
      await base.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('new QueueGetters(name, opts) reads what a Queue of the same name added', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      await queue.add('a', { x: 1 });
      await queue.add('b', { x: 2 }, { delay: 60_000 });
      const getters = new lib.QueueGetters(name, { connection });
      const seen = {
        counts: await getters.getJobCounts('waiting', 'delayed'),
        waiting: (await getters.getWaiting()).map((j) => j.name),
      };
      await getters.close();
      await queue.obliterate({ force: true });
      await queue.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.counts).toEqual({ waiting: 1, delayed: 1 });
  });
});

describe('construction checks', () => {
  it('a missing or empty queue name fails with "Queue name must be provided"', async () => {
    const r = await sideBySide(async (lib, _name, connection) => ({
      empty: thrown(() => new lib.Queue('', { connection })),
      base: thrown(() => new lib.QueueBase('', { connection })),
    }));
    const bull = 'Queue name must be provided';
    expect(r.bullmq.empty.startsWith(bull)).toBe(true);
    expect(r.echomq.empty.startsWith(bull)).toBe(true);
    expect(r.bullmq.base.startsWith(bull)).toBe(true);
    expect(r.echomq.base.startsWith(bull)).toBe(true);
  });

  it('a connection with an ioredis keyPrefix is refused with BullMQ\'s text', async () => {
    const prefixed = new Redis(redisUrl(), { keyPrefix: 'mine:', lazyConnect: true });
    try {
      const r = await sideBySide(async (lib, name) => ({
        queue: thrown(() => new lib.Queue(name, { connection: prefixed })),
        base: thrown(() => new lib.QueueBase(name, { connection: prefixed })),
        options: thrown(() => new lib.Queue(name, { connection: { keyPrefix: 'mine:', lazyConnect: true } as never })),
      }));
      const bull = 'BullMQ: ioredis does not support ioredis prefixes, use the prefix option instead.';
      for (const side of [r.bullmq, r.echomq]) {
        expect(side.queue.startsWith(bull)).toBe(true);
        expect(side.base.startsWith(bull)).toBe(true);
      }
      // Deliberate difference: BullMQ checks only a client it is given and builds a prefixing
      // client from options; echomq refuses keyPrefix in options too (its keys would be
      // prefixed twice).
      expect(r.bullmq.options).toBe('(nothing thrown)');
      expect(r.echomq.options.startsWith(bull)).toBe(true);
    } finally {
      prefixed.disconnect();
    }
  });
});

describe('skipMetasUpdate', () => {
  it('getVersion() is null and getMeta() has no version: the queue wrote none', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection, skipMetasUpdate: true });
      await queue.waitUntilReady();
      const seen = { version: await queue.getVersion(), meta: await queue.getMeta() };
      await queue.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.version).toBe(null);
  });
});
