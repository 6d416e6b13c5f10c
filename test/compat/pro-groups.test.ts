/**
 * BullMQ Pro's groups API (docs.bullmq.io/bullmq-pro/groups and its pages: concurrency, local
 * group concurrency, rate limiting, local group rate limit, pausing, prioritized, max group
 * size, getters) run on echomq's lanes with only the import changed. Pro cannot be installed
 * here, so there is no side-by-side run: each test is a program written from Pro's documented
 * examples and asserts what those pages document. Real workers on a real Redis.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  FlowProducerPro, GroupMaxSizeExceededError, JobPro, QueuePro, WorkerPro,
  FlowProducer, Job, Queue, ValidationError, Worker, type WorkerGroupOptions,
} from '../../src/index.js';
import { client, qname, redisUrl, sleep, waitFor } from '../helpers.js';
import { assertLaneInvariant } from '../lane-invariant.js';

const connection = redisUrl();
const c = client();
const queues: Queue[] = [];
const workers: Worker[] = [];

function queue(label: string): QueuePro {
  const q = new QueuePro(qname(label), { connection });
  queues.push(q);
  return q;
}

function worker(q: Queue, fn: (job: JobPro) => Promise<unknown> | unknown, opts: { concurrency?: number; group?: WorkerGroupOptions } = {}): WorkerPro {
  const w = new WorkerPro(q.name, fn, { connection, concurrency: opts.concurrency ?? 1, group: opts.group });
  w.on('error', () => {});
  workers.push(w);
  return w;
}

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close()));
  for (const q of queues.splice(0)) {
    await q.obliterate({ force: true }).catch(() => {});
    await q.close();
  }
});
afterAll(async () => {
  await c.quit();
});

/** Per-group runs in flight now and the most seen at once, counted by the processors. */
class GroupTracker {
  readonly running = new Map<string, number>();
  readonly max = new Map<string, number>();
  readonly done: string[] = [];
  enter(g: string): void {
    const n = (this.running.get(g) ?? 0) + 1;
    this.running.set(g, n);
    if (n > (this.max.get(g) ?? 0)) this.max.set(g, n);
  }
  leave(g: string): void {
    this.running.set(g, this.running.get(g)! - 1);
    this.done.push(g);
  }
}

const groupOf = (job: Job): string => (job.opts as { group?: { id: string } }).group?.id ?? 'none';

describe('Pro names', () => {
  it('QueuePro, WorkerPro, JobPro and FlowProducerPro are echomq\'s classes', () => {
    expect(QueuePro).toBe(Queue);
    expect(WorkerPro).toBe(Worker);
    expect(JobPro).toBe(Job);
    expect(FlowProducerPro).toBe(FlowProducer);
  });
});

describe('the group job option', () => {
  it('puts the job in the group\'s lane and reads back as given', async () => {
    const q = queue('opt');
    const job = await q.add('paint', { foo: 'bar' }, { group: { id: 'groupId', priority: 10 } });
    expect(job.opts.group).toEqual({ id: 'groupId', priority: 10 });
    expect(job.lane).toBe('groupId');
    expect(job.priority).toBe(10);
    const read = (await q.getJob(job.id))!;
    expect(read.opts.group).toEqual({ id: 'groupId', priority: 10 });
    expect(read.lane).toBe('groupId');
    expect(read.priority).toBe(10);
  });

  it('refuses a bad group and a lane that names another group, writing nothing', async () => {
    const q = queue('optbad');
    await expect(q.add('x', {}, { group: { id: '' } })).rejects.toThrow(ValidationError);
    await expect(q.add('x', {}, { group: { id: 7 as unknown as string } })).rejects.toThrow(/group\.id/);
    await expect(q.add('x', {}, { group: { id: 'g', size: 1 } as never })).rejects.toThrow(/group\.size/);
    await expect(q.add('x', {}, { lane: 'a', group: { id: 'b' } })).rejects.toThrow(ValidationError);
    expect(await q.count()).toBe(0);
    // The same name twice is one lane.
    const ok = await q.add('x', {}, { lane: 'g', group: { id: 'g' } });
    expect(ok.lane).toBe('g');
  });

  it('works in flows (children in groups) and job schedulers', async () => {
    const q = queue('flow');
    const flow = new FlowProducerPro({ connection });
    try {
      const node = await flow.add({
        name: 'parent', queueName: q.name, data: {},
        children: [{ name: 'child', queueName: q.name, data: {}, opts: { group: { id: 'tenant-1', priority: 2 } } }],
      });
      expect(node.children![0]!.job.lane).toBe('tenant-1');
      expect((await q.getGroupJobs('tenant-1', 0, -1)).map((j) => j.name)).toEqual(['child']);
      // maxSize is checked by the add script; a flow refuses it instead of ignoring it.
      await expect(flow.add({ name: 'p', queueName: q.name, data: {}, opts: { group: { id: 'x', maxSize: 1 } } })).rejects.toThrow(/maxSize/);
      // So does a job scheduler's template; its group itself works.
      await expect(q.upsertJobScheduler('s', { every: 60_000 }, { name: 't', opts: { group: { id: 'x', maxSize: 1 } } })).rejects.toThrow(/maxSize/);
      const first = await q.upsertJobScheduler('s2', { every: 60_000 }, { name: 't', opts: { group: { id: 'tenant-2' } } });
      expect(first!.lane).toBe('tenant-2');
    } finally {
      await flow.close();
    }
  });
});

describe('concurrency (Worker option group.concurrency)', () => {
  it('three workers never run more than 2 jobs of one group at once; jobs without a group are not limited', async () => {
    const q = queue('conc');
    const tracker = new GroupTracker();
    const groups = ['g1', 'g2', 'g3', 'g4'];
    for (const g of groups) await q.addBulk(Array.from({ length: 15 }, (_, i) => ({ name: `${g}-${i}`, data: {}, opts: { group: { id: g } } })));
    await q.addBulk(Array.from({ length: 15 }, (_, i) => ({ name: `none-${i}`, data: {} })));
    // The local group concurrency page: a per-group value wins over the workers' default.
    await q.setGroupConcurrency('g4', 4);
    const sampled = new Map<string, number>();
    const fn = async (job: Job) => {
      const g = groupOf(job);
      tracker.enter(g);
      await sleep(15);
      tracker.leave(g);
    };
    for (let i = 0; i < 3; i++) worker(q, fn, { concurrency: 10, group: { concurrency: 2 } });
    // A group that appears after the workers started gets the default too.
    await waitFor(async () => (await q.getGroupConcurrency('g5')) === 2, 5000, 'the defaults stored');
    await q.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: `g5-${i}`, data: {}, opts: { group: { id: 'g5' } } })));
    // Redis' own count, sampled while the workers run.
    for (let round = 0; tracker.done.length < 85; round++) {
      for (const g of [...groups, 'g5']) {
        const n = await q.getGroupActiveCount(g);
        if (n > (sampled.get(g) ?? 0)) sampled.set(g, n);
      }
      // The ring holds exactly the groups under their limit (own or default) while workers run.
      if (round % 10 === 0) await assertLaneInvariant(c, q.keys);
      await sleep(3);
    }
    for (const g of ['g1', 'g2', 'g3', 'g5']) {
      expect(tracker.max.get(g)).toBeLessThanOrEqual(2);
      expect(sampled.get(g) ?? 0).toBeLessThanOrEqual(2);
    }
    for (const g of ['g1', 'g2', 'g3']) expect(tracker.max.get(g)).toBe(2); // reached: the limit is 2, not less
    expect(tracker.max.get('g4')).toBeGreaterThan(2);
    expect(tracker.max.get('g4')).toBeLessThanOrEqual(4);
    expect(sampled.get('g4') ?? 0).toBeLessThanOrEqual(4);
    // The default lane holds the jobs without a group: Pro's group options do not apply to it.
    expect(tracker.max.get('none')).toBeGreaterThan(2);
    expect(await q.getGroupConcurrency('g4')).toBe(4);
    expect(await q.getGroupConcurrency('g1')).toBe(2); // the workers' default
    await q.removeGroupConcurrency('g4');
    expect(await q.getGroupConcurrency('g4')).toBe(2);
    await assertLaneInvariant(c, q.keys);
  });
});

describe('the Worker option group', () => {
  it('is validated', () => {
    const bad = [{ concurrency: 0 }, { concurrency: 1.5 }, { limit: { max: 0, duration: 10 } }, { limit: { max: 1 } }, { size: 1 }];
    for (const group of bad) {
      expect(() => new WorkerPro('v', async () => {}, { connection, autorun: false, group: group as WorkerGroupOptions })).toThrow(ValidationError);
    }
  });
});

describe('changing the group defaults', () => {
  it('a worker started with group: {} clears them, and a group held by the old limit flows at once', async () => {
    const q = queue('defaults');
    await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: `h${i}`, data: {}, opts: { group: { id: 'held' } } })));
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const done: string[] = [];
    worker(q, async (job) => {
      if (job.name === 'h0') await gate;
      done.push(job.name);
    }, { concurrency: 5, group: { concurrency: 1 } });
    await waitFor(async () => (await q.getGroupActiveCount('held')) === 1, 5000, 'h0 active');
    await sleep(50);
    expect(done).toEqual([]); // the group is at its default limit of 1
    expect(await q.getGroupStatus('held')).toBe('maxed');
    await assertLaneInvariant(c, q.keys);
    worker(q, (job) => void done.push(job.name), { concurrency: 5, group: {} });
    // The other four run while h0 is still running: the group left its limit behind.
    await waitFor(() => done.length === 4, 5000, 'the other four');
    expect(await q.getGroupConcurrency('held')).toBe(null);
    await assertLaneInvariant(c, q.keys);
    release();
    await waitFor(() => done.length === 5, 5000, 'h0');
  });
});

describe('rate limiting', () => {
  it('Worker option group.limit limits every group, not the jobs without a group', async () => {
    const q = queue('rate');
    for (const g of ['a', 'b']) await q.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: `${g}${i}`, data: {}, opts: { group: { id: g } } })));
    await q.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: `n${i}`, data: {} })));
    const starts = new Map<string, number[]>();
    worker(q, (job) => {
      const g = groupOf(job);
      starts.set(g, [...(starts.get(g) ?? []), job.processedOn!]);
    }, { concurrency: 5, group: { limit: { max: 1, duration: 300 } } });
    await waitFor(() => [...starts.values()].flat().length === 10, 10_000, 'all jobs');
    for (const g of ['a', 'b']) {
      const s = starts.get(g)!;
      // One start per 300 ms window (Redis time): a window opens at the claim that starts it.
      for (let i = 1; i < s.length; i++) expect(s[i]! - s[i - 1]!).toBeGreaterThanOrEqual(295);
    }
    const n = starts.get('none')!;
    expect(n[n.length - 1]! - n[0]!).toBeLessThan(295);
  });

  it('setGroupRateLimit limits one group while the others keep flowing; getGroupRateLimitTtl', async () => {
    const q = queue('lrate');
    await q.setGroupRateLimit('slow', 2, 500);
    await q.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: `s${i}`, data: {}, opts: { group: { id: 'slow' } } })));
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: `f${i}`, data: {}, opts: { group: { id: 'fast' } } })));
    const slow: number[] = [];
    let fastDone = 0;
    let slowDoneWhenFastDone = -1;
    worker(q, (job) => {
      if (groupOf(job) === 'slow') slow.push(job.processedOn!);
      else if (++fastDone === 30) slowDoneWhenFastDone = slow.length;
    }, { concurrency: 4, group: { limit: { max: 1000, duration: 1000 } } }); // a default that the group's own limit overrides
    await waitFor(() => slow.length >= 2, 5000, 'the first slow window');
    const ttl = await q.getGroupRateLimitTtl('slow');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(500);
    expect(await q.getGroupRateLimitTtl('slow', 100)).toBe(0); // fewer than 100 jobs in the window
    await waitFor(() => slow.length === 6 && fastDone === 30, 10_000, 'all jobs');
    expect(slowDoneWhenFastDone).toBeLessThanOrEqual(4);
    // Three windows of 2: the fifth start is at least two windows after the first.
    expect(slow[4]! - slow[0]!).toBeGreaterThanOrEqual(995);
    expect(slow.filter((t) => t - slow[0]! < 495).length).toBe(2);
    await q.removeGroupRateLimit('slow');
    expect(await q.getGroupRateLimitTtl('none-such')).toBe(-2);
  });

  it('rateLimitGroup after a 429: the group waits, others flow, the job keeps its attempts', async () => {
    const q = queue('429');
    const call = await q.add('call', { n: 1 }, { group: { id: 'api' } });
    await q.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: `o${i}`, data: {}, opts: { group: { id: 'other' } } })));
    const apiStarts: number[] = [];
    let otherDone = 0;
    let otherDoneAtRetry = -1;
    let limited = false;
    const w: WorkerPro = worker(q, async (job) => {
      if (groupOf(job) !== 'api') {
        await sleep(5);
        otherDone++;
        return 'ok';
      }
      apiStarts.push(job.processedOn!);
      if (!limited) {
        limited = true;
        // The upstream answered 429: pause this group only, then hand the job back.
        await w.rateLimitGroup(job, 600);
        throw WorkerPro.RateLimitError();
      }
      otherDoneAtRetry = otherDone;
      return 'done';
    }, { concurrency: 1 });
    await waitFor(() => limited, 5000, 'the 429');
    await sleep(50);
    expect(await q.getGroupStatus('api')).toBe('limited');
    const ttl = await q.getGroupRateLimitTtl('api');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(600);
    expect((await q.getGroupsByStatus('limited')).map((g) => g.id)).toEqual(['api']);
    await waitFor(() => apiStarts.length === 2, 5000, 'the retry');
    expect(apiStarts[1]! - apiStarts[0]!).toBeGreaterThanOrEqual(595);
    expect(otherDoneAtRetry).toBe(10); // the other group was served meanwhile
    await waitFor(async () => (await q.getJobState(call.id)) === 'completed', 5000, 'completed');
    // The hand-back did not use an attempt: the job completed on its first counted attempt.
    expect((await q.getJob(call.id))!.attemptsMade).toBe(1);
  });
});

describe('pausing groups', () => {
  it('a paused group keeps its jobs while others flow; pause/resume return false when already so', async () => {
    const q = queue('pause');
    // The id is remembered before the group exists (groups are ephemeral).
    expect(await q.pauseGroup('p')).toBe(true);
    expect(await q.pauseGroup('p')).toBe(false);
    expect(await q.resumeGroup('never-paused')).toBe(false);
    await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: `p${i}`, data: {}, opts: { group: { id: 'p' } } })));
    await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: `r${i}`, data: {}, opts: { group: { id: 'r' } } })));
    const done: string[] = [];
    worker(q, (job) => void done.push(groupOf(job)), { concurrency: 2 });
    await waitFor(() => done.length === 5, 5000, 'the running group');
    await sleep(100);
    expect(done.every((g) => g === 'r')).toBe(true);
    expect(await q.getGroupStatus('p')).toBe('paused');
    expect(await q.getGroupsByStatus('paused')).toEqual([{ id: 'p', count: 5 }]);
    expect(await q.resumeGroup('p')).toBe(true);
    expect(await q.resumeGroup('p')).toBe(false);
    await waitFor(() => done.length === 10, 5000, 'the resumed group');
    await assertLaneInvariant(c, q.keys);
    expect(await q.getGroupStatus('p')).toBe(null);
  });
});

describe('max group size', () => {
  it('refuses the add with GroupMaxSizeExceededError once the group holds maxSize waiting jobs', async () => {
    const q = queue('max');
    const groupId = 'my group';
    for (let i = 0; i < 7; i++) await q.add('paint', { i }, { group: { id: groupId, maxSize: 7 } });
    let caught: unknown;
    try {
      await q.add('paint', { i: 7 }, { group: { id: groupId, maxSize: 7 } });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(GroupMaxSizeExceededError);
    expect((caught as Error).name).toBe('GroupMaxSizeExceededError');
    expect(await q.getGroupJobs(groupId, 0, -1)).toHaveLength(7);
    expect(await q.count()).toBe(7);
  });

  it('adds made together (one script call) are refused one by one, atomically per job', async () => {
    const q = queue('max2');
    const results = await Promise.allSettled([
      ...Array.from({ length: 5 }, (_, i) => q.add(`m${i}`, {}, { group: { id: 'm', maxSize: 3 } })),
      q.add('other', {}, { group: { id: 'o', maxSize: 3 } }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[3] as PromiseRejectedResult).reason).toBeInstanceOf(GroupMaxSizeExceededError);
    expect((await q.getGroupJobs('m')).map((j) => j.name)).toEqual(['m0', 'm1', 'm2']);
  });

  it('addBulk (which Pro does not support): the jobs that fit are added, then it rejects', async () => {
    const q = queue('max3');
    await expect(q.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: `b${i}`, data: {}, opts: { group: { id: 'b', maxSize: 2 } } }))))
      .rejects.toBeInstanceOf(GroupMaxSizeExceededError);
    expect((await q.getGroupJobs('b')).map((j) => j.name)).toEqual(['b0', 'b1']);
  });
});

describe('priorities inside a group', () => {
  it('serves each group in (priority, arrival) order while groups rotate; counts per priority', async () => {
    const q = queue('prio');
    const plan: Array<[string, number]> = [['a', 5], ['a', 1], ['b', 0], ['a', 1], ['b', 3], ['a', 0], ['b', 3], ['b', 1]];
    for (const [i, [g, p]] of plan.entries()) await q.add(`${g}${i}`, { p }, { group: { id: g, priority: p } });
    expect(await q.getCountsPerPriorityForGroup('a', [1, 0, 5, 7])).toEqual({ 1: 2, 0: 1, 5: 1, 7: 0 });
    expect((await q.getGroupJobs('b', 0, -1)).map((j) => j.name)).toEqual(['b2', 'b7', 'b4', 'b6']);
    const seen: string[] = [];
    worker(q, (job) => void seen.push(job.name));
    await waitFor(() => seen.length === plan.length, 5000, 'all jobs');
    const order = (g: string) => seen.filter((n) => n.startsWith(g));
    expect(order('a')).toEqual(['a5', 'a1', 'a3', 'a0']);
    expect(order('b')).toEqual(['b2', 'b7', 'b4', 'b6']);
    // Rotation: the groups alternate.
    expect(seen.map((n) => n[0])).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
  });
});

describe('getters', () => {
  it('getGroupsJobsCount pages over the groups and leaves the jobs without a group out', async () => {
    const q = queue('get');
    for (const [g, n] of [['x', 3], ['y', 2], ['z', 4]] as const) {
      await q.addBulk(Array.from({ length: n }, (_, i) => ({ name: `${g}${i}`, data: {}, opts: { group: { id: g, priority: i % 2 } } })));
    }
    await q.add('plain', {});
    expect(await q.getGroupsJobsCount(1000)).toBe(9);
    expect(await q.getGroupsJobsCount(1)).toBe(9); // one group per call
    expect((await q.getGroupJobs('z', 1, 2)).map((j) => j.name)).toEqual(['z2', 'z1']);
    expect(await q.getGroupStatus('x')).toBe('waiting');
    expect(await q.getGroupsByStatus('waiting', 0, 10)).toEqual([{ id: 'x', count: 3 }, { id: 'y', count: 2 }, { id: 'z', count: 4 }]);
    await expect(q.getGroupsByStatus('nope' as never)).rejects.toThrow(ValidationError);

    // maxed: the group is at its concurrency.
    await q.setGroupConcurrency('x', 1);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started: string[] = [];
    worker(q, async (job) => {
      started.push(job.name);
      if (job.name === 'x0') await gate;
    }, { concurrency: 1 });
    await waitFor(() => started.includes('x0'), 5000, 'x0 active');
    expect(await q.getGroupActiveCount('x')).toBe(1);
    expect(await q.getGroupStatus('x')).toBe('maxed');
    expect(await q.getGroupsByStatus('maxed')).toEqual([{ id: 'x', count: 2 }]);
    release();
  });
});

describe('jobs without a group', () => {
  it('take their turn in the rotation; a weight on the default lane comes close to Pro\'s "ungrouped first"', async () => {
    const q = queue('ungrouped');
    for (const g of ['g1', 'g2', 'g3']) await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: `${g}-${i}`, data: {}, opts: { group: { id: g } } })));
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: `none-${i}`, data: {} })));
    // echomq's rule: the default lane is one more lane in the ring.
    const seen: string[] = [];
    const w = worker(q, (job) => void seen.push(groupOf(job)));
    await waitFor(() => seen.length === 45, 5000, 'all jobs');
    expect(seen.slice(0, 8)).toEqual(['g1', 'g2', 'g3', 'none', 'g1', 'g2', 'g3', 'none']);
    await w.close();

    // Pro's rule, nearly: with weight 1000 the default lane is served up to 1,000 jobs per turn,
    // so at most one job of each group that is ahead of it in the ring goes before them.
    await q.lanes.setWeight('default', 1000);
    for (const g of ['g1', 'g2', 'g3']) await q.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: `${g}-${i}`, data: {}, opts: { group: { id: g } } })));
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: `none-${i}`, data: {} })));
    const seen2: string[] = [];
    worker(q, (job) => void seen2.push(groupOf(job)));
    await waitFor(() => seen2.length === 45, 5000, 'all jobs again');
    const lastUngrouped = seen2.lastIndexOf('none');
    expect(seen2.slice(0, lastUngrouped + 1).filter((g) => g !== 'none').length).toBeLessThanOrEqual(3);
  });
});

describe('fairness', () => {
  it('a burst of 3,000 in one group does not hold back two quiet groups of 100 (concurrency 10)', async () => {
    const q = queue('fair');
    await q.addBulk(Array.from({ length: 3000 }, (_, i) => ({ name: 'j', data: { i }, opts: { group: { id: 'burst' } } })));
    for (const g of ['quiet1', 'quiet2']) await q.addBulk(Array.from({ length: 100 }, (_, i) => ({ name: 'j', data: { i }, opts: { group: { id: g } } })));
    const started: string[] = [];
    const done: string[] = [];
    let quietDone = 0;
    worker(q, async (job) => {
      started.push(job.lane);
      await Promise.resolve();
      done.push(job.lane);
      if (job.lane !== 'burst') quietDone++;
    }, { concurrency: 10 });
    await waitFor(() => quietDone === 200, 30_000, 'every quiet job');
    const lastQuiet = (list: string[]) => list.reduce((last, g, i) => (g !== 'burst' ? i + 1 : last), 0);
    // Claims rotate exactly: the 100th job of each quiet group is claimed near position 300.
    expect(lastQuiet(started)).toBeLessThanOrEqual(310);
    // Completion order can differ by the jobs in flight (test/lanes-fairness.test.ts).
    expect(lastQuiet(done)).toBeLessThanOrEqual(330);
  });
});
