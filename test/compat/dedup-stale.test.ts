// Deduplication side by side with BullMQ 6.7, part 2: a deduplication id whose job hash is gone
// (lost to an outage or an eviction) is taken over by the next add; ids spent by refused adds;
// replace with a holder that is not delayed.
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { closeConnections, connection, sideBySide, type LibName } from './harness.js';
import { reading, record, until } from './events-helpers.js';
import { sleep } from '../helpers.js';
import { jobKey, queueKeys } from '../../src/core/keys.js';

afterAll(closeConnections);

/**
 * Deletes a job's hash behind the library's back. BullMQ's hash is its logical key
 * (`queue.toKey(id)`); echomq's physical key is `<prefix>:{<queue>}:job:<id>` (docs/internals.md#keys), so
 * the same loss is simulated on each side's own key.
 */
function loseJobHash(side: LibName, q: { name: string; toKey(t: string): string }, conn: Redis, id: string) {
  return conn.del(side === 'bullmq' ? q.toKey(id) : jobKey(queueKeys(q.name), id));
}

describe('a deduplication id pointing at a job that no longer exists', () => {
  // [first add's deduplication options, second add's]
  const cases: Record<string, [object, object]> = {
    simple: [{ id: 'd' }, { id: 'd' }],
    'keepLastIfActive with ttl, then ttl + extend': [{ id: 'd', ttl: 5000, keepLastIfActive: true }, { id: 'd', ttl: 300, extend: true }],
    'ttl window, then no ttl': [{ id: 'd', ttl: 5000 }, { id: 'd' }],
    'replace without ttl': [{ id: 'd', replace: true }, { id: 'd', replace: true }],
    'replace with ttl': [{ id: 'd', replace: true, ttl: 5000 }, { id: 'd', replace: true }],
    'extend with ttl': [{ id: 'd', ttl: 5000, extend: true }, { id: 'd', ttl: 5000, extend: true }],
    keepLastIfActive: [{ id: 'd', keepLastIfActive: true }, { id: 'd', keepLastIfActive: true }],
  };
  for (const [label, [first, second]] of Object.entries(cases)) {
    it(`${label}: the stale id is taken over, or a live ttl window still holds`, async () => {
      const r = await sideBySide(async (lib, name, conn, side) => {
        const q = new lib.Queue(name, { connection: conn });
        await q.add('t', { foo: 'bar' }, { jobId: 'a1', deduplication: first as never });
        await loseJobHash(side, q, conn, 'a1');
        const job = await q.add('t', { foo: 'baz' }, { jobId: 'a2', deduplication: second as never });
        const out = {
          returned: job.id,
          stored: (await q.getJob('a2'))?.data ?? null,
          holder: await q.getDeduplicationJobId('d'),
          waiting: await q.getJobCounts('waiting'),
          afterTtl: undefined as unknown,
        };
        // A recovered id takes the incoming add's ttl (300 ms here) or none.
        await sleep(450);
        out.afterTtl = await q.getDeduplicationJobId('d');
        await q.obliterate({ force: true });
        await q.close();
        return out;
      }, 'dds');
      expect(r.echomq).toEqual(r.bullmq);
    });
  }

  it('the cases above do what BullMQ documents', async () => {
    // One pair spelled out, so the table above cannot pass by both sides failing alike.
    const r = await sideBySide(async (lib, name, conn, side) => {
      const q = new lib.Queue(name, { connection: conn });
      await q.add('t', {}, { jobId: 'a1', deduplication: { id: 'd' } });
      const kept = (await q.add('t', {}, { jobId: 'a2', deduplication: { id: 'd' } })).id;
      await loseJobHash(side, q, conn, 'a1');
      const taken = (await q.add('t', {}, { jobId: 'a3', deduplication: { id: 'd' } })).id;
      const out = { kept, taken, holder: await q.getDeduplicationJobId('d') };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'dds1');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ kept: 'a1', taken: 'a3', holder: 'a3' });
  });
});

describe('generated ids and events of refused adds', () => {
  it('a refused add without a jobId spends a generated id, as BullMQ; the job after the holder finishes gets the next', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe, ['deduplicated', 'completed']);
      const worker = new lib.Worker(name, async () => {
        await q.add('t', {}, { deduplication: { id: 'a1' } });
        await q.add('t', {}, { deduplication: { id: 'a1' } });
      }, { connection: connection(), autorun: false });
      void worker.run();
      const first = await q.add('t', {}, { deduplication: { id: 'a1' } });
      await until(() => seen.some((s) => s.event === 'completed'), 10_000, 'completed');
      await worker.close();
      const next = await q.add('t', {}, { deduplication: { id: 'a1' } });
      const out = {
        first: first.id,
        next: next.id,
        total: await q.getJobCountByTypes(),
        refused: seen.filter((s) => s.event === 'deduplicated').map((s) => [s.args.jobId, s.args.deduplicatedJobId]),
      };
      await qe.close();
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'ddid');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ first: '1', next: '4', total: 2, refused: [['1', '2'], ['1', '3']] });
  });

  it('replace while the holder is not delayed keeps it, without a deduplicated event; a delayed holder is replaced with one', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe, ['deduplicated', 'removed', 'waiting']);
      const opts = { deduplication: { id: 'r', replace: true } };
      const a = await q.add('t', { n: 1 }, { ...opts, jobId: 'a', delay: 60_000 });
      const b = await q.add('t', { n: 2 }, { ...opts, jobId: 'b' }); // replaces the delayed a
      const c = await q.add('t', { n: 3 }, { ...opts, jobId: 'c' }); // b waits: kept, silently
      await until(() => seen.filter((s) => s.event === 'waiting').length >= 1, 5000, 'waiting');
      await sleep(200); // time for an event that should not come
      const out = {
        ids: [a.id, b.id, c.id],
        holder: await q.getDeduplicationJobId('r'),
        events: seen.map((s) => [s.event, s.args.jobId, s.args.deduplicatedJobId ?? null]),
      };
      await qe.close();
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'ddrep');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.ids).toEqual(['a', 'b', 'b']);
    expect(r.bullmq.events.filter((e) => e[0] === 'deduplicated')).toEqual([['deduplicated', 'b', 'a']]);
  });
});
