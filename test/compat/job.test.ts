/**
 * BullMQ's Job, side by side: fields and JSON shapes, the statics, state getters, the commands
 * that change a job, and their error texts. Flow members are in job-flows.test.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide, type Lib, type LibName } from './harness.js';
import { Job, Queue } from '../../src/index.js';
import { logsKey, queueKeys } from '../../src/core/keys.js';
import { dumpQueue, norm, startsWithEach, thrown } from './job-helpers.js';
import { qname, sleep, waitFor } from '../helpers.js';

afterAll(closeConnections);

const prefix = 'bull';
const open = (lib: Lib, name: string, connection: any) => new lib.Queue(name, { connection, prefix });

/** echomq's toJSON carries the job's lane as well (an extension); it is checked and left out here. */
function withoutLane(j: Record<string, unknown>): Record<string, unknown> {
  if ('lane' in j) {
    expect(j.lane).toBe('default');
    const { lane: _lane, ...rest } = j;
    return rest;
  }
  return j;
}

describe('Job fields and JSON shapes', () => {
  it('a fetched job: toJSON, asJSON, asJSONSandbox, names and state', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const added = await q.add('n', { a: 1 }, { delay: 5000, priority: 3, attempts: 2 });
      const plain = await q.add('p', [1, 2]);
      const got = (await q.getJob(added.id!))!;
      const out = {
        added: withoutLane(added.toJSON() as any), got: withoutLane(got.toJSON() as any), asJSON: got.asJSON(),
        sandbox: got.asJSONSandbox(), plain: withoutLane((await q.getJob(plain.id!))!.toJSON() as any),
        plainAsJSON: (await q.getJob(plain.id!))!.asJSON(),
        names: [got.prefix, got.queueName, got.queueQualifiedName, got.id, got.delay, got.priority],
        states: [await got.getState(), await (await q.getJob(plain.id!))!.getState()],
      };
      await q.close();
      return norm(out, name);
    });
    // The job add returns: echomq's is built from what it wrote, so its stacktrace is [] where
    // BullMQ's fresh instance has null (the same job read back has [] in both).
    expect(r.bullmq.added.stacktrace).toBeNull();
    expect(r.echomq.added.stacktrace).toEqual([]);
    delete r.bullmq.added.stacktrace;
    delete r.echomq.added.stacktrace;
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('an unsaved new Job(queue, name, data, opts, id)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const j = new lib.Job(q, 'x', { b: 2 }, { jobId: 'zz', priority: 4 });
      const k = new lib.Job(q, 'y', undefined as any, undefined, 'given');
      const out = {
        json: withoutLane(j.toJSON() as any), asJSON: j.asJSON(), id: j.id ?? 'none', state: await j.getState(),
        k: withoutLane(k.toJSON() as any), kAsJSON: k.asJSON(), kid: k.id,
        names: [j.prefix, j.queueName, j.queueQualifiedName],
      };
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('Job.create, Job.createBulk, Job.fromId, Job.fromJSON, Job.optsFromJSON, Job.addJobLog', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const c = await lib.Job.create(q, 'cr', { c: 1 }, { priority: 2 });
      const bulk = await lib.Job.createBulk(q, [{ name: 'b1', data: 1 }, { name: 'b2', data: 2, opts: { delay: 100 } }]);
      const fetched = await lib.Job.fromId(q, bulk[1].id!);
      const missing = await lib.Job.fromId(q, 'nope');
      const fromJSON = lib.Job.fromJSON(q, {
        id: '77', name: 'fj', data: '{"k":1}', opts: { attempts: 3 }, progress: 5, attemptsMade: 1, attemptsStarted: 2,
        timestamp: 1000, failedReason: 'x', stacktrace: '["a"]', returnvalue: '{"r":1}', stalledCounter: 1,
        parentKey: 'bull:pq:9', parent: { id: '9', queueKey: 'bull:pq' },
      } as any);
      const logged = [await lib.Job.addJobLog(q, c.id!, 'one'), await lib.Job.addJobLog(q, c.id!, 'two'), await lib.Job.addJobLog(q, c.id!, 'three', 2)];
      const out = {
        create: [c.id, c.name, c.priority, await c.getState()],
        bulk: bulk.map((j) => [j.id, j.name, j.data]), bulkStates: [await bulk[0].getState(), await bulk[1].getState()],
        fetched: withoutLane(fetched!.toJSON() as any), missing: missing ?? 'undefined',
        fromJSON: withoutLane(fromJSON.toJSON() as any),
        opts: lib.Job.optsFromJSON('{"fpof":true,"kl":3,"de":{"id":"x"},"tm":"m","omc":true,"rdof":false,"attempts":2}'),
        optsNone: lib.Job.optsFromJSON(), logged,
        missingLog: await thrown(() => lib.Job.addJobLog(q, 'nope', 'row')),
      };
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq.missingLog.startsWith(r.bullmq.missingLog)).toBe(true);
    r.echomq.missingLog = r.bullmq.missingLog;
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('Job.createBulk returns the jobs as sent, without reading them back (an existing id keeps its stored job)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      await lib.Job.create(q, 'first', { v: 1 }, { jobId: 'dup' });
      const [again, fresh] = await lib.Job.createBulk(q, [{ name: 'second', data: { v: 2 }, opts: { jobId: 'dup' } }, { name: 'new', data: { v: 3 } }]);
      const stored = await lib.Job.fromId(q, 'dup');
      const out = { returned: [again.id, again.name, again.data, fresh.name, fresh.data], stored: [stored!.name, stored!.data] };
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual({ returned: ['dup', 'second', { v: 2 }, 'new', { v: 3 }], stored: ['first', { v: 1 }] });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('a completed and a failed job, as the worker left them', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const a = await q.add('a', { x: 1 });
      const b = await q.add('b', { x: 2 }, { attempts: 2 });
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'b') throw new Error('boom');
        return { ok: job.name };
      }, { connection, prefix });
      await waitFor(async () => (await q.getJobCounts('completed', 'failed')).failed === 1, 10_000, 'b failed');
      await w.close();
      const ga = (await q.getJob(a.id!))!;
      const gb = (await q.getJob(b.id!))!;
      const failed = withoutLane(gb.toJSON() as any) as any;
      const failedAsJSON = gb.asJSON() as any;
      const out = {
        completed: withoutLane(ga.toJSON() as any), completedAsJSON: ga.asJSON(),
        // Stack texts differ by library; their number does not.
        failed: { ...failed, stacktrace: failed.stacktrace.length }, failedAsJSON: { ...failedAsJSON, stacktrace: JSON.parse(failedAsJSON.stacktrace).length },
        checks: [await ga.isCompleted(), await ga.isFailed(), await gb.isFailed(), await gb.isCompleted(), await ga.getState(), await gb.getState()],
      };
      await q.close();
      return norm(out, name);
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});

describe('Job state getters', () => {
  it('isWaiting, isDelayed, isActive, isWaitingChildren and getState over a job’s life, the queue paused or not', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const w0 = await q.add('w', {});
      const p0 = await q.add('p', {}, { priority: 5 });
      const d0 = await q.add('d', {}, { delay: 60_000 });
      const all = async (j: any) => [await j.getState(), await j.isWaiting(), await j.isDelayed(), await j.isActive(), await j.isWaitingChildren(), await j.isCompleted(), await j.isFailed()];
      const before = [await all(w0), await all(p0), await all(d0)];
      await q.pause();
      const paused = [await all(w0), await all(p0)];
      await q.resume();
      let active: unknown[] = [];
      const wk = new lib.Worker(name, async (job) => {
        if (job.name === 'w') active = await all(job);
      }, { connection, prefix });
      await waitFor(async () => (await q.getJobCounts('completed')).completed === 2, 10_000, 'two completed');
      await wk.close();
      const gone = new lib.Job(q, 'ghost', {}, {}, 'ghost');
      const out = { before, paused, active, after: await all(w0), ghost: await all(gone) };
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});

describe('Job commands', () => {
  it('changeDelay reschedules a delayed job from now; promote makes it ready with delay 0', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const d = await q.add('d', {}, { delay: 10_000 });
      await d.changeDelay(20_000);
      const after = (await q.getJob(d.id!))!;
      const row1 = [d.delay, after.delay, after.opts.delay, await d.getState()];
      await d.changeDelay(0);
      const row2 = [await d.getState(), (await q.getJob(d.id!))!.delay];
      const e = await q.add('e', {}, { delay: 10_000 });
      await e.promote();
      const row3 = [e.delay, (await q.getJob(e.id!))!.delay, (await q.getJob(e.id!))!.opts.delay, await e.getState()];
      await q.close();
      return { row1, row2, row3 };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('changeDelay emits delayed with the new due time', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const qe = new lib.QueueEvents(name, { connection: connection.duplicate(), prefix });
      await qe.waitUntilReady();
      // BullMQ's QueueEvents is ready before its first read from '$' is sent: give it a moment.
      await sleep(200);
      const d = await q.add('d', {}, { delay: 60_000 });
      const seen: any[] = [];
      qe.on('delayed', (e: any) => seen.push(e));
      const t0 = Date.now();
      await d.changeDelay(30_000);
      await waitFor(() => seen.some((e) => Number(e.delay) < t0 + 40_000), 5000, 'delayed event');
      const ev = seen.find((e) => Number(e.delay) < t0 + 40_000);
      await qe.close();
      await q.close();
      return { jobId: ev.jobId, dueInAbout30s: Math.abs(Number(ev.delay) - (t0 + 30_000)) < 2000 };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('retry keeps the attempt counts unless reset; the finish fields go', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const b = await q.add('b', {}, { attempts: 1 });
      let runs = 0;
      const w = new lib.Worker(name, async () => {
        runs++;
        throw new Error(`boom${runs}`);
      }, { connection, prefix });
      await waitFor(async () => (await q.getJobCounts('failed')).failed === 1, 10_000, 'failed');
      const rows: unknown[] = [];
      const g1 = (await q.getJob(b.id!))!;
      rows.push([g1.attemptsMade, g1.attemptsStarted, g1.failedReason]);
      await w.pause();
      await g1.retry();
      rows.push([g1.failedReason ?? null, g1.finishedOn ?? null, await g1.getState()]);
      w.resume();
      await waitFor(async () => (await q.getJobCounts('failed')).failed === 1 && runs === 2, 10_000, 'failed again');
      const g2 = (await q.getJob(b.id!))!;
      rows.push([g2.attemptsMade, g2.attemptsStarted, g2.failedReason, g2.stacktrace!.length]);
      await w.close();
      await g2.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
      const g3 = (await q.getJob(b.id!))!;
      rows.push([g2.attemptsMade, g2.attemptsStarted, g3.attemptsMade, g3.attemptsStarted, g3.failedReason ?? null, g3.finishedOn ?? null, await g3.getState()]);
      await q.close();
      return rows;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('a job retried with resetAttemptsStarted still completes (the fencing token keeps growing)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const j = await q.add('j', {});
      let fail = true;
      const w = new lib.Worker(name, async () => {
        if (fail) throw new Error('first');
        return 'ok';
      }, { connection, prefix });
      await waitFor(async () => (await q.getJobCounts('failed')).failed === 1, 10_000, 'failed');
      fail = false;
      await (await q.getJob(j.id!))!.retry('failed', { resetAttemptsStarted: true, resetAttemptsMade: true });
      await waitFor(async () => (await q.getJobCounts('completed')).completed === 1, 10_000, 'completed');
      await w.close();
      const g = (await q.getJob(j.id!))!;
      await q.close();
      return [g.returnvalue, g.attemptsMade, g.attemptsStarted];
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('changePriority re-scores a waiting job; changePriority on a finished job', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const a = await q.add('a', {});
      const b = await q.add('b', {}, { priority: 3 });
      await a.changePriority({ priority: 7 });
      await b.changePriority({});
      const ga = (await q.getJob(a.id!))!;
      const gb = (await q.getJob(b.id!))!;
      const out = [a.priority, ga.priority, ga.opts.priority ?? 'none', await ga.getState(), b.priority, gb.priority, gb.opts.priority ?? 'none', await gb.getState(), (await q.getJobs(['prioritized'])).map((j) => j.id)];
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('toFlowEntry describes an unsaved job without writing', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const j = new lib.Job(q, 'n', { v: 1 }, { priority: 2, jobId: 'fe' });
      const entry = j.toFlowEntry({ addToWaitingChildren: true });
      const out = norm({ entry: { ...entry, jobData: { ...entry.jobData, timestamp: 0 } }, counts: await q.getJobCounts('prioritized', 'waiting') }, name);
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  // BullMQ's addJob takes its own backend's client wrapper (a Redis-backend detail); echomq's
  // writes through the job's queue and ignores the argument, so it is tested on echomq alone.
  it('addJob saves an unsaved job (echomq)', async () => {
    const q = new Queue(qname('addjob'), { connection: connection(), prefix });
    const j = new Job(q, 'n', { v: 1 }, { priority: 2 });
    const id = await j.addJob();
    const got = (await q.getJob(id))!;
    expect([j.id, got.name, got.data, got.priority, await got.getState()]).toEqual([id, 'n', { v: 1 }, 2, 'prioritized']);
    await q.close();
  });

  it('log counts the lines; clearLogs keeps the newest n or none', async () => {
    const r = await sideBySide(async (lib, name, connection, s) => {
      const q = open(lib, name, connection);
      const j = await q.add('l', {});
      const counts = [await j.log('l1'), await j.log('l2'), await j.log('l3')];
      const k = await q.add('k', {});
      for (const l of ['a', 'b', 'c', 'd']) await k.log(l);
      await k.clearLogs(2);
      const kept = await connection.lrange(logsKeyOf(s, name, k.id!), 0, -1);
      await k.clearLogs();
      const none = await connection.exists(logsKeyOf(s, name, k.id!));
      await q.close();
      return { counts, kept, none };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('updateData, updateProgress and remove; the queue emits progress and removed for jobs it gave out', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const seen: unknown[] = [];
      q.on('progress' as any, (j: any, p: unknown) => seen.push(['progress', j.id, p]));
      q.on('removed' as any, (j: any) => seen.push(['removed', j.id]));
      await q.add('x', { a: 1 });
      const j = (await q.getJob('1'))!;
      await j.updateProgress({ step: 2 });
      await j.updateData({ z: 1 });
      const g = (await q.getJob('1'))!;
      const stored = [g.data, g.progress, j.data, j.progress];
      await j.remove();
      const out = { stored, seen, after: (await q.getJob('1')) ?? 'gone', again: await thrown(() => j.remove()) };
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('deduplicationId and removeDeduplicationKey', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const d = await q.add('dd', {}, { deduplication: { id: 'D1' } });
      const other = await q.add('o', {});
      const got = (await q.getJob(d.id!))!;
      const out = [d.deduplicationId, got.deduplicationId, got.opts.deduplication, await other.removeDeduplicationKey(),
        await got.removeDeduplicationKey(), await got.removeDeduplicationKey(), (await q.getDeduplicationJobId('D1')) ?? null];
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('waitUntilFinished: the return value, the failed reason and BullMQ’s timeout text', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const qe = new lib.QueueEvents(name, { connection: connection.duplicate(), prefix });
      await qe.waitUntilReady();
      const slow = await q.add('slow', {});
      const timeout = await thrown(() => slow.waitUntilFinished(qe, 100));
      const w = new lib.Worker(name, async (job) => {
        if (job.name === 'bad') throw new Error('nope');
        return `done:${job.name}`;
      }, { connection, prefix });
      const ok = await q.add('ok', {});
      const bad = await q.add('bad', {});
      const out = [await ok.waitUntilFinished(qe), await thrown(() => bad.waitUntilFinished(qe)), timeout];
      await w.close();
      await qe.close();
      await q.close();
      return out;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});

/** The logs key of a job on either side (BullMQ: `<prefix>:<q>:<id>:logs`; echomq: keys.ts). */
function logsKeyOf(side: LibName, name: string, id: string): string {
  return side === 'echomq' ? logsKey(queueKeys(name, prefix), id) : `${prefix}:${name}:${id}:logs`;
}

describe('Job errors: BullMQ’s texts, and Redis unchanged', () => {
  it('each command on a missing job or a job in the wrong state', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      const w = await q.add('w', {});
      const ghost = new lib.Job(q, 'x', {}, {}, 'nope');
      const before = await dumpQueue(connection, name);
      const msgs: Record<string, string> = {
        changeDelayWaiting: await thrown(() => w.changeDelay(100)),
        changeDelayMissing: await thrown(() => ghost.changeDelay(100)),
        promoteWaiting: await thrown(() => w.promote()),
        promoteMissing: await thrown(() => ghost.promote()),
        retryWaiting: await thrown(() => w.retry()),
        retryCompletedWaiting: await thrown(() => w.retry('completed')),
        retryMissing: await thrown(() => ghost.retry()),
        updateData: await thrown(() => ghost.updateData({})),
        updateProgress: await thrown(() => ghost.updateProgress(3)),
        log: await thrown(() => ghost.log('l')),
        changePriority: await thrown(() => ghost.changePriority({ priority: 2 })),
        removeChildDependency: await thrown(() => ghost.removeChildDependency()),
        removeChildDependencyNoParent: await thrown(() => w.removeChildDependency()),
        removeMissing: await thrown(() => ghost.remove()),
      };
      const after = await dumpQueue(connection, name);
      await q.close();
      return { msgs, unchanged: JSON.stringify(before) === JSON.stringify(after) };
    });
    expect(startsWithEach(r.echomq.msgs, r.bullmq.msgs)).toEqual(Object.fromEntries(Object.keys(r.bullmq.msgs).map((k) => [k, true])));
    expect(r.echomq.unchanged).toBe(true);
    expect(r.bullmq.unchanged).toBe(true);
  });

  it('removing an active job is refused with BullMQ’s text and changes nothing', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = open(lib, name, connection);
      let release!: () => void;
      const gate = new Promise<void>((res) => (release = res));
      const w = new lib.Worker(name, () => gate, { connection, prefix });
      const j = await q.add('slow', {});
      await waitFor(async () => (await j.getState()) === 'active', 10_000, 'active');
      const msg = await thrown(() => j.remove());
      const state = await j.getState();
      release();
      await waitFor(async () => (await j.getState()) === 'completed', 10_000, 'completed');
      await w.close();
      await q.close();
      return { msg, state };
    });
    expect(r.echomq.msg.startsWith(r.bullmq.msg)).toBe(true);
    expect(r.echomq.state).toBe(r.bullmq.state);
  });
});

describe('Job and echomq queues', () => {
  it('refuses a sharded queue as the queue argument (its jobs live in its shard queues)', async () => {
    const q = new Queue(qname('jobshard'), { connection: connection(), prefix, shards: 2 });
    expect(() => new Job(q, 'n', {})).toThrow(/for a sharded queue: one of its shardQueues/);
    await expect(Job.create(q, 'n', {})).rejects.toThrow(/shardQueues/);
    const shard = (q as unknown as { shardQueues: Queue[] }).shardQueues[0];
    expect((await Job.create(shard, 'n', { v: 1 })).data).toEqual({ v: 1 });
    await q.close();
  });

  it('Job.create and new Job use the queue’s own settings (maxPayloadBytes) and refuse other arguments', async () => {
    const name = qname('jobctx');
    const q = new Queue(name, { connection: connection(), prefix, maxPayloadBytes: 16 });
    await expect(Job.create(q, 'n', { big: 'x'.repeat(100) })).rejects.toThrow(/data must be/);
    expect(await q.getJobCounts('waiting')).toEqual({ waiting: 0 });
    expect(() => new Job({} as object, 'n', {})).toThrow(/queue must be an echomq Queue or Worker/);
    await q.close();
  });
});

