/**
 * Worker.cancelJob side by side with BullMQ: the processor's signal aborts with the reason;
 * what the processor then throws fails the attempt (its own message, retried while attempts
 * remain); a processor that does not declare the signal cannot be cancelled (false).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';
import { until } from './events-helpers.js';

afterAll(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Worker.cancelJob (BullMQ cancellation)', () => {
  it('the attempt fails with what the processor throws on abort; the signal carries the reason; a retry follows', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const reasons: unknown[] = [];
      const failed: unknown[] = [];
      let started = 0;
      const w = new lib.Worker(name, async (job, _token, signal) => {
        started++;
        if (job.attemptsMade > 0) return 'second run';
        return new Promise((_, reject) => {
          signal?.addEventListener('abort', () => {
            reasons.push(signal.reason);
            reject(new Error('Job was cancelled'));
          });
        });
      }, { connection });
      w.on('failed', (job, err) => failed.push([job?.id === undefined ? 'none' : 'job', err.message, job?.failedReason]));
      const done = new Promise((res) => w.on('completed', (_job, rv) => res(rv)));
      const job = await q.add('c', {}, { attempts: 2 });
      await until(() => started === 1, 5000, 'started');
      await sleep(20);
      const cancelled = [w.cancelJob(job.id!, 'user asked'), w.cancelJob('no-such-job')];
      const rv = await done;
      await w.close();
      const stored = (await q.getJob(job.id!))!;
      const out = { cancelled, reasons, failed, rv, attemptsMade: stored.attemptsMade, state: await stored.getState() };
      await q.close();
      return out;
    }, 'cancel');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({
      cancelled: [true, false], reasons: ['user asked'], failed: [['job', 'Job was cancelled', 'Job was cancelled']],
      rv: 'second run', attemptsMade: 2, state: 'completed',
    });
  });

  it('a processor declared without the signal: cancelJob returns false and the job runs on', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      let started = false;
      const w = new lib.Worker(name, async (job) => {
        started = true;
        await sleep(200);
        return job.name;
      }, { connection });
      const done = new Promise((res) => w.on('completed', (_job, rv) => res(rv)));
      const job = await q.add('plain', {});
      await until(() => started, 5000, 'started');
      const cancelled = w.cancelJob(job.id!, 'stop');
      const rv = await done;
      await w.close();
      await q.close();
      return { cancelled, rv };
    }, 'cancel1');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ cancelled: false, rv: 'plain' });
  });
});
