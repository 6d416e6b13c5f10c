// Steps shared by the suites: filling a queue before a timed window, and timing a worker from
// its start to the N-th completion.
import { deferred, withTimeout } from './meter.mjs';

/** Adds `jobs` through addBulk in chunks (untimed prefill); returns jobs/s for the record. */
export async function prefill(handle, jobs, chunk = 10_000) {
  const t0 = performance.now();
  for (let i = 0; i < jobs.length; i += chunk) await handle.addBulk(jobs.slice(i, i + chunk));
  return jobs.length / ((performance.now() - t0) / 1000);
}

/** Generous limit for one processing window, so a stuck worker fails the run instead of hanging. */
function timeoutFor(target) {
  return 120_000 + target * 10;
}

/**
 * Starts a worker on an already filled queue and measures from just before the worker is
 * constructed to its `target`-th completion. `onJob(data, index)` sees every completion in
 * order (index from 1). The worker is closed after the measurement is read, so closing costs
 * nothing in the numbers; jobs left in the queue are the caller's to flush.
 */
export async function timeProcessing(meter, handle, { concurrency, target, onJob, ...workerArgs }) {
  const done = deferred();
  let count = 0;
  const window = await meter.begin();
  const worker = handle.startWorker({
    ...workerArgs, // processorFile, workerOpts (sandbox suite)
    concurrency,
    onCompleted(data) {
      count++;
      onJob?.(data, count);
      if (count === target) {
        window.mark();
        done.resolve();
      }
    },
    onFailed: (err) => done.reject(err),
  });
  try {
    await withTimeout(done.promise, timeoutFor(target), `processing ${target} jobs`);
    return await window.end(target);
  } finally {
    await worker.close();
  }
}
