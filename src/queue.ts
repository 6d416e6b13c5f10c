/**
 * Queue: the producer and admin side. BullMQ names: add, addBulk, getJob, getJobs,
 * getJobCounts, pause, resume, drain, clean, obliterate, close; plus lanes.
 */
import { GroupMaxSizeExceededError } from './pro/errors.js';
import { checkEvictionPolicy, closeConnection, openConnection, type Connection, type ConnectionInput } from './connection.js';
import { ClosedError, errorFromCode, ActiveJobsError, InvalidStateError, ValidationError } from './errors.js';
import { Job, type JobContext } from './job.js';
import { jobKey, queueKeys, type QueueKeys } from './keys.js';
import { LaneControls } from './lanes.js';
import { getJobs, loadJobs } from './inspect.js';
import {
  DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, DEFAULT_MAX_PAYLOAD, normalizeJobOptions, storedOptions, type JobOptions,
} from './options.js';
import { scripts, type AddJobArgs } from './scripts/index.js';
import * as v from './validate.js';
import { startProducerSpan, type TraceCarrier } from './tracing.js';
import * as schedulers from './schedulers.js';
import { QueueGetters } from './queue-getters.js';

export interface QueueOptions {
  /** Redis URL, ioredis options, or an ioredis client (used as is, not closed by echomq). */
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** Options merged under every add's options. */
  defaultJobOptions?: JobOptions;
  /** Largest JSON payload (data, progress) in bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Most log lines kept per job. Default 0 (all). */
  keepLogs?: number;
  /**
   * Capped streams. `events.maxLen`: approximate cap of the events stream that QueueEvents
   * reads (meta field evmax; default 10000; 0 turns events off). Written at construction.
   */
  streams?: { events?: { maxLen?: number } };
  /**
   * Spread the queue over this many hash tags (`<name>#0` … `<name>#<n-1>`), lanes assigned to
   * shards by a hash of the lane name: one queue outgrows one Redis (Cluster) node. 1 or absent
   * = a plain queue. Refused (ShardCountError) when the queue has jobs under another count.
   * See docs/scaling.md and src/sharded.ts.
   */
  shards?: number;
  /** @internal Set by sharded.ts on the queue of one shard: generated ids stay unique across shards. */
  shardOf?: { index: number; count: number };
}

/** @internal Filled by sharded.ts (a static import would be a cycle): builds a sharded queue. */
export const shardedQueueFactory: { create?: (name: string, opts: QueueOptions) => Queue } = {};

/**
 * Jobs per Redis call for maintenance work (drain, obliterate): ~3 µs a job, so a call stays
 * near 1.5 ms however big the queue (test/reliability-bounded).
 */
const BATCH = 500;
/** Jobs per remove-script call in clean(): each removal also writes an event (~10 µs a job). */
const CLEAN_BATCH = 100;
/**
 * Most jobs per addBulk call to Redis; bigger bulks are split (one round trip per batch). An add
 * costs Redis ~10–20 µs a job, so 100 keeps every call near 2 ms (test/reliability-bounded).
 */
const ADD_BATCH = 100;
/**
 * Jobs per script call when single adds of one tick travel together. Smaller than ADD_BATCH so
 * that Redis works on the first calls while the client still sends or resolves the others:
 * adds from many concurrent producers then flow as a pipeline instead of in lockstep batches.
 */
const ADD_COALESCE = 20;

interface PendingAdd {
  args: AddJobArgs;
  resolve: (job: Job<any, any, any>) => void;
  reject: (err: unknown) => void;
}

export interface BulkJob<D = any> {
  name: string;
  data: D;
  opts?: JobOptions;
}

export type CleanState = 'completed' | 'failed' | 'delayed' | 'wait' | 'waiting' | 'prioritized';

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

  constructor(name: string, opts: QueueOptions = {}) {
    super();
    v.queueName(name);
    v.plainObject('opts', opts);
    if (opts.shards !== undefined && v.integerIn('shards', opts.shards, 1, 1024) > 1) {
      if (!shardedQueueFactory.create) throw new Error('sharded queues need src/sharded.js loaded (import from the package index)');
      return shardedQueueFactory.create(name, opts) as Queue<DataType, ReturnType, NameType>;
    }
    const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
    if (opts.defaultJobOptions !== undefined) normalizeJobOptions(opts.defaultJobOptions, 'defaultJobOptions');
    const maxPayloadBytes = opts.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD : v.positiveInt('maxPayloadBytes', opts.maxPayloadBytes);
    const keepLogs = opts.keepLogs === undefined ? 0 : v.nonNegativeInt('keepLogs', opts.keepLogs);
    let evmax: number | undefined;
    if (opts.streams !== undefined) {
      const ev = v.plainObject('streams', opts.streams).events;
      if (ev !== undefined) {
        const max = v.plainObject('streams.events', ev).maxLen;
        if (max !== undefined) evmax = v.nonNegativeInt('streams.events.maxLen', max);
      }
    }
    this.name = name;
    this.opts = opts;
    this.keys = queueKeys(name, prefix);
    this.conn = openConnection(opts.connection);
    // Lost connections are retried by ioredis (calls wait, or reject after its retries); the
    // queue's 'error' listeners see each connection error (as QueueEvents does).
    if (this.conn.owned) {
      this.conn.client.on('error', (err: Error) => {
        if (this.listenerCount('error') > 0) this.emit('error', err);
      });
    }
    const ids = opts.shardOf ? { step: opts.shardOf.count, offset: opts.shardOf.index } : undefined;
    this.ctx = { client: this.conn.client, keys: this.keys, maxPayloadBytes, keepLogs, ids };
    this.lanes = new LaneControls(this.ctx);
    if (evmax !== undefined) {
      this.setup = this.conn.client.hset(this.keys.meta, 'evmax', evmax);
      this.setup.catch(() => {}); // reported by the first add that awaits it
    }
    void checkEvictionPolicy(this.conn.client);
  }

  /** Validates and normalises one job for the add script (also used by sharded.ts). */
  protected prepare(name: unknown, data: unknown, opts: JobOptions | undefined, field: string, telemetry?: TraceCarrier): AddJobArgs {
    v.string(`${field}name`, name);
    const merged = this.opts.defaultJobOptions ? { ...this.opts.defaultJobOptions, ...(opts ?? {}) } : opts;
    const n = normalizeJobOptions(merged, `${field}opts`);
    return {
      id: n.jobId ?? '',
      name: name as string,
      data: v.encodeJson(`${field}data`, data, this.ctx.maxPayloadBytes),
      opts: storedOptions(merged, n, telemetry),
      priority: n.priority,
      lane: n.lane,
      delay: n.delay,
      lifo: n.lifo,
      keepCompleted: n.keepCompleted,
      keepFailed: n.keepFailed,
      dedupId: n.deduplication?.id,
      dedupTtl: n.deduplication?.ttl,
      groupMaxSize: n.groupMaxSize,
    };
  }

  /**
   * Adds a job. With an existing `jobId`, returns that job unchanged. Adds made in the same tick
   * (for example many producers awaiting in parallel) travel together: one script call per
   * 20 jobs, all sent in one round trip, each add resolving with its own job. A lone add is
   * sent at once (on the next tick) and costs one round trip.
   */
  async add(name: NameType, data: DataType, opts?: JobOptions): Promise<Job<DataType, ReturnType, NameType>> {
    this.open();
    const span = startProducerSpan(this.name, String(name));
    let args: AddJobArgs;
    try {
      args = this.prepare(name, data, opts, '', span.carrier);
    } catch (err) {
      span.end(err);
      throw err;
    }
    return new Promise((resolve, reject) => {
      this.pendingAdds.push({
        args,
        resolve: (job) => (span.end(), resolve(job)),
        reject: (err) => (span.end(err), reject(err)),
      });
      if (this.pendingAdds.length === 1) process.nextTick(() => void this.flushAdds());
    });
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
        for (const p of pending) p.reject(err);
        return;
      }
      const chunks: PendingAdd[][] = [];
      for (let i = 0; i < pending.length; i += ADD_COALESCE) chunks.push(pending.slice(i, i + ADD_COALESCE));
      await Promise.all(chunks.map(async (chunk) => {
        try {
          const replies = await scripts.add(this.ctx, chunk.map((p) => p.args));
          replies.forEach((r, k) => {
            const { args, resolve, reject } = chunk[k];
            if (r.groupFull) reject(new GroupMaxSizeExceededError(args.lane, args.groupMaxSize!));
            else if (r.created) resolve(this.snapshot(r.id, args));
            // Not created: an existing jobId, or deduplicated (a throttle holder may be gone).
            else this.getJob(r.id).then((j) => resolve(j ?? this.snapshot(r.id, args)), reject);
          });
        } catch (err) {
          for (const p of chunk) p.reject(err);
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
    const prepared = jobs.map((j, i) => {
      v.plainObject(`jobs[${i}]`, j);
      try {
        return this.prepare(j.name, j.data, j.opts, `jobs[${i}].`, telemetry);
      } catch (e) {
        // Option checks name the bare option ('priority'); in a bulk, say which job it was.
        if (e instanceof ValidationError && !e.field.startsWith('jobs[')) throw new ValidationError(`jobs[${i}].opts.${e.field}`, e.expected, e.got);
        throw e;
      }
    });
    if (this.setup) await this.setup;
    // Every batch is one bounded script call; all of them go out in one round trip. Each batch's
    // jobs are built as its reply arrives, while Redis runs the next batches.
    const batches: AddJobArgs[][] = [];
    for (let i = 0; i < prepared.length; i += ADD_BATCH) batches.push(prepared.slice(i, i + ADD_BATCH));
    const built = await Promise.all(batches.map(async (batch) => {
      const replies = await scripts.add(this.ctx, batch);
      const full = replies.findIndex((r) => r.groupFull);
      // group.maxSize in a bulk (BullMQ Pro has none): the other jobs are added, then the bulk rejects.
      if (full >= 0) throw new GroupMaxSizeExceededError(batch[full]!.lane, batch[full]!.groupMaxSize!);
      const existing = replies.filter((r) => !r.created).map((r) => r.id);
      const loaded = existing.length === 0 ? undefined : new Map((await loadJobs(this.ctx, existing)).map((j) => [j.id, j]));
      return replies.map((r, k) => (r.created ? this.snapshot(r.id, batch[k]!) : loaded?.get(r.id) ?? this.snapshot(r.id, batch[k]!)) as Job<DataType, ReturnType, NameType>);
    }));
    return built.flat();
  }

  /** A Job built from what was just written, without reading it back. */
  private snapshot(id: string, a: AddJobArgs): Job<DataType, ReturnType, NameType> {
    const h: Record<string, string> = {
      name: a.name, data: a.data, opts: a.opts, prio: String(a.priority), lane: a.lane, delay: String(a.delay),
      att: '0', made: '0', ts: String(Date.now()), st: a.delay > 0 ? 'd' : 'w',
    };
    if (a.lifo) h.lifo = '1';
    // Retention as the hash holds it (Job shows it as removeOnComplete / removeOnFail).
    const [kc, ka] = a.keepCompleted;
    const [kfc, kfa] = a.keepFailed;
    if (kc !== DEFAULT_KEEP_COMPLETED.count) h.kc = String(kc);
    if (ka > 0) h.ka = String(ka);
    if (kfc !== DEFAULT_KEEP_FAILED.count) h.kfc = String(kfc);
    if (kfa > 0) h.kfa = String(kfa);
    return Job.fromHash(this.ctx, id, h) as Job<DataType, ReturnType, NameType>;
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

  /** Stops every worker from claiming (checked inside the claim script). */
  async pause(): Promise<void> {
    this.open();
    await scripts.pause(this.ctx, true);
  }

  async resume(): Promise<void> {
    this.open();
    await scripts.pause(this.ctx, false);
  }

  /** Frees a deduplication id at once, whatever holds it. Returns whether it was held. */
  async removeDeduplicationKey(id: string): Promise<boolean> {
    v.nonEmptyString('deduplication id', id);
    const held = (await this.getDeduplicationJobId(id)) !== null;
    await this.ctx.client.multi().hdel(this.keys.dedup, id).zrem(this.keys.dedupx, id).exec();
    return held;
  }

  /**
   * Queue-wide rate limit, shared by every worker: at most `max` jobs start per `duration` ms
   * (meta rlmax/rldur, checked inside the claim). Workers with a `limiter` option set the same.
   */
  async setGlobalRateLimit(max: number, duration: number): Promise<void> {
    v.integerIn('max', max, 1, 1_000_000_000);
    v.integerIn('duration', duration, 1, 86_400_000);
    await this.ctx.client.hset(this.keys.meta, 'rlmax', max, 'rldur', duration);
  }

  /** Removes the queue-wide rate limit (and any block set by worker.rateLimit). */
  async removeGlobalRateLimit(): Promise<void> {
    await this.ctx.client.multi().hdel(this.keys.meta, 'rlmax', 'rldur').del(this.keys.rate).exec();
  }

  /** Most jobs of the queue active at once across all workers; null removes the limit. */
  async setGlobalConcurrency(n: number | null): Promise<void> {
    if (n === null) await this.ctx.client.hdel(this.keys.meta, 'conc');
    else await this.ctx.client.hset(this.keys.meta, 'conc', v.positiveInt('concurrency', n));
  }

  /** Removes all waiting jobs (and delayed ones with delayed=true), in bounded batches. */
  async drain(delayed = false): Promise<number> {
    this.open();
    v.boolean('delayed', delayed);
    let cursor = '';
    let removed = 0;
    for (;;) {
      const r = await scripts.drain(this.ctx, { budget: BATCH, delayed, cursor });
      removed += r.removed;
      cursor = r.cursor;
      if (r.done) return removed;
    }
  }

  /**
   * Removes up to `limit` jobs (0 = no limit) of a state that are older than `grace` ms
   * (finish time for completed/failed, creation time otherwise). Returns the removed ids.
   */
  async clean(grace: number, limit: number, state: CleanState = 'completed'): Promise<string[]> {
    this.open();
    v.nonNegativeInt('grace', grace);
    v.nonNegativeInt('limit', limit);
    const codes = { completed: 'c', failed: 'f', delayed: 'd', wait: 'w', waiting: 'w', prioritized: 'w' } as const;
    const code = typeof state === 'string' && Object.hasOwn(codes, state) ? codes[state] : undefined;
    if (!code) v.fail('state', 'one of completed, failed, delayed, wait, waiting, prioritized', state);
    const [sec, usec] = await this.ctx.client.time();
    const cutoff = Number(sec) * 1000 + Math.floor(Number(usec) / 1000) - grace;
    const max = limit === 0 ? Number.MAX_SAFE_INTEGER : limit;
    const removed: string[] = [];
    let start = 0;
    while (removed.length < max) {
      const want = Math.min(CLEAN_BATCH, max - removed.length);
      const candidates = await this.cleanCandidates(state, cutoff, start, want);
      if (candidates.length === 0) break;
      const res = await scripts.remove(this.ctx, { ids: candidates, state: code, cutoffMs: cutoff });
      let kept = 0;
      res.forEach((r, i) => (r === 1 ? removed.push(candidates[i]) : kept++));
      start += kept; // ids that stayed (filtered out) are skipped on the next page
      if (candidates.length < want) break;
    }
    return removed;
  }

  private async cleanCandidates(state: CleanState, cutoff: number, start: number, count: number): Promise<string[]> {
    const c = this.ctx.client;
    if (state === 'completed' || state === 'failed') {
      const key = state === 'completed' ? this.keys.completed : this.keys.failed;
      return c.zrangebyscore(key, '-inf', cutoff, 'LIMIT', start, count);
    }
    if (state === 'delayed') return c.zrange(this.keys.delayed, start, start + count - 1);
    // Inspection files priority-0 ready jobs of a paused queue under 'paused'; they are still
    // the waiting jobs to clean.
    const which = state === 'prioritized' ? 'prioritized' : (await this.isPaused()) ? 'paused' : 'waiting';
    const jobs = await getJobs(this.ctx, [which], start, start + count - 1, true);
    return jobs.map((j) => j.id);
  }

  /**
   * Deletes the queue: every job, lane setting and event. Refused with ActiveJobsError while jobs
   * are active unless `force`. Pauses the queue first; works in bounded batches.
   */
  async obliterate(opts: { force?: boolean; count?: number } = {}): Promise<void> {
    this.open();
    v.plainObject('opts', opts);
    const force = opts.force === undefined ? false : v.boolean('force', opts.force);
    const budget = opts.count === undefined ? BATCH : v.positiveInt('count', opts.count);
    if (!force && (await this.ctx.client.zcard(this.keys.active)) > 0) throw new ActiveJobsError(this.name);
    const wasPaused = await this.isPaused();
    await scripts.pause(this.ctx, true);
    for (;;) {
      const r = await scripts.obliterate(this.ctx, { budget, force });
      if (typeof r === 'number') {
        // A claim slipped in between the check and the pause: nothing was deleted, so leave the
        // queue as it was.
        if (!wasPaused) await scripts.pause(this.ctx, false);
        throw new ActiveJobsError(this.name);
      }
      if (r.done) return;
    }
  }

  /** Removes one job (refused while active). */
  async remove(id: string): Promise<void> {
    v.existingJobId(id);
    const [r] = await scripts.remove(this.ctx, { ids: [id] });
    if (r === -3) throw new InvalidStateError(id, 'remove', 'is active; it can be removed once it finishes');
    if (r < 0) throw errorFromCode(r, 'remove', id);
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
    return (await schedulers.upsertJobScheduler(this.ctx, this.opts.defaultJobOptions, id, repeat, template)) as
      Job<DataType, ReturnType, NameType> | undefined;
  }

  /** Removes a scheduler and its next job if that has not started. Returns whether it existed. */
  async removeJobScheduler(id: string): Promise<boolean> {
    this.open();
    return schedulers.removeJobScheduler(this.ctx.client, this.keys, id);
  }

  /** Closes the connection if this queue opened it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Adds already accepted are sent before the connection closes.
    await this.flushAdds();
    await this.flushing;
    await closeConnection(this.conn);
  }
}
