/**
 * Listings of a sharded queue (ShardedQueue.getJobs / getRanges / getJobCounts): the shards'
 * lists merged into one, with the same semantics as a plain queue's (BullMQ's job types, Redis
 * range semantics on the merged list, asc both ways; inspect.rangeIds). Read-only.
 *
 * Merged orders: ready jobs lane by lane in lane-name order (a lane lives on one shard, so its
 * service order is kept), the sets by score across shards (ties: shard order, then member). A
 * window is read from the nearer end of the merged list: the first `k` members of that direction
 * from every shard, k = the window's far edge, so the cost is shards × k.
 */
import type { RedisClient } from '../core/connection.js';
import type { QueueKeys } from '../core/keys.js';
import { Job, type JobContext } from '../job/job.js';
import { countJobTypes, kindCounts, normalizeRange, rangeIds, typeKind, type JobType, type ListKind } from '../ops/inspect.js';
import { setWindowWithScores } from '../ops/active-set.js';
import { loadJobs } from '../job/load-jobs.js';

const PAGE = 1000;
const byteCompare = (a: string, b: string): number => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));

/** A merged entry: its shard, id, and the job when it had to be loaded to be placed (ready kinds). */
export interface ShardRef {
  shard: number;
  id: string;
  job?: Job;
}

/** Sum of each type's count over the shards, keyed by the name given. */
export async function shardedCounts(
  client: RedisClient, shardKeys: readonly QueueKeys[], types: readonly JobType[],
): Promise<Record<string, number>> {
  const per = await Promise.all(shardKeys.map((k) => countJobTypes(client, k, types)));
  const out: Record<string, number> = {};
  for (const t of types) out[t] = per.reduce((a, c) => a + c[t], 0);
  return out;
}

/** The merged window start…end of each type's list (each id once), in the order of the types. */
export async function shardedRefs(
  client: RedisClient,
  shCtx: readonly JobContext[],
  types: readonly JobType[],
  start: number,
  end: number,
  asc: boolean,
): Promise<ShardRef[]> {
  const out: ShardRef[] = [];
  const seen = new Set<string>();
  for (const kind of new Set(types.map(typeKind))) {
    if (kind === null) continue;
    for (const r of await mergedWindow(client, shCtx, kind, start, end, asc)) {
      const key = `${r.shard}:${r.id}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(r);
    }
  }
  return out;
}

async function mergedWindow(
  client: RedisClient, shCtx: readonly JobContext[], kind: ListKind, start: number, end: number, asc: boolean,
): Promise<ShardRef[]> {
  const n = (await Promise.all(shCtx.map((c) => kindCounts(client, c.keys, [kind])))).reduce((a, [x]) => a + x, 0);
  const w = normalizeRange(start, end, n);
  if (!w) return [];
  const [s, e] = w;
  const fromStart = s <= n - 1 - e;
  const dirAsc = fromStart ? asc : !asc;
  const far = fromStart ? e : n - 1 - s; // last index needed, counted in that direction
  const merged = kind === 'ready' || kind === 'readyP'
    ? await mergeReady(client, shCtx, kind, far, dirAsc)
    : await mergeSets(client, shCtx, kind, far, dirAsc);
  return fromStart ? merged.slice(s, e + 1) : merged.slice(n - 1 - e, n - s).reverse();
}

async function mergeReady(client: RedisClient, shCtx: readonly JobContext[], kind: ListKind, far: number, dirAsc: boolean): Promise<ShardRef[]> {
  const rows = await Promise.all(shCtx.map(async (ctx, shard) => {
    const jobs = await loadJobs(ctx, await rangeIds(client, ctx.keys, kind, 0, far, dirAsc));
    return jobs.map((job, pos) => ({ shard, id: job.id, job, pos }));
  }));
  const sign = dirAsc ? 1 : -1;
  return rows.flat().sort((a, b) => sign * byteCompare(a.job.lane, b.job.lane) || a.shard - b.shard || a.pos - b.pos);
}

async function mergeSets(
  client: RedisClient, shCtx: readonly JobContext[], kind: Exclude<ListKind, 'ready' | 'readyP'>, far: number, dirAsc: boolean,
): Promise<ShardRef[]> {
  const keyOf = (k: QueueKeys) => ({
    active: k.active, delayed: k.delayed, completed: k.completed, failed: k.failed, wchildren: k.wchildren, scheds: k.scheds,
  })[kind];
  const rows = await Promise.all(shCtx.map(async (ctx, shard) => {
    const key = keyOf(ctx.keys);
    const r: Array<ShardRef & { score: number }> = [];
    for (let from = 0; from <= far; from += PAGE) { // paged: no call returns more than PAGE members
      const to = Math.min(far, from + PAGE - 1);
      const flat = await setWindowWithScores(client, ctx.keys, key, from, to, dirAsc);
      for (let i = 0; i < flat.length; i += 2) r.push({ shard, id: flat[i], score: Number(flat[i + 1]) });
      if (flat.length / 2 < to - from + 1) break;
    }
    return r;
  }));
  // Stable sort: ties go by shard, and inside a shard keep Redis's order (member order, reversed
  // with the direction). Shards tie in reverse when descending, so a window read from the far end
  // and reversed lists ties as one read from the start does.
  return rows.flat().sort((a, b) => (dirAsc ? a.score - b.score || a.shard - b.shard : b.score - a.score || b.shard - a.shard));
}

/** The jobs of merged refs, in their order (jobs already loaded are kept). */
export async function loadRefs(shCtx: readonly JobContext[], refs: readonly ShardRef[]): Promise<Job[]> {
  const byShard = new Map<number, string[]>();
  for (const r of refs) if (!r.job) (byShard.get(r.shard) ?? byShard.set(r.shard, []).get(r.shard)!).push(r.id);
  const found = new Map<string, Job>();
  await Promise.all([...byShard].map(async ([shard, ids]) => {
    for (const j of await loadJobs(shCtx[shard], ids)) found.set(`${shard}:${j.id}`, j);
  }));
  return refs.map((r) => r.job ?? found.get(`${r.shard}:${r.id}`)).filter((j): j is Job => j !== undefined);
}
