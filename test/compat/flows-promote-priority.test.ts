// job.promote and job.changePriority outside the wait list, side by side with BullMQ 6.7:
// promoting into a paused queue (BullMQ 6 has no paused list: the job counts as waiting, its
// `paused` type stays 0; BullMQ's own older tests expect a paused list), and a new priority
// given to a delayed job, kept for when it becomes ready.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';

afterAll(closeConnections);

describe('promote and changePriority out of wait (side by side)', () => {
  for (const withWaiting of [true, false]) {
    it(`promote into a paused queue${withWaiting ? ' that holds a waiting job' : ' that is empty'}`, async () => {
      const r = await sideBySide(async (lib, name, connection) => {
        const q = new lib.Queue(name, { connection });
        if (withWaiting) await q.add('normal', {});
        const d = await q.add('delayed', {}, { delay: 60_000 });
        await q.pause();
        await d.promote();
        const paused = await q.getJobCounts(...(['paused', 'waiting', 'delayed'] as unknown as ['waiting']));
        const stateWhilePaused = await d.getState();
        await q.resume();
        const out = { paused, stateWhilePaused, waiting: await q.getWaitingCount(), state: await d.getState(), delay: d.delay };
        await q.close();
        return out;
      }, 'promotepaused');
      expect(r.bullmq).toEqual({
        paused: { paused: 0, waiting: withWaiting ? 2 : 1, delayed: 0 }, stateWhilePaused: 'waiting',
        waiting: withWaiting ? 2 : 1, state: 'waiting', delay: 0,
      });
      expect(r.echomq).toEqual(r.bullmq);
    });
  }

  it('changePriority of a delayed job keeps it delayed and applies when it is promoted', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const d = await q.add('d', {}, { delay: 60_000 });
      await d.changePriority({ priority: 10 });
      const a = (await q.getJob(d.id!))!;
      const whileDelayed = { priority: a.priority, state: await a.getState(), counts: await q.getJobCounts('prioritized', 'delayed') };
      await a.promote();
      const b = (await q.getJob(d.id!))!;
      const after = { priority: b.priority, state: await b.getState(), counts: await q.getJobCounts('prioritized', 'delayed', 'waiting') };
      await q.close();
      return { whileDelayed, after };
    }, 'prio-delayed');
    expect(r.bullmq).toEqual({
      whileDelayed: { priority: 10, state: 'delayed', counts: { prioritized: 0, delayed: 1 } },
      after: { priority: 10, state: 'prioritized', counts: { prioritized: 1, delayed: 0, waiting: 0 } },
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});
