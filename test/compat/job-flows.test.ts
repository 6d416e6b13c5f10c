/**
 * BullMQ's Job flow members, side by side: a child's parent and parentKey, getDependencies
 * (whole and paged), getDependenciesCount, getChildrenValues, getIgnoredChildrenFailures,
 * removeChildDependency, removeUnprocessedChildren, and remove with or without children.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib } from './harness.js';
import { norm, thrown } from './job-helpers.js';
import { waitFor } from '../helpers.js';

afterAll(closeConnections);

const prefix = 'bull';

function setup(lib: Lib, name: string, connection: any) {
  return { q: new lib.Queue(name, { connection, prefix }), fp: new lib.FlowProducer({ connection, prefix }) };
}

/** Children by id, so the order of a set (BullMQ) or a hash scan (echomq) does not matter. */
function sorted(d: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(d)) out[k] = Array.isArray(v) ? [...v].sort() : v;
  return out;
}

describe('Job flow members', () => {
  it('a child’s parent and parentKey; the parent’s dependencies as its children finish', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const tree = await fp.add({ name: 'root', queueName: name, data: {}, children: [
        { name: 'c1', queueName: name, data: {}, opts: { jobId: 'c1' } },
        { name: 'c2', queueName: name, data: {}, opts: { jobId: 'c2', failParentOnFailure: true } },
        { name: 'c3', queueName: name, data: {}, opts: { jobId: 'c3', ignoreDependencyOnFailure: true } },
        { name: 'c4', queueName: name, data: {}, opts: { jobId: 'c4' } },
        { name: 'c5', queueName: name, data: {}, opts: { jobId: 'c5', delay: 60_000 } },
      ] });
      const root = tree.job;
      const c2 = (await q.getJob('c2'))!;
      const c3 = (await q.getJob('c3'))!;
      const c1 = (await q.getJob('c1'))!;
      const out: Record<string, unknown> = {
        child: [c1.parent, c1.parentKey, c2.parent, c3.parent, c2.asJSON().parent, c2.asJSON().parentKey],
        before: sorted(await root.getDependencies() as any),
        countBefore: await root.getDependenciesCount(),
      };
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'c3') throw new Error('bad3');
        return `${job.name}!`;
      }, { connection, prefix });
      await waitFor(async () => (await q.getJobCounts('completed')).completed === 3, 10_000, 'three children completed');
      await waitFor(async () => (await q.getJobCounts('failed')).failed === 1, 10_000, 'c3 failed');
      await w.close();
      Object.assign(out, {
        state: await root.getState(),
        after: sorted(await root.getDependencies() as any),
        paged: sorted(await root.getDependencies({ processed: { count: 1 }, unprocessed: { cursor: 0, count: 10 }, ignored: {} }) as any),
        onlyProcessed: await root.getDependencies({ processed: {} }),
        countAfter: await root.getDependenciesCount(),
        countSome: await root.getDependenciesCount({ processed: true, ignored: true }),
        values: await root.getChildrenValues(),
        ignored: await root.getIgnoredChildrenFailures(),
        failedValues: await root.getFailedChildrenValues(),
      });
      await fp.close();
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('removeChildDependency releases the parent from a pending child; a second call fails with BullMQ’s text', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const tree = await fp.add({ name: 'root', queueName: name, data: {}, children: [
        { name: 'k1', queueName: name, data: {}, opts: { jobId: 'k1', delay: 60_000 } },
        { name: 'k2', queueName: name, data: {}, opts: { jobId: 'k2', delay: 60_000 } },
      ] });
      const k1 = (await q.getJob('k1'))!;
      const removed = await k1.removeChildDependency();
      const local = [k1.parent ?? null, k1.parentKey ?? null];
      const stored = (await q.getJob('k1'))!;
      const mid = [await tree.job.getState(), sorted(await tree.job.getDependencies() as any)];
      const again = await thrown(() => k1.removeChildDependency());
      await (await q.getJob('k2'))!.removeChildDependency();
      const out = { removed, local, stored: [stored.parent ?? null, stored.parentKey ?? null], mid, again, end: await tree.job.getState() };
      await fp.close();
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq.again.startsWith(r.bullmq.again)).toBe(true);
    r.echomq.again = r.bullmq.again;
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('removeUnprocessedChildren removes waiting and delayed children; the parent goes on', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const tree = await fp.add({ name: 'r2', queueName: name, data: {}, children: [
        { name: 'k1', queueName: name, data: {}, opts: { jobId: 'k1' } },
        { name: 'k2', queueName: name, data: {}, opts: { jobId: 'k2', delay: 5000 } },
      ] });
      await tree.job.removeUnprocessedChildren();
      const out = [(await q.getJob('k1')) ?? 'gone', (await q.getJob('k2')) ?? 'gone', await tree.job.getState(), await tree.job.getDependencies()];
      await fp.close();
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('remove takes the children by default, not with removeChildren: false; removing a child releases its parent', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const t3 = await fp.add({ name: 'r3', queueName: name, data: {}, children: [{ name: 'm1', queueName: name, data: {}, opts: { jobId: 'm1' } }] });
      await t3.job.remove({ removeChildren: false });
      const m1 = (await q.getJob('m1'))!;
      const t4 = await fp.add({ name: 'r4', queueName: name, data: {}, children: [
        { name: 'n1', queueName: name, data: {}, opts: { jobId: 'n1' }, children: [{ name: 'g1', queueName: name, data: {}, opts: { jobId: 'g1' } }] },
      ] });
      await t4.job.remove();
      const t5 = await fp.add({ name: 'r5', queueName: name, data: {}, children: [{ name: 'o1', queueName: name, data: {}, opts: { jobId: 'o1' } }] });
      await (await q.getJob('o1'))!.remove();
      const out = {
        keptChild: [m1.name, m1.parentKey === `${prefix}:${name}:${t3.job.id}`], parentGone: (await q.getJob(t3.job.id!)) ?? 'gone',
        tree: [(await q.getJob('n1')) ?? 'gone', (await q.getJob('g1')) ?? 'gone', (await q.getJob(t4.job.id!)) ?? 'gone'],
        released: [await t5.job.getState(), await t5.job.getDependencies()],
      };
      await fp.close();
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('a child failing with failParentOnFailure fails the parent and is listed under failed', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const tree = await fp.add({ name: 'root', queueName: name, data: {}, children: [
        { name: 'bad', queueName: name, data: {}, opts: { jobId: 'bad', failParentOnFailure: true } },
        { name: 'later', queueName: name, data: {}, opts: { jobId: 'later', delay: 60_000 } },
      ] });
      const w = new lib.Worker(name, async () => {
        throw new Error('broken');
      }, { connection, prefix });
      await waitFor(async () => (await tree.job.getState()) === 'failed', 10_000, 'parent failed');
      await w.close();
      const out = [await tree.job.getDependencies(), await tree.job.getDependenciesCount({ failed: true, unprocessed: true })];
      await fp.close();
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('paging through 600 children with cursors collects each child once', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const children = Array.from({ length: 600 }, (_, i) => ({ name: 'c', queueName: name, data: {}, opts: { jobId: `c${i}` } }));
      const tree = await fp.add({ name: 'root', queueName: name, data: {}, children });
      const seen = new Set<string>();
      let cursor = 0;
      let pages = 0;
      do {
        const page = await tree.job.getDependencies({ unprocessed: { cursor, count: 50 } });
        for (const k of page.unprocessed!) seen.add(k);
        cursor = page.nextUnprocessedCursor!;
        pages++;
      } while (cursor !== 0 && pages < 1000);
      const out = { n: seen.size, several: pages > 1, count: await tree.job.getDependenciesCount({ unprocessed: true }) };
      await fp.close();
      await q.close();
      return out;
    });
    // 600 entries: past Redis's listpack limits (512 hash fields), so both scans really page.
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ n: 600, several: true, count: { unprocessed: 600 } });
  });

  it('across queues: removeChildDependency, removeUnprocessedChildren and remove reach the other queue', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const other = `${name}-b`;
      const qb = new lib.Queue(other, { connection, prefix });
      const kids = (tag: string) => [1, 2].map((i) => ({ name: 'k', queueName: other, data: {}, opts: { jobId: `${tag}${i}`, delay: 60_000 } }));
      const t1 = await fp.add({ name: 'r1', queueName: name, data: {}, children: kids('a') });
      const a1 = (await qb.getJob('a1'))!;
      const parentOfA1 = [a1.parent, a1.parentKey];
      const rows: unknown[] = [await a1.removeChildDependency(), await t1.job.getState(), await t1.job.getDependenciesCount()];
      await (await qb.getJob('a2'))!.removeChildDependency();
      rows.push(await t1.job.getState());
      const t2 = await fp.add({ name: 'r2', queueName: name, data: {}, children: kids('b') });
      await t2.job.removeUnprocessedChildren();
      rows.push([(await qb.getJob('b1')) ?? 'gone', (await qb.getJob('b2')) ?? 'gone', await t2.job.getState()]);
      const t3 = await fp.add({ name: 'r3', queueName: name, data: {}, children: kids('c') });
      await t3.job.remove();
      rows.push([(await qb.getJob('c1')) ?? 'gone', (await qb.getJob('c2')) ?? 'gone']);
      await fp.close();
      await qb.close();
      await q.close();
      return norm({ parentOfA1, rows }, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});
