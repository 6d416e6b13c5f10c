/**
 * Worker: claims jobs, runs the processor, settles them. The hot path is at most one Redis call
 * per job: `complete` settles the jobs that finished together (up to half the concurrency per
 * call) and claims as many next jobs in the same script, `fail` does the same for one job; an
 * idle worker blocks on the queue's wake list instead of polling; leases are renewed in one call
 * (worker-upkeep.ts).
 */
import { applyGroupDefaults, workerGroupDefaults, type GroupDefaults, type WorkerGroupOptions } from './pro/groups.js';
import { EventEmitter } from 'node:events';
import { retryPlan, type BackoffStrategy } from './backoff.js';
import { checkEvictionPolicy, closeConnection, openConnection, type Connection, type ConnectionInput } from './connection.js';
import { RateLimitError, StaleJobError, cancelError, errorFromCode, isRateLimitError } from './errors.js';
import { Job, type JobContext } from './job.js';
import { queueKeys, type QueueKeys } from './keys.js';
import { DEFAULT_MAX_PAYLOAD } from './options.js';
import { scripts, type ClaimReply, type ClaimedJob } from './scripts/index.js';
import * as v from './validate.js';
import { traceProcess, tracingAvailable } from './tracing.js';
import { advanceScheduler } from './schedulers.js';
import { drainOutbox, mayWriteOutbox } from './flows.js';
import { renewLeases, sweepStalled, type Running } from './worker-upkeep.js';
import type { SlotPool } from './sharded-worker.js';
import { createSandboxProcessor, type SandboxedOptions, type SandboxProcessor } from './sandbox/index.js';

/**
 * The job's processor. signal: aborted on cancelJob, a lost lease or close(true). It is passed
 * to processors that declare three parameters, or none (rest parameters): reading an
 * AbortController's signal builds an AbortSignal, about 1.8 µs per job, so a processor declared
 * with one or two parameters, which cannot see it, gets undefined there (docs/events.md).
 */
export type Processor<D = any, R = any, N extends string = string> = (
  job: Job<D, R, N>,
  token: string,
  signal: AbortSignal,
) => Promise<R> | R;

/** The third argument of a processor that does not declare it (see Processor). */
const UNSEEN_SIGNAL = undefined as unknown as AbortSignal;

export interface WorkerOptions extends SandboxedOptions {
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** Jobs processed at once by this worker. Default 1. */
  concurrency?: number;
  /** Lease length in ms; renewed every lockDuration / 2 while the job runs. Default 30000. */
  lockDuration?: number;
  /** How often (ms) this worker sweeps for expired leases. Default 30000. */
  stalledInterval?: number;
  /** Times a job may stall (lease expired) and be recovered before it fails. Default 1. */
  maxStalledCount?: number;
  /** Start processing at construction. Default true; otherwise call run(). */
  autorun?: boolean;
  /** Longest idle block on the wake list, in seconds. Default 5. */
  drainDelay?: number;
  /** Custom backoff strategies by name, used by `backoff: { type: name }`. */
  backoffStrategies?: Record<string, BackoffStrategy>;
  /** BullMQ-compatible single custom strategy, used for any unknown backoff type. */
  settings?: { backoffStrategy?: BackoffStrategy };
  /** Largest JSON return value / progress accepted, bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Most log lines kept per job (0 = all). Default 0. */
  keepLogs?: number;
  /** Return values up to this many bytes are copied into the `completed` event. Default 16384. */
  maxEventValueBytes?: number;
  /**
   * Queue-wide rate limit: at most `max` jobs start per `duration` ms across all workers of the
   * queue. Written to the queue's meta (rlmax, rldur) when the worker starts; the last worker
   * started wins. Default none. See docs/events.md#rate-limits.
   */
  limiter?: { max: number; duration: number };
  /**
   * BullMQ Pro's group defaults: `concurrency` (most jobs of one group active at once, across
   * all workers) and `limit` ({ max, duration } per group) for every group without its own
   * setting (queue.setGroupConcurrency / setGroupRateLimit win); jobs without a group are not
   * limited by them. Stored in the queue's meta when the worker starts; the last worker started
   * with this option wins. Default none. See docs/compat-notes/pro.md.
   */
  group?: WorkerGroupOptions;
  /**
   * Serve a sharded queue (`new Queue(name, { shards })`): the same count as the queue's.
   * `concurrency` is then shared by all shards. See docs/scaling.md. Default: a plain queue.
   */
  shards?: number;
  /** @internal Set by sharded-worker.ts on the worker of one shard: concurrency shared with the other shards. */
  slotPool?: SlotPool;
}

/** @internal Filled by sharded-worker.ts (a static import would be a cycle): builds a sharded worker. */
export const shardedWorkerFactory: { create?: (name: string, processor: Processor, opts: WorkerOptions) => Worker } = {};

/** Value of the global rate counter while rateLimit(ms) blocks the queue (2^50; lib/claim.lua). */
const RATE_BLOCK = 2 ** 50;
/** Largest limiter.max (stays far below RATE_BLOCK). */
const MAX_RATE = 1_000_000_000;

/** Most completed jobs settled by one call (complete.lua takes up to 1000). */
const MAX_SETTLE_BATCH = 200;

export class Worker<D = any, R = any, N extends string = string> extends EventEmitter {
  // `!`: with `shards > 1` the constructor returns a ShardedWorker instead of assigning these.
  readonly name!: string;
  readonly keys!: QueueKeys;
  readonly opts!: Required<Pick<WorkerOptions, 'concurrency' | 'lockDuration' | 'stalledInterval' | 'maxStalledCount' | 'drainDelay'>>;
  private readonly processor!: Processor<D, R, N>;
  /** The processor declares its signal parameter, or takes rest parameters (see Processor). */
  private readonly passSignal!: boolean;
  private readonly conn!: Connection;
  private blockConn: Connection | undefined;
  private readonly ctx!: JobContext;
  private readonly strategies!: Record<string, BackoffStrategy>;
  private readonly fallbackStrategy?: BackoffStrategy;
  private readonly maxEventValueBytes!: number;
  private readonly pool: SlotPool | undefined;
  private readonly limiter: { max: number; duration: number } | undefined;
  private readonly groupDefaults: GroupDefaults | undefined;
  private readonly running = new Map<string, Running>();
  private reserved = 0;
  /** Completed jobs waiting for the next settle call (see settleCompleted). */
  private toSettle: Array<{ run: Running; json: string; result: R | undefined }> = [];
  private settleScheduled = false;
  /** close() waiting for the last running job to settle. */
  private idleWaiters: Array<() => void> = [];
  /** Jobs in settle calls still awaiting their reply (they stay in `running` until then). */
  private settling = 0;
  /** Jobs per settle call before it goes out without waiting for the rest of the tick: half the concurrency. */
  private readonly settleTarget!: number;
  private runningLoop: Promise<void> | undefined;
  private closing: Promise<void> | undefined;
  private stopping = false;
  private paused = false;
  private hadWork = false;
  private wakeLocal: (() => void) | undefined;
  /** The BLPOP in flight on the blocking connection (see block()); resolves to an error or undefined. */
  private blpop: Promise<unknown> | undefined;
  private leaseTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;
  /** A processor file's children (src/sandbox), closed with the worker. */
  private readonly sandbox: SandboxProcessor | undefined;

  /** processor: a function, or the path or file: URL of a processor file run sandboxed (docs/sandboxed.md). */
  constructor(name: string, processor: Processor<D, R, N> | string | URL, opts: WorkerOptions = {}) {
    super();
    v.queueName(name);
    if (typeof processor !== 'function' && typeof processor !== 'string' && !(processor instanceof URL)) v.fail('processor', 'a function (job, token, signal) => result, or a processor file path or file: URL', processor);
    v.plainObject('opts', opts);
    if (opts.shards !== undefined && v.integerIn('shards', opts.shards, 1, 1024) > 1) {
      if (!shardedWorkerFactory.create) throw new Error('sharded workers need src/sharded-worker.js loaded (import from the package index)');
      return shardedWorkerFactory.create(name, processor as Processor, opts) as Worker<D, R, N>;
    }
    // A processor file runs in child processes or threads; each shard's worker has its own pool.
    if (typeof processor === 'string' || processor instanceof URL) {
      this.sandbox = createSandboxProcessor(processor, opts);
      processor = this.sandbox.processor as unknown as Processor<D, R, N>;
    }
    const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
    this.opts = {
      concurrency: opts.concurrency === undefined ? 1 : v.integerIn('concurrency', opts.concurrency, 1, 100_000),
      lockDuration: opts.lockDuration === undefined ? 30_000 : v.integerIn('lockDuration', opts.lockDuration, 10, 86_400_000),
      stalledInterval: opts.stalledInterval === undefined ? 30_000 : v.integerIn('stalledInterval', opts.stalledInterval, 10, 86_400_000),
      maxStalledCount: opts.maxStalledCount === undefined ? 1 : v.nonNegativeInt('maxStalledCount', opts.maxStalledCount),
      drainDelay: opts.drainDelay === undefined ? 5 : v.integerIn('drainDelay', opts.drainDelay, 1, 3600),
    };
    this.name = name;
    this.settleTarget = Math.min(MAX_SETTLE_BATCH, Math.ceil(this.opts.concurrency / 2));
    this.processor = processor;
    this.passSignal = processor.length === 0 || processor.length >= 3;
    this.keys = queueKeys(name, prefix);
    this.strategies = opts.backoffStrategies ?? {};
    this.fallbackStrategy = opts.settings?.backoffStrategy;
    if (opts.limiter !== undefined) {
      const l = v.plainObject('limiter', opts.limiter);
      this.limiter = {
        max: v.integerIn('limiter.max', l.max, 1, MAX_RATE),
        duration: v.integerIn('limiter.duration', l.duration, 1, 86_400_000),
      };
    }
    this.groupDefaults = workerGroupDefaults(opts.group);
    this.maxEventValueBytes = opts.maxEventValueBytes === undefined ? 16384 : v.nonNegativeInt('maxEventValueBytes', opts.maxEventValueBytes);
    this.conn = openConnection(opts.connection, { persistent: true });
    this.ctx = {
      client: this.conn.client,
      keys: this.keys,
      maxPayloadBytes: opts.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD : v.positiveInt('maxPayloadBytes', opts.maxPayloadBytes),
      keepLogs: opts.keepLogs === undefined ? 0 : v.nonNegativeInt('keepLogs', opts.keepLogs),
      onProgress: (job, progress) => this.emit('progress', job, progress),
    };
    this.conn.client.on('error', (err: Error) => this.reportError(err));
    this.pool = opts.slotPool;
    this.pool?.join(this, { load: () => this.running.size + this.reserved, poke: () => this.poke() });
    if (opts.autorun !== false) void this.run().catch((err) => this.reportError(err));
  }

  /** Emits 'error' when someone listens, so an unhandled 'error' event never crashes the process. */
  private reportError(err: unknown): void {
    const e = err instanceof Error ? err : new Error(String(err));
    if (this.listenerCount('error') > 0) this.emit('error', e);
    else console.error(`[echomq] worker ${this.name}: ${e.message}`);
  }

  /** Starts processing; resolves when the worker is closed. */
  run(): Promise<void> {
    if (this.runningLoop) return this.runningLoop;
    if (this.stopping) return Promise.resolve();
    this.blockConn = openConnection(this.conn.client, { blocking: true });
    this.blockConn.client.on('error', () => {}); // reconnects are reported through the main client
    void checkEvictionPolicy(this.conn.client);
    this.leaseTimer = setInterval(() => void this.renewLeases(), Math.max(5, this.opts.lockDuration / 2));
    this.stallTimer = setInterval(() => void this.sweepStalled(), this.opts.stalledInterval);
    this.leaseTimer.unref();
    this.stallTimer.unref();
    void this.sweepStalled();
    this.runningLoop = this.loop();
    return this.runningLoop;
  }

  isRunning(): boolean {
    return this.runningLoop !== undefined && !this.stopping;
  }

  isPaused(): boolean {
    return this.paused;
  }

  /** Stops claiming new jobs; running jobs finish. */
  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
    this.poke();
  }

  get activeCount(): number {
    return this.running.size;
  }

  private poke(): void {
    const w = this.wakeLocal;
    this.wakeLocal = undefined;
    w?.();
  }

  private waitLocal(): Promise<void> {
    return new Promise((resolve) => {
      this.wakeLocal = resolve;
    });
  }

  private free(): number {
    const own = this.opts.concurrency - this.running.size - this.reserved;
    return this.pool ? this.pool.free(this, own) : own;
  }

  private async loop(): Promise<void> {
    let failures = 0;
    await this.applyLimiter();
    while (!this.stopping) {
      if (this.paused || this.free() <= 0) {
        await this.waitLocal();
        continue;
      }
      const n = this.free();
      this.reserved += n;
      let reply: ClaimReply;
      try {
        reply = await scripts.claim(this.ctx, { count: n, leaseMs: this.opts.lockDuration });
        failures = 0;
      } catch (err) {
        this.reserved -= n;
        this.pool?.released(this);
        if (this.stopping) break;
        this.reportError(err);
        failures++;
        await sleep(Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
        continue;
      }
      this.reserved -= n;
      this.startJobs(reply.jobs);
      this.pool?.claimed(this, n, reply.jobs.length);
      if (reply.jobs.length === 0 && !this.stopping) {
        if (this.hadWork && this.running.size === 0) {
          this.hadWork = false;
          this.emit('drained');
        }
        await this.block(reply.wakeInMs);
      }
    }
  }

  /** Blocks on the wake list until work is signalled, the next delayed job is due, or drainDelay. */
  private async block(wakeInMs: number): Promise<void> {
    let seconds = this.opts.drainDelay;
    if (wakeInMs >= 0) seconds = Math.min(seconds, Math.max(0.001, wakeInMs / 1000));
    const client = this.blockConn!.client;
    const local = this.waitLocal();
    // A poke can end a block before its BLPOP returns. That BLPOP stays in flight and is awaited
    // again here, never stacked behind: a second BLPOP would queue on the same connection while
    // the first one took the next wake token and nobody looked at it (a lost wake-up).
    this.blpop ??= client.blpop(this.keys.wake, seconds).then(
      () => undefined,
      (err: unknown) => err ?? new Error('blpop failed'),
    ).finally(() => {
      this.blpop = undefined;
    });
    let timer: NodeJS.Timeout | undefined;
    const due = new Promise<void>((r) => (timer = setTimeout(r, seconds * 1000)));
    try {
      const err = await Promise.race([this.blpop, local, due]);
      if (err && !this.stopping) {
        this.reportError(err);
        await sleep(100);
      }
    } finally {
      clearTimeout(timer);
    }
  }

  private startJobs(jobs: readonly ClaimedJob[]): void {
    for (const cj of jobs) this.startJob(cj);
  }

  private startJob(cj: ClaimedJob): void {
    const job = Job.fromFields(this.ctx, cj.id, cj.fields) as Job<D, R, N>;
    const token = String(job.attemptsStarted);
    const run: Running = { job, token, ac: new AbortController(), lost: false };
    this.running.set(job.id, run);
    this.hadWork = true;
    this.emit('active', job, 'waiting');
    // Job schedulers: the claimed job's start makes the job of the scheduler's next slot.
    if (job.repeatJobKey !== undefined) void advanceScheduler(this.ctx.client, this.keys, job.repeatJobKey).catch((e) => this.hookError(e));
    void this.execute(run);
  }

  private async execute(run: Running): Promise<void> {
    const job = run.job as Job<D, R, N>;
    let result: R | undefined;
    let error: unknown;
    let ok = false;
    try {
      const signal = this.passSignal ? run.ac.signal : UNSEEN_SIGNAL;
      // The span wrapper is skipped entirely when @opentelemetry/api is not installed.
      result = await (tracingAvailable
        ? traceProcess(job, () => this.processor(job, run.token, signal))
        : this.processor(job, run.token, signal));
      ok = true;
    } catch (err) {
      error = err;
    }
    if (ok) this.settleCompleted(run, result);
    else if (run.cancelled !== undefined) await this.settleFailed(run, cancelError(run.cancelled, error));
    else if (isRateLimitError(error)) await this.handBack(run);
    else await this.settleFailed(run, toError(error));
  }

  /** Stores the limiter and group options in the queue's meta before the first claim (retried until it lands). */
  private async applyLimiter(): Promise<void> {
    if (!this.limiter && !this.groupDefaults) return;
    for (let failures = 1; !this.stopping; failures++) {
      try {
        if (this.limiter) await this.conn.client.hset(this.keys.meta, 'rlmax', this.limiter.max, 'rldur', this.limiter.duration);
        if (this.groupDefaults) await applyGroupDefaults(this.ctx, this.groupDefaults);
        return;
      } catch (err) {
        if (this.stopping) return;
        this.reportError(err);
        await sleep(Math.min(5000, 50 * 2 ** Math.min(failures, 7)));
      }
    }
  }

  /** The processor threw RateLimitError: the job goes back to ready without using an attempt. */
  private async handBack(run: Running): Promise<void> {
    try {
      const r = await scripts.moveToWait(this.ctx, { id: run.job.id, token: run.token });
      this.release(run);
      if (r < 0) this.reportError(errorFromCode(r, 'moveToWait', run.job.id));
    } catch (err) {
      this.release(run);
      this.reportError(err);
    }
    this.poke();
  }

  /** BullMQ's spelling: `throw Worker.RateLimitError()` from a processor. */
  static RateLimitError(): RateLimitError {
    return new RateLimitError();
  }

  /**
   * Blocks claims of the whole queue (every worker) for `ms` milliseconds: sets the global rate
   * counter to its block value with PX ms. Typical with `throw Worker.RateLimitError()` when an
   * upstream API answers 429.
   */
  async rateLimit(ms: number): Promise<void> {
    v.integerIn('ms', ms, 1, 86_400_000);
    // meta blk tells the claim to look at the counter (it reads it otherwise only with a limiter).
    await this.conn.client.multi().set(this.keys.rate, RATE_BLOCK, 'PX', ms).hset(this.keys.meta, 'blk', '1').exec();
  }

  /**
   * Cancels a job this worker is running: aborts the signal passed to the processor with
   * `reason` (default 'job cancelled'). Cancellation is cooperative: when the processor then
   * throws (anything), the attempt fails with `reason` (retried if attempts remain; throw an
   * UnrecoverableError to prevent that); if it returns normally, the job completes. Returns
   * whether the job was running here.
   */
  cancelJob(jobId: string, reason?: string): boolean {
    v.existingJobId(jobId);
    if (reason !== undefined) v.string('reason', reason, 10_000);
    const run = this.running.get(jobId);
    if (!run) return false;
    cancelRun(run, reason ?? 'job cancelled');
    return true;
  }

  /** Cancels every job this worker is running (see cancelJob). Returns how many. */
  cancelAllJobs(reason?: string): number {
    if (reason !== undefined) v.string('reason', reason, 10_000);
    for (const run of this.running.values()) cancelRun(run, reason ?? 'job cancelled');
    return this.running.size;
  }

  /** How many jobs a settle call should claim for this worker: the slot it frees, if running. */
  private fetchCount(): number {
    return this.stopping || this.paused || (this.pool && !this.pool.mayRefetch(this)) ? 0 : 1;
  }

  /**
   * Queues a completed job for the next settle call. Jobs that finish in the same tick are
   * settled together, in one call that also claims as many next jobs as they free slots; the
   * call goes out as soon as no other running job could still join it, else on the next turn
   * of the event loop.
   */
  private settleCompleted(run: Running, result: R | undefined): void {
    let json: string;
    try {
      json = v.encodeJson('returnvalue', result === undefined ? null : result, this.ctx.maxPayloadBytes);
    } catch (err) {
      void this.settleFailed(run, toError(err));
      return;
    }
    this.toSettle.push({ run, json, result });
    // Half the concurrency per call keeps two calls in flight, so Redis runs one while this
    // process runs the jobs the other returned: both cores stay busy.
    const n = this.toSettle.length;
    if (n >= this.running.size - this.settling || n >= this.settleTarget) {
      this.flushSettles();
    } else if (!this.settleScheduled) {
      this.settleScheduled = true;
      setImmediate(this.flushSettlesBound);
    }
  }

  private readonly flushSettlesBound = (): void => {
    this.settleScheduled = false;
    this.flushSettles();
  };

  private flushSettles(): void {
    if (this.toSettle.length === 0) return;
    const batch = this.toSettle;
    this.toSettle = [];
    this.settling += batch.length;
    void this.completeBatch(batch);
  }

  private async completeBatch(batch: Array<{ run: Running; json: string; result: R | undefined }>): Promise<void> {
    const fetch = this.fetchCount() > 0 ? (this.pool ? 1 : batch.length) : 0;
    let reply;
    try {
      reply = await scripts.completeMany(this.ctx, {
        jobs: batch.map((b) => ({ id: b.run.job.id, token: b.run.token, returnValue: b.json })),
        fetch, leaseMs: this.opts.lockDuration, maxEventValueBytes: this.maxEventValueBytes,
      });
    } catch (err) {
      this.settling -= batch.length;
      for (const b of batch) this.release(b.run);
      this.reportError(err);
      this.poke();
      return;
    }
    // Before the next jobs start: their settles compare against it (settleCompleted).
    this.settling -= batch.length;
    let outbox = false;
    for (let i = 0; i < batch.length; i++) {
      const { run, result } = batch[i]!;
      const code = reply.codes[i]!;
      this.release(run);
      if (code !== 1) {
        this.reportError(code === -2 ? new StaleJobError(run.job.id, 'complete') : errorFromCode(code, 'complete', run.job.id));
        continue;
      }
      run.job.returnvalue = result;
      run.job.attemptsMade++;
      this.emit('completed', run.job, result, 'active');
      if (mayWriteOutbox(run.job.parentKey)) outbox = true;
    }
    // Flows: a parent in another queue learns the outcome through this queue's outbox.
    if (outbox) void drainOutbox(this.ctx.client, this.keys).catch((e) => this.hookError(e));
    if (reply.jobs.length > 0) this.startJobs(reply.jobs);
    if (reply.jobs.length < fetch || fetch === 0) this.poke();
  }

  private async settleFailed(run: Running, err: Error): Promise<void> {
    const job = run.job;
    const { retryDelay, reason, made, exhausted } = retryPlan(job, err, this.strategies, this.fallbackStrategy);
    const stack = JSON.stringify([...job.stacktrace, err.stack ?? String(err)].slice(-10));
    const fetch = this.fetchCount();
    try {
      const reply = await scripts.fail(this.ctx, {
        id: job.id, token: run.token, reason, stack, retryDelayMs: retryDelay, exhausted,
        fetch, leaseMs: this.opts.lockDuration,
      });
      this.afterSettle(run, reply, 'fail', () => {
        job.failedReason = reason;
        job.attemptsMade = made;
        this.emit('failed', job, err, 'active');
      });
    } catch (e) {
      this.release(run);
      this.reportError(e);
    }
  }

  private afterSettle(run: Running, reply: ClaimReply | number, op: string, onOk: () => void): void {
    this.release(run);
    if (typeof reply === 'number') {
      this.reportError(reply === -2 ? new StaleJobError(run.job.id, op) : errorFromCode(reply, op, run.job.id));
      this.poke();
      return;
    }
    onOk();
    // Flows: a parent in another queue learns the outcome through this queue's outbox.
    if (mayWriteOutbox(run.job.parentKey)) void drainOutbox(this.ctx.client, this.keys).catch((e) => this.hookError(e));
    if (reply.jobs.length > 0) this.startJobs(reply.jobs);
    else this.poke();
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

  /** Renews every running job's lease in one call (worker-upkeep.ts). */
  private async renewLeases(): Promise<void> {
    try {
      await renewLeases(this.ctx, this.running, this.opts.lockDuration, (err) => this.reportError(err));
    } catch (err) {
      this.reportError(err);
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
      await sweepStalled(this.ctx, this.opts.maxStalledCount, (id) => this.emit('stalled', id, 'active'));
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
    this.closing = (async () => {
      clearInterval(this.stallTimer);
      this.poke();
      if (this.blockConn) closeConnection(this.blockConn, true);
      if (force) {
        for (const r of this.running.values()) r.ac.abort(new Error('worker closed (force)'));
      } else {
        if (this.running.size > 0) await new Promise<void>((r) => this.idleWaiters.push(r));
      }
      clearInterval(this.leaseTimer);
      await this.sandbox?.close(force);
      await this.runningLoop?.catch(() => {});
      await closeConnection(this.conn, force);
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

function toError(e: unknown): Error {
  if (e instanceof Error) return e;
  return new Error(typeof e === 'string' ? e : `non-error thrown: ${v.describe(e)}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
