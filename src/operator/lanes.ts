/**
 * Operator views of a queue's lanes that need the whole lane set: the deepest (most active,
 * heaviest) lanes, and the check that a lane named on the command line is one the queue knows.
 * Both read the lane index in pages, so every Redis call stays bounded however many lanes exist.
 */
import type { Queue } from '../queue/queue.js';
import { laneKey } from '../core/keys.js';
import { laneInfos, type LaneInfo } from '../ops/inspect.js';
import * as v from '../core/validate.js';
import { UserError } from './target.js';
import { ShardedQueue } from './shards.js';

/** Lane names per ZRANGEBYLEX call, and per pipeline of per-lane reads. */
const PAGE = 1000;

export type LaneSortKey = 'depth' | 'active' | 'weight';

/** Largest first; ties in name order (the order `lanes --sort name` shows). */
const before = (a: { name: string; value: number }, b: { name: string; value: number }): number =>
  b.value - a.value || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

/**
 * The `limit` lanes with the largest `key` among all lanes of the queue. Reads the lane index
 * (`lanes`) 1,000 names per ZRANGEBYLEX … LIMIT, and for each page one pipeline of O(1) reads of
 * the sort column (ZCARD + HEXISTS lone for depth, HGET lactive or lweight); a top-k of at most
 * 2 × limit candidates is kept between pages. Then the winners' full rows (laneInfos). For
 * 20,000 lanes that is 20 pages and 20 pipelines; no call reads more than 1,000 lanes.
 */
export async function topLanes(q: Queue, key: LaneSortKey, limit: number): Promise<{ lanes: LaneInfo[]; scanned: number }> {
  v.integerIn('limit', limit, 1, 1_000_000);
  if (q instanceof ShardedQueue) {
    // Each lane lives on one shard: the top of the queue is the top of the shards' tops.
    const parts = await Promise.all(q.shardQueues.map((s) => topLanes(s, key, limit)));
    const lanes = parts.flatMap((p) => p.lanes).sort((a, b) => before({ name: a.name, value: a[key] }, { name: b.name, value: b[key] }));
    return { lanes: lanes.slice(0, limit), scanned: parts.reduce((n, p) => n + p.scanned, 0) };
  }
  const { client, keys } = q;
  let top: Array<{ name: string; value: number }> = [];
  let scanned = 0;
  let cursor = '-';
  for (;;) {
    const names = await client.zrangebylex(keys.lanes, cursor, '+', 'LIMIT', 0, PAGE);
    if (names.length === 0) break;
    scanned += names.length;
    const p = client.pipeline();
    for (const lane of names) {
      if (key === 'depth') p.zcard(laneKey(keys, lane)).hexists(keys.lone, lane);
      else p.hget(key === 'active' ? keys.lactive : keys.lweight, lane);
    }
    const r = (await p.exec())!.map(([err, val]) => {
      if (err) throw err;
      return val as string | number | null;
    });
    names.forEach((name, i) => {
      const value = key === 'depth' ? Number(r[2 * i]) + Number(r[2 * i + 1])
        : r[i] === null ? (key === 'weight' ? 1 : 0) : Number(r[i]);
      top.push({ name, value });
    });
    // Trim now and then rather than per lane: sorting 2k candidates per page stays cheap.
    if (top.length > 2 * limit) top = top.sort(before).slice(0, limit);
    if (names.length < PAGE) break;
    cursor = `(${names[names.length - 1]}`;
  }
  top = top.sort(before).slice(0, limit);
  const lanes: LaneInfo[] = [];
  for (let i = 0; i < top.length; i += PAGE) lanes.push(...(await laneInfos(client, keys, top.slice(i, i + PAGE).map((t) => t.name))));
  // Rows are re-read after the scan, so order by what they show now.
  lanes.sort((a, b) => before({ name: a.name, value: a[key] }, { name: b.name, value: b[key] }));
  return { lanes, scanned };
}

/**
 * Levenshtein distance, cut off at `max` (returns max + 1 beyond it). A dozen lines, used on
 * short names only; not worth a runtime dependency.
 */
export function editDistance(a: string, b: string, max = Infinity): number {
  if (Math.abs(a.length - b.length) > max) return max + 1;
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    let rowMin = i;
    for (let j = 1; j <= b.length; j++) {
      cur[j] = Math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
      rowMin = Math.min(rowMin, cur[j]);
    }
    if (rowMin > max) return max + 1;
    prev = cur;
  }
  return prev[b.length];
}

/** Whether `name` is a close match for `wanted`: a few edits away, or one starts the other. */
function isClose(wanted: string, name: string): boolean {
  const w = wanted.toLowerCase();
  const n = name.toLowerCase();
  if (w.length >= 2 && n.length >= 2 && (n.startsWith(w) || w.startsWith(n))) return true;
  const max = Math.max(1, Math.min(3, Math.floor(w.length / 3)));
  return editDistance(w, n, max) <= max;
}

/** Most lane names examined for close matches (1,000 per call). */
const MATCH_SCAN_CAP = 100_000;

/**
 * Whether the queue knows the lane: it is in the lane index (it has or recently had jobs), has
 * jobs active, or has a setting (weight, limit, rate) or is paused. One pipeline of O(1) reads.
 * Delayed jobs do not register their lane until they are due, so a lane known only from
 * delayed jobs reads as unknown (the refusal says --force).
 */
export async function laneKnown(q: Queue, lane: string): Promise<boolean> {
  const { client, keys } = q;
  const r = (await client.pipeline()
    .zscore(keys.lanes, lane)
    .exists(laneKey(keys, lane))
    .hexists(keys.lone, lane)
    .hget(keys.lactive, lane)
    .sismember(keys.lcfg, lane)
    .sismember(keys.lpaused, lane)
    .exec())!.map(([err, val]) => {
    if (err) throw err;
    return val;
  });
  return r[0] !== null || Number(r[1]) > 0 || Number(r[2]) > 0 || Number(r[3] ?? 0) > 0 || Number(r[4]) > 0 || Number(r[5]) > 0;
}

/** Up to `max` known lane names close to `lane`: the lane index and the configured lanes, read in pages. */
export async function closeLanes(q: Queue, lane: string, max = 5): Promise<string[]> {
  const { client, keys } = q;
  const found = new Set<string>();
  let cursor = '-';
  for (let seen = 0; seen < MATCH_SCAN_CAP; ) {
    const names = await client.zrangebylex(keys.lanes, cursor, '+', 'LIMIT', 0, PAGE);
    seen += names.length;
    for (const n of names) if (isClose(lane, n)) found.add(n);
    if (names.length < PAGE) break;
    cursor = `(${names[names.length - 1]}`;
  }
  let scur = '0';
  do {
    const [next, names] = await client.sscan(keys.lcfg, scur, 'COUNT', PAGE);
    for (const n of names) if (isClose(lane, n)) found.add(n);
    scur = next;
  } while (scur !== '0');
  return [...found]
    .sort((a, b) => editDistance(lane, a) - editDistance(lane, b) || (a < b ? -1 : 1))
    .slice(0, max);
}

/**
 * Refuses a lane the queue does not know (a typo would otherwise pause or tune a lane no job
 * uses, silently), naming close matches. The library accepts any lane on purpose: this check is
 * the operator's.
 */
export async function requireKnownLane(q: Queue, lane: string): Promise<void> {
  v.laneName(lane);
  const sharded = q instanceof ShardedQueue;
  if (await laneKnown(sharded ? q.shardForLane(lane) : q, lane)) return;
  const near = sharded
    ? (await Promise.all(q.shardQueues.map((s) => closeLanes(s, lane)))).flat()
      .sort((a, b) => editDistance(lane, a) - editDistance(lane, b) || (a < b ? -1 : 1)).slice(0, 5)
    : await closeLanes(q, lane);
  const hint = near.length > 0 ? `; did you mean ${near.map((n) => JSON.stringify(n)).join(', ')}?` : '';
  throw new UserError(
    `lane ${JSON.stringify(lane)} of queue ${JSON.stringify(q.name)} has no jobs and no settings${hint} ` +
      '(use --force to act on it anyway, e.g. before its first job arrives)',
  );
}
