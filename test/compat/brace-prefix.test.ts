// Prefixes that carry their own hash tag ('{bull}', '{app}:x') side by side with BullMQ: a flow
// across two queues, its dependencies and getters, and removal of the parent with its children
// (Queue.remove and Job.remove), which must reach the children in both queues.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib } from './harness.js';
import { waitFor } from '../helpers.js';
import type { Redis } from 'ioredis';

afterAll(closeConnections);

const PREFIXES = ['{bull}', '{app}:x'];

/** A parent in `name` with one child in its own queue and one in `<name>-other`. */
async function twoQueueFlow(lib: Lib, name: string, connection: Redis, prefix: string) {
  const other = `${name}-other`;
  const flow = new lib.FlowProducer({ connection, prefix });
  const q = new lib.Queue(name, { connection, prefix });
  const qo = new lib.Queue(other, { connection, prefix });
  const tree = await flow.add({
    name: 'parent', queueName: name,
    children: [{ name: 'own', queueName: name, data: { n: 1 } }, { name: 'away', queueName: other, data: { n: 2 } }],
  });
  const close = () => Promise.all([flow.close(), q.close(), qo.close()]);
  return { q, qo, tree, own: tree.children![0].job.id!, away: tree.children![1].job.id!, close };
}

/** The scenario's queue name and job ids replaced by roles, so both packages' readings compare. */
function norm(x: unknown, name: string, ids: Record<string, string>): unknown {
  let text = JSON.stringify(x ?? null);
  for (const [id, role] of Object.entries(ids)) text = text.split(id).join(role);
  return JSON.parse(text.split(name).join('Q'));
}

describe.each(PREFIXES)('prefix %s', (prefix) => {
  it('Queue.remove with removeChildren removes the children in both queues', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const f = await twoQueueFlow(lib, name, conn, prefix);
      const before = [await f.q.getJobCounts('waiting', 'waiting-children'), await f.qo.getJobCounts('waiting')];
      const removed = await f.q.remove(f.tree.job.id!, { removeChildren: true });
      const after = [await f.q.getJobCounts('waiting', 'waiting-children'), await f.qo.getJobCounts('waiting'),
        await f.q.getJobState(f.own), await f.qo.getJobState(f.away)];
      await f.close();
      return { before, removed, after };
    }, 'brace-qremove');
    expect(r.echomq.after).toEqual([{ waiting: 0, 'waiting-children': 0 }, { waiting: 0 }, 'unknown', 'unknown']);
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('Job.remove removes the children in both queues', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const f = await twoQueueFlow(lib, name, conn, prefix);
      const parent = await lib.Job.fromId(f.q, f.tree.job.id!);
      await parent!.remove();
      const after = [await f.q.getJobState(f.tree.job.id!), await f.q.getJobState(f.own), await f.qo.getJobState(f.away)];
      await f.close();
      return after;
    }, 'brace-jremove');
    expect(r.echomq).toEqual(['unknown', 'unknown', 'unknown']);
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('reads dependencies, children values and parents across queues', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const f = await twoQueueFlow(lib, name, conn, prefix);
      const parentId = f.tree.job.id!;
      const pending = await (await lib.Job.fromId(f.q, parentId))!.getDependencies();
      pending.unprocessed?.sort();
      const child = await lib.Job.fromId(f.qo, f.away);
      const parentOfChild = { parentKey: child!.parentKey, parent: child!.parent, qualified: f.qo.qualifiedName };
      const processor = async (job: { name: string }) => `${job.name}-done`;
      const w1 = new lib.Worker(name, processor, { connection: conn, prefix });
      const w2 = new lib.Worker(`${name}-other`, processor, { connection: conn, prefix });
      await waitFor(async () => (await f.q.getJobState(parentId)) !== 'waiting-children', 10000, 'parent ready');
      await Promise.all([w1.close(), w2.close()]);
      const parent = await lib.Job.fromId(f.q, parentId);
      const listed = await f.q.getDependencies(parentId, 'processed', 0, -1);
      const done = {
        values: await parent!.getChildrenValues(),
        deps: await parent!.getDependencies(),
        counts: await parent!.getDependenciesCount(),
        listed: { total: listed.total, items: listed.items.map((i) => i.id).sort(), names: listed.jobs.map((j) => j.name).sort() },
      };
      await f.close();
      return norm({ pending, parentOfChild, done }, name, { [parentId]: 'P', [f.own]: 'OWN', [f.away]: 'AWAY' });
    }, 'brace-deps');
    expect(r.echomq).toEqual(r.bullmq);
  });
});
