// getJobs side by side with BullMQ 6.7 when a listed id has lost its job hash (an outage, an
// eviction, a hand-made DEL): the id is skipped, and a bounded window is filled from the ids
// after it (BullMQ reads up to 5 windows per type).
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { closeConnections, sideBySide, type LibName } from './harness.js';
import { jobKey, queueKeys } from '../../src/core/keys.js';

afterAll(closeConnections);

/** Deletes a job hash: BullMQ's logical key is its key; echomq's physical key is `…{queue}:job:<id>`. */
function loseJobHash(side: LibName, q: { name: string; toKey(t: string): string }, conn: Redis, id: string) {
  return conn.del(side === 'bullmq' ? q.toKey(id) : jobKey(queueKeys(q.name), id));
}

describe('getJobs with a missing job hash', () => {
  it('skips the id in a whole listing', async () => {
    const r = await sideBySide(async (lib, name, conn, side) => {
      const q = new lib.Queue(name, { connection: conn });
      const [, b] = await Promise.all([q.add('t', { n: 1 }), q.add('t', { n: 2 }), q.add('t', { n: 3 })]);
      await loseJobHash(side, q, conn, b.id!);
      const jobs = await q.getJobs(['waiting']);
      const out = { data: jobs.map((j) => j.data.n).sort(), defined: jobs.every((j) => j !== undefined) };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'gmw');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ data: [1, 3], defined: true });
  });

  it('fills a bounded window from the ids after it, keeping the order (waiting, delayed, completed)', async () => {
    const r = await sideBySide(async (lib, name, conn, side) => {
      const q = new lib.Queue(name, { connection: conn });
      const waiting = [];
      for (let i = 1; i <= 5; i++) waiting.push(await q.add('t', { n: i }));
      const delayed = [];
      for (let i = 1; i <= 5; i++) delayed.push(await q.add('d', { n: i }, { delay: 60_000 + i * 1000 }));
      await loseJobHash(side, q, conn, waiting[1].id!);
      await loseJobHash(side, q, conn, delayed[0].id!);
      await loseJobHash(side, q, conn, delayed[2].id!);
      const n = (jobs: Array<{ data: { n: number } }>) => jobs.map((j) => j.data.n);
      const out = {
        waitAsc: n(await q.getJobs(['waiting'], 0, 2, true)),
        waitDesc: n(await q.getJobs(['waiting'], 0, 2, false)),
        delayedAsc: n(await q.getJobs(['delayed'], 0, 1, true)),
        delayedPage2: n(await q.getJobs(['delayed'], 2, 3, true)),
        both: n(await q.getJobs(['waiting', 'delayed'], 0, 1, true)),
        pastEnd: n(await q.getJobs(['waiting'], 3, 10, true)),
      };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'gmb');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({
      waitAsc: [1, 3, 4], waitDesc: [5, 4, 3], delayedAsc: [2, 4], delayedPage2: [4, 5], both: [1, 3, 2, 4], pastEnd: [4, 5],
    });
  });

  it('a queue with delayed and waiting jobs lists only the waiting ones as waiting', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.add('test1', {}, { delay: 2000 });
      await q.add('test2', {});
      const out = { waiting: (await q.getJobs(['waiting'])).map((j) => j.name) };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'gmk');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ waiting: ['test2'] });
  });
});
