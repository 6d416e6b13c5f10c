/**
 * Step jobs side by side with BullMQ: a processor moves its own job (moveToDelayed,
 * moveToWaitingChildren, moveToWait) with its token and throws DelayedError,
 * WaitingChildrenError or WaitingError; the worker neither completes nor fails it and the move
 * does not count as an attempt. maxStartedAttempts bounds the runs.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { closeConnections, collect, sideBySide, type Lib, type LibName } from './harness.js';
import { client, keysOf, waitFor } from '../helpers.js';
import { depsKey, jobKey } from '../../src/core/keys.js';
import { lifecycleScripts } from '../../src/scripts/lifecycle.js';
import { ValidationError } from '../../src/core/errors.js';

afterAll(closeConnections);
const plain = client();
afterAll(() => plain.quit());

type AnyJob = { id?: string; name: string; data: any; attemptsMade: number; attemptsStarted: number; [k: string]: any };

/**
 * Adds a child of an active job, BullMQ's way (`parent: { id, queue }` on add). Where echomq's
 * Queue.add does not take `parent` yet, the child is written as a flow leaf and counted in the
 * parent's dependencies directly (what that option does), so the step semantics are tested here.
 */
async function addChild(lib: Lib, side: LibName, queue: any, parent: AnyJob, name: string, opts: Record<string, unknown> = {}): Promise<void> {
  const qualified = side === 'bullmq' ? parent.queueQualifiedName : `${queue.keys.prefix}:${queue.name}`;
  try {
    await queue.add(name, {}, { ...opts, parent: { id: parent.id, queue: qualified } });
    return;
  } catch (e) {
    // echomq's Queue.add refuses the parent options it does not take yet (a ValidationError).
    if (side === 'bullmq' || !(e instanceof ValidationError) || !/parent/i.test(e.field)) throw e;
  }
  const keys = keysOf(queue.name);
  const childId = `child-${parent.id}-${name}`;
  // The parent counts the child before the child can run (and finish).
  await plain.multi().hset(depsKey(keys, parent.id!), jobKey(keys, childId), 'p').hincrby(jobKey(keys, parent.id!), 'pend', 1).exec();
  await lifecycleScripts.addFlow({ client: plain, keys }, [{
    id: childId, name, data: '{}', opts: '', priority: 0, lane: 'default', delay: 0, lifo: false,
    keepCompleted: [1000, 0], keepFailed: [10000, 0], children: [],
    parent: { id: parent.id!, key: jobKey(keys, parent.id!), queue: queue.name, prefix: keys.prefix },
    policy: opts.failParentOnFailure ? 'f' : '',
  }]);
}

function worker(lib: Lib, name: string, connection: Redis, fn: (job: AnyJob, token: string) => Promise<unknown>, opts: Record<string, unknown> = {}) {
  const w = new lib.Worker(name, fn as never, { connection, ...opts });
  w.on('error', () => {});
  return w;
}

describe('step jobs (BullMQ: DelayedError, WaitingChildrenError, WaitingError)', () => {
  it('DelayedError after moveToDelayed: neither completed nor failed, the attempt is not counted', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const events: string[] = [];
      const w = worker(lib, name, connection, async (job, token) => {
        events.push(`run ${job.data.step} made ${job.attemptsMade}`);
        if (job.data.step === 1) {
          await job.updateData({ step: 2 });
          await job.moveToDelayed(Date.now() + 100, token);
          throw new lib.DelayedError();
        }
        return `done at ${job.data.step}`;
      });
      w.on('completed', (job, rv) => events.push(`completed ${rv}`));
      w.on('failed', (job, err) => events.push(`failed ${err.message}`));
      const job = await q.add('s', { step: 1 });
      await waitFor(() => events.some((e) => e.startsWith('completed')), 5000, 'completed');
      const done = (await lib.Job.fromId(q as never, job.id!))!;
      const seen = { events, made: done.attemptsMade, started: done.attemptsStarted, data: done.data, rv: done.returnvalue };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.made).toBe(1);
  });

  it('WaitingError after moveToWait: the job runs again with its data, no attempt counted', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      let runs = 0;
      const w = worker(lib, name, connection, async (job, token) => {
        runs++;
        if (runs === 1) {
          await job.updateData({ again: true });
          await job.moveToWait(token);
          throw new lib.WaitingError();
        }
        return job.data;
      });
      const done = collect((cb) => w.on('completed', cb), 1);
      const job = await q.add('w', { again: false }, { priority: 3 });
      const [[, rv]] = (await done) as unknown as Array<[unknown, unknown]>;
      const final = (await lib.Job.fromId(q as never, job.id!))!;
      const seen = { runs, rv, made: final.attemptsMade, started: final.attemptsStarted, priority: final.priority };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('moveToWaitingChildren resolves false without pending children, and the processor goes on', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const w = worker(lib, name, connection, async (job, token) => ({ moved: await job.moveToWaitingChildren(token) }));
      const done = collect((cb) => w.on('completed', cb), 1);
      await q.add('p', {});
      const [[job, rv]] = (await done) as unknown as Array<[AnyJob, unknown]>;
      const seen = { rv, made: job.attemptsMade };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('delayed → waiting-children → completed in three runs across two workers, attemptsMade 1 at the end', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      const runs: string[] = [];
      const processor = (who: string) => async (job: AnyJob, token: string) => {
        if (job.name === 'child') return `child of ${job.data.parent ?? 'p'}`;
        runs.push(`${who}: step ${job.data.step}, made ${job.attemptsMade}`);
        switch (job.data.step) {
          case 1:
            await job.updateData({ step: 2 });
            await job.moveToDelayed(Date.now() + 150, token);
            throw new lib.DelayedError();
          case 2: {
            await addChild(lib, side, q, job, 'child');
            await job.updateData({ step: 3 });
            if (await job.moveToWaitingChildren(token)) {
              runs.push(`parked: ${await job.getState()}`);
              throw new lib.WaitingChildrenError();
            }
            return 'no children';
          }
          default:
            return Object.values(await job.getChildrenValues());
        }
      };
      const w1 = worker(lib, name, connection, processor('w1'));
      const parent = await q.add('parent', { step: 1 }, { priority: 2 });
      await waitFor(async () => (await parent.getState()) === 'delayed', 5000, 'delayed');
      await w1.close();
      const w2 = worker(lib, name, connection, processor('w2'));
      await waitFor(async () => (await parent.getState()) === 'completed', 5000, 'completed');
      const done = (await lib.Job.fromId(q as never, parent.id!))!;
      const seen = { runs, made: done.attemptsMade, started: done.attemptsStarted, rv: done.returnvalue, priority: done.priority };
      await w2.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.runs).toEqual(['w1: step 1, made 0', 'w2: step 2, made 0', 'parked: waiting-children', 'w2: step 3, made 0']);
    expect(r.echomq.made).toBe(1);
  });

  it('a waiting-children step job whose child fails with failParentOnFailure fails', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      const w = worker(lib, name, connection, async (job, token) => {
        if (job.name === 'child') throw new Error('child broke');
        if (job.data.step === 1) {
          await addChild(lib, side, q, job, 'child', { failParentOnFailure: true });
          await job.updateData({ step: 2 });
          if (await job.moveToWaitingChildren(token)) throw new lib.WaitingChildrenError();
        }
        return 'should not complete';
      });
      const parent = await q.add('parent', { step: 1 });
      await waitFor(async () => (await parent.getState()) === 'failed', 5000, 'parent failed');
      const done = (await lib.Job.fromId(q as never, parent.id!))!;
      const seen = { state: await done.getState(), made: done.attemptsMade, started: done.attemptsStarted };
      await w.close();
      await q.close();
      return seen;
    });
    // Both move the parent back to wait and fail it when it next starts (a second start,
    // counted as an attempt), without running the processor again.
    expect(r.bullmq).toEqual({ state: 'failed', made: 1, started: 2 });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('moveToWaitingChildren is refused once a child failed the job while it ran', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      let refusal = '';
      const w = worker(lib, name, connection, async (job, token) => {
        if (job.name === 'child') throw new Error('child broke');
        await addChild(lib, side, q, job, 'child', { failParentOnFailure: true });
        await waitFor(async () => (await q.getJobCounts('failed')).failed === 1, 5000, 'child failed');
        try {
          await job.moveToWaitingChildren(token);
        } catch (e) {
          refusal = `${(e as Error).name}: ${(e as Error).message}`;
          throw e;
        }
        return 'should not complete';
      }, { concurrency: 2 });
      const parent = await q.add('parent', {});
      await waitFor(async () => (await parent.getState()) === 'failed', 5000, 'parent failed');
      const seen = { refusal: refusal.replace(String(parent.id), '<id>'), state: await parent.getState() };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq.refusal, r.bullmq.refusal).toMatch(new RegExp('^' + r.bullmq.refusal.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    expect(r.echomq.state).toBe(r.bullmq.state);
    expect(r.echomq.refusal).toMatch(/^UnrecoverableError: Cannot complete job <id> because it has at least one failed child/);
  });

  it('maxStartedAttempts bounds the runs of a step job', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      let runs = 0;
      const w = worker(lib, name, connection, async (job, token) => {
        runs++;
        await job.moveToDelayed(Date.now() + 10, token);
        throw new lib.DelayedError();
      }, { maxStartedAttempts: 2 });
      const failed = collect((cb) => w.on('failed', cb), 1);
      const job = await q.add('loop', {});
      const [[, err]] = (await failed) as unknown as Array<[AnyJob, Error]>;
      const done = (await lib.Job.fromId(q as never, job.id!))!;
      const seen = { runs, message: err.message, state: await done.getState(), reason: done.failedReason, started: done.attemptsStarted };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.message).toBe('job started more than allowable limit');
  });
});
