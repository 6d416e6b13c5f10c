/**
 * A worker's periodic upkeep, apart from its hot path: renewing the leases of the jobs it runs
 * and the stall sweep that recovers jobs whose lease expired (any worker's).
 */
import { StaleJobError, UnrecoverableError } from '../core/errors.js';
import { Job, type JobContext } from '../job/job.js';
import { repairSchedulers } from '../lifecycle/schedulers.js';
import { drainOutbox, mayWriteOutbox } from '../job/flows.js';
import { scripts, type SettleHint } from '../scripts/index.js';

/** A job the worker is running. */
export interface Running {
  job: Job;
  /** Fencing token of this attempt. */
  token: string;
  /** Its signal is the processor's third argument. */
  ac: AbortController;
  /** The lease was lost (another worker may run the job now): nothing of this attempt is settled. */
  lost: boolean;
  /**
   * A settle call for it is under way: a renewal that finds the job no longer active raced that
   * call (which Redis ran first) and is not a lost lease; the settle reports its own outcome.
   */
  settling?: boolean;
  /** Set by cancelJob: the reason the job's attempt fails with. */
  cancelled?: string;
  /** Fields of its claim reply that its completing settle sends instead of having them read. */
  claimed?: SettleHint;
}

/** Jobs the stall sweep recovers per script call, and calls per sweep. */
const STALL_BATCH = 100;
const MAX_STALL_BATCHES = 10;

/** BullMQ's failed reason of a job that stalled more than maxStalledCount times (recover.lua). */
export const STALLED_REASON = 'job stalled more than allowable limit';

/**
 * Renews the lease of every running job whose lease is not known lost, in one call. A job whose
 * lease is gone is marked lost and its signal aborted with a StaleJobError, also handed to
 * onLost. Errors of the call itself are thrown.
 */
export async function renewLeases(
  ctx: JobContext, running: ReadonlyMap<string, Running>, leaseMs: number, onLost: (err: StaleJobError) => void,
): Promise<void> {
  const jobs: Array<{ id: string; token: string }> = [];
  for (const r of running.values()) if (!r.lost) jobs.push({ id: r.job.id, token: r.token });
  if (jobs.length === 0) return;
  const lost = await scripts.extendLeases(ctx, { leaseMs, jobs });
  for (const id of lost) {
    const run = running.get(id);
    if (!run || run.lost || run.settling) continue;
    run.lost = true;
    const err = new StaleJobError(id, 'extendLeases');
    run.ac.abort(err);
    onLost(err);
  }
}

/** What the stall sweep reports to the worker that ran it. */
export interface StallHandlers {
  /** A job whose lease expired: requeued, or failed (then onFailed follows). BullMQ's worker 'stalled'. */
  onStalled(id: string): void;
  /**
   * A job that stalled more than maxStalledCount times and failed for good, with the job as it
   * was when it failed and BullMQ's error (an UnrecoverableError with the failed reason).
   */
  onFailed?(job: Job, err: Error): void;
}

/** Sweeps in flight, per queue context: a sweep that outlasts stalledInterval is not doubled. */
const sweeping = new WeakMap<JobContext, Promise<void>>();

/**
 * One stall sweep, bounded: expired leases go back to their lane or fail (at most
 * STALL_BATCH × MAX_STALL_BATCHES jobs), each reported to the handlers; then flow outcomes and
 * scheduler slots a crash left behind are completed (flows.ts, schedulers.ts). A call while
 * the previous sweep of the same context still runs returns that sweep.
 */
export function sweepStalled(ctx: JobContext, maxStalledCount: number, handlers: StallHandlers | ((id: string) => void)): Promise<void> {
  const running = sweeping.get(ctx);
  if (running) return running;
  const h: StallHandlers = typeof handlers === 'function' ? { onStalled: handlers } : handlers;
  const p = sweep(ctx, maxStalledCount, h).finally(() => sweeping.delete(ctx));
  sweeping.set(ctx, p);
  return p;
}

async function sweep(ctx: JobContext, maxStalledCount: number, h: StallHandlers): Promise<void> {
  for (let i = 0; i < MAX_STALL_BATCHES; i++) {
    const r = await scripts.recover(ctx, { maxStalledCount, batch: STALL_BATCH });
    for (const id of r.requeued) h.onStalled(id);
    const jobs = r.failed.map((id, k) => Job.fromFields(ctx, id, r.hashes[k] ?? []));
    // A failed flow child whose parent is in another queue: the parent learns it before the
    // 'failed' events, as a fail's parent update is part of the failure in BullMQ (a listener
    // reading the parent's state sees it moved).
    if (jobs.some((j) => mayWriteOutbox(j.parentKey))) await drainOutbox(ctx.client, ctx.keys);
    // Newest claim first: the order BullMQ fails such jobs in (it requeues them at the front of
    // wait and fails each when it is claimed again).
    for (let k = jobs.length - 1; k >= 0; k--) {
      const job = jobs[k]!;
      h.onStalled(job.id);
      h.onFailed?.(job, new UnrecoverableError(job.failedReason ?? STALLED_REASON));
    }
    if (r.requeued.length + r.failed.length < STALL_BATCH) break;
  }
  await drainOutbox(ctx.client, ctx.keys);
  await repairSchedulers(ctx.client, ctx.keys);
}
