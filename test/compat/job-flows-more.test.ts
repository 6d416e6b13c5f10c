/**
 * More of BullMQ's Job and flow behaviour, side by side: Job.create validating like Queue.add
 * (sizeLimit, a missing parent, an empty jobId, a given timestamp), waitUntilFinished on a job
 * that is gone, Job.remove refusing a tree with an active job, removing a child in another
 * queue, flows that name jobs which already exist, removal freeing a deduplication id, and the
 * `waiting` event of a parent leaving waiting-children.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, collect, sideBySide, type Lib } from './harness.js';
import { norm, thrown } from './job-helpers.js';
import { waitFor } from '../helpers.js';

afterAll(closeConnections);

const prefix = 'bull';

function setup(lib: Lib, name: string, connection: any) {
  return { q: new lib.Queue(name, { connection, prefix }), fp: new lib.FlowProducer({ connection, prefix }) };
}

/** The part of a message up to (not including) echomq's detail, for a message of either library. */
const head = (msg: string, bull: string) => (msg.startsWith(bull) ? bull : msg);

describe('Job.create validates like Queue.add', () => {
  it('sizeLimit, a missing parent, an empty jobId and a given timestamp', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q } = setup(lib, name, connection);
      const size = `The size of job big exceeds the limit 12 bytes`;
      const missing = `Missing key for parent job ${prefix}:${name}:nope. addJob`;
      const out = {
        size: head(await thrown(() => lib.Job.create(q, 'big', { foo: 'bar' }, { sizeLimit: 12 })), size),
        sizeNonAscii: head(await thrown(() => lib.Job.create(q, 'big', { foo: 'βÅ®' }, { sizeLimit: 12, jobId: 'x1' })), size),
        fits: (await lib.Job.create(q, 'ok', { foo: 'bar' }, { sizeLimit: 20 })).opts.sizeLimit,
        parent: head(await thrown(() => lib.Job.create(q, 'child', {}, { parent: { id: 'nope', queue: `${prefix}:${name}` } })), missing),
        emptyId: (await lib.Job.create(q, 'e', {}, { jobId: '' })).id,
        emptyIdAdd: (await q.add('e', {}, { jobId: '' })).id,
        stamped: (await lib.Job.fromId(q, (await lib.Job.create(q, 't', {}, { timestamp: 1234567890 })).id!))!.opts.timestamp,
        unstamped: (await q.getJob((await q.add('u', {})).id!))!.opts.timestamp,
        counts: await q.getJobCounts('waiting'),
      };
      await q.obliterate({ force: true });
      await q.close();
      return norm(out, name);
    }, 'jcreate');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.size).toBe('The size of job big exceeds the limit 12 bytes');
  });
});

describe('a bulk add naming a missing parent', () => {
  it('adds the other jobs with their ids; the left-out job gets BullMQ\'s id for it (Queue.addBulk, Job.createBulk)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q } = setup(lib, name, connection);
      const other = new lib.Queue(`${name}-p`, { connection, prefix });
      const here = { parent: { id: 'nope', queue: `${prefix}:${name}` } };
      const there = { parent: { id: 'nope', queue: `${prefix}:${name}-p` } };
      const ids = (jobs: Array<{ name: string; id?: unknown }>) => jobs.map((j) => [j.name, j.id, typeof j.id]);
      const bulk = ids(await q.addBulk([
        { name: 'a', data: {} }, { name: 'b', data: {}, opts: here }, { name: 'c', data: {} },
        { name: 'd', data: {}, opts: { ...here, jobId: 'custom' } }, { name: 'e', data: {}, opts: there }, { name: 'f', data: {} },
      ]));
      const created = ids(await lib.Job.createBulk(q, [{ name: 'g', data: {}, opts: here }, { name: 'h', data: {} }]));
      const waiting = (await q.getWaiting()).map((j) => [j.name, j.id]).sort();
      const single = head(await thrown(() => q.add('i', {}, here)), `Missing key for parent job ${prefix}:${name}:nope. addJob`);
      const next = (await q.add('j', {})).id;
      const custom = await q.getJob('custom');
      await q.obliterate({ force: true });
      await other.close();
      await q.close();
      return norm({ bulk, created, waiting, single, next, custom: custom ?? null }, name);
    }, 'bulkmiss');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.bulk).toEqual([['a', '1', 'string'], ['b', -5, 'number'], ['c', '2', 'string'], ['d', -5, 'number'], ['e', -5, 'number'], ['f', '3', 'string']]);
    expect(r.echomq.next).toBe('5');
  });
});

describe('waitUntilFinished of a job that is gone', () => {
  it('rejects with BullMQ’s missing-key text', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q } = setup(lib, name, connection);
      const qe = new lib.QueueEvents(name, { connection, prefix });
      await qe.waitUntilReady();
      const job = await q.add('gone', {});
      await job.remove();
      const want = `Missing key for job ${prefix}:${name}:${job.id}. isFinished`;
      const msg = await thrown(() => job.waitUntilFinished(qe));
      await qe.close();
      await q.close();
      return head(msg, want) === want;
    }, 'jwait');
    expect(r).toEqual({ bullmq: true, echomq: true });
  });
});

describe('Job.remove', () => {
  it('an active job in the tree: refused, nothing removed; the message has BullMQ’s text once', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const other = `${name}-p`;
      const tree = await fp.add({ name: 'root', queueName: other, data: {}, children: [
        { name: 'a', queueName: name, data: {}, opts: { jobId: 'a' } },
        { name: 'b', queueName: name, data: {}, opts: { jobId: 'b' } },
      ] });
      const w = new lib.Worker(name, null, { connection, prefix });
      const got = (await w.getNextJob('tok'))!;
      const text = `Job ${tree.job.id} could not be removed because it is locked by another worker`;
      const msg = await thrown(() => tree.job.remove());
      const own = await thrown(() => got.remove());
      const out = {
        refused: head(msg, text), once: msg.split('could not be removed').length - 1,
        ownOnce: own.split('could not be removed').length - 1,
        states: [await tree.job.getState(), await got.getState(), await (await q.getJob(got.id === 'a' ? 'b' : 'a'))!.getState()],
      };
      await w.close();
      const pq = new lib.Queue(other, { connection, prefix });
      await pq.obliterate({ force: true });
      await q.obliterate({ force: true });
      await pq.close();
      await q.close();
      return norm(out, tree.job.id!);
    }, 'jremlock');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.once).toBe(1);
  });

  it('removing a child whose parent is in another queue makes the parent waiting at once', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const other = `${name}-p`;
      const tree = await fp.add({ name: 'root', queueName: other, data: {}, children: [
        { name: 'mid', queueName: name, data: {}, children: [{ name: 'leaf', queueName: name, data: {} }] },
      ] });
      const rows: string[] = [];
      await tree.children![0].children![0].job.remove();
      rows.push(await tree.children![0].job.getState());
      await tree.children![0].job.remove();
      rows.push(await tree.job.getState());
      const pq = new lib.Queue(other, { connection, prefix });
      await pq.obliterate({ force: true });
      await q.obliterate({ force: true });
      await pq.close();
      await q.close();
      return rows;
    }, 'jremx');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual(['waiting', 'waiting']);
  });
});

describe('flows naming jobs that already exist', () => {
  it('an existing leaf becomes the new parent’s child: waiting, active or completed', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const node = (id: string, children?: any[]) => ({ name: id, queueName: name, data: {}, opts: { jobId: id }, ...(children ? { children } : {}) });
      // tue waits for mon; wed waits for the existing tue.
      await fp.add(node('tue', [node('mon')]));
      // The same flow again changes nothing; a new child of the existing tue is added under it.
      await fp.add(node('tue', [node('mon'), node('sun')]));
      const tue = (await q.getJob('tue'))!;
      const rows: unknown[] = [await tue.getState(), await tue.getDependenciesCount(), (await q.getJob('sun'))!.parentKey];
      const wed = await fp.add(node('wed', [node('tue')]));
      rows.push(await wed.job.getState(), (await q.getJob('tue'))!.parentKey);
      const w = new lib.Worker(name, async () => 'ok', { connection, prefix });
      await waitFor(async () => (await q.getJobState('wed')) === 'completed', 10_000, 'wed completed');
      // A completed leaf re-added under a new parent counts at once: the parent runs.
      const thu = await fp.add(node('thu', [node('wed')]));
      await waitFor(async () => (await thu.job.getState()) === 'completed', 10_000, 'thu completed');
      rows.push(await thu.job.getState(), await (await q.getJob('thu'))!.getChildrenValues());
      // The same leaf under yet another parent while thu still exists (see the test below).
      const refused = await thrown(() => fp.add(node('fri', [node('wed')])));
      const tail = [refused.startsWith('resolved:') ? 'resolved' : refused.split('. addJob')[0], await q.getJobState('fri'), (await q.getJob('wed'))!.parentKey];
      await w.close();
      await q.obliterate({ force: true });
      await q.close();
      return { rows: norm(rows, name), tail: norm(tail, name) };
    }, 'fexist');
    expect(r.echomq.rows).toEqual(r.bullmq.rows);
    // Differs on purpose: BullMQ adds fri, which then waits for wed forever (wed keeps thu as
    // its parent); echomq refuses with BullMQ's queue.add text and writes nothing.
    expect(r.bullmq.tail).toEqual(['resolved', 'waiting-children', 'bull:<q>:thu']);
    expect(r.echomq.tail).toEqual(['The parent job bull:<q>:fri cannot be replaced', 'unknown', 'bull:<q>:thu']);
  });
});

describe('deduplication and removal', () => {
  it('removing the job that holds a throttled id frees the id', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q } = setup(lib, name, connection);
      const opts = { deduplication: { id: 'd1', ttl: 60_000 } };
      const a = await q.add('a', {}, opts);
      await a.remove();
      const b = await q.add('b', {}, opts);
      const c = await q.add('c', {}, opts);
      const out = { same: b.id === c.id, holder: (await q.getDeduplicationJobId('d1')) === b.id, waiting: await q.getWaitingCount() };
      await q.obliterate({ force: true });
      await q.close();
      return out;
    }, 'dedrm');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ same: true, holder: true, waiting: 1 });
  });
});

describe('events of a flow parent', () => {
  it('waiting with prev waiting-children when the last child completes', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const { q, fp } = setup(lib, name, connection);
      const qe = new lib.QueueEvents(name, { connection, prefix });
      await qe.waitUntilReady();
      const other = `${name}-c`;
      const seen = collect<[{ jobId: string; prev?: string }]>((cb) => qe.on('waiting', cb), 1);
      const tree = await fp.add({ name: 'root', queueName: name, data: {}, children: [{ name: 'c', queueName: other, data: {} }] });
      const w = new lib.Worker(other, async () => 'ok', { connection, prefix });
      const [[ev]] = await seen;
      await w.close();
      const out = { isRoot: ev.jobId === tree.job.id, prev: ev.prev };
      const cq = new lib.Queue(other, { connection, prefix });
      await cq.obliterate({ force: true });
      await q.obliterate({ force: true });
      await cq.close();
      await qe.close();
      await q.close();
      return out;
    }, 'evwc');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ isRoot: true, prev: 'waiting-children' });
  });
});
