/**
 * A sharded queue's layout (src/cluster/sharded.ts): the shard count it is registered under, the
 * shard of a lane and of a generated id, and the errors of the two refusals. Shared by the queue
 * and the worker sides.
 */
import { EchoError, ErrorCodes } from '../core/errors.js';
import { queueKeys, shardQueueName, type QueueKeys } from '../core/keys.js';
import { getJobCounts } from '../ops/inspect.js';
import type { RedisClient } from '../core/connection.js';
import { MetaField } from '../core/fields.js';
import { execStamped, layoutReady } from '../scripts/runner.js';

const range = (n: number): number[] => Array.from({ length: n }, (_, i) => i);

/** Most shards of one queue. */
export const MAX_SHARDS = 1024;
/** Field of shard 0's meta hash that records the shard count. */
const REGISTRY_FIELD = MetaField.shardCount;

/** The queue holds jobs under another shard count; nothing was written. */
export class ShardCountError extends EchoError {
  readonly queue: string;
  readonly registered: number;
  readonly requested: number;
  constructor(queue: string, registered: number, requested: number) {
    super(
      ErrorCodes.SHARD_COUNT,
      `queue ${JSON.stringify(queue)} holds jobs under ${registered} shard(s) and cannot be opened with shards: ${requested}; ` +
        `open it with shards: ${registered}, or empty it (obliterate) first`,
    );
    this.queue = queue;
    this.registered = registered;
    this.requested = requested;
  }
}

/** moveToLane to a lane that lives on another shard: refused, nothing changed. */
export class CrossShardError extends EchoError {
  readonly jobId: string;
  constructor(op: string, jobId: string, lane: string, from: number, to: number) {
    super(
      ErrorCodes.CROSS_SHARD,
      `${op}: job ${JSON.stringify(jobId)} is on shard ${from} and lane ${JSON.stringify(lane)} lives on shard ${to}; ` +
        'a sharded queue moves jobs only between lanes of one shard',
    );
    this.jobId = jobId;
  }
}

/**
 * The shard of a lane: FNV-1a (32 bit) of its UTF-8 bytes, mixed by murmur3's finaliser (plain
 * FNV keeps low bits of the last byte, so `t1`, `t5`, `t9` would share a shard of 4), mod
 * shards. Stable across processes and versions: changing it would move lanes between shards.
 */
export function laneShard(lane: string, shards: number): number {
  if (shards <= 1) return 0;
  let h = 0x811c9dc5;
  for (const b of Buffer.from(lane, 'utf8')) h = Math.imul(h ^ b, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return (h >>> 0) % shards;
}

/** The shard a generated id was made on; undefined for a custom id. */
export function shardOfGeneratedId(id: string, shards: number): number | undefined {
  if (!/^[1-9]\d*$/.test(id)) return undefined;
  const n = Number(id);
  return Number.isSafeInteger(n) ? (n - 1) % shards : undefined;
}

async function jobTotal(client: RedisClient, keys: readonly QueueKeys[]): Promise<number> {
  const counts = await Promise.all(keys.map((k) => getJobCounts(client, k)));
  return counts.reduce((sum, c) => sum + Object.values(c).reduce((a, b) => a + (b ?? 0), 0), 0);
}

/**
 * Checks (and records) the shard count of a logical queue. Throws ShardCountError when the
 * queue holds jobs (in any state) under another count. One HGET when the count matches.
 */
export async function ensureShardLayout(client: RedisClient, name: string, prefix: string, shards: number): Promise<void> {
  const k0 = queueKeys(shardQueueName(name, 0), prefix);
  const reg = await client.hget(k0.meta, REGISTRY_FIELD);
  if (reg !== null && Number(reg) === shards) return;
  const registered = reg === null ? 1 : Number(reg);
  const keys = registered === 1 ? [queueKeys(name, prefix)] : range(registered).map((i) => queueKeys(shardQueueName(name, i), prefix));
  if ((await jobTotal(client, keys)) > 0) throw new ShardCountError(name, registered, shards);
  await layoutReady(client, k0);
  await execStamped(client.multi().hset(k0.meta, REGISTRY_FIELD, shards), k0);
}
