/**
 * Stalled jobs as BullMQ users observe them, side by side: a worker closed with close(true)
 * leaves its jobs active; another worker's stall check finds them once their lock/lease
 * expired, requeues them (stalled) or, past maxStalledCount, fails them with BullMQ's reason.
 *
 * One deliberate difference, asserted below: BullMQ 6 only marks a job that stalled too often
 * and fails it when a worker next fetches it (an extra `active`, then `failed`, on whichever
 * worker fetched it); echomq fails it inside the stall sweep, atomically, on the worker whose
 * sweep found it, without a detour through waiting and active. The counters match.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, connection, sideBySide, type Lib } from './harness.js';
import { namesOf, perJob, reading, record, until } from './events-helpers.js';

afterAll(closeConnections);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const LOCK = 500;

/** Starts `names` on a first worker and closes it with close(true) while they run. */
async function strand(lib: Lib, name: string, jobs: Array<{ name: string; opts?: object }>) {
  const q = new lib.Queue(name, { connection: connection() });
  const added = [];
  for (const j of jobs) added.push(await q.add(j.name, {}, j.opts as never));
  let started = 0;
  // Returns once aborted (echomq aborts the signal on close(true)) or after 300 ms: either way
  // after close(true), so nothing of it may be settled.
  const w1 = new lib.Worker(name, (_job, _token, signal?: AbortSignal) => {
    started++;
    return new Promise((resolve) => {
      signal?.addEventListener('abort', () => resolve('from-w1'));
      setTimeout(() => resolve('from-w1'), 300);
    });
  }, { connection: connection(), lockDuration: LOCK, stalledInterval: 100, concurrency: jobs.length });
  await until(() => started === jobs.length, 5000, 'first worker started the jobs');
  await w1.close(true);
  return { q, added, w1 };
}

/** A worker's events with job ids replaced by job names and errors by name and message. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- either package's Worker
function workerLog(w: any, names: () => Map<string, string>) {
  const log: unknown[] = [];
  const label = (id: string) => names().get(id) ?? id;
  w.on('stalled', (id: string, prev: string) => log.push(['stalled', label(id), prev]));
  w.on('active', (job: any, prev: string) => log.push(['active', job.name, prev]));
  w.on('completed', (job: any, rv: unknown, prev: string) => log.push(['completed', job.name, rv, prev]));
  w.on('failed', (job: any, err: Error, prev: string) => log.push(['failed', job?.name, err.name, err.message, prev, job?.attemptsMade, job?.stalledCounter]));
  return log;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- either package's Queue
async function fields(q: any, id: string) {
  const j = (await q.getJob(id))!;
  const state = await j.getState();
  return {
    state, stalledCounter: j.stalledCounter, attemptsStarted: j.attemptsStarted, attemptsMade: j.attemptsMade,
    failedReason: j.failedReason, ...(state === 'completed' ? { returnvalue: j.returnvalue } : {}),
  };
}

describe('stalled jobs (BullMQ 6)', () => {
  it('past maxStalledCount a job fails with "job stalled more than allowable limit"', async () => {
    const r = await sideBySide(async (lib, name) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe);
      const { q, added } = await strand(lib, name, [{ name: 'once' }, { name: 'thrice', opts: { attempts: 3 } }]);
      const names = () => namesOf(seen);
      const waited = added[0].waitUntilFinished(qe as never).then(() => 'completed', (e: Error) => e.message);
      const w2 = new lib.Worker(name, async () => 'from-w2', { connection: connection(), lockDuration: LOCK, stalledInterval: 100, maxStalledCount: 0 });
      const log = workerLog(w2, names);
      await until(() => seen.filter((s) => s.event === 'failed').length === 2, 10_000, 'both jobs failed');
      await sleep(150);
      await w2.close();
      await qe.close();
      const out = {
        once: await fields(q, added[0].id!),
        thrice: await fields(q, added[1].id!),
        events: perJob(seen.filter((s) => s.event !== 'drained'), names()),
        worker: log.filter((e) => (e as string[])[0] !== 'active'),
        workerActive: log.filter((e) => (e as string[])[0] === 'active').length,
        waited: await waited,
        last: seen[seen.length - 1].event,
      };
      await q.close();
      return out;
    }, 'stall-fail');
    const reason = 'job stalled more than allowable limit';
    expect(r.bullmq.once).toEqual({ state: 'failed', stalledCounter: 1, attemptsStarted: 2, attemptsMade: 1, failedReason: reason });
    expect(r.echomq.once).toEqual(r.bullmq.once);
    expect(r.echomq.thrice).toEqual(r.bullmq.thrice);
    // the failures left the queue idle
    expect(r.bullmq.last).toBe('drained');
    expect(r.echomq.last).toBe('drained');
    // job.waitUntilFinished rejects with the reason
    expect(r.bullmq.waited).toBe(reason);
    expect(r.echomq.waited).toBe(reason);
    // The worker that found them: stalled, then failed with an UnrecoverableError (order per job).
    const byJob = (log: unknown[], job: string) => log.filter((e) => (e as unknown[])[1] === job);
    for (const job of ['once', 'thrice']) {
      expect(byJob(r.echomq.worker, job)).toEqual(byJob(r.bullmq.worker, job));
      expect(byJob(r.bullmq.worker, job)).toEqual([
        ['stalled', job, 'active'],
        ['failed', job, 'UnrecoverableError', reason, 'active', 1, 1],
      ]);
    }
    // BullMQ fetches the job again to fail it (worker 'active'); echomq does not.
    expect(r.bullmq.workerActive).toBe(2);
    expect(r.echomq.workerActive).toBe(0);
    // QueueEvents: BullMQ's detour through waiting and active is the only difference.
    const detour = (events: Array<[string, Record<string, unknown>]>) =>
      events.filter(([e, a], i) => !(e === 'waiting' && a.prev === 'active') && !(e === 'active' && events[i - 1]?.[0] === 'stalled'));
    const bull = r.bullmq.events;
    expect(bull.once.slice(3)).toEqual([
      ['waiting', { jobId: 'once', prev: 'active' }],
      ['stalled', { jobId: 'once' }],
      ['active', { jobId: 'once', prev: 'waiting' }],
      ['failed', { jobId: 'once', failedReason: reason, prev: 'active' }],
      ['retries-exhausted', { jobId: 'once', attemptsMade: '1' }],
    ]);
    expect(r.echomq.events.once).toEqual(detour(bull.once));
    expect(r.echomq.events.thrice).toEqual(detour(bull.thrice));
    expect(bull.thrice.some(([e]) => e === 'retries-exhausted')).toBe(false); // 1 of 3 attempts made
  });

  it('within maxStalledCount a stalled job is requeued and runs again; close(true) settled nothing', async () => {
    const r = await sideBySide(async (lib, name) => {
      const qe = new lib.QueueEvents(name, { connection: connection() });
      await reading(lib, qe, name, connection());
      const seen = record(qe);
      const { q, added } = await strand(lib, name, [{ name: 'job' }]);
      const w2 = new lib.Worker(name, async () => 'from-w2', { connection: connection(), lockDuration: LOCK, stalledInterval: 100, maxStalledCount: 1 });
      const log = workerLog(w2, () => namesOf(seen));
      await until(() => seen.some((s) => s.event === 'completed'), 10_000, 'job completed');
      await sleep(400); // w1's processor returned meanwhile: its result must not land
      await w2.close();
      await qe.close();
      const out = { job: await fields(q, added[0].id!), events: perJob(seen.filter((s) => s.event !== 'drained'), namesOf(seen)), worker: log };
      await q.close();
      return out;
    }, 'stall-requeue');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq.job).toEqual({ state: 'completed', stalledCounter: 1, attemptsStarted: 2, attemptsMade: 1, failedReason: undefined, returnvalue: 'from-w2' });
    expect(r.bullmq.worker).toEqual([['stalled', 'job', 'active'], ['active', 'job', 'waiting'], ['completed', 'job', 'from-w2', 'active']]);
    expect(r.bullmq.events.job.slice(3)).toEqual([
      ['waiting', { jobId: 'job', prev: 'active' }],
      ['stalled', { jobId: 'job' }],
      ['active', { jobId: 'job', prev: 'waiting' }],
      ['completed', { jobId: 'job', returnvalue: 'from-w2', prev: 'active' }],
    ]);
  });

  it('a flow child that fails by stalling applies its failure policy to the parent', async () => {
    const r = await sideBySide(async (lib, name) => {
      const flow = new lib.FlowProducer({ connection: connection() });
      const a = await flow.add({ name: 'fails-parent', queueName: name, children: [{ name: 'child-f', queueName: name, opts: { failParentOnFailure: true } }] });
      const b = await flow.add({ name: 'ignores', queueName: name, children: [{ name: 'child-i', queueName: name, opts: { ignoreDependencyOnFailure: true } }] });
      const q = new lib.Queue(name, { connection: connection() });
      let started = 0;
      const w1 = new lib.Worker(name, async () => {
        started++;
        await sleep(10_000);
      }, { connection: connection(), lockDuration: LOCK, stalledInterval: 100, concurrency: 2 });
      await until(() => started === 2, 5000, 'children started');
      await w1.close(true);
      const w2 = new lib.Worker(name, async (job) => `done ${job.name}`, { connection: connection(), lockDuration: LOCK, stalledInterval: 100, maxStalledCount: 0 });
      const state = async (id: string) => (await q.getJob(id))!.getState();
      const deadline = Date.now() + 10_000;
      let states: string[] = [];
      while (Date.now() < deadline) {
        states = [await state(a.job.id!), await state(a.children![0].job.id!), await state(b.job.id!), await state(b.children![0].job.id!)];
        if (states.join() === 'failed,failed,completed,failed') break;
        await sleep(50);
      }
      const ignored = (await q.getJob(b.children![0].job.id!))!.failedReason;
      await w2.close();
      await flow.close();
      await q.close();
      return { states, ignored };
    }, 'stall-flow');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ states: ['failed', 'failed', 'completed', 'failed'], ignored: 'job stalled more than allowable limit' });
  });

  it('a job of a job scheduler is requeued however often it stalls, while its scheduler exists', async () => {
    const r = await sideBySide(async (lib, name) => {
      const q = new lib.Queue(name, { connection: connection() });
      await q.upsertJobScheduler('every-minute', { every: 60_000 }, { name: 'tick' });
      let started = 0;
      const w1 = new lib.Worker(name, () => {
        started++;
        return new Promise(() => {}); // never settles: close(true) strands it
      }, { connection: connection(), lockDuration: LOCK, stalledInterval: 100 });
      await until(() => started === 1, 5000, 'tick started');
      const [job] = await q.getJobs(['active']);
      await w1.close(true);
      const w2 = new lib.Worker(name, async () => 'ticked', { connection: connection(), lockDuration: LOCK, stalledInterval: 100, maxStalledCount: 0 });
      const deadline = Date.now() + 10_000;
      let state = '';
      while (Date.now() < deadline && (state = await (await q.getJob(job.id!))!.getState()) !== 'completed' && state !== 'failed') await sleep(50);
      const j = (await q.getJob(job.id!))!;
      await w2.close();
      await q.removeJobScheduler('every-minute');
      await q.close();
      return { state, stalledCounter: j.stalledCounter, returnvalue: j.returnvalue };
    }, 'stall-sched');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.bullmq).toEqual({ state: 'completed', stalledCounter: 1, returnvalue: 'ticked' });
  });

  it('stalledInterval of 100 ms: stalls are found within a few intervals of the lock expiring', async () => {
    const r = await sideBySide(async (lib, name) => {
      const { q, added } = await strand(lib, name, [{ name: 'quick' }]);
      const closedAt = Date.now();
      const w2 = new lib.Worker(name, async () => 'ok', { connection: connection(), lockDuration: LOCK, stalledInterval: 100 });
      let stalledAt = 0;
      w2.on('stalled', () => (stalledAt ||= Date.now()));
      await until(() => stalledAt > 0, 5000, 'stalled');
      const waited = stalledAt - closedAt;
      await w2.close();
      await q.close();
      // the lease/lock runs out within LOCK ms of the last renewal; then a few 100 ms intervals
      return { found: waited < LOCK + 1500, id: added[0].id !== undefined };
    }, 'stall-interval');
    expect(r).toEqual({ bullmq: { found: true, id: true }, echomq: { found: true, id: true } });
  });
});
