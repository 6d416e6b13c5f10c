/**
 * A reference model of one standalone claim's ring turns (docs/internals.md#the-claim),
 * written the plain way, one rotation per turn: continue the current turn (meta tl/tk) while
 * its lane is in the ring, else rotate the ring head to the tail and serve that lane
 * K = min(weight, depth, limit headroom, rate headroom) jobs; a lane that stops being
 * serviceable leaves the ring; a lane the ring holds alone is served the rest of the call in
 * one turn. The claim script batches its ring work (lib/claim.lua): given the state before a
 * claim, this predicts which lanes the claimed jobs come from, in order, and the ring and turn
 * state after it, so a test can demand that batching changed nothing.
 *
 * Valid only when nothing time-driven happens inside the claim: no due delayed jobs to promote
 * and no rate window reopening (the caller checks), and no global concurrency or rate limit.
 */
import type { Redis } from 'ioredis';
import type { QueueKeys } from '../src/core/keys.js';
import type { LaneSnapshot } from './lane-invariant.js';
import { MetaField } from '../src/core/fields.js';

export interface TurnState {
  /** Lanes of the claimed jobs, in claim order. */
  lanes: string[];
  ring: string[];
  tl: string;
  tk: number;
}

/** What a claim reads besides the snapshot: the turn state and the lanes' rate counters. */
export async function readTurnInputs(c: Redis, keys: QueueKeys, s: LaneSnapshot): Promise<{ tl: string; tk: number; used: Map<string, number> }> {
  const [tl, tk] = await c.hmget(keys.meta, MetaField.turnLane, MetaField.turnLeft);
  const used = new Map<string, number>();
  for (const lane of s.rate.keys()) used.set(lane, Number((await c.get(keys.lrateBase + lane)) ?? 0));
  return { tl: tl ?? '', tk: Number(tk ?? 0), used };
}

export function predictClaim(s: LaneSnapshot, inputs: { tl: string; tk: number; used: Map<string, number> }, n: number): TurnState {
  const ring = [...s.ring];
  const depth = new Map([...s.lanes].map(([l, jobs]) => [l, jobs.length]));
  const act = new Map(s.lactive);
  const used = new Map(inputs.used);
  let { tl, tk } = inputs;
  const lanes: string[] = [];
  let got = 0;
  let turns = 0;
  const maxTurns = n + 16;
  let rotated: string | undefined;
  let alone = false;
  while (got < n && turns < maxTurns) {
    turns++;
    let lane: string;
    let share: number | undefined;
    if (tk > 0 && tl !== '' && ring.includes(tl)) {
      lane = tl;
      share = tk;
    } else {
      if (ring.length === 0) break;
      lane = ring.shift()!;
      ring.push(lane);
      alone = rotated === undefined && n - got > 1 ? ring.length === 1 : lane === rotated;
      rotated = lane;
    }
    share ??= s.weight.get(lane) ?? 1;
    if (alone) share = n - got;
    const d = depth.get(lane) ?? 0;
    const lim = s.limit.get(lane);
    const rate = s.rate.get(lane);
    const rmax = rate === undefined ? undefined : Number(rate.split(':')[0]);
    share = Math.min(share, d);
    if (lim !== undefined) share = Math.min(share, lim - (act.get(lane) ?? 0));
    if (rmax !== undefined) share = Math.min(share, rmax - (used.get(lane) ?? 0));
    share = Math.max(share, 0);
    const take = Math.min(share, n - got);
    for (let i = 0; i < take; i++) lanes.push(lane);
    got += take;
    depth.set(lane, d - take);
    act.set(lane, (act.get(lane) ?? 0) + take);
    used.set(lane, (used.get(lane) ?? 0) + take);
    tl = lane;
    tk = share - take;
    const shut = rmax !== undefined && (used.get(lane) ?? 0) >= rmax;
    if (d - take <= 0 || (lim !== undefined && (act.get(lane) ?? 0) >= lim) || shut) {
      ring.splice(ring.lastIndexOf(lane), 1);
      tk = 0;
    }
  }
  return { lanes, ring, tl, tk };
}
