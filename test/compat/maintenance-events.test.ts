// Queue instance events (BullMQ's QueueListener) and the small Queue commands side by side
// with BullMQ: remove, global limits, rate limit keys, deduplication keys, job logs and
// progress, pause/resume; plus echomq's argument checks (BullMQ has none: §7 alone applies).
import { afterAll, describe, expect, it, vi } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';
import { byName, recordEvents, settlingWorker } from './maintenance-helpers.js';
import { client, keysOf, qname, redisUrl, snapshot, waitFor } from '../helpers.js';
import { Queue, ValidationError } from '../../src/index.js';
import { scripts } from '../../src/scripts/index.js';

afterAll(closeConnections);

describe('Queue instance events', () => {
  it('waiting (from add only), paused, resumed, progress, removed, cleaned, in order', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const seen: unknown[][] = [];
      queue.on('waiting', (job) => seen.push(['waiting', job.name, typeof job.id]));
      queue.on('paused', () => seen.push(['paused']));
      queue.on('resumed', () => seen.push(['resumed']));
      queue.on('progress', (jobId, progress) => seen.push(['progress', typeof jobId, progress]));
      queue.on('removed', (jobId) => seen.push(['removed', jobId]));
      queue.on('cleaned', (jobs, type) => seen.push(['cleaned', jobs.length, type]));
      const a = await queue.add('a', { x: 1 });
      await queue.addBulk([{ name: 'b', data: {} }]);
      await queue.pause();
      await queue.resume();
      await queue.updateJobProgress(a.id!, { pct: 50 });
      await queue.remove('missing');
      await queue.clean(0, 0, 'wait');
      await queue.obliterate();
      await queue.close();
      return seen;
    }, 'qev');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual([
      ['waiting', 'a', 'string'], ['paused'], ['resumed'], ['progress', 'string', { pct: 50 }],
      ['removed', 'missing'], ['cleaned', 2, 'wait'], ['paused'],
    ]);
  });

  // echomq only: BullMQ's Queue reports the same ('connect ECONNREFUSED …' to its 'error'
  // listeners, printed when there are none), but its disconnect() and close() never resolve
  // while the server is unreachable, so it cannot be closed inside a test.
  it("connection errors reach 'error' listeners, or are printed when nobody listens", async () => {
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const quiet = new Queue(qname('qconn'), { connection: { host: '127.0.0.1', port: 1, maxRetriesPerRequest: null } });
      const heard = new Queue(qname('qconn'), { connection: { host: '127.0.0.1', port: 1, maxRetriesPerRequest: null } });
      const errors: string[] = [];
      heard.on('error', (err) => errors.push(err.message));
      await waitFor(() => errors.length > 0 && printed.mock.calls.length > 0, 5000, 'connection errors');
      expect(errors[0]).toContain('ECONNREFUSED');
      expect(String(printed.mock.calls[0][0])).toContain('ECONNREFUSED');
      for (const q of [quiet, heard]) {
        await q.disconnect();
        await q.close();
      }
    } finally {
      printed.mockRestore();
    }
  });

  it("a listener that throws becomes an 'error' event", async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const errors: string[] = [];
      queue.on('error', (err) => errors.push(err.message));
      queue.on('paused', () => {
        throw new Error('listener broke');
      });
      await queue.pause();
      await queue.obliterate();
      await queue.close();
      return errors;
    }, 'qerr');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual(['listener broke', 'listener broke']);
  });

  it('pause and resume also write the paused/resumed stream events QueueEvents reads', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const events = await recordEvents(lib, name, ['paused', 'resumed', 'progress', 'removed']);
      const job = await queue.add('a', {});
      const names = new Map([[job.id!, 'a']]);
      await queue.pause();
      await queue.updateJobProgress(job.id!, 7);
      await queue.remove(job.id!);
      await queue.resume();
      const log = byName(await events.until('resumed'), names, ['jobId', 'data', 'prev']);
      await events.close();
      await queue.obliterate();
      await queue.close();
      return log;
    }, 'qstream');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual([['paused', {}], ['progress', { jobId: 'a', data: 7 }], ['removed', { jobId: 'a', prev: 'wait' }]]);
  });
});

describe('remove', () => {
  it('returns 1 (also for a missing job) or 0 for an active one, and removes children unless told not to', async () => {
    let release!: () => void;
    const r = await sideBySide(async (lib, name, connection) => {
      const gate = new Promise<void>((res) => (release = res));
      const queue = new lib.Queue(name, { connection });
      const flows = new lib.FlowProducer({ connection });
      const worker = settlingWorker(lib, name, gate);
      const held = await queue.add('hold', {});
      await waitFor(async () => (await queue.getJobCountByTypes('active')) === 1, 10000, 'active');
      await worker.pause(true);
      const out: Record<string, unknown> = { missing: await queue.remove('nope'), active: await queue.remove(held.id!) };
      const t1 = await flows.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name }] });
      out.parent = await queue.remove(t1.job.id!);
      out.afterParent = await queue.getJobCounts('waiting', 'waiting-children');
      const t2 = await flows.add({ name: 'p2', queueName: name, children: [{ name: 'c2', queueName: name }] });
      out.parentOnly = await queue.remove(t2.job.id!, { removeChildren: false });
      out.afterParentOnly = (await queue.getJobs(['waiting'])).map((j) => j.name);
      const other = new lib.Queue(`${name}-b`, { connection });
      const t3 = await flows.add({ name: 'p3', queueName: name, children: [{ name: 'x', queueName: `${name}-b` }] });
      out.crossQueue = await queue.remove(t3.job.id!);
      out.otherAfter = await other.getJobCounts('waiting');
      await other.obliterate();
      await other.close();
      release();
      await worker.close();
      await queue.obliterate({ force: true });
      await Promise.all([queue.close(), flows.close()]);
      return out;
    }, 'rm');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({
      missing: 1, active: 0, parent: 1, afterParent: { waiting: 0, 'waiting-children': 0 }, parentOnly: 1, afterParentOnly: ['c2'],
      crossQueue: 1, otherAfter: { waiting: 0 },
    });
  });

  it("refuses the job of a scheduler's next slot with BullMQ's text", async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const job = await queue.upsertJobScheduler('s1', { every: 60_000 });
      const err = await queue.remove(job!.id!).then(() => '', (e: Error) => e.message);
      await queue.obliterate();
      await queue.close();
      return { err: err.replace(job!.id!, '<id>'), id: job!.id!.startsWith('repeat:s1:') };
    }, 'rmsched');
    const bull = 'Job <id> belongs to a job scheduler and cannot be removed directly. removeJob';
    expect(r.bullmq).toEqual({ err: bull, id: true });
    expect(r.echomq.err.startsWith(bull)).toBe(true);
  });
});

describe('global limits, rate limit and deduplication keys: BullMQ return values', () => {
  it('setGlobalConcurrency, setGlobalRateLimit, their removals, removeRateLimitKey, removeDeduplicationKey', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const out = {
        conc: [await queue.setGlobalConcurrency(3), await queue.setGlobalConcurrency(4), await queue.removeGlobalConcurrency(), await queue.removeGlobalConcurrency()],
        rate: [await queue.setGlobalRateLimit(3, 1000), await queue.setGlobalRateLimit(4, 1000), await queue.removeGlobalRateLimit(), await queue.removeGlobalRateLimit()],
        rateKey: [await queue.removeRateLimitKey(), await queue.rateLimit(60_000), await queue.removeRateLimitKey()],
        dedup: [await queue.removeDeduplicationKey('none')] as unknown[],
      };
      await queue.add('d', {}, { deduplication: { id: 'dd' } });
      out.dedup.push(await queue.removeDeduplicationKey('dd'), await queue.removeDebounceKey('dd'));
      await queue.obliterate();
      await queue.close();
      return out;
    }, 'limits');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ conc: [1, 0, 1, 0], rate: [2, 0, 2, 0], rateKey: [0, undefined, 1], dedup: [0, 1, 0] });
  });

  // BullMQ's workers look at the rate-limit key only when a limiter is set (worker option or
  // global rate limit), so the scenario sets one; echomq's claim honours the block without one.
  it('rateLimit(ms) holds every worker; removeRateLimitKey ends the block', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const queue = new lib.Queue(name, { connection });
      await queue.setGlobalRateLimit(1000, 1000);
      await queue.rateLimit(1500);
      const worker = settlingWorker(lib, name);
      await queue.add('a', {});
      await new Promise((res) => setTimeout(res, 300)); // a worker that could claim would have
      const held = await queue.getJobCounts('waiting', 'completed');
      const removed = await queue.removeRateLimitKey();
      // BullMQ's worker sleeps out the block it saw; echomq's is woken by the next add.
      await queue.add('b', {});
      await waitFor(async () => (await queue.getJobCountByTypes("completed")) === 2, 10000, `completed ${side}`);
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      return { held, removed };
    }, 'ratelimit');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ held: { waiting: 1, completed: 0 }, removed: 1 });
  });
});

describe('job logs and progress through the Queue', () => {
  it('addJobLog returns the lines kept; missing jobs get BullMQ error texts', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const job = await queue.add('a', {});
      const counts = [await queue.addJobLog(job.id!, 'l1'), await queue.addJobLog(job.id!, 'l2'), await queue.addJobLog(job.id!, 'l3', 2)];
      const errs = [
        await queue.addJobLog('missing', 'x').then(() => '', (e: Error) => e.message),
        await queue.updateJobProgress('missing', 1).then(() => '', (e: Error) => e.message),
      ];
      await queue.obliterate();
      await queue.close();
      return { counts, errs };
    }, 'logs');
    expect(r.bullmq.errs).toEqual(['Missing key for job missing. addLog', 'Missing key for job missing. updateProgress']);
    r.echomq.errs.forEach((m, i) => expect(m.startsWith(r.bullmq.errs[i])).toBe(true));
    expect({ ...r.echomq, errs: [] }).toEqual({ ...r.bullmq, errs: [] });
    expect(r.echomq.counts).toEqual([1, 2, 2]);
  });
});

describe('clean active (echomq): only jobs nobody holds', () => {
  it('removes an active job whose lease ran out and frees its lane slot', async () => {
    const q = new Queue(qname('cleanact'), { connection: redisUrl() });
    const redis = client();
    const job = await q.add('a', {}, { lane: 'l1' });
    const ctx = { client: redis, keys: q.keys };
    await scripts.claim(ctx, { count: 1, leaseMs: 50 }); // a worker that died holding it
    expect(await q.clean(0, 0, 'active')).toEqual([]); // the lease still runs
    await waitFor(async () => Number((await redis.zscore(q.keys.active, job.id)) ?? 0) < (await redisMs(redis)), 2000, 'lease expiry');
    expect(await q.clean(0, 0, 'active')).toEqual([job.id]);
    expect(await q.getJobCounts('active')).toEqual({ active: 0 });
    expect(await redis.hget(q.keys.lactive, 'l1')).toBeNull();
    await q.obliterate();
    await q.close();
    redis.disconnect();
  });
});

async function redisMs(redis: ReturnType<typeof client>): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

describe('argument checks (echomq): a ValidationError naming the field, and Redis unchanged', () => {
  it('refuses bad arguments before writing anything', async () => {
    const q = new Queue(qname('maintval'), { connection: redisUrl() });
    const redis = client();
    const job = await q.add('a', {});
    await q.addJobLog(job.id, 'line');
    const before = await snapshot(redis, keysOf(q.name));
    const cases: Array<[string, () => Promise<unknown>]> = [
      ['state', () => q.retryJobs({ state: 'waiting' as never })],
      ['count', () => q.retryJobs({ count: 0 })],
      ['timestamp', () => q.retryJobs({ timestamp: -1 })],
      ['count', () => q.promoteJobs({ count: 1.5 })],
      ['grace', () => q.clean(-1, 0)],
      ['limit', () => q.clean(0, -1)],
      ['type', () => q.clean(0, 0, 'bogus' as never)],
      ['jobId', () => q.remove('')],
      ['removeChildren', () => q.remove(job.id, { removeChildren: 'yes' as never })],
      ['count', () => q.obliterate({ count: 0 })],
      ['force', () => q.obliterate({ force: 1 as never })],
      ['maxLength', () => q.trimEvents(-5)],
      ['expireTimeMs', () => q.rateLimit(0)],
      ['concurrency', () => q.setGlobalConcurrency(0)],
      ['max', () => q.setGlobalRateLimit(0, 1000)],
      ['count', () => q.removeOrphanedJobs(0)],
      ['limit', () => q.removeOrphanedJobs(10, -1)],
      ['logRow', () => q.addJobLog(job.id, 5 as never)],
      ['keepLogs', () => q.addJobLog(job.id, 'x', -1)],
      ['progress', () => q.updateJobProgress(job.id, undefined as never)],
      ['delayed', () => q.drain('yes' as never)],
    ];
    for (const [field, call] of cases) {
      const err = await call().then(() => undefined, (e: unknown) => e);
      expect(err, field).toBeInstanceOf(ValidationError);
      expect((err as ValidationError).field, field).toBe(field);
    }
    expect(await snapshot(redis, keysOf(q.name))).toEqual(before);
    await q.obliterate();
    await q.close();
    redis.disconnect();
  });
});
