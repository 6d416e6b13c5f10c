// Queue maintenance commands side by side with BullMQ: retryJobs, promoteJobs, clean, drain
// (with flows and schedulers), obliterate, removeOrphanedJobs, trimEvents. Return values,
// resulting states and counts, and the events QueueEvents reads.
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';
import { byName, recordEvents, settlingWorker } from './maintenance-helpers.js';
import { keysOf, waitFor } from '../helpers.js';
import { queueKeyPattern } from '../../src/core/keys.js';

afterAll(closeConnections);

const COUNTS = ['waiting', 'prioritized', 'delayed', 'active', 'completed', 'failed', 'waiting-children'] as const;

describe('retryJobs and promoteJobs', () => {
  it('retryJobs moves failed jobs back to waiting in batches, keeping attemptsMade, with waiting events', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const jobs = await queue.addBulk(['f1', 'f2', 'f3'].map((n) => ({ name: n, data: {}, opts: { attempts: 2 } })));
      const names = new Map(jobs.map((j) => [j.id!, j.name]));
      const worker = settlingWorker(lib, name);
      await waitFor(async () => (await queue.getJobCountByTypes('failed')) === 3, 10000, 'failed');
      await worker.close();
      const events = await recordEvents(lib, name, ['waiting']);
      const reply = await queue.retryJobs({ count: 2 }); // two calls
      await queue.add('marker', {});
      const seen = byName(await events.until('waiting', 4), names, ['jobId', 'prev']);
      await events.close();
      const j = (await queue.getJob(jobs[0].id!))!;
      const out = {
        reply: reply === undefined ? 'void' : 'value',
        counts: await queue.getJobCounts(...COUNTS),
        job: { state: await j.getState(), attemptsMade: j.attemptsMade, failedReason: j.failedReason ?? null, finishedOn: j.finishedOn ?? null,
          processedOn: j.processedOn ?? null, stacktrace: j.stacktrace?.length },
        seen: seen.sort((a, b) => String(a[1].jobId).localeCompare(String(b[1].jobId))),
      };
      await queue.obliterate({ force: true });
      await queue.close();
      return out;
    }, 'retry');
    // BullMQ resolves with void; echomq with the number of jobs moved (an extension).
    expect(r.bullmq.reply).toBe('void');
    expect(r.echomq.reply).toBe('value');
    expect({ ...r.echomq, reply: 0 }).toEqual({ ...r.bullmq, reply: 0 });
    expect(r.echomq.counts.waiting).toBe(4);
    expect(r.echomq.job).toEqual({ state: 'waiting', attemptsMade: 2, failedReason: null, finishedOn: null, processedOn: null, stacktrace: 2 });
  });

  it("retryJobs({ state: 'completed', timestamp }) retries only jobs finished by then", async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const worker = settlingWorker(lib, name);
      await queue.add('old', {});
      await waitFor(async () => (await queue.getJobCountByTypes('completed')) === 1, 10000, 'completed');
      await new Promise((res) => setTimeout(res, 30));
      const cut = Date.now();
      await new Promise((res) => setTimeout(res, 30));
      await queue.add('new', {});
      await waitFor(async () => (await queue.getJobCountByTypes('completed')) === 2, 10000, 'completed');
      await worker.close();
      await queue.retryJobs({ state: 'completed', timestamp: cut });
      const waiting = (await queue.getJobs(['waiting'])).map((j) => ({ name: j.name, returnvalue: j.returnvalue ?? null }));
      const completed = (await queue.getJobs(['completed'])).map((j) => j.name);
      await queue.obliterate({ force: true });
      await queue.close();
      return { waiting, completed };
    }, 'retryc');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ waiting: [{ name: 'old', returnvalue: null }], completed: ['new'] });
  });

  it('retryJobs puts a retried flow child back among its parent\'s pending children', async () => {
    let release!: () => void;
    const r = await sideBySide(async (lib, name, connection) => {
      const gate = new Promise<void>((res) => (release = res));
      const queue = new lib.Queue(name, { connection });
      const flows = new lib.FlowProducer({ connection });
      const tree = await flows.add({
        name: 'p', queueName: name,
        children: [{ name: 'hold', queueName: name }, { name: 'f1', queueName: name, opts: { ignoreDependencyOnFailure: true } }],
      });
      const worker = settlingWorker(lib, name, gate, 2);
      await waitFor(async () => (await queue.getJobCountByTypes('failed', 'active')) === 2, 10000, 'f1 failed, hold active');
      await worker.pause(true);
      const parent = () => queue.getJob(tree.job.id!);
      const before = (await (await parent())!.getDependencies()).unprocessed!.length;
      await queue.retryJobs();
      const after = (await (await parent())!.getDependencies()).unprocessed!.length;
      const state = await (await parent())!.getState();
      release();
      await worker.close();
      await queue.obliterate({ force: true });
      await Promise.all([queue.close(), flows.close()]);
      return { before, after, state };
    }, 'retryflow');
    // BullMQ's paused worker may still hold a blocking fetch that takes the retried child at once
    // (it fails again, so its parent counts 1 pending); echomq's paused worker takes nothing.
    expect(r.bullmq.before).toBe(1);
    expect([1, 2]).toContain(r.bullmq.after);
    expect(r.bullmq.state).toBe('waiting-children');
    expect(r.echomq).toEqual({ before: 1, after: 2, state: 'waiting-children' });
  });

  it('promoteJobs makes every delayed job waiting, earliest due first, with waiting events', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const jobs = [await queue.add('late', {}, { delay: 90_000 }), await queue.add('soon', {}, { delay: 30_000 }), await queue.add('mid', {}, { delay: 60_000 })];
      const names = new Map(jobs.map((j) => [j.id!, j.name]));
      const events = await recordEvents(lib, name, ['waiting']);
      await queue.promoteJobs({ count: 1 });
      await queue.add('marker', {});
      const seen = byName(await events.until('waiting', 4), names, ['jobId', 'prev']);
      await events.close();
      const out = { counts: await queue.getJobCounts(...COUNTS), seen, empty: await queue.promoteJobs() };
      await queue.obliterate({ force: true });
      await queue.close();
      return { ...out, empty: out.empty === undefined ? 'void' : out.empty };
    }, 'promote');
    expect(r.bullmq.empty).toBe('void');
    expect(r.echomq.empty).toBe(0); // echomq resolves with the number moved
    expect({ ...r.echomq, empty: 0 }).toEqual({ ...r.bullmq, empty: 0 });
    expect(r.echomq.seen.map((e) => e[1].jobId)).toEqual(['soon', 'mid', 'late']);
  });
});

describe('clean', () => {
  it('returns the removed ids by type and limit, emits cleaned(jobs, type) and the cleaned stream event', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const worker = settlingWorker(lib, name);
      const done = await queue.addBulk(['c1', 'c2', 'c3', 'f1'].map((n) => ({ name: n, data: {} })));
      await waitFor(async () => (await queue.getJobCountByTypes('completed', 'failed')) === 4, 10000, 'finished');
      await worker.close();
      const waiting = await queue.addBulk(['w1', 'w2', 'w3'].map((n) => ({ name: n, data: {} })));
      const prio = await queue.add('p1', {}, { priority: 3 });
      const delayed = await queue.add('d1', {}, { delay: 60_000 });
      const names = new Map([...done, ...waiting, prio, delayed].map((j) => [j.id!, j.name]));
      const named = (list: string[]) => list.map((id) => names.get(id));
      const cleaned: Array<[string[], string]> = [];
      queue.on('cleaned', (jobs: string[], type: string) => cleaned.push([named(jobs) as string[], type]));
      const events = await recordEvents(lib, name, ['cleaned', 'removed', 'paused']);
      const out = {
        young: await queue.clean(60_000, 0, 'completed'),
        completed2: named(await queue.clean(0, 2, 'completed')),
        failed: named(await queue.clean(0, 0, 'failed')),
        wait2: named(await queue.clean(0, 2, 'waiting')),
        prioritized: named(await queue.clean(0, 0, 'prioritized')),
        delayed: named(await queue.clean(0, 0, 'delayed')),
        active: await queue.clean(0, 0, 'active'),
        rest: named(await queue.clean(0, 0)),
        cleaned,
        stream: [] as string[][],
        counts: await queue.getJobCounts(...COUNTS),
      };
      await queue.pause(); // marker: every earlier stream event has been read once it arrives
      out.stream = (await events.until('paused')).map(([e, a]) => [e, String(a.count)]);
      await events.close();
      await queue.obliterate({ force: true });
      await queue.close();
      return out;
    }, 'clean');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.completed2).toEqual(['c1', 'c2']); // oldest first
    expect(r.echomq.wait2).toEqual(['w2', 'w1']); // the oldest two, newest first (BullMQ's list order)
    // One cleaned stream event per call (count 0 included), no removed events, as BullMQ.
    expect(r.echomq.stream).toEqual([['cleaned', '0'], ['cleaned', '2'], ['cleaned', '1'], ['cleaned', '2'], ['cleaned', '1'], ['cleaned', '1'], ['cleaned', '0'], ['cleaned', '1']]);
    expect(r.echomq.cleaned.map((c) => c[1])).toEqual(['completed', 'completed', 'failed', 'wait', 'prioritized', 'delayed', 'active', 'completed']);
  });

  it("cleans the waiting jobs of a paused queue with 'wait'; 'paused' differs on purpose", async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      await queue.pause();
      await queue.addBulk(['a', 'b'].map((n) => ({ name: n, data: {} })));
      const paused = (await queue.clean(0, 0, 'paused')).length;
      await queue.add('c', {});
      const wait = (await queue.clean(0, 0, 'wait')).length;
      await queue.obliterate({ force: true });
      await queue.close();
      return { paused, wait };
    }, 'cleanp');
    // BullMQ 6 keeps no paused list, so 'paused' finds nothing and 'wait' takes all three.
    // echomq reports a paused queue's waiting jobs as 'paused' (getJobCounts), so 'paused'
    // cleans them; 'wait' takes whatever is left, paused or not.
    expect(r.bullmq).toEqual({ paused: 0, wait: 3 });
    expect(r.echomq).toEqual({ paused: 2, wait: 1 });
  });

  it('refuses an unknown type with a ValidationError (BullMQ cleans nothing and reports it)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const out = await queue.clean(0, 0, 'bogus' as never).then((x) => x, (e: Error) => e.name);
      await queue.close();
      return out;
    }, 'cleanbad');
    expect(r.bullmq).toEqual([]);
    expect(r.echomq).toBe('ValidationError');
  });
});

describe('drain', () => {
  it('removes waiting (and with delayed, delayed) jobs; keeps the job of a scheduler slot', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      await queue.addBulk(['a', 'b'].map((n) => ({ name: n, data: {} })));
      await queue.add('p', {}, { priority: 2 });
      await queue.add('d', {}, { delay: 60_000 });
      await queue.upsertJobScheduler('every-hour', { every: 3_600_000, startDate: Date.now() + 3_600_000 }, { name: 'tick' });
      await queue.drain();
      const afterDrain = await queue.getJobCounts(...COUNTS);
      await queue.drain(true);
      const afterDelayed = await queue.getJobCounts(...COUNTS);
      const left = (await queue.getJobs(['delayed'])).map((j) => j.name);
      await queue.obliterate({ force: true });
      await queue.close();
      return { afterDrain, afterDelayed, left };
    }, 'drain');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.left).toEqual(['tick']);
  });

  it('drains flows as BullMQ: a parent goes with its last pending child, a parent in another queue becomes waiting', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection });
      const other = new lib.Queue(`${name}-b`, { connection });
      const flows = new lib.FlowProducer({ connection });
      await flows.add({ name: 'p', queueName: name, children: [{ name: 'c1', queueName: name }, { name: 'c2', queueName: name, opts: { delay: 60_000 } }] });
      await flows.add({ name: 'p2', queueName: name, children: [{ name: 'x1', queueName: `${name}-b` }] });
      const counts = () => queue.getJobCounts(...COUNTS);
      await queue.drain();
      const one = await counts(); // c1 gone; p still waits for c2
      await queue.drain(true);
      const two = await counts(); // c2 gone and p with it
      await other.drain();
      await waitFor(async () => (await queue.getJobCountByTypes('waiting')) === 1, 5000, 'p2 waiting');
      const three = { ...(await counts()), waiting: (await queue.getJobs(['waiting'])).map((j) => j.name) };
      for (const q of [queue, other]) await q.obliterate({ force: true });
      await Promise.all([queue.close(), other.close(), flows.close()]);
      return { one, two, three };
    }, 'drainflow');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.two['waiting-children']).toBe(1);
    expect(r.echomq.three.waiting).toEqual(['p2']);
  });
});

describe('obliterate', () => {
  it("refuses with BullMQ's text while a job is active; echomq leaves the queue as it was", async () => {
    let release!: () => void;
    const r = await sideBySide(async (lib, name, connection) => {
      const gate = new Promise<void>((res) => (release = res));
      const queue = new lib.Queue(name, { connection });
      const worker = settlingWorker(lib, name, gate);
      await queue.add('hold', {});
      await waitFor(async () => (await queue.getJobCountByTypes('active')) === 1, 10000, 'active');
      const paused: string[] = [];
      queue.on('paused', () => paused.push('paused'));
      const err = await queue.obliterate().then(() => undefined, (e: Error) => e.message);
      const out = { err, pausedAfter: await queue.isPaused(), paused: [...paused] };
      release();
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      return out;
    }, 'oblref');
    expect(r.bullmq.err).toBe('Cannot obliterate queue with active jobs');
    expect(r.echomq.err!.startsWith('Cannot obliterate queue with active jobs')).toBe(true);
    // BullMQ pauses before it checks and stays paused; echomq checks first: a refused call
    // changes nothing (a rejected call leaves Redis unchanged).
    expect(r.bullmq).toMatchObject({ pausedAfter: true, paused: ['paused'] });
    expect(r.echomq).toMatchObject({ pausedAfter: false, paused: [] });
  });

  it('deletes every key of the queue: jobs, logs, schedulers, metrics, events', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const queue = new lib.Queue(name, { connection, prefix: 'obl' });
      const worker = settlingWorker(lib, name);
      await worker.close();
      const jobs = await queue.addBulk(['a', 'b', 'c'].map((n) => ({ name: n, data: {} })));
      await jobs[0].log('a line');
      await queue.add('d', {}, { delay: 60_000 });
      await queue.upsertJobScheduler('s', { every: 60_000 });
      // Metrics as a worker with `metrics` writes them (raw keys: the same for both packages here).
      const metrics = side === 'bullmq' ? [`obl:${name}:metrics:completed`, `obl:${name}:metrics:completed:data`]
        : [keysOf(name, 'obl').metricsCompleted, keysOf(name, 'obl').metricsCompletedData];
      await connection.hset(metrics[0], 'count', 3);
      await connection.lpush(metrics[1], '3');
      const paused: string[] = [];
      queue.on('paused', () => paused.push('paused'));
      await queue.obliterate({ count: 2 });
      const pattern = side === 'bullmq' ? `obl:${name}:*` : queueKeyPattern(keysOf(name, 'obl'));
      // echomq's request records (req:<rid>) expire with their window by themselves (docs/protocol.md "Applied once").
      const left = (await connection.keys(pattern)).filter((k) => side === 'bullmq' || !k.startsWith(keysOf(name, 'obl').reqBase));
      await queue.close();
      return { left, paused };
    }, 'obl');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.left).toEqual([]);
  });
});

describe('removeOrphanedJobs and trimEvents', () => {
  it('removeOrphanedJobs deletes job data no state references and returns how many', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const queue = new lib.Queue(name, { connection });
      const kept = await queue.add('kept', {});
      const k = keysOf(name);
      // An orphan as the bug BullMQ's helper cleans up leaves it: job data with no state entry.
      for (const id of ['o1', 'o2']) {
        const key = side === 'bullmq' ? `bull:${name}:${id}` : k.jobBase + id;
        await connection.hset(key, 'name', 'orphan', 'data', '{}', 'timestamp', Date.now());
        await connection.rpush(side === 'bullmq' ? `${key}:logs` : k.logsBase + id, 'line');
      }
      const out = {
        first: await queue.removeOrphanedJobs(),
        again: await queue.removeOrphanedJobs(10, 1),
        keptStill: (await queue.getJob(kept.id!))?.name,
        counts: await queue.getJobCounts(...COUNTS),
        orphanLogs: await connection.exists(side === 'bullmq' ? `bull:${name}:o1:logs` : k.logsBase + 'o1'),
      };
      await queue.obliterate({ force: true });
      await queue.close();
      return out;
    }, 'orphan');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toMatchObject({ first: 2, again: 0, keptStill: 'kept', orphanLogs: 0 });
  });

  it('trimEvents returns the number of entries trimmed', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const queue = new lib.Queue(name, { connection });
      await queue.add('a', {});
      await queue.pause();
      await queue.resume();
      const key = side === 'bullmq' ? `bull:${name}:events` : keysOf(name).events;
      const before = await connection.xlen(key);
      const trimmed = await queue.trimEvents(0);
      const out = { all: trimmed === before && before > 0, after: await connection.xlen(key), none: await queue.trimEvents(0) };
      await queue.obliterate({ force: true });
      await queue.close();
      return out;
    }, 'trim');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toEqual({ all: true, after: 0, none: 0 });
  });
});
