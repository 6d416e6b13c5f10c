// Flows: parents in waiting-children until their children finish, same-queue (one atomic
// script) and across queues (outbox in the child's queue + idempotent resolveChild on the
// parent's queue). Real Redis only.
import { afterAll, describe, expect, it } from 'vitest';
import { FlowProducer, Queue, ValidationError, Worker, InvalidStateError, type Job } from '../src/index.js';
import { jobKey, depsKey, parseJobKey, type QueueKeys } from '../src/core/keys.js';

/** BullMQ's logical name of a job, as job.parentKey and the children getters show it. */
const lname = (keys: QueueKeys, id: string) => `${keys.prefix}:${keys.queue}:${id}`;
import { drainOutbox } from '../src/job/flows.js';
import { scripts } from '../src/scripts/index.js';
import { lifecycleScripts } from '../src/scripts/lifecycle.js';
import { Redis } from 'ioredis';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';
import { client, keysOf, qname, redisUrl, snapshot, waitFor } from './helpers.js';

const redis = client();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  redis.disconnect();
});

function producer(): FlowProducer {
  const f = new FlowProducer({ connection: redisUrl() });
  closers.push(() => f.close());
  return f;
}
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
const state = (q: Queue, id: string) => q.getJob(id).then((j) => j?.getState());

describe('flows in one queue', () => {
  it('adds a depth-3 tree atomically and runs children before parents', async () => {
    const name = qname('flow');
    const q = queue(name);
    const tree = await producer().add({
      name: 'root', queueName: name, data: { level: 0 },
      children: [
        { name: 'mid', queueName: name, data: { level: 1, n: 'a' }, children: [
          { name: 'leaf', queueName: name, data: { level: 2, n: 'a1' } },
          { name: 'leaf', queueName: name, data: { level: 2, n: 'a2' } },
        ] },
        { name: 'mid', queueName: name, data: { level: 1, n: 'b' }, children: [
          { name: 'leaf', queueName: name, data: { level: 2, n: 'b1' } },
        ] },
      ],
    });
    expect(tree.children).toHaveLength(2);
    expect(tree.children![0].children).toHaveLength(2);
    expect(tree.children![0].job.parentKey).toBe(lname(q.keys, tree.job.id));
    expect(await state(q, tree.job.id)).toBe('waiting-children');
    expect(await state(q, tree.children![0].job.id)).toBe('waiting-children');
    expect(await state(q, tree.children![0].children![0].job.id)).toBe('waiting');
    expect(await q.getJobCounts('waiting-children', 'waiting')).toEqual({ 'waiting-children': 3, waiting: 3 });
    expect((await q.getJobs(['waiting-children'])).map((j) => j.id).sort()).toEqual(
      [tree.job.id, tree.children![0].job.id, tree.children![1].job.id].sort());

    const order: string[] = [];
    let rootSaw: Record<string, unknown> = {};
    worker(name, async (job) => {
      order.push(`${job.data.level}:${job.data.n ?? ''}`);
      if (job.name === 'leaf') return `v-${job.data.n}`;
      const vals = await job.getChildrenValues();
      if (job.name === 'root') rootSaw = vals;
      return Object.values(vals).sort().join('+');
    }, { concurrency: 3 });
    await waitFor(async () => (await state(q, tree.job.id)) === 'completed', 10000, 'root completed');
    // Every parent ran after all its children.
    const pos = (s: string) => order.indexOf(s);
    expect(pos('1:a')).toBeGreaterThan(Math.max(pos('2:a1'), pos('2:a2')));
    expect(pos('1:b')).toBeGreaterThan(pos('2:b1'));
    expect(pos('0:')).toBe(order.length - 1);
    expect(rootSaw).toEqual({
      [lname(q.keys, tree.children![0].job.id)]: 'v-a1+v-a2',
      [lname(q.keys, tree.children![1].job.id)]: 'v-b1',
    });
    const deps = await (await q.getJob(tree.job.id))!.getDependencies();
    expect(deps.unprocessed).toEqual([]);
    expect(Object.keys(deps.processed!)).toHaveLength(2);
    expect(await q.getJobCounts('waiting-children')).toEqual({ 'waiting-children': 0 });
  });

  it('writes a same-queue flow in one script call, and a refused flow naming an existing job not at all', async () => {
    const name = qname('flowatomic');
    const q = queue(name);
    await q.add('x', {}, { jobId: 'taken' });
    const before = await snapshot(redis, q.keys);
    const fp = producer();
    await expect(fp.add({
      name: 'root', queueName: name, children: [
        // An existing job of the flow would be kept and attached (as BullMQ); one given children
        // in another queue is refused, and nothing of the flow is written.
        { name: 'a', queueName: name }, { name: 'b', queueName: name, opts: { jobId: 'taken' }, children: [{ name: 'b1', queueName: `${name}-other` }] },
      ],
    })).rejects.toBeInstanceOf(InvalidStateError);
    expect(await snapshot(redis, q.keys)).toEqual(before);

    // One script call for the whole tree, counted with INFO commandstats on a dedicated server
    // (the shared test server carries other files' traffic; MONITOR there is unreliable).
    const own = await startRedisServer();
    try {
      const ownFp = new FlowProducer({ connection: own.url });
      const counter = new Redis(own.url);
      const scriptCalls = async () => {
        const info = await counter.info('commandstats');
        return [...info.matchAll(/cmdstat_(evalsha|eval|fcall):calls=(\d+)/g)].reduce((a, m) => a + Number(m[2]), 0);
      };
      await ownFp.add({ name: 'warm', queueName: name }); // loads the script (EVALSHA miss + EVAL)
      const before = await scriptCalls();
      await ownFp.add({ name: 'root', queueName: name, children: [
        { name: 'a', queueName: name, children: [{ name: 'a1', queueName: name }] }, { name: 'b', queueName: name },
      ] });
      const calls = (await scriptCalls()) - before;
      await ownFp.close();
      counter.disconnect();
      expect(calls).toBe(1);
    } finally {
      await own.stop();
    }
  });

  it('validates the whole tree before writing anything', async () => {
    const name = qname('flowval');
    const q = queue(name);
    await q.add('seed', {});
    const before = await snapshot(redis, q.keys);
    const fp = producer();
    const bad: unknown[] = [
      { name: 'r', queueName: name, children: [{ name: 'c', queueName: '' }] },
      { name: 'r', queueName: name, children: [{ name: 'c', queueName: name, opts: { priority: 2.5 } }] },
      { name: 'r', queueName: name, children: [{ name: 'c', queueName: name, data: () => 1 }] },
      { name: 'r', queueName: name, children: 'nope' },
      { name: 'r', queueName: name, children: [{ name: 'c', queueName: name, opts: { failParentOnFailure: true, ignoreDependencyOnFailure: true } }] },
      { name: 'r', queueName: name, children: [{ name: 'c', queueName: name, opts: { jobId: 'dup' } }, { name: 'd', queueName: name, opts: { jobId: 'dup' } }] },
      { name: 'r', queueName: name, extra: 1 },
    ];
    for (const f of bad) {
      await expect(fp.add(f as never)).rejects.toBeInstanceOf(ValidationError);
    }
    const err = (await fp.add(bad[1] as never).catch((e: unknown) => e)) as ValidationError;
    expect(err.message).toMatch(/flow\.children\[0\]\.opts\.priority|priority must be/);
    expect(await snapshot(redis, q.keys)).toEqual(before);
  });

  it('a removed pending child no longer holds its parent', async () => {
    const name = qname('flowrm');
    const q = queue(name);
    const tree = await producer().add({ name: 'root', queueName: name, children: [
      { name: 'a', queueName: name }, { name: 'b', queueName: name, opts: { delay: 60_000 } },
    ] });
    const [a, b] = tree.children!.map((c) => c.job);
    await q.remove(b.id);
    expect(await state(q, tree.job.id)).toBe('waiting-children');
    worker(name, async (job) => job.name);
    await waitFor(async () => (await state(q, tree.job.id)) === 'completed', 10000, 'root completed');
    const deps = await (await q.getJob(tree.job.id))!.getDependencies();
    // As in BullMQ, a removed child leaves its parent's dependencies altogether.
    expect(deps).toEqual({ processed: { [lname(q.keys, a.id)]: 'a' }, unprocessed: [], ignored: {}, failed: [] });
  });

  it('removing a waiting parent and its deps leaves no key behind', async () => {
    const name = qname('flowrmp');
    const q = queue(name);
    const tree = await producer().add({ name: 'root', queueName: name, children: [{ name: 'a', queueName: name }] });
    expect(await redis.exists(depsKey(q.keys, tree.job.id))).toBe(1);
    // removeChildren: false keeps the child (BullMQ's default, true, removes it too).
    await q.remove(tree.job.id, { removeChildren: false });
    expect(await redis.exists(depsKey(q.keys, tree.job.id))).toBe(0);
    expect(await q.getJobCounts('waiting-children')).toEqual({ 'waiting-children': 0 });
    // The orphaned child still runs; its outcome finds no parent and changes nothing.
    worker(name, async () => 'ok');
    await waitFor(async () => (await state(q, tree.children![0].job.id)) === 'completed');
  });

  it('leaves no flow keys behind: retention, drain and obliterate', async () => {
    const name = qname('flowkeys');
    const q = queue(name);
    const gone = { removeOnComplete: true };
    const tree = await producer().add({ name: 'root', queueName: name, opts: gone, children: [
      { name: 'a', queueName: name, opts: gone, children: [{ name: 'a1', queueName: name, opts: gone }] },
    ] });
    const w = worker(name, async () => 1);
    await waitFor(async () => (await q.getJobCounts('completed', 'waiting-children', 'waiting', 'active'))
      .completed === 0 && !(await redis.exists(jobKey(q.keys, tree.job.id))), 10000, 'root gone');
    const left = [...(await snapshot(redis, q.keys)).keys()].filter((k) => k.includes(':job:') || k.includes(':deps:'));
    expect(left).toEqual([]);
    await w.close();

    // drain deletes a released (waiting) parent with its deps hash.
    const t2 = await producer().add({ name: 'root', queueName: name, children: [{ name: 'a', queueName: name }] });
    const ctx = { client: redis, keys: q.keys };
    const c = (await scripts.claim(ctx, { count: 1, leaseMs: 30000 })).jobs[0];
    await scripts.complete(ctx, { id: c.id, token: '1', returnValue: '1', fetch: 0, leaseMs: 1000, maxEventValueBytes: 100 });
    expect(await state(q, t2.job.id)).toBe('waiting');
    await q.drain();
    expect(await redis.exists(depsKey(q.keys, t2.job.id), jobKey(q.keys, t2.job.id))).toBe(0);

    // obliterate deletes parents in waiting-children, their deps and the outbox.
    await producer().add({ name: 'root', queueName: name, children: [{ name: 'a', queueName: name }, { name: 'x', queueName: qname('other') }] });
    await redis.zadd(q.keys.outbox, 1, '{}');
    await q.obliterate();
    expect([...(await snapshot(redis, q.keys)).keys()]).toEqual([]);
  });

  it('a parent with a delay becomes delayed when its children are done', async () => {
    const name = qname('flowdelay');
    const q = queue(name);
    const tree = await producer().add({ name: 'root', queueName: name, opts: { delay: 60_000 }, children: [{ name: 'a', queueName: name }] });
    worker(name, async () => 1);
    await waitFor(async () => (await state(q, tree.job.id)) === 'delayed', 10000, 'parent delayed');
  });
});

describe('flows across queues', () => {
  it('runs a depth-3 tree over three queues', async () => {
    const [qa, qb, qc] = [qname('fa'), qname('fb'), qname('fc')];
    const A = queue(qa);
    const tree = await producer().add({
      name: 'root', queueName: qa, children: [
        { name: 'mid', queueName: qb, children: [
          { name: 'leaf', queueName: qc, data: { n: 1 } },
          { name: 'leaf', queueName: qc, data: { n: 2 } },
          { name: 'leaf2', queueName: qa, data: { n: 3 } },
        ] },
      ],
    });
    expect(await state(A, tree.job.id)).toBe('waiting-children');
    let rootValues: Record<string, unknown> = {};
    const sum = async (job: Job) => Object.values(await job.getChildrenValues<number>()).reduce((a, b) => a + b, 0);
    worker(qc, (job) => job.data.n * 10);
    worker(qb, sum);
    worker(qa, async (job) => {
      if (job.name === 'leaf2') return job.data.n * 10;
      rootValues = await job.getChildrenValues();
      return 'done';
    });
    await waitFor(async () => (await state(A, tree.job.id)) === 'completed', 10000, 'root completed');
    const mid = tree.children![0].job;
    expect(rootValues).toEqual({ [lname(keysOf(qb), mid.id)]: 60 });
    expect(await redis.zcard(keysOf(qb).outbox)).toBe(0);
    expect(await redis.zcard(keysOf(qc).outbox)).toBe(0);

    // getFlow reads the tree back across the queues.
    const back = await producer().getFlow({ id: tree.job.id, queueName: qa });
    expect(back!.children![0].job.id).toBe(mid.id);
    expect(back!.children![0].children!.map((c) => c.job.returnvalue).sort()).toEqual([10, 20, 30]);
    expect(parseJobKey(jobKey(keysOf('we:ird{q}'), 'x:y'))).toMatchObject({ prefix: 'emq', queue: 'we:ird{q}', id: 'x:y' });
    // Prefixes with their own hash tag (BullMQ's '{bull}') parse too.
    for (const prefix of ['{bull}', '{bull}:custom', 'a:{b}'])
      expect(parseJobKey(jobKey(keysOf('q:{1}', prefix), ':{x}:job:y'))).toMatchObject({ prefix, queue: 'q:{1}', id: ':{x}:job:y' });
  });

  it('loses no completion when a worker dies between complete and resolveChild, and counts a redelivery once', async () => {
    const [qa, qb] = [qname('ca'), qname('cb')];
    const A = queue(qa);
    const B = queue(qb);
    const tree = await producer().add({ name: 'root', queueName: qa, children: [
      { name: 'c1', queueName: qb }, { name: 'c2', queueName: qb },
    ] });
    const ctxB = { client: redis, keys: B.keys };
    // Step 1 only, for both children: claim and complete by calling the scripts directly, as a
    // worker would, then "crash" before it drains the outbox.
    const claimed = await scripts.claim(ctxB, { count: 2, leaseMs: 30000 });
    expect(claimed.jobs).toHaveLength(2);
    for (const j of claimed.jobs) {
      const token = j.fields[j.fields.indexOf('att') + 1];
      const r = await scripts.complete(ctxB, { id: j.id, token, returnValue: JSON.stringify(j.id), fetch: 0, leaseMs: 30000, maxEventValueBytes: 1000 });
      expect(typeof r).toBe('object');
    }
    expect(await redis.zcard(B.keys.outbox)).toBe(2);
    expect(await state(A, tree.job.id)).toBe('waiting-children');
    const entries = await redis.zrange(B.keys.outbox, 0, -1);

    // Step 2 for one entry, twice (a redelivery): it counts once.
    const e = JSON.parse(entries[0]);
    const ctxA = { client: redis, keys: A.keys };
    const r1 = await lifecycleScripts.resolveChild(ctxA, { parentId: e.pid, childKey: e.c, kind: e.k, value: e.v });
    const r2 = await lifecycleScripts.resolveChild(ctxA, { parentId: e.pid, childKey: e.c, kind: e.k, value: e.v });
    expect([r1.status, r2.status]).toEqual([1, 0]);
    expect(await redis.hget(jobKey(A.keys, tree.job.id), 'pend')).toBe('1');
    expect(await state(A, tree.job.id)).toBe('waiting-children');

    // A worker on B starts: its sweep delivers both entries (one of them again); the parent is
    // released once, with both values.
    worker(qb, () => 'unused', { stalledInterval: 50 });
    await waitFor(async () => (await redis.zcard(B.keys.outbox)) === 0, 5000, 'outbox drained');
    expect(await state(A, tree.job.id)).toBe('waiting');
    expect(await redis.hget(jobKey(A.keys, tree.job.id), 'pend')).toBe('0');
    const vals = await (await A.getJob(tree.job.id))!.getChildrenValues();
    expect(Object.values(vals).sort()).toEqual(claimed.jobs.map((j) => j.id).sort());
    expect(await A.getJobCounts('waiting', 'waiting-children')).toEqual({ waiting: 1, 'waiting-children': 0 });

    // Yet another redelivery of an old entry changes nothing.
    await redis.zadd(B.keys.outbox, 1, entries[1]);
    expect(await drainOutbox(redis, B.keys)).toBe(1);
    expect(await redis.hget(jobKey(A.keys, tree.job.id), 'pend')).toBe('0');
    expect(await A.getJobCounts('waiting')).toEqual({ waiting: 1 });
  });

  it('counts a double completion in the same queue once', async () => {
    const name = qname('dbl');
    const q = queue(name);
    const tree = await producer().add({ name: 'root', queueName: name, children: [
      { name: 'a', queueName: name }, { name: 'b', queueName: name },
    ] });
    const ctx = { client: redis, keys: q.keys };
    const a = tree.children![0].job;
    const ref = jobKey(q.keys, a.id);
    const r = [];
    for (let i = 0; i < 3; i++) r.push((await lifecycleScripts.resolveChild(ctx, { parentId: tree.job.id, childKey: ref, kind: 'c', value: '1' })).status);
    expect(r).toEqual([1, 0, 0]);
    expect(await redis.hget(jobKey(q.keys, tree.job.id), 'pend')).toBe('1');
    // Unknown child and unknown parent change nothing.
    expect((await lifecycleScripts.resolveChild(ctx, { parentId: tree.job.id, childKey: 'nope', kind: 'c', value: '1' })).status).toBe(0);
    expect((await lifecycleScripts.resolveChild(ctx, { parentId: 'ghost', childKey: ref, kind: 'c', value: '1' })).status).toBe(-1);
    // The real completion of a (already counted) does not count again: b's completion releases.
    worker(name, async (job) => job.name);
    await waitFor(async () => (await state(q, tree.job.id)) === 'completed', 10000, 'root completed');
    const deps = await (await q.getJob(tree.job.id))!.getDependencies();
    expect(Object.keys(deps.processed!)).toHaveLength(2);
  });
});

describe('a failing grandchild', () => {
  // root (queue A) → mid (queue of the case) → grandchild (fails for good)
  async function failingTree(opts: { cross: boolean; grandchild: Record<string, unknown>; mid?: Record<string, unknown> }) {
    const [qa, qb] = [qname('ga'), opts.cross ? qname('gb') : ''];
    const midQ = opts.cross ? qb : qa;
    const tree = await producer().add({
      name: 'root', queueName: qa, children: [
        { name: 'mid', queueName: midQ, opts: opts.mid, children: [
          { name: 'bad', queueName: midQ, opts: opts.grandchild },
          { name: 'good', queueName: midQ },
        ] },
      ],
    });
    const run = (job: Job) => {
      if (job.name === 'bad') throw new Error('boom');
      return job.name;
    };
    worker(qa, run);
    if (opts.cross) worker(qb, run);
    return { A: queue(qa), M: queue(midQ), tree, mid: tree.children![0].job, bad: tree.children![0].children![0].job };
  }

  for (const cross of [false, true]) {
    const where = cross ? 'across queues' : 'in one queue';

    it(`failParentOnFailure fails the parent, and up the tree where set (${where})`, async () => {
      const { A, M, tree, mid, bad } = await failingTree({ cross, grandchild: { failParentOnFailure: true, attempts: 2 }, mid: { failParentOnFailure: true } });
      await waitFor(async () => (await state(A, tree.job.id)) === 'failed', 10000, 'root failed');
      expect(await state(M, mid.id)).toBe('failed');
      const m = (await M.getJob(mid.id))!;
      // BullMQ's deferred-failure reason, with the child's logical name.
      expect(m.failedReason).toBe(`child ${lname(M.keys, bad.id)} failed`);
      expect((await M.getJob(bad.id))!.attemptsMade).toBe(2);
      expect((await m.getDependencies()).failed).toEqual([lname(M.keys, bad.id)]);
      expect(await A.getJobCounts('waiting-children')).toEqual({ 'waiting-children': 0 });
    });

    it(`failParentOnFailure only on the grandchild: the mid fails, the root keeps waiting (${where})`, async () => {
      const { A, M, tree, mid } = await failingTree({ cross, grandchild: { failParentOnFailure: true } });
      await waitFor(async () => (await state(M, mid.id)) === 'failed', 10000, 'mid failed');
      await new Promise((r) => setTimeout(r, 200));
      expect(await state(A, tree.job.id)).toBe('waiting-children');
    });

    it(`ignoreDependencyOnFailure counts the failure as done (${where})`, async () => {
      const { A, M, tree, mid, bad } = await failingTree({ cross, grandchild: { ignoreDependencyOnFailure: true } });
      await waitFor(async () => (await state(A, tree.job.id)) === 'completed', 10000, 'root completed');
      expect(await state(M, mid.id)).toBe('completed');
      expect(await state(M, bad.id)).toBe('failed');
      const deps = await (await M.getJob(mid.id))!.getDependencies();
      expect(deps.ignored).toEqual({ [lname(M.keys, bad.id)]: 'boom' });
      expect(Object.values(deps.processed!)).toEqual(['good']);
    });

    it(`without a policy the parent keeps waiting until the child is retried and completes (${where})`, async () => {
      const { A, M, tree, mid, bad } = await failingTree({ cross, grandchild: {} });
      await waitFor(async () => (await state(M, bad.id)) === 'failed', 10000, 'grandchild failed');
      await new Promise((r) => setTimeout(r, 200));
      expect(await state(M, mid.id)).toBe('waiting-children');
      const deps = await (await M.getJob(mid.id))!.getDependencies();
      expect(deps.unprocessed).toEqual([lname(M.keys, bad.id)]);
      // Fix the cause by hand: the grandchild completes on retry and releases the tree.
      await M.client.hset(jobKey(M.keys, bad.id), 'name', 'fixed');
      await (await M.getJob(bad.id))!.retry();
      await waitFor(async () => (await state(A, tree.job.id)) === 'completed', 10000, 'root completed');
    });
  }
});
