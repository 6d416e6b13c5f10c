/**
 * The Worker's settle path: completed jobs that finish together are settled in one `complete`
 * call that also claims as many next jobs as they free slots; a failed attempt goes out alone
 * through `fail` (retry, backoff or final), also claiming the next job. The Worker owns the
 * running set and the claim loop; this holds only what batching needs.
 */
import { Code, RedisUnreachableError, RequestOutcomeUnknownError, StaleJobError, errorFromCode, pendingDependenciesError } from '../core/errors.js';
import { newRequestId } from '../scripts/request-id.js';
import type { QueueKeys } from '../core/keys.js';
import * as v from '../core/validate.js';
import { drainOutbox, mayWriteOutbox } from '../job/flows.js';
import { scripts, type ClaimReply, type ClaimedJob } from '../scripts/index.js';
import type { Running } from './worker-upkeep.js';
import type { WorkerSettings } from './worker-options.js';
import { failedStack, failurePlan, type MoveContext } from '../job/job-moves.js';

/** What the settle path uses of its Worker. */
export interface SettleHost {
  readonly ctx: MoveContext;
  readonly keys: QueueKeys;
  readonly opts: WorkerSettings;
  readonly maxEventValueBytes: number;
  /** Jobs running now. */
  runningCount(): number;
  /** Jobs a settle call of n running jobs may claim (0 while closing, paused or over concurrency). */
  refill(n: number): number;
  /** The job left the running set (its slot is free). */
  release(run: Running): void;
  /** The worker will send nothing more (closed, or close(true)): a lost settle is not retried. */
  gaveUp(): boolean;
  /** A settle given up with its outcome unknown: the jobs it may have claimed are handed back later. */
  abandon(requestId: string): void;
  /** Waits before a retry. */
  retryPause(ms: number): Promise<void>;
  startJobs(jobs: ClaimedJob[]): void;
  /** Wakes the claim loop. */
  poke(): void;
  reportError(err: unknown): void;
  /** Errors of follow-up calls the sweep retries (hidden while closing). */
  hookError(err: unknown): void;
  emit(event: string, ...args: unknown[]): boolean;
}

interface Settle<R> {
  run: Running;
  json: string;
  result: R | undefined;
}

/** Most completed jobs settled by one call (complete.lua takes up to 1000). */
const MAX_SETTLE_BATCH = 200;

export class Settler<R> {
  /**
   * Runs a settle call (applied once, docs/protocol.md "Applied once"): one request id for the logical
   * call; a lost reply (outcome unknown) is retried with the same id, which replies the first
   * run's outcome if it ran. Given up only when the worker sends nothing more.
   */
  private async once<T>(call: (requestId: string) => Promise<T>): Promise<T> {
    const requestId = newRequestId(this.host.ctx.client);
    for (let failures = 1; ; failures++) {
      try {
        return await call(requestId);
      } catch (err) {
        const lost = err instanceof RequestOutcomeUnknownError && !err.expired;
        // Never sent (Redis unreachable past connectWaitMs): sent again once it answers.
        if (!(lost || err instanceof RedisUnreachableError) || this.host.gaveUp()) {
          if (lost) this.host.abandon(requestId);
          throw err;
        }
        this.host.reportError(err);
        await this.host.retryPause(Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
      }
    }
  }

  /** Completed jobs waiting for the next settle call. */
  private queued: Array<Settle<R>> = [];
  private scheduled = false;
  /** Jobs in settle calls under way (they still count as running until the call returns). */
  private settling = 0;
  /** Jobs per settle call: half the concurrency (see completed). */
  private target: number;

  constructor(private readonly host: SettleHost) {
    this.target = 1;
    this.setConcurrency(host.opts.concurrency);
  }

  /** Follows a concurrency change: half of it per call, at most MAX_SETTLE_BATCH. */
  setConcurrency(n: number): void {
    this.target = Math.min(MAX_SETTLE_BATCH, Math.ceil(n / 2));
  }

  /**
   * Queues a completed job for the next settle call. Jobs that finish in the same tick are
   * settled together, in one call that also claims as many next jobs as they free slots; the
   * call goes out as soon as no other running job could still join it, else on the next turn
   * of the event loop.
   */
  completed(run: Running, result: R | undefined): void {
    let json: string;
    try {
      json = v.encodeJson('returnvalue', result === undefined ? null : result, this.host.ctx.maxPayloadBytes);
    } catch (err) {
      void this.failed(run, toError(err));
      return;
    }
    this.queued.push({ run, json, result });
    // Half the concurrency per call keeps two calls in flight, so Redis runs one while this
    // process runs the jobs the other returned: both cores stay busy.
    const n = this.queued.length;
    if (n >= this.host.runningCount() - this.settling || n >= this.target) {
      this.flush();
    } else if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.flushBound);
    }
  }

  private readonly flushBound = (): void => {
    this.scheduled = false;
    this.flush();
  };

  private flush(): void {
    if (this.queued.length === 0) return;
    const batch = this.queued;
    this.queued = [];
    this.settling += batch.length;
    for (const b of batch) b.run.settling = true;
    void this.completeBatch(batch);
  }

  private async completeBatch(batch: Array<Settle<R>>): Promise<void> {
    const fetch = this.host.refill(batch.length);
    let reply;
    try {
      const jobs = batch.map((b) => ({ id: b.run.job.id, token: b.run.token, returnValue: b.json, claimed: b.run.claimed }));
      reply = await this.once((requestId) => scripts.completeMany(this.host.ctx, {
        jobs, fetch, leaseMs: this.host.opts.lockDuration, maxEventValueBytes: this.host.maxEventValueBytes,
        metrics: this.host.opts.metrics, keep: this.host.opts.keepCompleted, name: this.host.opts.name, requestId,
      }));
    } catch (err) {
      this.settling -= batch.length;
      for (const b of batch) this.host.release(b.run);
      this.host.reportError(err);
      this.host.poke();
      return;
    }
    // Before the next jobs start: their settles compare against it (settleCompleted).
    this.settling -= batch.length;
    // Flows: a parent in another queue learns the outcome through this queue's outbox, delivered
    // before the completed events (as for failures, settleFailed). Only batches with such a job.
    let outbox = false;
    for (let i = 0; i < batch.length; i++) {
      if (reply.codes[i] === 1 && mayWriteOutbox(batch[i]!.run.job.parentKey)) outbox = true;
    }
    if (outbox) await drainOutbox(this.host.ctx.client, this.host.keys).catch((e) => this.host.hookError(e));
    const finishedOn = Date.now(); // one clock read per batch, as the settle call ran once
    for (let i = 0; i < batch.length; i++) {
      const { run, result } = batch[i]!;
      const code = reply.codes[i]!;
      // Flows: a parent with pending children fails instead (BullMQ's pending-dependencies error).
      if (code === Code.PENDING_DEPENDENCIES) {
        void this.failed(run, pendingDependenciesError(run.job.id));
        continue;
      }
      this.host.release(run);
      if (code !== 1) {
        this.host.reportError(errorFromCode(code, 'complete', run.job.id));
        continue;
      }
      run.job.returnvalue = result;
      run.job.attemptsMade++;
      run.job.finishedOn = finishedOn;
      this.host.emit('completed', run.job, result, 'active');
    }
    if (reply.jobs.length > 0) this.host.startJobs(reply.jobs);
    if (reply.jobs.length < fetch || fetch === 0) this.host.poke();
  }

  async failed(run: Running, err: Error): Promise<void> {
    const job = run.job;
    let plan = failurePlan(job, err, this.host.ctx.worker);
    if (plan instanceof Promise) {
      try {
        plan = await plan;
      } catch (e) {
        // The async strategy threw: the attempt fails for good, with why (not left active).
        plan = { retryDelay: -1, reason: `${err.message} (backoff strategy failed: ${toError(e).message}; not retried)`, made: job.attemptsMade + 1, exhausted: false };
      }
    }
    const { retryDelay, reason, made, exhausted } = plan;
    const stack = failedStack(job, err);
    const fetch = this.host.refill(1);
    run.settling = true;
    try {
      const reply = await this.once((requestId) => scripts.fail(this.host.ctx, {
        id: job.id, token: run.token, reason, stack, retryDelayMs: retryDelay, exhausted,
        fetch, leaseMs: this.host.opts.lockDuration,
        metrics: this.host.opts.metrics || undefined, keep: this.host.opts.keepFailed, name: this.host.opts.name, requestId,
      }));
      // Flows: a parent in another queue learns the outcome through this queue's outbox; it is
      // delivered before the failed event, so a listener sees the parent already moved (as
      // BullMQ's single-call fail shows it). Only jobs with a parent pay for it.
      if (typeof reply !== 'number' && mayWriteOutbox(job.parentKey)) {
        await drainOutbox(this.host.ctx.client, this.host.keys).catch((e) => this.host.hookError(e));
      }
      this.afterSettle(run, reply, 'fail', () => {
        job.failedReason = reason;
        job.attemptsMade = made;
        // As BullMQ's Job after moveToFailed: finishedOn when it failed for good, delay when a
        // backoff retries it later.
        if (retryDelay < 0) job.finishedOn = Date.now();
        else if (retryDelay > 0) job.delay = retryDelay;
        this.host.emit('failed', job, err, 'active');
      });
    } catch (e) {
      this.host.release(run);
      this.host.reportError(e);
    }
  }

  private afterSettle(run: Running, reply: ClaimReply | number, op: string, onOk: () => void): void {
    this.host.release(run);
    if (typeof reply === 'number') {
      this.host.reportError(errorFromCode(reply, op, run.job.id));
      this.host.poke();
      return;
    }
    onOk();
    if (reply.jobs.length > 0) this.host.startJobs(reply.jobs);
    else this.host.poke();
  }
}

/** A thrown value as an Error (processors may throw anything). */
export function toError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new Error(typeof e === 'string' ? e : `non-error thrown: ${v.describe(e)}`);
}
