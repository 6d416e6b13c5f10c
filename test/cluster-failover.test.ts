// A Cluster failover under a live worker: 3 masters with a replica each; the replica of the
// queue's master takes over (CLUSTER FAILOVER, the manual, lossless kind). The new master has
// no script cache (scripts are not replicated), so the first calls answer NOSCRIPT and are
// re-sent with their source; ioredis follows the MOVED replies; nothing is lost.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis, type Cluster } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
// @ts-expect-error plain ESM helper without types
import { startRedisCluster } from '../scripts/redis-cluster.mjs';
import { clusterClient, nodeOfKey, type LocalCluster } from './cluster-helpers.js';
import { keysOf, qname, sleep, waitFor } from './helpers.js';

let cluster: LocalCluster;
let admin: Cluster;

beforeAll(async () => {
  cluster = (await startRedisCluster({ masters: 3, replicas: 1 })) as LocalCluster;
  admin = clusterClient(cluster);
  // Replicas must be in sync before a manual failover.
  for (const port of cluster.ports) {
    const r = new Redis(port);
    await waitFor(async () => {
      const info = await r.info('replication');
      return /role:master/.test(info) || /master_link_status:up/.test(info);
    }, 15_000, `node ${port} in sync`);
    r.disconnect();
  }
}, 60_000);

afterAll(async () => {
  await admin?.quit();
  await cluster?.stop();
});

describe('cluster failover', () => {
  it('keeps processing when the queue master fails over to its replica', async () => {
    const connection = { cluster: { nodes: cluster.nodes } };
    const name = qname('failover');
    const queue = new Queue(name, { connection });
    const seen = new Set<string>();
    const worker = new Worker(name, async (job) => void seen.add(job.name), { connection, concurrency: 4 });
    worker.on('error', () => {});
    try {
      await queue.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: `before-${i}`, data: i, opts: { lane: `l${i % 3}` } })));
      await waitFor(() => seen.size === 50, 10_000, 'jobs before failover');

      const masterPort = await nodeOfKey(admin, keysOf(name).meta);
      // Find the replica of that master and promote it.
      let promoted: number | undefined;
      for (const port of cluster.ports) {
        if (port === masterPort) continue;
        const r = new Redis(port);
        const info = await r.info('replication');
        if (/role:slave/.test(info) && new RegExp(`master_port:${masterPort}\\b`).test(info)) {
          await r.call('CLUSTER', 'FAILOVER');
          promoted = port;
        }
        r.disconnect();
      }
      expect(promoted).toBeDefined();
      await waitFor(async () => (await nodeOfKey(admin, keysOf(name).meta)) === promoted, 15_000, 'slot moved to the replica');
      await sleep(200);

      await queue.addBulk(Array.from({ length: 50 }, (_, i) => ({ name: `after-${i}`, data: i, opts: { lane: `l${i % 3}` } })));
      await waitFor(() => seen.size === 100, 20_000, 'jobs after failover');
      expect(await queue.getJobCounts('completed', 'waiting', 'active')).toEqual({ completed: 100, waiting: 0, active: 0 });
    } finally {
      await worker.close();
      await queue.close();
    }
  }, 60_000);
});
