/**
 * Operator operations shared by the CLI and the dashboard: each returns plain JSON-ready data,
 * and the caller decides how to show it. Reads go through inspect.ts; writes through the
 * public Queue / Job / LaneControls API, so they validate and stay atomic like any user call.
 */
import type { Redis } from 'ioredis';
import { Queue, type CleanState } from '../queue/queue.js';
import { Job, type JobContext } from '../job/job.js';
import { jobKey, queueKeys } from '../core/keys.js';
import { InvalidStateError, JobNotFoundError } from '../core/errors.js';
import { JOB_STATES, getJobCounts, laneReadyIds, listLanes, type JobCounts, type JobStateName, type LaneInfo } from '../ops/inspect.js';
import { setWindow } from '../ops/active-set.js';
import { getJobs, loadJobs } from '../job/load-jobs.js';
import { DEFAULT_LANE, DEFAULT_MAX_PAYLOAD } from '../core/options.js';
import { NotFoundError, UserError, type Target } from './target.js';
import * as v from '../core/validate.js';
import { JobField, MetaField } from '../core/fields.js';
import { findQueues } from './discovery.js';
import { mergeLanes, openSharded, shardQueues, ShardedQueue, sumCounts, type ShardSummary } from './shards.js';

/** Opens a Queue on the target's client, refusing names that have no data (typos). */
export async function openQueue(t: Target, name: string): Promise<Queue> {
  v.queueName(name);
  // A sharded queue keeps nothing under its own name: its shard 0 holds the registry. It wins
  // over a leftover plain queue of the name, as in the listing.
  const sharded = await openSharded(t, name);
  if (sharded) return sharded;
  const q = new Queue(name, { connection: t.client, prefix: t.prefix });
  // A queue exists once a job was added or it was paused (meta) or a lane was configured.
  const n = await t.client.exists(q.keys.meta, q.keys.lanes);
  if (n === 0) {
    throw new NotFoundError(`queue ${JSON.stringify(name)} not found under prefix ${JSON.stringify(t.prefix)} (see: echomq status)`);
  }
  return q;
}

const ctxOf = (q: Queue): JobContext => ({ client: q.client, keys: q.keys, maxPayloadBytes: DEFAULT_MAX_PAYLOAD, keepLogs: 0 });

export interface QueueSummary {
  name: string;
  paused: boolean;
  counts: JobCounts;
  /** A sharded queue's shards (its counts are their sum; it is paused when every shard is). */
  shards?: ShardSummary[];
}

async function summary(t: Target, name: string): Promise<QueueSummary> {
  const keys = queueKeys(name, t.prefix);
  const counts = (await getJobCounts(t.client, keys)) as JobCounts;
  return { name, paused: (await t.client.hget(keys.meta, MetaField.paused)) === '1', counts };
}

/**
 * Queues under the prefix with their counts (one MULTI per queue), on every master of a
 * Cluster: about `max` queues per call (a bounded SCAN per master), `cursor` resumes a
 * truncated listing. A sharded queue is one entry with its shards.
 */
export async function overview(t: Target, max = 1000, cursor?: string): Promise<{ queues: QueueSummary[]; truncated: boolean; cursor: string | null }> {
  const page = await findQueues(t.client, t.prefix, { max, cursor });
  const queues: QueueSummary[] = [];
  for (const found of page.queues) {
    if (found.shards === undefined) {
      queues.push(await summary(t, found.name));
      continue;
    }
    const shards = await Promise.all(found.shards.map((s) => summary(t, s)));
    queues.push({ name: found.name, paused: shards.every((s) => s.paused), counts: sumCounts(shards.map((s) => s.counts)), shards });
  }
  return { queues, truncated: page.cursor !== null, cursor: page.cursor };
}

/** Lanes in name order, up to `max` (paged 1,000 at a time). */
export async function allLanes(q: Queue, max = 1000): Promise<{ lanes: LaneInfo[]; truncated: boolean }> {
  v.integerIn('limit', max, 1, 1_000_000);
  if (q instanceof ShardedQueue) return mergeLanes(await Promise.all(q.shardQueues.map((s) => allLanes(s, max))), max);
  const lanes: LaneInfo[] = [];
  let cursor: string | undefined;
  while (lanes.length < max) {
    const page = await listLanes(q.client, q.keys, { cursor, count: Math.min(1000, max - lanes.length) });
    lanes.push(...page.lanes);
    if (page.cursor === null) return { lanes, truncated: false };
    cursor = page.cursor;
  }
  const more = await q.client.zrangebylex(q.keys.lanes, `(${cursor}`, '+', 'LIMIT', 0, 1);
  return { lanes, truncated: more.length > 0 };
}

export interface QueueStatus extends QueueSummary {
  globalConcurrency: number | null;
  lanes: LaneInfo[];
  lanesTruncated: boolean;
}

export async function queueStatus(q: Queue, maxLanes = 1000): Promise<QueueStatus> {
  if (q instanceof ShardedQueue) return shardedStatus(q, maxLanes);
  const [counts, paused, conc, lanes] = await Promise.all([
    getJobCounts(q.client, q.keys) as Promise<JobCounts>, // the operator's view, as queue lists show it
    q.isPaused(),
    q.client.hget(q.keys.meta, MetaField.concurrency),
    allLanes(q, maxLanes),
  ]);
  return {
    name: q.name, paused, counts, globalConcurrency: conc === null ? null : Number(conc), lanes: lanes.lanes, lanesTruncated: lanes.truncated,
  };
}

/** A job as lists show it (no data, which can be large). */
export interface JobRow {
  id: string;
  name: string;
  lane: string;
  state: string;
  priority: number;
  attemptsMade: number;
  timestamp: number;
  processedOn: number | null;
  finishedOn: number | null;
  failedReason: string | null;
}

export function row(j: Job, state: string): JobRow {
  return {
    id: j.id, name: j.name, lane: j.lane, state, priority: j.priority, attemptsMade: j.attemptsMade,
    timestamp: j.timestamp, processedOn: j.processedOn ?? null, finishedOn: j.finishedOn ?? null,
    failedReason: j.failedReason ?? null,
  };
}

/** The order jobs are listed in when no state is asked for. */
const LIST_ORDER: JobStateName[] = ['active', 'waiting', 'paused', 'prioritized', 'waiting-children', 'delayed', 'failed', 'completed'];
/** Most ids examined when filtering a finished/active/delayed set by lane. */
const SCAN_CAP = 20_000;

export interface JobQuery {
  state?: string;
  lane?: string;
  offset?: number;
  limit?: number;
}

/**
 * Jobs by state and lane. Ready states read the lane's own sorted set; the other states are
 * sets ordered by time (failed and completed newest first, delayed soonest due first, active by
 * lease deadline) which are filtered by lane, examining at most 20,000 ids.
 */
export async function findJobs(q: Queue, query: JobQuery): Promise<{ jobs: JobRow[]; more: boolean }> {
  const limit = query.limit === undefined ? 50 : v.integerIn('limit', query.limit, 1, 10_000);
  const offset = query.offset === undefined ? 0 : v.nonNegativeInt('offset', query.offset);
  const lane = query.lane === undefined || query.lane === '' ? undefined : v.laneName(query.lane);
  let states: JobStateName[];
  if (query.state === undefined || query.state === '' || query.state === 'all') {
    if (offset > 0) throw new UserError('offset needs a single state (--state)');
    states = LIST_ORDER;
  } else {
    if (!(JOB_STATES as readonly string[]).includes(query.state)) v.fail('state', `one of ${JOB_STATES.join(', ')}`, query.state);
    states = [query.state as JobStateName];
  }
  // A lane lives on one shard of a sharded queue: its jobs are that shard's.
  if (q instanceof ShardedQueue && lane !== undefined) return findJobs(q.shardForLane(lane), query);
  const out: JobRow[] = [];
  let more = false;
  for (const state of states) {
    const want = limit - out.length;
    if (want <= 0) {
      more = true;
      break;
    }
    const page = await jobsInState(q, state, lane, offset, want + 1);
    if (page.length > want) more = true;
    for (const j of page.slice(0, want)) out.push(row(j, state));
  }
  return { jobs: out, more };
}

export async function jobsInState(q: Queue, state: JobStateName, lane: string | undefined, offset: number, count: number): Promise<Job[]> {
  if (q instanceof ShardedQueue) return shardedJobsInState(q, state, offset, count);
  const ctx = ctxOf(q);
  if (state === 'waiting' || state === 'prioritized' || state === 'paused') {
    // The operator's view (inspect.getJobs): service order, and `paused` for a paused queue's jobs.
    if (lane === undefined) return getJobs(ctx, [state], offset, offset + count - 1, true);
    const paused = await q.isPaused();
    if (state !== 'prioritized' && (state === 'paused') !== paused) return [];
    return loadJobs(ctx, await laneReadyIds(q.client, q.keys, lane, state === 'prioritized' ? 'prioritized' : 'waiting', offset, count));
  }
  const key = {
    active: q.keys.active, delayed: q.keys.delayed, completed: q.keys.completed, failed: q.keys.failed, 'waiting-children': q.keys.wchildren,
  }[state];
  const newestFirst = state === 'completed' || state === 'failed';
  const range = (start: number, end: number) => setWindow(q.client, q.keys, key, start, end, !newestFirst);
  if (lane === undefined) return loadJobs(ctx, await range(offset, offset + count - 1));
  // Filter by lane: page through the set, reading each job's lane.
  const ids: string[] = [];
  let skipped = 0;
  for (let start = 0; start < SCAN_CAP && ids.length < count; start += 500) {
    const page = await range(start, start + 499);
    if (page.length === 0) break;
    const p = q.client.pipeline();
    // A job hash leaves out the default lane: a job that exists (ts) without one is in it.
    for (const id of page) p.hmget(jobKey(q.keys, id), JobField.lane, JobField.timestamp);
    const lanes = (await p.exec())!.map(([, r]) => {
      const [l, ts] = r as [string | null, string | null];
      return ts === null ? null : (l ?? DEFAULT_LANE);
    });
    page.forEach((id, i) => {
      if (lanes[i] !== lane || ids.length >= count) return;
      if (skipped < offset) skipped++;
      else ids.push(id);
    });
    if (page.length < 500) break;
  }
  return loadJobs(ctx, ids);
}

export interface JobDetail extends Record<string, unknown> {
  state: string;
  logs: string[];
}

export async function jobDetail(q: Queue, id: string): Promise<JobDetail> {
  const job = await q.getJob(id);
  if (!job) throw new NotFoundError(`job ${JSON.stringify(id)} not found in queue ${JSON.stringify(q.name)}`);
  const [state, logs] = await Promise.all([job.getState(), job.getLogs()]);
  return { ...job.toJSON(), state, logs };
}

/** Retries one failed or completed job. */
export async function retryJob(q: Queue, id: string): Promise<{ id: string; from: string }> {
  const job = await q.getJob(id);
  if (!job) throw new NotFoundError(`job ${JSON.stringify(id)} not found in queue ${JSON.stringify(q.name)}`);
  const state = await job.getState();
  if (state !== 'failed' && state !== 'completed') {
    throw new UserError(`job ${JSON.stringify(id)} is ${state}; only failed or completed jobs can be retried`);
  }
  await job.retry(state);
  return { id, from: state };
}

/**
 * Retries every failed job, `batch` per round (the retries of a batch go out together). Jobs
 * that change state meanwhile (retried or removed by someone else) are counted as skipped.
 */
export async function retryAllFailed(
  q: Queue,
  opts: { batch?: number; onProgress?: (done: number, total: number) => void } = {},
): Promise<{ retried: number; skipped: number }> {
  const batch = opts.batch === undefined ? 500 : v.integerIn('batch', opts.batch, 1, 10_000);
  if (q instanceof ShardedQueue) return retryShards(q, batch, opts.onProgress);
  const total = await q.client.zcard(q.keys.failed);
  const ctx = ctxOf(q);
  let retried = 0;
  let skipped = 0;
  let offset = 0; // ids that stayed in failed (skipped) are stepped over
  opts.onProgress?.(0, total);
  for (;;) {
    // Oldest first, so jobs that fail again while we work land behind us and are not retried twice.
    const ids = await q.client.zrange(q.keys.failed, offset, offset + batch - 1);
    if (ids.length === 0) break;
    const results = await Promise.allSettled(ids.map((id) => Job.fromHash(ctx, id, {}).retry('failed')));
    for (const r of results) {
      if (r.status === 'fulfilled') retried++;
      else skipped++;
    }
    offset += results.filter((r) => r.status === 'rejected').length;
    opts.onProgress?.(Math.min(retried + skipped, total), total);
    if (retried + skipped >= total) break; // do not chase jobs that failed after we started
  }
  return { retried, skipped };
}

/**
 * Queue.remove answers as BullMQ's (1 also for a missing job, 0 for an active one); an operator
 * wants to hear about both.
 */
export async function removeJob(q: Queue, id: string): Promise<void> {
  if (!(await q.getJob(id))) throw new JobNotFoundError(id, 'remove');
  if ((await q.remove(id)) === 0) {
    throw new InvalidStateError(id, 'remove', 'is active (or waits for an active child); it can be removed once it finishes');
  }
}

/** `n` or `none`. */
export async function setLaneLimit(q: Queue, lane: string, limit: number | 'none'): Promise<void> {
  if (limit === 'none') await q.lanes.removeLimit(lane);
  else await q.lanes.setLimit(lane, limit);
}

export async function setPaused(q: Queue, paused: boolean, lane?: string): Promise<void> {
  if (lane === undefined) await (paused ? q.pause() : q.resume());
  else await (paused ? q.lanes.pause(lane) : q.lanes.resume(lane));
}

export async function drain(q: Queue, opts: { delayed?: boolean; lane?: string }): Promise<number> {
  if (opts.lane !== undefined) {
    if (opts.delayed) throw new UserError('--delayed cannot be combined with --lane (a lane drain removes its waiting jobs)');
    return q.lanes.drain(opts.lane);
  }
  return q.drain(opts.delayed ?? false);
}

export async function clean(q: Queue, grace: number, state: string, limit: number): Promise<string[]> {
  return q.clean(grace, limit, state as CleanState);
}

/** A sharded queue's status: counts summed over its shards, lanes merged, each shard beside it. */
async function shardedStatus(q: ShardedQueue, maxLanes: number): Promise<QueueStatus> {
  const shards = await Promise.all(
    q.shardQueues.map(async (s): Promise<ShardSummary> => ({ name: s.name, paused: await s.isPaused(), counts: (await getJobCounts(s.client, s.keys)) as JobCounts })),
  );
  // Each shard holds its part of a global concurrency (ShardedQueue.setGlobalConcurrency); the sum is the limit in force.
  const conc = await Promise.all(q.shardQueues.map((s) => s.client.hget(s.keys.meta, MetaField.concurrency)));
  const lanes = await allLanes(q, maxLanes);
  return {
    name: q.name, paused: shards.every((s) => s.paused), counts: sumCounts(shards.map((s) => s.counts)),
    globalConcurrency: conc.every((c) => c === null) ? null : conc.reduce((a, c) => a + Number(c ?? 0), 0),
    lanes: lanes.lanes, lanesTruncated: lanes.truncated, shards,
  };
}

/**
 * One state of a sharded queue, merged across its shards by ShardedQueue.getJobs: ready jobs
 * lane by lane in lane-name order, the other states by time as a plain queue lists them.
 */
async function shardedJobsInState(q: ShardedQueue, state: JobStateName, offset: number, count: number): Promise<Job[]> {
  if (state === 'waiting' || state === 'paused') {
    if ((state === 'paused') !== (await q.isPaused())) return [];
    return q.getJobs(['waiting'], offset, offset + count - 1, true);
  }
  return q.getJobs([state], offset, offset + count - 1, state !== 'completed' && state !== 'failed');
}

/** retryAllFailed shard after shard, with one progress over all of them. */
async function retryShards(
  q: ShardedQueue, batch: number, onProgress: ((done: number, total: number) => void) | undefined,
): Promise<{ retried: number; skipped: number }> {
  const totals = await Promise.all(shardQueues(q).map((s) => s.client.zcard(s.keys.failed)));
  const total = totals.reduce((a, b) => a + b, 0);
  let retried = 0;
  let skipped = 0;
  let before = 0;
  for (const [i, s] of shardQueues(q).entries()) {
    const r = await retryAllFailed(s, { batch, onProgress: onProgress && ((d) => onProgress(Math.min(before + d, total), total)) });
    retried += r.retried;
    skipped += r.skipped;
    before += totals[i];
  }
  return { retried, skipped };
}
