/**
 * The Worker's connections side by side with BullMQ: `getBackend()` (BullMQ 6's home of the
 * raw clients, the server version and the RedisConnection objects), readiness (both
 * connections, so the first worker started is the one waiting for the next job), the client
 * name carried by the blocking connection only (Queue.getWorkers with a shared connection),
 * and the exact texts of concurrency refusals and a fractional drainDelay.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { closeConnections, sideBySide, refusal } from './harness.js';
import { until } from './events-helpers.js';
import { ValidationError } from '../../src/index.js';

afterAll(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Worker.getBackend() (BullMQ 6 RedisQueueBackend escape hatches)', () => {
  it('gives the raw clients, the server version and type, and connections whose status follows the worker', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const w = new lib.Worker(name, async () => {}, { connection, autorun: false });
      w.on('error', () => {});
      await w.waitUntilReady();
      const backend = w.getBackend() as any; // eslint-disable-line @typescript-eslint/no-explicit-any
      // The server's own name and version: Valkey reports valkey_version beside a redis_version
      // it stays compatible with (7.2.4), and both libraries report the former.
      const doc = await (connection as Redis).info('server');
      const server = /^valkey_version:/m.test(doc) ? 'valkey' : 'redis';
      const info = doc.match(new RegExp(`^${server}_version:(.*)$`, 'm'))![1]!.trim();
      const client = await backend.client;
      const blocking = await backend.blockingClient;
      const seen = {
        version: backend.redisVersion === info,
        type: backend.databaseType,
        server,
        ping: await client.ping(),
        ownBlocking: blocking !== connection && (await blocking.ping()),
        before: [backend.connection.status, backend.blockingConnection.status],
        connectionVersion: backend.connection.redisVersion === info,
        stable: w.getBackend() === backend,
      };
      await w.close();
      return { ...seen, after: [backend.connection.status, backend.blockingConnection.status], sharedOpen: (connection as Redis).status };
    }, 'backend');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toMatchObject({ version: true, type: r.bullmq.server, before: ['ready', 'ready'], after: ['closed', 'closed'], sharedOpen: 'ready' });
    // BullMQ wraps a client you pass in an adapter; echomq hands back the client itself.
  });

  // Deliberate difference: BullMQ 6.7's close() does not resolve while its Redis is unreachable
  // (its connections keep reconnecting); echomq's closes at once and reports both connections
  // closed (the state BullMQ's own later tests expect).
  it('a worker whose Redis is unreachable closes (twice at once, too) and reports both connections closed', async () => {
    const r = await sideBySide(async (lib, name) => {
      const w = new lib.Worker(name, async () => {}, { connection: { host: '127.0.0.1', port: 1, maxRetriesPerRequest: 0 } });
      w.on('error', () => {});
      await sleep(100);
      const backend = w.getBackend() as any; // eslint-disable-line @typescript-eslint/no-explicit-any
      const closed = Promise.all([w.close(), w.close()]).then(() => 'closed');
      const outcome = await Promise.race([closed, sleep(1500).then(() => 'still closing')]);
      if (outcome !== 'closed') void backend.disconnect().catch(() => {});
      return [outcome, backend.connection.status, backend.blockingConnection.status, w.isRunning()];
    }, 'unreach');
    expect(r.echomq).toEqual(['closed', 'closed', 'closed', false]);
    expect(r.bullmq[0]).toBe('still closing');
  });
});

describe('Worker readiness and connection names', () => {
  it('a job added after waitUntilReady goes to the worker already waiting, not to one started after it', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const ran: string[] = [];
      const first = new lib.Worker(name, async () => {
        ran.push('first');
        await sleep(300);
      }, { connection });
      await first.waitUntilReady();
      await q.add('j', {});
      const second = new lib.Worker(name, async () => {
        ran.push('second');
      }, { connection });
      await second.waitUntilReady();
      await until(() => ran.length > 0, 5000, 'a worker ran the job');
      await first.close();
      await second.close();
      await q.close();
      return ran;
    }, 'firstw');
    // BullMQ's outcome depends on timing (its first worker usually wins, not always: its
    // readiness does not wait for the first fetch); echomq's first worker is already blocking.
    expect(r.echomq).toEqual(['first']);
    expect(r.bullmq).toHaveLength(1);
  });

  it('Queue.getWorkers counts one connection per worker on a shared connection, per queue', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const q2 = new lib.Queue(`${name}2`, { connection });
      const ready = (w: { once(e: string, f: () => void): unknown }) => new Promise<void>((res) => w.once('ready', () => res()));
      const w1 = new lib.Worker(name, async () => {}, { connection, autorun: false });
      await ready(w1);
      const w2 = new lib.Worker(name, async () => {}, { connection, autorun: false, name: 'two' });
      await ready(w2);
      const w3 = new lib.Worker(`${name}2`, async () => {}, { connection, autorun: false });
      await ready(w3);
      const counts = [await q.getWorkersCount(), await q2.getWorkersCount()];
      const names = (await q.getWorkers()).map((c) => c.rawname.slice(c.rawname.lastIndexOf(':') + 1)).sort();
      for (const w of [w1, w2, w3]) await w.close();
      await q2.close();
      await q.close();
      return { counts, named: names.includes('two') };
    }, 'names');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ counts: [2, 1], named: true });
  });
});

describe('Worker option texts', () => {
  it('refuses concurrency 0, NaN, negative, Infinity and non-numbers with exactly BullMQ\'s text; echomq\'s detail is on the error', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const mk = (concurrency: unknown) => refusal(() => new lib.Worker(name, null, { connection, concurrency: concurrency as number }));
      const w = new lib.Worker(name, null, { connection });
      const seen = {
        zero: mk(0), nan: mk(Number.NaN), negative: mk(-2), infinite: mk(Number.POSITIVE_INFINITY), text: mk('3'),
        setter: refusal(() => {
          w.concurrency = 0;
        }),
        kept: w.concurrency,
      };
      await w.close();
      return seen;
    }, 'conc');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.zero).toBe('concurrency must be a finite number greater than 0');
    // echomq's detail, for programs and logs: the field, the expected form and what it got.
    const { Worker } = await import('../../src/index.js');
    let err: unknown;
    try {
      new Worker('conc-detail', null, { connection: 'redis://127.0.0.1:1', concurrency: 0 });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ValidationError);
    expect(err).toMatchObject({ field: 'concurrency', expected: 'an integer 1…100000', got: '0' });
  });

  it('accepts a fractional drainDelay (BullMQ takes any positive number) and still returns from an idle wait', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const refused = { zero: refusal(() => new lib.Worker(name, null, { connection, drainDelay: 0 })) };
      const w = new lib.Worker(name, null, { connection, drainDelay: 0.00001 });
      await w.waitUntilReady();
      const got = [await w.getNextJob('tok'), await w.getNextJob('tok')];
      const opt = w.opts.drainDelay;
      await w.close();
      return { refused, got, opt };
    }, 'drain');
    expect(r.echomq.got).toEqual(r.bullmq.got);
    expect(r.echomq.opt).toBe(r.bullmq.opt);
    expect(r.echomq.refused.zero.startsWith(r.bullmq.refused.zero)).toBe(true);
  });
});
