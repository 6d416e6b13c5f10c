// BullMQ's QueueGetters side by side: counts, listings (ids, order, Redis-style ranges, asc both
// ways), job state, logs, limits, meta, deduplication. Each scenario runs on bullmq and on echomq
// (test/compat/harness.ts) and the observations must be equal, except where a difference is
// deliberate and asserted as such.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';

/** BullMQ 6's JobType type leaves out `paused`, which its getters still take (always empty). */
const PAUSED = 'paused' as 'wait';

afterAll(closeConnections);

/** Windows to try on every listing: plain, inside, from the end, past the end, empty, reversed. */
const WINDOWS: Array<[number, number]> = [[0, -1], [1, 3], [-3, -1], [-2, -2], [4, 100], [10, 20], [-100, 1], [3, 1], [-1, 0], [0, 0]];

/** A queue whose jobs are named j0…jN, so ids (generated differently) never enter a comparison. */
async function listings(q: { getJobs: (...args: any[]) => Promise<Array<{ name: string }>> }, types: unknown) {
  const out: Record<string, string[]> = {};
  for (const asc of [true, false]) {
    for (const [s, e] of WINDOWS) out[`${s},${e},${asc}`] = (await q.getJobs(types, s, e, asc)).map((j) => j.name);
  }
  return out;
}

describe('counts (BullMQ QueueGetters)', () => {
  it('getJobCounts, the …Count getters, count() and getCountsPerPriority after adds, delays, priorities and a pause', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      for (let i = 0; i < 4; i++) await q.add(`w${i}`, { i });
      await q.add('p3', {}, { priority: 3 });
      await q.add('p1', {}, { priority: 1 });
      await q.add('p1b', {}, { priority: 1 });
      await q.add('d1', {}, { delay: 60_000 });
      await q.add('d2', {}, { delay: 120_000 });
      const seen = async () => ({
        all: await q.getJobCounts(),
        typed: await q.getJobCounts('wait', 'waiting', PAUSED, 'repeat', 'waiting-children', 'prioritized', 'active', 'wait'),
        byTypes: await q.getJobCountByTypes('wait', 'waiting'),
        count: await q.count(),
        each: [
          await q.getWaitingCount(), await q.getActiveCount(), await q.getDelayedCount(), await q.getPrioritizedCount(),
          await q.getCompletedCount(), await q.getFailedCount(), await q.getWaitingChildrenCount(),
        ],
        delayedBefore: [await q.getDelayedCount(Date.now() + 90_000), await q.getDelayedCount(0), await q.getDelayedCount(Date.now() + 600_000)],
        perPriority: await q.getCountsPerPriority([0, 1, 3, 5, 1]),
        keys: Object.keys(await q.getJobCounts()),
      });
      const running = await seen();
      await q.pause();
      const paused = await seen();
      const err = await q.getDelayedCount(2.5).catch((e: Error) => e.message);
      await q.obliterate({ force: true });
      await q.close();
      return { running, paused, err: String(err).startsWith('timestamp must be a safe integer in milliseconds') };
    }, 'counts');
    expect(r.echomq).toEqual(r.bullmq);
    // BullMQ 6 keeps a paused queue's jobs waiting; its `paused` type is always 0.
    expect(r.echomq.paused.all).toMatchObject({ waiting: 4, prioritized: 3, delayed: 2 });
    expect(r.echomq.paused.typed.paused).toBe(0);
    expect(r.echomq.paused.perPriority).toEqual({ 0: 4, 1: 2, 3: 1, 5: 0 });
  });
});

describe('listings (BullMQ QueueGetters)', () => {
  it('waiting: order and windows both ways (asc=false, the default, lists the last to be served first)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      for (let i = 0; i < 6; i++) await q.add(`j${i}`, { i });
      const idToName = new Map((await q.getJobs('waiting')).map((j) => [j.id!, j.name]));
      const names = (ids: string[]) => ids.map((id) => idToName.get(id) ?? `?${id}`);
      const out = {
        byDefault: (await q.getJobs('waiting')).map((j) => j.name),
        wait: await listings(q, 'wait'),
        waiting: await listings(q, ['waiting']),
        getWaiting: [(await q.getWaiting()).map((j) => j.name), (await q.getWaiting(1, 2)).map((j) => j.name), (await q.getWaiting(-2)).map((j) => j.name)],
        ranges: [names(await q.getRanges(['waiting'])), names(await q.getRanges(['waiting'], 0, -1, true)), names(await q.getRanges(['wait', 'waiting'], -2, -1))],
        dupTypes: (await q.getJobs(['wait', 'waiting'])).map((j) => j.name),
        pausedType: (await q.getJobs(PAUSED)).map((j) => j.name),
      };
      await q.pause(); // a paused queue's jobs are still listed as waiting
      const whilePaused = { waiting: (await q.getWaiting()).map((j) => j.name), paused: (await q.getJobs([PAUSED])).length };
      await q.obliterate({ force: true });
      await q.close();
      return { ...out, whilePaused };
    }, 'waiting');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.byDefault).toEqual(['j5', 'j4', 'j3', 'j2', 'j1', 'j0']);
  });

  it('lifo and promoted jobs are listed where they will be served', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', {});
      await q.add('b', {});
      await q.add('L1', {}, { lifo: true });
      await q.add('c', {});
      await q.add('L2', {}, { lifo: true });
      const d = await q.add('promoted', {}, { delay: 60_000 });
      await q.add('after', {});
      await d.promote(); // ready from now on: behind the jobs already waiting
      const out = { asc: (await q.getWaiting()).map((j) => j.name), desc: (await q.getJobs('waiting')).map((j) => j.name) };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'lifo');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.asc).toEqual(['L2', 'L1', 'a', 'b', 'c', 'after', 'promoted']);
  });

  it('prioritized, delayed and several types at once: order and windows both ways', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const prios = [3, 1, 2, 1, 5, 2];
      for (let i = 0; i < prios.length; i++) await q.add(`j${i}`, {}, { priority: prios[i] });
      const delays = [30_000, 10_000, 20_000, 50_000, 40_000, 60_000];
      for (let i = 0; i < delays.length; i++) await q.add(`d${i}`, {}, { delay: delays[i] });
      await q.add('w0', {});
      await q.add('w1', {});
      const out = {
        prioritized: await listings(q, 'prioritized'),
        getPrioritized: (await q.getPrioritized()).map((j) => j.name),
        delayed: await listings(q, ['delayed']),
        getDelayed: [(await q.getDelayed()).map((j) => j.name), (await q.getDelayed(-2, -1)).map((j) => j.name)],
        several: (await q.getJobs(['waiting', 'prioritized', 'delayed', 'wait'], 0, 1)).map((j) => j.name),
        severalAsc: (await q.getJobs(['delayed', 'waiting', 'prioritized'], -1, -1, true)).map((j) => j.name),
        everything: (await q.getJobs()).map((j) => j.name).sort(),
        rangesCount: (await q.getRanges(['prioritized', 'delayed', 'waiting'], 0, -1)).length,
      };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'prio');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.getPrioritized).toEqual(['j1', 'j3', 'j2', 'j5', 'j0', 'j4']);
  });

  it('active, completed and failed; getJobState of every state and of a missing job; logs', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      const release: Array<() => void> = [];
      const worker = new lib.Worker(
        name,
        async (job) => {
          if (job.name.startsWith('bad')) throw new Error('boom');
          if (job.name.startsWith('hold')) await new Promise<void>((res) => release.push(res));
        },
        { connection: connection.duplicate(), concurrency: 2 }, // the two held jobs fill it: later adds stay put
      );
      const ids: Record<string, string> = {};
      for (const n of ['ok0', 'bad0', 'ok1', 'bad1', 'ok2']) {
        const job = await q.add(n, {});
        ids[n] = job.id!;
        // One at a time, so finish order (and the finished sets' order) is the add order.
        await new Promise<void>((res) => {
          const t = setInterval(async () => {
            const st = await q.getJobState(job.id!);
            if (st === 'completed' || st === 'failed') (clearInterval(t), res());
          }, 10);
        });
      }
      for (const n of ['hold0', 'hold1']) {
        ids[n] = (await q.add(n, {})).id!;
        while ((await q.getJobState(ids[n])) !== 'active') await new Promise((res) => setTimeout(res, 10));
        await new Promise((res) => setTimeout(res, 5)); // hold1 starts in a later millisecond
      }
      const more = { w: await q.add('w', {}, { priority: 0 }), p: await q.add('p', {}, { priority: 4 }), d: await q.add('d', {}, { delay: 60_000 }) };
      const job = (await q.getJob(ids.ok0))!;
      for (let i = 0; i < 5; i++) await job.log(`line ${i}`);
      const out = {
        states: {
          completed: await q.getJobState(ids.ok0), failed: await q.getJobState(ids.bad0), active: await q.getJobState(ids.hold0),
          missing: await q.getJobState('no-such-job'),
        },
        completed: await listings(q, 'completed'),
        failed: (await q.getFailed()).map((j) => j.name),
        failedAsc: (await q.getJobs('failed', 0, -1, true)).map((j) => j.name),
        active: [(await q.getActive()).map((j) => j.name), (await q.getJobs('active')).map((j) => j.name), (await q.getJobs('active', -1)).map((j) => j.name)],
        activeCount: await q.getActiveCount(),
        getCompleted: [(await q.getCompleted(0, 1)).map((j) => j.name), (await q.getCompleted(-1)).map((j) => j.name)],
        logs: [
          await q.getJobLogs(ids.ok0), await q.getJobLogs(ids.ok0, 1, 2), await q.getJobLogs(ids.ok0, 0, 1, false),
          await q.getJobLogs(ids.ok0, -2, -1), await q.getJobLogs(ids.ok0, -2, -1, false), await q.getJobLogs('no-such-job'),
        ],
        moreStates: [await q.getJobState(more.w.id!), await q.getJobState(more.p.id!), await q.getJobState(more.d.id!)],
        maxed: [await q.isMaxed(), (await q.setGlobalConcurrency(2), await q.isMaxed()), (await q.setGlobalConcurrency(3), await q.isMaxed())],
      };
      for (const r of release) r();
      await worker.close();
      await q.obliterate({ force: true });
      await q.close();
      void side;
      return out;
    }, 'finished');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.moreStates).toEqual(['waiting', 'prioritized', 'delayed']);
    expect(r.echomq.maxed).toEqual([false, true, false]);
  });
});

describe('getRateLimitTtl with a rate window in use (BullMQ QueueGetters)', () => {
  it('gives the window\'s remaining ms once maxJobs jobs started in it, else 0', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const worker = new lib.Worker(name, async () => {}, { connection: connection.duplicate(), limiter: { max: 1, duration: 5000 } });
      await q.add('a', {});
      await q.add('b', {});
      while ((await q.getCompletedCount()) < 1) await new Promise((res) => setTimeout(res, 10));
      const [one, five, dflt] = [await q.getRateLimitTtl(1), await q.getRateLimitTtl(5), await q.getRateLimitTtl()];
      await worker.close();
      await q.obliterate({ force: true });
      await q.close();
      return { one: one > 0 && one <= 5000, five, dflt: dflt > 0 && dflt <= 5000 };
    }, 'ratettl');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ one: true, five: 0, dflt: true });
  });
});

describe('repeat and empty type lists (BullMQ QueueGetters)', () => {
  it('`repeat` counts and ranges job schedulers and lists no jobs; getRanges([]) is empty', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.upsertJobScheduler('s-b', { every: 120_000 }, { name: 'tock' });
      await q.upsertJobScheduler('s-a', { every: 60_000 }, { name: 'tick' });
      const out = {
        count: await q.getJobCounts('repeat'),
        ranges: (await q.getRanges(['repeat'], 0, -1, true)).sort(),
        jobs: (await q.getJobs('repeat')).length,
        delayedOrWaiting: (await q.getJobs(['repeat', 'delayed', 'waiting'])).map((j) => j.name).sort(),
        empty: await q.getRanges([]),
      };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'repeat');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.count).toEqual({ repeat: 2 });
  });
});

describe('limits, meta and deduplication (BullMQ QueueGetters)', () => {
  it('getGlobalConcurrency, getGlobalRateLimit, getRateLimitTtl, isMaxed, getMeta, getVersion, metaValues, getDeduplicationJobId', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.waitUntilReady();
      const before = {
        conc: await q.getGlobalConcurrency(), rate: await q.getGlobalRateLimit(),
        ttl: [await q.getRateLimitTtl(), await q.getRateLimitTtl(3)], maxed: await q.isMaxed(),
        dedup: [await q.getDeduplicationJobId('nothing'), await q.getDebounceJobId('nothing')],
      };
      await q.setGlobalConcurrency(2);
      await q.setGlobalRateLimit(5, 1000);
      const held = await q.add('held', {}, { deduplication: { id: 'dd' } });
      await q.pause();
      const meta = await q.getMeta();
      const after = {
        conc: await q.getGlobalConcurrency(), rate: await q.getGlobalRateLimit(), ttl: await q.getRateLimitTtl(), maxed: await q.isMaxed(),
        dedup: (await q.getDeduplicationJobId('dd')) === held.id,
        meta: { ...meta, version: meta.version?.split(':')[0] },
        metaValues: { ...q.metaValues, version: String(q.metaValues.version).split(':')[0] },
      };
      const version = await q.getVersion();
      await q.obliterate({ force: true });
      await q.close();
      return { before, after, version };
    }, 'limits');
    // Deliberate: the version names the library that answers.
    expect(r.bullmq.version).toMatch(/^bullmq:6\./);
    expect(r.echomq.version).toMatch(/^echomq:\d+\.\d+\.\d+/);
    expect(r.bullmq.after.meta.version).toBe('bullmq');
    expect(r.echomq.after.meta.version).toBe('echomq');
    expect(r.echomq.after.metaValues.version).toBe('echomq');
    const same = (x: typeof r.bullmq) => ({ ...x, version: undefined, after: { ...x.after, meta: { ...x.after.meta, version: undefined }, metaValues: { ...x.after.metaValues, version: undefined } } });
    expect(same(r.echomq)).toEqual(same(r.bullmq));
    expect(r.echomq.before.dedup).toEqual([null, null]);
  });
});
