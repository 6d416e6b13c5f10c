/**
 * Read-only inspection: counts, lanes, jobs by state. Used by Queue, the CLI and the dashboard;
 * the worker hot path never imports it. Nothing here writes to Redis.
 */
import type { RedisClient } from './connection.js';
import { jobKey, laneKey, type QueueKeys } from './keys.js';
import { Job, type JobContext } from './job.js';
import * as v from './validate.js';

export const JOB_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'paused'] as const;
export type JobStateName = (typeof JOB_STATES)[number];
export type JobCounts = Record<JobStateName, number>;

export function validateStates(states: readonly unknown[], field = 'states'): JobStateName[] {
  const list = states.length === 0 ? [...JOB_STATES] : states;
  for (const s of list) {
    if (!(JOB_STATES as readonly unknown[]).includes(s)) v.fail(field, `a list of ${JOB_STATES.join(', ')}`, s);
  }
  return [...new Set(list)] as JobStateName[];
}

export async function getJobCounts(client: RedisClient, keys: QueueKeys, states: readonly unknown[] = []): Promise<Partial<JobCounts>> {
  const wanted = validateStates(states);
  const r = await client
    .multi()
    .hmget(keys.meta, 'ready', 'readyP', 'paused')
    .zcard(keys.active)
    .zcard(keys.delayed)
    .zcard(keys.completed)
    .zcard(keys.failed)
    .exec();
  const [ready, readyP, paused] = (r![0][1] as Array<string | null>).map((x) => x);
  const nReady = Number(ready ?? 0);
  const nPrio = Number(readyP ?? 0);
  const isPaused = paused === '1';
  const all: JobCounts = {
    waiting: isPaused ? 0 : nReady - nPrio,
    prioritized: nPrio,
    active: Number(r![1][1]),
    delayed: Number(r![2][1]),
    completed: Number(r![3][1]),
    failed: Number(r![4][1]),
    paused: isPaused ? nReady - nPrio : 0,
  };
  const out: Partial<JobCounts> = {};
  for (const s of wanted) out[s] = all[s];
  return out;
}

export interface LaneInfo {
  name: string;
  /** Ready jobs waiting in the lane. */
  depth: number;
  /** Jobs of the lane being processed now. */
  active: number;
  weight: number;
  /** Most jobs of the lane active at once; null = no limit. */
  limit: number | null;
  paused: boolean;
  /** Per-lane rate limit, or null. */
  rate: { max: number; duration: number } | null;
  /** The lane is in the ring (serviceable now). */
  inRing: boolean;
}

export async function laneInfos(client: RedisClient, keys: QueueKeys, names: readonly string[]): Promise<LaneInfo[]> {
  if (names.length === 0) return [];
  const p = client.pipeline();
  for (const lane of names) {
    p.zcard(laneKey(keys, lane));
    p.hget(keys.lactive, lane);
    p.hget(keys.lweight, lane);
    p.hget(keys.llimit, lane);
    p.sismember(keys.lpaused, lane);
    p.hget(keys.lrate, lane);
    p.sismember(keys.inring, lane);
  }
  const r = (await p.exec())!.map(([err, val]) => {
    if (err) throw err;
    return val as string | number | null;
  });
  return names.map((name, i) => {
    const o = i * 7;
    const rate = r[o + 5] as string | null;
    const [max, duration] = rate ? rate.split(':').map(Number) : [0, 0];
    return {
      name,
      depth: Number(r[o]),
      active: Number(r[o + 1] ?? 0),
      weight: Number(r[o + 2] ?? 1),
      limit: r[o + 3] === null ? null : Number(r[o + 3]),
      paused: Number(r[o + 4]) === 1,
      rate: rate ? { max, duration } : null,
      inRing: Number(r[o + 6]) === 1,
    };
  });
}

/** One page of lanes in name order. `cursor` is the last name of the previous page. */
export async function listLanes(
  client: RedisClient,
  keys: QueueKeys,
  opts: { cursor?: string; count?: number } = {},
): Promise<{ lanes: LaneInfo[]; cursor: string | null }> {
  const count = opts.count === undefined ? 100 : v.integerIn('count', opts.count, 1, 10000);
  const cursor = opts.cursor === undefined || opts.cursor === '' ? undefined : v.string('cursor', opts.cursor);
  const names = await client.zrangebylex(keys.lanes, cursor === undefined ? '-' : `(${cursor}`, '+', 'LIMIT', 0, count);
  const lanes = await laneInfos(client, keys, names);
  return { lanes, cursor: names.length === count ? names[names.length - 1] : null };
}

const PAGE = 500;

/** Ready jobs of all lanes, in lane-name order and service order inside a lane. */
async function readyIds(client: RedisClient, keys: QueueKeys, which: 'waiting' | 'prioritized', limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor = '-';
  const [min, max] = which === 'waiting' ? ['0', '0'] : ['(0', '+inf'];
  while (ids.length < limit) {
    const lanes = await client.zrangebylex(keys.lanes, cursor, '+', 'LIMIT', 0, PAGE);
    for (const lane of lanes) {
      let offset = 0;
      while (ids.length < limit) {
        const want = Math.min(PAGE, limit - ids.length);
        const members = await client.zrangebyscore(laneKey(keys, lane), min, max, 'LIMIT', offset, want);
        for (const m of members) ids.push(m.slice(14));
        if (members.length < want) break;
        offset += members.length;
      }
      if (ids.length >= limit) break;
    }
    if (lanes.length < PAGE) break;
    cursor = `(${lanes[lanes.length - 1]}`;
  }
  return ids;
}

async function setIds(client: RedisClient, key: string, start: number, end: number, asc: boolean): Promise<string[]> {
  return asc ? client.zrange(key, start, end) : client.zrevrange(key, start, end);
}

/**
 * Jobs in the given states. For each state the range start…end (inclusive, -1 = to the end)
 * is taken in that state's order: ready jobs (waiting, prioritized, paused) always in service
 * order, lane by lane; active by lease deadline, delayed by due time, finished by finish time,
 * where asc=false (the default, as in BullMQ) lists the newest first.
 */
export async function getJobs(
  ctx: JobContext,
  states: readonly unknown[] = [],
  start = 0,
  end = -1,
  asc = false,
): Promise<Job[]> {
  const wanted = validateStates(states);
  v.nonNegativeInt('start', start);
  v.integerIn('end', end, -1, Number.MAX_SAFE_INTEGER);
  const { client, keys } = ctx;
  const paused = (await client.hget(keys.meta, 'paused')) === '1';
  const ids: string[] = [];
  for (const s of wanted) {
    let list: string[] = [];
    if (s === 'waiting' || s === 'prioritized' || s === 'paused') {
      if ((s === 'paused') !== paused && s !== 'prioritized') continue;
      const which = s === 'prioritized' ? 'prioritized' : 'waiting';
      const limit = end < 0 ? Number.MAX_SAFE_INTEGER : end + 1;
      list = (await readyIds(client, keys, which, limit)).slice(start);
    } else {
      const key = { active: keys.active, delayed: keys.delayed, completed: keys.completed, failed: keys.failed }[s];
      list = await setIds(client, key, start, end, asc);
    }
    ids.push(...list);
  }
  return loadJobs(ctx, ids);
}

export async function loadJobs(ctx: JobContext, ids: readonly string[]): Promise<Job[]> {
  if (ids.length === 0) return [];
  const p = ctx.client.pipeline();
  for (const id of ids) p.hgetall(jobKey(ctx.keys, id));
  const r = (await p.exec())!;
  const jobs: Job[] = [];
  r.forEach(([err, h], i) => {
    if (!err && h && Object.keys(h as object).length > 0) jobs.push(new Job(ctx, ids[i], h as Record<string, string>));
  });
  return jobs;
}
