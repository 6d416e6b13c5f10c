/**
 * Sandboxed processors side by side with BullMQ's: the same processor file
 * (test/fixtures/sandbox/compat.mjs), the same calls, compared on what a user observes: the
 * return value, the failure (reason, first stack line, attempts), progress in Redis and in the
 * worker's and QueueEvents' events, logs and updated data. Child processes and worker threads.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide, type Lib, type LibName } from './harness.js';
import type { Redis } from 'ioredis';

afterAll(closeConnections);

const FILE = new URL('../fixtures/sandbox/compat.mjs', import.meta.url);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs one job through a sandboxed worker of `lib` and returns what a user can observe of it. */
async function observe(lib: Lib, name: string, connection: Redis, side: LibName, jobName: string, useWorkerThreads: boolean, attempts = 1) {
  const queue = new lib.Queue(name, { connection });
  const events = new lib.QueueEvents(name, { connection: connection.duplicate() });
  await events.waitUntilReady();
  const eventProgress: unknown[] = [];
  events.on('progress', ({ data }: { data: unknown }) => eventProgress.push(data));
  const worker = new lib.Worker(name, FILE, { connection, useWorkerThreads });
  const workerProgress: unknown[] = [];
  worker.on('progress', (_job: unknown, p: unknown) => workerProgress.push(p));
  const failures: Array<{ message: string; name: string }> = [];
  const finished = new Promise<void>((resolve) => {
    worker.on('completed', () => resolve());
    worker.on('failed', (job: { attemptsMade: number } | undefined, err: Error) => {
      failures.push({ message: err.message, name: err.name });
      if (!job || job.attemptsMade >= attempts || err.name === 'UnrecoverableError') resolve();
    });
  });
  const added = await queue.add(jobName, { n: 1 }, { attempts });
  await finished;
  // BullMQ's child sends progress, logs and data updates without waiting for the parent to
  // store them, so they may land just after the job completes: give them a moment on both sides.
  await sleep(300);
  const job = (await queue.getJob(added.id!))!;
  const logs = side === 'bullmq' ? (await queue.getJobLogs(added.id!)).logs : await (job as unknown as { getLogs(): Promise<string[]> }).getLogs();
  const seen = {
    state: await job.getState(),
    returnvalue: job.returnvalue ?? null,
    failedReason: job.failedReason ?? null,
    stackHead: job.stacktrace?.[0]?.split('\n')[0] ?? null,
    attemptsMade: job.attemptsMade,
    progress: job.progress,
    data: job.data,
    logs,
    workerProgress,
    eventProgress,
    failures,
  };
  await worker.close();
  await events.close();
  await queue.close();
  return seen;
}

describe.each([false, true])('sandboxed processors side by side with BullMQ (useWorkerThreads %s)', (useWorkerThreads) => {
  it('a returned value completes the job, with the job fields the processor saw', async () => {
    const r = await sideBySide((lib, name, conn, side) => observe(lib, name, conn, side, 'result', useWorkerThreads), 'sbcompat');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.returnvalue).toEqual({ data: { n: 1 }, name: 'result', attemptsMade: 0, progress: 0, idType: 'string' });
  });

  it('progress, logs and updateData are stored and emitted the same way', async () => {
    const r = await sideBySide((lib, name, conn, side) => observe(lib, name, conn, side, 'progress', useWorkerThreads), 'sbcompat');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.logs).toEqual(['line one', 'line two']);
    expect(r.echomq.workerProgress).toEqual([10, { pct: 50 }]);
  });

  it('a thrown error fails the job with its message and stack; attempts are retried', async () => {
    const r = await sideBySide((lib, name, conn, side) => observe(lib, name, conn, side, 'throw', useWorkerThreads, 2), 'sbcompat');
    const { failures: bullFailures, ...bull } = r.bullmq;
    const { failures: echoFailures, ...echo } = r.echomq;
    expect(echo).toEqual(bull);
    expect(echo.stackHead).toBe('TypeError: nope');
    // Differs on purpose: the 'failed' event's error keeps the class name the processor threw
    // (BullMQ's is always a plain Error with the message), so `err.name` checks work as inline.
    expect(bullFailures).toEqual([{ message: 'nope', name: 'Error' }, { message: 'nope', name: 'Error' }]);
    expect(echoFailures).toEqual([{ message: 'nope', name: 'TypeError' }, { message: 'nope', name: 'TypeError' }]);
  });

  it('UnrecoverableError stops the retries', async () => {
    const r = await sideBySide((lib, name, conn, side) => observe(lib, name, conn, side, 'unrecoverable', useWorkerThreads, 3), 'sbcompat');
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.attemptsMade).toBe(1);
  });

  it("process.exit(3) fails the job; echomq's reason begins with BullMQ's and says what happened", async () => {
    const r = await sideBySide((lib, name, conn, side) => observe(lib, name, conn, side, 'exit', useWorkerThreads), 'sbcompat');
    const { failedReason: bullReason, stackHead: bullStack, failures: bullFailures, ...bull } = r.bullmq;
    const { failedReason: echoReason, stackHead: echoStack, failures: echoFailures, ...echo } = r.echomq;
    expect(echo).toEqual(bull);
    expect(bullReason).toBe('Unexpected exit code: 3 signal: null');
    expect(echoReason).toBe(`${bullReason} (the sandboxed processor exited with code 3)`);
    expect(echoStack!.startsWith(bullStack!)).toBe(true);
    expect(echoFailures[0]!.message.startsWith(bullFailures[0]!.message)).toBe(true);
  });
});
