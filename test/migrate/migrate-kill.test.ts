// The move from BullMQ killed at random points (SIGKILL of its process, several seeds) and run
// again, and two moves at once: every BullMQ job ends in echomq exactly once, in its state,
// and nothing of it stays in BullMQ.
import { fileURLToPath } from 'node:url';
import * as bull from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, migrateFromBullMQ } from '../../src/index.js';
import { client, keysOf, qname, redisUrl } from '../helpers.js';
import { everyNth, faultScope } from '../fault-proxy.js';
import { killMidway } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/migrate-run.mjs', import.meta.url));
const redis = client();
afterAll(() => redis.quit());

/** BullMQ jobs in four states: waiting, prioritized, delayed, completed. Returns id → state. */
async function fill(name: string, n: number): Promise<Map<string, string>> {
  const q = new bull.Queue(name, { connection: redis.duplicate() });
  const jobs = await q.addBulk(Array.from({ length: n }, (_, i) => ({
    name: `j${i}`, data: { i },
    opts: i % 4 === 1 ? { priority: 1 + (i % 7) } : i % 4 === 2 ? { delay: 600_000 } : {},
  })));
  const want = new Map<string, string>();
  for (const [i, j] of jobs.entries()) want.set(j.id!, i % 4 === 1 ? 'prioritized' : i % 4 === 2 ? 'delayed' : 'waiting');
  // A quarter completed: taken and finished by hand, so the fill needs no worker loop.
  const w = new bull.Worker(name, null, { connection: redis.duplicate() });
  for (let k = 0; k < n / 4; k++) {
    const job = (await w.getNextJob('t'))!;
    await job.moveToCompleted({ i: job.data.i }, 't', false);
    want.set(job.id!, 'completed');
  }
  await w.close();
  await q.close();
  return want;
}

/** Each id's state in echomq, and what BullMQ still holds of the queue's jobs. */
async function check(name: string, want: Map<string, string>): Promise<void> {
  const q = new Queue(name, { connection: redis });
  try {
    const seen = new Map<string, string>();
    for (const state of ['waiting', 'prioritized', 'delayed', 'completed'] as const) {
      for (const j of await q.getJobs([state], 0, -1)) {
        expect(seen.has(j.id!), `job ${j.id} twice`).toBe(false);
        seen.set(j.id!, state);
      }
    }
    expect(new Map([...seen].sort())).toEqual(new Map([...want].sort()));
    expect(await q.getJobCountByTypes('waiting', 'prioritized', 'delayed', 'completed')).toBe(want.size);
    for (const s of ['wait', 'prioritized', 'delayed', 'completed', 'active']) expect(await redis.exists(`bull:${name}:${s}`), s).toBe(0);
    for (const id of want.keys()) expect(await redis.exists(`bull:${name}:${id}`), `BullMQ job ${id}`).toBe(0);
  } finally {
    await q.close();
  }
}

describe('the move from BullMQ under faults', () => {
  it.each([11, 23, 47, 91])('SIGKILLed at a random point (seed %i) and run again: every job once', async (seed) => {
    const name = qname('mig-kill');
    const want = await fill(name, 400);
    const k = keysOf(name);
    const moved = async () => Number((await redis.hget(k.meta, 'ready')) ?? 0) + (await redis.zcard(k.delayed)) + (await redis.zcard(k.completed));
    // Room left for the kill to land before the end.
    await killMidway(FIXTURE, name, seed, want.size, want.size * 0.6, moved);
    const again = await migrateFromBullMQ({ connection: redisUrl(), queues: [name] });
    expect(again.queues[0]!.cannotCount).toBe(0);
    await check(name, want);
  }, 30_000);

  it('replies lost with the connection cut (every 4th script call): the resends finish the move, every job once', async () => {
    const scope = faultScope(redisUrl());
    try {
      const name = qname('mig-cut');
      const want = await fill(name, 400);
      const proxy = await scope.proxy();
      proxy.policy = everyNth(4, (c) => c.name === 'EVALSHA' || c.name === 'EVAL');
      const r = await migrateFromBullMQ({ connection: proxy.url, queues: [name], batchSize: 11 });
      expect(proxy.droppedTotal).toBeGreaterThan(5);
      // A lost reply hides its batch from the report, never from Redis.
      expect(r.jobs).toBeLessThan(want.size);
      await check(name, want);
      proxy.policy = () => false;
      expect((await migrateFromBullMQ({ connection: proxy.url, queues: [name] })).jobs).toBe(0);
    } finally {
      await scope.closeAll();
    }
  }, 30_000);

  it('two moves at once double nothing', async () => {
    const name = qname('mig-two');
    const want = await fill(name, 400);
    const [r1, r2] = await Promise.all([
      migrateFromBullMQ({ connection: redisUrl(), queues: [name], batchSize: 9 }),
      migrateFromBullMQ({ connection: redisUrl(), queues: [name], batchSize: 13 }),
    ]);
    expect(r1.jobs + r2.jobs).toBe(want.size);
    await check(name, want);
  }, 30_000);
});
