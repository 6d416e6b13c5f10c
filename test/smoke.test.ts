import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../src/index.js';
import { qname, redisUrl, waitFor } from './helpers.js';

describe('smoke', () => {
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c();
  });

  it('adds and processes jobs in priority order', async () => {
    const name = qname();
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.close());
    await queue.add('a', { n: 1 }, { priority: 5 });
    await queue.add('b', { n: 2 }, { priority: 1 });
    await queue.add('c', { n: 3 });
    expect(await queue.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 1, prioritized: 2 });
    const seen: string[] = [];
    const worker = new Worker(name, async (job) => {
      seen.push(job.name);
      return job.data.n * 2;
    }, { connection: redisUrl() });
    closers.push(() => worker.close());
    await waitFor(() => seen.length === 3);
    expect(seen).toEqual(['c', 'b', 'a']);
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 3);
    const jobs = await queue.getJobs(['completed']);
    expect(jobs.map((j) => j.returnvalue).sort()).toEqual([2, 4, 6]);
  });
});
