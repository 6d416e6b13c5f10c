// Idle pickup latency: how long a job added to an idle queue waits before a worker that is
// sitting idle starts running it. Measured from just before `add` is called to the first line
// of the processor, both in this process (one clock), one job at a time.
import { deferred, withTimeout } from './meter.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A deferred whose rejection is observed later (or never) without an unhandled-rejection crash. */
function waiter() {
  const d = deferred();
  d.promise.catch(() => {});
  return d;
}

/** Nearest-rank percentile of an ascending array (p in 0…1). */
export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
}

/**
 * Starts one worker (concurrency 1) on an empty queue, lets it go idle, then `samples` times:
 * add one job, wait for its processor to start and for its completion, then pause `gapMs` plus
 * up to 20 ms of jitter, so the worker is back in its idle wait (blocking read or poll) and no
 * sample lines up with a timer. The first `warmup` samples are not kept.
 * Returns { latencies (ms, ascending), p50, p99, max }.
 */
export async function measurePickups(handle, { samples, warmup = 5, gapMs = 30, settleMs = 300 }) {
  let expected = -1;
  let started = waiter();
  let finished = waiter();
  let failure;
  const fail = (err) => {
    failure ??= err;
    started.reject(err);
    finished.reject(err);
  };
  const worker = handle.startWorker({
    concurrency: 1,
    processor(data) {
      if (data.i === expected) started.resolve(performance.now());
    },
    onCompleted(data) {
      if (data.i === expected) finished.resolve();
    },
    onFailed: fail,
  });
  const latencies = [];
  try {
    await sleep(settleMs); // connected, start-up sweeps done, waiting for work
    for (let k = 0; k < warmup + samples; k++) {
      if (failure) throw failure;
      started = waiter();
      finished = waiter();
      expected = k;
      const t0 = performance.now();
      const [, t1] = await withTimeout(Promise.all([handle.add({ data: { i: k } }), started.promise]), 10_000, `pickup of job ${k}`);
      await withTimeout(finished.promise, 10_000, `completion of job ${k}`);
      if (k >= warmup) latencies.push(t1 - t0);
      await sleep(gapMs + Math.random() * 20);
    }
  } finally {
    await worker.close();
  }
  latencies.sort((a, b) => a - b);
  return { latencies, p50: percentile(latencies, 0.5), p99: percentile(latencies, 0.99), max: latencies.at(-1) };
}
