/**
 * Job: a snapshot of one job's hash plus methods that act on it through the transition
 * scripts. Field names follow BullMQ (id, name, data, opts, attemptsMade, progress,
 * returnvalue, failedReason, stacktrace, timestamp, processedOn, finishedOn).
 */
import { DEFAULT_KEEP_COMPLETED, DEFAULT_KEEP_FAILED, type JobOptions, type KeepJobs } from './options.js';
import { scripts, type ScriptContext } from './scripts/index.js';
import { ClosedError, errorFromCode, InvalidStateError, JobNotFoundError } from './errors.js';
import type { QueueEvents } from './queue-events.js';
import { jobKey, logsKey } from './keys.js';
import { readDependencies, type Dependencies } from './flows.js';
import * as v from './validate.js';
import * as moves from './worker-moves.js';
import type { NextJobTuple } from './worker-moves.js';

export type JobState = 'waiting' | 'prioritized' | 'active' | 'delayed' | 'completed' | 'failed' | 'waiting-children' | 'unknown';

/** What a Job needs to reach Redis. */
export interface JobContext extends ScriptContext {
  /** Largest JSON payload accepted (bytes) for data, progress and return values. */
  readonly maxPayloadBytes: number;
  /** Most log lines kept per job (0 = all). */
  readonly keepLogs: number;
  /** Called after a progress update is stored (the Worker re-emits it as its 'progress' event). */
  readonly onProgress?: (job: Job, progress: unknown) => void;
}

const STATE: Record<string, JobState> = { a: 'active', d: 'delayed', c: 'completed', f: 'failed', h: 'waiting-children' };

function parseJson(s: string | undefined): unknown {
  if (s === undefined || s === '') return undefined;
  try {
    return JSON.parse(s);
  } catch {
    return s;
  }
}

const num = (s: string | undefined): number | undefined => (s === undefined || s === '' ? undefined : Number(s));

/**
 * A retention option as job.opts shows it, from the hash's count/age fields (absent = the
 * default, shown as nothing): true = keep none, false = keep all, n = keep the newest n,
 * { age (s), count? } with an age limit.
 */
function retentionOption(count: string | undefined, ageMs: string | undefined, dflt: KeepJobs): KeepJobs | boolean | number | undefined {
  const age = num(ageMs);
  if (age !== undefined && age > 0) {
    const c = num(count) ?? dflt.count; // an absent count is the default one
    return c === undefined || c < 0 ? { age: age / 1000 } : { age: age / 1000, count: c };
  }
  if (count === undefined || count === '') return undefined;
  const c = Number(count);
  return c === 0 ? true : c < 0 ? false : c;
}

export class Job<DataType = any, ReturnType = any, NameType extends string = string> {
  readonly id: string;
  name: NameType;
  /** The stored JSON of `data`, until `data` is first read (see the accessor). */
  #rawData: string | undefined;
  #data: DataType | undefined;
  /** Options as given at add (plus normalised attempts/backoff), with the current priority and lane. */
  opts: JobOptions;
  priority: number;
  lane: string;
  /** Delay (ms) the job was added with. */
  delay: number;
  /** Attempts that finished (completed or failed). */
  attemptsMade: number;
  /** Attempts started (claims). It is the job's fencing token while it is active. */
  attemptsStarted: number;
  /** Times the job's lease expired and it was recovered. */
  stalledCounter: number;
  progress: unknown;
  returnvalue: ReturnType | undefined;
  failedReason: string | undefined;
  stacktrace: string[];
  /** Creation time, ms (Redis clock). */
  timestamp: number;
  processedOn: number | undefined;
  finishedOn: number | undefined;
  /** Internal state letter at the time of the snapshot. */
  protected stateCode: string | undefined;
  /** A flow child's parent: its id, queue name and key prefix (docs/schedulers-and-flows.md). */
  parent: { id: string; queue: string; prefix: string } | undefined;
  /** The parent's job key (BullMQ's parentKey). */
  parentKey: string | undefined;
  /** Id of the job scheduler that made this job (BullMQ's repeatJobKey). */
  repeatJobKey: string | undefined;

  constructor(
    protected readonly ctx: JobContext,
    id: string,
    h: Record<string, string>,
  ) {
    this.id = id;
    this.name = (h.name ?? '') as NameType;
    this.#rawData = h.data;
    this.priority = Number(h.prio ?? 0);
    this.lane = h.lane ?? 'default';
    // attempts 1 is not stored, nor are the options the hash has fields for (options.ts
    // storedOptions); job.opts shows them like BullMQ's.
    this.opts = { attempts: 1, ...((parseJson(h.opts) as JobOptions) ?? {}), priority: this.priority, lane: this.lane };
    if (h.delay !== undefined && h.delay !== '0') this.opts.delay = Number(h.delay);
    if (h.lifo === '1') this.opts.lifo = true;
    const keepDone = retentionOption(h.kc, h.ka, DEFAULT_KEEP_COMPLETED);
    if (keepDone !== undefined) this.opts.removeOnComplete = keepDone;
    const keepFailed = retentionOption(h.kfc, h.kfa, DEFAULT_KEEP_FAILED);
    if (keepFailed !== undefined) this.opts.removeOnFail = keepFailed;
    this.delay = Number(h.delay ?? 0);
    this.attemptsMade = Number(h.made ?? 0);
    this.attemptsStarted = Number(h.att ?? 0);
    this.stalledCounter = Number(h.stc ?? 0);
    this.progress = parseJson(h.prog) ?? 0;
    this.returnvalue = parseJson(h.rv) as ReturnType | undefined;
    this.failedReason = h.err;
    this.stacktrace = (parseJson(h.stack) as string[] | undefined) ?? [];
    this.timestamp = Number(h.ts ?? 0);
    this.processedOn = num(h.pOn);
    this.finishedOn = num(h.fOn);
    this.stateCode = h.st;
    this.parentKey = h.pk;
    this.parent = h.pid === undefined ? undefined : { id: h.pid, queue: h.pq ?? '', prefix: h.ppx ?? '' };
    this.repeatJobKey = h.sid;
  }

  /**
   * The job's data. Parsed from its stored JSON on first read, so a job whose data is never
   * looked at (a processor that needs only the id or name, the jobs addBulk returns) costs no
   * parse. Assigning replaces it (locally; `updateData` stores it).
   */
  get data(): DataType {
    if (this.#rawData !== undefined) {
      this.#data = parseJson(this.#rawData) as DataType;
      this.#rawData = undefined;
    }
    return this.#data as DataType;
  }

  set data(value: DataType) {
    this.#rawData = undefined;
    this.#data = value;
  }

  /** @internal Builds a Job from its stored hash (HGETALL as an object). */
  static fromHash(ctx: JobContext, id: string, h: Record<string, string>): Job {
    return new Job(ctx, id, h);
  }

  /** @internal Builds a Job from a flat field/value list (HGETALL as an array). */
  static fromFields(ctx: JobContext, id: string, fields: readonly string[]): Job {
    const h: Record<string, string> = {};
    for (let i = 0; i < fields.length; i += 2) h[fields[i]] = fields[i + 1];
    return Job.fromHash(ctx, id, h);
  }

  /** Reads a job; undefined when it does not exist. */
  static async fromId(ctx: JobContext, id: string): Promise<Job | undefined> {
    const h = await ctx.client.hgetall(jobKey(ctx.keys, id));
    if (!h || Object.keys(h).length === 0) return undefined;
    return Job.fromHash(ctx, id, h);
  }

  /** The queue's name. */
  get queueName(): string {
    return this.ctx.keys.queue;
  }

  private check(code: number, op: string): void {
    if (code < 0) throw errorFromCode(code, op, this.id, this.ctx.keys.queue);
  }

  /** Stores progress (a number or any JSON value) and emits a `progress` event. */
  async updateProgress(progress: number | object): Promise<void> {
    const json = v.encodeJson('progress', progress, this.ctx.maxPayloadBytes);
    this.check(await scripts.progress(this.ctx, { id: this.id, progress: json }), 'updateProgress');
    this.progress = progress;
    this.ctx.onProgress?.(this, progress);
  }

  /** Appends a line to the job's log. Returns the number of lines kept. */
  async log(line: string): Promise<number> {
    v.string('log line', line, this.ctx.maxPayloadBytes);
    const n = await scripts.addLog(this.ctx, { id: this.id, line, keep: this.ctx.keepLogs });
    this.check(n, 'log');
    return n;
  }

  /** Replaces the job's data. */
  async updateData(data: DataType): Promise<void> {
    const json = v.encodeJson('data', data, this.ctx.maxPayloadBytes);
    this.check(await scripts.updateData(this.ctx, { id: this.id, data: json }), 'updateData');
    this.data = data;
  }

  /**
   * Changes the priority. A waiting job moves to the back of its new tier (front with
   * `lifo: true`); a delayed or active job keeps it for when it is next ready.
   */
  async changePriority(opts: { priority?: number; lifo?: boolean }): Promise<void> {
    const o = v.plainObject('opts', opts);
    const priority = o.priority === undefined ? 0 : v.priority(o.priority);
    const lifo = o.lifo === undefined ? false : v.boolean('lifo', o.lifo);
    this.check(await scripts.changePriority(this.ctx, { id: this.id, priority, lifo }), 'changePriority');
    this.priority = priority;
    this.opts.priority = priority;
  }

  /** Moves a waiting or delayed job to another lane (it keeps its arrival place). */
  async moveToLane(lane: string): Promise<void> {
    v.laneName(lane);
    this.check(await scripts.moveToLane(this.ctx, { id: this.id, lane }), 'moveToLane');
    this.lane = lane;
    this.opts.lane = lane;
  }

  /** Makes a delayed job ready now. */
  async promote(): Promise<void> {
    this.check(await scripts.promote(this.ctx, this.id), 'promote');
  }

  /** Deletes the job. Refused (InvalidStateError) while it is active. */
  async remove(): Promise<void> {
    const [r] = await scripts.remove(this.ctx, { ids: [this.id] });
    if (r === -3) throw new InvalidStateError(this.id, 'remove', 'is active; it can be removed once it finishes');
    this.check(r, 'remove');
  }

  /** Moves a failed (default) or completed job back to waiting with its attempts reset. */
  async retry(state: 'failed' | 'completed' = 'failed'): Promise<void> {
    if (state !== 'failed' && state !== 'completed') v.fail('state', "'failed' or 'completed'", state);
    this.check(await scripts.retry(this.ctx, this.id, state), 'retry');
  }

  /** Current state, read from Redis. */
  async getState(): Promise<JobState> {
    const [st, prio] = await this.ctx.client.hmget(jobKey(this.ctx.keys, this.id), 'st', 'prio');
    return stateName(st ?? undefined, Number(prio ?? 0));
  }

  /**
   * Resolves with the return value when the job completes; rejects with an Error whose message
   * is the failed reason when it fails for good (an attempt that will be retried does not
   * settle it). `queueEvents` must read this job's queue and be running. It subscribes first
   * and reads the job's state after, so a finish in between is never missed. `ttl` (ms):
   * reject with a timeout error after that long. A job that does not exist (never added, or
   * already deleted, e.g. by `removeOnComplete: true`) rejects with JobNotFoundError. When the
   * return value was too big for the event (`maxEventValueBytes`), it is read from the job.
   */
  waitUntilFinished(queueEvents: QueueEvents, ttl?: number): Promise<ReturnType> {
    const qe = queueEvents as Partial<QueueEvents> | undefined;
    if (!qe || typeof qe.on !== 'function' || typeof qe.waitUntilReady !== 'function' || !qe.keys) {
      v.fail('queueEvents', 'a QueueEvents instance', queueEvents);
    }
    if (qe.keys.events !== this.ctx.keys.events) {
      v.fail('queueEvents', `a QueueEvents of queue ${JSON.stringify(this.ctx.keys.queue)} (same prefix)`, qe.name);
    }
    if (ttl !== undefined) v.positiveInt('ttl', ttl);
    const events = queueEvents;
    const id = this.id;
    const jk = jobKey(this.ctx.keys, id);
    const client = this.ctx.client;
    return new Promise<ReturnType>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (fn: () => void) => {
        if (settled) return;
        settled = true;
        if (timer) clearTimeout(timer);
        events.off(`completed:${id}`, onCompleted);
        events.off(`failed:${id}`, onFailed);
        unsubscribeClosed();
        fn();
      };
      const fromHash = () =>
        client.hget(jk, 'rv').then(
          (rv) => finish(() => resolve(parseJson(rv ?? undefined) as ReturnType)),
          (err: unknown) => finish(() => reject(err)),
        );
      const onCompleted = (args: { returnvalue?: unknown; truncated?: string }) => {
        if (args.truncated === '1' && !('returnvalue' in args)) void fromHash();
        else finish(() => resolve(args.returnvalue as ReturnType));
      };
      const onFailed = (args: { failedReason?: string }) => finish(() => reject(new Error(args.failedReason ?? '')));
      const onClosed = () => finish(() => reject(new ClosedError('QueueEvents')));
      events.on(`completed:${id}`, onCompleted);
      events.on(`failed:${id}`, onFailed);
      const unsubscribeClosed = events.whenClosed(onClosed);
      if (ttl !== undefined) {
        timer = setTimeout(
          () => finish(() => reject(new Error(`Job wait ${this.name} timed out before finishing, no finish notification arrived after ${ttl}ms (id=${id})`))),
          ttl,
        );
      }
      // Only now read the state: the reader's position is fixed (waitUntilReady), so any finish
      // after the read below is delivered to the listeners above.
      void (async () => {
        await events.waitUntilReady();
        const [st, rv, err] = await client.hmget(jk, 'st', 'rv', 'err');
        if (st === 'c') finish(() => resolve(parseJson(rv ?? undefined) as ReturnType));
        else if (st === 'f') finish(() => reject(new Error(err ?? '')));
        else if (st === null) finish(() => reject(new JobNotFoundError(id, 'waitUntilFinished')));
      })().catch((e: unknown) => finish(() => reject(e)));
    });
  }

  /** A flow parent's completed children: child job key → return value. */
  async getChildrenValues<T = any>(): Promise<Record<string, T>> {
    return (await readDependencies(this.ctx.client, this.ctx.keys, this.id)).processed as Record<string, T>;
  }

  /** A flow parent's children by outcome (processed, unprocessed, ignored, failed, removed). */
  getDependencies(): Promise<Dependencies> {
    return readDependencies(this.ctx.client, this.ctx.keys, this.id);
  }

  /** Log lines, oldest first. */
  async getLogs(start = 0, end = -1): Promise<string[]> {
    return this.ctx.client.lrange(logsKey(this.ctx.keys, this.id), start, end);
  }

  toJSON(): Record<string, unknown> {
    return {
      id: this.id, name: this.name, data: this.data, opts: this.opts, lane: this.lane, priority: this.priority,
      progress: this.progress, attemptsMade: this.attemptsMade, attemptsStarted: this.attemptsStarted,
      stalledCounter: this.stalledCounter, returnvalue: this.returnvalue, failedReason: this.failedReason,
      stacktrace: this.stacktrace, timestamp: this.timestamp, processedOn: this.processedOn, finishedOn: this.finishedOn,
      delay: this.delay,
    };
  }

  // --- lock-holder moves (worker-side; see worker-moves.ts) ---
  /** Completes the job held under `token`; with fetchNext, claims the next job for the same token in the same call. */
  moveToCompleted(returnValue: ReturnType, token: string, fetchNext = true): Promise<NextJobTuple | []> { return moves.moveToCompleted(this, this.ctx, returnValue, token, fetchNext); }
  /** Fails (or retries, by attempts and backoff) the job held under `token`. */
  moveToFailed<E extends Error>(err: E, token: string, fetchNext = false): Promise<NextJobTuple | []> { return moves.moveToFailed(this, this.ctx, err, token, fetchNext); }
  /** Parks the active job until `timestamp` (ms) without counting the attempt (a step job). */
  moveToDelayed(timestamp: number, token?: string): Promise<void> { return moves.moveToDelayed(this, this.ctx, timestamp, token); }
  /** Hands the active job back to waiting (front of its tier) without counting the attempt. */
  moveToWait(token?: string): Promise<number> { return moves.moveToWait(this, this.ctx, token); }
  /** Parks the active job until its (given) pending children finish; false when none is pending. */
  moveToWaitingChildren(token: string, opts: { child?: { id: string; queue: string } } = {}): Promise<boolean> { return moves.moveToWaitingChildren(this, this.ctx, token, opts); }
  /** Renews the lease of the job held under `token` for `duration` ms: 1, or 0 when not held. */
  extendLock(token: string, duration: number): Promise<number> { return moves.extendLock(this, this.ctx, token, duration); }
  /** BullMQ's Job.fromJSON for the jobData of a moveToCompleted/moveToFailed reply. */
  static fromJSON(source: unknown, json: Record<string, unknown>, jobId?: string): Job { return moves.jobFromJSON(source, json, jobId); }
}

/** Maps the internal state letter to BullMQ's state names. */
export function stateName(st: string | undefined, priority: number): JobState {
  if (st === undefined) return 'unknown';
  if (st === 'w') return priority > 0 ? 'prioritized' : 'waiting';
  return STATE[st] ?? 'unknown';
}
