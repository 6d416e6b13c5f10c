/**
 * Job: BullMQ's Job class on echomq. A snapshot of one job's hash plus methods that act on it
 * through the transition scripts. Fields and methods follow BullMQ 6 (docs/migrating-from-bullmq.md
 * lists the differences); the helpers live in job-state.ts (states, errors, the queue
 * argument), job-json.ts (JSON shapes), job-create.ts (create, createBulk, addJob),
 * job-dependencies.ts (flow children) and job-wait.ts (waitUntilFinished, log lines).
 *
 * Two ways in: BullMQ's `new Job(queue, name, data, opts, id)` (an unsaved job; `Job.create`
 * saves one), and the internal `Job.fromHash` / `Job.fromFields`, which every reader and the
 * worker's claim path use. The latter only assigns fields: the hot path builds one per claim.
 */
import { DEFAULT_LANE, type JobOptions } from '../core/options.js';
import { scripts, type ScriptContext } from '../scripts/index.js';
import { jobScripts } from '../scripts/job-scripts.js';
import { layoutReady } from '../scripts/runner.js';
import { JobNotFoundError, Code } from '../core/errors.js';
import type { QueueEvents } from '../events/queue-events.js';
import { jobKey, logicalJobName, logsKey, queueKeys, type QueueKeys } from '../core/keys.js';
import { normalizeBackoff } from '../core/backoff.js';
import * as v from '../core/validate.js';
import * as moves from './job-moves.js';
import type { NextJobTuple } from './job-moves.js';
import { jobContextOf, jobError, lockedError, missingParentError, stateName, withBullText, type JobState } from './job-state.js';
import {
  jobAsJSON, jobStateFromJson, jobToJSON, num, optsFromJSON, parseJson, storedJobOptions, storedParent, type JobJson, type JobJsonSandbox, type ParentKeys,
} from './job-json.js';
import * as deps from './job-dependencies.js';
import { reopenChild } from './flows.js';
import { addLog, waitUntilFinished } from './job-wait.js';
import { createJobs, saveJob, type JobMaker } from './job-create.js';

export { stateName, jobContextOf, type JobState } from './job-state.js';
export type { JobJson, JobJsonSandbox, ParentKeys } from './job-json.js';
export type { DependenciesOpts, DependencyOpts, JobDependencies, DependencyCounts } from './job-dependencies.js';

export { PRIORITY_LIMIT } from '../core/constants.js';
export type { JobContext } from './job-context.js';
import type { JobContext } from './job-context.js';
import { JobField } from '../core/fields.js';

/** BullMQ's retry options. */
export interface RetryOptions {
  resetAttemptsMade?: boolean;
  resetAttemptsStarted?: boolean;
}

/** Options BullMQ's constructor reads besides the job options echomq stores. */
type ConstructorOptions = JobOptions & { parent?: { id: string; queue: string }; timestamp?: number; repeatJobKey?: string; keepLogs?: number };

/** Where BullMQ emits a job's local events ('progress', 'removed'): the Queue or Worker it came from. */
interface Emitter {
  emit(event: string, ...args: unknown[]): boolean;
}

/** Marks the internal construction from a hash (see fromHash); never exported. */
const FROM_HASH = Symbol('fromHash');

/**
 * The Queue or Worker a job was made through (BullMQ emits 'progress'/'removed' there). Kept
 * beside the job, not in it: jobs of the claim path have none and pay nothing for it.
 */
const owners = new WeakMap<object, Emitter>();

/** @internal A flat field/value list (HGETALL as an array) as an object. */
export function fieldRecord(fields: readonly string[]): Record<string, string> {
  const h: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) h[fields[i]!] = fields[i + 1]!;
  return h;
}

export class Job<DataType = any, ReturnType = any, NameType extends string = string> {
  /** The job's id (undefined on a `new Job(...)` that was given none and is not saved yet, as in BullMQ). */
  id: string;
  name: NameType;
  /** The stored JSON of `data`, until `data` is first read (see the accessor). */
  #rawData: string | undefined;
  #data: DataType | undefined;
  /** Options as given at add (plus normalised attempts/backoff), with the current priority and lane. */
  opts: JobOptions;
  priority: number;
  lane: string;
  /** Delay (ms) the job was added with, or set by changeDelay (0 after promote). */
  delay: number;
  /** Attempts that finished (completed or failed). */
  attemptsMade: number;
  /** Attempts started (claims) since the last retry that reset them. */
  attemptsStarted: number;
  /**
   * attemptsStarted's base after a retry that reset it (retry.lua `atb`): the claim count, which
   * is the fencing token (see Job.tokenOf), is attemptsStarted + atb. Set only when present, so
   * the claim path defines no field for it.
   */
  declare protected atb?: number;
  /** Times the job's lease expired and it was recovered. */
  stalledCounter: number;
  progress: unknown;
  returnvalue: ReturnType;
  failedReason!: string;
  /**
   * BullMQ's deferred failure: set when a child with failParentOnFailure failed (`child
   * <prefix>:<queue>:<id> failed`); a worker that takes the job fails it with this reason.
   */
  declare deferredFailure: string;
  stacktrace: string[];
  /** Creation time, ms (Redis clock). */
  timestamp: number;
  processedOn?: number;
  finishedOn?: number;
  /** Internal state letter at the time of the snapshot. */
  protected stateCode: string | undefined;
  /** A flow child's parent: its id and its queue's logical name (`<prefix>:<queue>`), with its failure policy. */
  parent?: ParentKeys;
  /** The parent's logical name `<prefix>:<queue>:<id>` (BullMQ's parentKey). */
  parentKey?: string;
  /** Id of the job scheduler that made this job (BullMQ's repeatJobKey). */
  repeatJobKey?: string;
  // The fields below are set only when they have a value (declared, so a job built on the
  // claim path does not define them).
  declare deduplicationId?: string;
  /** The lock token while a worker processes the job (set by the worker side). */
  declare token?: string;
  /** Name of the worker that processed the job, when it has one. */
  declare processedBy?: string;
  protected readonly ctx: JobContext;

  constructor(queue: object, name: NameType, data: DataType, opts?: JobOptions, id?: string);
  constructor(queue: unknown, name: unknown, data?: unknown, opts: unknown = {}, id?: string) {
    if (queue === FROM_HASH) {
      // Internal: (FROM_HASH, ctx, id, hash). Plain field assignments only (the claim path).
      const h = opts as Record<string, string>;
      this.ctx = name as JobContext;
      this.id = data as string;
      this.name = (h[JobField.name] ?? '') as NameType;
      this.#rawData = h[JobField.data] ?? '{}';
      this.priority = Number(h[JobField.priority] ?? 0);
      this.lane = h[JobField.lane] ?? DEFAULT_LANE;
      this.opts = storedJobOptions(h);
      this.delay = Number(h[JobField.delay] ?? 0);
      this.attemptsMade = Number(h[JobField.attemptsMade] ?? 0);
      this.attemptsStarted = Number(h[JobField.attemptsStarted] ?? 0);
      if (h[JobField.attemptsStartedBase] !== undefined) {
        this.atb = Number(h[JobField.attemptsStartedBase]);
        this.attemptsStarted -= this.atb;
      }
      this.stalledCounter = Number(h[JobField.stalledCounter] ?? 0);
      this.progress = parseJson(h[JobField.progress]) ?? 0;
      this.returnvalue = (h[JobField.returnValue] === undefined ? null : parseJson(h[JobField.returnValue])) as ReturnType;
      this.failedReason = h[JobField.failedReason] as string;
      this.stacktrace = (parseJson(h[JobField.stacktrace]) as string[] | undefined) ?? [];
      this.timestamp = Number(h[JobField.timestamp] ?? 0);
      this.processedOn = num(h[JobField.processedOn]);
      this.finishedOn = num(h[JobField.finishedOn]);
      this.stateCode = h[JobField.state];
      if (h[JobField.parentId] !== undefined) ({ parentKey: this.parentKey, parent: this.parent } = storedParent(h));
      this.repeatJobKey = h[JobField.schedulerId];
      if (this.opts.deduplication !== undefined) this.deduplicationId = this.opts.deduplication.id;
      if (h[JobField.processedBy] !== undefined) this.processedBy = h[JobField.processedBy];
      if (h[JobField.deferredFailure] !== undefined) this.deferredFailure = `child ${logicalJobName(h[JobField.deferredFailure])} failed`;
      return;
    }
    // BullMQ's constructor: an unsaved job of this queue (Job.create saves one).
    const ctx = jobContextOf(queue);
    this.ctx = ctx;
    if (ctx !== queue) owners.set(this, queue as Emitter);
    const given = (opts ?? {}) as ConstructorOptions;
    const { repeatJobKey, ...rest } = given;
    this.id = id as string;
    this.name = name as NameType;
    this.#data = data as DataType;
    this.opts = { attempts: 0, ...rest };
    this.opts.backoff = normalizeBackoff(given.backoff);
    this.priority = given.priority || 0;
    this.lane = given.lane ?? DEFAULT_LANE;
    this.delay = given.delay as number;
    this.attemptsMade = 0;
    this.attemptsStarted = 0;
    this.stalledCounter = 0;
    this.progress = 0;
    this.returnvalue = null as ReturnType;
    this.stacktrace = null as unknown as string[];
    this.timestamp = given.timestamp ? given.timestamp : Date.now();
    if (given.parent) {
      this.parentKey = `${given.parent.queue}:${given.parent.id}`;
      this.parent = { id: given.parent.id, queueKey: given.parent.queue };
    }
    this.repeatJobKey = repeatJobKey;
    if (given.deduplication !== undefined) this.deduplicationId = given.deduplication.id;
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
    return new Job(FROM_HASH as never, ctx as never, id as never, h as never, undefined);
  }

  /** @internal Builds a Job from a flat field/value list (HGETALL as an array). */
  static fromFields(ctx: JobContext, id: string, fields: readonly string[]): Job {
    return Job.fromHash(ctx, id, fieldRecord(fields));
  }

  /** @internal Reads a job through a context; undefined when it does not exist. */
  static async load(ctx: JobContext, id: string, owner?: object): Promise<Job | undefined> {
    const h = await ctx.client.hgetall(jobKey(ctx.keys, id));
    if (!h || Object.keys(h).length === 0) return undefined;
    const job = Job.fromHash(ctx, id, h);
    if (owner && owner !== ctx) owners.set(job, owner as Emitter);
    return job;
  }

  /** @internal The fencing token of a claimed job (the claim count `att`, never lowered by a retry's reset). */
  static tokenOf(job: Job): string {
    return String(job.atb === undefined ? job.attemptsStarted : job.attemptsStarted + job.atb);
  }

  /** Adds a job to the queue (BullMQ's Job.create: the queue's defaultJobOptions do not apply, as there). */
  static async create<T = any, R = any, N extends string = string>(queue: object, name: N, data: T, opts?: JobOptions): Promise<Job<T, R, N>> {
    return (await createJobs(JOB_MAKER, queue, [{ name, data, opts }], false))[0] as Job<T, R, N>;
  }

  /**
   * Adds several jobs: validated first, then one add-script call per 100 jobs (fewer into many lanes, addBatches). Returns, as
   * BullMQ, a Job per input built from what was sent, with its id; nothing is read back.
   */
  static async createBulk<T = any, R = any, N extends string = string>(
    queue: object, jobs: Array<{ name: N; data: T; opts?: JobOptions }>,
  ): Promise<Array<Job<T, R, N>>> {
    return createJobs(JOB_MAKER, queue, jobs, true) as Promise<Array<Job<T, R, N>>>;
  }

  /** Builds a Job from BullMQ's JobJson (asJSON's shape; data, returnvalue and stacktrace as JSON strings). */
  static fromJSON<T = any, R = any, N extends string = string>(queue: object, json: JobJson, jobId?: string): Job<T, R, N> {
    // The jobData of a moveToCompleted/moveToFailed reply carries the claimed Job itself, so the
    // next job keeps the worker's context (lease renewal, the next fetch): return that one.
    const attached = (json as unknown as { [moves.NEXT_JOB]?: Job<T, R, N> })[moves.NEXT_JOB];
    if (attached && (jobId === undefined || attached.id === jobId)) return attached;
    const j = v.plainObject('json', json) as unknown as JobJson;
    const job = new Job<T, R, N>(queue, j.name as N, JSON.parse(j.data || '{}') as T, j.opts, j.id || jobId);
    return Object.assign(job, jobStateFromJson(j)) as Job<T, R, N>;
  }

  /** Options from their stored JSON in BullMQ's compact form (short names expanded). */
  static optsFromJSON(rawOpts?: string, optsDecode?: Record<string, string>): JobOptions {
    return optsFromJSON(rawOpts, optsDecode);
  }

  /** Reads a job of the queue; undefined when it does not exist (or no id is given). */
  static async fromId<T = any, R = any, N extends string = string>(queue: object, jobId: string): Promise<Job<T, R, N> | undefined> {
    const ctx = jobContextOf(queue);
    if (!jobId) return undefined;
    return (await Job.load(ctx, v.string('jobId', jobId), queue)) as Job<T, R, N> | undefined;
  }

  /** Appends a log line to a job; keeps the newest `keepLogs` lines (all when absent). Returns the number of lines. */
  static async addJobLog(queue: object, jobId: string, logRow: string, keepLogs?: number): Promise<number> {
    return addLog(jobContextOf(queue), v.string('jobId', jobId), logRow, keepLogs);
  }

  /** The queue's name. */
  get queueName(): string {
    return this.ctx.keys.queue;
  }

  /** The queue's key prefix. */
  get prefix(): string {
    return this.ctx.keys.prefix;
  }

  /** BullMQ's logical queue name `<prefix>:<queue>`. */
  get queueQualifiedName(): string {
    return `${this.ctx.keys.prefix}:${this.ctx.keys.queue}`;
  }

  /** The job as a plain object (BullMQ's toJSON: every field, data decoded), plus echomq's `lane`. */
  toJSON(): Record<string, any> {
    return jobToJSON(this);
  }

  /** BullMQ's storage shape (JobJson): data, failedReason, stacktrace and returnvalue JSON-encoded, undefined fields left out. */
  asJSON(): JobJson {
    return jobAsJSON(this, this.#rawData ?? JSON.stringify(this.#data === undefined ? {} : this.#data));
  }

  /** asJSON plus the queue's names, as BullMQ hands a job to a sandboxed processor. */
  asJSONSandbox(): JobJsonSandbox {
    return { ...this.asJSON(), queueName: this.queueName, queueQualifiedName: this.queueQualifiedName, prefix: this.prefix };
  }

  /** BullMQ's toFlowEntry: the job's stored shape and where it goes, without writing anything. */
  toFlowEntry(parentOpts: Record<string, unknown> = {}): { jobData: JobJson; jobId: string; parentKeyOpts: Record<string, unknown>; prefix: string; queueName: string } {
    return { jobData: this.asJSON(), jobId: this.id, parentKeyOpts: parentOpts, prefix: this.prefix, queueName: this.queueName };
  }

  /**
   * Saves this (unsaved) job to its queue and returns its id (BullMQ's addJob). The `client`
   * argument is not used: echomq writes through the queue's own connection, in one script call.
   * `parentOpts.parentKey` makes it a child of that job, as the `parent` option does.
   */
  async addJob(_client?: unknown, parentOpts?: { parentKey?: string }): Promise<string> {
    this.id = await saveJob(this.ctx, this.name, this.data, this.opts, parentOpts);
    return this.id;
  }

  private check(code: number, op: string, command = op, state = ''): void {
    if (code < 0) throw jobError(code, op, this.id, command, state);
  }

  /** Stores progress (a number or any JSON value) and emits a `progress` event. */
  async updateProgress(progress: number | object | string | boolean): Promise<void> {
    const json = v.encodeJson('progress', progress, this.ctx.maxPayloadBytes);
    this.check(await scripts.progress(this.ctx, { id: this.id, progress: json }), 'updateProgress');
    this.progress = progress;
    const owner = owners.get(this);
    if (owner) owner.emit('progress', this, progress);
    else this.ctx.onProgress?.(this, progress);
  }

  /** Appends a line to the job's log (keeping opts.keepLogs lines, else the queue's keepLogs). Returns the number of lines. */
  log(logRow: string): Promise<number> {
    const keep = (this.opts as { keepLogs?: number }).keepLogs;
    return addLog(this.ctx, this.id, logRow, typeof keep === 'number' ? keep : this.ctx.keepLogs);
  }

  /** Deletes the job's log, or all but the newest `keepLogs` lines. */
  async clearLogs(keepLogs?: number): Promise<void> {
    const key = logsKey(this.ctx.keys, this.id);
    const keep = keepLogs ? v.positiveInt('keepLogs', keepLogs) : 0;
    await layoutReady(this.ctx.client, this.ctx.keys);
    if (keep) await this.ctx.client.ltrim(key, -keep, -1);
    else await this.ctx.client.del(key);
  }

  /** Log lines, oldest first. */
  async getLogs(start = 0, end = -1): Promise<string[]> {
    return this.ctx.client.lrange(logsKey(this.ctx.keys, this.id), start, end);
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
  }

  /** Reschedules a delayed job to be due `delay` ms from now (Redis clock), whatever its earlier delay. */
  async changeDelay(delay: number): Promise<void> {
    v.nonNegativeInt('delay', delay);
    this.check(await jobScripts.changeDelay(this.ctx, { id: this.id, delay }), 'changeDelay', 'changeDelay', 'delayed');
    this.delay = delay;
  }

  /** Moves a waiting or delayed job to another lane (it keeps its arrival place). */
  async moveToLane(lane: string): Promise<void> {
    v.laneName(lane);
    this.check(await scripts.moveToLane(this.ctx, { id: this.id, lane }), 'moveToLane');
    this.lane = lane;
    this.opts.lane = lane;
  }

  /** Makes a delayed job ready now; its delay becomes 0. */
  async promote(): Promise<void> {
    const r = await scripts.promote(this.ctx, this.id);
    // BullMQ reports a missing job as not delayed; echomq's class says which it was.
    if (r === Code.NOT_FOUND) throw withBullText(new JobNotFoundError(this.id, 'promote'), `Job ${this.id} is not in the delayed state. promote`);
    this.check(r, 'promote', 'promote', 'delayed');
    this.delay = 0;
  }

  /**
   * Deletes the job, and by default its flow children (theirs too). Refused while the job, or
   * with removeChildren a job it waits for, is active (BullMQ's "could not be removed because
   * it is locked"): then nothing is removed.
   * A job that does not exist is no error, as in BullMQ.
   */
  async remove({ removeChildren = true }: { removeChildren?: boolean } = {}): Promise<void> {
    const withChildren = v.boolean('removeChildren', removeChildren);
    const r = await deps.removeWithChildren(this.ctx, this.id, withChildren);
    if (r === Code.BAD_STATE) throw lockedError(this.id);
    owners.get(this)?.emit('removed', this);
  }

  /**
   * Moves a failed (default) or completed job back to waiting. Its attempt counts stay unless
   * reset by `opts` (as in BullMQ); the fencing token still grows (see retry.lua).
   */
  async retry(state: 'failed' | 'completed' = 'failed', opts: RetryOptions = {}): Promise<void> {
    if (state !== 'failed' && state !== 'completed') v.fail('state', "'failed' or 'completed'", state);
    const o = v.plainObject('opts', opts);
    const made = o.resetAttemptsMade === undefined ? false : v.boolean('resetAttemptsMade', o.resetAttemptsMade);
    const started = o.resetAttemptsStarted === undefined ? false : v.boolean('resetAttemptsStarted', o.resetAttemptsStarted);
    // Flows: a retried child counts as pending for its parent again (flows.ts reopenChild).
    const undo = await reopenChild(this.ctx.client, this.ctx.keys, this.id);
    const r = await scripts.retry(this.ctx, this.id, state, { made, started });
    if (r < 0 && undo) await undo();
    this.check(r, 'retry', 'reprocessJob', state);
    this.failedReason = null as unknown as string;
    this.finishedOn = null as unknown as number;
    this.processedOn = null as unknown as number;
    this.returnvalue = null as ReturnType;
    if (made) this.attemptsMade = 0;
    if (started) this.attemptsStarted = 0;
  }

  /** Current state, read from Redis ('unknown' when the job does not exist). */
  async getState(): Promise<JobState> {
    const [st, prio] = await this.ctx.client.hmget(jobKey(this.ctx.keys, this.id), JobField.state, JobField.priority);
    return stateName(st ?? undefined, Number(prio ?? 0));
  }

  isCompleted(): Promise<boolean> {
    return this.isInState('completed');
  }

  isFailed(): Promise<boolean> {
    return this.isInState('failed');
  }

  isDelayed(): Promise<boolean> {
    return this.isInState('delayed');
  }

  isWaitingChildren(): Promise<boolean> {
    return this.isInState('waiting-children');
  }

  isActive(): Promise<boolean> {
    return this.isInState('active');
  }

  /** Waiting (priority 0, the queue paused or not); a prioritized job is not, as in BullMQ. */
  isWaiting(): Promise<boolean> {
    return this.isInState('waiting');
  }

  private async isInState(state: JobState): Promise<boolean> {
    return (await this.getState()) === state;
  }

  /** Frees the job's deduplication id if this job still holds it; whether it did. */
  async removeDeduplicationKey(): Promise<boolean> {
    if (!this.deduplicationId) return false;
    return jobScripts.removeDeduplicationKey(this.ctx, { dedupId: this.deduplicationId, id: this.id });
  }

  /**
   * Resolves with the return value when the job completes; rejects with an Error whose message
   * is the failed reason when it fails for good (an attempt that will be retried does not
   * settle it). `queueEvents` must read this job's queue and be running. It subscribes first
   * and reads the job's state after, so a finish in between is never missed. `ttl` (ms):
   * reject with BullMQ's timeout error after that long. A job that does not exist (never
   * added, or already deleted, e.g. by `removeOnComplete: true`) rejects with JobNotFoundError.
   * When the return value was too big for the event (`maxEventValueBytes`), it is read from the job.
   */
  waitUntilFinished(queueEvents: QueueEvents, ttl?: number): Promise<ReturnType> {
    return waitUntilFinished<ReturnType>(this.ctx, this.id, this.name, queueEvents, ttl);
  }

  // --- flow children (job-dependencies.ts) ---

  /** A flow parent's completed children: child's logical name `<prefix>:<queue>:<id>` → return value. */
  getChildrenValues<CT = any>(): Promise<Record<string, CT>> {
    return deps.childrenOf(this.ctx, this.id, 'processed');
  }

  /** Children that failed with ignoreDependencyOnFailure: logical name → failed reason. */
  getIgnoredChildrenFailures(): Promise<Record<string, string>> {
    return deps.childrenOf(this.ctx, this.id, 'ignored');
  }

  /** @deprecated BullMQ's old name of getIgnoredChildrenFailures. */
  getFailedChildrenValues(): Promise<Record<string, string>> {
    return this.getIgnoredChildrenFailures();
  }

  /** A flow parent's children by outcome (BullMQ's shape; paged with `opts`). */
  getDependencies(opts: deps.DependenciesOpts = {}): Promise<deps.JobDependencies> {
    return deps.getDependencies(this.ctx, this.id, opts);
  }

  /** Counts of a flow parent's children by outcome (the kinds set to true, or all four). */
  getDependenciesCount(opts: { failed?: boolean; ignored?: boolean; processed?: boolean; unprocessed?: boolean } = {}): Promise<deps.DependencyCounts> {
    return deps.getDependenciesCount(this.ctx, this.id, opts);
  }

  /** Stops this child's parent from waiting for it, if it is still pending there. Whether it was. */
  async removeChildDependency(): Promise<boolean> {
    const parent = this.parentRef();
    const r = await deps.removeChildDependency(this.ctx, this.id, parent);
    if (r === Code.NOT_FOUND) throw jobError(Code.NOT_FOUND, 'removeChildDependency', this.id);
    if (r === Code.MISSING_PARENT) throw missingParentError(this.id, this.parentKey, 'removeChildDependency');
    if (r) {
      this.parent = undefined;
      this.parentKey = undefined;
    }
    return r;
  }

  /** Removes this parent's children that have not finished and are not active (BullMQ's removeUnprocessedChildren). */
  removeUnprocessedChildren(): Promise<void> {
    return deps.removeUnprocessedChildren(this.ctx, this.id);
  }

  /** The parent as a physical reference, from the logical parentKey (`<prefix>:<queue>:<id>`). */
  private parentRef(): { id: string; key: string; keys: QueueKeys } | undefined {
    const p = this.parent;
    if (!p?.id || !this.parentKey) return undefined;
    const colon = p.queueKey.indexOf(':');
    const keys = queueKeys(p.queueKey.slice(colon + 1), p.queueKey.slice(0, colon));
    return { id: p.id, key: jobKey(keys, p.id), keys };
  }

  // --- lock-holder moves (worker-side; see job-moves.ts) ---
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
}

/** The creation path's Jobs (job-create.ts): a saved one kept with its Queue, BullMQ's unsaved one. */
const JOB_MAKER: JobMaker<Job> = {
  added(ctx, id, h, queue) {
    const job = Job.fromHash(ctx, id, h);
    if (queue !== ctx) owners.set(job, queue as Emitter);
    return job;
  },
  unsaved: (queue, name, data, opts, id) => new Job(queue, name, data, opts, id),
};
