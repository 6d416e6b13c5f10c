// The active set's sentinel (layout 2, docs/protocol.md key `active`): one member at +inf that
// keeps the set a skiplist. It must be invisible: every count and listing a user, the CLI or the
// dashboard reads is the same with and without it, and obliterate does not see it as a job.
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, ValidationError, Worker, type Job } from '../src/index.js';
import type { ShardedQueue } from '../src/cluster/sharded.js';
import { ACTIVE_SENTINEL } from '../src/core/layout.js';
import * as ops from '../src/operator/operations.js';
import { activeJobs, client, qname, redisUrl, waitFor } from './helpers.js';

const c = client();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of closers.reverse()) await f().catch(() => {});
  await c.quit();
});

const ids = (jobs: Job[]) => jobs.map((j) => j.id);

/** A worker of `concurrency` whose jobs run until release() is called. */
function holdingWorker(q: Queue, concurrency: number) {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const w = new Worker(q.name, async () => gate, { connection: redisUrl(), concurrency, prefix: q.keys.prefix });
  w.on('error', () => {});
  closers.push(() => w.close(true));
  return { w, release };
}

// Windows of every shape a user may ask for: whole, pages, past the end, negative, single ranks.
const WINDOWS: Array<[number, number]> = [[0, -1], [0, 9], [10, 19], [45, 60], [49, 49], [50, 50], [-5, -1], [-60, -40], [-1, -1], [3, 1]];

/** Everything a user, the CLI and the dashboard read about active jobs. */
async function readings(q: Queue) {
  const out: Record<string, unknown> = {
    counts: await q.getJobCounts(),
    activeCount: await q.getActiveCount(),
    countByTypes: await q.getJobCountByTypes('active', 'waiting'),
    active: ids(await q.getActive()),
    maxed: await q.isMaxed(),
    status: (await ops.queueStatus(q)).counts,
  };
  for (const [s, e] of WINDOWS) {
    for (const asc of [true, false]) {
      out[`jobs ${s} ${e} ${asc}`] = ids(await q.getJobs(['active'], s, e, asc));
      out[`ranges ${s} ${e} ${asc}`] = await q.getRanges(['active'], s, e, asc);
    }
    out[`getActive ${s} ${e}`] = ids(await q.getActive(s, e));
  }
  for (const [offset, limit] of [[0, 10], [10, 10], [40, 20], [0, 100]]) {
    out[`cli ${offset} ${limit}`] = (await ops.findJobs(q, { state: 'active', offset, limit })).jobs.map((j) => j.id);
    out[`cli lane ${offset} ${limit}`] = (await ops.findJobs(q, { state: 'active', lane: 'b', offset, limit })).jobs.map((j) => j.id);
  }
  return out;
}

describe('the active set sentinel', () => {
  it('keeps active a skiplist at concurrency 50; counts and listings are the same with and without it', async () => {
    const q = new Queue(qname('sentinel'), { connection: redisUrl() });
    closers.push(() => q.close());
    await q.setGlobalConcurrency(500); // so the readings include isMaxed's count
    await q.addBulk(Array.from({ length: 80 }, (_, i) => ({ name: `j${i}`, data: {}, opts: { lane: i % 3 === 0 ? 'b' : 'a' } })));
    const { w, release } = holdingWorker(q, 50);
    await waitFor(async () => (await activeJobs(c, q.keys)) === 50, 10_000, '50 active jobs');
    expect(await c.call('OBJECT', 'ENCODING', q.keys.active)).toBe('skiplist');
    expect(await c.zscore(q.keys.active, ACTIVE_SENTINEL)).toBe('inf');

    const withSentinel = await readings(q);
    expect(withSentinel.activeCount).toBe(50);
    expect((withSentinel.counts as Record<string, number>).active).toBe(50);
    expect((withSentinel.active as string[]).length).toBe(50);
    expect(withSentinel['jobs 50 50 true']).toEqual([]);
    expect(withSentinel['jobs -1 -1 false']).toEqual([(withSentinel.active as string[])[0]]);
    expect(withSentinel.active).not.toContain(ACTIVE_SENTINEL);
    // The same set as layout 1 stored it: the jobs alone. Nothing a reader returns may differ.
    await c.zrem(q.keys.active, ACTIVE_SENTINEL);
    const without = await readings(q);
    await c.zadd(q.keys.active, '+inf', ACTIVE_SENTINEL);
    expect(withSentinel).toEqual(without);

    release();
    await waitFor(async () => (await q.getJobCounts('active', 'waiting')).waiting === 0 && (await q.getActiveCount()) === 0, 20_000, 'idle');
    // Only the sentinel is left, and the set stays a skiplist for the next jobs.
    expect(await c.zrange(q.keys.active, 0, -1)).toEqual([ACTIVE_SENTINEL]);
    expect(await c.call('OBJECT', 'ENCODING', q.keys.active)).toBe('skiplist');
    expect(await q.getJobs(['active'])).toEqual([]);
    await w.close();
    // obliterate without force: the sentinel is no active job; the key goes with the queue.
    await q.obliterate();
    expect(await c.exists(q.keys.active, q.keys.meta)).toBe(0);
  });

  it('a drained event is still written when the last job settles, and only the sentinel stays', async () => {
    const q = new Queue(qname('sentinel-idle'), { connection: redisUrl() });
    closers.push(() => q.close());
    await q.add('a', {});
    const w = new Worker(q.name, async () => 'ok', { connection: redisUrl() });
    closers.push(() => w.close());
    await waitFor(async () => (await q.getCompletedCount()) === 1, 5_000, 'completed');
    // Written by the settle that left nothing ready or active (lib/claim.lua emitDrainedIfIdle).
    const events = (await c.xrange(q.keys.events, '-', '+')).map(([, f]) => f[1]);
    expect(events).toContain('drained');
    expect(await c.zrange(q.keys.active, 0, -1)).toEqual([ACTIVE_SENTINEL]);
  });

  it('a sharded queue counts and lists its shards without their sentinels', async () => {
    const q = new Queue(qname('sentinel-sh'), { connection: redisUrl(), shards: 2 }) as ShardedQueue;
    closers.push(() => q.close());
    const lanes = ['a', 'b', 'c', 'd', 'e', 'f'];
    await q.addBulk(lanes.flatMap((lane) => [0, 1, 2].map((i) => ({ name: `${lane}${i}`, data: {}, opts: { lane } }))));
    const w = new Worker(q.name, async () => new Promise(() => {}), { connection: redisUrl(), shards: 2, concurrency: 10 });
    w.on('error', () => {});
    closers.push(() => w.close(true));
    await waitFor(async () => (await q.getActiveCount()) === 10, 10_000, '10 active jobs');
    for (const k of q.shardKeys) if (await c.exists(k.active)) expect(await c.zscore(k.active, ACTIVE_SENTINEL)).toBe('inf');
    const all = ids(await q.getJobs(['active'], 0, -1, true));
    expect(all).toHaveLength(10);
    expect(ids(await q.getJobs(['active'], 0, -1, false))).toEqual([...all].reverse());
    expect(ids(await q.getJobs(['active'], 8, 20, true))).toEqual(all.slice(8));
    expect((await q.getJobCounts('active')).active).toBe(10);
    await expect(q.obliterate()).rejects.toThrow(/active jobs/);
  });

  it('refuses the sentinel as a custom job id', async () => {
    const q = new Queue(qname('sentinel-id'), { connection: redisUrl() });
    closers.push(() => q.close());
    await expect(q.add('x', {}, { jobId: ACTIVE_SENTINEL })).rejects.toBeInstanceOf(ValidationError);
    await expect(q.add('x', {}, { jobId: `${ACTIVE_SENTINEL}~` })).resolves.toBeDefined();
  });
});
