/**
 * The acceptance scenarios of sandboxed processors, run once with child processes
 * (sandbox-processes.test.ts) and once with worker threads (sandbox-threads.test.ts). The
 * processor fixture is test/fixtures/sandbox/processor.mjs; the job's name picks its behaviour.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Job, Queue, QueueEvents, Worker, type WorkerOptions } from '../src/index.js';
import { qname, redisUrl, waitFor } from './helpers.js';

export const FIXTURE = new URL('./fixtures/sandbox/processor.mjs', import.meta.url);

export function sandboxSuite(mode: 'processes' | 'threads'): void {
  const useWorkerThreads = mode === 'threads';
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const f of closers.splice(0).reverse()) await f();
  });
  const queue = (name: string) => {
    const q = new Queue(name, { connection: redisUrl() });
    closers.push(() => q.close());
    return q;
  };
  const worker = (name: string, opts: WorkerOptions = {}, file: string | URL = FIXTURE) => {
    const w = new Worker(name, file, { connection: redisUrl(), useWorkerThreads, ...opts });
    w.on('error', () => {});
    closers.push(() => w.close());
    return w;
  };
  const finished = (q: Queue, id: string, ms = 15_000) =>
    waitFor(async () => ['completed', 'failed'].includes(await (await q.getJob(id))!.getState()), ms, `job ${id} finished`);
  const reload = async (q: Queue, id: string) => (await q.getJob(id))!;

  describe(`sandboxed processor in ${mode}`, () => {
    it('returns the result, with the job fields and token the processor saw', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const job = await q.add('echo', { n: 1, s: 'x' }, { attempts: 2, lane: 'tenant-a' });
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(await done.getState()).toBe('completed');
      expect(done.returnvalue).toEqual({
        data: { n: 1, s: 'x' }, id: job.id, name: 'echo', queueName: name, lane: 'tenant-a',
        attemptsMade: 0, attemptsStarted: 1, timestamp: true, progress: 0, opts: done.opts, token: '1', hasSignal: true,
      });
      await w.close();
    });

    it('progress, logs and updateData reach Redis, the worker events and QueueEvents', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const qe = new QueueEvents(name, { connection: redisUrl() });
      closers.push(() => qe.close());
      await qe.waitUntilReady();
      const fromEvents: unknown[] = [];
      qe.on('progress', ({ data }) => fromEvents.push(data));
      const w = worker(name);
      const fromWorker: unknown[] = [];
      w.on('progress', (_job: Job, p: unknown) => fromWorker.push(p));
      const job = await q.add('progress', { a: 1 });
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(done.returnvalue).toEqual({ progress: { step: 'two' }, data: { a: 1, updated: true }, lines: 1 });
      expect(done.progress).toEqual({ step: 'two' });
      expect(done.data).toEqual({ a: 1, updated: true });
      expect(await done.getLogs()).toEqual(['hello from the sandbox']);
      expect(fromWorker).toEqual([42, { step: 'two' }]);
      await waitFor(() => fromEvents.length === 2, 5000, 'progress events');
      expect(fromEvents).toEqual([42, { step: 'two' }]);
      await w.close();
    });

    it('a thrown error fails the job with its message, name, stack and fields', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const failures: Error[] = [];
      w.on('failed', (_job: Job | undefined, err: Error) => failures.push(err));
      const job = await q.add('throw', { n: 7 });
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(done.failedReason).toBe('bad input 7');
      expect(done.stacktrace[0]).toMatch(/^TypeError: bad input 7\n\s+at .*processor\.mjs/);
      expect(failures[0]!.name).toBe('TypeError');
      expect((failures[0] as Error & { code?: string }).code).toBe('E_FIXTURE');
      await w.close();
    });

    it('UnrecoverableError fails at once although attempts remain', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const job = await q.add('unrecoverable', {}, { attempts: 5 });
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(await done.getState()).toBe('failed');
      expect(done.failedReason).toBe('give up');
      expect(done.attemptsMade).toBe(1);
      await w.close();
    });

    it('process.exit(3) fails only its job, with the exit in the reason; the next job runs', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const job = await q.add('exit', {});
      await finished(q, job.id);
      expect((await reload(q, job.id)).failedReason).toBe('Unexpected exit code: 3 signal: null (the sandboxed processor exited with code 3)');
      const next = await q.add('echo', { after: 'exit' });
      await finished(q, next.id);
      expect((await reload(q, next.id)).returnvalue).toMatchObject({ data: { after: 'exit' } });
      await w.close();
    });

    it('an uncaught error outside the processor fails its job, and the child is replaced', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const job = await q.add('uncaught', {});
      await finished(q, job.id);
      expect((await reload(q, job.id)).failedReason).toBe('thrown outside the processor');
      const next = await q.add('echo', { after: 'uncaught' });
      await finished(q, next.id);
      expect(await (await reload(q, next.id)).getState()).toBe('completed');
      await w.close();
    });

    it('a processor file that throws while loading fails the job with the load error; the worker keeps going', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name, {}, new URL('./fixtures/sandbox/load-error.mjs', import.meta.url));
      const a = await q.add('any', {});
      const b = await q.add('any', {});
      await finished(q, a.id);
      await finished(q, b.id);
      for (const id of [a.id, b.id]) {
        const done = await reload(q, id);
        expect(done.failedReason).toMatch(/^broken at load time \(failed to load: .*load-error\.mjs\)$/);
        expect(done.stacktrace[0]).toContain('load-error.mjs');
      }
      await w.close();
    });

    it('an infinite loop cancelled by cancelJob is terminated after the grace period and fails with the reason', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name, { sandboxGracePeriod: 200 });
      const job = await q.add('spin', {});
      await waitFor(() => w.activeCount === 1, 10_000, 'running');
      expect(w.cancelJob(job.id, 'operator cancelled')).toBe(true);
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(done.failedReason).toBe('operator cancelled');
      const next = await q.add('echo', {});
      await finished(q, next.id);
      expect(await (await reload(q, next.id)).getState()).toBe('completed');
      await w.close();
    });

    it("cancelJob aborts the child's AbortSignal with the reason", async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const failures: Error[] = [];
      w.on('failed', (_job: Job | undefined, err: Error) => failures.push(err));
      let started = false;
      w.on('progress', () => (started = true));
      const job = await q.add('wait-abort', {});
      await waitFor(() => started, 10_000, 'started in the child');
      w.cancelJob(job.id, 'stop now');
      await finished(q, job.id);
      const done = await reload(q, job.id);
      // The child's processor threw this after its signal aborted: BullMQ fails the job with it.
      expect(done.failedReason).toBe('aborted: stop now');
      expect(await done.getLogs()).toEqual(['aborted: stop now']);
      await w.close();
    });

    it('concurrency 2 runs two CPU-bound jobs in parallel in two children', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name, { concurrency: 2 });
      // Warm both children first, so their start-up does not separate the two timed jobs.
      const warm = await q.addBulk([{ name: 'cpu', data: { ms: 300 } }, { name: 'cpu', data: { ms: 300 } }]);
      for (const j of warm) await finished(q, j.id);
      const jobs = await q.addBulk([{ name: 'cpu', data: { ms: 800 } }, { name: 'cpu', data: { ms: 800 } }]);
      for (const j of jobs) await finished(q, j.id);
      const [a, b] = await Promise.all(jobs.map(async (j) => (await reload(q, j.id)).returnvalue));
      expect(mode === 'threads' ? a.threadId !== b.threadId : a.pid !== b.pid).toBe(true);
      // Overlap: each started before the other ended.
      expect(a.start).toBeLessThan(b.end);
      expect(b.start).toBeLessThan(a.end);
      await w.close();
    });

    it('leases are renewed by the parent while a child blocks its own event loop', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      // Leases of 200 ms renewed every 100 ms; the sweep runs every 100 ms: a missed renewal stalls the job.
      const w = worker(name, { concurrency: 2, lockDuration: 200, stalledInterval: 100, maxStalledCount: 0 });
      const stalled: string[] = [];
      w.on('stalled', (id: string) => stalled.push(id));
      const jobs = await q.addBulk([{ name: 'cpu', data: { ms: 1500 } }, { name: 'cpu', data: { ms: 1500 } }]);
      for (const job of jobs) {
        await finished(q, job.id);
        const done = await reload(q, job.id);
        expect(await done.getState()).toBe('completed');
        expect(done.stalledCounter).toBe(0);
      }
      expect(stalled).toEqual([]);
      await w.close();
    });

    it('a step job parks itself with moveToDelayed and completes on its next run', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const job = await q.add('step', { step: 'first' });
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(done.returnvalue).toBe('finished after the delay');
      expect(done.data).toEqual({ step: 'parked' });
      await w.close();
    });

    it('a return value that cannot be sent to the parent fails the job', async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const cycle = await q.add('cycle', {});
      await finished(q, cycle.id);
      expect((await reload(q, cycle.id)).failedReason).toMatch(mode === 'threads' ? /^returnvalue must be a JSON-serialisable/ : /circular structure/i);
      const next = await q.add('echo', {});
      await finished(q, next.id);
      expect(await (await reload(q, next.id)).getState()).toBe('completed');
      await w.close();
    });

    it("getIgnoredChildrenFailures and getDependenciesCount in the child are answered by the parent's Job", async () => {
      const name = qname(`sb-${mode}`);
      const q = queue(name);
      const w = worker(name);
      const job = await q.add('dependency-reads', {});
      await finished(q, job.id);
      const done = await reload(q, job.id);
      expect(await done.getState()).toBe('completed');
      expect(done.returnvalue).toEqual({ ignored: {}, counts: { failed: 0, ignored: 0, processed: 0, unprocessed: 0 } });
      await w.close();
    });
  });
}
