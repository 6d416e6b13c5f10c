// Shared by the cluster test files: a real local Redis Cluster per file (3 masters, started in
// beforeAll by scripts/redis-cluster.mjs), and small helpers to see where keys live.
import { Cluster } from 'ioredis';
// @ts-expect-error plain ESM helper without types
import { startRedisCluster } from '../scripts/redis-cluster.mjs';

export interface LocalCluster {
  nodes: Array<{ host: string; port: number }>;
  ports: number[];
  stop(): Promise<void>;
}

export async function startCluster(): Promise<LocalCluster> {
  return (await startRedisCluster({ masters: 3 })) as LocalCluster;
}

/** A Cluster client that retries forever (assertions only; close it in afterAll). */
export function clusterClient(c: LocalCluster): Cluster {
  return new Cluster(c.nodes, { redisOptions: { maxRetriesPerRequest: null } });
}

/** Port of the master serving a key's slot. */
export async function nodeOfKey(cl: Cluster, key: string): Promise<number> {
  const slot = Number(await cl.call('CLUSTER', 'KEYSLOT', key));
  const ranges = (await cl.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
  const r = ranges.find(([lo, hi]) => slot >= lo && slot <= hi);
  if (!r) throw new Error(`no node serves slot ${slot}`);
  return Number(r[2][1]);
}

/**
 * Every key matching a pattern, across all masters (SCAN per node), but echomq's request records
 * (`…}:req:<rid>`): per-call bookkeeping that expires with its window (docs/protocol.md "Applied once").
 */
export async function scanAll(cl: Cluster, pattern: string): Promise<string[]> {
  const out: string[] = [];
  for (const node of cl.nodes('master')) {
    let cursor = '0';
    do {
      const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      out.push(...batch.filter((k) => !k.includes('}:req:')));
    } while (cursor !== '0');
  }
  return out;
}
