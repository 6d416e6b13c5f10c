// Core, lanes and events behaviour on a real local Redis Cluster (3 masters started in
// beforeAll): every call must route to the queue's slot, and nothing may ever be CROSSSLOT.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Cluster } from 'ioredis';
import { Cluster as Cluster6 } from 'ioredis6';
import { FlowProducer, Queue, QueueEvents, UnrecoverableError, Worker, type Job } from '../src/index.js';
import { checkEvictionPolicy, type ConnectionInput } from '../src/core/connection.js';
import { clusterClient, nodeOfKey, scanAll, startCluster, type LocalCluster } from './cluster-helpers.js';
import { keysOf, qname, sleep, waitFor } from './helpers.js';

let cluster: LocalCluster;
let admin: Cluster;
let conn: ConnectionInput;
const closers: Array<() => Promise<unknown>> = [];

beforeAll(async () => {
  cluster = await startCluster();
  admin = clusterClient(cluster);
  conn = { cluster: { nodes: cluster.nodes } };
}, 60_000);

afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  await admin?.quit();
  await cluster?.stop();
});

function queue(name: string, opts: Record<string, unknown> = {}): Queue {
  const q = new Queue(name, { connection: conn, ...opts });
  closers.push(() => q.close());
  return q;
}

function worker(name: string, fn: (job: Job) => unknown, opts: Record<string, unknown> = {}): Worker {
  const w = new Worker(name, async (job) => fn(job), { connection: conn, ...opts });
  w.on('error', () => {});
  closers.push(() => w.close());
  return w;
}

describe('cluster: connections', () => {
  it('accepts { cluster: { nodes } } and an existing ioredis Cluster, and checks every master', async () => {
    const a = queue(qname('conn'));
    await a.add('x', { n: 1 });
    expect(await a.getJobCounts('waiting')).toEqual({ waiting: 1 });

    const shared = clusterClient(cluster);
    closers.push(() => shared.quit());
    const b = new Queue(a.name, { connection: shared });
    expect(await b.getJobCounts('waiting')).toEqual({ waiting: 1 });
    await b.close(); // a client passed in is not closed by echomq
    expect(shared.status).toBe('ready');
    expect(await checkEvictionPolicy(clusterClient(cluster))).toBe('noeviction');
    await a.obliterate();
  });

  it("takes an application's ioredis 6 Cluster as it is (recognised by shape)", async () => {
    const own = new Cluster6(cluster.nodes, { redisOptions: { maxRetriesPerRequest: null } });
    closers.push(() => own.quit());
    const name = qname('own6');
    const q = new Queue(name, { connection: own as never });
    expect(q.client).toBe(own);
    const w = worker(name, (job) => job.data.n + 1, { connection: own as never });
    const done = new Promise((resolve) => w.on('completed', (_j, r) => resolve(r)));
    await q.add('x', { n: 41 }, { lane: 'l1', priority: 2 });
    expect(await done).toBe(42);
    await w.close();
    await q.close();
    expect(own.status).toBe('ready');
  });
});

describe('cluster: core', () => {
  it('adds with priorities and lanes and one worker serves them in exact order', async () => {
    const name = qname('order');
    const q = queue(name);
    await q.addBulk([
      { name: 'p5', data: 1, opts: { priority: 5 } },
      { name: 'p1', data: 2, opts: { priority: 1 } },
      { name: 'p0a', data: 3 },
      { name: 'p1b', data: 4, opts: { priority: 1 } },
    ]);
    await q.add('p0b', 5);
    await q.add('lifo', 6, { priority: 1, lifo: true });
    expect(await q.getJobCounts('waiting', 'prioritized')).toEqual({ waiting: 2, prioritized: 4 });
    const waiting = await q.getJobs(['waiting', 'prioritized'], 0, -1, true); // asc: service order (BullMQ's default lists newest first)
    expect(waiting.map((j) => j.name)).toEqual(['p0a', 'p0b', 'lifo', 'p1', 'p1b', 'p5']);

    const seen: string[] = [];
    worker(name, (job) => void seen.push(job.name), { concurrency: 1 });
    await waitFor(() => seen.length === 6, 10_000, 'six jobs');
    expect(seen).toEqual(['p0a', 'p0b', 'lifo', 'p1', 'p1b', 'p5']);
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 6);
    const done = await q.getJobs(['completed'], 0, -1, true);
    expect(done.map((j) => j.returnvalue)).toEqual(done.map(() => null));
  });

  it('retries with backoff, fails unrecoverable jobs at once, keeps progress and logs', async () => {
    const name = qname('retry');
    const q = queue(name);
    const flaky = await q.add('flaky', {}, { attempts: 3, backoff: { type: 'fixed', delay: 30 } });
    const fatal = await q.add('fatal', {}, { attempts: 5 });
    const runs = new Map<string, number>();
    worker(name, async (job) => {
      runs.set(job.name, (runs.get(job.name) ?? 0) + 1);
      await job.updateProgress(runs.get(job.name)!);
      await job.log(`run ${runs.get(job.name)}`);
      if (job.name === 'fatal') throw new UnrecoverableError('no');
      if (runs.get(job.name)! < 3) throw new Error('again');
      return 'ok';
    }, { concurrency: 2 });
    await waitFor(async () => (await q.getJobCounts('completed', 'failed')).completed === 1, 10_000);
    await waitFor(async () => (await q.getJobCounts('failed')).failed === 1, 10_000);
    const f = (await q.getJob(flaky.id))!;
    expect(f.returnvalue).toBe('ok');
    expect(f.attemptsMade).toBe(3);
    expect(f.progress).toBe(3);
    expect(await f.getLogs()).toEqual(['run 1', 'run 2', 'run 3']);
    const x = (await q.getJob(fatal.id))!;
    expect(x.failedReason).toBe('no');
    expect(runs.get('fatal')).toBe(1);
    await x.retry();
    await waitFor(() => runs.get('fatal') === 2, 10_000, 'manual retry');
  });

  it('runs delayed jobs when due and wakes an idle worker at once for new work', async () => {
    const name = qname('delay');
    const q = queue(name);
    const ran: Array<{ name: string; at: number }> = [];
    worker(name, (job) => void ran.push({ name: job.name, at: Date.now() }), { concurrency: 2 });
    await sleep(200); // the worker is now blocked on the queue's wake list
    const t0 = Date.now();
    await q.add('later', {}, { delay: 400 });
    await q.add('now', {});
    await waitFor(() => ran.length === 2, 10_000, 'both jobs');
    expect(ran[0].name).toBe('now');
    expect(ran[0].at - t0).toBeLessThan(300);
    expect(ran[1].at - t0).toBeGreaterThanOrEqual(380);
  });

  it('changes priority, moves lanes, removes, drains and cleans', async () => {
    const name = qname('admin');
    const q = queue(name);
    const [a, b, c, d] = await q.addBulk([
      { name: 'a', data: 0, opts: { priority: 3 } },
      { name: 'b', data: 0 },
      { name: 'c', data: 0, opts: { lane: 'x' } },
      { name: 'd', data: 0, opts: { delay: 60_000 } },
    ]);
    await q.changePriority(a.id, 0);
    await q.moveToLane(b.id, 'y');
    await q.remove(c.id);
    expect((await q.getJob(b.id))!.lane).toBe('y');
    expect(await q.getJob(c.id)).toBeUndefined();
    expect(await q.getJobCounts('waiting', 'prioritized', 'delayed')).toEqual({ waiting: 2, prioritized: 0, delayed: 1 });
    expect(await q.drain(true)).toBe(3);
    expect(await q.count()).toBe(0);
    await q.add('e', 0);
    worker(name, () => 'done');
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 1);
    expect(await q.clean(0, 0, 'completed')).toHaveLength(1);
    expect(d.id).toBeDefined();
  });

  it('pauses and resumes the whole queue', async () => {
    const name = qname('pause');
    const q = queue(name);
    await q.pause();
    const seen: string[] = [];
    worker(name, (job) => void seen.push(job.name));
    await q.add('a', 0);
    await sleep(300);
    expect(seen).toEqual([]);
    // As in BullMQ 6, a paused queue's jobs are still waiting.
    expect(await q.getJobCounts('paused', 'waiting')).toEqual({ paused: 0, waiting: 1 });
    await q.resume();
    await waitFor(() => seen.length === 1, 5000, 'resumed job');
  });

  it('recovers from a flushed script cache (NOSCRIPT) on every node', async () => {
    const name = qname('noscript');
    const q = queue(name);
    await q.add('a', 0);
    for (const node of admin.nodes('master')) await node.script('FLUSH');
    await q.add('b', 0);
    expect(await q.count()).toBe(2);
  });
});

describe('cluster: lanes', () => {
  it('shares service by weight, honours a lane limit and skips a paused lane', async () => {
    const name = qname('lanes');
    const q = queue(name);
    await q.lanes.setWeight('heavy', 3);
    await q.lanes.setLimit('capped', 1);
    await q.lanes.pause('held');
    const jobs = [];
    for (let i = 0; i < 12; i++) {
      jobs.push({ name: `h${i}`, data: 0, opts: { lane: 'heavy' } });
      jobs.push({ name: `l${i}`, data: 0, opts: { lane: 'light' } });
    }
    for (let i = 0; i < 4; i++) jobs.push({ name: `c${i}`, data: 0, opts: { lane: 'capped' } });
    jobs.push({ name: 'held', data: 0, opts: { lane: 'held' } });
    await q.addBulk(jobs);
    const listed = await q.lanes.list();
    expect(listed.lanes.map((l) => l.name)).toEqual(['capped', 'heavy', 'held', 'light']);
    expect(listed.lanes.find((l) => l.name === 'heavy')).toMatchObject({ depth: 12, weight: 3 });

    const seen: string[] = [];
    let cappedActive = 0;
    let cappedMax = 0;
    worker(name, async (job) => {
      seen.push(job.name);
      if (job.lane === 'capped') {
        cappedActive++;
        cappedMax = Math.max(cappedMax, cappedActive);
        await sleep(20);
        cappedActive--;
      }
    }, { concurrency: 1 });
    await waitFor(() => seen.length === 28, 10_000, '28 jobs');
    await sleep(100);
    expect(seen).not.toContain('held');
    // In the first 8 served among heavy/light, heavy (weight 3) gets ~3x the share of light.
    const hl = seen.filter((s) => s[0] === 'h' || s[0] === 'l').slice(0, 8);
    expect(hl.filter((s) => s[0] === 'h').length).toBe(6);
    expect(cappedMax).toBe(1);
    await q.lanes.resume('held');
    await waitFor(() => seen.includes('held'), 5000, 'held lane resumed');
  });

  it('serves lanes concurrently with a concurrency limit across two workers', async () => {
    const name = qname('limit');
    const q = queue(name);
    await q.lanes.setLimit('t', 2);
    await q.addBulk(Array.from({ length: 10 }, (_, i) => ({ name: `t${i}`, data: 0, opts: { lane: 't' } })));
    let active = 0;
    let max = 0;
    let done = 0;
    const fn = async () => {
      active++;
      max = Math.max(max, active);
      await sleep(15);
      active--;
      done++;
    };
    worker(name, fn, { concurrency: 5 });
    worker(name, fn, { concurrency: 5 });
    await waitFor(() => done === 10, 10_000);
    expect(max).toBe(2);
  });
});

describe('cluster: events', () => {
  it('QueueEvents reads the queue stream on its node', async () => {
    const name = qname('events');
    const q = queue(name);
    const ev = new QueueEvents(name, { connection: conn });
    closers.push(() => ev.close());
    await ev.waitUntilReady();
    const got: string[] = [];
    ev.on('completed', ({ jobId }) => void got.push(`completed:${jobId}`));
    ev.on('failed', ({ jobId }) => void got.push(`failed:${jobId}`));
    const ok = await q.add('ok', 0);
    const bad = await q.add('bad', 0);
    worker(name, (job) => {
      if (job.name === 'bad') throw new Error('x');
      return 1;
    });
    await waitFor(() => got.length === 2, 10_000, 'two events');
    expect(got.sort()).toEqual([`completed:${ok.id}`, `failed:${bad.id}`].sort());
  });
});

/** Queue names whose hash tags land on `n` different masters. */
async function namesOnDistinctNodes(n: number, label: string): Promise<string[]> {
  const byNode = new Map<number, string>();
  for (let i = 0; byNode.size < n && i < 500; i++) {
    const name = qname(`${label}${i}`);
    const port = await nodeOfKey(admin, keysOf(name).meta);
    if (!byNode.has(port)) byNode.set(port, name);
  }
  expect(byNode.size).toBe(n);
  return [...byNode.values()];
}

describe('cluster: flows and schedulers', () => {
  it('runs a flow whose parent and children live in queues on three different nodes', async () => {
    const [parentQ, childA, childB] = await namesOnDistinctNodes(3, 'flow');
    const flows = new FlowProducer({ connection: conn });
    closers.push(() => flows.close());
    const tree = await flows.add({
      name: 'parent', queueName: parentQ,
      children: [
        { name: 'a', queueName: childA, data: { v: 2 } },
        { name: 'b', queueName: childB, data: { v: 3 } },
        { name: 'a2', queueName: childA, data: { v: 4 } },
      ],
    });
    let parentSaw: Record<string, unknown> | undefined;
    worker(childA, (job) => job.data.v);
    worker(childB, (job) => job.data.v);
    worker(parentQ, async (job) => {
      parentSaw = await job.getChildrenValues();
      return 'done';
    });
    await waitFor(() => parentSaw !== undefined, 10_000, 'parent to run');
    expect(Object.values(parentSaw!).sort()).toEqual([2, 3, 4]);
    const q = queue(parentQ);
    await waitFor(async () => (await q.getJob(tree.job.id))?.returnvalue === 'done', 5000, 'parent completed');
  });

  it('makes one job per slot with a job scheduler', async () => {
    const name = qname('sched');
    const q = queue(name);
    const ran: number[] = [];
    worker(name, () => void ran.push(Date.now()));
    await q.upsertJobScheduler('tick', { every: 150 }, { name: 'tick' });
    await waitFor(() => ran.length >= 3, 5000, 'three ticks');
    expect(await q.getJobSchedulersCount()).toBe(1);
    expect(await q.removeJobScheduler('tick')).toBe(true);
  });
});

describe('cluster: many queues over many nodes', () => {
  it('places queues on different masters and runs them all; obliterate leaves no key behind', async () => {
    const names = await namesOnDistinctNodes(3, 'spread');
    const done = new Map<string, number>();
    const workers: Worker[] = [];
    for (const name of names) {
      const q = queue(name);
      await q.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: `j${i}`, data: i, opts: { lane: `l${i % 3}`, priority: i % 4 } })));
      workers.push(worker(name, () => void done.set(name, (done.get(name) ?? 0) + 1), { concurrency: 4 }));
    }
    await waitFor(() => names.every((n) => done.get(n) === 50), 20_000, '150 jobs');
    await Promise.all(workers.map((w) => w.close()));
    for (const name of names) {
      const q = new Queue(name, { connection: conn });
      expect(await q.getJobCounts('completed', 'waiting', 'active')).toEqual({ completed: 50, waiting: 0, active: 0 });
      // Keys of the queue all live on its master.
      const keys = await scanAll(admin, keysOf(name).base.replace(/[*?[\]\\]/g, '\\$&') + '*');
      expect(keys.length).toBeGreaterThan(0);
      const ports = new Set(await Promise.all(keys.slice(0, 20).map((k) => nodeOfKey(admin, k))));
      expect(ports.size).toBe(1);
      await q.obliterate({ force: true });
      expect(await scanAll(admin, keysOf(name).base.replace(/[*?[\]\\]/g, '\\$&') + '*')).toEqual([]);
      await q.close();
    }
  });
});
