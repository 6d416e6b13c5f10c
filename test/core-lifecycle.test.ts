// A job's life through the public API: retries and backoff, delays and promote, unrecoverable
// errors, pause/resume, remove, clean, drain, obliterate, script-cache loss, inspection,
// in-processor updates, worker events, close, retention and jobId dedupe.
import { afterEach, describe, expect, it } from 'vitest';
import {
  Queue, Worker, UnrecoverableError, InvalidStateError, JobNotFoundError, ActiveJobsError, ClosedError,
  type Job, type Processor, type WorkerOptions,
} from '../src/index.js';
import { Redis } from 'ioredis';
import { scripts } from '../src/scripts/index.js';
import { client, keysOf, qname, redisUrl, sleep, snapshot, waitFor, activeJobs } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';
import { JobField, MetaField } from '../src/core/fields.js';

/** Local and Redis clocks are the same machine's; 2 ms covers rounding to whole ms. */
const SLACK = 2;

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/** Number of keys of a queue, by SCAN of its key pattern. */
async function keyCount(name: string): Promise<number> {
  const redis = client();
  try {
    return (await snapshot(redis, keysOf(name))).size;
  } finally {
    redis.disconnect();
  }
}

describe('core lifecycle', () => {
  let cleanup: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanup.reverse()) await c();
    cleanup = [];
  });

  function queue(name = qname(), opts: Record<string, unknown> = {}): Queue {
    const q = new Queue(name, { connection: redisUrl(), ...opts });
    cleanup.push(() => q.obliterate({ force: true }).catch(() => {}).then(() => q.close()));
    return q;
  }
  function worker(name: string, fn: Processor, opts: WorkerOptions = {}): Worker {
    const w = new Worker(name, fn, { connection: redisUrl(), ...opts });
    w.on('error', () => {});
    cleanup.push(() => w.close(true));
    return w;
  }
  const state = async (q: Queue, id: string) => (await q.getJob(id))?.getState();

  it('retries with fixed and exponential backoff, never sooner than the delay', async () => {
    const q = queue();
    const starts = new Map<string, number[]>();
    worker(q.name, async (job) => {
      starts.set(job.name, [...(starts.get(job.name) ?? []), Date.now()]);
      if (job.name === 'recovers' && job.attemptsMade < 2) throw new Error(`try ${job.attemptsMade}`);
      if (job.name !== 'recovers') throw new Error(`fail ${job.attemptsMade}`);
      return 'ok';
    }, { concurrency: 3 });
    const fixed = await q.add('fixed', {}, { attempts: 3, backoff: 200 });
    const expo = await q.add('expo', {}, { attempts: 4, backoff: { type: 'exponential', delay: 100 } });
    const rec = await q.add('recovers', {}, { attempts: 5, backoff: { type: 'fixed', delay: 50 } });
    await waitFor(async () => (await q.getJobCounts('failed')).failed === 2 && (await state(q, rec.id)) === 'completed', 15_000);

    const gaps = (n: string) => starts.get(n)!.slice(1).map((t, i) => t - starts.get(n)![i]);
    expect(gaps('fixed')).toHaveLength(2);
    for (const g of gaps('fixed')) expect(g).toBeGreaterThanOrEqual(200 - SLACK);
    const eg = gaps('expo');
    expect(eg).toHaveLength(3);
    [100, 200, 400].forEach((d, i) => expect(eg[i]).toBeGreaterThanOrEqual(d - SLACK));

    const f = (await q.getJob(fixed.id))!;
    expect(f.attemptsMade).toBe(3);
    expect(f.failedReason).toBe('fail 2');
    expect(f.stacktrace).toHaveLength(3);
    expect((await q.getJob(expo.id))!.attemptsMade).toBe(4);
    const r = (await q.getJob(rec.id))!;
    expect([r.attemptsMade, r.returnvalue, starts.get('recovers')!.length]).toEqual([3, 'ok', 3]);
  });

  it('fails an UnrecoverableError at once, whatever attempts allow', async () => {
    const q = queue();
    let runs = 0;
    const failed: Array<[string, Error]> = [];
    const w = worker(q.name, async () => {
      runs++;
      throw new UnrecoverableError('bad input');
    });
    w.on('failed', (job: Job, err: Error) => failed.push([job.id, err]));
    const job = await q.add('x', {}, { attempts: 5, backoff: 10 });
    await waitFor(() => failed.length === 1);
    await sleep(100);
    expect(runs).toBe(1);
    expect(failed[0][0]).toBe(job.id);
    expect(failed[0][1]).toBeInstanceOf(UnrecoverableError);
    const j = (await q.getJob(job.id))!;
    expect([await j.getState(), j.attemptsMade, j.failedReason]).toEqual(['failed', 1, 'bad input']);
  });

  it('does not run a delayed job before its delay; promote() makes it ready now', async () => {
    const q = queue();
    const started = new Map<string, number>();
    worker(q.name, async (job) => void started.set(job.name, Date.now()));
    const t0 = Date.now();
    const d = await q.add('delayed', {}, { delay: 300 });
    const later = await q.add('later', {}, { delay: 60_000 });
    expect(await state(q, d.id)).toBe('delayed');
    expect(await q.getJobCounts('delayed', 'waiting')).toEqual({ delayed: 2, waiting: 0 });
    await waitFor(() => started.has('delayed'), 5000);
    expect(started.get('delayed')! - t0).toBeGreaterThanOrEqual(300 - SLACK);

    await expect(d.promote()).rejects.toBeInstanceOf(InvalidStateError); // no longer delayed
    const t1 = Date.now();
    await later.promote();
    await waitFor(() => started.has('later'), 2000);
    expect(started.get('later')! - t1).toBeLessThan(1000);
    expect(await q.getJobCounts('delayed')).toEqual({ delayed: 0 });
  });

  it('claims nothing while the queue is paused and resumes claiming', async () => {
    const q = queue();
    const seen: string[] = [];
    worker(q.name, async (job) => void seen.push(job.id));
    await sleep(50);
    await q.pause();
    expect(await q.isPaused()).toBe(true);
    for (let i = 0; i < 5; i++) await q.add('p', { i }, { priority: i % 2 });
    await sleep(400);
    expect(seen).toEqual([]);
    // As in BullMQ 6, a paused queue's jobs are still waiting (its `paused` type is always 0).
    expect(await q.getJobCounts('paused', 'waiting', 'prioritized', 'active')).toEqual({ paused: 0, waiting: 3, prioritized: 2, active: 0 });
    expect((await q.getWaiting()).length).toBe(3);
    await q.resume();
    await waitFor(() => seen.length === 5, 3000);
    expect(await q.isPaused()).toBe(false);
  });

  it('removes jobs in any state but active, keeping the bookkeeping right', async () => {
    const q = queue();
    const k = keysOf(q.name);
    const hold = gate();
    worker(q.name, async (job) => {
      if (job.name === 'held') await hold.promise;
    }, { concurrency: 2 });
    const held = await q.add('held', {});
    await waitFor(async () => (await state(q, held.id)) === 'active');
    const done = await q.add('done', {});
    await waitFor(async () => (await state(q, done.id)) === 'completed');

    const redis = client();
    cleanup.push(() => redis.quit());
    const before = await snapshot(redis, k);
    await expect(held.remove()).rejects.toBeInstanceOf(InvalidStateError);
    // Queue.remove answers as BullMQ's: 0 for an active (locked) job, nothing changed.
    expect(await q.remove(held.id)).toBe(0);
    expect(await snapshot(redis, k)).toEqual(before);

    await q.pause();
    const waiting = await q.add('w', {}, { priority: 4, lane: 'solo' });
    const delayed = await q.add('d', {}, { delay: 60_000 });
    await (await q.getJob(waiting.id))!.log('a line');
    for (const j of [waiting, delayed, done]) await j.remove();
    for (const j of [waiting, delayed, done]) expect(await q.getJob(j.id)).toBeUndefined();
    expect(await redis.exists(k.logsBase + waiting.id)).toBe(0);
    expect(await q.getJobCounts('prioritized', 'delayed', 'completed', 'active')).toEqual({ prioritized: 0, delayed: 0, completed: 0, active: 1 });
    expect(await redis.exists(k.laneBase + 'solo')).toBe(0);
    expect(await redis.zscore(k.lanes, 'solo')).toBeNull();
    expect(await redis.sismember(k.inring, 'solo')).toBe(0);
    // As BullMQ, removing a job that is not there is not an error: 1 (nothing to remove).
    expect(await q.remove(waiting.id)).toBe(1);
    hold.open();
    await waitFor(async () => (await state(q, held.id)) === 'completed');
  });

  it('cleans completed, failed, delayed, waiting and prioritized jobs by age and limit', async () => {
    const q = queue();
    const w = worker(q.name, async (job) => {
      if (job.data.fail) throw new Error('no');
    });
    await q.addBulk(Array.from({ length: 9 }, (_, i) => ({ name: 'x', data: { fail: i >= 6 }, opts: { removeOnComplete: false } })));
    await waitFor(async () => (await q.getJobCountByTypes('completed', 'failed')) === 9);
    await w.close();
    await sleep(5);

    expect(await q.clean(60_000, 0, 'completed')).toEqual([]); // all too young
    const oldest = await q.getJobs('completed', 0, 3, true);
    expect(await q.clean(0, 4, 'completed')).toEqual(oldest.map((j) => j.id));
    expect(await q.getJobCounts('completed')).toEqual({ completed: 2 });
    expect((await q.clean(0, 0, 'failed')).length).toBe(3);
    expect(await q.getJobCounts('failed')).toEqual({ failed: 0 });

    await q.add('d1', {}, { delay: 60_000 });
    await q.add('d2', {}, { delay: 60_000 });
    const w0 = await q.add('w0', {});
    await q.add('p1', {}, { priority: 2 });
    await sleep(300);
    const young = await q.add('w-young', {});
    expect(await q.clean(150, 0, 'wait')).toEqual([w0.id]); // the young one is within the grace
    expect((await q.clean(0, 0, 'delayed')).length).toBe(2);
    expect((await q.clean(0, 0, 'prioritized')).length).toBe(1);
    expect(await q.getJobCounts('waiting', 'prioritized', 'delayed')).toEqual({ waiting: 1, prioritized: 0, delayed: 0 });
    // Waiting jobs of a paused queue are still waiting jobs to clean.
    await q.pause();
    expect(await q.clean(0, 0, 'wait')).toEqual([young.id]);
    expect(await q.getJobCounts('paused', 'waiting')).toEqual({ paused: 0, waiting: 0 });
  });

  it('addBulk stores every job as a single add does, however the options change from job to job', async () => {
    // add.lua gets each run of jobs with the same options as one option record (scripts.add):
    // runs of one, runs of several, records repeated after another one, dedup ids and lifo.
    const specs: Array<{ name: string; data: unknown; opts?: Record<string, unknown> }> = [
      { name: 'a', data: 1 }, { name: 'a', data: 2 },
      { name: 'p', data: 3, opts: { priority: 5, attempts: 3 } }, { name: 'p', data: 4, opts: { priority: 5, attempts: 3 } },
      { name: 'a', data: 5 }, { name: 'p', data: 5.1, opts: { priority: 2 } }, { name: 'l', data: 5.2, opts: { lane: 'y' } },
      { name: 'd', data: 5.3, opts: { delay: 30_000 } }, { name: 'k', data: 5.4, opts: { removeOnComplete: true } },
      { name: 'l', data: 6, opts: { lane: 'x', removeOnComplete: 10, removeOnFail: { age: 60 } } },
      { name: 'f', data: 7, opts: { lifo: true } },
      { name: 'd', data: 8, opts: { delay: 60_000 } },
      { name: 'u', data: 9, opts: { deduplication: { id: 'one' } } }, { name: 'u', data: 10, opts: { deduplication: { id: 'two' } } },
      { name: 'c', data: 11, opts: { jobId: 'custom' } },
      { name: 'a', data: 12 },
    ];
    const single = queue();
    const bulk = queue();
    const redis = client();
    cleanup.push(() => redis.quit());
    const one: Job[] = [];
    for (const s of specs) one.push(await single.add(s.name, s.data, s.opts as never));
    const many = await bulk.addBulk(specs as never);
    expect(many.map((j) => j.id)).toEqual(one.map((j) => j.id));
    const stable = (h: Record<string, string>) => {
      const { ts: _ts, sq: _sq, ...rest } = h;
      return rest;
    };
    for (const j of one) {
      const a = await redis.hgetall(`${single.keys.jobBase}${j.id}`);
      const b = await redis.hgetall(`${bulk.keys.jobBase}${j.id}`);
      expect(stable(b)).toEqual(stable(a));
    }
    // and they come out in the same order
    const order = async (q: Queue) => (await q.getJobs(['prioritized', 'waiting'], 0, -1, true)).map((j) => j.id);
    expect(await order(bulk)).toEqual(await order(single));
  });

  it('drain() removes ready jobs, drain(true) delayed ones too, active ones never', async () => {
    const q = queue();
    const hold = gate();
    worker(q.name, async () => hold.promise);
    const active = await q.add('active', {});
    await waitFor(async () => (await state(q, active.id)) === 'active');
    const ready = await q.addBulk([
      { name: 'a', data: {} }, { name: 'b', data: {}, opts: { priority: 3 } }, { name: 'c', data: {}, opts: { lane: 'other' } },
    ]);
    await q.add('d', {}, { delay: 60_000 });
    await q.pause(); // keep the worker from taking the ready jobs
    expect(await q.drain()).toBe(3);
    for (const j of ready) expect(await q.getJob(j.id)).toBeUndefined();
    expect(await q.getJobCounts('paused', 'prioritized', 'delayed', 'active')).toEqual({ paused: 0, prioritized: 0, delayed: 1, active: 1 });
    expect(await q.drain(true)).toBe(1);
    expect(await q.getJobCounts('delayed', 'active')).toEqual({ delayed: 0, active: 1 });
    await q.resume();
    hold.open();
    await waitFor(async () => (await state(q, active.id)) === 'completed');
  });

  it('obliterate() leaves no key; it is refused while jobs are active unless forced', async () => {
    const q = queue();
    const redis = client();
    cleanup.push(() => redis.quit());
    const hold = gate();
    const first = worker(q.name, async (job) => {
      if (job.name === 'held') await hold.promise;
      if (job.name === 'bad') throw new Error('x');
      await job.log('ran');
    });
    await q.lanes.setWeight('heavy', 3);
    await q.addBulk([{ name: 'ok', data: {} }, { name: 'bad', data: {} }, { name: 'ok', data: {}, opts: { lane: 'heavy' } }]);
    await waitFor(async () => (await q.getJobCountByTypes('completed', 'failed')) === 3);
    const held = await q.add('held', {});
    await waitFor(async () => (await state(q, held.id)) === 'active');
    await q.add('later', {}, { delay: 60_000 });

    const before = await snapshot(redis, q.keys);
    await expect(q.obliterate()).rejects.toBeInstanceOf(ActiveJobsError);
    expect(await snapshot(redis, q.keys)).toEqual(before);
    expect(await q.isPaused()).toBe(false);

    hold.open();
    await waitFor(async () => (await state(q, held.id)) === 'completed');
    await q.obliterate({ count: 2 }); // small batches: several calls
    expect(await keyCount(q.name)).toBe(0);

    // Forced, with a job active and its worker still attached. The first worker would finish
    // the next 'held' job at once (its gate is open), so only the second one may claim it.
    await first.close();
    const hold2 = gate();
    worker(q.name, async () => hold2.promise);
    const held2 = await q.add('held', {});
    await waitFor(async () => (await state(q, held2.id)) === 'active');
    await q.obliterate({ force: true });
    expect(await keyCount(q.name)).toBe(0);
    hold2.open(); // its settle finds the job gone and must not recreate anything
    await sleep(200);
    expect(await keyCount(q.name)).toBe(0);
  });

  it('recovers from a flushed script cache (NOSCRIPT) transparently', async () => {
    const server = await startRedisServer();
    const url = server.url as string;
    const q = new Queue(qname(), { connection: url });
    const seen: number[] = [];
    const w = new Worker(q.name, async (job) => void seen.push(job.data.i), { connection: url });
    const admin = client();
    try {
      await q.add('a', { i: 1 });
      await waitFor(() => seen.length === 1);
      const flusher = new Redis(url);
      await flusher.script('FLUSH');
      await q.add('b', { i: 2 }); // add: NOSCRIPT → EVAL; the idle worker's claim as well
      await waitFor(() => seen.length === 2, 5000);
      await flusher.script('FLUSH');
      await q.addBulk([{ name: 'c', data: { i: 3 } }, { name: 'd', data: { i: 4 } }]);
      await waitFor(() => seen.length === 4, 5000);
      expect(seen).toEqual([1, 2, 3, 4]);
      await flusher.quit();
    } finally {
      await w.close();
      await q.close();
      admin.disconnect();
      await server.stop();
    }
  });

  it('shows priority, lane, delay and lifo in job.opts from their hash fields (not in the opts JSON)', async () => {
    const q = queue();
    const redis = client();
    cleanup.push(async () => redis.disconnect());
    const cases: Array<[Record<string, unknown>, string | null]> = [
      // [given options, the opts JSON stored]
      [{ lane: 'x' }, null],
      [{ priority: 4, lifo: true }, null],
      [{ delay: 60_000, lane: 'y', attempts: 2 }, '{"attempts":2}'],
      [{ priority: 1, backoff: { type: 'fixed', delay: 10 }, attempts: 3 }, '{"attempts":3,"backoff":{"type":"fixed","delay":10}}'],
    ];
    for (const [given, stored] of cases) {
      const [bulk] = await q.addBulk([{ name: 'o', data: {}, opts: given }]);
      for (const job of [await q.add('o', {}, given), bulk]) {
        for (const j of [job, (await q.getJob(job.id))!]) expect(j.opts, JSON.stringify(given)).toMatchObject(given);
        const fetched = (await q.getJob(job.id))!;
        expect(fetched.opts.lifo).toBe(given.lifo);
        expect(fetched.opts.delay).toBe(given.delay);
        expect(await redis.hget(q.keys.jobBase + job.id, JobField.opts)).toBe(stored);
      }
    }
  });

  it('shows retention options in job.opts from the hash fields that hold them (stored once)', async () => {
    const q = queue();
    const redis = client();
    cleanup.push(async () => redis.disconnect());
    const cases: Array<[unknown, unknown, unknown]> = [
      // [given removeOnComplete, given removeOnFail, shown removeOnComplete / removeOnFail]
      [true, false, [true, false]],
      [5, 50, [5, 50]],
      [{ age: 60 }, { age: 30, count: 7 }, [{ age: 60 }, { age: 30, count: 7 }]],
      [{ age: 60, count: 1000 }, undefined, [{ age: 60, count: 1000 }, undefined]],
      [1000, 10000, [1000, 10000]],
      [undefined, undefined, [undefined, undefined]], // the default (keep all, BullMQ's) is not stored
    ];
    for (const [done, failed, [showDone, showFailed]] of cases as Array<[unknown, unknown, [unknown, unknown]]>) {
      const opts: Record<string, unknown> = { attempts: 3 };
      if (done !== undefined) opts.removeOnComplete = done;
      if (failed !== undefined) opts.removeOnFail = failed;
      const job = await q.add('r', {}, opts);
      for (const j of [job, (await q.getJob(job.id))!]) {
        expect(j.opts.removeOnComplete, JSON.stringify(opts)).toEqual(showDone);
        expect(j.opts.removeOnFail, JSON.stringify(opts)).toEqual(showFailed);
        expect(j.opts.attempts).toBe(3);
      }
      // The opts JSON in the hash does not repeat them.
      expect(await redis.hget(q.keys.jobBase + job.id, JobField.opts)).toBe('{"attempts":3}');
    }
  });

  it('exposes jobs through getJob, getJobs and getJobCounts with BullMQ field names', async () => {
    const q = queue();
    const t0 = Date.now();
    const a = await q.add('alpha', { x: 1 }, { priority: 2, attempts: 2, lane: 'l1' });
    const b = await q.add('beta', [1, 2]);
    const c = await q.add('gamma', 'text', { delay: 60_000 });
    const got = (await q.getJob(a.id))!;
    expect(got).toMatchObject({ id: a.id, name: 'alpha', data: { x: 1 }, priority: 2, lane: 'l1', attemptsMade: 0, progress: 0 });
    expect(got.opts).toMatchObject({ priority: 2, attempts: 2, lane: 'l1' });
    expect(got.timestamp).toBeGreaterThanOrEqual(t0 - SLACK);
    // returnvalue is null until the job completes, as in BullMQ.
    expect([got.processedOn, got.finishedOn, got.returnvalue, got.failedReason]).toEqual([undefined, undefined, null, undefined]);
    expect(await got.getState()).toBe('prioritized');
    expect(await (await q.getJob(b.id))!.getState()).toBe('waiting');
    expect((await q.getJob(c.id))!.data).toBe('text');
    expect(await q.getJob('nope')).toBeUndefined();
    expect(await q.getJobCounts()).toEqual({ waiting: 1, prioritized: 1, active: 0, delayed: 1, completed: 0, failed: 0, 'waiting-children': 0 });
    expect(await q.getJobCounts('delayed')).toEqual({ delayed: 1 });
    expect((await q.getJobs(['waiting', 'prioritized', 'delayed'])).map((j) => j.id)).toEqual([b.id, a.id, c.id]);

    worker(q.name, async (job) => ({ doubled: job.name }));
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 2);
    const done = (await q.getJob(a.id))!;
    expect(done.returnvalue).toEqual({ doubled: 'alpha' });
    expect(done.attemptsMade).toBe(1);
    expect(done.processedOn!).toBeGreaterThanOrEqual(done.timestamp);
    expect(done.finishedOn!).toBeGreaterThanOrEqual(done.processedOn!);
    const newestFirst = (await q.getJobs('completed')).map((j) => j.id);
    expect(newestFirst).toHaveLength(2);
    expect((await q.getJobs('completed', 0, -1, true)).map((j) => j.id)).toEqual([...newestFirst].reverse());
    expect((await q.getJobs('completed', 0, 0)).map((j) => j.id)).toEqual([newestFirst[0]]);
  });

  it('stores progress, logs and new data from inside a processor', async () => {
    const q = queue();
    const progress: unknown[] = [];
    const w = worker(q.name, async (job) => {
      await job.updateProgress(50);
      await job.updateProgress({ step: 'two' });
      await job.log('first');
      await job.log('second');
      await job.updateData({ ...job.data, touched: true });
      return job.data.touched;
    });
    w.on('progress', (_job: Job, p: unknown) => progress.push(p));
    const job = await q.add('p', { orig: 1 });
    await waitFor(async () => (await state(q, job.id)) === 'completed');
    const j = (await q.getJob(job.id))!;
    expect(j.progress).toEqual({ step: 'two' });
    expect(j.data).toEqual({ orig: 1, touched: true });
    expect(j.returnvalue).toBe(true);
    expect(await j.getLogs()).toEqual(['first', 'second']);
    expect(progress).toEqual([50, { step: 'two' }]);
    const redis = client();
    cleanup.push(() => redis.quit());
    const events = await redis.xrange(q.keys.events, '-', '+');
    const progressed = events.filter(([, f]) => f[1] === 'progress').map(([, f]) => f[f.indexOf('data') + 1]);
    expect(progressed).toEqual(['50', '{"step":"two"}']);
  });

  it('emits active, completed, failed, stalled, drained and closed', async () => {
    const q = queue();
    const redis = client();
    cleanup.push(() => redis.quit());
    // A "ghost" worker claims a job with a 50 ms lease and disappears.
    const ghost = await q.add('ghost', {});
    const claimed = await scripts.claim({ client: redis, keys: q.keys }, { count: 1, leaseMs: 50 });
    expect(claimed.jobs.map((j) => j.id)).toEqual([ghost.id]);
    await q.addBulk([{ name: 'ok', data: {} }, { name: 'bad', data: {} }]);

    const log: string[] = [];
    const w = new Worker(q.name, async (job) => {
      if (job.name === 'bad') throw new Error('nope');
      return job.name;
    }, { connection: redisUrl(), stalledInterval: 50, autorun: false });
    w.on('active', (job: Job, prev: string) => log.push(`active ${job.name} ${prev}`));
    w.on('completed', (job: Job, rv: unknown, prev: string) => log.push(`completed ${job.name} ${String(rv)} ${prev}`));
    w.on('failed', (job: Job, err: Error, prev: string) => log.push(`failed ${job.name} ${err.message} ${prev}`));
    w.on('stalled', (id: string, prev: string) => log.push(`stalled ${id} ${prev}`));
    w.on('drained', () => log.push('drained'));
    w.on('closed', () => log.push('closed'));
    void w.run();
    await waitFor(() => log.filter((l) => l.startsWith('completed') || l.startsWith('failed')).length === 3, 5000);
    await waitFor(() => log.includes('drained'), 2000);
    await w.close();
    expect(log).toContain('active ok waiting');
    expect(log).toContain('completed ok ok active');
    expect(log).toContain('failed bad nope active');
    expect(log).toContain(`stalled ${ghost.id} active`);
    expect(log).toContain('completed ghost ghost active');
    expect(log.indexOf(`stalled ${ghost.id} active`)).toBeLessThan(log.indexOf('completed ghost ghost active'));
    expect(log.filter((l) => l === 'closed')).toEqual(['closed']);
    expect(log.at(-1)).toBe('closed');
  });

  it('close() is idempotent and graceful; close(true) aborts running jobs', async () => {
    const q = queue();
    const hold = gate();
    const ran: string[] = [];
    const w = worker(q.name, async (job) => {
      ran.push(job.name);
      await hold.promise;
      return 'fin';
    });
    let closedEvents = 0;
    w.on('closed', () => closedEvents++);
    const first = await q.add('first', {});
    await waitFor(() => ran.length === 1);
    await q.add('second', {});
    const c1 = w.close();
    const c2 = w.close();
    expect(c2).toBe(c1);
    let closed = false;
    void c1.then(() => (closed = true));
    await sleep(100);
    expect(closed).toBe(false); // waits for the running job
    hold.open();
    await c1;
    await w.close();
    expect(closedEvents).toBe(1);
    expect(w.isRunning()).toBe(false);
    expect(ran).toEqual(['first']); // nothing new is claimed while closing
    expect(await state(q, first.id)).toBe('completed');
    expect(await q.getJobCounts('waiting', 'active')).toEqual({ waiting: 1, active: 0 });

    let signal: AbortSignal | undefined;
    const w2 = worker(q.name, async (_job, _token, s) => {
      signal = s;
      await new Promise((r) => s.addEventListener('abort', r));
    });
    await waitFor(() => signal !== undefined);
    expect(signal!.aborted).toBe(false);
    await w2.close(true);
    expect(signal!.aborted).toBe(true);

    await q.close();
    await q.close();
    await expect(q.add('x', {})).rejects.toBeInstanceOf(ClosedError);
  });

  it('applies removeOnComplete / removeOnFail: true, a count, { age, count }, and the defaults', async () => {
    const q = queue();
    const k = keysOf(q.name);
    const redis = client();
    cleanup.push(() => redis.quit());
    worker(q.name, async (job) => {
      if (job.data.fail) throw new Error('x');
    }, { concurrency: 50 });
    const settled = () => waitFor(async () => (await redis.hget(k.meta, MetaField.ready)) === '0' && (await activeJobs(redis, k)) === 0);
    const run = async (jobs: Array<{ fail?: boolean; opts?: object }>) => {
      const added = await q.addBulk(jobs.map((j) => ({ name: 'r', data: { fail: !!j.fail }, opts: j.opts })));
      await settled();
      return added.map((j) => j.id);
    };

    // Defaults as documented are not stored with each job (lib/retention.lua applies them to an
    // absent field); anything else is.
    const [dflt, custom] = await q.addBulk([
      { name: 'd', data: {}, opts: { delay: 60_000 } },
      { name: 'd', data: {}, opts: { delay: 60_000, removeOnComplete: 5, removeOnFail: { age: 2, count: 7 } } },
    ]);
    expect(await redis.hmget(k.jobBase + dflt.id, JobField.keepCompletedCount, JobField.keepCompletedAge, JobField.keepFailedCount, JobField.keepFailedAge)).toEqual([null, null, null, null]);
    expect(await redis.hmget(k.jobBase + custom.id, JobField.keepCompletedCount, JobField.keepCompletedAge, JobField.keepFailedCount, JobField.keepFailedAge)).toEqual(['5', null, '7', '2000']);
    await custom.remove();
    await dflt.remove();

    const [gone] = await run([{ opts: { removeOnComplete: true } }]);
    const [goneF] = await run([{ fail: true, opts: { removeOnFail: true } }]);
    for (const id of [gone, goneF]) expect(await redis.exists(k.jobBase + id)).toBe(0);
    expect(await q.getJobCounts('completed', 'failed')).toEqual({ completed: 0, failed: 0 });

    const counted = await run(Array.from({ length: 6 }, () => ({ opts: { removeOnComplete: 2 } })));
    expect((await q.getJobs('completed')).length).toBe(2);
    expect(await redis.exists(k.jobBase + counted[0])).toBe(0);
    await q.clean(0, 0, 'completed');

    const aged = await run(Array.from({ length: 3 }, () => ({ fail: true, opts: { removeOnFail: { age: 1, count: 10 } } })));
    await sleep(1100);
    const fresh = await run([{ fail: true, opts: { removeOnFail: { age: 1, count: 10 } } }]);
    expect((await q.getJobs('failed')).map((j) => j.id)).toEqual(fresh);
    for (const id of aged) expect(await redis.exists(k.jobBase + id)).toBe(0);
    await run(Array.from({ length: 12 }, () => ({ fail: true, opts: { removeOnFail: { age: 3600, count: 10 } } })));
    expect(await q.getJobCounts('failed')).toEqual({ failed: 10 });
    await q.clean(0, 0, 'failed');

    // The default keeps every failed job (BullMQ's default; echomq kept the newest 10,000 before).
    for (let b = 0; b < 11; b++) await run(Array.from({ length: b === 10 ? 5 : 1000 }, () => ({ fail: true })));
    expect(await q.getJobCounts('failed')).toEqual({ failed: 10_005 });
  });

  it('returns the existing job for an existing jobId and changes nothing else', async () => {
    const q = queue();
    const redis = client();
    cleanup.push(() => redis.quit());
    const first = await q.add('orig', { v: 1 }, { jobId: 'order-7', priority: 1 });
    const withoutEvents = async () => {
      const s = await snapshot(redis, q.keys);
      s.delete(q.keys.events);
      return s;
    };
    const before = await withoutEvents();
    const eventsBefore = await redis.xlen(q.keys.events);
    const again = await q.add('other', { v: 2 }, { jobId: 'order-7', priority: 9, delay: 1000 });
    expect([again.id, again.name, again.data, again.priority]).toEqual([first.id, 'orig', { v: 1 }, 1]);
    const bulk = await q.addBulk([{ name: 'x', data: {}, opts: { jobId: 'order-7' } }, { name: 'y', data: {}, opts: { jobId: 'order-7' } }]);
    expect(bulk.map((j) => [j.id, j.name])).toEqual([['order-7', 'orig'], ['order-7', 'orig']]);
    expect(await withoutEvents()).toEqual(before);
    // The only trace is one 'duplicated' event per refused add, if events are kept at all.
    const added = (await redis.xrange(q.keys.events, '-', '+')).slice(eventsBefore).map(([, f]) => f[1]);
    expect(added.every((e) => e === 'duplicated')).toBe(true);

    // A finished job still holds its id; a removed one frees it.
    const ran: string[] = [];
    worker(q.name, async (job) => void ran.push(job.name));
    await waitFor(async () => (await state(q, 'order-7')) === 'completed');
    expect((await q.add('third', {}, { jobId: 'order-7' })).name).toBe('orig');
    await sleep(50);
    expect(ran).toEqual(['orig']);
    await (await q.getJob('order-7'))!.remove();
    expect((await q.add('fourth', {}, { jobId: 'order-7' })).name).toBe('fourth');
    await waitFor(() => ran.length === 2);
    expect(ran).toEqual(['orig', 'fourth']);
  });
});
