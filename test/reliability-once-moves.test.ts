// Applied once for the single-job moves and the cross-queue flow helpers (docs/protocol.md
// "Applied once"): each call's reply is dropped by the fault proxy (test/fault-proxy.ts), which
// cuts the connection so ioredis resends it; the user must see the first run's answer and Redis
// must hold one effect.
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { FlowProducer, Queue, Worker, type Job } from '../src/index.js';
import { scripts } from '../src/scripts/index.js';
import { deriveRequestId } from '../src/scripts/request-id.js';
import { JobField } from '../src/core/fields.js';
import { checkLaneInvariant } from './lane-invariant.js';
import { faultScope, firstK, transitionOf, type SeenCommand } from './fault-proxy.js';
import { client, keysOf, qname, redisUrl, sleep, waitFor } from './helpers.js';


const is = (name: string) => (c: SeenCommand) => transitionOf(c) === name;

describe('applied once: moves and flow helpers with lost replies', () => {
  const redis = client();
  const { proxy, open, defer, closeAll } = faultScope(redisUrl());
  afterAll(async () => {
    await closeAll();
    await redis.quit();
  });

  /** The events of one job in a queue's stream, in order ("event" or "event:prev"). */
  async function eventsOf(name: string, id: string): Promise<string[]> {
    const out: string[] = [];
    for (const [, f] of await redis.xrange(keysOf(name).events, '-', '+')) {
      // Shared entries name several jobs: each job's own fields start at its jobId.
      const shared: Record<string, string> = {};
      let i = 2;
      for (; i < f.length && f[i] !== 'jobId'; i += 2) shared[f[i]!] = f[i + 1]!;
      while (i < f.length) {
        const own: Record<string, string> = { ...shared, jobId: f[i + 1]! };
        for (i += 2; i < f.length && f[i] !== 'jobId'; i += 2) own[f[i]!] = f[i + 1]!;
        if (own.jobId === id) out.push(own.prev ? `${f[1]}:${own.prev}` : f[1]!);
      }
    }
    return out;
  }

  it('promote: the resend answers, not "not delayed"; one waiting event', async () => {
    const name = qname('once-promote');
    const p = await proxy();
    const q = open(new Queue(name, { connection: p.url }));
    const job = await q.add('x', {}, { delay: 60_000 });
    p.policy = firstK(1, is('promote'));
    const outcome = await job.promote().then(() => 'resolved', (e: Error) => e.message);
    console.log(`[once-moves] promote with its reply dropped: ${outcome}`);
    expect(p.dropped.get('promote')).toBe(1);
    expect(outcome).toBe('resolved');
    expect(await redis.hget(keysOf(name).jobBase + job.id, JobField.state)).toBe('w');
    expect((await eventsOf(name, job.id!)).filter((e) => e.split(':')[0] === 'waiting')).toEqual(['waiting:delayed']);
    expect(await checkLaneInvariant(redis, keysOf(name), { registry: 'exact' })).toEqual([]);
  });

  it('changePriority: the resend does not move the job back in its tier again', async () => {
    const name = qname('once-prio');
    const k = keysOf(name);
    const p = await proxy();
    const q = open(new Queue(name, { connection: p.url }));
    const direct = open(new Queue(name, { connection: redisUrl() }));
    const a = await q.add('a', {}, { priority: 3 });
    const b = await q.add('b', {}, { priority: 3 });
    // Between the first run and its resend another job arrives in the same tier.
    p.onDrop = async () => void (await direct.add('c', {}, { priority: 3 }));
    p.policy = firstK(1, is('changePriority'));
    await q.changePriority(a.id!, 3); // b a, then c
    // The job API resends the same way.
    await direct.add('d', {}, { priority: 3 });
    const viaJob = (await q.getJob(b.id!))!;
    p.onDrop = async () => void (await direct.add('e', {}, { priority: 3 }));
    p.policy = firstK(1, is('changePriority'));
    await viaJob.changePriority({ priority: 3 }); // a c d b, then e
    p.onDrop = undefined;
    expect(p.dropped.get('changePriority')).toBe(2);
    const order = (await scripts.claim({ client: redis, keys: k }, { count: 10, leaseMs: 30_000 })).jobs
      .map((j) => j.fields[j.fields.indexOf(JobField.name) + 1]);
    console.log(`[once-moves] changePriority (queue, then job) with the reply dropped: claim order ${order.join(' ')}`);
    expect(order).toEqual(['a', 'c', 'd', 'b', 'e']);
  });

  it('remove with children: the resend answers, and the children go too; one removed event each', async () => {
    const name = qname('once-remove');
    const k = keysOf(name);
    const flows = open(new FlowProducer({ connection: redisUrl() }));
    const tree = await flows.add({ name: 'root', queueName: name, children: [1, 2].map((i) => ({ name: 'leaf', queueName: name, data: { i } })) });
    const ids = [tree.job.id!, ...tree.children!.map((c) => c.job.id!)];
    const p = await proxy();
    const q = open(new Queue(name, { connection: p.url }));
    p.policy = firstK(1, is('remove'));
    const r = await q.remove(tree.job.id!);
    const left = (await Promise.all(ids.map((id) => redis.exists(k.jobBase + id)))).reduce((x, y) => x + y, 0);
    console.log(`[once-moves] Queue.remove of a flow root with its reply dropped: returned ${r}, ${left} of 3 jobs left`);
    expect(p.dropped.get('remove')).toBe(1);
    expect(r).toBe(1);
    expect(left).toBe(0);
    for (const id of ids) expect((await eventsOf(name, id)).filter((e) => e.split(':')[0] === 'removed')).toHaveLength(1);
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
  });

  it("moveToWait: a worker's hand-back (RateLimitError) and a lock holder's call answer the first run", async () => {
    const name = qname('once-wait');
    const k = keysOf(name);
    const p = await proxy();
    const q = open(new Queue(name, { connection: redisUrl() }));
    const job = await q.add('x', {});
    const errors: string[] = [];
    let runs = 0;
    p.policy = firstK(1, is('moveToWait'));
    const w = new Worker(name, async () => {
      if (++runs === 1) throw Worker.RateLimitError();
      return 'done';
    }, { connection: p.url });
    w.on('error', (e) => errors.push(e.message));
    defer(() => w.close(true));
    await waitFor(async () => (await redis.hget(k.jobBase + job.id, JobField.state)) === 'c', 10_000, 'completed');
    await w.close();
    console.log(`[once-moves] worker hand-back with its reply dropped: ${runs} runs, errors: ${JSON.stringify(errors)}`);
    expect(p.dropped.get('moveToWait')).toBe(1);
    expect(errors).toEqual([]);
    expect(runs).toBe(2);
    expect((await eventsOf(name, job.id!)).filter((e) => e.split(':')[0] === 'waiting')).toEqual(['waiting:active']);

    // A lock holder (manual processing): the resend replies the first run's 0, not "missing lock".
    const held = await q.add('y', {});
    const m = open(new Worker(name, null, { connection: p.url }));
    const got = (await m.getNextJob('tok-1'))!;
    expect(got.id).toBe(held.id);
    p.policy = firstK(1, is('moveToWait'));
    const outcome = await got.moveToWait('tok-1').then((r) => `resolved ${r}`, (e: Error) => e.message);
    console.log(`[once-moves] job.moveToWait(token) with its reply dropped: ${outcome}`);
    expect(p.dropped.get('moveToWait')).toBe(2);
    expect(outcome).toBe('resolved 0');
    expect(await redis.hget(k.jobBase + held.id, JobField.state)).toBe('w');
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
  });

  it('a parent in another queue: a lost registration is still withdrawn when the child already exists', async () => {
    const A = qname('once-dep-a');
    const B = qname('once-dep-b');
    const qa = open(new Queue(A, { connection: redisUrl() }));
    const qb = open(new Queue(B, { connection: redisUrl() }));
    const parent = await qb.add('p', {});
    await qa.add('x', {}, { jobId: 'dup' });
    const p = await proxy();
    const pa = open(new Queue(A, { connection: p.url }));
    p.policy = firstK(1, is('addDependency'));
    const got = await pa.add('x', {}, { jobId: 'dup', parent: { id: parent.id!, queue: `emq:${B}` } });
    const pk = keysOf(B).jobBase + parent.id;
    const deps = await redis.hgetall(keysOf(B).depsBase + parent.id);
    const pend = await redis.hget(pk, JobField.pendingChildren);
    console.log(`[once-moves] add of an existing child, registration reply dropped: parent deps ${JSON.stringify(deps)}, pend ${pend}`);
    expect(p.dropped.get('addDependency')).toBe(1);
    expect(got.id).toBe('dup');
    // The existing job is not this parent's child: the parent does not wait for it.
    expect(Object.values(deps).filter((v) => v === 'p')).toEqual([]);
    expect(Number(pend ?? '0')).toBe(0);

    // A new child: registered once.
    p.policy = firstK(1, is('addDependency'));
    const child = await pa.add('y', {}, { parent: { id: parent.id!, queue: `emq:${B}` } });
    expect(p.dropped.get('addDependency')).toBe(2);
    expect(await redis.hget(keysOf(B).depsBase + parent.id, keysOf(A).jobBase + child.id)).toBe('p');
    expect(await redis.hget(pk, JobField.pendingChildren)).toBe('1');
  });

  it('resolveChild: removeChildDependency answers true and the child forgets its parent', async () => {
    const A = qname('once-rc-a');
    const B = qname('once-rc-b');
    const flows = open(new FlowProducer({ connection: redisUrl() }));
    const p = await proxy();
    // removeChildDependency of a child whose parent lives in another queue.
    const t1 = await flows.add({ name: 'p', queueName: B, children: [{ name: 'c', queueName: A }] });
    const pa = open(new Queue(A, { connection: p.url }));
    const childJob = (await pa.getJob(t1.children![0]!.job.id!))!;
    p.policy = firstK(1, is('resolveChild'));
    const removed = await childJob.removeChildDependency();
    const pid = await redis.hget(keysOf(A).jobBase + childJob.id, JobField.parentId);
    console.log(`[once-moves] removeChildDependency with its reply dropped: ${removed}, child keeps parent ${pid}`);
    expect(p.dropped.get('resolveChild')).toBe(1);
    expect(removed).toBe(true);
    expect(pid).toBe(null);
    expect(await redis.hget(keysOf(B).jobBase + t1.job.id, JobField.pendingChildren)).toBe('0');
  });

  it('resolveChild: a refused retry of a finished child takes back its reopening', async () => {
    const A = qname('once-ro-a');
    const B = qname('once-ro-b');
    const flows = open(new FlowProducer({ connection: redisUrl() }));
    const p = await proxy();
    const pa = open(new Queue(A, { connection: p.url }));
    // A completed child retried in the wrong state: it was put back among its parent's pending
    // dependencies first (resolveChild p), and the refusal takes that back with the entry the
    // first run replied; a rerun replying nothing would leave the parent waiting for it.
    const t2 = await flows.add({ name: 'p', queueName: B, children: [{ name: 'x', queueName: A }] });
    const xId = t2.children![0]!.job.id!;
    const w = new Worker(A, async () => 'ok', { connection: redisUrl() });
    w.on('error', () => {});
    defer(() => w.close(true));
    await waitFor(async () => (await redis.hget(keysOf(B).jobBase + t2.job.id, JobField.pendingChildren)) === '0', 10_000, 'child counted');
    await w.close();
    const x = (await pa.getJob(xId))!;
    p.policy = firstK(1, is('resolveChild'));
    const refused = await x.retry('failed').then(() => 'resolved', (e: Error) => e.message);
    const entry = await redis.hget(keysOf(B).depsBase + t2.job.id, keysOf(A).jobBase + xId);
    const pend = await redis.hget(keysOf(B).jobBase + t2.job.id, JobField.pendingChildren);
    console.log(`[once-moves] retry of a completed child as failed, reopen reply dropped: ${refused}; parent entry ${entry}, pend ${pend}`);
    expect(p.dropped.get('resolveChild')).toBe(1);
    expect(refused).not.toBe('resolved');
    expect(entry).toBe('c"ok"');
    expect(pend).toBe('0');
  });

  it('a cross-queue flow on a client that does not resend: every part retried under its derived id', async () => {
    const A = qname('once-fl-a');
    const B = qname('once-fl-b');
    const p = await proxy();
    let n = 0;
    p.policy = (c) => transitionOf(c) === 'addFlow' && ++n % 2 === 1;
    const c = new Redis(p.url, { maxRetriesPerRequest: 0, retryStrategy: () => 20 });
    c.on('error', () => {});
    defer(async () => c.disconnect());
    const flows = open(new FlowProducer({ connection: c }));
    const outcome = await flows.add({
      name: 'root', queueName: A, children: [{ name: 'mid', queueName: B, children: [{ name: 'leaf', queueName: A }] }],
    }).then(() => 'resolved', (e: Error) => e.message);
    const jobs = (await redis.keys(`${keysOf(A).jobBase}*`)).length + (await redis.keys(`${keysOf(B).jobBase}*`)).length;
    console.log(`[once-moves] 3-part flow, no resend, first reply of every part dropped: ${outcome}; ${jobs} jobs`);
    expect(p.dropped.get('addFlow')).toBeGreaterThanOrEqual(3);
    expect(outcome).toBe('resolved');
    expect(jobs).toBe(3);
    // One logical request id: each part's id is <logical id>/<part>.
    const rids: string[] = [];
    for (const q of [A, B]) {
      for (const key of await redis.keys(`${keysOf(q).reqBase}*`)) rids.push(key.slice(keysOf(q).reqBase.length));
    }
    expect(rids).toHaveLength(3);
    const logical = new Set(rids.map((r) => r.replace(/\/\d+(@\d+)?$/, '$1')));
    expect(logical.size).toBe(1);
    expect(rids.map((r) => /\/(\d+)(@\d+)?$/.exec(r)?.[1]).sort()).toEqual(['0', '1', '2']);
  });

  it('changeDelay, removeDeduplicationKey and removeJobScheduler: the resend answers the first run, one effect', async () => {
    const name = qname('once-misc');
    const k = keysOf(name);
    const p = await proxy();
    const q = open(new Queue(name, { connection: p.url }));
    // changeDelay: the resend neither moves the due time again nor writes a second event.
    const job = await q.add('x', {}, { delay: 60_000 });
    p.policy = firstK(1, is('changeDelay'));
    p.onDrop = () => sleep(30); // the resend comes later: a rerun would move the due time
    await job.changeDelay(120_000);
    p.onDrop = undefined;
    const delayed = (await eventsOf(name, job.id!)).filter((e) => e === 'delayed');
    console.log(`[once-moves] changeDelay with its reply dropped: ${delayed.length} delayed events (1 from the add)`);
    expect(p.dropped.get('changeDelay')).toBe(1);
    expect(delayed).toHaveLength(2);

    // Job.removeDeduplicationKey: true, not false (the id was already free).
    const held = await q.add('d', {}, { deduplication: { id: 'dd-1' } });
    p.policy = firstK(1, is('removeDeduplicationKey'));
    const freed = await held.removeDeduplicationKey();
    console.log(`[once-moves] job.removeDeduplicationKey with its reply dropped: ${freed}`);
    expect(p.dropped.get('removeDeduplicationKey')).toBe(1);
    expect(freed).toBe(true);
    expect(await redis.hget(k.dedup, 'dd-1')).toBe(null);

    // removeJobScheduler: true, not false (no such scheduler).
    await q.upsertJobScheduler('every-hour', { every: 3_600_000 }, { name: 's' });
    p.policy = firstK(1, is('removeScheduler'));
    const gone = await q.removeJobScheduler('every-hour');
    console.log(`[once-moves] removeJobScheduler with its reply dropped: ${gone}`);
    expect(p.dropped.get('removeScheduler')).toBe(1);
    expect(gone).toBe(true);
    expect(await q.getJobSchedulersCount()).toBe(0);
  });

  it('derived request ids keep the send time last and stay within 200 bytes', () => {
    expect(deriveRequestId('abc7@1700000000000', 2)).toBe('abc7/2@1700000000000');
    expect(deriveRequestId('abc7', 'r0')).toBe('abc7/r0');
    expect(() => deriveRequestId('x'.repeat(198), 10)).toThrow(RangeError);
    expect(deriveRequestId('x'.repeat(197), 10)).toHaveLength(200);
    expect(() => deriveRequestId('abc', '')).toThrow(RangeError);
    expect(() => deriveRequestId('abc', 'a/b')).toThrow(RangeError);
    expect(() => deriveRequestId('', 1)).toThrow(RangeError);
  });
});
