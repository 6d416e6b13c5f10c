// FlowProducer side by side with BullMQ: the four child failure policies, getFlow's shape and
// its depth/maxChildren, addBulk, queuesOptions, a root attached to an existing parent,
// deduplication rules on flow nodes, and the producer's lifecycle (waitUntilReady, close).
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib } from './harness.js';
import { waitFor } from '../helpers.js';
import type { Redis } from 'ioredis';

afterAll(closeConnections);

type Policy = 'failParentOnFailure' | 'continueParentOnFailure' | 'ignoreDependencyOnFailure' | 'removeDependencyOnFailure' | 'none';

/**
 * A parent with two children in another queue: `bad` fails for good under the policy, `good`
 * completes once `bad` has failed. Returns what the parent went through.
 */
async function policyScenario(lib: Lib, name: string, conn: Redis, policy: Policy) {
  const kids = `${name}-kids`;
  const fp = new lib.FlowProducer({ connection: conn });
  const pq = new lib.Queue(name, { connection: conn });
  const opts = policy === 'none' ? {} : { [policy]: true };
  const tree = await fp.add({
    name: 'parent', queueName: name,
    children: [
      { name: 'bad', queueName: kids, opts },
      { name: 'good', queueName: kids, opts: { delay: 300 } },
    ],
  });
  const parentStates: string[] = [];
  const parentWorker = new lib.Worker(name, async (job) => {
    parentStates.push('ran');
    const deps = await job.getDependencies();
    return { unprocessed: deps.unprocessed?.length ?? 0, processed: Object.keys(deps.processed ?? {}).length };
  }, { connection: conn });
  const w = new lib.Worker(kids, async (job) => {
    if (job.name === 'bad') throw new Error('boom');
    return 'fine';
  }, { connection: conn });
  const parent = () => pq.getJob(tree.job.id!);
  // Let the bad child fail and the good one complete, then see where the parent is.
  await waitFor(async () => {
    const k = await new lib.Queue(kids, { connection: conn }).getJobCounts('completed', 'failed');
    return k.completed === 1 && k.failed === 1;
  }, 10_000, 'children settled');
  await waitFor(async () => ['completed', 'failed', 'waiting-children'].includes(await (await parent())!.getState()), 10_000, 'parent settled');
  await new Promise((r) => setTimeout(r, 200));
  const p = (await parent())!;
  const state = await p.getState();
  const deps = await p.getDependencies();
  // BullMQ lists failed children as keys, echomq as key → reason: count them either way.
  const size = (x: unknown) => (Array.isArray(x) ? x.length : Object.keys(x ?? {}).length);
  const failedChildren = size(deps.failed);
  const ignored = size(deps.ignored);
  const unprocessed = size(deps.unprocessed);
  await w.close();
  await parentWorker.close();
  await fp.close();
  await pq.close();
  return { state, ran: parentStates.length > 0, returned: p.returnvalue ?? null, failedChildren, ignored, unprocessed, failedReasonSet: Boolean(p.failedReason) };
}

describe('flow child failure policies (side by side)', () => {
  for (const policy of ['failParentOnFailure', 'ignoreDependencyOnFailure', 'removeDependencyOnFailure', 'none'] as const) {
    it(`${policy}`, async () => {
      const r = await sideBySide((lib, name, conn) => policyScenario(lib, name, conn, policy), `pol-${policy.slice(0, 6)}`);
      expect(r.echomq).toEqual(r.bullmq);
    });
  }

  it('continueParentOnFailure: the parent runs at once with the child listed as ignored', async () => {
    const r = await sideBySide((lib, name, conn) => policyScenario(lib, name, conn, 'continueParentOnFailure'), 'pol-contin');
    // Both start the parent as soon as the child fails, its other child still pending.
    expect(r.echomq.ran).toBe(r.bullmq.ran);
    expect(r.echomq.ignored).toBe(r.bullmq.ignored);
    expect(r.echomq.failedChildren).toBe(r.bullmq.failedChildren);
    // Both then refuse to complete the parent while its other child is pending ("has pending
    // dependencies") and fail it.
    expect(r.bullmq.state).toBe('failed');
    expect(r.echomq.state).toBe(r.bullmq.state);
  });
});

describe('FlowProducer API (side by side)', () => {
  it('getFlow: the JobNode shape, depth counting the root, maxChildren (default 20)', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const fp = new lib.FlowProducer({ connection: conn });
      await fp.waitUntilReady();
      const tree = await fp.add({
        name: 'root', queueName: name, data: { r: 1 },
        children: [
          { name: 'mid', queueName: name, data: { m: 1 }, children: [{ name: 'leaf', queueName: name, data: { l: 1 } }] },
          ...Array.from({ length: 24 }, (_, i) => ({ name: `k${i}`, queueName: name, data: { i } })),
        ],
      });
      const shape = (n: any): { name: string; kids: number | 'none' } => ({ name: n.job.name, kids: n.children ? n.children.length : 'none' });
      const full = (await fp.getFlow({ id: tree.job.id!, queueName: name }))!;
      const d1 = (await fp.getFlow({ id: tree.job.id!, queueName: name, depth: 1 }))!;
      const d2 = (await fp.getFlow({ id: tree.job.id!, queueName: name, depth: 2, maxChildren: 30 }))!;
      // (mid may be beyond the first 20 children: which 20 come first is the hash's order.)
      const d3 = (await fp.getFlow({ id: tree.job.id!, queueName: name, maxChildren: 30 }))!;
      const mid = d3.children!.find((c: any) => c.job.name === 'mid')!;
      const out = {
        top: Object.keys(full).sort(), root: shape(full), d1: shape(d1), d2: shape(d2),
        d2grand: d2.children!.find((c: any) => c.job.name === 'mid')!.children ?? 'none',
        mid: shape(mid), leafData: mid.children![0]!.job.data, rootData: full.job.data,
      };
      await fp.close();
      return out;
    }, 'getflow');
    // maxChildren: BullMQ passes it to SSCAN as a COUNT hint, so it may return a few more
    // (21 of 25 here); echomq's cap is exact.
    expect(r.bullmq.root.kids).toBeGreaterThanOrEqual(20);
    expect(r.echomq.root).toEqual({ name: 'root', kids: 20 });
    expect({ ...r.echomq, root: 0 }).toEqual({ ...r.bullmq, root: 0 });
  });

  it('addBulk adds several trees; queuesOptions applies defaultJobOptions per queue', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const fp = new lib.FlowProducer({ connection: conn });
      const trees = await fp.addBulk([
        { name: 'a', queueName: name, children: [{ name: 'a1', queueName: name }] },
        { name: 'b', queueName: name },
      ]);
      const withDefaults = await fp.add(
        { name: 'p', queueName: name, children: [{ name: 'c', queueName: `${name}-o`, opts: { priority: 3 } }] },
        { queuesOptions: { [`${name}-o`]: { defaultJobOptions: { attempts: 4, priority: 9 } } } },
      );
      const q = new lib.Queue(`${name}-o`, { connection: conn });
      const child = (await q.getJob(withDefaults.children![0]!.job.id!))!;
      const out = {
        trees: trees.map((t) => ({ name: t.job.name, kids: t.children?.length ?? 0 })),
        counts: await new lib.Queue(name, { connection: conn }).getJobCounts('waiting', 'waiting-children'),
        child: { attempts: child.opts.attempts, priority: child.priority },
      };
      await q.close();
      await fp.close();
      return out;
    }, 'fbulk');
    expect(r.echomq).toEqual(r.bullmq);
  });

  it("a root's parent option attaches the flow to an existing job (and a missing one is BullMQ's error)", async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const q = new lib.Queue(name, { connection: conn });
      const fp = new lib.FlowProducer({ connection: conn });
      const holder = await fp.add({ name: 'holder', queueName: name, children: [{ name: 'first', queueName: name }] });
      const attached = await fp.add({ name: 'sub', queueName: name, opts: { parent: { id: holder.job.id!, queue: q.qualifiedName } }, children: [{ name: 'subkid', queueName: name }] });
      const deps = await (await q.getJob(holder.job.id!))!.getDependencies();
      let missing = '';
      try {
        await fp.add({ name: 'r', queueName: name, opts: { parent: { id: 'zz', queue: q.qualifiedName } } });
      } catch (e) {
        missing = (e as Error).message.replace(q.qualifiedName, '<q>');
      }
      const out = { unprocessed: deps.unprocessed?.length, attachedParent: attached.job.parent?.id === holder.job.id, missing };
      await fp.close();
      await q.close();
      return out;
    }, 'froot');
    expect(r.echomq.unprocessed).toBe(r.bullmq.unprocessed);
    expect(r.echomq.attachedParent).toBe(r.bullmq.attachedParent);
    expect(r.echomq.missing.startsWith(r.bullmq.missing)).toBe(true);
  });

  it('deduplication: refused on a job with children at any depth and on children (BullMQ texts); a single-job flow deduplicates', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const fp = new lib.FlowProducer({ connection: conn });
      const msg = async (add: () => Promise<unknown>) => {
        try {
          await add();
          return 'ok';
        } catch (e) {
          return (e as Error).message;
        }
      };
      const k = `${name}-k`;
      const dd = { deduplication: { id: 'd' } };
      const leaf = { name: 'c', queueName: k };
      // BullMQ's types forbid these flows; a JavaScript caller can still send them.
      const add = (flow: unknown) => msg(() => fp.add(flow as never));
      const texts = {
        root: await add({ name: 'r', queueName: k, opts: dd, children: [leaf] }),
        // A middle node: BullMQ's check of the tree comes before the parent-and-deduplication one.
        middle: await add({ name: 'r', queueName: k, children: [{ name: 'm', queueName: k, opts: dd, children: [leaf] }] }),
        deep: await add({ name: 'r', queueName: k, children: [{ name: 'm', queueName: k, children: [{ name: 'n', queueName: k, opts: { deduplication: { id: 'd', ttl: 10 } }, children: [leaf] }] }] }),
        bulk: await msg(() => fp.addBulk([{ name: 'ok', queueName: k }, { name: 'r', queueName: k, opts: dd, children: [leaf] }] as never)),
        onChild: await add({ name: 'r', queueName: name, children: [{ name: 'c', queueName: name, opts: dd }] }),
        keepLastOnChild: await add({ name: 'r', queueName: k, children: [{ name: 'c', queueName: k, opts: { deduplication: { id: 'd', keepLastIfActive: true } } }] }),
      };
      // Refused before anything was written.
      const untouched = (await conn.keys(`*${k}*`)).length;
      const a = await fp.add({ name: 'solo', queueName: name, data: { n: 1 }, opts: { deduplication: { id: 'solo' } } });
      const b = await fp.add({ name: 'solo', queueName: name, data: { n: 2 }, opts: { deduplication: { id: 'solo' } } });
      const counts = await new lib.Queue(name, { connection: conn }).getJobCounts('waiting');
      await fp.close();
      return { texts, untouched, counts, sameAsFirst: b.job.id === a.job.id };
    }, 'fdedup');
    expect(r.bullmq.texts).toMatchObject({
      root: 'Deduplication options cannot be used on flow nodes with children',
      middle: 'Deduplication options cannot be used on flow nodes with children',
      deep: 'Deduplication options cannot be used on flow nodes with children',
      bulk: 'Deduplication options cannot be used on flow nodes with children',
      keepLastOnChild: 'keepLastIfActive deduplication cannot be used on flow nodes with a parent',
    });
    for (const [k, text] of Object.entries(r.bullmq.texts)) {
      expect({ k, text: r.echomq.texts[k as keyof typeof r.echomq.texts].slice(0, text.length) }).toEqual({ k, text });
    }
    expect(r.echomq.untouched).toBe(0);
    expect(r.bullmq.untouched).toBe(0);
    // BullMQ 6.7 returns a fresh JobNode (id of the refused job) for a deduplicated flow; echomq
    // returns the job that holds the id. Either way one job waits.
    expect(r.echomq.counts).toEqual(r.bullmq.counts);
    expect(r.echomq.sameAsFirst).toBe(true);
  });

  it('close() then add: echomq refuses with ClosedError (BullMQ resolves undefined)', async () => {
    const r = await sideBySide(async (lib, name, conn) => {
      const fp = new lib.FlowProducer({ connection: conn });
      await fp.close();
      try {
        return { result: String(await fp.add({ name: 'x', queueName: name })) };
      } catch (e) {
        return { error: (e as Error).name };
      }
    }, 'fclose');
    expect(r.bullmq).toEqual({ result: 'undefined' });
    expect(r.echomq).toEqual({ error: 'ClosedError' });
  });
});
