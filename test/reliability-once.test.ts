// Applied once (docs/protocol.md "Applied once"): calls whose reply is lost after Redis ran them are
// resent by ioredis; the request id makes the rerun answer from the first run's record. Faults
// come from a real TCP proxy on loopback (test/fault-proxy.ts) that drops replies and cuts the
// connection; BullMQ runs through the same proxy in the same test to show the difference.
import * as bullmq from 'bullmq';
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { FlowProducer, Queue, QueueEventsProducer, RequestOutcomeUnknownError, Worker, type Job } from '../src/index.js';
import { scripts } from '../src/scripts/index.js';
import { MetaField } from '../src/core/fields.js';
import { checkLaneInvariant } from './lane-invariant.js';
import { FaultProxy, faultScope, targetOf, everyNth, firstK, randomly, transitionOf, type SeenCommand } from './fault-proxy.js';
import { client, keysOf, qname, redisUrl, waitFor, activeJobs } from './helpers.js';
import { JobField } from '../src/core/fields.js';

const target = () => targetOf(redisUrl());

const isAdd = (c: SeenCommand) => transitionOf(c) === 'add';
/** BullMQ's add scripts go out as EVALSHA; only adds are sent on its Queue's connection during the loop. */
const isEvalsha = (c: SeenCommand) => c.name === 'EVALSHA';

describe('applied once: lost replies through a fault proxy', () => {
  const redis = client();
  const { proxy, open, defer, closeAll } = faultScope(redisUrl());
  afterAll(async () => {
    await closeAll();
    await redis.quit();
  });

  /** Job hashes of a queue (every job created, whatever its state). */
  async function jobHashes(name: string): Promise<string[]> {
    const k = keysOf(name);
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${k.jobBase.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 1000);
      cursor = next;
      out.push(...batch);
    } while (cursor !== '0');
    return out;
  }

  it("claims and settles without a request id ('') run as before and write no record", async () => {
    const name = qname('once-none');
    const k = keysOf(name);
    const q = open(new Queue(name, { connection: redisUrl() }));
    await q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }, { name: 'c', data: {} }]);
    const ctx = { client: redis, keys: k };
    const records = () => redis.keys(`${k.reqBase.replace(/[*?[\]\\]/g, '\\$&')}*`);
    const before = await records(); // the addBulk's
    const claimed = await scripts.claim(ctx, { count: 2, leaseMs: 30_000, requestId: '' });
    expect(claimed.jobs.length).toBe(2);
    const att = (f: string[]) => f[f.indexOf('att') + 1]!;
    const r = await scripts.completeMany(ctx, {
      jobs: claimed.jobs.map((j) => ({ id: j.id, token: att(j.fields), returnValue: '1' })), fetch: 1, leaseMs: 30_000,
      maxEventValueBytes: 100, requestId: '',
    });
    expect(r.codes).toEqual([1, 1]);
    expect(r.jobs.length).toBe(1);
    expect(await records()).toEqual(before);
  });

  it('a claim and a settle record their claimed jobs as a JSON list; a rerun answers from it, and from the string form earlier versions wrote', async () => {
    const name = qname('once-record');
    const k = keysOf(name);
    const q = open(new Queue(name, { connection: redisUrl() }));
    // Custom ids JSON must escape, beside plain ones.
    const ids = ['with space', 'quote"slash/back\\', 'tab\tnl\n', 'p4', 'p5'];
    await q.addBulk(ids.map((jobId) => ({ name: 'n', data: {}, opts: { jobId } })));
    const ctx = { client: redis, keys: k };
    const att = (f: string[]) => f[f.indexOf('att') + 1]!;
    const first = await scripts.claim(ctx, { count: 3, leaseMs: 30_000, requestId: 'rq-claim' });
    expect(first.jobs.map((j) => j.id)).toEqual(ids.slice(0, 3));
    const rec = JSON.parse((await redis.get(`${k.reqBase}rq-claim`))!);
    expect(rec).toEqual({ j: ids.slice(0, 3).flatMap((id) => [id, '1']) });
    const again = await scripts.claim(ctx, { count: 3, leaseMs: 30_000, requestId: 'rq-claim' });
    expect(again.jobs).toEqual(first.jobs);
    // A settle that claims the next two: codes as a count, the pairs as a list.
    const settle = {
      jobs: first.jobs.map((j) => ({ id: j.id, token: att(j.fields), returnValue: '1' })), fetch: 2, leaseMs: 30_000,
      maxEventValueBytes: 100, requestId: 'rq-settle',
    };
    const r = await scripts.completeMany(ctx, settle);
    expect(r.codes).toEqual([1, 1, 1]);
    expect(r.jobs.map((j) => j.id)).toEqual(ids.slice(3));
    expect(JSON.parse((await redis.get(`${k.reqBase}rq-settle`))!)).toEqual({ c: 3, j: ids.slice(3).flatMap((id) => [id, '1']) });
    const rerun = await scripts.completeMany(ctx, settle);
    expect(rerun).toEqual(r);
    // The record as an earlier version wrote it (one string of ids and attempts) answers alike.
    await redis.set(`${k.reqBase}rq-settle`, JSON.stringify({ c: 3, j: 'p4 1 p5 1' }), 'PX', 60_000);
    expect(await scripts.completeMany(ctx, settle)).toEqual(r);
  });

  it('100 adds with every 10th reply dropped leave exactly 100 jobs (BullMQ: 110)', async () => {
    const name = qname('once-add');
    const p = await proxy();
    p.policy = everyNth(10, isAdd);
    const queue = new Queue(name, { connection: p.url });
    queue.on('error', () => {});
    defer(() => queue.close());
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) ids.push((await queue.add('x', { i })).id!);
    expect(p.dropped.get('add')).toBeGreaterThanOrEqual(10); // resends count as adds too
    expect(new Set(ids).size).toBe(100);
    const hashes = await jobHashes(name);
    expect(hashes.length).toBe(100);
    const seen = new Map<number, number>();
    for (const h of hashes) {
      const i = JSON.parse((await redis.hget(h, JobField.data))!).i as number;
      seen.set(i, (seen.get(i) ?? 0) + 1);
    }
    expect([...seen.values()].every((n) => n === 1) && seen.size === 100).toBe(true);
    expect(await checkLaneInvariant(redis, keysOf(name), { registry: 'exact' })).toEqual([]);

    // BullMQ through the same kind of proxy: every dropped add is resent and added twice.
    const bname = qname('once-add-bull');
    const bp = await proxy();
    bp.policy = everyNth(10, isEvalsha);
    const bq = new bullmq.Queue(bname, { connection: { host: '127.0.0.1', port: bp.port, retryStrategy: () => 50 } });
    bq.on('error', () => {});
    defer(() => bq.obliterate({ force: true }).then(() => bq.close()));
    await bq.waitUntilReady();
    for (let i = 0; i < 100; i++) await bq.add('x', { i });
    const bullJobs = await bq.getJobCountByTypes('waiting');
    console.log(`[once] 100 adds, every 10th reply dropped: echomq ${hashes.length} jobs, BullMQ ${bullJobs} jobs (${bp.droppedTotal} replies dropped)`);
    expect(bullJobs).toBeGreaterThan(100);
  }, 30_000);

  it('addBulk with dropped replies adds every job once, and a rerun returns the first ids', async () => {
    const name = qname('once-bulk');
    const p = await proxy();
    p.policy = everyNth(3, isAdd);
    const queue = new Queue(name, { connection: p.url });
    queue.on('error', () => {});
    defer(() => queue.close());
    const all: string[] = [];
    for (let b = 0; b < 10; b++) {
      // 250 jobs: three script calls per bulk, sent in one round trip; a drop cuts the rest.
      const jobs = await queue.addBulk(Array.from({ length: 250 }, (_, i) => ({ name: 'x', data: { b, i }, opts: { lane: `l${i % 7}` } })));
      all.push(...jobs.map((j) => j.id!));
    }
    expect(p.droppedTotal).toBeGreaterThan(5);
    expect(new Set(all).size).toBe(2500);
    const hashes = new Set(await jobHashes(name));
    expect(hashes.size).toBe(2500);
    // Every acknowledged id (a rerun's included) names a job that exists.
    expect(all.filter((id) => !hashes.has(keysOf(name).jobBase + id))).toEqual([]);
    expect(await checkLaneInvariant(redis, keysOf(name), { registry: 'exact' })).toEqual([]);
  }, 30_000);

  /**
   * 300 jobs through a worker (concurrency 4, lockDuration 3 s) whose connection loses replies:
   * every job completed by its own processor, run once, none failed, none left active, no stall.
   */
  async function workerRun(label: string, policy: () => FaultProxy['policy'], noResend = false): Promise<{ dropped: number; ms: number; worker: Worker }> {
    const name = qname(label);
    const k = keysOf(name);
    const queue = new Queue(name, { connection: redisUrl() });
    defer(() => queue.obliterate({ force: true }).then(() => queue.close()));
    await queue.addBulk(Array.from({ length: 300 }, (_, i) => ({ name: 'x', data: { i } })));
    const p = await proxy();
    p.policy = policy();
    const runs = new Map<string, number>();
    const t0 = Date.now();
    // noResend: a client that rejects a command whose reply was lost (maxRetriesPerRequest 0)
    // instead of resending it, so the worker's own retry with the same request id is tested.
    const shared = noResend ? new Redis(p.url, { maxRetriesPerRequest: 0, retryStrategy: () => 20 }) : undefined;
    if (shared) {
      shared.on('error', () => {});
      defer(async () => shared.disconnect());
    }
    const worker = new Worker(name, async (job: Job) => {
      runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1);
      await new Promise((r) => setTimeout(r, 2));
      return job.data.i;
    }, { connection: shared ?? p.url, concurrency: 4, lockDuration: 3000, stalledInterval: 500, drainDelay: 1, runRetryDelay: 20 });
    worker.on('error', () => {});
    defer(() => worker.close(true));
    await waitFor(async () => (await redis.zcard(k.completed)) + (await redis.zcard(k.failed)) === 300, 30_000, `${label}: 300 jobs finished`);
    const ms = Date.now() - t0;
    // A claim lost on the way leaves its jobs active until their lease expires and a sweep
    // recovers them: they would then finish late, with a stall counted (stc, checked below).
    await worker.close();
    expect(await redis.zcard(k.failed)).toBe(0);
    expect(await redis.zcard(k.completed)).toBe(300);
    expect(await activeJobs(redis, k)).toBe(0);
    expect(runs.size).toBe(300);
    expect([...runs.values()].filter((n) => n > 1)).toEqual([]);
    for (const id of await redis.zrange(k.completed, 0, -1)) {
      expect(await redis.hmget(k.jobBase + id, JobField.attemptsMade, JobField.stalledCounter)).toEqual(['1', null]);
    }
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
    // Every record the run left expires within the window.
    for (const key of await redis.keys(`${k.reqBase.replace(/[*?[\]\\]/g, '\\$&')}*`)) {
      const ttl = await redis.pttl(key);
      expect(ttl > 0 && ttl <= 60_000).toBe(true);
    }
    return { dropped: p.droppedTotal, ms, worker };
  }

  it('a worker whose client rejects lost replies (no resend) retries claims and settles with the same request id', async () => {
    const r = await workerRun('once-noresend', () => everyNth(7), true);
    expect(r.dropped).toBeGreaterThan(20);
    console.log(`[once] no resend, every 7th reply dropped: 300 completed once (${r.dropped} drops, ${r.worker.releasedClaims} jobs handed back)`);
  }, 60_000);

  it('a lost claim that is not retried is handed back: front of its tier, no stall, counted', async () => {
    const name = qname('once-release');
    const k = keysOf(name);
    const queue = new Queue(name, { connection: redisUrl() });
    defer(() => queue.obliterate({ force: true }).then(() => queue.close()));
    const added = await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'x', data: { i } })));
    const p = await proxy();
    p.policy = everyNth(1, (c) => transitionOf(c) === 'claim');
    const c = new Redis(p.url, { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    c.on('error', () => {});
    defer(async () => c.disconnect());
    const ctx = { client: c, keys: k };
    const err = await scripts.claim(ctx, { count: 3, leaseMs: 30_000, requestId: 'test-claim-1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestOutcomeUnknownError);
    expect((err as RequestOutcomeUnknownError).requestId).toBe('test-claim-1');
    expect((err as Error).message).toContain('test-claim-1');
    expect(await activeJobs(redis, k)).toBe(3); // it ran: three jobs active, nobody runs them
    p.policy = () => false;
    const direct = { client: redis, keys: k };
    expect((await scripts.releaseClaims(direct, ['test-claim-1'])).sort()).toEqual(added.slice(0, 3).map((j) => j.id).sort());
    expect(await activeJobs(redis, k)).toBe(0);
    expect(await redis.hget(k.meta, MetaField.releasedClaims)).toBe('3');
    for (const j of added.slice(0, 3)) expect(await redis.hget(k.jobBase + j.id, JobField.stalledCounter)).toBe(null);
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
    // Back at the front: the next claim takes them first, in their order.
    const next = await scripts.claim(direct, { count: 3, leaseMs: 30_000 });
    expect(next.jobs.map((j) => j.id)).toEqual(added.slice(0, 3).map((j) => j.id));
    // A late rerun of the released claim gets none of them: they are active under a newer attempt.
    const rerun = await scripts.claim(direct, { count: 3, leaseMs: 30_000, requestId: 'test-claim-1' });
    expect(rerun.jobs).toEqual([]);
  }, 20_000);

  it('an add whose reply is lost rejects with the request named; its retry with that id creates nothing new', async () => {
    const name = qname('once-unknown');
    const k = keysOf(name);
    const p = await proxy();
    p.policy = everyNth(1, isAdd);
    const c = new Redis(p.url, { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    c.on('error', () => {});
    defer(async () => c.disconnect());
    const queue = new Queue(name, { connection: c });
    defer(() => queue.close());
    const err = await queue.add('x', { a: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestOutcomeUnknownError);
    const rid = (err as RequestOutcomeUnknownError).requestId;
    expect((err as Error).message).toMatch(/^add: outcome unknown for request /);
    expect((await jobHashes(name)).length).toBe(1); // it ran
    p.policy = () => false;
    const direct = { client: redis, keys: k };
    const job = { id: '', name: 'x', data: '{"a":1}', opts: '', priority: 0, lane: 'default', delay: 0, lifo: false, keepCompleted: [-1, 0] as [number, number], keepFailed: [-1, 0] as [number, number] };
    const [again] = await scripts.add(direct, [job], rid);
    expect(again!.id).toBe('1');
    expect((await jobHashes(name)).length).toBe(1);
  }, 20_000);

  it('300 jobs through a worker whose connection drops every 7th reply all complete once (BullMQ beside it)', async () => {
    const r = await workerRun('once-worker', () => everyNth(7));
    expect(r.dropped).toBeGreaterThan(20);

    // BullMQ, same workload and faults, for the record.
    const bname = qname('once-worker-bull');
    const bq = new bullmq.Queue(bname, { connection: target() });
    defer(() => bq.obliterate({ force: true }).then(() => bq.close()));
    await bq.addBulk(Array.from({ length: 300 }, (_, i) => ({ name: 'x', data: { i } })));
    const bp = await proxy();
    bp.policy = everyNth(7);
    const bruns = new Map<string, number>();
    const bw = new bullmq.Worker(bname, async (job) => {
      bruns.set(job.id!, (bruns.get(job.id!) ?? 0) + 1);
      await new Promise((res) => setTimeout(res, 2));
      return job.data.i;
    }, { connection: { host: '127.0.0.1', port: bp.port, retryStrategy: () => 50 }, concurrency: 4, lockDuration: 3000, stalledInterval: 500, drainDelay: 1 });
    bw.on('error', () => {});
    defer(() => bw.close(true));
    const deadline = Date.now() + 15_000;
    let c = 0;
    let f = 0;
    while (Date.now() < deadline) {
      ({ completed: c, failed: f } = await bq.getJobCounts('completed', 'failed') as { completed: number; failed: number });
      if (c + f >= 300) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    await bw.close(true);
    const twice = [...bruns.values()].filter((n) => n > 1).length;
    console.log(`[once] worker, every 7th reply dropped: echomq 300 completed, 0 failed, 0 run twice (${r.dropped} drops, ${r.ms} ms); ` +
      `BullMQ ${c} completed, ${f} failed, ${twice} run twice, ${300 - bruns.size} never run (${bp.droppedTotal} drops)`);
  }, 60_000);

  it('random drops over 10 seeds: every job completes once', async () => {
    const drops: number[] = [];
    for (let seed = 1; seed <= 10; seed++) drops.push((await workerRun(`once-seed${seed}`, () => randomly(0.1, seed))).dropped);
    console.log(`[once] random drops (p = 0.1) over seeds 1..10: ${drops.join(', ')} drops; all 300 jobs completed once in each`);
  }, 180_000);

  it('job.log and job.retry whose replies are lost apply once', async () => {
    const name = qname('once-log');
    const k = keysOf(name);
    const p = await proxy();
    const queue = new Queue(name, { connection: p.url });
    queue.on('error', () => {});
    defer(() => queue.close());
    const job = await queue.add('x', {});
    p.policy = everyNth(2, (c) => transitionOf(c) === 'addLog');
    for (let i = 0; i < 10; i++) await job.log(`line ${i}`);
    expect(p.dropped.get('addLog')).toBeGreaterThanOrEqual(5);
    expect(await redis.lrange(k.logsBase + job.id, 0, -1)).toEqual(Array.from({ length: 10 }, (_, i) => `line ${i}`));

    // A failed job retried through a lost reply: the resend answers 1, not "not failed".
    const direct = { client: redis, keys: k };
    const [claimed] = (await scripts.claim(direct, { count: 1, leaseMs: 30_000 })).jobs;
    const att = claimed!.fields[claimed!.fields.indexOf(JobField.attemptsStarted) + 1]!;
    await scripts.fail(direct, { id: job.id!, token: att, reason: 'x', stack: '[]', retryDelayMs: -1, exhausted: true, fetch: 0, leaseMs: 1000 });
    p.policy = firstK(1, (c) => transitionOf(c) === 'retry');
    const failed = (await queue.getJob(job.id!))!;
    await failed.retry();
    expect(p.dropped.get('retry')).toBe(1);
    expect(await redis.hget(k.jobBase + job.id, JobField.state)).toBe('w');
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
  }, 20_000);

  it('flows (one queue and across queues) and publishEvent whose replies are lost apply once', async () => {
    const a = qname('once-flow-a');
    const b = qname('once-flow-b');
    const p = await proxy();
    // The first reply of every addFlow call is lost: each per-queue call is resent once.
    let seen = 0;
    p.policy = (c) => transitionOf(c) === 'addFlow' && ++seen % 2 === 1;
    const flows = new FlowProducer({ connection: p.url });
    flows.on('error', () => {});
    defer(() => flows.close());
    const one = await flows.add({ name: 'root', queueName: a, data: {}, children: [1, 2, 3].map((i) => ({ name: 'leaf', queueName: a, data: { i } })) });
    const cross = await flows.add({ name: 'root', queueName: a, data: {}, children: [1, 2].map((i) => ({ name: 'leaf', queueName: b, data: { i } })) });
    expect(p.dropped.get('addFlow')).toBeGreaterThanOrEqual(3);
    expect((await jobHashes(a)).length).toBe(5); // two roots, three leaves
    expect((await jobHashes(b)).length).toBe(2);
    for (const node of [one, cross]) {
      for (const j of [node.job, ...(node.children ?? []).map((c) => c.job)]) {
        expect(await redis.exists(keysOf(j.queueName).jobBase + j.id)).toBe(1);
      }
    }
    expect(await redis.hget(keysOf(a).jobBase + cross.job.id, JobField.pendingChildren)).toBe('2');

    const producer = new QueueEventsProducer(a, { connection: p.url });
    defer(() => producer.close());
    p.policy = everyNth(2, (c) => transitionOf(c) === 'publishEvent');
    for (let i = 0; i < 10; i++) await producer.publishEvent({ eventName: 'tick', i: String(i) });
    const entries = (await redis.xrange(keysOf(a).events, '-', '+')).filter(([, f]) => f[1] === 'tick');
    expect(entries.map(([, f]) => f[3])).toEqual(Array.from({ length: 10 }, (_, i) => String(i)));
  }, 20_000);

  it('a request older than the window without a record is refused, typed; one with a record is answered', async () => {
    const name = qname('once-expired');
    const k = keysOf(name);
    const direct = { client: redis, keys: k };
    const job = { id: '', name: 'x', data: '{}', opts: '', priority: 0, lane: 'default', delay: 0, lifo: false, keepCompleted: [-1, 0] as [number, number], keepFailed: [-1, 0] as [number, number] };
    const now = Number((await redis.time())[0]) * 1000;
    const err = await scripts.add(direct, [job], `old@${now - 59_000}`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RequestOutcomeUnknownError);
    expect((err as RequestOutcomeUnknownError).expired).toBe(true);
    expect((err as Error).message).toContain('EMQ_EXPIRED');
    expect((await jobHashes(name)).length).toBe(0);
    // Sent 50 s ago (within the window) and run then: its rerun, even now, gets the first reply.
    const [first] = await scripts.add(direct, [job], `recent@${now - 50_000}`);
    const [again] = await scripts.add(direct, [job], `recent@${now - 50_000}`);
    expect(again).toEqual(first);
    expect((await jobHashes(name)).length).toBe(1);
  });

  it('no request record outlives the window', async () => {
    const name = qname('once-ttl');
    const k = keysOf(name);
    const p = await proxy();
    p.policy = randomly(0.2, 7);
    const queue = new Queue(name, { connection: p.url });
    queue.on('error', () => {});
    defer(() => queue.close());
    for (let i = 0; i < 30; i++) await queue.add('x', { i });
    const keys = await redis.keys(`${k.reqBase.replace(/[*?[\]\\]/g, '\\$&')}*`);
    expect(keys.length).toBe(30);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  }, 30_000);
});
