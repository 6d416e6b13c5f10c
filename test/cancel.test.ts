import { afterAll, describe, expect, it } from 'vitest';
import { Job, Queue, UnrecoverableError, ValidationError, Worker } from '../src/index.js';
import { qname, redisUrl, waitFor } from './helpers.js';
import { processorSeesSignal } from '../src/worker/processor-signal.js';

/** Resolves when the signal aborts, then throws its reason, like a fetch() given the signal. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

describe('cancellation', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const f of closers.reverse()) await f();
  });
  const queue = (name: string) => {
    const q = new Queue(name, { connection: redisUrl() });
    closers.push(() => q.close());
    return q;
  };
  const worker = (name: string, fn: (job: Job, token: string, signal: AbortSignal) => unknown, opts = {}) => {
    const w = new Worker(name, fn as never, { connection: redisUrl(), ...opts });
    closers.push(() => w.close());
    return w;
  };
  const settled = (q: Queue, id: string) =>
    waitFor(async () => ['completed', 'failed'].includes(await (await q.getJob(id))!.getState()), 5000, `job ${id} settled`);

  it('cancelJob aborts the signal with the reason; the processor throws it and the job fails with it', async () => {
    const name = qname('cx');
    const q = queue(name);
    const seen: Array<{ aborted: boolean; reason: unknown }> = [];
    const w = worker(name, async (_job, _token, signal) => {
      try {
        await untilAborted(signal);
      } finally {
        seen.push({ aborted: signal.aborted, reason: signal.reason });
      }
    });
    const job = await q.add('long', {});
    await waitFor(() => w.activeCount === 1, 5000, 'running');
    expect(w.cancelJob('not-running')).toBe(false);
    expect(w.cancelJob(job.id, 'user asked')).toBe(true);
    await settled(q, job.id);
    expect(seen).toEqual([{ aborted: true, reason: 'user asked' }]);
    const done = (await q.getJob(job.id))!;
    expect(await done.getState()).toBe('failed');
    expect(done.failedReason).toBe('user asked');
    expect(w.cancelJob(job.id)).toBe(false); // no longer running
  });

  it('passes the signal to processors that declare it or take rest parameters, not to those with one or two parameters', async () => {
    const name = qname('cxarity');
    const q = queue(name);
    const got: Record<string, unknown> = {};
    const kinds: Record<string, (...a: any[]) => unknown> = {
      three: async (job: Job, _t: string, signal: AbortSignal) => (got[job.name] = signal),
      rest: async (...args: any[]) => (got[args[0].name] = args[2]),
      none: async function (this: unknown) { got.none = arguments[2]; },
      one: async function (job: Job) { got[job.name] = arguments[2]; },
      two: async function (job: Job, _t: string) { got[job.name] = arguments[2]; },
    };
    for (const [kind, fn] of Object.entries(kinds)) {
      const w = new Worker(name, fn as never, { connection: redisUrl() });
      await q.add(kind, {});
      await waitFor(() => kind in got, 5000, `${kind} ran`);
      await w.close();
    }
    expect(got.three).toBeInstanceOf(AbortSignal);
    expect(got.rest).toBeInstanceOf(AbortSignal);
    expect(got.none).toBeInstanceOf(AbortSignal);
    expect(got.one).toBeUndefined();
    expect(got.two).toBeUndefined();
  });

  it('reads which processors can see the signal from their parameter list', () => {
    const sees = (fn: (...a: any[]) => unknown) => processorSeesSignal(fn as never);
    expect(sees(async (_j: unknown, _t: unknown, _s: unknown) => 0)).toBe(true);
    expect(sees(async (...args: unknown[]) => args)).toBe(true);
    expect(sees(async (j: unknown = 1, t?: unknown, s?: unknown) => [j, t, s])).toBe(true); // defaults: length 0
    expect(sees(function () { return arguments; })).toBe(true);
    expect(sees(async function named() { return arguments.length; })).toBe(true);
    expect(sees({ m() { return arguments; } }.m)).toBe(true);
    expect(sees(Date.now)).toBe(true); // native: unreadable, so yes
    expect(sees((() => 0).bind(null))).toBe(true); // bound: its source is not readable
    expect(sees(async () => 0)).toBe(false);
    expect(sees(() => {})).toBe(false);
    expect(sees(async function () { return 1; })).toBe(false);
    expect(sees({ async m() { return 1; } }.m)).toBe(false);
    expect(sees(async (j: unknown) => j)).toBe(false);
  });

  it('a processor with an empty parameter list gets no signal: cancelJob returns false (BullMQ)', async () => {
    const name = qname('cxempty');
    const q = queue(name);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = worker(name, (async () => { await gate; }) as never);
    const job = await q.add('plain', {});
    await waitFor(() => w.activeCount === 1, 5000, 'running');
    expect(w.cancelJob(job.id, 'stop it')).toBe(false);
    release();
    await settled(q, job.id);
    expect(await (await q.getJob(job.id))!.getState()).toBe('completed');
  });

  it('cancelJob of a job whose processor takes no signal returns false and changes nothing (BullMQ)', async () => {
    const name = qname('cxnosig');
    const q = queue(name);
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const w = worker(name, (async (job: Job) => {
      await gate;
      throw new Error(`gave up on ${job.name}`);
    }) as never);
    const job = await q.add('plain', {});
    await waitFor(() => w.activeCount === 1, 5000, 'running');
    expect(w.cancelJob(job.id, 'stop it')).toBe(false);
    expect(w.cancelAllJobs('stop all')).toBe(0);
    release();
    await settled(q, job.id);
    const done = (await q.getJob(job.id))!;
    expect(await done.getState()).toBe('failed');
    expect(done.failedReason).toBe('gave up on plain');
  });

  it('the failed reason is what the processor throws after the cancel (BullMQ); the default reason reaches the signal', async () => {
    const name = qname('cx2');
    const q = queue(name);
    const reasons: unknown[] = [];
    const w = worker(name, async (job, _token, signal) => {
      await untilAborted(signal).catch((r) => reasons.push(r));
      throw new Error(`cleanup error of ${job.name}`);
    }, { concurrency: 2 });
    const a = await q.add('a', {});
    const b = await q.add('b', {});
    await waitFor(() => w.activeCount === 2, 5000, 'both running');
    expect(w.cancelJob(a.id, 'stop a')).toBe(true);
    expect(w.cancelJob(b.id)).toBe(true);
    await settled(q, a.id);
    await settled(q, b.id);
    expect((await q.getJob(a.id))!.failedReason).toBe('cleanup error of a');
    expect((await q.getJob(b.id))!.failedReason).toBe('cleanup error of b');
    expect(reasons).toEqual(['stop a', 'job cancelled']);
  });

  it('a cancelled attempt is retried when attempts remain; UnrecoverableError stops that', async () => {
    const name = qname('cx3');
    const q = queue(name);
    const w = worker(name, async (job, _token, signal) => {
      if (job.attemptsMade === 0) {
        await untilAborted(signal).catch((reason) => {
          throw job.name === 'final' ? new UnrecoverableError(String(reason)) : reason;
        });
      }
      return `done on attempt ${job.attemptsMade + 1}`;
    }, { concurrency: 2 });
    const retried = await q.add('retried', {}, { attempts: 2 });
    const final = await q.add('final', {}, { attempts: 3 });
    await waitFor(() => w.activeCount === 2, 5000, 'both running');
    expect(w.cancelAllJobs('shutting down')).toBe(2);
    await waitFor(async () => (await q.getJobState(retried.id)) === 'completed', 5000, 'retry completed');
    const r = (await q.getJob(retried.id))!;
    expect(r.returnvalue).toBe('done on attempt 2');
    expect(r.failedReason).toBe('shutting down'); // the first attempt's reason is kept
    await settled(q, final.id);
    const f = (await q.getJob(final.id))!;
    expect(await f.getState()).toBe('failed');
    expect(f.failedReason).toBe('shutting down');
    expect(f.attemptsMade).toBe(1);
  });

  it('cancellation is cooperative: a processor that returns anyway completes', async () => {
    const name = qname('cx4');
    const q = queue(name);
    let abortedSeen = false;
    const w = worker(name, async (_job, _token, signal) => {
      await new Promise<void>((r) => signal.addEventListener('abort', () => r(), { once: true }));
      abortedSeen = signal.aborted;
      return 'finished anyway';
    });
    const job = await q.add('j', {});
    await waitFor(() => w.activeCount === 1, 5000, 'running');
    expect(w.cancelJob(job.id, 'please stop')).toBe(true);
    await settled(q, job.id);
    expect(abortedSeen).toBe(true);
    expect((await q.getJob(job.id))!.returnvalue).toBe('finished anyway');
  });

  it('validates its arguments', async () => {
    const w = worker(qname('cx5'), async () => {}, { autorun: false });
    expect(() => w.cancelJob(5 as never)).toThrow(ValidationError);
    expect(() => w.cancelJob('')).toThrow('jobId must be a non-empty string');
    expect(() => w.cancelJob('x', 7 as never)).toThrow('reason must be a string');
    expect(() => w.cancelAllJobs({} as never)).toThrow(ValidationError);
    expect(w.cancelAllJobs()).toBe(0);
  });
});
