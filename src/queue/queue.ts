/**
 * Queue: the producer and admin side, with BullMQ's names, arguments, return values and
 * instance events (QueueListener): add, addBulk, pause, resume, the global limits, and the
 * maintenance commands, whose work lives in queue-maintenance.ts; plus lanes. The read side is
 * QueueGetters (queue-getters.ts), identity QueueBase (queue-base.ts).
 */
import { GroupMaxSizeExceededError } from '../pro/errors.js';
import * as groups from '../pro/groups.js';
import { checkEvictionPolicy, closeConnection, type Connection, type ConnectionInput } from '../core/connection.js';
import { errorFromCode, guardedEmit, ActiveJobsError, ValidationError } from '../core/errors.js';
import { Job, type JobContext } from '../job/job.js';
import { type QueueKeys } from '../core/keys.js';
import type { LaneControls } from '../lanes/lanes.js';
import { getJobs, loadJobs } from '../job/load-jobs.js';
import type { JobOptions, QueueCompatOptions } from '../core/options.js';
import { scripts, type AddJobArgs } from '../scripts/index.js';
import { execStamped, layoutReady } from '../scripts/runner.js';
import { BULK_MISSING_PARENT_ID } from '../job/cross-parents.js';
import { addBatches, addJobs, addedJobHash, newJob } from '../job/new-job.js';
import * as v from '../core/validate.js';
import { startProducerSpan, type ProducerSpan, type TraceCarrier } from '../ops/tracing.js';
import { activeCount } from '../ops/active-set.js';
import * as schedulers from '../lifecycle/schedulers.js';
import { QueueGetters } from './queue-getters.js';
import { IDENTITY_BY_SUBCLASS } from './queue-base.js';
import * as maint from './queue-maintenance.js';
import { attached, JobScheduler, Repeat } from './repeat.js';
import type { CleanState, RetryJobsOptions } from './queue-maintenance.js';

import type { JobProgress, ObliterateOpts, QueueListener } from './queue-listener.js';

export type { CleanState, RetryJobsOptions } from './queue-maintenance.js';
export type { JobProgress, ObliterateOpts, QueueListener } from './queue-listener.js';
export type { QueueOptions } from './queue-options.js';
import type { QueueOptions } from './queue-options.js';
import { MetaField } from '../core/fields.js';
import { connectionError } from '../core/connection-wait.js';

/** Value of the global rate counter while rateLimit(ms) blocks the queue (2^50, as lib/claim.lua and worker.ts). */
const RATE_BLOCK = 2 ** 50;


/** @internal Filled by sharded.ts (a static import would be a cycle): builds a sharded queue. */
export const shardedQueueFactory: { create?: (name: string, opts: QueueOptions) => Queue } = {};

/**
 * Jobs per script call when single adds of one tick travel together. Smaller than ADD_BATCH so
 * that Redis works on the first call while the client still sends or resolves the others (100
 * in flight: two calls per tick); 50 rather than 20 halves each call's fixed cost per job.
 */
const ADD_COALESCE = 50;

interface PendingAdd {
  args: AddJobArgs;
  span: ProducerSpan;
  resolve: (job: Job<any, any, any>) => void;
  reject: (err: unknown) => void;
}

export interface BulkJob<D = any> {
  name: string;
  data: D;
  opts?: JobOptions;
}

export class Queue<DataType = any, ReturnType = any, NameType extends string = string> extends QueueGetters<DataType, ReturnType, NameType> {
  // Declared, not initialised: with `shards > 1` the constructor returns a ShardedQueue instead.
  declare readonly name: string;
  declare readonly keys: QueueKeys;
  declare readonly lanes: LaneControls;
  declare readonly opts: QueueOptions;
  protected declare readonly conn: Connection;
  protected declare readonly ctx: JobContext;
  /** Pending write of settings given at construction (events cap); adds wait for it. */
  private setup: Promise<unknown> | undefined;
  /** Adds waiting for the end of the tick (see add()). */
  private pendingAdds: PendingAdd[] = [];
  private flushing: Promise<void> | undefined;
  private disconnected = false;

  /**
   * As BullMQ: an exception thrown by a listener becomes an 'error' event, and an 'error' nobody
   * listens for is printed (console.error) instead of crashing the process or being dropped.
   */
  override emit<U extends keyof QueueListener<Job<DataType, ReturnType, NameType>>>(
    event: U, ...args: Parameters<QueueListener<Job<DataType, ReturnType, NameType>>[U]>): boolean;
  override emit(event: string | symbol, ...args: any[]): boolean;
  override emit(event: string | symbol, ...args: any[]): boolean {
    return guardedEmit(this, event, args);
  }


  override on<U extends keyof QueueListener<Job<DataType, ReturnType, NameType>>>(event: U, listener: QueueListener<Job<DataType, ReturnType, NameType>>[U]): this;
  override on(event: string | symbol, listener: (...args: any[]) => void): this;
  override on(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.on(event, listener);
  }

  override once<U extends keyof QueueListener<Job<DataType, ReturnType, NameType>>>(event: U, listener: QueueListener<Job<DataType, ReturnType, NameType>>[U]): this;
  override once(event: string | symbol, listener: (...args: any[]) => void): this;
  override once(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.once(event, listener);
  }

  override off<U extends keyof QueueListener<Job<DataType, ReturnType, NameType>>>(event: U, listener: QueueListener<Job<DataType, ReturnType, NameType>>[U]): this;
  override off(event: string | symbol, listener: (...args: any[]) => void): this;
  override off(event: string | symbol, listener: (...args: any[]) => void): this {
    return super.off(event, listener);
  }

  constructor(name: string, opts: QueueOptions = {}) {
    super(IDENTITY_BY_SUBCLASS);
    v.queueName(name);
    v.plainObject('opts', opts);
    if (opts.shards !== undefined && v.integerIn('shards', opts.shards, 1, 1024) > 1) {
      if (!shardedQueueFactory.create) {
        throw new Error('sharded queues need src/cluster/sharded.ts loaded: import Queue from the package root (echomq), which loads it');
      }
      return shardedQueueFactory.create(name, opts) as Queue<DataType, ReturnType, NameType>;
    }
    const { evmax } = this.assignIdentity(name, opts);
    // Lost connections are retried by ioredis (calls wait, or reject after its retries); the
    // queue's 'error' listeners see each connection error, as BullMQ's (printed when nobody
    // listens: see emit). A connection the user passed in is theirs to watch.
    if (this.conn.owned) {
      this.conn.client.on('error', (err: Error) => this.emit('error', connectionError(this.conn.client, err)));
      this.conn.client.on('end', () => {
        if (!this.closed) this.emit('ioredis:close');
      });
    }
    if (evmax !== undefined) {
      const { client } = this.conn;
      this.setup = layoutReady(client, this.keys).then(() => execStamped(client.multi().hset(this.keys.meta, MetaField.eventsMaxLen, evmax), this.keys));
      this.setup.catch(() => {}); // reported by the first add that awaits it
    }
    void checkEvictionPolicy(this.conn.client);
  }

  /** Validates and encodes one job with this queue's defaults (new-job.ts; also used by sharded.ts). */
  protected prepare(name: unknown, data: unknown, opts: JobOptions | undefined, field: string, telemetry?: TraceCarrier): AddJobArgs {
    return newJob(this.keys, this.ctx.maxPayloadBytes, name, data, opts, this.opts.defaultJobOptions, field, telemetry).args;
  }

  /**
   * Adds a job. With an existing `jobId`, returns that job unchanged. Adds made in the same tick
   * (for example many producers awaiting in parallel) travel together: one script call per
   * 50 jobs, all sent in one round trip, each add resolving with its own job. A lone add is
   * sent at once (on the next tick) and costs one round trip.
   */
  add(name: NameType, data: DataType, opts?: JobOptions): Promise<Job<DataType, ReturnType, NameType>> {
    // Not an async function: one promise per add instead of two (errors still reject, never throw).
    let span: ProducerSpan | undefined;
    let args: AddJobArgs;
    try {
      this.open();
      span = startProducerSpan(this.name, String(name));
      args = this.prepare(name, data, opts, '', span.carrier);
    } catch (err) {
      span?.end(err);
      return Promise.reject(err);
    }
    return new Promise((resolve, reject) => {
      this.pendingAdds.push({ args, span, resolve, reject });
      if (this.pendingAdds.length === 1) process.nextTick(() => void this.flushAdds());
    });
  }

  /** Settles one add of flushAdds: the span ends first, then the caller's promise, then `waiting`. */
  private settleAdd(p: PendingAdd, job: Job<any, any, any> | undefined, err?: unknown): void {
    if (job === undefined) {
      p.span.end(err);
      p.reject(err);
      return;
    }
    p.span.end();
    p.resolve(job);
    this.emit('waiting', job as Job<DataType, ReturnType, NameType>);
  }

  /** Sends the adds collected in this tick; see add(). */
  private flushAdds(): Promise<void> {
    const pending = this.pendingAdds;
    this.pendingAdds = [];
    if (pending.length === 0) return Promise.resolve();
    const run = (async () => {
      try {
        if (this.setup) await this.setup;
      } catch (err) {
        for (const p of pending) this.settleAdd(p, undefined, err);
        return;
      }
      const chunks: PendingAdd[][] = [];
      for (let i = 0; i < pending.length; i += ADD_COALESCE) chunks.push(pending.slice(i, i + ADD_COALESCE));
      await Promise.all(chunks.map(async (chunk) => {
        try {
          // A push loop, not map(): map's array kind differs between the builtin and its inlined
          // form in optimised code, and a new kind deoptimises scripts.add, a big recompile.
          const jobs: AddJobArgs[] = [];
          for (const p of chunk) jobs.push(p.args);
          const replies = await addJobs(this.ctx, jobs);
          for (let k = 0; k < replies.length; k++) {
            const r = replies[k]!;
            const p = chunk[k]!;
            if (r.error) this.settleAdd(p, undefined, r.error);
            else if (r.groupFull) this.settleAdd(p, undefined, new GroupMaxSizeExceededError(p.args.lane, p.args.groupMaxSize!));
            else if (r.created) this.settleAdd(p, this.snapshot(r.id, p.args));
            // Not created: an existing jobId, or deduplicated (a throttle holder may be gone).
            else this.getJob(r.id).then((j) => this.settleAdd(p, j ?? this.snapshot(r.id, p.args)), (err) => this.settleAdd(p, undefined, err));
          }
        } catch (err) {
          for (const p of chunk) this.settleAdd(p, undefined, err);
        }
      }));
    })();
    this.flushing = run;
    return run;
  }

  /** Adds many jobs: one script call per 100, all in one round trip. Validates all of them before writing any. */
  async addBulk(jobs: ReadonlyArray<BulkJob<DataType>>): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    this.open();
    if (!Array.isArray(jobs)) v.fail('jobs', 'an array of { name, data, opts }', jobs);
    const span = startProducerSpan(this.name, 'bulk', jobs.length);
    try {
      const out = await this.addBulkTraced(jobs, span.carrier);
      span.end();
      return out;
    } catch (err) {
      span.end(err);
      throw err;
    }
  }

  private async addBulkTraced(jobs: ReadonlyArray<BulkJob<DataType>>, telemetry: TraceCarrier | undefined): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    // A push loop, as in flushAdds: the batches reach scripts.add as the same array kind.
    const prepared: AddJobArgs[] = [];
    for (let i = 0; i < jobs.length; i++) {
      const j = jobs[i]!;
      v.plainObject(`jobs[${i}]`, j);
      try {
        prepared.push(this.prepare(j.name, j.data, j.opts, `jobs[${i}].`, telemetry));
      } catch (e) {
        // Option checks name the bare option ('priority'); in a bulk, say which job it was.
        if (e instanceof ValidationError && !e.field.startsWith('jobs[')) throw v.renamed(e, `jobs[${i}].opts.${e.field}`);
        throw e;
      }
    }
    if (this.setup) await this.setup;
    // Every batch is one bounded script call; all of them go out in one round trip. Each batch's
    // jobs are built as its reply arrives, while Redis runs the next batches.
    const batches = addBatches(prepared);
    const built = await Promise.all(batches.map(async (batch) => {
      const replies = await addJobs(this.ctx, batch);
      // As BullMQ's bulk add, a job whose parent is missing is left out and the others are added.
      const failed = replies.find((r) => r.error && !r.missingParent);
      if (failed) throw failed.error;
      const full = replies.findIndex((r) => r.groupFull);
      // group.maxSize in a bulk (BullMQ Pro has none): the other jobs are added, then the bulk rejects.
      if (full >= 0) throw new GroupMaxSizeExceededError(batch[full]!.lane, batch[full]!.groupMaxSize!);
      const existing = replies.filter((r) => !r.created && !r.missingParent).map((r) => r.id);
      const loaded = existing.length === 0 ? undefined : new Map((await loadJobs(this.ctx, existing)).map((j) => [j.id, j]));
      return replies.map((r, k) => (r.missingParent ? this.leftOut(batch[k]!) : r.created ? this.snapshot(r.id, batch[k]!) : loaded?.get(r.id) ?? this.snapshot(r.id, batch[k]!)) as Job<DataType, ReturnType, NameType>);
    }));
    return built.flat();
  }

  /** A bulk job left out for its missing parent: BullMQ's Job of it, with the id its bulk add gives (BULK_MISSING_PARENT_ID). */
  private leftOut(a: AddJobArgs): Job<DataType, ReturnType, NameType> {
    const job = this.snapshot('', a);
    (job as { id: unknown }).id = BULK_MISSING_PARENT_ID;
    return job;
  }

  /** A Job built from what was just written, without reading it back. */
  private snapshot(id: string, a: AddJobArgs): Job<DataType, ReturnType, NameType> {
    return Job.fromHash(this.ctx, id, addedJobHash(a)) as Job<DataType, ReturnType, NameType>;
  }

  /** Re-scores a job; a waiting job moves to the back of its new tier. */
  async changePriority(id: string, priority: number, opts: { lifo?: boolean } = {}): Promise<void> {
    v.existingJobId(id);
    v.priority(priority);
    const o = v.plainObject('opts', opts);
    const lifo = o.lifo === undefined ? false : v.boolean('lifo', o.lifo);
    const r = await scripts.changePriority(this.ctx, { id, priority, lifo });
    if (r < 0) throw errorFromCode(r, 'changePriority', id);
  }

  /** Moves a waiting or delayed job to another lane; it keeps its arrival place. */
  async moveToLane(id: string, lane: string): Promise<void> {
    v.existingJobId(id);
    v.laneName(lane);
    const r = await scripts.moveToLane(this.ctx, { id, lane });
    if (r < 0) throw errorFromCode(r, 'moveToLane', id);
  }

  /** Stops every worker from claiming (checked inside the claim script); emits `paused`. */
  async pause(): Promise<void> {
    this.open();
    await scripts.pause(this.ctx, true);
    this.emit('paused');
  }

  /** Lets workers claim again; emits `resumed`. */
  async resume(): Promise<void> {
    this.open();
    await scripts.pause(this.ctx, false);
    this.emit('resumed');
  }

  /**
   * Frees a deduplication id at once, whatever holds it. Returns 1 when a live job or a throttle
   * window held it, else 0 (BullMQ's DEL count).
   */
  async removeDeduplicationKey(id: string): Promise<number> {
    v.nonEmptyString('deduplication id', id);
    const held = (await this.getDeduplicationJobId(id)) !== null;
    await layoutReady(this.ctx.client, this.keys);
    await this.ctx.client.multi().hdel(this.keys.dedup, id).zrem(this.keys.dedupx, id).exec();
    return held ? 1 : 0;
  }

  /** @deprecated use removeDeduplicationKey (BullMQ's old name). */
  removeDebounceKey(id: string): Promise<number> {
    return this.removeDeduplicationKey(id);
  }

  /**
   * Queue-wide rate limit, shared by every worker: at most `max` jobs start per `duration` ms
   * (meta rlmax/rldur, checked inside the claim). Workers with a `limiter` option set the same.
   * Returns the number of fields that were not set before (BullMQ's HSET reply: 2, or 0).
   */
  async setGlobalRateLimit(max: number, duration: number): Promise<number> {
    v.integerIn('max', max, 1, 1_000_000_000);
    v.integerIn('duration', duration, 1, 86_400_000);
    await layoutReady(this.ctx.client, this.keys);
    return (await execStamped(this.ctx.client.multi().hset(this.keys.meta, MetaField.rateMax, max, MetaField.rateDuration, duration), this.keys)) as number;
  }

  /** Removes the queue-wide rate limit; returns how many of its two fields were set (BullMQ's HDEL reply). */
  async removeGlobalRateLimit(): Promise<number> {
    await layoutReady(this.ctx.client, this.keys);
    return this.ctx.client.hdel(this.keys.meta, MetaField.rateMax, MetaField.rateDuration);
  }

  /**
   * Most jobs of the queue active at once across all workers; null removes the limit (echomq).
   * Returns 1 when no limit was set before, else 0 (BullMQ's HSET reply).
   */
  async setGlobalConcurrency(concurrency: number | null): Promise<number> {
    if (concurrency === null) return this.removeGlobalConcurrency();
    const n = v.positiveInt('concurrency', concurrency);
    await layoutReady(this.ctx.client, this.keys);
    return (await execStamped(this.ctx.client.multi().hset(this.keys.meta, MetaField.concurrency, n), this.keys)) as number;
  }

  /** Removes the global concurrency limit; returns 1 when one was set. */
  async removeGlobalConcurrency(): Promise<number> {
    await layoutReady(this.ctx.client, this.keys);
    return this.ctx.client.hdel(this.keys.meta, MetaField.concurrency);
  }

  /**
   * Blocks claims of the whole queue (every worker) for `expireTimeMs` ms, as worker.rateLimit:
   * the global rate counter is set to its block value with that ttl (lib/claim.lua).
   */
  async rateLimit(expireTimeMs: number): Promise<void> {
    v.integerIn('expireTimeMs', expireTimeMs, 1, 86_400_000);
    await layoutReady(this.ctx.client, this.keys);
    await execStamped(this.ctx.client.multi().set(this.keys.rate, RATE_BLOCK, 'PX', expireTimeMs).hset(this.keys.meta, MetaField.rateBlock, '1'), this.keys);
  }

  /** Ends a rate-limit window or block now; returns 1 when one was running (BullMQ's DEL reply). */
  async removeRateLimitKey(): Promise<number> {
    await layoutReady(this.ctx.client, this.keys);
    return this.ctx.client.del(this.keys.rate);
  }

  /**
   * Moves failed (default) or completed jobs that finished at or before `timestamp` back to
   * waiting, oldest first, `count` per call until none is left. As BullMQ, attemptsMade is kept
   * (a job retried after its last attempt fails for good at its next failure). Emits waiting
   * events (prev = the state). Resolves with the number of jobs moved (BullMQ: void).
   */
  async retryJobs(opts: RetryJobsOptions = {}): Promise<number> {
    this.open();
    return maint.retryJobs(this.ctx, maint.checkRetryJobs(opts));
  }

  /** Makes every delayed job waiting now, `count` per call. Resolves with the number moved (BullMQ: void). */
  async promoteJobs(opts: { count?: number } = {}): Promise<number> {
    this.open();
    const o = v.plainObject('opts', opts);
    return maint.promoteJobs(this.ctx, o.count === undefined ? 1000 : v.positiveInt('count', o.count));
  }

  /**
   * Removes all waiting and prioritized jobs (and delayed ones with delayed=true; the job of a
   * scheduler's next slot stays), in bounded batches. Flows as BullMQ: a parent in this queue
   * whose last pending child was drained goes with it. Returns how many were removed (BullMQ: void).
   */
  async drain(delayed = false): Promise<number> {
    this.open();
    v.boolean('delayed', delayed);
    return maint.drain(this.ctx, delayed);
  }

  /**
   * Removes up to `limit` jobs (0 = no limit) of a type that are older than `grace` ms: finish
   * time for completed/failed, else the last start, then the creation time. Types as BullMQ:
   * completed, failed, delayed, prioritized, wait/waiting (paused or not), paused (the waiting
   * jobs of a paused queue only), active (only jobs whose lease ran out: nobody holds them).
   * Returns the removed ids; emits `cleaned(ids, type)`; one `cleaned` stream event per batch.
   */
  async clean(grace: number, limit: number, type: CleanState = 'completed'): Promise<string[]> {
    this.open();
    const t = maint.checkClean(grace, limit, type);
    return maint.clean(this.ctx, grace, limit, t, (ids) => this.emit('cleaned', ids, maint.cleanReportType(t)));
  }

  /**
   * Deletes the queue: every job with its logs, lane settings, schedulers, metrics and events.
   * Refused with ActiveJobsError ("Cannot obliterate queue with active jobs") while jobs are
   * active unless `force`; then nothing changes. Pauses the queue first (emits `paused`) and
   * deletes in bounded batches of `count` jobs.
   */
  async obliterate(opts: ObliterateOpts = {}): Promise<void> {
    this.open();
    v.plainObject('opts', opts);
    const force = opts.force === undefined ? false : v.boolean('force', opts.force);
    const budget = opts.count === undefined ? maint.BATCH : v.positiveInt('count', opts.count);
    if (!force && (await activeCount(this.ctx.client, this.keys)) > 0) throw maint.obliterateRefused(this.name);
    const wasPaused = await this.isPaused();
    await scripts.pause(this.ctx, true);
    this.emit('paused');
    try {
      await maint.obliterate(this.ctx, this.name, budget, force);
    } catch (err) {
      // A claim slipped in between the check and the pause: nothing was deleted, so leave the
      // queue as it was.
      if (err instanceof ActiveJobsError && !wasPaused) await scripts.pause(this.ctx, false);
      throw err;
    }
  }

  /**
   * Moves a queue stored in layout version 1 to this echomq's layout (2: the active set's
   * sentinel, docs/protocol.md "Versions") in one atomic call; a queue already in it, or one
   * with no stored version, is left as it is. Returns the version stored before the call (0:
   * none). It skips the layout check that refuses such a queue's other calls. Stop the clients
   * of the older version first: one still running would count the sentinel as an active job.
   * `dryRun` only reports. IncompatibleLayoutError for a version it cannot upgrade from.
   */
  async upgradeLayout(opts: { dryRun?: boolean } = {}): Promise<number> {
    this.open();
    const o = v.plainObject('opts', opts);
    const dryRun = o.dryRun === undefined ? false : v.boolean('dryRun', o.dryRun);
    return maint.upgradeLayout(this.ctx, this.name, !dryRun);
  }

  /**
   * Removes a job and, unless removeChildren is false, the children it has (recursively).
   * Returns 1, also for a job that does not exist, or 0 when the job or a child it waits for is
   * active (nothing removed), as BullMQ; emits `removed(jobId)` on 1.
   */
  async remove(jobId: string, opts: { removeChildren?: boolean } = {}): Promise<number> {
    this.open();
    v.existingJobId(jobId);
    const o = v.plainObject('opts', opts);
    const removeChildren = o.removeChildren === undefined ? true : v.boolean('removeChildren', o.removeChildren);
    const r = await maint.removeJob(this.ctx, jobId, removeChildren);
    if (r === 1) this.emit('removed', jobId);
    return r;
  }

  /**
   * Deletes job hashes no state structure references (and their logs), scanning `count` keys per
   * step; stops after `limit` (0 = no limit). Returns how many were removed.
   */
  async removeOrphanedJobs(count = 1000, limit = 0): Promise<number> {
    this.open();
    v.positiveInt('count', count);
    v.nonNegativeInt('limit', limit);
    return maint.removeOrphanedJobs(this.ctx, count, limit);
  }

  /** BullMQ 4's migration helper: deletes a BullMQ queue's old `<prefix>:<queue>:priority` key (no echomq key has that name); 0 or 1. */
  async removeDeprecatedPriorityKey(): Promise<number> {
    this.open();
    return this.ctx.client.del(this.toKey('priority'));
  }

  /** Trims the events stream to about `maxLength` entries; returns how many were trimmed. */
  async trimEvents(maxLength: number): Promise<number> {
    this.open();
    v.nonNegativeInt('maxLength', maxLength);
    return this.ctx.client.xtrim(this.keys.events, 'MAXLEN', '~', maxLength);
  }

  /** Appends a line to a job's log; returns the number of lines kept (keepLogs: most kept, 0 = all). */
  async addJobLog(jobId: string, logRow: string, keepLogs?: number): Promise<number> {
    this.open();
    v.existingJobId(jobId);
    v.string('logRow', logRow, this.ctx.maxPayloadBytes);
    const keep = keepLogs === undefined ? this.ctx.keepLogs : v.nonNegativeInt('keepLogs', keepLogs);
    const n = await scripts.addLog(this.ctx, { id: jobId, line: logRow, keep });
    if (n < 0) throw maint.missingJob(jobId, 'addLog');
    return n;
  }

  /** Stores a job's progress (a number or a JSON value), writes the progress event and emits `progress`. */
  async updateJobProgress(jobId: string, progress: JobProgress): Promise<void> {
    this.open();
    v.existingJobId(jobId);
    const json = v.encodeJson('progress', progress, this.ctx.maxPayloadBytes);
    const r = await scripts.progress(this.ctx, { id: jobId, progress: json });
    if (r < 0) throw maint.missingJob(jobId, 'updateProgress');
    this.emit('progress', jobId, progress);
  }

  /**
   * Creates or updates a job scheduler: one job per slot, every `every` ms or on a cron
   * `pattern` (docs/schedulers-and-flows.md). Upserting the same schedule again only updates the
   * template, endDate and limit. Returns the job of the next slot (undefined when no slot is left).
   */
  async upsertJobScheduler(
    id: string,
    repeat: schedulers.RepeatOptions,
    template?: schedulers.JobSchedulerTemplate<DataType>,
  ): Promise<Job<DataType, ReturnType, NameType> | undefined> {
    this.open();
    return (await schedulers.upsertJobScheduler(this.ctx, this.opts.defaultJobOptions, id, repeat, template, this.opts.settings?.repeatStrategy)) as
      Job<DataType, ReturnType, NameType> | undefined;
  }

  /** Removes a scheduler and its next job if that has not started. Returns whether it existed. */
  async removeJobScheduler(id: string): Promise<boolean> {
    this.open();
    return schedulers.removeJobScheduler(this.ctx.client, this.keys, id);
  }

  // BullMQ Pro's group settings (a group is a lane; src/pro/groups.ts).
  /** Most jobs of the group active at once across all workers; wins over the Worker's group.concurrency. */
  async setGroupConcurrency(groupId: string, concurrency: number): Promise<void> {
    this.open();
    return groups.setGroupConcurrency(this.ctx, groupId, concurrency);
  }
  /** Drops the group's own concurrency (the Worker default applies again). */
  async removeGroupConcurrency(groupId: string): Promise<void> { this.open(); return groups.removeGroupConcurrency(this.ctx, groupId); }
  /** At most max jobs of the group start per duration ms; wins over the Worker's group.limit. */
  async setGroupRateLimit(groupId: string, max: number, duration: number): Promise<void> {
    this.open();
    return groups.setGroupRateLimit(this.ctx, groupId, max, duration);
  }
  /** Drops the group's own rate limit (the Worker default applies again). */
  async removeGroupRateLimit(groupId: string): Promise<void> { this.open(); return groups.removeGroupRateLimit(this.ctx, groupId); }
  /** false when already paused. A paused id is remembered before the group has jobs. */
  async pauseGroup(groupId: string): Promise<boolean> { this.open(); return groups.pauseGroup(this.ctx, groupId); }
  /** false when not paused (or no such group). */
  async resumeGroup(groupId: string): Promise<boolean> { this.open(); return groups.resumeGroup(this.ctx, groupId); }

  protected _jobScheduler?: JobScheduler;
  protected _repeat?: Repeat;

  /** BullMQ's JobScheduler of this queue, made on first use on its client; its 'error's are the queue's. */
  get jobScheduler(): Promise<JobScheduler> {
    return Promise.resolve(attached(this as never, JobScheduler));
  }

  /** BullMQ 5's Repeat (legacy repeatable jobs = echomq's schedulers), made like jobScheduler. */
  get repeat(): Promise<Repeat> {
    return Promise.resolve(attached(this as never, Repeat));
  }

  /** Closes the connection if this queue opened it. Idempotent. */
  override close(): Promise<void> {
    if (this.closing) return this.closing;
    this.closed = true;
    this.closing = (async () => {
      // Adds already accepted are sent before the connection closes.
      await this.flushAdds();
      await this.flushing;
      await Promise.all([this._jobScheduler?.close(), this._repeat?.close()]);
      // After disconnect() a QUIT would wait forever on a client that never connects again.
      await closeConnection(this.conn, this.disconnected);
    })();
    return this.closing;
  }

  /** Closes the connection at once, without waiting for pending replies (close() still resolves after it). */
  override async disconnect(): Promise<void> {
    this.disconnected = true;
    await super.disconnect();
  }
}
