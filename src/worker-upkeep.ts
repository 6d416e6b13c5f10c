/**
 * A worker's periodic upkeep, apart from its hot path: renewing the leases of the jobs it runs
 * and the stall sweep that recovers jobs whose lease expired (any worker's).
 */
import { StaleJobError } from './errors.js';
import type { Job, JobContext } from './job.js';
import { repairSchedulers } from './schedulers.js';
import { drainOutbox } from './flows.js';
import { scripts } from './scripts/index.js';

/** A job the worker is running. */
export interface Running {
  job: Job;
  /** Fencing token of this attempt. */
  token: string;
  /** Its signal is the processor's third argument. */
  ac: AbortController;
  /** The lease was lost (another worker may run the job now): nothing of this attempt is settled. */
  lost: boolean;
  /** Set by cancelJob: the reason the job's attempt fails with. */
  cancelled?: string;
}

/** Jobs the stall sweep recovers per script call, and calls per sweep. */
const STALL_BATCH = 100;
const MAX_STALL_BATCHES = 10;

/**
 * Renews the lease of every running job whose lease is not known lost, in one call. A job whose
 * lease is gone is marked lost and its signal aborted with a StaleJobError, also handed to
 * onLost. Errors of the call itself are thrown.
 */
export async function renewLeases(ctx: JobContext, running: ReadonlyMap<string, Running>, leaseMs: number, onLost: (err: StaleJobError) => void): Promise<void> {
  const jobs: Array<{ id: string; token: string }> = [];
  for (const r of running.values()) if (!r.lost) jobs.push({ id: r.job.id, token: r.token });
  if (jobs.length === 0) return;
  const lost = await scripts.extendLeases(ctx, { leaseMs, jobs });
  for (const id of lost) {
    const run = running.get(id);
    if (!run || run.lost) continue;
    run.lost = true;
    const err = new StaleJobError(id, 'extendLeases');
    run.ac.abort(err);
    onLost(err);
  }
}

/**
 * One stall sweep, bounded: expired leases go back to their lane or fail (at most
 * STALL_BATCH × MAX_STALL_BATCHES jobs), each reported to onStalled; then flow outcomes and
 * scheduler slots a crash left behind are completed (flows.ts, schedulers.ts).
 */
export async function sweepStalled(ctx: JobContext, maxStalledCount: number, onStalled: (id: string) => void): Promise<void> {
  for (let i = 0; i < MAX_STALL_BATCHES; i++) {
    const r = await scripts.recover(ctx, { maxStalledCount, batch: STALL_BATCH });
    for (const id of r.requeued) onStalled(id);
    for (const id of r.failed) onStalled(id);
    if (r.requeued.length + r.failed.length < STALL_BATCH) break;
  }
  await drainOutbox(ctx.client, ctx.keys);
  await repairSchedulers(ctx.client, ctx.keys);
}
