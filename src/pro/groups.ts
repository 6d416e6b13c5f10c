/**
 * BullMQ Pro's groups API on echomq's lanes (docs/migrating-from-bullmq.md). A group is a lane: the
 * group id is the lane name, the group's concurrency is the lane's limit, its rate limit the
 * lane's rate, pausing a group pauses the lane. Jobs without a group are in the default lane,
 * which is not a group: the Worker's group defaults do not apply to it and the getters leave it
 * out. Every function here is one bounded call (or a pipeline of bounded calls) to Redis.
 *
 * The Queue and Worker methods are installed on the classes' prototypes by ./index.ts, so
 * QueuePro and WorkerPro are Queue and Worker themselves.
 */
import type { Job, JobContext } from '../job/job.js';
import { laneKey, laneRateKey } from '../core/keys.js';
import { loadJobs } from '../job/load-jobs.js';
import { laneCounts, laneCountsPerPriority, laneMembersByRank } from '../ops/lane-ready.js';
import { DEFAULT_LANE } from '../core/options.js';
import { bindScript, type ScriptContext } from '../scripts/runner.js';
import { scripts } from '../scripts/index.js';
import * as v from '../core/validate.js';
import { MetaField } from '../core/fields.js';
import { redisTimeMs } from '../core/values.js';

const raw = {
  setGroupDefaults: bindScript('setGroupDefaults'),
  rateLimitLane: bindScript('rateLimitLane'),
};

/** Names of the scripts this module adds (for docs and tests). */
export const PRO_SCRIPT_NAMES = Object.keys(raw);

/** The Worker option `group` (BullMQ Pro): defaults for every group without its own setting. */
export interface WorkerGroupOptions {
  /** Most jobs of one group active at once, across all workers. */
  concurrency?: number;
  /** At most `max` jobs of one group start per `duration` ms. */
  limit?: { max: number; duration: number };
}

/** What the Worker stores in the queue's meta (lib/groups.lua): '' for none. */
export interface GroupDefaults {
  concurrency: string;
  rate: string;
}

/** Validates the Worker option `group`; undefined when absent. */
export function workerGroupDefaults(value: unknown): GroupDefaults | undefined {
  if (value === undefined) return undefined;
  const g = v.plainObject('group', value);
  for (const k of Object.keys(g)) {
    if (k !== 'concurrency' && k !== 'limit') v.fail(`group.${k}`, 'one of the known fields (concurrency, limit)', k);
  }
  const concurrency = g.concurrency === undefined ? '' : String(v.integerIn('group.concurrency', g.concurrency, 1, 1_000_000));
  let rate = '';
  if (g.limit !== undefined) {
    const l = v.plainObject('group.limit', g.limit);
    rate = `${v.positiveInt('group.limit.max', l.max)}:${v.integerIn('group.limit.duration', l.duration, 1, 86_400_000)}`;
  }
  return { concurrency, rate };
}

/** Stores the Worker's group defaults; the last worker started with a `group` option wins. */
export async function applyGroupDefaults(ctx: ScriptContext, d: GroupDefaults): Promise<void> {
  await raw.setGroupDefaults(ctx, [d.concurrency, d.rate]);
}

const groupId = (id: unknown): string => v.nonEmptyString('groupId', id);

/** The group a job belongs to: its lane. */
export function jobGroupId(job: Job): string {
  return job.lane;
}

// ---- Queue methods (installed as QueuePro's) -------------------------------------------------

/** setGroupConcurrency(id, n): most jobs of the group active at once; wins over the Worker default. */
export async function setGroupConcurrency(ctx: ScriptContext, id: unknown, concurrency: unknown): Promise<void> {
  const lane = groupId(id);
  const n = v.integerIn('concurrency', concurrency, 1, 1_000_000);
  await scripts.setLane(ctx, { lane, field: 'limit', value: String(n) });
}

/** Removes the group's own concurrency: the Worker default (if any) applies again. */
export async function removeGroupConcurrency(ctx: ScriptContext, id: unknown): Promise<void> {
  await scripts.setLane(ctx, { lane: groupId(id), field: 'limit', value: '' });
}

/** The group's concurrency: its own, else the Worker default, else null (no limit). */
export async function getGroupConcurrency(ctx: ScriptContext, id: unknown): Promise<number | null> {
  const lane = groupId(id);
  const [own, dflt] = await Promise.all([ctx.client.hget(ctx.keys.llimit, lane), ctx.client.hget(ctx.keys.meta, MetaField.groupConcurrency)]);
  const s = own ?? (lane === DEFAULT_LANE ? null : dflt);
  return s === null ? null : Number(s);
}

/** setGroupRateLimit(id, max, duration): at most max starts per duration ms; wins over the default. */
export async function setGroupRateLimit(ctx: ScriptContext, id: unknown, max: unknown, duration: unknown): Promise<void> {
  const lane = groupId(id);
  const m = v.positiveInt('max', max);
  const d = v.integerIn('duration', duration, 1, 86_400_000);
  await scripts.setLane(ctx, { lane, field: 'rate', value: `${m}:${d}` });
}

/** Removes the group's own rate limit: the Worker default (if any) applies again. */
export async function removeGroupRateLimit(ctx: ScriptContext, id: unknown): Promise<void> {
  await scripts.setLane(ctx, { lane: groupId(id), field: 'rate', value: '' });
}

/**
 * Ms until the group may start jobs again: a window set by rateLimitGroup, or the group's rate
 * window. With maxJobs, 0 while fewer than maxJobs jobs started in the group's rate window.
 * As BullMQ's getRateLimitTtl: -2 when there is no window.
 */
export async function getGroupRateLimitTtl(ctx: ScriptContext, id: unknown, maxJobs?: unknown): Promise<number> {
  const lane = groupId(id);
  const max = maxJobs === undefined ? undefined : v.positiveInt('maxJobs', maxJobs);
  const r = (await ctx.client.pipeline()
    .time()
    .zscore(ctx.keys.rlwait, lane)
    .get(laneRateKey(ctx.keys, lane))
    .pttl(laneRateKey(ctx.keys, lane))
    .exec())!.map(([err, val]) => {
    if (err) throw err;
    return val;
  });
  const [sec, usec] = r[0] as [string, string];
  const now = redisTimeMs([sec, usec]);
  const used = r[2] === null ? undefined : Number(r[2]);
  // Fewer than maxJobs started in the group's rate window: not limited by it.
  if (max !== undefined && used !== undefined && used < max) return 0;
  const waitUntil = r[1] === null ? undefined : Number(r[1]);
  if (waitUntil !== undefined && waitUntil > now) return waitUntil - now;
  if (used === undefined) return -2;
  return Number(r[3]);
}

/** pauseGroup(id): false when it was paused already. Remembered for a group without jobs. */
export async function pauseGroup(ctx: ScriptContext, id: unknown): Promise<boolean> {
  return (await scripts.pauseLane(ctx, { lane: groupId(id), paused: true })) === 1;
}

/** resumeGroup(id): false when it was not paused (also when no such group exists). */
export async function resumeGroup(ctx: ScriptContext, id: unknown): Promise<boolean> {
  return (await scripts.pauseLane(ctx, { lane: groupId(id), paused: false })) === 1;
}

// ---- Getters ---------------------------------------------------------------------------------

/**
 * Waiting jobs (prioritized or not) in all groups: the lane registry is read pageSize groups
 * per call, and each page's depths in one pipeline. The default lane is not a group.
 */
export async function getGroupsJobsCount(ctx: ScriptContext, pageSize: unknown = 1000): Promise<number> {
  const page = v.integerIn('pageSize', pageSize, 1, 100_000);
  let total = 0;
  for (let from = 0; ; from += page) {
    const lanes = await ctx.client.zrange(ctx.keys.lanes, from, from + page - 1);
    const groups = lanes.filter((l) => l !== DEFAULT_LANE);
    for (const n of await laneCounts(ctx.client, ctx.keys, groups)) total += n;
    if (lanes.length < page) return total;
  }
}

/** Jobs of the group being processed now. */
export async function getGroupActiveCount(ctx: ScriptContext, id: unknown): Promise<number> {
  return Number((await ctx.client.hget(ctx.keys.lactive, groupId(id))) ?? 0);
}

/** The group's waiting jobs from index start to end (inclusive, as Redis ranges), in claim order. */
export async function getGroupJobs(ctx: JobContext, id: unknown, start: unknown = 0, end: unknown = -1): Promise<Job[]> {
  const lane = groupId(id);
  const s = v.integerIn('start', start, -1e12, 1e12);
  const e = v.integerIn('end', end, -1e12, 1e12);
  const members = await laneMembersByRank(ctx.client, ctx.keys, lane, s, e);
  // A lane member is the 14-character arrival stamp followed by the job id (lib/common.lua memberId).
  return loadJobs(ctx, members.map((m) => m.slice(14)));
}

/** BullMQ Pro's group statuses. */
export type GroupStatus = 'waiting' | 'paused' | 'limited' | 'maxed';
export const GROUP_STATUSES: readonly GroupStatus[] = ['waiting', 'paused', 'limited', 'maxed'];

/** Reads the state of some lanes in one pipeline. */
async function laneStates(ctx: ScriptContext, lanes: readonly string[]): Promise<Array<{ id: string; status: GroupStatus | null; count: number }>> {
  if (lanes.length === 0) return [];
  const p = ctx.client.pipeline();
  p.hget(ctx.keys.meta, MetaField.groupConcurrency);
  for (const lane of lanes) {
    p.zcard(laneKey(ctx.keys, lane));
    p.sismember(ctx.keys.lpaused, lane);
    p.zscore(ctx.keys.rlwait, lane);
    p.hget(ctx.keys.llimit, lane);
    p.hget(ctx.keys.lactive, lane);
    p.hexists(ctx.keys.lone, lane); // a one-job lane (ops/lane-ready.ts)
  }
  const r = (await p.exec())!.map(([err, val]) => {
    if (err) throw err;
    return val as string | number | null;
  });
  const dflt = r[0] as string | null;
  return lanes.map((id, i) => {
    const [depth, paused, waitUntil, ownLimit, active, lone] = r.slice(1 + i * 6, 7 + i * 6);
    const limit = ownLimit ?? (id === DEFAULT_LANE ? null : dflt);
    const count = Number(depth) + Number(lone);
    let status: GroupStatus | null;
    if (Number(paused) === 1) status = 'paused';
    else if (waitUntil !== null) status = 'limited';
    else if (limit !== null && Number(active ?? 0) >= Number(limit)) status = 'maxed';
    else status = count > 0 ? 'waiting' : null;
    return { id, status, count };
  });
}

/**
 * The group's status: 'paused', 'limited' (waiting for its rate window or a rateLimitGroup
 * window), 'maxed' (at its concurrency), 'waiting' (has jobs to serve), or null for a group
 * without jobs or settings.
 */
export async function getGroupStatus(ctx: ScriptContext, id: unknown): Promise<GroupStatus | null> {
  const [s] = await laneStates(ctx, [groupId(id)]);
  return s.status;
}

/**
 * Groups with a status, with their waiting-job counts. 'paused' and 'limited' are ranges of the
 * paused set (by name) and of the rate-wait set (by reopening time); 'waiting' and 'maxed' look
 * at the groups start..end of the lane registry (by name) and keep those with the status, so a
 * page can hold fewer than end - start + 1 groups. Each call reads at most end - start + 1 groups.
 */
export async function getGroupsByStatus(
  ctx: ScriptContext, status: unknown, start: unknown = 0, end: unknown = -1,
): Promise<Array<{ id: string; count: number }>> {
  if (typeof status !== 'string' || !(GROUP_STATUSES as readonly string[]).includes(status)) {
    v.fail('status', `one of ${GROUP_STATUSES.join(', ')}`, status);
  }
  const s = v.integerIn('start', start, 0, 1e12);
  let e = v.integerIn('end', end, -1, 1e12);
  // A page is bounded: end -1 (to the end) reads at most 1000 groups.
  if (e < 0 || e - s >= 1000) e = s + 999;
  let ids: string[];
  if (status === 'paused') {
    // The paused set is small (groups an operator paused); SORT gives a stable name order.
    ids = (await ctx.client.sort(ctx.keys.lpaused, 'ALPHA', 'LIMIT', s, e - s + 1)) as string[];
  } else if (status === 'limited') {
    ids = await ctx.client.zrange(ctx.keys.rlwait, s, e);
  } else {
    ids = await ctx.client.zrange(ctx.keys.lanes, s, e);
  }
  const states = await laneStates(ctx, ids.filter((l) => l !== DEFAULT_LANE));
  return states.filter((x) => x.status === status).map(({ id, count }) => ({ id, count }));
}

/** Waiting jobs of the group at each priority: `{ '<priority>': count }`, one ZCOUNT each. */
export async function getCountsPerPriorityForGroup(ctx: ScriptContext, id: unknown, priorities: unknown): Promise<Record<string, number>> {
  const lane = groupId(id);
  if (!Array.isArray(priorities)) v.fail('priorities', 'an array of priorities', priorities);
  if (priorities.length > 10_000) v.fail('priorities', 'at most 10000 priorities', priorities.length);
  const prios = priorities.map((p, i) => v.priority(p, `priorities[${i}]`));
  const out: Record<string, number> = {};
  if (prios.length === 0) return out;
  const counts = await laneCountsPerPriority(ctx.client, ctx.keys, [lane], prios);
  prios.forEach((prio, i) => {
    out[String(prio)] = counts[i];
  });
  return out;
}

// ---- Worker ----------------------------------------------------------------------------------

/**
 * worker.rateLimitGroup(job, ms): the job's group leaves the ring for ms (a 429 from upstream);
 * other groups keep flowing. Throw `Worker.RateLimitError()` after it so the job goes back to
 * its group without using an attempt.
 */
export async function rateLimitGroup(ctx: ScriptContext, job: Job, ms: unknown): Promise<void> {
  const t = v.integerIn('ms', ms, 1, 86_400_000);
  if (!job || typeof job !== 'object' || typeof job.lane !== 'string') v.fail('job', 'a Job', job);
  await raw.rateLimitLane(ctx, [jobGroupId(job), t]);
}
