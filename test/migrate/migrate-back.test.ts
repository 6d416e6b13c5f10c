// The move back to BullMQ, differentially: echomq writes every state with its own API (lanes,
// priorities, delays, failures, completed history, a flow), migrateToBullMQ moves it into
// BullMQ's layout, and BullMQ 6.7 (the real package) must run each job once in the order the
// docs give and show the moved history. Then the round trip BullMQ → echomq → BullMQ → echomq
// leaves every job hash as it was, field by field.
import * as bull from 'bullmq';
import { describe, expect, it } from 'vitest';
import { FlowProducer, Queue, Worker, migrateFromBullMQ, migrateToBullMQ } from '../../src/index.js';
import { ValidationError } from '../../src/core/errors.js';
import { keysOf, qname, waitFor } from '../helpers.js';
import { checkCliReport, testRedis } from './helpers.js';

const { redis, opened, conn } = testRedis();

/** Every echomq job hash of a queue, by id, without the arrival stamp (new stamps are drawn on each move; the order is tested apart). */
async function echoJobs(name: string): Promise<Map<string, Record<string, string>>> {
  const k = keysOf(name);
  const out = new Map<string, Record<string, string>>();
  for (const key of await redis.keys(`${k.jobBase.replace(/[{}]/g, '\\$&')}*`)) {
    const { sq, opts, ...h } = await redis.hgetall(key);
    void sq;
    out.set(key.slice(k.jobBase.length), { ...h, ...(opts ? { opts: JSON.stringify(sortKeys(JSON.parse(opts))) } : {}) });
  }
  return out;
}
function sortKeys(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(sortKeys);
  if (x && typeof x === 'object') return Object.fromEntries(Object.entries(x).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => [k, sortKeys(v)]));
  return x;
}

describe('migrateToBullMQ', () => {
  it('moves lanes, priorities, delays, failures, history and a flow; BullMQ 6.7 runs each job once in the documented order', async () => {
    const name = qname('back');
    const q = new Queue(name, { connection: conn() });
    opened.push(q);
    // History: one completed, one failed, made by an echomq worker that is closed before the move.
    await q.add('done', { n: 0 });
    await q.add('boom', { n: -1 }, { attempts: 1 });
    const w = new Worker(name, async (job) => {
      await job.log(`ran ${job.name}`);
      if (job.name === 'boom') throw new Error('it broke');
      return { ok: job.data.n };
    }, { connection: conn() });
    await waitFor(async () => (await q.getCompletedCount()) === 1 && (await q.getFailedCount()) === 1, 10_000, 'echomq worker');
    await w.close();

    // Ready jobs in three lanes, arrivals interleaved, some prioritized, one LIFO.
    const plan: Array<[string, string, number, boolean?]> = [
      ['a1', 'a', 0], ['b1', 'b', 0], ['c1', 'default', 2], ['a2', 'a', 1], ['b2', 'b', 2],
      ['c2', 'default', 0], ['a3', 'a', 0], ['b3', 'b', 1], ['c3', 'default', 0, true],
    ];
    for (const [n, lane, priority, lifo] of plan) await q.add(n, { n }, { lane, priority, lifo, jobId: n, removeOnComplete: { count: 10, age: 60 } });
    await q.add('later', { n: 'later' }, { delay: 1500, jobId: 'later', lane: 'b', deduplication: { id: 'dd-later' } });
    await q.add('throttled', { n: 't' }, { jobId: 't', lane: 'b', deduplication: { id: 'tt', ttl: 60_000 } });
    const flow = new FlowProducer({ connection: conn() });
    opened.push(flow);
    await flow.add({ name: 'parent', queueName: name, data: {}, opts: { jobId: 'parent', lane: 'a' },
      children: [{ name: 'kid', queueName: name, data: { k: 1 }, opts: { jobId: 'kid', priority: 3 } }] });
    // A paused lane keeps its jobs in echomq.
    await q.add('held', {}, { lane: 'p', jobId: 'held' });
    await q.lanes.pause('p');
    const lastEchoId = Number(await redis.hget(keysOf(name).meta, 'id'));

    const dry = await migrateToBullMQ({ connection: redis, queues: [name], dryRun: true });
    expect(dry.queues[0]!.states.ready.moved).toBe(11);
    expect(await redis.exists(`bull:${name}:wait`)).toBe(0);

    const r = await migrateToBullMQ({ connection: redis, queues: [name], batchSize: 3 });
    const s = r.queues[0]!.states;
    expect([s.ready.moved, s.delayed.moved, s.failed.moved, s.completed.moved, s['waiting-children'].moved]).toEqual([11, 1, 1, 1, 1]);
    expect(r.queues[0]!.deduplication.moved).toBe(2);
    // Deduplication ids held as BullMQ holds them: the simple one by its job, the throttle with its time left.
    expect(await redis.get(`bull:${name}:de:dd-later`)).toBe('later');
    expect(await redis.pttl(`bull:${name}:de:tt`)).toBeGreaterThan(50_000);
    expect(await redis.hlen(keysOf(name).dedup)).toBe(0);
    expect(s.ready.left).toBe(1);
    expect(r.queues[0]!.cannot.map((c) => [c.id, c.code])).toEqual([["held", -26]]);
    expect(Number(await redis.get(`bull:${name}:id`))).toBeGreaterThanOrEqual(lastEchoId);
    // Only the paused lane's job is left in echomq.
    expect((await echoJobs(name)).size).toBe(1);

    // The order: priority first (0 before 1 before 2 …), then arrival across lanes; LIFO c3 ahead of its tier.
    const bq = new bull.Queue(name, { connection: conn() });
    opened.push(bq);
    const wait = (await redis.lrange(`bull:${name}:wait`, 0, -1)).reverse();
    expect([...wait, ...(await redis.zrange(`bull:${name}:prioritized`, 0, -1))]).toEqual(['c3', 'a1', 'b1', 'c2', 'a3', 't', 'a2', 'b3', 'c1', 'b2', 'kid']);

    // BullMQ shows the moved history and options.
    const done = await bq.getCompleted();
    expect(done.map((j) => [j.id, j.name, j.returnvalue])).toEqual([['1', 'done', { ok: 0 }]]);
    expect((await bq.getJobLogs('1')).logs).toEqual(['ran done']);
    const failed = await bq.getFailed();
    expect(failed.map((j) => [j.id, j.failedReason, j.attemptsMade])).toEqual([['2', 'it broke', 1]]);
    const a2 = (await bq.getJob('a2'))!;
    expect([a2.opts.priority, (a2.opts as Record<string, unknown>).lane, a2.opts.removeOnComplete]).toEqual([1, 'a', { count: 10, age: 60 }]);
    expect(await (await bq.getJob('parent'))!.getState()).toBe('waiting-children');
    expect((await bq.add('dup', {}, { deduplication: { id: 'dd-later' } })).id).toBe('later');
    expect((await bq.add('dup', {}, { deduplication: { id: 'tt', ttl: 1000 } })).id).toBe('t');

    // BullMQ runs everything once: the ready jobs in that order, the kid, then the parent with its value, then the delayed job.
    const ran: string[] = [];
    let parentSaw: unknown;
    const bw = new bull.Worker(name, async (job) => {
      ran.push(job.id!);
      if (job.id === 'parent') parentSaw = await job.getChildrenValues();
      return job.id;
    }, { connection: conn(), concurrency: 1 });
    opened.push(bw);
    await waitFor(() => ran.length >= 13, 10_000, 'BullMQ worker');
    await new Promise((res) => setTimeout(res, 200));
    await bw.close();
    expect(ran.slice(0, 10)).toEqual(['c3', 'a1', 'b1', 'c2', 'a3', 't', 'a2', 'b3', 'c1', 'b2']);
    expect(ran.slice(10, 12)).toEqual(['kid', 'parent']);
    expect(ran.slice(12)).toEqual(['later']);
    expect(parentSaw).toEqual({ [`bull:${name}:kid`]: 'kid' });
    expect(new Set(ran).size).toBe(ran.length);
  });

  it('round trip: BullMQ → echomq → BullMQ → echomq leaves every job hash as it was', async () => {
    const name = qname('trip');
    const bq = new bull.Queue(name, { connection: conn() });
    opened.push(bq);
    await bq.add('done', { n: 0 });
    await bq.add('boom', { n: -1 }, { attempts: 1 });
    const bw = new bull.Worker(name, async (job) => {
      await job.log('x');
      await job.updateProgress({ p: 1 });
      if (job.name === 'boom') throw new Error('broke');
      return { v: job.data.n };
    }, { connection: conn() });
    await waitFor(async () => (await bq.getCompletedCount()) === 1 && (await bq.getFailedCount()) === 1, 10_000, 'BullMQ worker');
    await bw.close();
    await bq.add('plain', { a: 1 }, { attempts: 3, backoff: { type: 'fixed', delay: 10 }, removeOnComplete: true, removeOnFail: { count: 2 } });
    await bq.add('prio', { a: 2 }, { priority: 7, jobId: 'custom', deduplication: { id: 'd1' } });
    await bq.add('lifo', { a: 3 }, { lifo: true, removeOnComplete: 5 });
    await bq.add('later', { a: 4 }, { delay: 60_000, removeOnFail: false });
    const fp = new bull.FlowProducer({ connection: conn() });
    opened.push(fp);
    await fp.add({ name: 'p', queueName: name, data: { p: 1 }, children: [
      { name: 'c', queueName: name, data: { c: 1 }, opts: { failParentOnFailure: true } },
      { name: 'c2', queueName: name, data: { c: 2 }, opts: { ignoreDependencyOnFailure: true, priority: 2 } },
    ] });
    const order = async () => [...(await redis.lrange(`bull:${name}:wait`, 0, -1)).reverse(), ...(await redis.zrange(`bull:${name}:prioritized`, 0, -1))];
    const bullOrder = await order();

    await migrateFromBullMQ({ connection: redis, queues: [name] });
    // A lane given in echomq after the first move must come back too.
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    const first = await echoJobs(name);
    const firstDedup = await redis.hgetall(keysOf(name).dedup);
    expect(Object.keys(firstDedup)).toEqual(['d1']);
    const firstDeps = await redis.hgetall(keysOf(name).depsBase + [...first].find(([, h]) => h.name === 'p')![0]);
    expect(first.size).toBe(9);

    const back = await migrateToBullMQ({ connection: redis, queues: [name], batchSize: 2 });
    expect(back.jobs).toBe(9);
    expect(await order()).toEqual(bullOrder);
    await migrateFromBullMQ({ connection: redis, queues: [name] });
    const second = await echoJobs(name);
    expect(second).toEqual(first);
    for (const [id, h] of first) expect(second.get(id), `job ${id}`).toEqual(h);
    expect(await redis.hgetall(keysOf(name).depsBase + [...first].find(([, h]) => h.name === 'p')![0])).toEqual(firstDeps);
    expect(await eq.getJobLogs('1')).toEqual({ logs: ['x'], count: 1 });
    expect(await redis.hgetall(keysOf(name).dedup)).toEqual(firstDedup);
  });

  it('keeps lanes through BullMQ: a second move forward puts each job back in its lane', async () => {
    const name = qname('lanes');
    const q = new Queue(name, { connection: conn() });
    opened.push(q);
    await q.add('x', {}, { lane: 'tenant-1', jobId: 'x' });
    await q.add('y', {}, { lane: 'tenant-2', priority: 4, jobId: 'y' });
    await q.add('z', {}, { jobId: 'z' });
    const before = await echoJobs(name);
    await migrateToBullMQ({ connection: redis, queues: [name] });
    expect(JSON.parse((await redis.hget(`bull:${name}:x`, 'opts'))!)).toEqual({ jobId: 'x', lane: 'tenant-1' });
    await migrateFromBullMQ({ connection: redis, queues: [name] });
    expect(await echoJobs(name)).toEqual(before);
    expect(await redis.zrange(keysOf(name).laneBase + 'tenant-2', 0, -1)).toHaveLength(1);
  });

  it('moves a job scheduler with its next slot; BullMQ 6.7 workers go on from it, and a move forward brings its lane back', async () => {
    const name = qname('back-sched');
    const q = new Queue(name, { connection: conn() });
    opened.push(q);
    await q.upsertJobScheduler('tick', { every: 400 }, { name: 'tick', data: { t: 1 }, opts: { lane: 'clock', priority: 2, attempts: 2 } });
    const slot = Number(await redis.zscore(keysOf(name).scheds, 'tick'));
    const r = await migrateToBullMQ({ connection: redis, queues: [name] });
    expect(r.queues[0]!.schedulers).toEqual({ moved: 1, left: 0 });
    expect(await redis.exists(keysOf(name).schedBase + 'tick')).toBe(0);
    const bq = new bull.Queue(name, { connection: conn() });
    opened.push(bq);
    const js = (await bq.getJobScheduler('tick'))!;
    expect([js.every, js.next, js.template?.data]).toEqual([400, slot, { t: 1 }]);
    expect(js.template?.opts).toMatchObject({ lane: 'clock', priority: 2, attempts: 2 });
    const ran: string[] = [];
    const bw = new bull.Worker(name, async (job) => {
      ran.push(job.id!);
    }, { connection: conn() });
    opened.push(bw);
    await waitFor(() => ran.length >= 2, 5000, 'two slots run by BullMQ');
    await bw.close();
    expect(ran[0]).toBe(`repeat:tick:${slot}`);
    expect(ran[1]).toBe(`repeat:tick:${slot + 400}`);
    await migrateFromBullMQ({ connection: redis, queues: [name] });
    expect(await redis.hmget(keysOf(name).schedBase + 'tick', 'lane', 'prio', 'every')).toEqual(['clock', '2', '400']);
  });

  it('moves a flow across two queues in one run; a child whose parent queue is not moved stays', async () => {
    const a = qname('back-fa');
    const b = qname('back-fb');
    const c = qname('back-fc');
    const flow = new FlowProducer({ connection: conn() });
    opened.push(flow);
    await flow.add({ name: 'top', queueName: a, data: {}, opts: { jobId: 'top' }, children: [
      { name: 'leaf', queueName: b, data: { v: 2 }, opts: { jobId: 'leaf', lane: 'x' } },
    ] });
    await flow.add({ name: 'other', queueName: c, data: {}, opts: { jobId: 'other' }, children: [
      { name: 'orphan', queueName: b, data: {}, opts: { jobId: 'orphan' } },
    ] });
    const r = await migrateToBullMQ({ connection: redis, queues: [a, b] });
    expect(r.queues[0]!.states['waiting-children'].moved).toBe(1);
    expect(r.queues[1]!.states.ready.moved).toBe(1);
    expect(r.queues[1]!.cannot.map((x) => [x.id, x.code])).toEqual([['orphan', -22]]);
    expect(await redis.smembers(`bull:${a}:top:dependencies`)).toEqual([`bull:${b}:leaf`]);
    const seen: unknown[] = [];
    const wa = new bull.Worker(a, async (job) => { seen.push(await job.getChildrenValues()); }, { connection: conn() });
    const wb = new bull.Worker(b, async (job) => `leaf ${job.data.v}`, { connection: conn() });
    opened.push(wa, wb);
    await waitFor(() => seen.length === 1, 5000, 'the parent in BullMQ');
    expect(seen[0]).toEqual({ [`bull:${b}:leaf`]: 'leaf 2' });
  });

  it('refuses while an echomq worker runs on the queue, and validates its input', async () => {
    const name = qname('busy');
    const q = new Queue(name, { connection: conn() });
    opened.push(q);
    const w = new Worker(name, async () => 1, { connection: conn() });
    opened.push(w);
    await q.add('x', {});
    await w.waitUntilReady();
    // The worker's connections carry echomq's prefix and the queue's name (and, on Redis 7.2+, the mark).
    await waitFor(async () => ((await redis.client('LIST')) as string).includes(`name=emq:${Buffer.from(name).toString('base64')}`), 5000, 'worker connection');
    await expect(migrateToBullMQ({ connection: redis, queues: [name] })).rejects.toThrow(/migrate-to-bullmq refused: .*(echomq worker|echomq's library mark)/);
    expect(await redis.exists(`bull:${name}:wait`)).toBe(0);
    await w.close();
    await expect(migrateToBullMQ({ connection: redis, queues: [] })).rejects.toBeInstanceOf(ValidationError);
    await expect(migrateToBullMQ({ connection: redis, queues: [name], batchSize: 0 })).rejects.toThrow(/batchSize/);
  });
});

describe('echomq migrate-to-bullmq', () => {
  it('reports per state, dry and for real, as text and JSON', async () => {
    const name = qname('back-cli');
    const q = new Queue(name, { connection: conn() });
    opened.push(q);
    await q.addBulk([{ name: 'a', data: {}, opts: { lane: 'x' } }, { name: 'b', data: {}, opts: { delay: 5000 } }]);
    await checkCliReport('migrate-to-bullmq', name, 'ready',
      async () => expect(await redis.exists(`legacy:${name}:wait`)).toBe(0),
      async () => expect(await redis.lrange(`legacy:${name}:wait`, 0, -1)).toEqual(['1']));
  });
});
