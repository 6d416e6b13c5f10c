// Job error texts side by side with BullMQ 6.7: moveToFailed on a job that is not active names
// BullMQ's command for what the failure would have done (retryJob, moveToDelayed,
// moveToFinished); a job whose lock (lease) expired can be removed, and failing it afterwards
// reports the missing job. echomq's messages begin with BullMQ's text, then its own detail.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide } from './harness.js';
import { sleep } from '../helpers.js';

afterAll(closeConnections);

const message = (p: Promise<unknown>) => p.then(() => 'resolved', (e: Error) => e.message);
/** BullMQ's message is the part echomq's begins with: compare that part. */
const bullPart = (bull: string, mine: string) => (mine.startsWith(bull) ? bull : mine);

describe('moveToFailed on a job that is not active', () => {
  it('names retryJob, moveToDelayed or moveToFinished as BullMQ', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const now = await lib.Job.create(q, 't', {}, { attempts: 3 });
      const later = await lib.Job.create(q, 't', {}, { attempts: 3, backoff: 1000 });
      const last = await lib.Job.create(q, 't', {}, { attempts: 1 });
      const out = [
        await message(now.moveToFailed(new Error('e'), '0', true)),
        await message(later.moveToFailed(new Error('e'), '0', true)),
        await message(last.moveToFailed(new Error('e'), '0', true)),
      ];
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'jenot');
    expect(r.echomq.map((m, i) => bullPart(r.bullmq[i], m))).toEqual(r.bullmq);
    expect(r.bullmq).toEqual([
      'Job 1 is not in the active state. retryJob',
      'Job 2 is not in the active state. moveToDelayed',
      'Job 3 is not in the active state. moveToFinished',
    ]);
  });
});

describe('a job whose lock expired', () => {
  it('is removable (not while the lock lives); moveToFailed then reports the missing job and writes nothing', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const w = new lib.Worker(name, null, { connection: connection(), lockDuration: 200, skipLockRenewal: true });
      await lib.Job.create(q, 't', {}, { attempts: 1 });
      const job = (await w.getNextJob('my-token'))!;
      const whileLocked = await message(job.remove());
      await sleep(300);
      const removed = await message(job.remove());
      const failed = await message(job.moveToFailed(new Error('test error'), '0'));
      const out = { whileLocked, removed, failed, job: (await q.getJob(job.id!)) ?? null, counts: await q.getJobCounts() };
      await w.close();
      await q.close();
      return out;
    }, 'jelock');
    expect({ ...r.echomq, whileLocked: bullPart(r.bullmq.whileLocked, r.echomq.whileLocked), failed: bullPart(r.bullmq.failed, r.echomq.failed) })
      .toEqual(r.bullmq);
    expect(r.bullmq).toMatchObject({
      whileLocked: 'Job 1 could not be removed because it is locked by another worker',
      removed: 'resolved',
      failed: 'Missing key for job 1. moveToFinished',
      job: null,
    });
  });
});
