/**
 * Queue.clean and flows: cleaning a child that was the last one its parent waited for. BullMQ's
 * clean removes for good ("hard"): a waiting parent in the same queue is deleted with its last
 * pending child; a parent in another queue is moved to wait instead.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib } from './harness.js';
import type { Redis } from 'ioredis';

afterAll(closeConnections);

async function until(check: () => Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A parent (in parentQueue) with three children in `name`; the worker fails idx 0 (no failure
 * policy: the parent keeps waiting for it) and completes the others; then the failed child is
 * cleaned. The worker is closed first, so what happens to the parent is the clean's doing.
 */
async function scenario(lib: Lib, name: string, connection: Redis, parentQueue: string) {
  const queue = new lib.Queue(name, { connection });
  const other = parentQueue === name ? queue : new lib.Queue(parentQueue, { connection });
  const worker = new lib.Worker(name, async (job) => {
    if (job.data.idx === 0) throw new Error('failed first');
    return job.data.idx;
  }, { connection });
  const flow = new lib.FlowProducer({ connection });
  const tree = await flow.add({
    name: 'parent', queueName: parentQueue, data: {},
    children: [0, 1, 2].map((idx) => ({ name: 'child', queueName: name, data: { idx } })),
  });
  await until(async () => {
    const c = await queue.getJobCounts('failed', 'completed');
    return c.failed === 1 && c.completed === 2;
  });
  await worker.close();
  const cleaned = await queue.clean(0, 0, 'failed');
  const seen = {
    cleaned: cleaned.length,
    parentState: await tree.job.getState(),
    parentGone: (await other.getJob(tree.job.id!)) === undefined,
    counts: await queue.getJobCounts('waiting', 'waiting-children', 'completed', 'failed'),
    parentCounts: await other.getJobCounts('waiting', 'waiting-children'),
  };
  await flow.close();
  await queue.obliterate({ force: true });
  await queue.close();
  if (other !== queue) {
    await other.obliterate({ force: true });
    await other.close();
  }
  return seen;
}

describe('Queue.clean of a flow child', () => {
  it('deletes a same-queue parent whose last pending child it cleans', async () => {
    const r = await sideBySide((lib, name, connection) => scenario(lib, name, connection, name));
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.parentState).toBe('unknown');
    expect(r.echomq.parentGone).toBe(true);
  });

  it('moves a parent in another queue to wait', async () => {
    const r = await sideBySide((lib, name, connection) => scenario(lib, name, connection, `${name}-parent`));
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.parentState).toBe('waiting');
  });
});
