/** The options of `new Queue(name, opts)` (BullMQ's QueueOptions plus echomq's). */
import type { ConnectionInput } from '../core/connection.js';
import type { JobOptions, QueueCompatOptions } from '../core/options.js';

/** Options of a Queue; every field optional, defaults as documented per field. */
export interface QueueOptions extends QueueCompatOptions {
  /** Redis URL, ioredis options, or an ioredis client (used as is, not closed by echomq). */
  connection?: ConnectionInput;
  /** Key prefix. Default 'emq'. */
  prefix?: string;
  /** Options merged under every add's options. */
  defaultJobOptions?: JobOptions;
  /** Largest JSON payload (data, progress) in bytes. Default 1 MiB. */
  maxPayloadBytes?: number;
  /** Most log lines kept per job. Default 0 (all). */
  keepLogs?: number;
  /**
   * Capped streams. `events.maxLen`: approximate cap of the events stream that QueueEvents
   * reads (meta field evmax; default 10000; 0 turns events off). Written at construction.
   */
  streams?: { events?: { maxLen?: number } };
  /**
   * Spread the queue over this many hash tags (`<name>#0` … `<name>#<n-1>`), lanes assigned to
   * shards by a hash of the lane name: one queue outgrows one Redis (Cluster) node. 1 or absent
   * = a plain queue. Refused (ShardCountError) when the queue has jobs under another count.
   * See docs/scaling.md and src/cluster/sharded.ts.
   */
  shards?: number;
  /** @internal Set by sharded.ts on the queue of one shard: generated ids stay unique across shards. */
  shardOf?: { index: number; count: number };
}
