// Errors a Worker reports through its 'error' event, side by side with BullMQ 6.7: an exception
// thrown by one of its listeners, and a rate-limit hand-back of a job that vanished meanwhile.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide } from './harness.js';
import { sleep } from '../helpers.js';

afterAll(closeConnections);

describe('Worker error event', () => {
  it('a completed listener that throws: the exception is emitted as error, the job is completed', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const w = new lib.Worker(name, async () => 'ok', { connection: connection(), drainDelay: 1 });
      w.once('completed', (job) => {
        (job as unknown as { bar: { id: string } }).bar.id;
      });
      const error = new Promise<string>((resolve) => w.once('error', (err) => resolve(err.message)));
      await q.add('t', {});
      const message = await Promise.race([error, sleep(5000).then(() => 'no error event')]);
      const completed = await q.getJobCountByTypes('completed');
      // The worker goes on after it.
      await q.add('t2', {});
      const end = Date.now() + 5000;
      while ((await q.getJobCountByTypes('completed')) < 2 && Date.now() < end) await sleep(20);
      const out = { message: message.startsWith('Cannot read properties of undefined'), completed, later: await q.getJobCountByTypes('completed') };
      await w.close();
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'everr');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ message: true, completed: 1, later: 2 });
  });

  it('RateLimitError after the queue was obliterated: error "Missing key for job <id>. moveJobFromActiveToWait"', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const w = new lib.Worker(name, async (job) => {
        if (job.attemptsStarted === 1) {
          await q.rateLimit(250);
          await q.obliterate({ force: true });
          throw lib.Worker.RateLimitError();
        }
      }, { connection: connection(), autorun: false, concurrency: 10, limiter: { max: 2, duration: 100 } });
      await w.waitUntilReady();
      const error = new Promise<string>((resolve) => w.once('error', (err) => resolve(err.message)));
      const job = await q.add('t', {});
      void w.run();
      const message = await error;
      await w.close();
      await q.close();
      return message.replace(job.id!, '<id>');
    }, 'evrl');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toBe('Missing key for job <id>. moveJobFromActiveToWait');
  });
});
