// Redis Sentinel: a master, a replica and one sentinel started here. echomq takes ioredis'
// Sentinel options as its connection; jobs keep flowing through a failover (the worker's
// command and blocking connections both follow the new master).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
// @ts-expect-error plain ESM helper without types
import { freePort, startRedisServer } from '../scripts/redis-server.mjs';
import { qname, sleep, waitFor } from './helpers.js';

interface Server { port: number; stop(): Promise<void> }

let master: Server;
let replica: Server;
let sentinel: ChildProcess;
let sentinelPort: number;
let dir: string;

const ping = (port: number) => spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() === 'PONG';

beforeAll(async () => {
  master = await startRedisServer([]);
  replica = await startRedisServer(['--replicaof', '127.0.0.1', String(master.port)]);
  sentinelPort = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'echomq-sentinel-'));
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(conf, [
    `port ${sentinelPort}`, 'bind 127.0.0.1', `dir ${dir}`,
    `sentinel monitor mymaster 127.0.0.1 ${master.port} 1`,
    'sentinel down-after-milliseconds mymaster 1000',
    'sentinel failover-timeout mymaster 3000',
    '',
  ].join('\n'));
  sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  await waitFor(() => ping(sentinelPort), 10_000, 'sentinel');
  // The replica must be in sync before a failover can promote it.
  const r = new Redis(replica.port);
  await waitFor(async () => /master_link_status:up/.test(await r.info('replication')), 10_000, 'replica sync');
  r.disconnect();
}, 30_000);

afterAll(async () => {
  sentinel?.kill('SIGTERM');
  await replica?.stop();
  await master?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('sentinel', () => {
  it('adds and processes through Sentinel and keeps going after a failover', async () => {
    const connection = { sentinels: [{ host: '127.0.0.1', port: sentinelPort }], name: 'mymaster' };
    const name = qname('sentinel');
    const queue = new Queue(name, { connection });
    queue.on('error', () => {});
    const seen: string[] = [];
    const worker = new Worker(name, async (job) => void seen.push(job.name), { connection, concurrency: 2 });
    worker.on('error', () => {});
    try {
      await queue.addBulk([{ name: 'a', data: 0 }, { name: 'b', data: 0, opts: { priority: 1 } }]);
      await waitFor(() => seen.length === 2, 5000, 'two jobs before failover');

      const s = new Redis(sentinelPort);
      await s.call('SENTINEL', 'FAILOVER', 'mymaster');
      await waitFor(async () => {
        const [, port] = (await s.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', 'mymaster')) as [string, string];
        return Number(port) === replica.port;
      }, 15_000, 'failover to the replica');
      s.disconnect();
      await sleep(500);

      // Writes go to the new master; the idle worker's blocking connection followed it too.
      await waitFor(async () => {
        try {
          await queue.add('c', 0);
          return true;
        } catch {
          await sleep(200);
          return false;
        }
      }, 15_000, 'an add after the failover');
      await waitFor(() => seen.includes('c'), 15_000, 'job processed after failover');
      const direct = new Redis(replica.port);
      expect(await direct.exists(queue.keys.meta)).toBe(1);
      direct.disconnect();
    } finally {
      await worker.close(true);
      await queue.close();
    }
  }, 60_000);
});
