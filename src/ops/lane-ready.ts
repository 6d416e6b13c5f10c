/**
 * Reading a lane's ready jobs from outside the scripts. They are in the lane's sorted set
 * (`lane:<lane>`: score = priority, member = 14-character arrival stamp + job id) or, for a
 * one-job lane, in the lane's field of the `lone` hash (`<priority>:<member>`), never in both
 * (docs/internals.md, "One-job lanes"). Every reader of lane contents goes through here, so the
 * two forms read as one sorted set. Read-only.
 */
import type { RedisClient } from '../core/connection.js';
import { laneKey, type QueueKeys } from '../core/keys.js';

/** A one-job lane's job as its sorted set would hold it. */
export interface LoneEntry {
  score: number;
  member: string;
}

/** Decodes a lone field (`<priority>:<member>`); null for none. */
export function parseLone(value: string | null | undefined): LoneEntry | null {
  if (value === null || value === undefined) return null;
  const m = /^(\d+):([\s\S]*)$/.exec(value);
  return m ? { score: Number(m[1]), member: m[2] } : null;
}

/** Whether a score is inside a ZRANGEBYSCORE bound pair ('-inf', '+inf', '(x' exclusive, 'x'). */
export function inScoreRange(score: number, min: string | number, max: string | number): boolean {
  const bound = (b: string | number): { v: number; open: boolean } => {
    const s = String(b);
    const open = s.startsWith('(');
    const t = open ? s.slice(1) : s;
    return { v: t === '-inf' ? -Infinity : t === '+inf' || t === 'inf' ? Infinity : Number(t), open };
  };
  const lo = bound(min);
  const hi = bound(max);
  return (lo.open ? score > lo.v : score >= lo.v) && (hi.open ? score < hi.v : score <= hi.v);
}

function results(rows: Array<[Error | null, unknown]> | null): unknown[] {
  return (rows ?? []).map(([err, val]) => {
    if (err) throw err;
    return val;
  });
}

/** The ready jobs of each lane whose priority is in [min, max] (ZCOUNT bounds): one pipeline. */
export async function laneCounts(
  client: RedisClient,
  keys: QueueKeys,
  lanes: readonly string[],
  min: string | number = '-inf',
  max: string | number = '+inf',
): Promise<number[]> {
  if (lanes.length === 0) return [];
  const p = client.pipeline();
  for (const lane of lanes) {
    p.zcount(laneKey(keys, lane), min, max);
    p.hget(keys.lone, lane);
  }
  const r = results(await p.exec());
  return lanes.map((_, i) => {
    const lone = parseLone(r[2 * i + 1] as string | null);
    return Number(r[2 * i]) + (lone && inScoreRange(lone.score, min, max) ? 1 : 0);
  });
}

/** Ready jobs of some lanes together, per priority: `counts[i]` for `priorities[i]`; one pipeline. */
export async function laneCountsPerPriority(
  client: RedisClient,
  keys: QueueKeys,
  lanes: readonly string[],
  priorities: readonly number[],
): Promise<number[]> {
  const counts = priorities.map(() => 0);
  if (lanes.length === 0 || priorities.length === 0) return counts;
  const p = client.pipeline();
  for (const lane of lanes) {
    for (const prio of priorities) p.zcount(laneKey(keys, lane), prio, prio);
    p.hget(keys.lone, lane);
  }
  const r = results(await p.exec());
  const per = priorities.length + 1;
  lanes.forEach((_, l) => {
    const lone = parseLone(r[l * per + priorities.length] as string | null);
    priorities.forEach((prio, i) => {
      counts[i] += Number(r[l * per + i]) + (lone && lone.score === prio ? 1 : 0);
    });
  });
  return counts;
}

/**
 * Members of a lane with a priority in [min, max], from position `offset`, at most `count`,
 * in service order (reverse = the other way): ZRANGEBYSCORE … LIMIT over both forms.
 */
export async function laneMembersByScore(
  client: RedisClient,
  keys: QueueKeys,
  lane: string,
  min: string,
  max: string,
  offset: number,
  count: number,
  reverse = false,
): Promise<string[]> {
  const key = laneKey(keys, lane);
  const [page, lone] = results(
    await (reverse
      ? client.pipeline().zrevrangebyscore(key, max, min, 'LIMIT', offset, count)
      : client.pipeline().zrangebyscore(key, min, max, 'LIMIT', offset, count)
    ).hget(keys.lone, lane).exec(),
  ) as [string[], string | null];
  if (page.length > 0) return page;
  const one = parseLone(lone);
  return one && offset === 0 && count > 0 && inScoreRange(one.score, min, max) ? [one.member] : [];
}

/** Members of a lane from rank `start` to `end` (inclusive; negative from the end): ZRANGE over both forms. */
export async function laneMembersByRank(client: RedisClient, keys: QueueKeys, lane: string, start: number, end: number): Promise<string[]> {
  const [page, lone] = results(await client.pipeline().zrange(laneKey(keys, lane), start, end).hget(keys.lone, lane).exec()) as [
    string[],
    string | null,
  ];
  const one = parseLone(lone);
  if (!one) return page;
  // A one-job lane is a list of one: rank 0 (= -1).
  const s = start < 0 ? start + 1 : start;
  const e = end < 0 ? end + 1 : end;
  return Math.max(s, 0) <= 0 && e >= 0 ? [one.member] : [];
}
