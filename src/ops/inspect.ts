/**
 * Read-only inspection: counts, lanes, jobs by state. Used by Queue, the CLI and the dashboard;
 * the worker hot path never imports it. Nothing here writes to Redis.
 */
import type { RedisClient } from '../core/connection.js';
import { jobKey, laneKey, queueKeys, unescapeQueueName, type QueueKeys } from '../core/keys.js';
import * as v from '../core/validate.js';
import { MetaField } from '../core/fields.js';
import { laneCounts, laneMembersByScore } from './lane-ready.js';
import { countSet, setSize, setWindow } from './active-set.js';

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
  const m = client.multi().hmget(keys.meta, MetaField.ready, MetaField.readyPrioritized, MetaField.paused);
  const r = await countSet(m, keys, keys.active) // its jobs, not the sentinel (active-set.ts)
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

/** BullMQ's JobType: a state name, `wait` (alias of waiting), `paused` or `repeat`. */
export const JOB_TYPES = [
  'active', 'completed', 'delayed', 'failed', 'prioritized', 'waiting', 'waiting-children', 'wait', 'paused', 'repeat',
] as const;
export type JobType = (typeof JOB_TYPES)[number];
/** The types BullMQ's getters use when none are given, in BullMQ's order. */
export const DEFAULT_JOB_TYPES: readonly JobType[] = ['active', 'completed', 'delayed', 'failed', 'prioritized', 'waiting', 'waiting-children'];

/**
 * BullMQ's types argument: one name or a list; duplicates dropped; none = DEFAULT_JOB_TYPES.
 * Unknown names are refused (BullMQ would count or list an unrelated key).
 */
export function jobTypes(types: unknown, field = 'types'): JobType[] {
  const list = typeof types === 'string' ? [types] : types === undefined ? [] : types;
  if (!Array.isArray(list)) v.fail(field, `a job type or a list of ${JOB_TYPES.join(', ')}`, types);
  for (const t of list) if (!(JOB_TYPES as readonly unknown[]).includes(t)) v.fail(field, `a list of ${JOB_TYPES.join(', ')}`, t);
  return list.length === 0 ? [...DEFAULT_JOB_TYPES] : ([...new Set(list)] as JobType[]);
}

/**
 * The list a BullMQ type reads. BullMQ 6 keeps a paused queue's jobs in its wait list (its
 * `paused` list is a leftover of older versions, always empty), so `waiting` counts and lists
 * priority-0 ready jobs whether the queue is paused or not, and `paused` is always empty (null).
 * `repeat` is the job scheduler set.
 */
export function typeKind(t: JobType): ListKind | null {
  switch (t) {
    case 'wait':
    case 'waiting':
      return 'ready';
    case 'prioritized':
      return 'readyP';
    case 'paused':
      return null;
    case 'repeat':
      return 'scheds';
    case 'waiting-children':
      return 'wchildren';
    default:
      return t;
  }
}

/** BullMQ's getJobCounts: one count per type, keyed by the name given (one MULTI). */
export async function countJobTypes(client: RedisClient, keys: QueueKeys, types: readonly JobType[]): Promise<Record<string, number>> {
  const kinds = types.map(typeKind);
  const counts = await kindCounts(client, keys, kinds.filter((k): k is ListKind => k !== null));
  const out: Record<string, number> = {};
  let i = 0;
  types.forEach((t, k) => (out[t] = kinds[k] === null ? 0 : counts[i++]));
  return out;
}

/** BullMQ's getRanges: ids of each type's window, concatenated in the order of the types, without duplicates. */
export async function typeRanges(
  client: RedisClient, keys: QueueKeys, types: readonly JobType[], start: number, end: number, asc: boolean,
): Promise<string[]> {
  const seen = new Set<string>();
  for (const t of types) {
    const kind = typeKind(t);
    if (kind === null) continue;
    for (const id of await rangeIds(client, keys, kind, start, end, asc)) seen.add(id);
  }
  return [...seen];
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
    // A one-job lane (lane-ready.ts) holds its job in `lone` and is in the ring without inring.
    p.hexists(keys.lone, lane);
  }
  const r = (await p.exec())!.map(([err, val]) => {
    if (err) throw err;
    return val as string | number | null;
  });
  return names.map((name, i) => {
    const o = i * 8;
    const lone = Number(r[o + 7]);
    const rate = r[o + 5] as string | null;
    const [max, duration] = rate ? rate.split(':').map(Number) : [0, 0];
    return {
      name,
      depth: Number(r[o]) + lone,
      active: Number(r[o + 1] ?? 0),
      weight: Number(r[o + 2] ?? 1),
      limit: r[o + 3] === null ? null : Number(r[o + 3]),
      paused: Number(r[o + 4]) === 1,
      rate: rate ? { max, duration } : null,
      inRing: Number(r[o + 6]) === 1 || lone === 1,
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

/** Most members one range read returns: a long range is read in pages, so no call blocks Redis. */
export const RANGE_PAGE = 1000;

/**
 * The lists a listing reads: `ready` = ready jobs of priority 0 (BullMQ's wait list), `readyP` =
 * ready jobs of priority > 0 (BullMQ's prioritized set), the state sets, and `scheds` (BullMQ's
 * `repeat` set: job scheduler ids by next slot).
 */
export type ListKind = 'ready' | 'readyP' | 'active' | 'delayed' | 'completed' | 'failed' | 'wchildren' | 'scheds';

/**
 * Redis range semantics (LRANGE/ZRANGE) over a sequence of n members: negative indices count
 * from the end, a range past the end is cut. Returns the inclusive window, or null when empty.
 */
export function normalizeRange(start: number, end: number, n: number): [number, number] | null {
  const s = start < 0 ? Math.max(0, n + start) : start;
  const e = end < 0 ? n + end : Math.min(end, n - 1);
  return s > e || s >= n ? null : [s, e];
}

/** Reads the integer range arguments of a listing (any sign, as in Redis). */
export function rangeArgs(start: unknown, end: unknown): [number, number] {
  return [
    v.integerIn('start', start, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'an integer'),
    v.integerIn('end', end, -Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, 'an integer'),
  ];
}

/** Number of members of each list kind (one MULTI); `ready`/`readyP` come from the meta counters. */
export async function kindCounts(client: RedisClient, keys: QueueKeys, kinds: readonly ListKind[]): Promise<number[]> {
  const m = client.multi().hmget(keys.meta, MetaField.ready, MetaField.readyPrioritized);
  for (const k of kinds) if (k !== 'ready' && k !== 'readyP') countSet(m, keys, setKeyOf(keys, k));
  const r = (await m.exec())!;
  const [ready, readyP] = (r[0][1] as Array<string | null>).map((x) => Number(x ?? 0));
  let i = 1;
  return kinds.map((k) => (k === 'ready' ? ready - readyP : k === 'readyP' ? readyP : Number(r[i++][1])));
}

function setKeyOf(keys: QueueKeys, kind: Exclude<ListKind, 'ready' | 'readyP'>): string {
  return {
    active: keys.active, delayed: keys.delayed, completed: keys.completed, failed: keys.failed, wchildren: keys.wchildren, scheds: keys.scheds,
  }[kind];
}

/**
 * Ids of one list kind in the window start…end (Redis range semantics) of its ascending order,
 * or of the reverse order when asc is false. Orders:
 *
 * - sets (active, delayed, completed, failed, waiting-children, schedulers): by score (lease
 *   deadline, due time, finish time, creation time, next slot), ties by member bytes;
 * - ready jobs (`ready`, `readyP`): lane by lane in lane-name order, and inside a lane in service
 *   order (priority, then arrival; LIFO jobs ahead). With one lane (every BullMQ program) this is
 *   exactly the order in which jobs will be served, BullMQ's order. Descending is the exact
 *   reverse (the last lane first, each lane newest first).
 *
 * Cost: a set window costs one ZRANGE per 1,000 ids. A ready window is read from the nearer end
 * of the sequence (total from the meta counters): one ZCOUNT per lane passed on the way (in
 * pipelines of 500 lanes, skipped when the window starts at that end) and one ZRANGEBYSCORE per
 * lane and 1,000 ids read, so the first and the last pages cost the same however many lanes and
 * jobs the queue has, and no call reads every lane.
 */
export async function rangeIds(client: RedisClient, keys: QueueKeys, kind: ListKind, start: number, end: number, asc: boolean): Promise<string[]> {
  if (kind !== 'ready' && kind !== 'readyP') return setRange(client, keys, setKeyOf(keys, kind), start, end, asc);
  const [n] = await kindCounts(client, keys, [kind]);
  const w = normalizeRange(start, end, n);
  if (!w) return [];
  const [s, e] = w;
  // Read from whichever end of the sequence is nearer the window.
  if (s <= n - 1 - e) return readyForward(client, keys, kind, asc, s, e - s + 1);
  return (await readyForward(client, keys, kind, !asc, n - 1 - e, e - s + 1)).reverse();
}

async function setRange(client: RedisClient, keys: QueueKeys, key: string, start: number, end: number, asc: boolean): Promise<string[]> {
  let s = start;
  let e = end;
  if (s < 0 || e < 0) {
    const w = normalizeRange(s, e, await setSize(client, keys, key));
    if (!w) return [];
    [s, e] = w;
  }
  const ids: string[] = [];
  for (let from = s; from <= e; from += RANGE_PAGE) {
    const to = Math.min(e, from + RANGE_PAGE - 1);
    const page = await setWindow(client, keys, key, from, to, asc);
    for (const id of page) ids.push(id); // not push(...page): a long list overflows the stack
    if (page.length < to - from + 1) break;
  }
  return ids;
}

/**
 * `count` ready ids from position `offset` of the ascending (forward = true) or descending
 * sequence of a ready kind: lanes in name order (or reverse), each lane in service order (or
 * reverse). Lanes before the offset are passed by their ZCOUNT, without reading their members.
 */
async function readyForward(
  client: RedisClient, keys: QueueKeys, kind: 'ready' | 'readyP', forward: boolean, offset: number, count: number,
): Promise<string[]> {
  const [min, max] = kind === 'ready' ? ['0', '0'] : ['(0', '+inf'];
  const ids: string[] = [];
  let skip = offset;
  let cursor = forward ? '-' : '+';
  while (ids.length < count) {
    const lanes = forward
      ? await client.zrangebylex(keys.lanes, cursor, '+', 'LIMIT', 0, PAGE)
      : await client.zrevrangebylex(keys.lanes, cursor, '-', 'LIMIT', 0, PAGE);
    const sizes = skip > 0 ? await laneCounts(client, keys, lanes, min, max) : undefined;
    for (let i = 0; i < lanes.length && ids.length < count; i++) {
      if (sizes && skip >= sizes[i]) {
        skip -= sizes[i];
        continue;
      }
      let from = skip;
      skip = 0;
      for (;;) {
        const want = Math.min(RANGE_PAGE, count - ids.length);
        const page = await laneMembersByScore(client, keys, lanes[i], min, max, from, want, !forward);
        for (const m of page) ids.push(m.slice(14)); // member = 14-hex-digit stamp + job id
        if (page.length < want || ids.length >= count) break;
        from += page.length;
      }
    }
    if (lanes.length < PAGE) break;
    cursor = `(${lanes[lanes.length - 1]}`;
  }
  return ids;
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
  const members = await laneMembersByScore(client, keys, lane, min, max, offset, count);
  return members.map((m) => m.slice(14));
}
