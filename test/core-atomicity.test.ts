// Atomic claims: many workers on separate connections race over one queue; every job must be
// processed exactly once, and the queue's bookkeeping must end consistent.
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../src/index.js';
import { client, keysOf, qname, redisUrl, sleep, waitFor } from './helpers.js';
import { JobField } from '../src/core/fields.js';

describe('core atomicity', () => {
  const redis = client();
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
    await redis.quit();
  });

  it('8 workers on separate connections process each of 10,000 jobs exactly once', async () => {
    const name = qname('race');
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.obliterate({ force: true }).then(() => queue.close()));
    const N = 10_000;
    const counts = new Map<string, number>();
    const byWorker = new Array<number>(8).fill(0);
    let total = 0;

    // Workers start first and block idle, so adds race with claims and wake-ups too.
    const workers = Array.from({ length: 8 }, (_, w) =>
      new Worker(name, async (job) => {
        counts.set(job.id, (counts.get(job.id) ?? 0) + 1);
        byWorker[w]++;
        total++;
        // Yield now and then so settles of different workers interleave.
        if (total % 7 === 0) await sleep(0);
        return job.data.i;
      }, { connection: redisUrl(), concurrency: 4 }),
    );
    for (const w of workers) closers.push(() => w.close());
    await sleep(50);

    // Adds in several bulks and singles while the workers already run.
    const ids: string[] = [];
    for (let b = 0; b < 9; b++) {
      const jobs = await queue.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'x', data: { i: b * 1000 + i } })));
      ids.push(...jobs.map((j) => j.id));
    }
    for (let i = 9000; i < N; i++) ids.push((await queue.add('x', { i })).id);
    expect(new Set(ids).size).toBe(N);

    await waitFor(() => total >= N, 40_000, 'all jobs processed');
    // Give any duplicate claim a moment to show up before counting.
    await waitFor(async () => (await queue.getJobCounts('active')).active === 0, 10_000, 'no active jobs');
    await sleep(100);

    expect(total).toBe(N);
    expect(counts.size).toBe(N);
    for (const id of ids) expect(counts.get(id)).toBe(1);
    // More than one worker took part (claims are shared, not serialised on one connection).
    expect(byWorker.filter((n) => n > 0).length).toBeGreaterThan(1);

    // Bookkeeping: nothing ready, active or leaked; retention kept all of them (the default, BullMQ's).
    expect(await queue.getJobCounts()).toMatchObject({
      waiting: 0, prioritized: 0, active: 0, delayed: 0, completed: N, failed: 0,
    });
    const k = keysOf(name);
    expect(await redis.zcard(k.laneBase + 'default')).toBe(0);
    expect(await redis.hlen(k.lactive)).toBe(0);
    expect(await redis.llen(k.ring)).toBe(0);
    expect(await redis.scard(k.inring)).toBe(0);
    const kept = await redis.zrange(k.completed, 0, -1);
    for (const id of kept) {
      const [att, made, st] = await redis.hmget(k.jobBase + id, JobField.attemptsStarted, JobField.attemptsMade, JobField.state);
      expect([att, made, st]).toEqual(['1', '1', 'c']);
    }
    // Exactly one hash per job: none leaked, none lost.
    let jobKeys = 0;
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${k.jobBase.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
      cursor = next;
      jobKeys += batch.length;
    } while (cursor !== '0');
    expect(jobKeys).toBe(N);
  });
});
