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
import { JOB_STATES, getJobCounts, laneReadyIds, listLanes, listQueues, type JobCounts, type JobStateName, type LaneInfo } from '../ops/inspect.js';
import { setWindow } from '../ops/active-set.js';
import { getJobs, loadJobs } from '../job/load-jobs.js';
import { DEFAULT_LANE, DEFAULT_MAX_PAYLOAD } from '../core/options.js';
import { NotFoundError, UserError, type Target } from './target.js';
import * as v from '../core/validate.js';
import { JobField, MetaField } from '../core/fields.js';

/** Opens a Queue on the target's client, refusing names that have no data (typos). */
export async function openQueue(t: Target, name: string): Promise<Queue> {
  v.queueName(name);
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
}

/** Every queue under the prefix with its counts (one MULTI per queue). */
export async function overview(t: Target, max = 1000): Promise<{ queues: QueueSummary[]; truncated: boolean }> {
  const names = await listQueues(t.client, t.prefix);
  const queues: QueueSummary[] = [];
  for (const name of names.slice(0, max)) {
    const keys = queueKeys(name, t.prefix);
    const counts = (await getJobCounts(t.client, keys)) as JobCounts;
    queues.push({ name, paused: (await t.client.hget(keys.meta, MetaField.paused)) === '1', counts });
  }
  return { queues, truncated: names.length > max };
}

/** Lanes in name order, up to `max` (paged 1,000 at a time). */
export async function allLanes(q: Queue, max = 1000): Promise<{ lanes: LaneInfo[]; truncated: boolean }> {
  v.integerIn('limit', max, 1, 1_000_000);
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
