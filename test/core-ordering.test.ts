// The ordering law, tested exactly: one worker with concurrency 1 must process jobs in
// (priority, arrival) order, with lifo jobs at the front of their tier, re-prioritised jobs at
// the back (or front) of their new tier, and FIFO that survives the arrival counter passing
// 2^32 and running up to the top of the stamp range.
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../src/index.js';
import { scripts } from '../src/scripts/index.js';
import { client, keysOf, qname, redisUrl, sleep, waitFor } from './helpers.js';
// Deterministic pseudo-random numbers (mulberry32), so a failure can be replayed.
import { seeded as rng } from './fault-proxy.js';

const STAMP_BASE = 2 ** 52;


/**
 * A model of the ordering law: every arrival (add, changePriority, promote) takes the next
 * FIFO stamp (counting up) or LIFO stamp (counting down); service order is (priority, stamp).
 */
class Model {
  private seq: number;
  private lseq: number;
  readonly jobs = new Map<string, { prio: number; stamp: number }>();
  constructor(seq = 0, lseq = 0) {
    this.seq = seq;
    this.lseq = lseq;
  }
  arrive(id: string, prio: number, lifo = false): void {
    const stamp = lifo ? STAMP_BASE - ++this.lseq : STAMP_BASE + ++this.seq;
    this.jobs.set(id, { prio, stamp });
  }
  order(): string[] {
    return [...this.jobs.entries()]
      .sort(([, a], [, b]) => a.prio - b.prio || a.stamp - b.stamp)
      .map(([id]) => id);
  }
}

describe('core ordering', () => {
  const closers: Array<() => Promise<unknown>> = [];
  const redis = client();
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    await redis.quit();
  });

  function open(name: string): Queue {
    const q = new Queue(name, { connection: redisUrl() });
    closers.push(() => q.obliterate({ force: true }).then(() => q.close()));
    return q;
  }

  /** Starts one worker with concurrency 1 and returns the ids in the order it ran them. */
  async function processAll(name: string, n: number): Promise<string[]> {
    const seen: string[] = [];
    const worker = new Worker(name, async (job) => {
      seen.push(job.id);
    }, { connection: redisUrl(), concurrency: 1 });
    try {
      await waitFor(() => seen.length >= n, 40_000, `${n} jobs processed`);
    } finally {
      await worker.close();
    }
    return seen;
  }

  it('serves 5,000 jobs with random priorities in exact (priority, arrival) order', async () => {
    const name = qname('order');
    const queue = open(name);
    const rand = rng(1);
    const model = new Model();
    const bulk = Array.from({ length: 5000 }, (_, i) => ({ name: `j${i}`, data: { i }, opts: { priority: Math.floor(rand() * 21) } }));
    const added = await queue.addBulk(bulk);
    added.forEach((job, i) => model.arrive(job.id, bulk[i].opts.priority));
    expect(new Set(added.map((j) => j.id)).size).toBe(5000);

    const expected = model.order();
    // Inspection lists ready jobs in service order too.
    const prioritized = await queue.getJobs('prioritized', 0, -1, true);
    expect(prioritized.map((j) => j.id)).toEqual(expected.filter((id) => model.jobs.get(id)!.prio > 0));
    const counts = await queue.getJobCounts('waiting', 'prioritized');
    expect(counts.waiting! + counts.prioritized!).toBe(5000);

    expect(await processAll(name, 5000)).toEqual(expected);
  });

  it('puts lifo jobs at the front of their tier and moves re-prioritised jobs to the back of the new one', async () => {
    const name = qname('order-lifo');
    const queue = open(name);
    const rand = rng(2);
    const model = new Model();
    const bulk = Array.from({ length: 5000 }, (_, i) => ({
      name: `j${i}`,
      data: { i },
      opts: { priority: Math.floor(rand() * 21), lifo: rand() < 0.2 },
    }));
    const added = await queue.addBulk(bulk);
    added.forEach((job, i) => model.arrive(job.id, bulk[i].opts.priority, bulk[i].opts.lifo));

    // 100 distinct waiting jobs get a new priority; a few ask for the front of the new tier.
    const ids = added.map((j) => j.id);
    for (let k = 0; k < 100; k++) {
      const id = ids.splice(Math.floor(rand() * ids.length), 1)[0];
      const prio = Math.floor(rand() * 21);
      const lifo = k % 10 === 0;
      if (k % 2 === 0) await queue.changePriority(id, prio, { lifo });
      else await (await queue.getJob(id))!.changePriority({ priority: prio, lifo });
      model.arrive(id, prio, lifo);
      const job = await queue.getJob(id);
      expect(job!.priority).toBe(prio);
    }
    // Counts follow priority changes between 0 and > 0.
    const expected = model.order();
    const zeroes = [...model.jobs.values()].filter((j) => j.prio === 0).length;
    expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: zeroes, prioritized: 5000 - zeroes });

    expect(await processAll(name, 5000)).toEqual(expected);
  });

  it('stays FIFO inside a tier when the arrival counter passes 2^32', async () => {
    const name = qname('order-wrap');
    const queue = open(name);
    const start = 4294967290; // 2^32 − 6
    await redis.hset(keysOf(name).meta, 'seq', start);
    const model = new Model(start);
    // Singles and a bulk, two tiers interleaved, 40 arrivals across the boundary.
    for (let i = 0; i < 10; i++) {
      const job = await queue.add(`s${i}`, { i }, { priority: i % 2 === 0 ? 3 : 1 });
      model.arrive(job.id, job.priority);
    }
    const bulk = Array.from({ length: 30 }, (_, i) => ({ name: `b${i}`, data: { i }, opts: { priority: i % 3 === 0 ? 1 : 3 } }));
    (await queue.addBulk(bulk)).forEach((job, i) => model.arrive(job.id, bulk[i].opts.priority));

    // The stamps really crossed 2^32.
    const stamps = await Promise.all(
      [...model.jobs.keys()].map(async (id) => parseInt((await redis.hget(keysOf(name).jobBase + id, 'sq'))!, 16) - STAMP_BASE),
    );
    expect(stamps[0]).toBe(start + 1);
    expect(stamps[stamps.length - 1]).toBe(start + 40);
    expect(Math.max(...stamps)).toBeGreaterThan(2 ** 32);

    expect(await processAll(name, 40)).toEqual(model.order());
  });

  it('keeps FIFO and LIFO exact up to the ends of the stamp range', async () => {
    const name = qname('order-top');
    const queue = open(name);
    // The last 16 FIFO stamps below 2^53 and the last 16 LIFO stamps above 0.
    const seq = STAMP_BASE - 16;
    const lseq = STAMP_BASE - 17;
    await redis.hset(keysOf(name).meta, 'seq', seq, 'lseq', lseq);
    const model = new Model(seq, lseq);
    for (let i = 0; i < 32; i++) {
      const lifo = i % 2 === 1;
      const job = await queue.add(`t${i}`, { i }, { priority: 2, lifo });
      model.arrive(job.id, 2, lifo);
    }
    for (const id of model.jobs.keys()) {
      const sq = (await redis.hget(keysOf(name).jobBase + id, 'sq'))!;
      expect(sq).toMatch(/^[0-9a-f]{14}$/);
      expect(parseInt(sq, 16)).toBe(model.jobs.get(id)!.stamp);
    }
    const order = model.order();
    // LIFO first (newest first), then FIFO (oldest first).
    expect(order.slice(0, 16)).toEqual([...model.jobs.keys()].filter((_, i) => i % 2 === 1).reverse());
    expect(await processAll(name, 32)).toEqual(order);
  });

  it('promotes delayed jobs to the back of their tier when they become due', async () => {
    const name = qname('order-promote');
    const queue = open(name);
    const model = new Model();
    const early = await queue.add('early', {}, { priority: 1 });
    model.arrive(early.id, 1);
    const delayed = await queue.add('delayed', {}, { priority: 1, delay: 60_000 });
    const late = await queue.add('late', {}, { priority: 1 });
    model.arrive(late.id, 1);
    await delayed.promote();
    model.arrive(delayed.id, 1);
    const urgent = await queue.add('urgent', {}, { priority: 0 });
    model.arrive(urgent.id, 0);
    expect(await processAll(name, 4)).toEqual(model.order());
    expect(model.order()).toEqual([urgent.id, early.id, late.id, delayed.id]);
  });

  it('puts a job whose lease expired back at the front of its tier, under its new priority if changed', async () => {
    const name = qname('order-recover');
    const queue = open(name);
    const ctx = { client: redis, keys: keysOf(name) };
    const first = await queue.add('first', {}, { priority: 2 });
    const second = await queue.add('second', {}, { priority: 2 });
    // A worker that vanishes holds both with a 30 ms lease.
    expect((await scripts.claim(ctx, { count: 2, leaseMs: 30 })).jobs.map((j) => j.id)).toEqual([first.id, second.id]);
    const after = await queue.addBulk([
      { name: 'after', data: {}, opts: { priority: 2 } },
      { name: 'urgent', data: {}, opts: { priority: 0 } },
    ]);
    await queue.changePriority(second.id, 1); // an active job keeps it for when it is next ready
    await sleep(50);
    // Any worker's stall sweep does this; called directly so it surely runs before any claim.
    expect(await scripts.recover(ctx, { maxStalledCount: 1, batch: 100 })).toEqual({ requeued: [first.id, second.id], failed: [], hashes: [] });
    const seen: string[] = [];
    const worker = new Worker(name, async (job) => void seen.push(job.name), { connection: redisUrl() });
    try {
      await waitFor(() => seen.length === 4, 5000);
    } finally {
      await worker.close();
    }
    expect(seen).toEqual(['urgent', 'second', 'first', 'after']);
    expect(after.length).toBe(2);
  });
});
