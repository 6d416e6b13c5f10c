/**
 * Sharded queues: one logical queue over several hash tags, so that one queue can outgrow one
 * Redis (Cluster) node. `new Queue(name, { shards: n })` and `new Worker(name, fn, { shards: n })`
 * return the classes below (see docs/scaling.md for when to use them).
 *
 * Layout. Shard i is an ordinary queue named `<name>#i` (keys.shardQueueName): hash tag
 * `{<name>#i}`, its own slot, every transition script unchanged. A lane lives on exactly one
 * shard, `laneShard(lane, n)` (a mixed FNV-1a hash of the lane name, mod n), so inside a lane the
 * ordering law holds exactly and lanes of one shard share its ring fairly. What a sharded queue
 * gives up: priority order and ring fairness between lanes on different shards.
 *
 * Job ids. Shard i generates ids (counter - 1) * n + i + 1 (add.lua, `ids` of the script
 * context): unique across shards, and a generated id names its shard, (id - 1) mod n. Custom
 * ids are looked up on every shard; a custom id (and a deduplication id) is unique per shard.
 *
 * Registry. The shard count is stored in shard 0's meta hash (field `shards`). Opening a queue
 * that holds jobs under another count (1 = the plain queue `<name>`) throws ShardCountError:
 * lanes would map to other shards and generated ids to other shards.
 *
 * Workers: see sharded-worker.ts.
 */
import { EchoError, ErrorCodes, ActiveJobsError, ClosedError } from '../core/errors.js';
import {
  Queue, shardedQueueFactory, type BulkJob, type CleanState, type JobProgress, type QueueOptions, type RetryJobsOptions,
} from '../queue/queue.js';
import { LaneControls } from '../lanes/lanes.js';
import { jobKey, shardQueueName, type QueueKeys } from '../core/keys.js';
import { jobTypes, rangeArgs, type JobType, type LaneInfo } from '../ops/inspect.js';
import { loadRefs, shardedCounts, shardedRefs } from './sharded-listing.js';
import { Job, type JobContext, type JobState } from '../job/job.js';
import { withDefaults } from '../job/new-job.js';
import type { GroupStatus } from '../pro/groups.js';
import { DEFAULT_LANE, DEFAULT_MAX_PAYLOAD, type JobOptions } from '../core/options.js';
import type { JobSchedulerJson, JobSchedulerTemplate, RepeatOptions } from '../lifecycle/schedulers.js';
import type { MetricsOptions } from '../ops/metrics.js';
import { activeCount } from '../ops/active-set.js';
import * as v from '../core/validate.js';
import { CrossShardError, ensureShardLayout, laneShard, MAX_SHARDS, shardOfGeneratedId } from './shard-layout.js';

export { ShardCountError, CrossShardError, laneShard, shardOfGeneratedId, ensureShardLayout, MAX_SHARDS } from './shard-layout.js';

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
const byteCompare = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

// ---------------------------------------------------------------------------------------------
// Queue side

export class ShardedQueue<DataType = any, ReturnType = any, NameType extends string = string> extends Queue<DataType, ReturnType, NameType> {
  /** Number of shards. */
  readonly shards: number;
  /** The queue of each shard (`<name>#i`), sharing this queue's connection. */
  readonly shardQueues: ReadonlyArray<Queue<DataType, ReturnType, NameType>>;
  /** Keys of each shard. (`keys` is the unsharded key space of the name and holds nothing.) */
  readonly shardKeys: readonly QueueKeys[];
  private readonly shCtx: readonly JobContext[];
  private shLayout: Promise<void> | undefined;
  private shClosed = false;

  constructor(name: string, opts: QueueOptions = {}) {
    v.plainObject('opts', opts);
    const shards = v.integerIn('shards', opts.shards, 2, MAX_SHARDS);
    // The base queue validates the options and owns the one connection; it writes nothing.
    super(name, { ...opts, shards: undefined, streams: undefined });
    this.shards = shards;
    const shared = { ...opts, shards: undefined, connection: this.client };
    this.shardQueues = range(shards).map((i) => new Queue<DataType, ReturnType, NameType>(shardQueueName(name, i), { ...shared, shardOf: { index: i, count: shards } }));
    this.shardKeys = this.shardQueues.map((q) => q.keys);
    const maxPayloadBytes = opts.maxPayloadBytes ?? DEFAULT_MAX_PAYLOAD;
    const keepLogs = opts.keepLogs ?? 0;
    this.shCtx = this.shardKeys.map((keys) => ({ client: this.client, keys, maxPayloadBytes, keepLogs }));
    (this as { lanes: LaneControls }).lanes = new ShardedLaneControls(this, this.shCtx[0]);
  }

  /** Resolves once the shard count is checked against the registry (cached on success). */
  async ready(): Promise<void> {
    if (this.shClosed) throw new ClosedError(`Queue ${JSON.stringify(this.name)}`);
    this.shLayout ??= ensureShardLayout(this.client, this.name, this.keys.prefix, this.shards).catch((err) => {
      this.shLayout = undefined;
      throw err;
    });
    return this.shLayout;
  }

  /** The shard queue that serves a lane. */
  shardForLane(lane: string): Queue<DataType, ReturnType, NameType> {
    return this.shardQueues[laneShard(v.laneName(lane), this.shards)];
  }

  /** The shard holding a job: from a generated id at once, a custom id by asking every shard. */
  async shardOfJob(id: string): Promise<number | undefined> {
    const s = shardOfGeneratedId(id, this.shards);
    if (s !== undefined) return s;
    const found = await Promise.all(this.shardKeys.map((k) => this.client.exists(jobKey(k, id))));
    const i = found.findIndex((x) => x === 1);
    return i < 0 ? undefined : i;
  }

  private async jobShard(id: string): Promise<Queue<DataType, ReturnType, NameType>> {
    v.existingJobId(id);
    await this.ready();
    return this.shardQueues[(await this.shardOfJob(id)) ?? 0];
  }

  private all<T>(fn: (q: Queue<DataType, ReturnType, NameType>, i: number) => Promise<T>): Promise<T[]> {
    return Promise.all(this.shardQueues.map(fn));
  }

  override async add(name: NameType, data: DataType, opts?: JobOptions): Promise<Job<DataType, ReturnType, NameType>> {
    // Route by the lane; the shard's add validates everything (a bad lane fails there too).
    // The same merge as the new-job path, so the job's lane and its shard always agree.
    // A group id names the lane too (BullMQ Pro); a bad or conflicting one fails in the shard's add.
    const merged = withDefaults(this.opts.defaultJobOptions, opts);
    const lane: unknown = merged?.lane ?? merged?.group?.id ?? DEFAULT_LANE;
    await this.ready();
    const job = await this.shardQueues[typeof lane === 'string' ? laneShard(lane, this.shards) : 0].add(name, data, opts);
    this.emit('waiting', job);
    return job;
  }

  /** Validates every job first, then adds each shard's part (one round trip per shard and 1,000). */
  override async addBulk(jobs: ReadonlyArray<BulkJob<DataType>>): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    if (!Array.isArray(jobs)) v.fail('jobs', 'an array of { name, data, opts }', jobs);
    const groups = new Map<number, number[]>();
    jobs.forEach((j, i) => {
      v.plainObject(`jobs[${i}]`, j);
      const s = laneShard(this.prepare(j.name, j.data, j.opts, `jobs[${i}].`).lane, this.shards);
      const g = groups.get(s);
      if (g) g.push(i);
      else groups.set(s, [i]);
    });
    await this.ready();
    const out = new Array<Job<DataType, ReturnType, NameType>>(jobs.length);
    await Promise.all(
      [...groups].map(async ([s, idx]) => {
        const added = await this.shardQueues[s].addBulk(idx.map((i) => jobs[i]));
        idx.forEach((i, k) => (out[i] = added[k]));
      }),
    );
    return out;
  }

  // BullMQ Pro's groups are lanes: a group's methods go to the shard of its lane.
  private async groupShard(groupId: string): Promise<Queue<DataType, ReturnType, NameType>> {
    await this.ready();
    return this.shardForLane(groupId);
  }
  override async setGroupConcurrency(id: string, n: number): Promise<void> { return (await this.groupShard(id)).setGroupConcurrency(id, n); }
  override async removeGroupConcurrency(id: string): Promise<void> { return (await this.groupShard(id)).removeGroupConcurrency(id); }
  override async getGroupConcurrency(id: string): Promise<number | null> { return (await this.groupShard(id)).getGroupConcurrency(id); }
  override async setGroupRateLimit(id: string, max: number, ms: number): Promise<void> {
    return (await this.groupShard(id)).setGroupRateLimit(id, max, ms);
  }
  override async removeGroupRateLimit(id: string): Promise<void> { return (await this.groupShard(id)).removeGroupRateLimit(id); }
  override async getGroupRateLimitTtl(id: string, max?: number): Promise<number> { return (await this.groupShard(id)).getGroupRateLimitTtl(id, max); }
  override async pauseGroup(id: string): Promise<boolean> { return (await this.groupShard(id)).pauseGroup(id); }
  override async resumeGroup(id: string): Promise<boolean> { return (await this.groupShard(id)).resumeGroup(id); }
  override async getGroupActiveCount(id: string): Promise<number> { return (await this.groupShard(id)).getGroupActiveCount(id); }
  override async getGroupStatus(id: string): Promise<GroupStatus | null> { return (await this.groupShard(id)).getGroupStatus(id); }
  override async getGroupJobs(id: string, start?: number, end?: number): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    return (await this.groupShard(id)).getGroupJobs(id, start, end);
  }
  override async getCountsPerPriorityForGroup(id: string, priorities: number[]): Promise<Record<string, number>> {
    return (await this.groupShard(id)).getCountsPerPriorityForGroup(id, priorities);
  }
  override async getGroupsJobsCount(pageSize?: number): Promise<number> {
    await this.ready();
    return (await this.all((q) => q.getGroupsJobsCount(pageSize))).reduce((a, b) => a + b, 0);
  }
  /** The groups of every shard in shard order, then start..end of that list. */
  override async getGroupsByStatus(status: GroupStatus, start = 0, end = -1): Promise<Array<{ id: string; count: number }>> {
    await this.ready();
    const [s, e] = rangeArgs(start, end);
    const all = (await this.all((q) => q.getGroupsByStatus(status))).flat();
    return e < 0 ? all.slice(s, all.length + e + 1) : all.slice(s, e + 1);
  }

  override async getJob(id: string): Promise<Job<DataType, ReturnType, NameType> | undefined> {
    v.existingJobId(id);
    await this.ready();
    const s = await this.shardOfJob(id);
    return s === undefined ? undefined : this.shardQueues[s].getJob(id);
  }

  /**
   * Jobs of all shards, merged (sharded-listing.ts): BullMQ's types, Redis range semantics on the
   * merged list of each type, asc both ways; ready jobs in lane-name order (each lane lives on one
   * shard, so service order inside a lane is kept), the others by score across shards.
   */
  override async getJobs(types?: JobType | JobType[], start = 0, end = -1, asc = false): Promise<Array<Job<DataType, ReturnType, NameType>>> {
    const wanted = jobTypes(types).filter((t) => t !== 'repeat'); // scheduler ids are no jobs
    const [s, e] = rangeArgs(start, end);
    v.boolean('asc', asc);
    await this.ready();
    return (await loadRefs(this.shCtx, await shardedRefs(this.client, this.shCtx, wanted, s, e, asc))) as Array<Job<DataType, ReturnType, NameType>>;
  }

  override async getRanges(types: JobType[], start = 0, end = 1, asc = false): Promise<string[]> {
    const [s, e] = rangeArgs(start, end);
    v.boolean('asc', asc);
    if (Array.isArray(types) && types.length === 0) return [];
    await this.ready();
    return [...new Set((await shardedRefs(this.client, this.shCtx, jobTypes(types), s, e, asc)).map((r) => r.id))];
  }

  /** Counts summed over the shards (BullMQ's types and keys, as Queue.getJobCounts). */
  override async getJobCounts(...types: JobType[]): Promise<Record<string, number>> {
    const wanted = jobTypes(types);
    await this.ready();
    return shardedCounts(this.client, this.shardKeys, wanted);
  }

  override async getCountsPerPriority(priorities: number[]): Promise<Record<string, number>> {
    await this.ready();
    const per = await this.all((q) => q.getCountsPerPriority(priorities));
    const out: Record<string, number> = {};
    for (const c of per) for (const [p, n] of Object.entries(c)) out[p] = (out[p] ?? 0) + n;
    return out;
  }

  override async getJobState(id: string): Promise<JobState | 'unknown'> {
    return (await this.jobShard(id)).getJobState(id);
  }

  override async getJobLogs(id: string, start = 0, end = -1, asc = true): Promise<{ logs: string[]; count: number }> {
    return (await this.jobShard(id)).getJobLogs(id, start, end, asc);
  }

  override async getDependencies(parentId: string, type: 'processed' | 'pending', start: number, end: number) {
    return (await this.jobShard(parentId)).getDependencies(parentId, type, start, end);
  }

  override async changePriority(id: string, priority: number, opts: { lifo?: boolean } = {}): Promise<void> {
    v.priority(priority);
    return (await this.jobShard(id)).changePriority(id, priority, opts);
  }

  /** Moves a job between lanes of its shard; CrossShardError when the lane lives on another. */
  override async moveToLane(id: string, lane: string): Promise<void> {
    v.laneName(lane);
    const q = await this.jobShard(id);
    const from = this.shardQueues.indexOf(q);
    const to = laneShard(lane, this.shards);
    if (from !== to && (await this.client.exists(jobKey(this.shardKeys[from], id))) === 1) {
      throw new CrossShardError('moveToLane', id, lane, from, to);
    }
    return q.moveToLane(id, lane);
  }

  override async remove(id: string, opts: { removeChildren?: boolean } = {}): Promise<number> {
    const r = await (await this.jobShard(id)).remove(id, opts);
    if (r === 1) this.emit('removed', id);
    return r;
  }

  override async addJobLog(jobId: string, logRow: string, keepLogs?: number): Promise<number> {
    return (await this.jobShard(jobId)).addJobLog(jobId, logRow, keepLogs);
  }

  override async updateJobProgress(jobId: string, progress: JobProgress): Promise<void> {
    await (await this.jobShard(jobId)).updateJobProgress(jobId, progress);
    this.emit('progress', jobId, progress);
  }

  /** Every shard, one after the other; resolves with the total moved. */
  override async retryJobs(opts: RetryJobsOptions = {}): Promise<number> {
    await this.ready();
    let n = 0;
    for (const q of this.shardQueues) n += await q.retryJobs(opts);
    return n;
  }

  override async promoteJobs(opts: { count?: number } = {}): Promise<number> {
    await this.ready();
    let n = 0;
    for (const q of this.shardQueues) n += await q.promoteJobs(opts);
    return n;
  }

  override async removeOrphanedJobs(count = 1000, limit = 0): Promise<number> {
    await this.ready();
    let n = 0;
    for (const q of this.shardQueues) {
      if (limit > 0 && n >= limit) break;
      n += await q.removeOrphanedJobs(count, limit === 0 ? 0 : limit - n);
    }
    return n;
  }

  override async trimEvents(maxLength: number): Promise<number> {
    await this.ready();
    return (await this.all((q) => q.trimEvents(maxLength))).reduce((a, b) => a + b, 0);
  }

  override async rateLimit(expireTimeMs: number): Promise<void> {
    await this.ready();
    await this.all((q) => q.rateLimit(expireTimeMs));
  }

  override async removeRateLimitKey(): Promise<number> {
    await this.ready();
    return (await this.all((q) => q.removeRateLimitKey())).some(Boolean) ? 1 : 0;
  }

  override async removeDeprecatedPriorityKey(): Promise<number> {
    return 0;
  }

  override async removeGlobalConcurrency(): Promise<number> {
    await this.ready();
    return (await this.all((q) => q.removeGlobalConcurrency()))[0] ?? 0;
  }

  override async pause(): Promise<void> {
    await this.ready();
    await this.all((q) => q.pause());
    this.emit('paused');
  }

  override async resume(): Promise<void> {
    await this.ready();
    await this.all((q) => q.resume());
    this.emit('resumed');
  }

  /** True when every shard is paused. */
  override async isPaused(): Promise<boolean> {
    await this.ready();
    return (await this.all((q) => q.isPaused())).every(Boolean);
  }

  override async getDeduplicationJobId(id: string): Promise<string | null> {
    v.nonEmptyString('deduplication id', id);
    await this.ready();
    return (await this.all((q) => q.getDeduplicationJobId(id))).find((x) => x !== null) ?? null;
  }

  override async removeDeduplicationKey(id: string): Promise<number> {
    v.nonEmptyString('deduplication id', id);
    await this.ready();
    return (await this.all((q) => q.removeDeduplicationKey(id))).some(Boolean) ? 1 : 0;
  }

  /** Each shard gets ceil(max / shards) per duration: a limit per shard, not one shared counter. */
  override async setGlobalRateLimit(max: number, duration: number): Promise<number> {
    v.positiveInt('max', max);
    v.positiveInt('duration', duration);
    await this.ready();
    return (await this.all((q) => q.setGlobalRateLimit(Math.ceil(max / this.shards), duration)))[0] ?? 0;
  }

  override async removeGlobalRateLimit(): Promise<number> {
    await this.ready();
    return (await this.all((q) => q.removeGlobalRateLimit()))[0] ?? 0;
  }

  /** Each shard gets ceil(n / shards) active jobs at most (up to n + shards - 1 in all). */
  override async setGlobalConcurrency(n: number | null): Promise<number> {
    if (n !== null) v.positiveInt('concurrency', n);
    await this.ready();
    return (await this.all((q) => q.setGlobalConcurrency(n === null ? null : Math.ceil(n / this.shards))))[0] ?? 0;
  }

  override async drain(delayed = false): Promise<number> {
    v.boolean('delayed', delayed);
    await this.ready();
    return (await this.all((q) => q.drain(delayed))).reduce((a, b) => a + b, 0);
  }

  override async clean(grace: number, limit: number, state: CleanState = 'completed'): Promise<string[]> {
    v.nonNegativeInt('grace', grace);
    v.nonNegativeInt('limit', limit);
    await this.ready();
    const out: string[] = [];
    for (const q of this.shardQueues) {
      if (limit > 0 && out.length >= limit) break;
      out.push(...(await q.clean(grace, limit === 0 ? 0 : limit - out.length, state)));
    }
    this.emit('cleaned', out, state === 'waiting' ? 'wait' : state);
    return out;
  }

  /** Deletes every shard (shard 0, which holds the registry, last). */
  override async obliterate(opts: { force?: boolean; count?: number } = {}): Promise<void> {
    v.plainObject('opts', opts);
    const force = opts.force === undefined ? false : v.boolean('force', opts.force);
    await this.ready();
    if (!force) {
      const active = await Promise.all(this.shardKeys.map((k) => activeCount(this.client, k)));
      if (active.some((n) => n > 0)) throw new ActiveJobsError(this.name);
    }
    this.emit('paused'); // each shard pauses before it is deleted
    for (let i = this.shards - 1; i >= 0; i--) await this.shardQueues[i].obliterate(opts);
    this.shLayout = undefined;
  }

  /**
   * Upgrades every shard (each in its own atomic call). No shard-count check first: that would
   * make the layout check this call exists to get past. Returns the oldest version a shard held
   * (0: none stored on any shard).
   */
  override async upgradeLayout(opts: { dryRun?: boolean } = {}): Promise<number> {
    const got = await this.all((q) => q.upgradeLayout(opts));
    const stored = got.filter((n) => n > 0);
    return stored.length === 0 ? 0 : Math.min(...stored);
  }

  /** Prometheus text for the shard queues (labelled `<name>#i`). */
  override async exportPrometheusMetrics(opts: MetricsOptions = {}): Promise<string> {
    const { exportPrometheusMetrics } = await import('../ops/metrics.js');
    return exportPrometheusMetrics(this.client, {
      ...opts,
      prefix: this.keys.prefix,
      queues: opts.queues ?? this.shardQueues.map((q) => q.name),
    });
  }

  /** The scheduler lives on the shard of its template's lane (and is removed from the others). */
  override async upsertJobScheduler(
    id: string,
    repeat: RepeatOptions,
    template?: JobSchedulerTemplate<DataType>,
  ): Promise<Job<DataType, ReturnType, NameType> | undefined> {
    v.nonEmptyString('scheduler id', id);
    // (The same merge as schedulers.ts, so the scheduler's jobs and its shard agree.)
    const merged: JobOptions = { ...(this.opts.defaultJobOptions ?? {}), ...((template?.opts as JobOptions | undefined) ?? {}) };
    const lane: unknown = merged.lane ?? DEFAULT_LANE;
    const s = typeof lane === 'string' ? laneShard(lane, this.shards) : 0;
    await this.ready();
    const job = await this.shardQueues[s].upsertJobScheduler(id, repeat, template);
    await this.all((q, i) => (i === s ? Promise.resolve(false) : q.removeJobScheduler(id)));
    return job;
  }

  override async getJobScheduler(id: string): Promise<JobSchedulerJson<DataType> | undefined> {
    await this.ready();
    return (await this.all((q) => q.getJobScheduler(id))).find((x) => x !== undefined);
  }

  override async getJobSchedulers(start = 0, end = -1, asc = false): Promise<Array<JobSchedulerJson<DataType>>> {
    v.nonNegativeInt('start', start);
    v.integerIn('end', end, -1, Number.MAX_SAFE_INTEGER);
    await this.ready();
    const all = (await this.all((q) => q.getJobSchedulers(0, end, asc))).flat();
    all.sort((a, b) => (asc ? a.next - b.next : b.next - a.next));
    return all.slice(start, end < 0 ? undefined : end + 1);
  }

  override async getJobSchedulersCount(): Promise<number> {
    await this.ready();
    return (await this.all((q) => q.getJobSchedulersCount())).reduce((a, b) => a + b, 0);
  }

  /** Not on a sharded queue: each scheduler lives on the shard of its lane (use upsertJobScheduler and the getters). */
  override get jobScheduler(): Promise<never> {
    return Promise.reject(new EchoError(ErrorCodes.SHARDED, `Queue ${JSON.stringify(this.name)} is sharded: its schedulers live on the shards; use upsertJobScheduler and the scheduler getters`));
  }

  override get repeat(): Promise<never> {
    return this.jobScheduler;
  }

  override async removeJobScheduler(id: string): Promise<boolean> {
    await this.ready();
    return (await this.all((q) => q.removeJobScheduler(id))).some(Boolean);
  }

  override async close(): Promise<void> {
    if (this.shClosed) return;
    this.shClosed = true;
    await this.all((q) => q.close());
    await super.close();
  }
}

/** Lane controls of a sharded queue: each lane's settings live on the lane's shard. */
class ShardedLaneControls extends LaneControls {
  constructor(private readonly owner: ShardedQueue, ctx0: JobContext) {
    super(ctx0);
  }

  private async of(lane: string): Promise<LaneControls> {
    const q = this.owner.shardForLane(lane);
    await this.owner.ready();
    return q.lanes;
  }

  override async setWeight(lane: string, weight: number): Promise<void> {
    v.integerIn('weight', weight, 1, 1_000_000);
    return (await this.of(lane)).setWeight(lane, weight);
  }
  override async setLimit(lane: string, limit: number): Promise<void> {
    return (await this.of(lane)).setLimit(lane, limit);
  }
  override async removeLimit(lane: string): Promise<void> {
    return (await this.of(lane)).removeLimit(lane);
  }
  override async setRateLimit(lane: string, rate: { max: number; duration: number } | null): Promise<void> {
    return (await this.of(lane)).setRateLimit(lane, rate);
  }
  override async pause(lane: string): Promise<void> {
    return (await this.of(lane)).pause(lane);
  }
  override async resume(lane: string): Promise<void> {
    return (await this.of(lane)).resume(lane);
  }
  override async get(lane: string): Promise<LaneInfo> {
    return (await this.of(lane)).get(lane);
  }
  override async drain(lane: string): Promise<number> {
    return (await this.of(lane)).drain(lane);
  }

  /** Lanes of every shard in name order, `count` per page; pass the returned cursor for the next. */
  override async list(opts: { cursor?: string; count?: number } = {}): Promise<{ lanes: LaneInfo[]; cursor: string | null }> {
    v.plainObject('opts', opts);
    const count = opts.count === undefined ? 100 : v.integerIn('count', opts.count, 1, 10000);
    await this.owner.ready();
    const pages = await Promise.all(this.owner.shardQueues.map((q) => q.lanes.list({ ...opts, count })));
    const merged = pages.flatMap((p) => p.lanes).sort((a, b) => byteCompare(a.name, b.name));
    const lanes = merged.slice(0, count);
    const more = merged.length > count || pages.some((p) => p.cursor !== null);
    return { lanes, cursor: more && lanes.length > 0 ? lanes[lanes.length - 1].name : null };
  }
}

shardedQueueFactory.create = (name, opts) => new ShardedQueue(name, opts);
