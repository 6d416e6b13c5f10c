/**
 * Manual processing side by side with BullMQ: `new Worker(name, null)`, `getNextJob(token)`,
 * and the lock holder's calls on the job (moveToCompleted with fetchNext, moveToFailed,
 * moveToDelayed, moveToWait, extendLock, worker.extendJobLocks), with wrong and stale tokens.
 */
import { afterAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { closeConnections, sideBySide, type Lib, type LibName } from './harness.js';
import { client, keysOf, snapshot, sleep } from '../helpers.js';

afterAll(closeConnections);
const plain = client();
afterAll(() => plain.quit());

/** 'ok <json>' or 'err <message>' of a call. */
async function outcome(p: Promise<unknown>): Promise<string> {
  try {
    return `ok ${JSON.stringify(await p)}`;
  } catch (e) {
    return `err ${(e as Error).message}`;
  }
}

/** echomq's messages begin with BullMQ's text, then echomq's detail: compare those beginnings. */
function expectSameOutcomes(r: Record<LibName, Record<string, unknown>>): void {
  expect(Object.keys(r.echomq)).toEqual(Object.keys(r.bullmq));
  for (const k of Object.keys(r.bullmq)) {
    const b = r.bullmq[k];
    const e = r.echomq[k];
    if (typeof b === 'string' && b.startsWith('err ')) expect(String(e).startsWith(b), `${k}: ${String(e)} should begin with ${b}`).toBe(true);
    else expect(e, k).toBe(b);
  }
}

/** Keys of the echomq queue, byte for byte (BullMQ's side is not compared). */
async function snap(side: LibName, name: string): Promise<Map<string, string> | undefined> {
  return side === 'echomq' ? snapshot(plain, keysOf(name)) : undefined;
}

function manualWorker(lib: Lib, name: string, connection: Redis, opts: Record<string, unknown> = {}) {
  const w = new lib.Worker(name, null, { connection, ...opts });
  w.on('error', () => {});
  return w;
}

describe('manual processing (BullMQ: Worker without a processor)', () => {
  it('run() rejects without a processor and on a running worker, with BullMQ texts', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const manual = manualWorker(lib, name, connection);
      const auto = new lib.Worker(name, async () => 1, { connection });
      const seen = { manual: await outcome(manual.run()), again: await outcome(auto.run()), running: auto.isRunning(), manualRunning: manual.isRunning() };
      await Promise.all([manual.close(), auto.close()]);
      return seen;
    });
    expectSameOutcomes(r as never);
    expect(r.echomq.manual).toMatch(/^err No process function is defined\./);
    expect(r.echomq.again).toMatch(/^err Worker is already running\./);
  });

  it('getNextJob claims in order, emits active, and returns undefined when empty (block: false)', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', { n: 1 });
      await q.add('b', { n: 2 }, { priority: 1 });
      const w = manualWorker(lib, name, connection);
      const active: string[] = [];
      w.on('active', (job, prev) => active.push(`${job.name}:${prev}`));
      const j1 = await w.getNextJob('tok');
      const j2 = await w.getNextJob('tok');
      const none = await w.getNextJob('tok', { block: false });
      const seen = {
        jobs: [j1, j2].map((j) => j && { name: j.name, data: j.data, attemptsMade: j.attemptsMade, attemptsStarted: j.attemptsStarted }),
        states: [await j1!.getState(), await j2!.getState()],
        none: none ?? null,
        active,
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.jobs.map((j) => j?.name)).toEqual(['a', 'b']);
  });

  it('getNextJob with block waits for a job added later', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      const w = manualWorker(lib, name, connection, { drainDelay: 2 });
      await w.waitUntilReady();
      // BullMQ blocks only once it has seen the queue drained; echomq blocks on any call.
      const first = await w.getNextJob('tok', { block: false });
      expect(first).toBeUndefined();
      const pending = w.getNextJob('tok', { block: true });
      await sleep(100);
      await q.add('late', { x: 1 });
      const job = await pending;
      const seen = { name: job?.name ?? null };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.name).toBe('late');
  });

  it('moveToCompleted returns the next job, claimed in the same call; the last one returns no job', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', { n: 1 });
      await q.add('b', { n: 2 });
      const w = manualWorker(lib, name, connection);
      const j1 = (await w.getNextJob('tok'))!;
      const t1 = (await j1.moveToCompleted('r1', 'tok')) as unknown[];
      const data = t1[0] as Record<string, unknown>;
      const j2 = lib.Job.fromJSON(w as never, data as never, t1[1] as string);
      const t2 = (await j2.moveToCompleted('r2', 'tok')) as unknown[];
      const seen = {
        first: { len: t1.length, name: data.name, data: data.data, attemptsStarted: data.attemptsStarted, attemptsMade: data.attemptsMade, jobId: t1[1] === j1.id ? 'same' : typeof t1[1] },
        limits: [t1[2], t1[3]],
        nextState: await j2.getState(),
        last: { len: t2.length, job: t2[0] ?? null, rest: t2.slice(2) },
        done: [await j1.getState(), (await lib.Job.fromId(q as never, j1.id!))!.returnvalue, j1.attemptsMade],
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('moveToCompleted(…, false) and moveToFailed return no next job', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', {});
      await q.add('b', {});
      await q.add('c', {});
      const w = manualWorker(lib, name, connection);
      const a = (await w.getNextJob('tok'))!;
      const b = (await w.getNextJob('tok'))!;
      const seen = {
        completed: await outcome(a.moveToCompleted('x', 'tok', false)),
        failed: await outcome(b.moveToFailed(new Error('boom'), 'tok')),
        states: [await a.getState(), await b.getState(), b.failedReason, b.attemptsMade],
        counts: await q.getJobCounts('waiting', 'active', 'completed', 'failed'),
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('moveToFailed retries by attempts and backoff, and fails at once on UnrecoverableError', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('retry', {}, { attempts: 2, backoff: { type: 'fixed', delay: 50 } });
      await q.add('final', {}, { attempts: 3 });
      const w = manualWorker(lib, name, connection);
      const a = (await w.getNextJob('tok'))!;
      const b = (await w.getNextJob('tok'))!;
      await a.moveToFailed(new Error('first'), 'tok');
      await b.moveToFailed(new lib.UnrecoverableError('never again'), 'tok');
      const afterA = [await a.getState(), a.attemptsMade];
      await sleep(120);
      const a2 = (await w.getNextJob('tok'))!;
      await a2.moveToFailed(new Error('second'), 'tok');
      const seen = {
        afterA,
        a: [a2.name, await a2.getState(), a2.attemptsMade, a2.failedReason],
        b: [await b.getState(), b.attemptsMade, b.failedReason],
        stack: (await lib.Job.fromId(q as never, a2.id!))!.stacktrace!.length,
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('one token serves many jobs; moveToDelayed, moveToWait and extendLock keep the attempt uncounted', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', {});
      await q.add('b', {});
      await q.add('c', {});
      const w = manualWorker(lib, name, connection);
      const a = (await w.getNextJob('tok'))!;
      const b = (await w.getNextJob('tok'))!;
      const c = (await w.getNextJob('tok'))!;
      const seen = {
        extend: await a.extendLock('tok', 10_000),
        extendWrong: await a.extendLock('nope', 10_000),
        extendMany: await w.extendJobLocks([a.id!, b.id!, 'missing'], ['tok', 'tok', 'tok'], 10_000),
        delayed: await outcome(a.moveToDelayed(Date.now() + 60_000, 'tok')),
        wait: typeof (await b.moveToWait('tok')),
        completed: ((await c.moveToCompleted(1, 'tok', false)) as unknown[]).length,
        states: [await a.getState(), await b.getState(), await c.getState()],
        made: await Promise.all([a, b].map(async (j) => (await lib.Job.fromId(q as never, j.id!))!.attemptsMade)),
      };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.states).toEqual(['delayed', 'waiting', 'completed']);
  });

  it('refuses wrong and stale tokens with BullMQ texts and leaves the keys byte-identical', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', {});
      await q.add('b', {});
      const delayedJob = await q.add('c', {}, { delay: 60_000 });
      const w = manualWorker(lib, name, connection);
      const job = (await w.getNextJob('tok'))!;
      const out: Record<string, string> = {};
      const before = await snap(side, name);
      out.completeWrong = await outcome(job.moveToCompleted('r', 'other'));
      out.failWrong = await outcome(job.moveToFailed(new Error('x'), 'other'));
      out.delayWrong = await outcome(job.moveToDelayed(Date.now() + 1000, 'other'));
      out.waitWrong = await outcome(job.moveToWait('other'));
      out.childrenWrong = await outcome(job.moveToWaitingChildren('other'));
      out.extendWrong = await outcome(job.extendLock('other', 1000));
      const afterWrong = await snap(side, name);
      await job.moveToCompleted('r', 'tok', false);
      const before2 = await snap(side, name);
      out.completeAgain = await outcome(job.moveToCompleted('r', 'tok'));
      out.failAgain = await outcome(job.moveToFailed(new Error('x'), 'tok'));
      out.delayAgain = await outcome(job.moveToDelayed(Date.now() + 1000, 'tok'));
      out.waitAgain = await outcome(job.moveToWait('tok'));
      out.extendAgain = await outcome(job.extendLock('tok', 1000));
      const delayed = (await lib.Job.fromId(q as never, delayedJob.id!))!;
      out.delayNoToken = await outcome(delayed.moveToDelayed(Date.now() + 1000));
      const after2 = await snap(side, name);
      // Without a token BullMQ checks nothing and moves even a delayed job to wait (it then sits
      // in both); echomq refuses a job that is not active, with BullMQ's text for that case.
      const waitNoToken = await outcome(delayed.moveToWait());
      if (side === 'echomq') {
        expect(waitNoToken).toMatch(/^err Job \S+ is not in the active state/);
        expect(await snapshot(plain, keysOf(name))).toEqual(after2);
      }
      if (side === 'echomq') {
        expect(afterWrong).toEqual(before);
        expect(after2).toEqual(before2);
      }
      await w.close();
      await q.close();
      return out;
    });
    expectSameOutcomes(r);
    expect(r.echomq.completeWrong).toMatch(/^err Lock mismatch for job/);
    expect(r.echomq.completeAgain).toMatch(/^err Missing lock for job/);
    expect(r.echomq.delayNoToken).toMatch(/^err Job \S+ is not in the active state/);
  });

  it('differs on purpose: a settle for an attempt whose lease was recovered is refused, even under the same token', async () => {
    const r = await sideBySide(async (lib, name, connection, side) => {
      const q = new lib.Queue(name, { connection });
      await q.add('a', {});
      const w = manualWorker(lib, name, connection, { lockDuration: 100, stalledInterval: 50, skipLockRenewal: true });
      const old = (await w.getNextJob('tok'))!;
      await sleep(250);
      await w.startStalledCheckTimer(); // the expired lease goes back to waiting
      await sleep(200); // BullMQ marks a job stalled on one check and moves it on the next
      const again = await w.getNextJob('tok', { block: false });
      const before = await snap(side, name);
      const late = await outcome(old.moveToCompleted('late', 'tok', false));
      const after = await snap(side, name);
      if (side === 'echomq') expect(after).toEqual(before);
      const seen = { reclaimed: again?.id === old.id, late: late.slice(0, 30), attempt: again?.attemptsStarted };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq.reclaimed).toBe(true);
    expect(r.bullmq.reclaimed).toBe(true);
    // BullMQ's lock is the token alone, so the old attempt's settle completes the new one.
    expect(r.bullmq.late.startsWith('ok')).toBe(true);
    // echomq's attempt counter is the fence beside the token: refused.
    expect(r.echomq.late).toMatch(/^err Missing lock for job/);
  });

  it('a manual loop of 1,000 jobs with fetchNext makes one script call per job', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection });
      await q.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'j', data: { i } })));
      const w = manualWorker(lib, name, connection);
      await w.waitUntilReady();
      let scripts = 0;
      const send = connection.sendCommand.bind(connection);
      connection.sendCommand = ((cmd: { name: string }) => {
        if (/^(evalsha|eval|fcall)$/i.test(cmd.name)) scripts++;
        return send(cmd as never);
      }) as typeof connection.sendCommand;
      const seenIds: unknown[] = [];
      let job: Awaited<ReturnType<typeof w.getNextJob>> | undefined = await w.getNextJob('tok');
      while (job) {
        seenIds.push((job.data as { i: number }).i);
        const [data, id] = (await job.moveToCompleted('ok', 'tok')) as [unknown, string];
        job = data ? lib.Job.fromJSON(w as never, data as never, id) : undefined;
      }
      connection.sendCommand = send;
      const seen = { processed: seenIds.length, inOrder: seenIds.every((v, i) => v === i), completed: (await q.getJobCounts('completed')).completed, scripts };
      await w.close();
      await q.close();
      return seen;
    });
    expect(r.echomq).toEqual({ processed: 1000, inOrder: true, completed: 1000, scripts: 1001 });
    expect(r.echomq).toEqual(r.bullmq);
  });
});
