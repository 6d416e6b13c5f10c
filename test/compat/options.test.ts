// BullMQ 6's job and queue options, side by side: every option BullMQ takes is accepted, where
// BullMQ throws echomq throws a typed error whose message begins with BullMQ's text (and Redis is
// unchanged), the parent option makes a child count for its parent, finished jobs are kept by
// default, and prefixes with a hash tag work.
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error cluster-key-slot (an ioredis dependency) ships no types
import calculateSlot from 'cluster-key-slot';
import { Redis } from 'ioredis';
import { ValidationError, EchoError, Queue as EchoQueue } from '../../src/index.js';
import { queueKeys } from '../../src/core/keys.js';
import { closeConnections, connection, sideBySide, type Lib } from './harness.js';
import { redisUrl, snapshot, waitFor } from '../helpers.js';

afterAll(closeConnections);

/** What a rejected call left: its message (or 'ok'). */
async function outcome(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
    return 'ok';
  } catch (e) {
    return (e as Error).message;
  }
}

/** Runs every job of the queue with `fn`, then closes the worker. */
async function drainWith(lib: Lib, name: string, conn: Redis, count: number, fn: (job: any) => unknown, prefix?: string): Promise<void> {
  const qe = new lib.QueueEvents(name, { connection: conn.duplicate(), ...(prefix ? { prefix } : {}) });
  await qe.waitUntilReady();
  let done = 0;
  qe.on('completed', () => done++);
  qe.on('failed', () => done++);
  const w = new lib.Worker(name, async (job) => fn(job), { connection: conn, concurrency: 20, ...(prefix ? { prefix } : {}) });
  await waitFor(() => done >= count, 20_000, `${count} jobs finished`);
  await w.close();
  await qe.close();
}

describe('job options (BullMQ JobsOptions)', () => {
  it('accepts every BullMQ option and shows the stored ones in job.opts', async () => {
    const opts = {
      timestamp: 1_700_000_000_000, stackTraceLimit: 3, keepLogs: 4, prevMillis: 7, sizeLimit: 1000,
      telemetry: { metadata: 'm', omitContext: true }, removeOnComplete: { age: 10, count: 5, limit: 3 }, removeOnFail: { count: 2 },
      failParentOnFailure: true, repeatJobKey: 'rk', attempts: 0, delay: -50, priority: 0, lifo: false, backoff: 10,
    };
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const job = await q.add('a', { x: 1 }, opts as never);
      const back = (await q.getJob(job.id!))!;
      const state = await back.getState();
      await q.close();
      const o = back.opts as Record<string, unknown>;
      return {
        timestamp: back.timestamp, state,
        shown: { stackTraceLimit: o.stackTraceLimit, keepLogs: o.keepLogs, prevMillis: o.prevMillis, sizeLimit: o.sizeLimit, telemetry: o.telemetry, fpof: o.failParentOnFailure },
      };
    }, 'opts-all');
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('deprecated repeat on add: one ordinary job, as in BullMQ 6.7 (use upsertJobScheduler)', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const job = await q.add('a', {}, { repeat: { every: 1000 } } as never);
      const counts = await q.getJobCounts('waiting', 'delayed');
      const schedulers = await q.getJobSchedulersCount();
      await q.close();
      return { repeat: (job.opts as Record<string, unknown>).repeat, counts, schedulers };
    }, 'opts-repeat');
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('where BullMQ throws, echomq throws a typed error that begins with its text and writes nothing', async () => {
    const bad: Array<[string, unknown, unknown?]> = [
      ['sizeLimit', { sizeLimit: 5 }, { s: 'abcdefgh' }],
      ['exclusive policies', { failParentOnFailure: true, continueParentOnFailure: true, ignoreDependencyOnFailure: true }],
      ['two policies', { removeDependencyOnFailure: true, failParentOnFailure: true }],
      ['dedup with parent', { deduplication: { id: 'x' }, parent: { id: 'p', queue: 'QUEUE' } }],
      ['dedup without id', { deduplication: { ttl: 5 } }],
      ['debounce', { debounce: { id: 'x' } }],
      ["jobId '0'", { jobId: '0' }],
      ["jobId '0:x'", { jobId: '0:x' }],
      ["jobId '12'", { jobId: '12' }],
      ['priority float', { priority: 1.5 }],
      ['priority over the limit', { priority: 2 ** 21 }],
      ['jitter 2', { backoff: { type: 'fixed', delay: 10, jitter: 2 } }],
      ['missing parent', { parent: { id: 'nope', queue: 'QUEUE' } }],
    ];
    const r = await sideBySide(async (lib, name, conn, side) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.add('seed', {});
      const before = side === 'echomq' ? await snapshot(conn, queueKeys(name)) : undefined;
      const out: Record<string, string> = {};
      const typed: Record<string, boolean> = {};
      for (const [label, opts, data] of bad) {
        const o = JSON.parse(JSON.stringify(opts).replace(/"QUEUE"/g, JSON.stringify(q.qualifiedName)));
        let err: unknown;
        try {
          await q.add('a', data ?? {}, o);
        } catch (e) {
          err = e;
        }
        out[label] = err ? (err as Error).message.replace(q.qualifiedName, '<queue>') : 'ok';
        if (side === 'echomq') typed[label] = err instanceof EchoError;
      }
      const bulk = await outcome(() => q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {}, opts: { priority: 1.5 } }]));
      if (before) expect(await snapshot(conn, queueKeys(name))).toEqual(before);
      if (side === 'echomq') expect(Object.values(typed).every(Boolean), JSON.stringify(typed)).toBe(true);
      await q.close();
      return { out, bulk };
    }, 'opts-bad');
    for (const [label, msg] of Object.entries(r.bullmq.out)) {
      expect(r.echomq.out[label], label).not.toBe('ok');
      expect(r.echomq.out[label]!.startsWith(msg), `${label}: ${r.echomq.out[label]} should begin with ${msg}`).toBe(true);
    }
    expect(r.echomq.bulk.startsWith(r.bullmq.bulk)).toBe(true);
  });

  it('accepts a negative delay (runs at once) and attempts 0 (one attempt), as BullMQ does', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const a = await q.add('a', {}, { delay: -1000, attempts: 0 });
      const state = await a.getState();
      let runs = 0;
      await drainWith(lib, name, conn, 1, () => {
        runs++;
        throw new Error('no');
      });
      const failed = (await q.getJob(a.id!))!;
      await q.close();
      return { state, runs, attemptsMade: failed.attemptsMade, failedReason: failed.failedReason };
    }, 'opts-lenient');
    expect(r.echomq).toEqual(r.bullmq);
  });
});

describe('parent on Queue.add', () => {
  for (const cross of [false, true]) {
    it(`a child added with parent counts for its parent as a flow child does (${cross ? 'parent in another queue' : 'same queue'})`, async () => {
      const r = await sideBySide(async (lib, name, conn) => {
        const childQueue = cross ? `${name}-kids` : name;
        const pq = new lib.Queue(name, { connection: conn });
        const cq = cross ? new lib.Queue(childQueue, { connection: conn }) : pq;
        const fp = new lib.FlowProducer({ connection: conn });
        const tree = await fp.add({ name: 'root', queueName: name, children: [{ name: 'c1', queueName: childQueue, data: { v: 1 } }] });
        const extra = await cq.add('c2', { v: 2 }, { parent: { id: tree.job.id!, queue: pq.qualifiedName } });
        const parent = (await pq.getJob(tree.job.id!))!;
        const deps = await parent.getDependencies();
        const before = { state: await parent.getState(), unprocessed: deps.unprocessed?.length, childParent: extra.parent?.id === tree.job.id };
        const w = new lib.Worker(childQueue, async (job) => job.data.v * 10, { connection: conn });
        await waitFor(async () => (await parent.getState()) !== 'waiting-children', 10_000, 'parent released');
        await w.close();
        const values = Object.values(await (await pq.getJob(tree.job.id!))!.getChildrenValues()).sort();
        await fp.close();
        if (cross) await cq.close();
        await pq.close();
        return { before, values };
      }, cross ? 'parent-x' : 'parent');
      expect(r.echomq).toEqual(r.bullmq);
      expect(r.echomq.before).toEqual({ state: 'waiting-children', unprocessed: 2, childParent: true });
    });
  }
});

describe('retention defaults and queue options', () => {
  it('keeps every finished job unless told otherwise (BullMQ default; echomq used to keep 1,000)', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.addBulk(Array.from({ length: 1005 }, (_, i) => ({ name: 'x', data: { i } })));
      await q.add('f', { fail: true });
      await drainWith(lib, name, conn, 1006, (job) => {
        if (job.data.fail) throw new Error('x');
        return 1;
      });
      const counts = await q.getJobCounts('completed', 'failed');
      await q.close();
      return counts;
    }, 'keep');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ completed: 1005, failed: 1 });
  });

  it('accepts every QueueOptions member of BullMQ 6', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, {
        connection: conn, skipVersionCheck: true, skipWaitingForReady: true, blockingConnection: false, skipMetasUpdate: false,
        streams: { events: { maxLen: 100 } }, settings: { repeatKeyHashAlgorithm: 'sha256' },
      });
      const job = await q.add('a', { n: 1 });
      await q.close();
      return { id: job.id };
    }, 'qopts');
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('skipMetasUpdate: the constructor writes nothing', async () => {
    const c = connection();
    const name = `skipmeta-${Date.now()}`;
    const q = new EchoQueue(name, { connection: redisUrl(), skipMetasUpdate: true, streams: { events: { maxLen: 5 } } });
    await q.waitUntilReady();
    expect(await c.exists(queueKeys(name).meta)).toBe(0);
    const w = new EchoQueue(name, { connection: redisUrl(), streams: { events: { maxLen: 5 } } });
    await w.add('a', {});
    expect(await c.hget(queueKeys(name).meta, 'evmax')).toBe('5');
    await q.close();
    await w.obliterate();
    await w.close();
  });

  it('refuses a malformed queue option with a typed error', () => {
    expect(() => new EchoQueue('q', { settings: { repeatStrategy: 5 } } as never)).toThrow(ValidationError);
    expect(() => new EchoQueue('q', { skipMetasUpdate: 'yes' } as never)).toThrow(ValidationError);
  });
});

describe('prefix with a hash tag', () => {
  for (const prefix of ['{bull}', '{bull}:custom']) {
    it(`${prefix}: jobs run, logical names keep the prefix, all keys of a queue in one slot`, async () => {
      const r = await sideBySide(async (lib, name, conn, side) => {
        const q = new lib.Queue(name, { connection: conn, prefix });
        const fp = new lib.FlowProducer({ connection: conn, prefix });
        const tree = await fp.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name }] });
        await drainWith(lib, name, conn, 2, () => 'ok', prefix);
        const child = (await q.getJob(tree.children![0]!.job.id!))!;
        const back = await fp.getFlow({ id: tree.job.id!, queueName: name });
        const logical = {
          qn: q.qualifiedName.replace(name, '<q>'), key: q.toKey('wait').replace(name, '<q>'), state: await child.getState(),
          flowChildren: back?.children?.length, childValues: Object.values(await (await q.getJob(tree.job.id!))!.getChildrenValues()),
        };
        let slots = 0;
        if (side === 'echomq') {
          const keys = await conn.keys(`${prefix}:{${name}}:*`);
          expect(keys.length).toBeGreaterThan(3);
          slots = new Set(keys.map((k) => calculateSlot(k))).size;
        }
        await fp.close();
        await q.close();
        return { logical, slots };
      }, 'prefix');
      expect(r.echomq.logical).toEqual(r.bullmq.logical);
      expect(r.echomq.slots).toBe(1);
    });
  }
});
