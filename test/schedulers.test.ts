// Job schedulers: one job per slot (deterministic id, made together with the scheduler's next
// slot by one script), 10 workers racing, upserts that repeat, limit/endDate/startDate, the
// sweep's repair, and the cron next-slot function against a fixed clock. Real Redis only.
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { Queue, ValidationError, Worker, nextCronSlot, type Job } from '../src/index.js';
import { advanceScheduler, repairSchedulers, schedulerJobId } from '../src/lifecycle/schedulers.js';
import { jobKey, schedulerKey, type QueueKeys } from '../src/core/keys.js';
import { scripts } from '../src/scripts/index.js';
import { client, qname, redisUrl, sleep, snapshot, waitFor } from './helpers.js';

const redis = client();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  redis.disconnect();
});

function queue(name: string): Queue {
  const q = new Queue(name, { connection: redisUrl() });
  closers.push(() => q.close());
  return q;
}
function worker(name: string, fn: (job: Job) => unknown, opts: Record<string, unknown> = {}): Worker {
  const w = new Worker(name, async (job) => fn(job), { connection: redisUrl(), ...opts });
  w.on('error', () => {});
  closers.push(() => w.close());
  return w;
}
async function redisNow(): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
/** Ids of every job of a scheduler in the queue, whatever its state. */
async function schedulerJobs(keys: QueueKeys, sid: string): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '0';
  const pattern = `${jobKey(keys, `repeat:${sid}:`).replace(/[*?[\]\\]/g, '\\$&')}*`;
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    ids.push(...batch.map((k) => k.slice(keys.jobBase.length)));
  } while (cursor !== '0');
  return ids.sort();
}
const slotOf = (id: string) => Number(id.slice(id.lastIndexOf(':') + 1));

describe('nextCronSlot (pure, fixed clock)', () => {
  it('gives the first fire time strictly after the given instant', () => {
    const now = Date.UTC(2024, 0, 1, 10, 7, 30, 250);
    expect(nextCronSlot('*/15 * * * *', undefined, now)).toBe(Date.UTC(2024, 0, 1, 10, 15));
    expect(nextCronSlot('*/15 * * * *', undefined, Date.UTC(2024, 0, 1, 10, 15))).toBe(Date.UTC(2024, 0, 1, 10, 30));
    expect(nextCronSlot('*/15 * * * *', undefined, Date.UTC(2024, 0, 1, 10, 15) - 1)).toBe(Date.UTC(2024, 0, 1, 10, 15));
    expect(nextCronSlot('*/10 * * * * *', undefined, 1_700_000_005_123)).toBe(1_700_000_010_000);
    expect(nextCronSlot('0 0 1 * *', 'UTC', Date.UTC(2024, 1, 15))).toBe(Date.UTC(2024, 2, 1));
  });

  it('reads the pattern in its time zone, across a DST change', () => {
    // 09:00 in New York: EST (UTC-5) on 9 March 2024, EDT (UTC-4) from 10 March.
    const t0 = Date.UTC(2024, 2, 9, 15, 0);
    expect(nextCronSlot('0 9 * * *', 'America/New_York', t0)).toBe(Date.UTC(2024, 2, 10, 13, 0));
    expect(nextCronSlot('0 9 * * *', 'America/New_York', Date.UTC(2024, 2, 9, 13, 59))).toBe(Date.UTC(2024, 2, 9, 14, 0));
    expect(nextCronSlot('0 9 * * *', 'Europe/Berlin', Date.UTC(2024, 2, 30, 12))).toBe(Date.UTC(2024, 2, 31, 7, 0));
  });
});

describe('job schedulers', () => {
  it('makes exactly one job per slot with 10 workers racing (every 200 ms)', async () => {
    const name = qname('sched10');
    const q = queue(name);
    const runs = new Map<string, number>();
    for (let i = 0; i < 10; i++) {
      worker(name, (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        return job.data.n;
      }, { stalledInterval: 100 });
    }
    const first = await q.upsertJobScheduler('tick', { every: 200 }, { name: 'tick', data: { n: 1 } });
    expect(first!.id).toMatch(/^repeat:tick:\d+$/);
    expect(first!.repeatJobKey).toBe('tick');
    await waitFor(() => runs.size >= 8, 15000, '8 slots processed');
    await q.removeJobScheduler('tick');
    await sleep(250);
    const ids = [...runs.keys()].sort();
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    const slots = ids.map(slotOf).sort((a, b) => a - b);
    expect(new Set(slots).size).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect((slots[i] - slots[0]) % 200).toBe(0);
    expect(slots[0]).toBe(slotOf(first!.id));
    // Every job of the scheduler in Redis was run once: none was made twice or left behind.
    const inRedis = await schedulerJobs(q.keys, 'tick');
    expect(inRedis).toEqual(ids);
  });

  it('advancing a slot is a compare-and-set: 10 concurrent callers make one job (every and cron)', async () => {
    const name = qname('schedrace');
    const q = queue(name);
    const clients: Redis[] = Array.from({ length: 10 }, () => client());
    closers.push(async () => clients.forEach((c) => c.disconnect()));
    const ctx = { client: redis, keys: q.keys };

    await q.upsertJobScheduler('e', { every: 60_000 });
    await q.upsertJobScheduler('c', { pattern: '*/2 * * * * *' });
    const cJob = (await q.getJobs(['delayed']))[0];
    await cJob.promote();
    // Claim both current jobs without a worker, so nothing has advanced yet.
    const claimed = await scripts.claim(ctx, { count: 10, leaseMs: 60_000 });
    expect(claimed.jobs.map((j) => j.id.split(':')[1]).sort()).toEqual(['c', 'e']);
    for (const sid of ['e', 'c']) {
      const before = await redis.hget(schedulerKey(q.keys, sid), 'next');
      const replies = await Promise.all(clients.map((c) => advanceScheduler(c, q.keys, sid)));
      expect(replies.filter((r) => r.status === 1 && r.created)).toHaveLength(1);
      expect(replies.filter((r) => r.status === 0)).toHaveLength(9);
      const after = Number(await redis.hget(schedulerKey(q.keys, sid), 'next'));
      expect(after).toBeGreaterThan(Number(before));
      if (sid === 'e') expect(after - Number(before)).toBe(60_000);
      else expect(after % 2000).toBe(0);
      expect(await schedulerJobs(q.keys, sid)).toHaveLength(2);
      // The new job has not started: advancing again does nothing.
      expect((await advanceScheduler(redis, q.keys, sid)).status).toBe(0);
    }
    expect((await q.getJobScheduler('e'))!.iterationCount).toBe(2);
  });

  it('an upsert repeated (even concurrently) makes no second job for a slot; a changed schedule replaces the pending job', async () => {
    const name = qname('schedup');
    const q = queue(name);
    const jobs = await Promise.all(Array.from({ length: 10 }, (_, i) =>
      q.upsertJobScheduler('s', { every: 60_000 }, { data: { v: i } })));
    expect(new Set(jobs.map((j) => j!.id)).size).toBe(1);
    expect(await schedulerJobs(q.keys, 's')).toHaveLength(1);
    const again = await q.upsertJobScheduler('s', { every: 60_000 }, { name: 'renamed', data: { v: 'new' } });
    expect(again!.id).toBe(jobs[0]!.id);
    expect(await schedulerJobs(q.keys, 's')).toEqual([jobs[0]!.id]);
    const info = await q.getJobScheduler('s');
    expect(info).toMatchObject({ id: 's', key: 's', every: 60_000, name: 'renamed', iterationCount: 1, template: { data: { v: 'new' } } });

    // A changed schedule: the unstarted job of the old series is withdrawn, the new series starts.
    const changed = await q.upsertJobScheduler('s', { every: 30_000 });
    expect(changed!.id).not.toBe(jobs[0]!.id);
    expect(await schedulerJobs(q.keys, 's')).toEqual([changed!.id]);
    expect(await q.getJobCounts('waiting')).toEqual({ waiting: 1 });

    // Cron: the same pattern upserted twice keeps one delayed job.
    const c1 = await q.upsertJobScheduler('cron', { pattern: '0 0 1 1 *', tz: 'Europe/Paris' });
    const c2 = await q.upsertJobScheduler('cron', { pattern: '0 0 1 1 *', tz: 'Europe/Paris' });
    expect(c2!.id).toBe(c1!.id);
    expect(await schedulerJobs(q.keys, 'cron')).toEqual([c1!.id]);
    expect(await c1!.getState()).toBe('delayed');
    const slot = slotOf(c1!.id);
    expect(nextCronSlot('0 0 1 1 *', 'Europe/Paris', slot - 1)).toBe(slot);
    expect(await redis.zscore(q.keys.delayed, c1!.id)).toBe(String(slot));
  });

  it('respects limit, then removes the scheduler', async () => {
    const name = qname('schedlimit');
    const q = queue(name);
    const seen: string[] = [];
    worker(name, (job) => seen.push(job.id));
    await q.upsertJobScheduler('lim', { every: 60, limit: 3 });
    await waitFor(async () => (await q.getJobScheduler('lim')) === undefined, 5000, 'scheduler gone');
    await sleep(200);
    expect(seen).toHaveLength(3);
    expect(await schedulerJobs(q.keys, 'lim')).toHaveLength(3);
  });

  it('respects startDate and endDate', async () => {
    const name = qname('schedend');
    const q = queue(name);
    const t0 = await redisNow();
    const startDate = t0 + 300;
    const first = await q.upsertJobScheduler('win', { every: 100, startDate: new Date(startDate), endDate: startDate + 250 });
    expect(slotOf(first!.id)).toBe(startDate);
    expect(await first!.getState()).toBe('delayed');
    expect(Number(await redis.zscore(q.keys.delayed, first!.id))).toBe(startDate);
    const seen: number[] = [];
    worker(name, async (job) => {
      seen.push(slotOf(job.id));
    });
    await waitFor(async () => (await q.getJobScheduler('win')) === undefined, 5000, 'scheduler gone');
    await sleep(150);
    expect(seen.sort()).toEqual([startDate, startDate + 100, startDate + 200]);

    // An endDate already past is refused, with BullMQ's text (nothing is made, no scheduler stays).
    const none = await q.upsertJobScheduler('past', { every: 100, startDate: t0 - 10_000, endDate: t0 - 5_000 }).catch((e: unknown) => e);
    expect(none).toBeInstanceOf(ValidationError);
    expect((none as Error).message).toMatch(/^End date must be greater than current timestamp: /);
    expect(await q.getJobScheduler('past')).toBeUndefined();
  });

  it('runs a cron pattern with seconds end to end', async () => {
    const name = qname('schedcron');
    const q = queue(name);
    const seen: number[] = [];
    worker(name, (job) => seen.push(slotOf(job.id)));
    await q.upsertJobScheduler('sec', { pattern: '* * * * * *' }, { data: { hello: 'world' } });
    await waitFor(() => seen.length >= 2, 5000, 'two cron slots');
    await q.removeJobScheduler('sec');
    for (const s of seen) expect(s % 1000).toBe(0);
    expect(seen[1] - seen[0]).toBe(1000);
  });

  it('the sweep makes the next job when a worker died between claim and advance', async () => {
    const name = qname('schedrepair');
    const q = queue(name);
    const first = await q.upsertJobScheduler('r', { every: 150 });
    const ctx = { client: redis, keys: q.keys };
    const claimed = await scripts.claim(ctx, { count: 1, leaseMs: 60_000 });
    expect(claimed.jobs[0].id).toBe(first!.id); // "crash": claimed, never advanced
    await sleep(20);
    expect(await schedulerJobs(q.keys, 'r')).toEqual([first!.id]);
    expect(await repairSchedulers(redis, q.keys)).toBe(1);
    expect(await repairSchedulers(redis, q.keys)).toBe(0); // the new job has not started
    expect(await schedulerJobs(q.keys, 'r')).toHaveLength(2);

    // A job removed by hand does not stop the scheduler either: a worker's sweep moves on.
    const pending = (await schedulerJobs(q.keys, 'r')).find((id) => id !== first!.id)!;
    // (Queue.remove refuses a scheduler's current job, as BullMQ; the script itself does not.)
    await scripts.remove(ctx, { ids: [pending] });
    const seen: string[] = [];
    worker(name, (job) => seen.push(job.id), { stalledInterval: 50 });
    await waitFor(() => seen.length >= 2, 5000, 'scheduler resumed');
    expect(seen).not.toContain(pending);
    await q.removeJobScheduler('r');
  });

  it('lists, counts and removes schedulers', async () => {
    const name = qname('schedlist');
    const q = queue(name);
    const t0 = await redisNow();
    await q.upsertJobScheduler('late', { every: 1000, startDate: t0 + 50_000 });
    await q.upsertJobScheduler('soon', { every: 1000, startDate: t0 + 10_000 }, { opts: { priority: 3, lane: 'x', attempts: 2 } });
    expect(await q.getJobSchedulersCount()).toBe(2);
    expect((await q.getJobSchedulers(0, -1, true)).map((s) => s.id)).toEqual(['soon', 'late']);
    expect((await q.getJobSchedulers()).map((s) => s.id)).toEqual(['late', 'soon']);
    const soon = (await q.getJobScheduler('soon'))!;
    expect(soon).toMatchObject({ every: 1000, startDate: t0 + 10_000, next: t0 + 10_000, template: { opts: { priority: 3, lane: 'x', attempts: 2 } } });
    const job = (await q.getJob(schedulerJobId('soon', t0 + 10_000)))!;
    expect(job).toMatchObject({ priority: 3, lane: 'x', repeatJobKey: 'soon' });
    expect(await q.removeJobScheduler('soon')).toBe(true);
    expect(await q.removeJobScheduler('soon')).toBe(false);
    expect(await q.getJob(job.id)).toBeUndefined();
    expect(await q.getJobSchedulersCount()).toBe(1);
    await q.obliterate();
    expect(await redis.exists(schedulerKey(q.keys, 'late'), q.keys.scheds)).toBe(0);
  });

  it('refuses bad input with a ValidationError and writes nothing', async () => {
    const name = qname('schedval');
    const q = queue(name);
    await q.upsertJobScheduler('ok', { every: 60_000 });
    const before = await snapshot(redis, q.keys);
    const bad: Array<[unknown, unknown, unknown?]> = [
      ['', { every: 100 }],
      ['s', {}],
      ['s', { every: 100, pattern: '* * * * *' }],
      ['s', { every: 0 }],
      ['s', { every: 1.5 }],
      ['s', { pattern: 'not a cron' }],
      ['s', { pattern: '0 0 30 2 *' }],
      ['s', { pattern: '* * * * *', tz: 'Mars/Olympus_Mons' }],
      ['s', { every: 100, limit: 0 }],
      ['s', { every: 100, startDate: 'not a date' }],
      ['s', { every: 100, startDate: 2000, endDate: 1000 }],
      ['s', { every: 100, offset: -5 }],
      ['s', { pattern: '* * * * *', immediately: true, startDate: 5 }],
      ['s', { every: 100 }, { opts: { jobId: 'x' } }],
      ['s', { every: 100 }, { opts: { delay: 5 } }],
      ['s', { every: 100 }, { opts: { priority: -1 } }],
      ['s', { every: 100 }, { data: () => 1 }],
      ['s', { every: 100 }, { other: 1 }],
      ['s', 'every 5s'],
    ];
    for (const [id, repeat, template] of bad) {
      const err = await q.upsertJobScheduler(id as string, repeat as never, template as never).catch((e: unknown) => e);
      expect(err, JSON.stringify([id, repeat])).toBeInstanceOf(ValidationError);
    }
    const e = (await q.upsertJobScheduler('s', { every: -5 }).catch((x: unknown) => x)) as ValidationError;
    expect(e.message).toBe('repeat.every must be a positive integer (ms), got -5');
    await expect(q.getJobScheduler('')).rejects.toBeInstanceOf(ValidationError);
    await expect(q.removeJobScheduler('')).rejects.toBeInstanceOf(ValidationError);
    expect(await snapshot(redis, q.keys)).toEqual(before);
  });
});
