/**
 * What fairness is doing, for the lanes view: each lane's share of service (its part of the
 * queue's most recent job starts) and the age of the job at the head of each lane. Neither has
 * an index, and none is added to the hot path: both are bounded reads made only while someone
 * looks at the lanes, measured in test/dashboard-reads.test.ts.
 *
 * - Share: the newest `active` events of the queue's events stream, read backwards (at most
 *   SHARE_SAMPLE starts, SHARE_SCAN entries), then one HMGET per started job for its lane. A
 *   job already removed (removeOnComplete) has no lane left and counts as unknown. The events
 *   stream is capped, so the sample covers what the cap keeps; the reply says which period.
 * - Oldest waiting: one ZRANGE of the lane's first member (and its one-job form) per lane
 *   shown, then one HGET of the head job's creation time.
 */
import type { RedisClient } from '../core/connection.js';
import { jobKey, laneKey, type QueueKeys } from '../core/keys.js';
import { JobField } from '../core/fields.js';
import { DEFAULT_LANE } from '../core/options.js';
import { parseLone } from '../ops/lane-ready.js';

/** Most job starts counted, and most stream entries examined to find them. */
export const SHARE_SAMPLE = 2000;
export const SHARE_SCAN = 8000;
const PAGE = 1000;

export interface LaneShare {
  /** Event times (ms) of the oldest and newest start counted; null with none. */
  from: number | null;
  to: number | null;
  /** Starts counted, and those whose job was gone before its lane could be read. */
  started: number;
  unknown: number;
  /** Starts per lane, most first. */
  lanes: Array<{ lane: string; started: number; share: number }>;
}

export async function laneShare(client: RedisClient, keys: QueueKeys): Promise<LaneShare> {
  const starts: Array<{ id: string; ms: number }> = [];
  let end = '+';
  for (let scanned = 0; scanned < SHARE_SCAN && starts.length < SHARE_SAMPLE; ) {
    const page = await client.xrevrange(keys.events, end, '-', 'COUNT', Math.min(PAGE, SHARE_SCAN - scanned));
    for (const [id, f] of page) {
      if (f[0] !== 'event' || f[1] !== 'active') continue;
      const ms = Number(id.slice(0, id.indexOf('-')));
      for (let i = 2; i < f.length; i += 2) if (f[i] === 'jobId' && starts.length < SHARE_SAMPLE) starts.push({ id: f[i + 1], ms });
    }
    scanned += page.length;
    if (page.length < PAGE) break;
    end = '(' + page[page.length - 1][0];
  }
  const p = client.pipeline();
  for (const s of starts) p.hmget(jobKey(keys, s.id), JobField.lane, JobField.timestamp);
  const counts = new Map<string, number>();
  let unknown = 0;
  for (const [, r] of starts.length ? (await p.exec())! : []) {
    const [lane, ts] = r as [string | null, string | null];
    if (ts === null) unknown++;
    else counts.set(lane ?? DEFAULT_LANE, (counts.get(lane ?? DEFAULT_LANE) ?? 0) + 1);
  }
  const known = starts.length - unknown;
  return {
    from: starts.length ? starts[starts.length - 1].ms : null,
    to: starts.length ? starts[0].ms : null,
    started: starts.length,
    unknown,
    lanes: [...counts].map(([lane, n]) => ({ lane, started: n, share: n / known })).sort((a, b) => b.started - a.started || (a.lane < b.lane ? -1 : 1)),
  };
}

/** Creation time of the job at the head of each lane (service order), or null for an empty lane. */
export async function laneHeads(client: RedisClient, keys: QueueKeys, lanes: readonly string[]): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  if (lanes.length === 0) return out;
  const p = client.pipeline();
  for (const lane of lanes) {
    p.zrange(laneKey(keys, lane), 0, 0);
    p.hget(keys.lone, lane);
  }
  const r = (await p.exec())!;
  // A lane member is a 14-character order key followed by the job id (lane-ready.ts).
  const heads: Array<[string, string]> = [];
  lanes.forEach((lane, i) => {
    const member = (r[2 * i][1] as string[])[0] ?? parseLone(r[2 * i + 1][1] as string | null)?.member;
    if (member !== undefined) heads.push([lane, member.slice(14)]);
    else out.set(lane, null);
  });
  if (heads.length > 0) {
    const tp = client.pipeline();
    for (const [, id] of heads) tp.hget(jobKey(keys, id), JobField.timestamp);
    (await tp.exec())!.forEach(([, ts], i) => out.set(heads[i][0], ts === null ? null : Number(ts)));
  }
  return out;
}
