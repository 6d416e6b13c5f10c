/**
 * Jobs that stalled more than maxStalledCount times, side by side with BullMQ, where a program
 * looks right after the failure: a flow child's parent in another queue has already been told
 * when the worker's 'failed' event fires (ignoreDependencyOnFailure, removeDependencyOnFailure,
 * continueParentOnFailure), the failures come newest claim first, and removeOnFail counts
 * them. Also: an active job whose lease expired can be removed, and frees global concurrency.
 *
 * The deliberate difference of stalled.test.ts stands (BullMQ fails such a job when a worker
 * next fetches it, echomq in the sweep itself); what the listener observes is the same.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide, type Lib } from './harness.js';
import { until } from './events-helpers.js';

afterAll(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs the jobs on a first worker, closes it with close(true), then starts a sweeping second worker. */
async function strandThenSweep(lib: Lib, name: string, count: number) {
  let started = 0;
  const w1 = new lib.Worker(name, (_job, _token, signal?: AbortSignal) => {
    started++;
    return new Promise((resolve) => {
      signal?.addEventListener('abort', () => resolve('w1'));
      setTimeout(() => resolve('w1'), 300);
    });
  }, { connection: connection(), lockDuration: 500, stalledInterval: 100, maxStalledCount: 0, concurrency: count });
  await until(() => started === count, 5000, 'first worker started the jobs');
  await w1.close(true);
  const w2 = new lib.Worker(name, async () => 'w2', { connection: connection(), stalledInterval: 100, maxStalledCount: 0, concurrency: count });
  w2.on('error', () => {});
  return w2;
}

describe('stalled more than allowed: what a failed listener sees', () => {
  for (const policy of ['ignoreDependencyOnFailure', 'removeDependencyOnFailure', 'continueParentOnFailure'] as const) {
    it(`a child with ${policy}: its parent in another queue has moved when 'failed' fires`, async () => {
      const r = await sideBySide(async (lib, name, conn) => {
        const flow = new lib.FlowProducer({ connection: conn });
        const parentQueue = `${name}-parent`;
        const { job: parent } = await flow.add({
          name: 'parent', queueName: parentQueue, data: {},
          children: [{ name: 'child', queueName: name, data: {}, opts: { [policy]: true } }],
        });
        const w2 = await strandThenSweep(lib, name, 1);
        const seen = await new Promise<unknown>((resolve) => {
          w2.on('failed', async (job, err, prev) => resolve({ state: await parent.getState(), err: err.message, prev, child: job?.name }));
        });
        const ignored = Object.values(await parent.getIgnoredChildrenFailures());
        await w2.close();
        await flow.close();
        return { seen, ignored };
      }, `stall-${policy.slice(0, 6)}`);
      expect(r.echomq).toEqual(r.bullmq);
      expect(r.bullmq.seen).toEqual({ state: 'waiting', err: 'job stalled more than allowable limit', prev: 'active', child: 'child' });
    });
  }

  it('removeOnFail: 3 keeps three; the jobs fail newest claim first', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.addBulk([0, 1, 2, 3].map((index) => ({ name: 'j', data: { index }, opts: { removeOnFail: 3 } })));
      const w2 = await strandThenSweep(lib, name, 4);
      const order: number[] = [];
      const counts = await new Promise<number>((resolve) => {
        w2.on('failed', async (job) => {
          order.push(job!.data.index);
          if (order.length === 4) resolve(await q.getFailedCount());
        });
      });
      await w2.close();
      await q.close();
      return { counts, last: order[3] };
    }, 'stall-keep');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ counts: 3, last: 0 });
  });
});

describe('removing an active job whose lease expired', () => {
  it('is allowed (nobody holds it) and frees the global concurrency slot', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.setGlobalConcurrency(1);
      const w = new lib.Worker(name, null, { connection: conn, lockDuration: 20, skipStalledCheck: true, skipLockRenewal: true });
      for (let i = 0; i < 3; i++) await q.add('j', {});
      const job = (await w.getNextJob('tok'))!;
      const state = await job.getState();
      await sleep(60);
      const maxed = await q.isMaxed();
      await job.remove();
      const out = { state, maxed, after: await q.isMaxed(), gone: (await q.getJob(job.id!)) === undefined };
      await w.close();
      await q.close();
      return out;
    }, 'rm-expired');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ state: 'active', maxed: true, after: false, gone: true });
  });
});
