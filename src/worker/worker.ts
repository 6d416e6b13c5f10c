/**
 * Worker: claims jobs, runs the processor, settles them: at most one Redis call per job
 * (`complete` settles a batch and claims as many in the same script; worker-settle.ts), an idle
 * worker blocks on the wake list, leases are renewed in one call (worker-upkeep.ts).
 * The claim loop: worker-claims.ts; manual processing: worker-manual.ts; the Job's lock-holder
 * calls: src/job/job-moves.ts.
 */
import { randomUUID } from 'node:crypto';
import { type BackoffStrategy } from '../core/backoff.js';
import { checkEvictionPolicy, closeConnection, openConnection } from '../core/connection.js';
import {
  Code, EchoError, ErrorCodes, JobNotFoundError, errorFromCode, isRateLimitError, isStepError, UnrecoverableError,
} from '../core/errors.js';
import { Job, fieldRecord } from '../job/job.js';
import { queueKeys } from '../core/keys.js';
import { DEFAULT_MAX_PAYLOAD } from '../core/options.js';
import { scripts, settleHint, type ClaimedJob } from '../scripts/index.js';
import * as v from '../core/validate.js';
import { traceProcess, tracingAvailable } from '../ops/tracing.js';
import { advanceScheduler } from '../lifecycle/schedulers.js';
import { renewLeases, sweepStalled, type Running } from './worker-upkeep.js';
import type { SlotPool } from './slot-pool.js';
import { createSandboxProcessor, type SandboxProcessor } from '../sandbox/index.js';
import { rateLimitGroup, workerGroupDefaults } from '../pro/groups.js';
import { validConcurrency, workerSettings, type GetNextJobOptions, type WorkerOptions } from './worker-options.js';
import { WorkerBase } from './worker-base.js';
import { extendJobLocks, startedTooOften, type MoveContext, type WorkerHooks } from '../job/job-moves.js';
import { HeldJobs } from './worker-manual.js';
import { Settler, toError } from './worker-settle.js';
import { ClaimLoop } from './worker-claims.js';
import { nameProcessor, processorSeesSignal } from './processor-signal.js';
import { connectionError } from '../core/connection-wait.js';

export type { WorkerOptions } from './worker-options.js';

/**
 * The job's processor. signal: aborted on cancelJob, a lost lease or close(true). It is passed
 * to processors that can see it (processorSeesSignal: three parameters, rest parameters, or
 * `arguments`); one declared with one or two parameters, or none, gets undefined there
 * (docs/events.md).
 */
export type Processor<D = any, R = any, N extends string = string> = (
  job: Job<D, R, N>,
  token: string,
  signal: AbortSignal,
) => Promise<R> | R;

/** The third argument of a processor that does not declare it (see Processor). */
const UNSEEN_SIGNAL = undefined as unknown as AbortSignal;

/** @internal Filled by sharded-worker.ts (a static import would be a cycle): builds a sharded worker. */
export const shardedWorkerFactory: { create?: (name: string, processor: Processor | null | undefined, opts: WorkerOptions) => Worker } = {};

/** Largest limiter.max (stays far below RATE_BLOCK). */
const MAX_RATE = 1_000_000_000;

export class Worker<D = any, R = any, N extends string = string> extends WorkerBase<D, R, N> {
  // `!`: with `shards > 1` the constructor returns a ShardedWorker instead of assigning these.
  /** undefined: manual processing (getNextJob), nothing is claimed by the worker itself. */
  private readonly processor!: Processor<D, R, N> | undefined;
  /** The processor can see its signal (see Processor), BullMQ's field; without it cancelJob returns false. */
  private readonly processorAcceptsSignal!: boolean;
  private readonly ctx!: MoveContext;
  /** Jobs held for callers (manual processing, fetchNext replies); see worker-manual.ts. */
  private readonly manual!: HeldJobs;
  private readonly strategies!: Record<string, BackoffStrategy>;
  private readonly fallbackStrategy?: BackoffStrategy;
  private readonly maxEventValueBytes!: number;
  private readonly pool: SlotPool | undefined;
  private readonly running = new Map<string, Running>();
  /** close() waiting for the last running job to settle. */
  private idleWaiters: Array<() => void> = [];
  /** The settle path (worker-settle.ts): batched completes, fails. */
  private readonly settler!: Settler<R>;
  private runningLoop: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  /** close(true) was called: running jobs are left for stall recovery. */
  private forced = false;
  private paused = false;
  /** Paused by pause() without doNotWaitActive, its jobs done: isRunning() is false (BullMQ's). */
  private pausedIdle = false;
  private hadWork = false;
  private leaseTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  /** The claim loop and its applied-once handling (worker-claims.ts). */
  private readonly claims!: ClaimLoop;
  /** A processor file's children (src/sandbox), closed with the worker. */
  private readonly sandbox: SandboxProcessor | undefined;

  /**
   * processor: a function; the path or file: URL of a processor file, run sandboxed
   * (docs/sandboxed.md); or null / undefined for manual processing (getNextJob).
   */
  constructor(name: string, processor?: Processor<D, R, N> | string | URL | null, opts: WorkerOptions = {}) {
    super();
    v.queueName(name);
    if (processor !== null && processor !== undefined && typeof processor !== 'function' && typeof processor !== 'string' && !(processor instanceof URL)) {
      v.fail('processor', 'a function (job, token, signal) => result, a processor file path or file: URL, or null for manual processing', processor);
    }
    v.plainObject('opts', opts);
    if (typeof processor === 'function') nameProcessor(processor);
    if (opts.shards !== undefined && v.integerIn('shards', opts.shards, 1, 1024) > 1) {
      if (!shardedWorkerFactory.create) throw new Error('sharded workers need src/cluster/sharded-worker.ts loaded (import Worker from echomq)');
      return shardedWorkerFactory.create(name, processor as Processor, opts) as unknown as Worker<D, R, N>;
    }
    // A processor file runs in child processes or threads; each shard's worker has its own pool.
    if (typeof processor === 'string' || processor instanceof URL) {
      this.sandbox = createSandboxProcessor(processor, opts);
      processor = this.sandbox.processor as unknown as Processor<D, R, N>;
    }
    const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
    const settings = workerSettings(opts);
    this.identify({ name, keys: queueKeys(name, prefix), id: randomUUID(), opts: settings });
    this.processor = processor ?? undefined;
    this.processorAcceptsSignal = this.sandbox !== undefined || !processor || processorSeesSignal(processor);
    this.strategies = opts.backoffStrategies ?? {};
    this.fallbackStrategy = opts.settings?.backoffStrategy;
    let limiter: { max: number; duration: number } | undefined;
    if (opts.limiter !== undefined) {
      const l = v.plainObject('limiter', opts.limiter);
      limiter = { max: v.integerIn('limiter.max', l.max, 1, MAX_RATE), duration: v.integerIn('limiter.duration', l.duration, 1, 86_400_000) };
    }
    const groupDefaults = workerGroupDefaults(opts.group);
    this.maxEventValueBytes = opts.maxEventValueBytes === undefined ? 16384 : v.nonNegativeInt('maxEventValueBytes', opts.maxEventValueBytes);
    const maxPayloadBytes = opts.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD : v.positiveInt('maxPayloadBytes', opts.maxPayloadBytes);
    const keepLogs = opts.keepLogs === undefined ? 0 : v.nonNegativeInt('keepLogs', opts.keepLogs);
    this.identify({ conn: openConnection(opts.connection, { persistent: true }) });
    this.ctx = {
      client: this.conn.client,
      keys: this.keys,
      maxPayloadBytes,
      keepLogs,
      onProgress: (job, progress) => this.emit('progress', job, progress),
      worker: this.hooks(),
    };
    this.manual = new HeldJobs({
      ctx: this.ctx,
      leaseMs: () => this.opts.lockDuration,
      name: () => this.opts.name,
      closing: () => this.stopping,
      paused: () => this.paused,
      block: (ms) => this.block(ms, true),
      started: (job) => {
        this.startLeaseTimer();
        this.emit('active', job, 'waiting');
      },
    });
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const w = this;
    this.settler = new Settler<R>({
      ctx: this.ctx,
      keys: this.keys,
      get opts() { return w.opts; },
      maxEventValueBytes: this.maxEventValueBytes,
      runningCount: () => this.running.size,
      refill: (n) => this.refill(n),
      release: (run) => this.release(run),
      gaveUp: () => this.forced || this.connectionsClosed,
      abandon: (rid) => this.claims.abandon(rid),
      // A plain timer: waitLocal has one waiter, the claim loop's.
      retryPause: (ms) => new Promise((r) => setTimeout(r, ms)),
      startJobs: (jobs) => this.startJobs(jobs),
      poke: () => this.poke(),
      reportError: (err) => this.reportError(err),
      hookError: (err) => this.hookError(err),
      emit: (event, ...args) => this.emit(event, ...args),
    });
    this.conn.client.on('error', (err: Error) => this.reportError(connectionError(this.conn.client, err)));
    this.pool = opts.slotPool;
    this.claims = new ClaimLoop({
      ctx: this.ctx,
      get opts() { return w.opts; },
      pool: this.pool,
      owner: this,
      limiter,
      groupDefaults,
      stopping: () => this.stopping,
      paused: () => this.paused,
      pausedIdle: () => this.pausedIdle,
      free: () => this.free(),
      connected: () => this.connected(),
      waitLocal: () => this.waitLocal(),
      block: (ms) => this.block(ms),
      startJobs: (jobs) => this.startJobs(jobs),
      drained: () => {
        if (this.hadWork && this.running.size === 0) {
          this.hadWork = false;
          this.emit('drained');
        }
      },
      reportError: (err) => this.reportError(err),
    });
    this.pool?.join(this, { load: () => this.running.size + this.claims.reserved, poke: () => this.poke() });
    void this.waitUntilReady().then(
      () => setTimeout(() => this.emit('ready'), 0),
      (err: unknown) => {
        if (!this.stopping) this.reportError(err);
      },
    );
    if (this.processor && this.opts.autorun) void this.run().catch((err) => this.reportError(err));
  }

  /** What the Jobs this worker hands out use for their lock-holder calls (src/job/job-moves.ts). */
  private hooks(): WorkerHooks {
    // Read at call time: concurrency and the manual side change after construction.
    // eslint-disable-next-line @typescript-eslint/no-this-alias
    const w = this;
    return {
      get leaseMs() { return w.opts.lockDuration; },
      get maxEventValueBytes() { return w.maxEventValueBytes; },
      get metrics() { return w.opts.metrics; },
      get keepCompleted() { return w.opts.keepCompleted; },
      get keepFailed() { return w.opts.keepFailed; },
      get strategies() { return w.strategies; },
      get fallbackStrategy() { return w.fallbackStrategy; },
      get maxStartedAttempts() { return w.opts.maxStartedAttempts; },
      get name() { return w.opts.name; },
      released: (id) => {
        // The processor moved its own job (a step job): its lease is no longer this worker's.
        const run = this.running.get(id);
        if (run) run.lost = true;
        this.manual.release(id);
      },
      adopt: (cj) => this.manual.adopt(cj),
    };
  }

  /** @internal The context of the Jobs this worker hands out (Job.fromJSON). */
  get jobContext(): MoveContext {
    return this.ctx;
  }

  /**
   * Starts processing; resolves when the worker is closed. Rejects with BullMQ's texts for a
   * worker without a processor (manual processing) and for one already running.
   */
  run(): Promise<void> {
    if (!this.processor) return Promise.reject(new EchoError(ErrorCodes.NO_PROCESSOR, 'No process function is defined.'));
    if (this.runningLoop) return Promise.reject(new EchoError(ErrorCodes.RUNNING, 'Worker is already running.'));
    if (this.stopping) return Promise.resolve();
    void checkEvictionPolicy(this.conn.client);
    this.startLeaseTimer();
    if (!this.opts.skipStalledCheck) void this.startStalledCheckTimer();
    this.runningLoop = this.claims.run();
    return this.runningLoop;
  }

  private startLeaseTimer(): void {
    if (this.leaseTimer || this.opts.skipLockRenewal || this.stopping) return;
    this.leaseTimer = setInterval(() => void this.renewLeases(), this.opts.lockRenewTime);
    this.leaseTimer.unref();
  }

  /**
   * Starts the periodic stall sweep (every stalledInterval; one now). run() starts it unless
   * skipStalledCheck; a manual-processing worker calls it itself, as in BullMQ.
   */
  async startStalledCheckTimer(): Promise<void> {
    if (this.opts.skipStalledCheck || this.stallTimer || this.stopping) return;
    this.stallTimer = setInterval(() => void this.sweepStalled(), this.opts.stalledInterval);
    this.stallTimer.unref();
    await this.sweepStalled();
  }

  /** Whether the worker is claiming jobs itself: run() was called and it is neither paused nor closing (BullMQ's). */
  isRunning(): boolean {
    return this.runningLoop !== undefined && !this.stopping && !this.pausedIdle;
  }

  isPaused(): boolean {
    return this.paused;
  }

  /** Jobs processed at once. Setting it takes effect at once, up (claims more now) and down (no new job starts until fewer run). */
  get concurrency(): number {
    return this.opts.concurrency;
  }

  set concurrency(n: number) {
    this.opts.concurrency = validConcurrency(n);
    this.settler.setConcurrency(n);
    this.poke();
  }

  /**
   * Stops claiming new jobs; resolves (and emits 'paused') once the running jobs have finished,
   * or at once with doNotWaitActive.
   */
  async pause(doNotWaitActive?: boolean): Promise<void> {
    if (this.paused) return;
    this.paused = true;
    if (!doNotWaitActive) {
      if (this.running.size > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      // As BullMQ's, whose loop ends once its jobs are done: not running until resume().
      // With doNotWaitActive its loop goes on, and so does isRunning().
      if (this.paused) {
        this.pausedIdle = true;
        this.poke(); // the loop, waiting while paused, sees pausedIdle and ends
      }
    }
    this.emit('paused');
  }

  /** Claims again after pause(); emits 'resumed'. */
  async resume(): Promise<void> {
    if (!this.paused) return;
    this.paused = false;
    this.pausedIdle = false;
    if (this.claims.ended && !this.stopping) {
      this.claims.ended = false;
      this.runningLoop = this.claims.run();
    }
    this.poke();
    this.emit('resumed');
  }

  /**
   * Manual processing: claims the next job for `token` (the lock owner; one token may serve
   * many jobs) through the same lane-aware claim as the worker's own; with block (default),
   * waits up to drainDelay for one. Emits 'active'. The job's lease is renewed by this worker
   * until a lock-holder call (job.moveToCompleted, …) moves it.
   */
  getNextJob(token: string, opts?: GetNextJobOptions): Promise<Job<D, R, N> | undefined> {
    return this.manual.getNextJob(token, opts) as Promise<Job<D, R, N> | undefined>;
  }

  /** Renews the leases of jobs held under the given tokens for `duration` ms; returns the ids not renewed. */
  extendJobLocks(jobIds: string[], tokens: string[], duration: number): Promise<string[]> {
    return extendJobLocks(this.ctx, jobIds, tokens, duration);
  }

  /** BullMQ Pro: the job's group leaves the ring for ms; throw Worker.RateLimitError() after it. */
  rateLimitGroup(job: Job, ms: number): Promise<void> { return rateLimitGroup(this.ctx, job, ms); }

  /** Jobs this worker handed back through releaseClaim (claimed for it, never started). */
  get releasedClaims(): number { return this.claims.released; }
  set releasedClaims(n: number) { this.claims.released = n; }

  get activeCount(): number {
    return this.running.size;
  }

  private free(): number {
    const own = this.opts.concurrency - this.running.size - this.claims.reserved;
    return this.pool ? this.pool.free(this, own) : own;
  }

  private startJobs(jobs: readonly ClaimedJob[]): void {
    for (const cj of jobs) this.startJob(cj);
  }

  private startJob(cj: ClaimedJob): void {
    const h = fieldRecord(cj.fields);
    const job = Job.fromHash(this.ctx, cj.id, h) as Job<D, R, N>;
    const token = Job.tokenOf(job);
    job.token = token;
    if (this.opts.name !== undefined) job.processedBy = this.opts.name;
    const run: Running = { job, token, ac: new AbortController(), lost: false, claimed: settleHint(h) };
    this.running.set(job.id, run);
    this.hadWork = true;
    this.emit('active', job, 'waiting');
    // Job schedulers: the claimed job's start makes the job of the scheduler's next slot.
    if (job.repeatJobKey !== undefined) void advanceScheduler(this.ctx.client, this.keys, job.repeatJobKey).catch((e) => this.hookError(e));
    const max = this.opts.maxStartedAttempts;
    if (max && job.attemptsStarted > max) void this.settler.failed(run, startedTooOften());
    // Flows: a child with failParentOnFailure failed; the parent fails without running (BullMQ).
    else if (job.deferredFailure !== undefined) void this.settler.failed(run, new UnrecoverableError(job.deferredFailure));
    else void this.execute(run);
  }

  private async execute(run: Running): Promise<void> {
    const job = run.job as Job<D, R, N>;
    let result: R | undefined;
    let error: unknown;
    let ok = false;
    try {
      const signal = this.processorAcceptsSignal ? run.ac.signal : UNSEEN_SIGNAL;
      // The span wrapper is skipped entirely when @opentelemetry/api is not installed.
      result = await (tracingAvailable
        ? traceProcess(job, () => this.processor!(job, run.token, signal))
        : this.processor!(job, run.token, signal));
      ok = true;
    } catch (err) {
      error = err;
    }
    if (this.forced) return this.release(run); // close(true): left for stall recovery
    if (ok) this.settler.completed(run, result);
    else if (isRateLimitError(error)) await this.handBack(run);
    else if (isStepError(error)) this.stepped(run);
    else await this.settler.failed(run, toError(error));
  }

  /**
   * A step job: the processor moved its job itself (job.moveToDelayed / moveToWaitingChildren /
   * moveToWait) and threw the matching error. Neither completed nor failed; nothing to settle.
   */
  private stepped(run: Running): void {
    this.release(run);
    this.poke();
  }

  /** The processor threw RateLimitError: the job goes back to ready without using an attempt. */
  private async handBack(run: Running): Promise<void> {
    try {
      const r = await scripts.moveToWait(this.ctx, { id: run.job.id, token: run.token });
      this.release(run);
      // BullMQ's exact text for a job that vanished meanwhile (its tests compare it whole).
      if (r === Code.NOT_FOUND) this.reportError(new JobNotFoundError(run.job.id, 'moveToWait', `Missing key for job ${run.job.id}. moveJobFromActiveToWait`));
      else if (r < 0) this.reportError(errorFromCode(r, 'moveToWait', run.job.id));
    } catch (err) {
      this.release(run);
      this.reportError(err);
    }
    this.poke();
  }

  /**
   * Cancels a job this worker is running: aborts the signal passed to the processor with
   * `reason` (default 'job cancelled'). Cancellation is cooperative, as BullMQ's: what the
   * processor then does settles the attempt (an error it throws fails it, retried if attempts
   * remain, unless it is an UnrecoverableError; a normal return completes the job). Returns
   * whether the job was running here with a signal to abort (false for a processor that does
   * not take the signal, as BullMQ).
   */
  cancelJob(jobId: string, reason?: string): boolean {
    v.existingJobId(jobId);
    if (reason !== undefined) v.string('reason', reason, 10_000);
    const run = this.running.get(jobId);
    if (!run || !this.processorAcceptsSignal) return false;
    cancelRun(run, reason ?? 'job cancelled');
    return true;
  }

  /** Cancels every job this worker is running (see cancelJob). Returns how many (0 for a processor that does not take the signal). */
  cancelAllJobs(reason?: string): number {
    if (reason !== undefined) v.string('reason', reason, 10_000);
    if (!this.processorAcceptsSignal) return 0;
    for (const run of this.running.values()) cancelRun(run, reason ?? 'job cancelled');
    return this.running.size;
  }

  /** How many jobs a settle call should claim for this worker: the slot it frees, if running. */
  private fetchCount(): number {
    return this.stopping || this.paused || (this.pool && !this.pool.mayRefetch(this)) ? 0 : 1;
  }

  /**
   * Jobs a settle call of `n` running jobs may claim: the slots they free, less any excess over
   * the current concurrency (lowered while jobs run), so no job starts while as many run.
   */
  private refill(n: number): number {
    if (this.fetchCount() === 0) return 0;
    if (this.pool) return 1;
    const room = this.opts.concurrency - (this.running.size - n) - this.claims.reserved;
    return room >= n ? n : room > 0 ? room : 0;
  }

  private release(run: Running): void {
    this.running.delete(run.job.id);
    if (this.running.size === 0 && this.idleWaiters.length > 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of waiters) w();
    }
    this.pool?.released(this);
  }

  /**
   * Renews the leases of every job this worker runs or holds for callers, in one call per set
   * (worker-upkeep.ts); emits locksRenewed and, for leases that were lost, lockRenewalFailed.
   */
  private async renewLeases(): Promise<void> {
    for (const set of [this.running, this.manual.held]) {
      if (set.size === 0) continue;
      const ids: string[] = [];
      for (const r of set.values()) if (!r.lost) ids.push(r.job.id);
      const lost: string[] = [];
      try {
        await renewLeases(this.ctx, set, this.opts.lockDuration, (err) => {
          lost.push(err.jobId);
          this.reportError(err);
        });
      } catch (err) {
        this.reportError(err);
        continue;
      }
      if (set === this.manual.held) for (const id of lost) this.manual.release(id);
      if (lost.length > 0) this.emit('lockRenewalFailed', lost);
      const renewed = lost.length === 0 ? ids : ids.filter((id) => !lost.includes(id));
      if (renewed.length > 0) this.emit('locksRenewed', { count: renewed.length, jobIds: renewed });
    }
  }

  /** Errors of the flow/scheduler follow-up calls: the sweep retries them, so closing hides them. */
  private hookError(err: unknown): void {
    if (!this.stopping) this.reportError(err);
  }

  /** The bounded stall sweep (worker-upkeep.ts). */
  private async sweepStalled(): Promise<void> {
    if (this.stopping) return;
    try {
      await sweepStalled(this.ctx, this.opts.maxStalledCount, {
        onStalled: (id) => this.emit('stalled', id, 'active'),
        // A job that stalled too often fails here, on the worker whose sweep failed it.
        onFailed: (job, err) => this.emit('failed', job, err, 'active'),
      });
    } catch (err) {
      if (!this.stopping) this.reportError(err);
    }
  }

  /**
   * Stops the worker. Graceful (default): no new claims, running jobs finish and are settled,
   * then connections close. force: running jobs' signals are aborted and the worker does not
   * wait for them; their leases expire and another worker recovers them. Idempotent.
   */
  close(force = false): Promise<void> {
    if (this.closing) return this.closing;
    this.stopping = true;
    this.emit('closing', 'closing queue');
    this.closing = (async () => {
      clearInterval(this.stallTimer);
      this.poke();
      if (this.blockConn) closeConnection(this.blockConn, true);
      if (force) {
        // As BullMQ: nothing of a running job is settled after close(true); its lease expires
        // and a stall sweep recovers it (execute checks forced).
        this.forced = true;
        for (const r of this.running.values()) r.ac.abort(new Error('worker closed (force)'));
      } else {
        if (this.running.size > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      }
      clearInterval(this.leaseTimer);
      await this.sandbox?.close(force);
      // Redis unreachable: the loop's claim waits in the client's offline queue, where commands
      // are retried forever, and ioredis' disconnect() while reconnecting does not reject them.
      // So the connection is dropped and the loop not awaited: it ends if that claim ever
      // settles (stopping is set), and nothing of it reaches Redis any more.
      if (this.conn.client.status !== 'ready') {
        await closeConnection(this.conn, true);
      } else {
        await this.runningLoop?.catch(() => {});
        await this.claims.releaseAll();
        await closeConnection(this.conn, force);
      }
      this.connectionsClosed = true;
      this.emit('closed');
    })();
    return this.closing;
  }

}

function cancelRun(run: Running, reason: string): void {
  if (run.cancelled !== undefined) return;
  run.cancelled = reason;
  run.ac.abort(reason);
}

