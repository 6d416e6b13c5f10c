// Flows side by side with BullMQ 6: a child deleted on failure (removeOnFail) releases its
// parent; a parent with pending children cannot complete (BullMQ's pending-dependencies error);
// failParentOnFailure defers the parent's failure to its next start ("child <key> failed");
// continueParentOnFailure honours the parent's delay before the child's failed event; a retried
// completed child counts as pending again; a child of another parent cannot be re-parented;
// job.opts shows attempts as given.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';
import { waitFor } from '../helpers.js';

afterAll(closeConnections);

describe('flows as BullMQ 6 settles them (side by side)', () => {
  it('a child with removeOnFail that fails for good no longer holds its parent', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'bad') throw new Error('fail');
        return job.name;
      }, { connection });
      const fp = new lib.FlowProducer({ connection });
      const done = new Promise<unknown>((resolve) => {
        w.on('completed', async (job) => {
          if (job.name === 'parent') resolve(await job.getDependenciesCount());
        });
      });
      await fp.add({
        name: 'parent', queueName: name,
        children: [{ name: 'bad', queueName: name, opts: { removeOnFail: true } }, { name: 'good', queueName: name }],
      });
      const counts = await done;
      await w.close();
      await fp.close();
      return counts;
    }, 'rof');
    expect(r.bullmq).toEqual({ processed: 1, unprocessed: 0, ignored: 0, failed: 0 });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('a step job that returns while its child is pending fails with the pending-dependencies error', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const kids = new lib.Queue(`${name}-kids`, { connection });
      const events = new lib.QueueEvents(name, { connection });
      await events.waitUntilReady();
      const w = new lib.Worker(name, async (job) => {
        await kids.add('child', {}, { parent: { id: job.id!, queue: job.queueQualifiedName } });
        return 'done';
      }, { connection });
      const q = new lib.Queue(name, { connection });
      const job = await q.add('parent', {});
      const failed = await new Promise<{ failedReason: string; prev?: string }>((resolve) => {
        events.on('failed', (e) => { if (e.jobId === job.id) resolve(e); });
      });
      const state = await job.getState();
      await w.close();
      await events.close();
      await Promise.all([q.close(), kids.close()]);
      return { reason: failed.failedReason.replace(job.id!, '<id>'), prev: failed.prev, state };
    }, 'pend');
    expect(r.bullmq).toEqual({ reason: 'Job <id> has pending dependencies. moveToFinished', prev: 'active', state: 'failed' });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('moveToCompleted of a parent with pending children is refused; the parent stays active', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const parent = await q.add('parent', {});
      await q.add('child', {}, { parent: { id: parent.id!, queue: q.qualifiedName } });
      const w = new lib.Worker(name, null, { connection });
      // The child was added after the parent, so the parent is taken first (FIFO).
      const active = (await w.getNextJob('tok'))!;
      const message = await active.moveToCompleted('rv', 'tok').then(() => 'resolved', (e: Error) => e.message);
      const state = await active.getState();
      await w.close();
      await q.close();
      return { id: active.id === parent.id, message: message.replace(parent.id!, '<id>'), state };
    }, 'pendmanual');
    expect(r.bullmq).toEqual({ id: true, message: 'Job <id> has pending dependencies. moveToFinished', state: 'active' });
    expect(r.echomq.id).toBe(true);
    expect(r.echomq.message.startsWith(r.bullmq.message)).toBe(true);
    expect(r.echomq.state).toBe('active');
  });

  for (const cross of [false, true]) {
    it(`failParentOnFailure: the waiting parent moves to wait and fails at its next start (${cross ? 'across queues' : 'one queue'})`, async () => {
      const r = await sideBySide(async (lib, name, connection) => {
        const kidsName = cross ? `${name}-kids` : name;
        const events = new lib.QueueEvents(name, { connection });
        await events.waitUntilReady();
        const fp = new lib.FlowProducer({ connection });
        let ran = 0;
        const run = async (job: { name: string }) => {
          if (job.name === 'bad') throw new Error('broke');
          if (job.name === 'parent') ran++;
          return job.name;
        };
        const ws = [new lib.Worker(name, run, { connection })];
        if (cross) ws.push(new lib.Worker(kidsName, run, { connection }));
        const tree = await fp.add({
          name: 'parent', queueName: name,
          children: [{ name: 'bad', queueName: kidsName, opts: { failParentOnFailure: true } }, { name: 'slow', queueName: kidsName, opts: { delay: 5000 } }],
        });
        const failed = await new Promise<{ failedReason: string; prev?: string }>((resolve) => {
          events.on('failed', (e) => { if (e.jobId === tree.job.id) resolve(e); });
        });
        const q = new lib.Queue(name, { connection });
        const p = (await q.getJob(tree.job.id!))!;
        const deps = await p.getDependenciesCount();
        await Promise.all(ws.map((w) => w.close()));
        await events.close();
        await Promise.all([fp.close(), q.close()]);
        const bad = tree.children!.find((c) => c.job.name === 'bad')!.job;
        return {
          reason: failed.failedReason.replace(`${bad.queueQualifiedName}:${bad.id}`, '<child>'), prev: failed.prev, ran,
          made: p.attemptsMade, state: await p.getState(), deps,
        };
      }, cross ? 'fpofx' : 'fpof');
      expect(r.bullmq.reason).toBe('child <child> failed');
      expect(r.bullmq.prev).toBe('active');
      expect(r.bullmq.ran).toBe(0);
      expect(r.echomq).toEqual(r.bullmq);
    });
  }

  it('continueParentOnFailure: a parent with a delay is delayed by the time the child fails', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const kidsName = `${name}-kids`;
      const fp = new lib.FlowProducer({ connection });
      const pq = new lib.Queue(name, { connection });
      await fp.add({
        name: 'parent', queueName: name, opts: { delay: 60_000 },
        children: [{ name: 'bad', queueName: kidsName, opts: { continueParentOnFailure: true } }],
      });
      const w = new lib.Worker(kidsName, async () => {
        throw new Error('broke');
      }, { connection });
      const counts = await new Promise((resolve) => {
        w.on('failed', async () => resolve(await pq.getJobCounts('delayed', 'waiting', 'waiting-children')));
      });
      await w.close();
      await Promise.all([fp.close(), pq.close()]);
      return counts;
    }, 'cpofdelay');
    expect(r.bullmq).toEqual({ delayed: 1, waiting: 0, 'waiting-children': 0 });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('retrying a completed child makes its parent wait for it again', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const kidsName = `${name}-kids`;
      const fp = new lib.FlowProducer({ connection });
      await fp.add({
        name: 'parent', queueName: name,
        children: [{ name: 'a', queueName: kidsName, data: { n: 0 } }, { name: 'b', queueName: kidsName, data: { n: 1 } }],
      });
      const pw = new lib.Worker(name, async () => 'p', { connection });
      let retried = false;
      const kw = new lib.Worker(kidsName, async (job) => {
        await new Promise((res) => setTimeout(res, job.name === 'a' && !retried ? 0 : 150));
        return job.name;
      }, { connection });
      kw.on('completed', (job) => {
        if (job.name === 'a' && !retried) {
          retried = true;
          void job.retry('completed');
        }
      });
      const kids = new lib.Queue(kidsName, { connection });
      const completedKids = await new Promise((resolve) => {
        pw.on('completed', async () => resolve(await kids.getJobCountByTypes('completed')));
      });
      await Promise.all([pw.close(), kw.close()]);
      await Promise.all([fp.close(), kids.close()]);
      return { completedKids };
    }, 'retrychild');
    expect(r.bullmq).toEqual({ completedKids: 2 });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('adding an existing child of another parent under a new parent is refused', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const fp = new lib.FlowProducer({ connection });
      const q = new lib.Queue(name, { connection });
      await fp.add({ name: 'tue', queueName: name, opts: { jobId: 'tue' }, children: [{ name: 'mon', queueName: name, opts: { jobId: 'mon' } }] });
      await q.add('wed', {}, { jobId: 'wed' });
      const other = await q.add('mon', {}, { jobId: 'mon', parent: { id: 'wed', queue: q.qualifiedName } })
        .then(() => 'resolved', (e: Error) => e.message.replace(q.qualifiedName, '<queue>'));
      // The same parent again is a plain duplicate.
      const same = await q.add('mon', {}, { jobId: 'mon', parent: { id: 'tue', queue: q.qualifiedName } }).then((j) => j.id);
      await Promise.all([fp.close(), q.close()]);
      return { other, same };
    }, 'reparent');
    expect(r.bullmq).toEqual({ other: 'The parent job <queue>:wed cannot be replaced. addJob', same: 'mon' });
    expect(r.echomq.other.startsWith(r.bullmq.other)).toBe(true);
    expect(r.echomq.same).toBe('mon');
  });

  it('job.opts.attempts shows attempts as given (1 included), 0 when not given', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const fp = new lib.FlowProducer({ connection });
      const one = await q.add('one', {}, { attempts: 1 });
      const none = await q.add('none', {});
      const tree = await fp.add({ name: 'p', queueName: name, opts: { attempts: 1 }, children: [{ name: 'c', queueName: name, opts: { attempts: 3 } }] });
      const read = async (id: string) => (await q.getJob(id))!.opts.attempts;
      const out = {
        one: [one.opts.attempts, await read(one.id!)], none: [none.opts.attempts, await read(none.id!)],
        root: [tree.job.opts.attempts, await read(tree.job.id!)], child: await read(tree.children![0].job.id!),
      };
      await Promise.all([q.close(), fp.close()]);
      return out;
    }, 'attempts');
    expect(r.bullmq).toEqual({ one: [1, 1], none: [0, 0], root: [1, 1], child: 3 });
    expect(r.echomq).toEqual(r.bullmq);
  });
});
