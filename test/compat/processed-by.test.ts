/**
 * `job.processedBy` side by side with BullMQ: a Worker with the option `name` records it on every
 * job it claims (BullMQ stores it in the job hash when the job becomes active), so the processor's
 * Job, a later `getJob` and `toJSON()` show it; a worker without a name leaves it unset, and a
 * named manual worker (`getNextJob`, `moveToCompleted` with fetchNext) records it too.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';
import { until } from './events-helpers.js';

afterAll(closeConnections);

describe('job.processedBy (side by side)', () => {
  it('is the Worker option name on the running job, on getJob after it finished, and absent without a name', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const seen: Array<string | undefined> = [];
      const named = new lib.Worker(name, async (job) => { seen.push(job.processedBy); }, { connection, name: 'painter-1', autorun: false });
      named.on('error', () => {});
      const a = await q.add('a', {});
      const b = await q.add('b', {});
      named.run();
      await until(() => seen.length === 2, 5000);
      await named.close();
      const anon = new lib.Worker(name, async (job) => { seen.push(job.processedBy ?? 'none'); }, { connection, autorun: false });
      anon.on('error', () => {});
      const c = await q.add('c', {});
      anon.run();
      await until(() => seen.length === 3, 5000);
      await anon.close();
      const stored = async (id: string) => {
        const job = await q.getJob(id);
        return { processedBy: job?.processedBy ?? null, json: (job?.toJSON() as { processedBy?: string }).processedBy ?? null };
      };
      const out = { seen, a: await stored(a.id!), b: await stored(b.id!), c: await stored(c.id!) };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'pb');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.seen).toEqual(['painter-1', 'painter-1', 'none']);
    expect(r.echomq.a).toEqual({ processedBy: 'painter-1', json: 'painter-1' });
  });

  it('is recorded by a named manual worker, for getNextJob and for the job moveToCompleted fetches', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const w = new lib.Worker(name, null, { connection, name: 'hand' });
      w.on('error', () => {});
      const a = await q.add('a', {});
      const b = await q.add('b', {});
      const first = (await w.getNextJob('tok'))!;
      const [next] = (await first.moveToCompleted('done', 'tok', true)) as [{ id?: string } | null];
      const ids = [first.id, (next as { id?: string } | null)?.id];
      const out = {
        ids: ids.length,
        a: (await q.getJob(a.id!))?.processedBy ?? null,
        b: (await q.getJob(b.id!))?.processedBy ?? null,
      };
      await w.close();
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'pb-manual');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ ids: 2, a: 'hand', b: 'hand' });
  });
});
