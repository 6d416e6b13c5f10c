/**
 * Sharded queues (src/cluster/) in the operator tools: a sharded queue is opened under its
 * logical name and shown as one queue, its counts summed over the shards and each shard listed
 * beside it. The operations (operations.ts) branch here for the reads that go to raw keys;
 * writes go through ShardedQueue, which already spreads them over the shards.
 */
import { ShardedQueue } from '../cluster/sharded.js';
import type { Queue } from '../queue/queue.js';
import type { JobCounts, LaneInfo } from '../ops/inspect.js';
import { registeredShards } from './discovery.js';
import type { Target } from './target.js';

export { ShardedQueue };

/** The sharded queue registered under `name`, or undefined when there is none. */
export async function openSharded(t: Target, name: string): Promise<ShardedQueue | undefined> {
  const shards = await registeredShards(t.client, t.prefix, name);
  if (shards === undefined) return undefined;
  return new ShardedQueue(name, { connection: t.client, prefix: t.prefix, shards });
}

/** The queues holding a queue's jobs: its shards, or the queue itself. */
export function shardQueues(q: Queue): readonly Queue[] {
  return q instanceof ShardedQueue ? q.shardQueues : [q];
}

/** Counts added up state by state. */
export function sumCounts<C extends Record<string, number>>(all: readonly C[]): C {
  const out = {} as Record<string, number>;
  for (const c of all) for (const [k, n] of Object.entries(c)) out[k] = (out[k] ?? 0) + n;
  return out as C;
}

/** Each shard's page of lanes (in name order) merged into one, cut at `max`. */
export function mergeLanes(pages: ReadonlyArray<{ lanes: LaneInfo[]; truncated: boolean }>, max: number): { lanes: LaneInfo[]; truncated: boolean } {
  const all = pages.flatMap((p) => p.lanes).sort((a, b) => Buffer.compare(Buffer.from(a.name, 'utf8'), Buffer.from(b.name, 'utf8')));
  return { lanes: all.slice(0, max), truncated: all.length > max || pages.some((p) => p.truncated) };
}

/** One shard as listings show it beside its sharded queue. */
export interface ShardSummary {
  name: string;
  paused: boolean;
  counts: JobCounts;
}
