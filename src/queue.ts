/**
 * Queue: the producer and admin side. BullMQ names: add, addBulk, getJob, getJobs,
 * getJobCounts, pause, resume, drain, clean, obliterate, close; plus lanes.
 */
import { EventEmitter } from 'node:events';
import { checkEvictionPolicy, closeConnection, openConnection, type Connection, type ConnectionInput } from './connection.js';
import { ClosedError, errorFromCode, ActiveJobsError, InvalidStateError } from './errors.js';
import { Job, type JobContext } from './job.js';
import { queueKeys, type QueueKeys } from './keys.js';
import { LaneControls } from './lanes.js';
import { getJobCounts, getJobs, loadJobs, type JobCounts, type JobStateName } from './inspect.js';
import { DEFAULT_MAX_PAYLOAD, normalizeJobOptions, storedOptions, type JobOptions } from './options.js';
import { scripts, type AddJobArgs } from './scripts/index.js';
import * as v from './validate.js';

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
}

/** Jobs per Redis call for maintenance work (drain, clean, obliterate, bulk removal). */
const BATCH = 1000;
/** Most jobs per addBulk call to Redis; bigger bulks are split (still one round trip per batch). */
const ADD_BATCH = 1000;

export interface BulkJob<D = any> {
  name: string;
  data: D;
  opts?: JobOptions;
}

export type CleanState = 'completed' | 'failed' | 'delayed' | 'wait' | 'waiting' | 'prioritized';

export class Queue<DataType = any, ReturnType = any, NameType extends string = string> extends EventEmitter {
  readonly name: string;
  readonly keys: QueueKeys;
  readonly lanes: LaneControls;
  readonly opts: QueueOptions;
  private readonly conn: Connection;
  private readonly ctx: JobContext;
  private closed = false;

  constructor(name: string, opts: QueueOptions = {}) {
    super();
    v.queueName(name);
    v.plainObject('opts', opts);
    const prefix = opts.prefix === undefined ? undefined : v.prefix(opts.prefix);
    if (opts.defaultJobOptions !== undefined) normalizeJobOptions(opts.defaultJobOptions, 'defaultJobOptions');
    const maxPayloadBytes = opts.maxPayloadBytes === undefined ? DEFAULT_MAX_PAYLOAD : v.positiveInt('maxPayloadBytes', opts.maxPayloadBytes);
    const keepLogs = opts.keepLogs === undefined ? 0 : v.nonNegativeInt('keepLogs', opts.keepLogs);
    this.name = name;
    this.opts = opts;
    this.keys = queueKeys(name, prefix);
    this.conn = openConnection(opts.connection);
    this.ctx = { client: this.conn.client, keys: this.keys, maxPayloadBytes, keepLogs };
    this.lanes = new LaneControls(this.ctx);
    void checkEvictionPolicy(this.conn.client);
  }

  /** The ioredis client this queue uses. */
  get client() {
    return this.conn.client;
  }

  private open(): void {
    if (this.closed) throw new ClosedError(`Queue ${JSON.stringify(this.name)}`);
  }

  private prepare(name: unknown, data: unknown, opts: JobOptions | undefined, field: string): AddJobArgs {
    v.string(`${field}name`, name);
    const merged = this.opts.defaultJobOptions ? { ...this.opts.defaultJobOptions, ...(opts ?? {}) } : opts;
    const n = normalizeJobOptions(merged, `${field}opts`);
    return {
      id: n.jobId ?? '',
      name: name as string,
      data: v.encodeJson(`${field}data`, data, this.ctx.maxPayloadBytes),
      opts: storedOptions(merged, n),
      priority: n.priority,
      lane: n.lane,
      delay: n.delay,
      lifo: n.lifo,
      keepCompleted: n.keepCompleted,
      keepFailed: n.keepFailed,
    };
  }

  /** Adds a job. With an existing `jobId`, returns that job unchanged. One round trip. */
  async add(name: NameType, data: DataType, opts?: JobOptions): Promise<Job<DataType, ReturnType, NameType>> {
    this.open();
    const args = this.prepare(name, data, opts, '');
    const [r] = await scripts.add(this.ctx, [args]);
    if (!r.created) return (await this.getJob(r.id))!;
    return this.snapshot(r.id, args);
  }

  /** Adds many jobs; one round trip per 1,000. Validates all of them before writing any. */
  async addBulk(jobs: ReadonlyArray<BulkJob<DataType>>): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    this.open();
    if (!Array.isArray(jobs)) v.fail('jobs', 'an array of { name, data, opts }', jobs);
    const prepared = jobs.map((j, i) => {
      v.plainObject(`jobs[${i}]`, j);
      return this.prepare(j.name, j.data, j.opts, `jobs[${i}].`);
    });
    const out: Array<Job<DataType, ReturnType, NameType>> = [];
    for (let i = 0; i < prepared.length; i += ADD_BATCH) {
      const batch = prepared.slice(i, i + ADD_BATCH);
      const replies = await scripts.add(this.ctx, batch);
      const existing = replies.filter((r) => !r.created).map((r) => r.id);
      const loaded = new Map((await loadJobs(this.ctx, existing)).map((j) => [j.id, j]));
      replies.forEach((r, k) => {
        out.push((r.created ? this.snapshot(r.id, batch[k]) : loaded.get(r.id)) as Job<DataType, ReturnType, NameType>);
      });
    }
    return out;
  }

  /** A Job built from what was just written, without reading it back. */
  private snapshot(id: string, a: AddJobArgs): Job<DataType, ReturnType, NameType> {
    return new Job(this.ctx, id, {
      name: a.name, data: a.data, opts: a.opts, prio: String(a.priority), lane: a.lane, delay: String(a.delay),
      att: '0', made: '0', ts: String(Date.now()), st: a.delay > 0 ? 'd' : 'w',
    }) as Job<DataType, ReturnType, NameType>;
  }

  async getJob(id: string): Promise<Job<DataType, ReturnType, NameType> | undefined> {
    v.existingJobId(id);
    return (await Job.fromId(this.ctx, id)) as Job<DataType, ReturnType, NameType> | undefined;
  }

  /** See inspect.getJobs for the order of each state. */
  getJobs(states: JobStateName | JobStateName[] = [], start = 0, end = -1, asc = false): Promise<Job[]> {
    return getJobs(this.ctx, typeof states === 'string' ? [states] : states, start, end, asc);
  }

  getJobCounts(...states: JobStateName[]): Promise<Partial<JobCounts>> {
    return getJobCounts(this.ctx.client, this.keys, states);
  }

  /** Sum of the counts of the given states. */
  async getJobCountByTypes(...states: JobStateName[]): Promise<number> {
    const c = await this.getJobCounts(...states);
    return Object.values(c).reduce((a, b) => a + (b ?? 0), 0);
  }

  async count(): Promise<number> {
    return this.getJobCountByTypes('waiting', 'prioritized', 'paused', 'delayed');
  }

  /** Re-scores a job; a waiting job moves to the back of its new tier. */
  async changePriority(id: string, priority: number, opts: { lifo?: boolean } = {}): Promise<void> {
    v.existingJobId(id);
    v.priority(priority);
    const lifo = opts.lifo === undefined ? false : v.boolean('lifo', opts.lifo);
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

  async isPaused(): Promise<boolean> {
    return (await this.ctx.client.hget(this.keys.meta, 'paused')) === '1';
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
    const code = ({ completed: 'c', failed: 'f', delayed: 'd', wait: 'w', waiting: 'w', prioritized: 'w' } as const)[state];
    if (!code) v.fail('state', 'one of completed, failed, delayed, wait, waiting, prioritized', state);
    const [sec, usec] = await this.ctx.client.time();
    const cutoff = Number(sec) * 1000 + Math.floor(Number(usec) / 1000) - grace;
    const max = limit === 0 ? Number.MAX_SAFE_INTEGER : limit;
    const removed: string[] = [];
    let start = 0;
    while (removed.length < max) {
      const want = Math.min(BATCH, max - removed.length);
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
    const which = state === 'prioritized' ? 'prioritized' : 'waiting';
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
    await scripts.pause(this.ctx, true);
    for (;;) {
      const r = await scripts.obliterate(this.ctx, { budget, force });
      if (typeof r === 'number') throw new ActiveJobsError(this.name);
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

  /** Closes the connection if this queue opened it. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await closeConnection(this.conn);
  }
}
