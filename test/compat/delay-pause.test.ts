// Delayed jobs side by side with BullMQ 6.7: jobs due in the same millisecond run in the order
// they were added (not by id text: '10' < '8'), and a paused queue still moves due delayed jobs
// to waiting, where they stay until resume.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide } from './harness.js';
import { reading, record, until } from './events-helpers.js';
import { sleep } from '../helpers.js';

afterAll(closeConnections);

describe('delayed jobs due in the same millisecond', () => {
  it('are processed first in, first out (concurrent adds and one addBulk)', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const order: number[] = [];
      // Many adds in flight at once land in the same milliseconds; ids 8, 9, 10 … would sort
      // as text ('10' < '8') inside one.
      await Promise.all(Array.from({ length: 43 }, (_, i) => q.add('t', { order: i + 1 }, { delay: 300 })));
      await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'b', data: { order: 100 + i }, opts: { delay: 300 } })));
      const w = new lib.Worker(name, async (job) => {
        order.push(job.data.order);
      }, { connection: connection() });
      const end = Date.now() + 10_000;
      while (order.length < 63 && Date.now() < end) await sleep(20);
      await w.close();
      await q.obliterate({ force: true });
      await q.close();
      return { count: order.length, inOrder: order.every((v, i) => i === 0 || order[i - 1] < v) };
    }, 'dfifo');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ count: 63, inOrder: true });
  });
});

describe('delayed jobs of a paused queue', () => {
  it('move to waiting when due (waiting event, prev delayed) but are not processed until resume', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe, ['waiting', 'completed']);
      let processed = 0;
      const w = new lib.Worker(name, async () => {
        processed++;
      }, { connection: connection() });
      await w.waitUntilReady();
      await q.pause();
      const job = await q.add('t', {}, { delay: 300 });
      const before = await q.getJobCounts('waiting', 'paused' as never, 'delayed');
      await until(() => seen.some((s) => s.event === 'waiting'), 5000, 'waiting');
      await sleep(100);
      const out = {
        before,
        due: await q.getJobCounts('waiting', 'paused' as never, 'delayed'),
        state: await q.getJobState(job.id!),
        processedWhilePaused: processed,
        waiting: seen.filter((s) => s.event === 'waiting').map((s) => s.args),
        afterResume: 0,
      };
      await q.resume();
      await until(() => seen.some((s) => s.event === 'completed'), 5000, 'completed');
      out.afterResume = processed;
      await w.close();
      await qe.close();
      await q.obliterate({ force: true });
      await q.close();
      return { ...out, waiting: out.waiting.map((a) => ({ ...a, jobId: a.jobId === job.id })) };
    }, 'dpause');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toMatchObject({
      before: { waiting: 0, paused: 0, delayed: 1 },
      due: { waiting: 1, paused: 0, delayed: 0 },
      state: 'waiting',
      processedWhilePaused: 0,
      waiting: [{ jobId: true, prev: 'delayed' }],
      afterResume: 1,
    });
  });
});
