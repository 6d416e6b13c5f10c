/**
 * Read-only inspection: counts, lanes, jobs by state. Used by Queue, the CLI and the dashboard;
 * the worker hot path never imports it. Nothing here writes to Redis.
 */
import type { RedisClient } from './connection.js';
import { jobKey, laneKey, queueKeys, unescapeQueueName, type QueueKeys } from './keys.js';
import { Job, type JobContext } from './job.js';
import * as v from './validate.js';

export const JOB_STATES = ['waiting', 'prioritized', 'active', 'delayed', 'completed', 'failed', 'paused', 'waiting-children'] as const;
export type JobStateName = (typeof JOB_STATES)[number];
export type JobCounts = Record<JobStateName, number>;

export function validateStates(states: readonly unknown[], field = 'states'): JobStateName[] {
  if (!Array.isArray(states)) v.fail(field, `a state name or a list of ${JOB_STATES.join(', ')}`, states);
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
    .zcard(keys.wchildren)
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
    'waiting-children': Number(r![5][1]),
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
  while (ids.length < limit) {
    const lanes = await client.zrangebylex(keys.lanes, cursor, '+', 'LIMIT', 0, PAGE);
    for (const lane of lanes) {
      let offset = 0;
      while (ids.length < limit) {
        const want = Math.min(PAGE, limit - ids.length);
        const page = await laneReadyIds(client, keys, lane, which, offset, want);
        for (const id of page) ids.push(id);
        if (page.length < want) break;
        offset += page.length;
      }
      if (ids.length >= limit) break;
    }
    if (lanes.length < PAGE) break;
    cursor = `(${lanes[lanes.length - 1]}`;
  }
  return ids;
}

/** Most members one range read returns: a long range is read in pages, so no call blocks Redis. */
const RANGE_PAGE = 1000;

async function setIds(client: RedisClient, key: string, start: number, end: number, asc: boolean): Promise<string[]> {
  const last = end < 0 ? (await client.zcard(key)) - 1 : end;
  const ids: string[] = [];
  for (let from = start; from <= last; from += RANGE_PAGE) {
    const to = Math.min(last, from + RANGE_PAGE - 1);
    const page = asc ? await client.zrange(key, from, to) : await client.zrevrange(key, from, to);
    for (const id of page) ids.push(id);
    if (page.length < to - from + 1) break;
  }
  return ids;
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
      const key = { active: keys.active, delayed: keys.delayed, completed: keys.completed, failed: keys.failed, 'waiting-children': keys.wchildren }[s];
      list = await setIds(client, key, start, end, asc);
    }
    for (const id of list) ids.push(id); // not push(...list): a long list overflows the stack
  }
  return loadJobs(ctx, ids);
}

export async function loadJobs(ctx: JobContext, ids: readonly string[]): Promise<Job[]> {
  const jobs: Job[] = [];
  // One pipeline per RANGE_PAGE jobs: Redis never buffers the replies of a huge listing at once.
  for (let from = 0; from < ids.length; from += RANGE_PAGE) {
    const page = ids.slice(from, from + RANGE_PAGE);
    const p = ctx.client.pipeline();
    for (const id of page) p.hgetall(jobKey(ctx.keys, id));
    const r = (await p.exec())!;
    r.forEach(([err, h], i) => {
      if (!err && h && Object.keys(h as object).length > 0) jobs.push(Job.fromHash(ctx, page[i], h as Record<string, string>));
    });
  }
  return jobs;
}

const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, '\\$&');

/**
 * Names of the queues under a prefix, sorted, found by SCAN of `<prefix>:{*}:meta` (every
 * master of a Cluster). A queue whose meta hash does not exist yet (no job was ever added and
 * it was never paused) is not listed. Read-only; SCAN is incremental, so Redis is never blocked.
 */
export async function listQueues(client: RedisClient, prefix = 'emq'): Promise<string[]> {
  // Pattern pieces come from keys.ts so the key layout stays defined in one place.
  const probe = queueKeys('', prefix); // `<prefix>:{}:`
  const head = probe.base.slice(0, -2); // `<prefix>:{`
  const tail = probe.meta.slice(probe.base.length - 2); // `}:meta`
  const pattern = globEscape(head) + '*' + globEscape(tail);
  const nodes = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('master') : [client];
  const names = new Set<string>();
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      for (const key of batch) {
        if (!key.startsWith(head) || !key.endsWith(tail)) continue;
        const escaped = key.slice(head.length, key.length - tail.length);
        // A lane or job key can end in `}:meta` too; a queue's escaped name never holds braces.
        if (/[{}]/.test(escaped)) continue;
        names.add(unescapeQueueName(escaped));
      }
    } while (cursor !== '0');
  }
  return [...names].sort();
}

/**
 * One page of a lane's ready job ids in service order: `waiting` = priority 0, `prioritized` =
 * priority > 0. Read-only; one ZRANGEBYSCORE.
 */
export async function laneReadyIds(
  client: RedisClient,
  keys: QueueKeys,
  lane: string,
  which: 'waiting' | 'prioritized',
  offset: number,
  count: number,
): Promise<string[]> {
  const [min, max] = which === 'waiting' ? ['0', '0'] : ['(0', '+inf'];
  const members = await client.zrangebyscore(laneKey(keys, lane), min, max, 'LIMIT', offset, count);
  return members.map((m) => m.slice(14));
}
