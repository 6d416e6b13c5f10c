// The move from BullMQ, differentially: BullMQ 6.7 (the real package) writes every state with
// its own API on the test Redis (prefix `bull`), migrateFromBullMQ moves it, and echomq's Queue
// and Worker must show a user what BullMQ would have: the same jobs by id with their fields and
// history, the serving order, due times, children's values, the scheduler's next slot, the
// deduplication id and ids above BullMQ's.
import * as bull from 'bullmq';
import * as bull5 from 'bullmq5';
import { describe, expect, it } from 'vitest';
import { Queue, Worker, migrateFromBullMQ, MigrationRefusedError, type Job } from '../../src/index.js';
import { ValidationError } from '../../src/core/errors.js';
import { keysOf, qname, redisUrl, sleep, waitFor } from '../helpers.js';
import { checkCliReport, testRedis } from './helpers.js';

const { redis, opened, conn } = testRedis();

/** What a user reads of a job, BullMQ's toJSON fields that both sides must agree on. */
function seen(j: { toJSON(): Record<string, unknown> } | undefined) {
  if (!j) return undefined;
  const x = j.toJSON();
  // job.opts as both show it for such a job: `delay: 0` or absent, and echomq names a
  // scheduler's job (repeatJobKey) in its opts as it does for jobs its own schedulers make.
  const { delay, repeatJobKey, ...opts } = JSON.parse(JSON.stringify(x.opts)) as Record<string, unknown>;
  void repeatJobKey;
  if (delay) opts.delay = delay;
  return {
    id: x.id, name: x.name, data: x.data, opts, progress: x.progress, returnvalue: x.returnvalue,
    failedReason: x.failedReason, stacktrace: x.stacktrace, attemptsMade: x.attemptsMade,
    timestamp: x.timestamp, processedOn: x.processedOn, finishedOn: x.finishedOn, delay: x.delay,
  };
}

/** BullMQ's serving order of its ready jobs: wait from the right, then prioritized by score. */
async function bullOrder(name: string): Promise<string[]> {
  const wait = (await redis.lrange(`bull:${name}:wait`, 0, -1)).reverse();
  return [...wait, ...(await redis.zrange(`bull:${name}:prioritized`, 0, -1))];
}

describe('migrateFromBullMQ', () => {
  it('moves every state of two queues with flows between them; echomq serves the rest as BullMQ would', async () => {
    const a = qname('mig-a');
    const b = qname('mig-b');
    const qa = new bull.Queue(a, { connection: conn() });
    const qb = new bull.Queue(b, { connection: conn() });
    opened.push(qa, qb);

    // Finished history: one completed with logs and progress, one failed with its stack.
    await qa.add('done', { n: 0 }, { attempts: 1, removeOnFail: { age: 3600, count: 5 } });
    await qa.add('boom', { n: -1 }, { attempts: 1 });
    const w = new bull.Worker(a, async (job) => {
      await job.log(`ran ${job.name}`);
      await job.updateProgress(50);
      if (job.name === 'boom') throw new Error('it broke');
      return { ok: job.data.n };
    }, { connection: conn() });
    await waitFor(async () => (await qa.getCompletedCount()) === 1 && (await qa.getFailedCount()) === 1, 10_000, 'BullMQ worker');
    await w.close();

    // Ready and delayed jobs, a scheduler, a deduplicated job, global concurrency.
    await qa.add('w1', { n: 1 });
    await qa.add('w2', { n: 2 });
    await qa.add('p5', { n: 5 }, { priority: 5 });
    await qa.add('p1', { n: 6 }, { priority: 1 });
    await qa.add('p5b', { n: 7 }, { priority: 5 });
    await qa.add('lifo', { n: 3 }, { lifo: true });
    const d1 = await qa.add('later', { n: 8 }, { delay: 60_000 });
    const d2 = await qa.add('sooner', { n: 9 }, { delay: 30_000 });
    await qa.add('dedup', { n: 10 }, { deduplication: { id: 'dd1', ttl: 60_000 } });
    await qa.upsertJobScheduler('tick', { every: 3_600_000 }, { name: 'tick', data: { t: 1 } });
    await qa.setGlobalConcurrency(4);
    // A flow: a parent in A with one child in A (pending) and one in B (completed by BullMQ).
    const flow = new bull.FlowProducer({ connection: conn() });
    opened.push(flow);
    const tree = await flow.add({
      name: 'parent', queueName: a, data: { p: 1 },
      children: [{ name: 'kid-a', queueName: a, data: { k: 'a' } }, { name: 'kid-b', queueName: b, data: { k: 'b' } }],
    });
    const wb = new bull.Worker(b, async (job) => `value of ${job.name}`, { connection: conn() });
    await waitFor(async () => (await qb.getCompletedCount()) === 1, 10_000, 'child in B');
    await wb.close();
    // An active job whose worker died (its lock expired): it moves as waiting, front of its tier.
    await qa.add('stalled', { n: 11 });
    const manual = new bull.Worker(a, null, { connection: conn(), lockDuration: 50 });
    opened.push(manual);
    const taken = (await manual.getNextJob('tok'))!;
    expect(taken.name).toBe('lifo'); // BullMQ served its next job: lifo first
    await sleep(120);

    const ids = [...(await redis.lrange(`bull:${a}:wait`, 0, -1)), ...(await redis.zrange(`bull:${a}:prioritized`, 0, -1)),
      d1.id!, d2.id!, ...(await redis.zrange(`bull:${a}:completed`, 0, -1)), ...(await redis.zrange(`bull:${a}:failed`, 0, -1)),
      taken.id!, tree.job.id!];
    const before = new Map<string, ReturnType<typeof seen>>();
    for (const id of ids) before.set(id, seen(await qa.getJob(id)));
    const orderBefore = [taken.id!, ...(await bullOrder(a))];
    const dueBefore = new Map([[d1.id!, d1.timestamp + 60_000], [d2.id!, d2.timestamp + 30_000]]);
    const bullLastId = Number(await redis.get(`bull:${a}:id`));
    const counts = {
      wait: await redis.llen(`bull:${a}:wait`), prioritized: await redis.zcard(`bull:${a}:prioritized`),
      delayed: await redis.zcard(`bull:${a}:delayed`), active: await redis.llen(`bull:${a}:active`),
      completed: await redis.zcard(`bull:${a}:completed`), failed: await redis.zcard(`bull:${a}:failed`),
      waitingChildren: await redis.zcard(`bull:${a}:waiting-children`),
    };
    expect(counts).toEqual({ wait: 6, prioritized: 3, delayed: 2, active: 1, completed: 1, failed: 1, waitingChildren: 1 });
    const nextTick = Number(await redis.zscore(`bull:${a}:repeat`, 'tick'));
    const doneLogs = (await qa.getJobLogs(ids.find((id) => before.get(id)?.name === 'done')!)).logs;
    await manual.close();

    const dry = await migrateFromBullMQ({ connection: redisUrl(), queues: [a, b], dryRun: true });
    expect(dry.refusals).toEqual([]);
    expect(await redis.exists(keysOf(a).meta)).toBe(0); // a dry run writes nothing

    const report = await migrateFromBullMQ({ connection: redisUrl(), queues: [a, b] });
    const st = report.queues[0]!.states;
    expect({ wait: st.wait.moved, prioritized: st.prioritized.moved, delayed: st.delayed.moved, active: st.active.moved,
      completed: st.completed.moved, failed: st.failed.moved, waitingChildren: st['waiting-children'].moved })
      .toEqual(counts);
    // The dry run said the same, per state.
    for (const s of Object.keys(st) as Array<keyof typeof st>) expect(dry.queues[0]!.states[s].moved, s).toBe(st[s].moved);
    expect(report.queues[0]!.schedulers.moved).toBe(1);
    expect(report.queues[0]!.deduplication.moved).toBe(1);
    expect(report.queues[1]!.states.completed.moved).toBe(1);
    expect(report.queues[0]!.cannotCount).toBe(0);
    // BullMQ keeps only its housekeeping keys: no job of either queue is left behind.
    for (const q of [a, b]) {
      const left = (await redis.keys(`bull:${q}:*`)).map((k) => k.slice(`bull:${q}:`.length)).sort();
      expect(left.every((s) => ['events', 'id', 'marker', 'meta', 'pc', 'stalled-check'].includes(s)), left.join()).toBe(true);
    }

    const ea = new Queue(a, { connection: conn() });
    const eb = new Queue(b, { connection: conn() });
    opened.push(ea, eb);
    // Every job by its BullMQ id, with what a user reads of it.
    for (const id of ids) {
      const want = before.get(id)!;
      const got = seen(await ea.getJob(id));
      if (id === taken.id) {
        expect({ ...got, processedOn: undefined }).toEqual({ ...want, processedOn: undefined });
        continue;
      }
      expect(got, `job ${id} (${want?.name})`).toEqual(want);
    }
    expect((await ea.getJobLogs(ids.find((id) => before.get(id)?.name === 'done')!)).logs).toEqual(doneLogs);
    expect((await ea.getJob(taken.id!))!.stalledCounter).toBe(1);
    expect(await ea.getGlobalConcurrency()).toBe(4);
    // Due times: BullMQ's due ms on the Redis clock, in the same order.
    for (const [id, due] of dueBefore) expect(Math.floor(Number(await redis.zscore(keysOf(a).delayed, id)))).toBe(due);
    // The scheduler continues from BullMQ's next slot, whose job moved as that delayed job.
    const scheds = await ea.getJobSchedulers();
    expect(scheds.map((s) => [s.key, s.next, s.every])).toEqual([['tick', nextTick, 3_600_000]]);
    expect(await (await ea.getJob(`repeat:tick:${nextTick}`))?.getState()).toBe('waiting');
    // The deduplication id is still held, with its time left.
    const dup = await ea.add('dedup', { n: 99 }, { deduplication: { id: 'dd1', ttl: 60_000 } });
    expect(await ea.getDeduplicationJobId('dd1')).toBe(dup.id);
    expect(Number(dup.id)).toBeLessThanOrEqual(bullLastId);
    // New ids start above BullMQ's.
    expect(report.queues[0]!.ids).toEqual({ bullmq: bullLastId, echomq: bullLastId });
    expect(Number((await ea.add('new', {})).id)).toBeGreaterThan(bullLastId);

    // echomq's worker serves the rest in BullMQ's order; the parent gets both children's values.
    const order: string[] = [];
    const childValues: Record<string, unknown>[] = [];
    const ew = new Worker(a, async (job: Job) => {
      order.push(job.id!);
      if (job.name === 'parent') childValues.push(await job.getChildrenValues());
      return job.name;
    }, { connection: conn(), concurrency: 1 });
    opened.push(ew);
    await waitFor(() => childValues.length === 1 && orderBefore.every((id) => order.includes(id)), 10_000, 'the moved jobs to run');
    await ew.close();
    // The moved ready jobs in BullMQ's order (the job added since, and the parent its child
    // released, come in between as they would in BullMQ).
    expect(order.filter((id) => orderBefore.includes(id))).toEqual(orderBefore);
    expect(Object.values(childValues[0]!).sort()).toEqual(['kid-a', 'value of kid-b']);
    // The scheduler's slot ran once in echomq, and its next slot follows BullMQ's.
    const after = await ea.getJobSchedulers();
    expect(after.map((x) => x.next)).toEqual([nextTick + 3_600_000]);
    expect(await (await ea.getJob(`repeat:tick:${nextTick + 3_600_000}`))?.getState()).toBe('delayed');
    // A failed job moved is retried by echomq.
    const failedId = ids.find((id) => before.get(id)?.name === 'boom')!;
    await (await ea.getJob(failedId))!.retry();
    expect(await (await ea.getJob(failedId))!.getState()).toBe('waiting');
  }, 30_000);

  it('flows with failed children: ignored failures and a parent failed by its child read and end as in BullMQ', async () => {
    // The same scenario twice: one queue left to BullMQ, one moved halfway through to echomq.
    async function scenario(name: string): Promise<bull.Queue> {
      const q = new bull.Queue(name, { connection: conn() });
      opened.push(q);
      const flow = new bull.FlowProducer({ connection: conn() });
      opened.push(flow);
      await flow.add({ name: 'p1', queueName: name, children: [
        { name: 'bad-ignored', queueName: name, opts: { ignoreDependencyOnFailure: true } },
        { name: 'later', queueName: name, opts: { delay: 600_000 } },
      ] });
      await flow.add({ name: 'p2', queueName: name, children: [{ name: 'bad-fatal', queueName: name, opts: { failParentOnFailure: true } }] });
      const manual = new bull.Worker(name, null, { connection: conn() });
      for (let i = 0; i < 2; i++) {
        const job = (await manual.getNextJob('t'))!;
        expect(job.name).toMatch(/^bad-/);
        await job.moveToFailed(new Error(`${job.name} broke`), 't', false);
      }
      await manual.close();
      return q;
    }
    type Outcome = { ignored: string[]; p1: unknown; p2: string | undefined };
    async function outcome(q: { getJobs(t: string[]): Promise<Array<{ id?: string; name: string }>>; getJob(id: string): Promise<any> }, prefix: string, name: string): Promise<Outcome> {
      const all = await q.getJobs(['completed', 'failed']);
      const fatal = all.find((j) => j.name === 'bad-fatal')!.id!;
      const p1 = await q.getJob(all.find((j) => j.name === 'p1')!.id!);
      const p2 = await q.getJob(all.find((j) => j.name === 'p2')!.id!);
      return {
        ignored: Object.values(await p1.getFailedChildrenValues()) as string[],
        p1: p1.returnvalue,
        p2: p2.failedReason?.replace(`${prefix}:${name}:${fatal}`, '<the child>'),
      };
    }
    const run = async (job: { name: string }) => job.name;

    const ref = qname('mig-fref');
    const qRef = await scenario(ref);
    await (await qRef.getDelayed())[0]!.promote();
    const bw = new bull.Worker(ref, run, { connection: conn() });
    await waitFor(async () => (await qRef.getCompletedCount()) === 2 && (await qRef.getFailedCount()) === 3, 10_000, 'BullMQ to finish');
    await bw.close();
    const want = await outcome(qRef as never, 'bull', ref);

    const name = qname('mig-flow');
    await scenario(name);
    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [name] });
    expect(r.queues[0]!.cannotCount).toBe(0);
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    await (await eq.getDelayed())[0]!.promote();
    const ew = new Worker(name, run, { connection: conn() });
    opened.push(ew);
    await waitFor(async () => (await eq.getCompletedCount()) === 2 && (await eq.getFailedCount()) === 3, 10_000, 'echomq to finish');
    await ew.close();
    expect(await outcome(eq as never, 'emq', name)).toEqual(want);
    expect(want.p2).toBe('child <the child> failed');
  });

  it("carries BullMQ 5's repeatable jobs as job schedulers that go on from their next job", async () => {
    const name = qname('mig-rep5');
    const q5 = new bull5.Queue(name, { connection: conn() });
    opened.push(q5);
    await q5.add('tick', { x: 1 }, { repeat: { every: 3_600_000, limit: 50 }, attempts: 3 });
    const [rep] = await q5.getRepeatableJobs();
    const next = Number(rep!.next);
    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [name] });
    expect(r.queues[0]!.schedulers).toEqual({ moved: 1, left: 0 });
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    const [s] = await eq.getJobSchedulers();
    expect([s!.key, s!.next, s!.every, s!.limit, s!.iterationCount, s!.template?.data]).toEqual([rep!.key, next, 3_600_000, 50, 1, { x: 1 }]);
    // Its next job moved as that delayed job; run in echomq, the schedule goes on from it.
    const slot = (await eq.getJob(`repeat:${rep!.key}:${next}`))!;
    expect(await slot.getState()).toBe('delayed');
    await slot.promote();
    const w = new Worker(name, async () => 'ok', { connection: conn() });
    opened.push(w);
    await waitFor(async () => (await eq.getCompletedCount()) === 1, 10_000, 'the slot job');
    await w.close();
    const after = await eq.getJob(`repeat:${rep!.key}:${next + 3_600_000}`);
    expect([after?.name, after?.data, after?.opts.attempts, await after?.getState()]).toEqual(['tick', { x: 1 }, 3, 'delayed']);
  });

  it("moves BullMQ 5's paused list (a paused queue of BullMQ 5) in its order, paused", async () => {
    const name = qname('mig-p5');
    const q5 = new bull5.Queue(name, { connection: conn() });
    opened.push(q5);
    const jobs = await q5.addBulk(Array.from({ length: 5 }, (_, i) => ({ name: `j${i}`, data: { i } })));
    await q5.pause();
    expect(await redis.llen(`bull:${name}:paused`)).toBe(5); // BullMQ 5 moves wait to paused
    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [name] });
    expect([r.queues[0]!.states.paused.moved, r.queues[0]!.paused]).toEqual([5, true]);
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    expect(await eq.isPaused()).toBe(true);
    await eq.resume();
    const w = new Worker(name, null, { connection: conn() });
    opened.push(w);
    const served: string[] = [];
    for (let i = 0; i < 5; i++) served.push((await w.getNextJob('t'))!.id!);
    expect(served).toEqual(jobs.map((j) => j.id)); // BullMQ 5 would serve them in this order
    await w.close();
  });

  it("a keepLastIfActive next job waits for its holder in echomq and runs when the holder finishes, as BullMQ would add it then", async () => {
    const name = qname('mig-kl');
    const q = new bull.Queue(name, { connection: conn() });
    opened.push(q);
    const dedup = { id: 'k1', keepLastIfActive: true };
    const holder = await q.add('first', { v: 1 }, { deduplication: dedup });
    const manual = new bull.Worker(name, null, { connection: conn(), lockDuration: 50 });
    opened.push(manual);
    expect((await manual.getNextJob('t'))!.id).toBe(holder.id);
    await q.add('second', { v: 2 }, { deduplication: dedup });
    await q.add('third', { v: 3 }, { deduplication: dedup }); // the latest next job wins
    expect(await redis.exists(`bull:${name}:dn:k1`)).toBe(1);
    await manual.close();
    await sleep(120); // the holder's lock expires: its worker is gone
    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [name] });
    expect([r.queues[0]!.states.active.moved, r.queues[0]!.deduplication.moved, r.queues[0]!.cannotCount]).toEqual([1, 1, 0]);
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    const seenData: unknown[] = [];
    const w = new Worker(name, async (job: Job) => { seenData.push(job.data); }, { connection: conn(), concurrency: 1 });
    opened.push(w);
    await waitFor(() => seenData.length === 2, 10_000, 'holder and next job');
    await w.close();
    expect(seenData).toEqual([{ v: 1 }, { v: 3 }]);
  });

  it('moves a paused queue paused, and a rerun moves nothing twice', async () => {
    const name = qname('mig-p');
    const q = new bull.Queue(name, { connection: conn() });
    opened.push(q);
    await q.pause();
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: `j${i}`, data: { i } })));
    const r1 = await migrateFromBullMQ({ connection: redisUrl(), queues: [name], batchSize: 7 });
    expect(r1.queues[0]!.paused).toBe(true);
    expect(r1.jobs).toBe(30);
    const r2 = await migrateFromBullMQ({ connection: redisUrl(), queues: [name], batchSize: 7 });
    expect(r2.jobs).toBe(0);
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    expect(await eq.isPaused()).toBe(true);
    expect(await eq.getWaitingCount()).toBe(30);
  });

  it('leaves what it cannot move in BullMQ and says why: a live lock, a parent in a queue not moved, an id echomq holds', async () => {
    const a = qname('mig-r');
    const b = qname('mig-r2');
    const qa = new bull.Queue(a, { connection: conn() });
    opened.push(qa);
    const flow = new bull.FlowProducer({ connection: conn() });
    opened.push(flow);
    await flow.add({ name: 'parent', queueName: b, children: [{ name: 'kid', queueName: a }] });
    await qa.add('held', {});
    await qa.add('taken', {}, { jobId: 'custom-1' });
    const manual = new bull.Worker(a, null, { connection: conn(), lockDuration: 30_000 });
    opened.push(manual);
    const live = (await manual.getNextJob('tok'))!; // kid: the first added
    await manual.close(); // its lock stays (30 s): the job is still BullMQ's
    const eq = new Queue(a, { connection: conn() });
    opened.push(eq);
    await eq.add('mine', {}, { jobId: 'custom-1' });

    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [a] });
    const codes = Object.fromEntries(r.queues[0]!.cannot.map((c) => [c.id, c.code]));
    expect(codes).toEqual({ [live.id!]: -21, 'custom-1': -20 });
    expect(r.queues[0]!.states.wait.moved).toBe(1);
    expect(await redis.lrange(`bull:${a}:wait`, 0, -1)).toEqual(['custom-1']);
    expect(await redis.lrange(`bull:${a}:active`, 0, -1)).toEqual([live.id]);
    // The parent's queue is not moved: its pending child would be stranded.
    await redis.del(`bull:${a}:${live.id}:lock`);
    const r2 = await migrateFromBullMQ({ connection: redisUrl(), queues: [a] });
    expect(Object.fromEntries(r2.queues[0]!.cannot.map((c) => [c.id, c.code]))).toEqual({ 'custom-1': -20, [live.id!]: -22 });
  });

  it('moves a parent with more children than one call in steps, and leaves Pro group jobs and a parent with too many pending children', async () => {
    const name = qname('mig-pro');
    const q = new bull.Queue(name, { connection: conn() });
    opened.push(q);
    const grouped = await q.add('grouped', {});
    await redis.hset(`bull:${name}:${grouped.id}`, 'gid', 'tenant-1'); // how BullMQ Pro marks a group job
    const flow = new bull.FlowProducer({ connection: conn() });
    opened.push(flow);
    const big = await flow.add({ name: 'big', queueName: name, children: [{ name: 'kid', queueName: name }] });
    // 2,500 more processed children: more than one bounded call moves with their parent.
    const processed = Object.fromEntries(Array.from({ length: 2500 }, (_, i) => [`bull:${name}:done-${i}`, String(i)]));
    await redis.hset(`bull:${name}:${big.job.id}:processed`, processed);
    // 1,001 pending children: pending ones move only with their parent, in one call.
    const huge = await flow.add({ name: 'huge', queueName: name, children: [{ name: 'kid2', queueName: name }] });
    await redis.sadd(`bull:${name}:${huge.job.id}:dependencies`, ...Array.from({ length: 1000 }, (_, i) => `bull:${name}:pend-${i}`));
    // A parent whose pending child is a Pro group job: the child stays, so the parent stays too.
    const withPro = await flow.add({ name: 'pro-parent', queueName: name, children: [{ name: 'pro-kid', queueName: name }] });
    await redis.hset(`bull:${name}:${withPro.children![0]!.job.id}`, 'gid', 'tenant-2');
    const dry = await migrateFromBullMQ({ connection: redisUrl(), queues: [name], dryRun: true });
    const r = await migrateFromBullMQ({ connection: redisUrl(), queues: [name], batchSize: 50 });
    expect(Object.fromEntries(r.queues[0]!.cannot.map((c) => [c.id, [c.what, c.code]]))).toEqual({
      [grouped.id!]: ['wait', -23], [huge.job.id!]: ['waiting-children', -24],
      [huge.children![0]!.job.id!]: ['wait', -22], // its parent stays, so it stays with it
      [withPro.job.id!]: ['waiting-children', -22], [withPro.children![0]!.job.id!]: ['wait', -23],
    });
    expect(r.queues[0]!.cannot.find((c) => c.code === -23)!.reason).toMatch(/BullMQ Pro/);
    expect(r.queues[0]!.states['waiting-children'].moved).toBe(1);
    expect(dry.queues[0]!.states['waiting-children'].moved).toBe(2); // a dry run cannot see the pending limit
    expect(dry.queues[0]!.states['waiting-children'].left).toBe(1);
    expect(await redis.exists(`bull:${name}:${grouped.id}`, `bull:${name}:${huge.job.id}`, `bull:${name}:${big.job.id}`)).toBe(2);
    expect((await redis.zrange(`bull:${name}:waiting-children`, 0, -1)).sort()).toEqual([huge.job.id, withPro.job.id].sort());
    // The parent moved in steps has every child's value, and waits for its last child.
    const eq = new Queue(name, { connection: conn() });
    opened.push(eq);
    const moved = (await eq.getJob(big.job.id!))!;
    expect(await moved.getState()).toBe('waiting-children');
    const values = await moved.getChildrenValues();
    expect(Object.keys(values).length).toBe(2500);
    expect((await moved.getDependenciesCount()).unprocessed).toBe(1);
  });

  it('refuses before writing: bad input, colliding keys, BullMQ workers connected', async () => {
    await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [] })).rejects.toThrow(ValidationError);
    await expect(migrateFromBullMQ({ connection: redisUrl(), queues: ['a:b'] })).rejects.toThrow(/queues\[0\]/);
    await expect(migrateFromBullMQ({ connection: redisUrl(), queues: ['x'], batchSize: 0 })).rejects.toThrow(/batchSize/);
    // BullMQ's queue `{q}` and echomq's `q` under one prefix name the same keys.
    const q0 = qname('mig-c');
    const braced = new bull.Queue(`{${q0}}`, { connection: conn() });
    opened.push(braced);
    await braced.add('x', {});
    await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [q0], prefix: 'bull' })).rejects.toThrow(/keys of BullMQ's queue/);
    await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [q0], prefix: 'a', bullmqPrefix: `a:{${q0}}` })).rejects.toThrow(/share a key prefix/);
    const name = qname('mig-w');
    const q = new bull.Queue(name, { connection: conn() });
    opened.push(q);
    await q.add('x', {});
    const w = new bull.Worker(name, async () => 1, { connection: conn(), autorun: false, name: 'svc' });
    opened.push(w);
    await w.waitUntilReady();
    await waitFor(async () => (await q.getWorkersCount()) > 0, 5000, 'BullMQ worker named');
    const err = await migrateFromBullMQ({ connection: redisUrl(), queues: [name] }).catch((e) => e);
    expect(err).toBeInstanceOf(MigrationRefusedError);
    expect(String(err.message)).toMatch(/BullMQ workers are connected/);
    expect(await redis.llen(`bull:${name}:wait`)).toBe(1);
    expect(await redis.exists(keysOf(name).meta)).toBe(0);
    // Under one prefix for both, a worker connection without a library name (Redis < 7.2, as
    // here) may be either's: refused unless forced, and the report names what was forced past.
    const one = qname('mig-one');
    const named = redis.duplicate();
    opened.push({ close: () => named.quit() });
    await named.client('SETNAME', `bull:${Buffer.from(one).toString('base64')}:w:svc`);
    const server = Number(/redis_version:(\d+)\.(\d+)/.exec(await redis.info('server'))!.slice(1).join('.'));
    if (server < 7.2) {
      await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [one], prefix: 'bull' })).rejects.toThrow(/may be BullMQ's or echomq's/);
      const forced = await migrateFromBullMQ({ connection: redisUrl(), queues: [one], prefix: 'bull', force: true });
      expect(forced.workers.forced.join()).toMatch(/may be BullMQ's or echomq's/);
    } else {
      // Redis 7.2+ shows the library name: ioredis without echomq's mark is BullMQ's worker.
      await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [one], prefix: 'bull', force: true })).rejects.toThrow(/BullMQ workers are connected/);
    }
    // BullMQ Pro's group keys: the queue is refused whole.
    const pro = qname('mig-prokeys');
    await redis.rpush(`bull:${pro}:groups:tenant-1`, '1');
    await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [pro] })).rejects.toThrow(/BullMQ Pro group data/);
    // A dry run reports the refusal with what would move.
    const dry = await migrateFromBullMQ({ connection: redisUrl(), queues: [name], dryRun: true });
    expect(dry.refusals.join()).toMatch(/BullMQ workers are connected/);
    expect(dry.queues[0]!.states.wait.moved).toBe(1);
    await w.close();
  });
});

describe('echomq migrate-from-bullmq', () => {
  it('reports per state, dry and for real, as text and JSON', async () => {
    const name = qname('mig-cli');
    const q = new bull.Queue(name, { connection: conn(), prefix: 'legacy' });
    opened.push(q);
    await q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {}, opts: { delay: 5000 } }]);
    await checkCliReport('migrate-from-bullmq', name, 'wait',
      async () => expect(await redis.llen(`legacy:${name}:wait`)).toBe(1),
      async () => expect(await redis.exists(`legacy:${name}:wait`)).toBe(0));
  });
});
