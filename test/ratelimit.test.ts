import { afterAll, describe, expect, it } from 'vitest';
import { Job, Queue, QueueEvents, RateLimitError, ValidationError, Worker } from '../src/index.js';
import { scripts } from '../src/scripts/index.js';
import { client, qname, redisUrl, sleep, snapshot, waitFor, activeJobs } from './helpers.js';
import { MetaField } from '../src/core/fields.js';

/**
 * Tolerance for window checks, in ms. Rate windows are fixed: a window opens at the first
 * claim after the previous one expired and lasts `duration`. With more free worker slots than
 * `max` and every job already waiting, a window is filled by the claim that opens it, so all of
 * a window's starts lie within a few ms of its opening (the claim call itself, workers waking
 * on their own timers, the ms flooring of Redis TIME). Hence: any max+1 consecutive starts
 * (by the Redis clock, job.processedOn) cannot share a window, and so span at least
 * duration − TOL.
 */
const TOL = 20;

/** Checks that no max+1 consecutive starts fall within duration − TOL; returns the windows seen. */
function checkWindows(starts: number[], max: number, duration: number): number {
  const t = [...starts].sort((a, b) => a - b);
  for (let i = 0; i + max < t.length; i++) {
    const span = t[i + max] - t[i];
    if (span < duration - TOL) {
      throw new Error(`starts ${i}..${i + max} span ${span} ms < ${duration - TOL} ms: ${JSON.stringify(t.map((x) => x - t[0]))}`);
    }
  }
  // windows, for the caller's sanity checks: a new one begins ≥ duration − TOL after the last
  let windows = 0;
  let open = -Infinity;
  for (const x of t) {
    if (x - open >= duration - TOL) {
      windows++;
      open = x;
    }
  }
  return windows;
}

describe('rate limits and global concurrency', () => {
  const closers: Array<() => Promise<unknown>> = [];
  const c = client();
  afterAll(async () => {
    for (const f of closers.reverse()) await f();
    c.disconnect();
  });
  const queue = (name: string) => {
    const q = new Queue(name, { connection: redisUrl() });
    closers.push(() => q.close());
    return q;
  };
  const worker = (name: string, fn: (job: Job) => unknown, opts = {}) => {
    const w = new Worker(name, fn as never, { connection: redisUrl(), drainDelay: 1, ...opts });
    closers.push(() => w.close());
    return w;
  };
  const redisNow = async () => {
    const [s, us] = await c.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };

  it('limiter { max, duration } is shared by all workers of the queue', async () => {
    const name = qname('rl');
    const q = queue(name);
    const max = 4;
    const duration = 250;
    await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'j', data: i })));
    const starts: number[] = [];
    const fn = async (job: Job) => {
      starts.push(job.processedOn!);
      await sleep(5);
    };
    for (let i = 0; i < 3; i++) worker(name, fn, { concurrency: 5, limiter: { max, duration } });
    await waitFor(() => starts.length === 20, 20_000, 'all jobs started');
    expect(await c.hmget(q.keys.meta, MetaField.rateMax, MetaField.rateDuration)).toEqual(['4', '250']);
    const windows = checkWindows(starts, max, duration);
    expect(windows).toBe(5); // 20 jobs at 4 per window: the limit binds and nothing is lost
  });

  it('setGlobalConcurrency caps active jobs across workers', async () => {
    const name = qname('gc');
    const q = queue(name);
    await expect(q.setGlobalConcurrency(0)).rejects.toThrow(ValidationError);
    await q.setGlobalConcurrency(3);
    expect(await c.hget(q.keys.meta, MetaField.concurrency)).toBe('3');
    let inFlight = 0;
    let peak = 0;
    let done = 0;
    let peakActive = 0;
    const fn = async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await sleep(15);
      inFlight--;
      done++;
    };
    await q.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'j', data: i })));
    for (let i = 0; i < 4; i++) worker(name, fn, { concurrency: 4 });
    while (done < 40) {
      peakActive = Math.max(peakActive, await activeJobs(c, q.keys));
      await sleep(3);
    }
    expect(peak).toBe(3); // used, and never exceeded
    expect(peakActive).toBeLessThanOrEqual(3);
    await q.setGlobalConcurrency(null);
    expect(await c.hget(q.keys.meta, MetaField.concurrency)).toBeNull();
  });

  it('RateLimitError hands the job back to the front of its tier without using an attempt', async () => {
    const name = qname('rle');
    const q = queue(name);
    const qe = new QueueEvents(name, { connection: redisUrl() });
    closers.push(() => qe.close());
    await qe.waitUntilReady();
    const evs: string[] = [];
    for (const e of ['waiting', 'failed', 'completed'] as const) qe.on(e, (a: any) => evs.push(`${e}:${a.jobId}:${a.prev ?? ''}`));
    const a = await q.add('A', {});
    await q.add('B', {});
    await q.add('C', {});
    const order: Array<[string, number]> = [];
    const w = worker(name, async (job: Job) => {
      order.push([job.name, job.processedOn!]);
      if (job.name === 'A' && job.attemptsStarted === 1) {
        await w.rateLimit(300);
        throw Worker.RateLimitError();
      }
      return job.name;
    });
    await waitFor(() => order.length === 4, 10_000, 'four starts');
    expect(order.map((o) => o[0])).toEqual(['A', 'A', 'B', 'C']);
    expect(order[1][1] - order[0][1]).toBeGreaterThanOrEqual(300 - TOL);
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 3, 5000, 'completed');
    const done = (await q.getJob(a.id))!;
    expect(done.attemptsMade).toBe(1); // attempts: 1 and it still completed: the hand-back was free
    expect(done.attemptsStarted).toBe(2); // the token moved on
    expect(done.returnvalue).toBe('A');
    await waitFor(() => evs.includes(`completed:${a.id}:active`), 5000, 'events');
    expect(evs).toContain(`waiting:${a.id}:active`);
    expect(evs.filter((e) => e.startsWith('failed'))).toEqual([]);
  });

  it('worker.rateLimit(ms) blocks every worker of the queue, without any limiter', async () => {
    const name = qname('rlb');
    const q = queue(name);
    const idle = worker(name, async () => {}, { autorun: false });
    const t0 = await redisNow();
    await idle.rateLimit(400);
    const pttl = await c.pttl(q.keys.rate);
    expect(pttl).toBeGreaterThan(300);
    const starts: number[] = [];
    worker(name, async (job: Job) => void starts.push(job.processedOn!), { concurrency: 3 });
    worker(name, async (job: Job) => void starts.push(job.processedOn!), { concurrency: 3 });
    await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'j', data: i })));
    await waitFor(() => starts.length === 6, 5000, 'after the block');
    for (const s of starts) expect(s).toBeGreaterThanOrEqual(t0 + 400 - TOL);
    // the block ends by itself: no counter is left behind once it expired and nothing is limited
    await waitFor(async () => (await c.exists(q.keys.rate)) === 0, 2000, 'block expired');
  });

  it('moveToWait refuses a stale token or a missing job and changes nothing', async () => {
    const name = qname('mtw');
    const q = queue(name);
    await q.add('j', {});
    const ctx = { client: q.client, keys: q.keys };
    const [claimed] = (await scripts.claim(ctx, { count: 1, leaseMs: 30_000 })).jobs;
    const before = await snapshot(c, q.keys);
    expect(await scripts.moveToWait(ctx, { id: claimed.id, token: '999' })).toBe(-2);
    expect(await scripts.moveToWait(ctx, { id: 'nope', token: '1' })).toBe(-1);
    expect(await snapshot(c, q.keys)).toEqual(before);
    expect(await scripts.moveToWait(ctx, { id: claimed.id, token: '1' })).toBe(1);
    expect(await scripts.moveToWait(ctx, { id: claimed.id, token: '1' })).toBe(-2); // no longer active
    expect(await q.getJobCounts('waiting', 'active')).toEqual({ waiting: 1, active: 0 });
    expect(await c.hget(q.keys.lactive, 'default')).toBeNull(); // lane slot released
    const [again] = (await scripts.claim(ctx, { count: 1, leaseMs: 30_000 })).jobs;
    expect(again.fields[again.fields.indexOf('att') + 1]).toBe('2');
  });

  it('per-lane rate limits keep working beside the global one', async () => {
    const name = qname('lrl');
    const q = queue(name);
    const duration = 300;
    await q.setGlobalRateLimit(5, duration);
    await q.lanes.setRateLimit('a', { max: 2, duration });
    const jobs = [
      ...Array.from({ length: 10 }, (_, i) => ({ name: 'a', data: i, opts: { lane: 'a' } })),
      ...Array.from({ length: 10 }, (_, i) => ({ name: 'b', data: i, opts: { lane: 'b' } })),
    ];
    await q.addBulk(jobs);
    const starts: Record<string, number[]> = { a: [], b: [] };
    worker(name, async (job: Job) => void starts[job.lane].push(job.processedOn!), { concurrency: 10 });
    await waitFor(() => starts.a.length + starts.b.length === 20, 20_000, 'all started');
    checkWindows([...starts.a, ...starts.b], 5, duration);
    checkWindows(starts.a, 2, duration);
    await q.removeGlobalRateLimit();
    expect(await c.hmget(q.keys.meta, MetaField.rateMax, MetaField.rateDuration)).toEqual([null, null]);
  });

  it('validates limiter, rateLimit and setGlobalRateLimit', async () => {
    const name = qname('rlv');
    const q = queue(name);
    for (const limiter of [{ max: 0, duration: 100 }, { max: 1, duration: 0 }, { max: 1.5, duration: 10 }, 'x', { max: 1 }]) {
      expect(() => new Worker(name, async () => {}, { connection: redisUrl(), limiter: limiter as never })).toThrow(ValidationError);
    }
    expect(() => new Worker(name, async () => {}, { connection: redisUrl(), limiter: { max: 0, duration: 1 } })).toThrow(
      'limiter.max must be an integer 1…1000000000, got 0',
    );
    const w = worker(name, async () => {}, { autorun: false });
    await expect(w.rateLimit(0)).rejects.toThrow('ms must be an integer 1…86400000, got 0');
    await expect(q.setGlobalRateLimit(0, 100)).rejects.toThrow(ValidationError);
    await expect(q.setGlobalRateLimit(1, -5)).rejects.toThrow(ValidationError);
    expect(await c.exists(q.keys.meta, q.keys.rate)).toBe(0);
    expect(Worker.RateLimitError()).toBeInstanceOf(RateLimitError);
    expect(new RateLimitError().name).toBe('RateLimitError');
  });
});
