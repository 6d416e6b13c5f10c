/**
 * Finding the queues under a prefix, on one Redis or on every master of a Cluster, in bounded
 * steps that resume from a cursor, with a sharded queue's pieces (`<name>#i`, src/cluster/)
 * recognised as one queue. The operator listings (`echomq status`, the dashboard) start here.
 */
import type { Redis } from 'ioredis';
import { isClusterClient, masterNodes, type RedisClient } from '../core/connection.js';
import { queueKeys, shardQueueName, unescapeQueueName } from '../core/keys.js';
import { MetaField } from '../core/fields.js';
import * as v from '../core/validate.js';

/** Keys examined per SCAN call. */
const SCAN_COUNT = 1000;
/** SCAN calls of one listing (about a million keys examined); the rest is one cursor away. */
export const DEFAULT_SCAN_CALLS = 1000;

export interface FoundQueue {
  /** The queue's name; for a sharded queue, its logical name. */
  name: string;
  /** A sharded queue's shard queues (`<name>#0` …), in shard order; absent for a plain queue. */
  shards?: string[];
}

export interface QueuePage {
  /** By name. */
  queues: FoundQueue[];
  /** Where the next listing resumes (`cursor` option), or null once every master was scanned. */
  cursor: string | null;
}

export interface FindOptions {
  /** Stop once this many queue names were found (whole SCAN replies are kept, so a few more may come). */
  max?: number;
  /** A `cursor` of an earlier page. */
  cursor?: string;
  /** Most SCAN calls in all. */
  scanCalls?: number;
}

const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, '\\$&');
const nodeId = (n: Redis): string => `${n.options.host}:${n.options.port}`;

/** The shard count a sharded queue registered in shard 0's meta, or undefined for none (or 1). */
export async function registeredShards(client: RedisClient, prefix: string, name: string): Promise<number | undefined> {
  const reg = await client.hget(queueKeys(shardQueueName(name, 0), prefix).meta, MetaField.shardCount);
  const n = reg === null ? NaN : Number(reg);
  return Number.isInteger(n) && n >= 2 ? n : undefined;
}

/**
 * A cursor is `<scan cursor>` on one Redis and `<scan cursor>@<host>:<port>` on a Cluster,
 * naming the master to resume on; masters are visited in host:port order.
 */
function parseCursor(cursor: string | undefined, cluster: boolean): { scan: string; node?: string } {
  if (cursor === undefined || cursor === '') return { scan: '0' };
  const m = /^(\d+)(?:@(.+))?$/.exec(typeof cursor === 'string' ? cursor : '');
  if (!m || (m[2] !== undefined) !== cluster) {
    v.fail('cursor', cluster ? 'a cursor of an earlier listing (<n>@<host>:<port>)' : 'a cursor of an earlier listing (digits)', cursor);
  }
  return { scan: m[1], node: m[2] };
}

/** Queue names under the prefix (one bounded walk over the masters), sharded queues as one. */
export async function findQueues(client: RedisClient, prefix: string, opts: FindOptions = {}): Promise<QueuePage> {
  const max = opts.max === undefined ? 1000 : v.integerIn('max', opts.max, 1, 100_000);
  const budget = opts.scanCalls === undefined ? DEFAULT_SCAN_CALLS : v.integerIn('scanCalls', opts.scanCalls, 1, 1_000_000);
  const cluster = isClusterClient(client);
  const start = parseCursor(opts.cursor, cluster);
  const nodes = [...(await masterNodes(client))].sort((a, b) => (nodeId(a) < nodeId(b) ? -1 : nodeId(a) > nodeId(b) ? 1 : 0));
  let i = start.node === undefined ? 0 : nodes.findIndex((n) => nodeId(n) === start.node);
  if (i < 0) v.fail('cursor', `a master of this Cluster (${nodes.map(nodeId).join(', ')}); list again without a cursor`, opts.cursor);

  const probe = queueKeys('', prefix); // `<prefix>:{}:`
  const head = probe.base.slice(0, -2); // `<prefix>:{`
  const tail = probe.meta.slice(probe.base.length - 2); // `}:meta`
  const pattern = globEscape(head) + '*' + globEscape(tail);
  const names = new Set<string>();
  let scan = start.scan;
  let calls = 0;
  let next: string | null = null;
  while (i < nodes.length) {
    const [after, batch] = await nodes[i].scan(scan, 'MATCH', pattern, 'COUNT', SCAN_COUNT);
    calls++;
    for (const key of batch) {
      if (!key.startsWith(head) || !key.endsWith(tail)) continue;
      const escaped = key.slice(head.length, key.length - tail.length);
      // A lane or job key can end in `}:meta` too; a queue's escaped name never holds braces.
      if (!/[{}]/.test(escaped)) names.add(unescapeQueueName(escaped));
    }
    scan = after;
    if (scan === '0') i++;
    if (i < nodes.length && (names.size >= max || calls >= budget)) {
      next = cluster ? `${scan}@${nodeId(nodes[i])}` : scan;
      break;
    }
  }
  return { queues: await groupShards(client, prefix, [...names]), cursor: next };
}

/**
 * A sharded queue's shard `<name>#i` is listed as `<name>` with its shards when shard 0 holds
 * the registry and i is below its count. It is listed where shard 0 is found, so a queue whose
 * shards sit on several masters (or pages) appears once.
 */
async function groupShards(client: RedisClient, prefix: string, names: string[]): Promise<FoundQueue[]> {
  const shardOf = (n: string) => /^(.+)#(\d+)$/.exec(n);
  const bases = [...new Set(names.map(shardOf).filter((m) => m !== null).map((m) => m[1]))];
  const counts = new Map(await Promise.all(bases.map(async (b) => [b, await registeredShards(client, prefix, b)] as const)));
  const out = new Map<string, FoundQueue>();
  for (const name of names) {
    const m = shardOf(name);
    const n = m ? counts.get(m[1]) : undefined;
    if (m && n !== undefined && Number(m[2]) < n && String(Number(m[2])) === m[2]) {
      if (m[2] === '0') out.set(m[1], { name: m[1], shards: Array.from({ length: n }, (_, k) => shardQueueName(m[1], k)) });
    } else if (!out.has(name)) {
      out.set(name, { name });
    }
  }
  return [...out.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
