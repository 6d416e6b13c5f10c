// The dashboard on a real local Redis Cluster (3 masters): given the URL of one node, the
// handler talks to the whole Cluster, the overview lists the queues of every master, and a
// sharded queue shows as one queue with its shards beside it, in Chromium, and its workers view
// holds the active jobs of every shard and a worker's named Cluster connections.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { Redis, type Cluster } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { createDashboardHandler, type DashboardHandler } from '../src/dashboard/handler.js';
import { startDashboard } from '../src/dashboard/server.js';
import { clientName, queueKeys } from '../src/core/keys.js';
import { clusterClient, nodeOfKey, startCluster, type LocalCluster } from './cluster-helpers.js';

const { path: CHROMIUM, reason } = inject('chromium');
const have = CHROMIUM !== null;
if (!have && process.env.CI) throw new Error(reason);

describe('dashboard on a Redis Cluster', () => {
  let cluster: LocalCluster;
  let admin: Cluster;
  let handler: DashboardHandler;
  let server: Server;
  let url: string;
  const queues: Queue[] = [];
  const plain = ['alpha', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot'];

  beforeAll(async () => {
    cluster = await startCluster();
    admin = clusterClient(cluster);
    const conn = { cluster: { nodes: cluster.nodes } };
    for (const name of plain) {
      const q = new Queue(name, { connection: conn });
      queues.push(q);
      await q.add('j', { name });
    }
    const big = new Queue('big', { connection: conn, shards: 3 });
    queues.push(big);
    await big.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'j', data: { i }, opts: { lane: `tenant-${i}` } })));
    // The handler gets one node's URL, as an operator would paste it.
    handler = createDashboardHandler({ connection: `redis://127.0.0.1:${cluster.ports[0]}` });
    server = createServer((req, res) => handler(req, res));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  }, 60_000);

  afterAll(async () => {
    await handler?.close();
    server?.close();
    for (const q of queues) await q.close();
    await admin?.quit();
    await cluster?.stop();
  });

  it('lists the queues of every master, and a sharded queue as one with its shards', async () => {
    const masters = new Set(await Promise.all(plain.map((n) => nodeOfKey(admin, queueKeys(n).meta))));
    expect(masters.size).toBeGreaterThan(1); // the names do spread over several masters
    const r = await (await fetch(`${url}api/queues`)).json();
    expect(r.queues.map((q: { name: string }) => q.name)).toEqual([...plain.slice(0, 2), 'big', ...plain.slice(2)].sort());
    const big = r.queues.find((q: { name: string }) => q.name === 'big');
    expect(big.shards.map((s: { name: string }) => s.name)).toEqual(['big#0', 'big#1', 'big#2']);
    expect(big.counts.waiting).toBe(30);
    expect(big.shards.reduce((a: number, s: { counts: { waiting: number } }) => a + s.counts.waiting, 0)).toBe(30);
    // A shard opens as an ordinary queue.
    const shard = await (await fetch(`${url}api/queues/${encodeURIComponent('big#1')}?lanes=0`)).json();
    expect(shard.counts.waiting).toBe(big.shards[1].counts.waiting);
  });

  it('names a worker\'s Cluster connections, so Queue.getWorkers and the workers view list it', async () => {
    // One worker opens its own Cluster client, one is given the caller's (its blocking duplicate is named).
    const w1 = new Worker('alpha', async () => 'ok', { connection: { cluster: { nodes: cluster.nodes } }, name: 'cl-w' });
    const w2 = new Worker('alpha', async () => 'ok', { connection: admin, name: 'cl-own' });
    try {
      const alpha = queues.find((q) => q.name === 'alpha')!;
      const base = clientName(queueKeys('alpha'));
      // One entry per worker, BullMQ's shape: name = the queue, rawname = the connection's name.
      await expect.poll(async () => (await alpha.getWorkers()).map((c) => [c.name, c.rawname]).sort(), { timeout: 10_000 })
        .toEqual([['alpha', `${base}:w:cl-own`], ['alpha', `${base}:w:cl-w`]]);
      expect(await alpha.getWorkersCount()).toBe(2);
      const r = await (await fetch(`${url}api/queues/alpha/workers`)).json();
      expect(r.workers.map((x: { name: string }) => x.name)).toEqual(['cl-own', 'cl-w']);
      expect(r.workers[0].addr).toMatch(/^127\.0\.0\.1:\d+$/);
    } finally {
      await w1.close();
      await w2.close();
    }
    expect(admin.status).toBe('ready'); // the caller's client is left open
    await expect.poll(async () => (await queues[0].getWorkers()).length, { timeout: 10_000 }).toBe(0);
  });

  it('shows the active jobs of a sharded queue held by its worker, from every shard', async () => {
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    const w = new Worker('big', () => hold, { connection: { cluster: { nodes: cluster.nodes } }, shards: 3, name: 'sh-w', concurrency: 3 });
    try {
      const big = queues.find((q) => q.name === 'big')!;
      let active = 0;
      await expect.poll(async () => (active = (await big.getJobCounts('active')).active), { timeout: 10_000 }).toBe(3);
      const r = await (await fetch(`${url}api/queues/big/workers`)).json();
      expect([Object.keys(r.held), r.active, r.truncated]).toEqual([['sh-w'], active, false]);
      expect(new Set(r.held['sh-w'].map((j: { lane: string }) => j.lane)).size).toBe(active);
    } finally {
      release();
      await w.close();
    }
  });

  it('serves the whole Cluster from the standalone server given one node\'s client (echomq dashboard --redis <node>)', async () => {
    const node = new Redis(`redis://127.0.0.1:${cluster.ports[1]}`);
    const d = await startDashboard({ client: node, port: 0 });
    try {
      const r = await (await fetch(`${d.url}api/queues`)).json();
      expect(r.queues.map((q: { name: string }) => q.name)).toEqual(['alpha', 'big', 'bravo', 'charlie', 'delta', 'echo', 'foxtrot']);
    } finally {
      await d.close();
      expect(node.status).toBe('ready'); // the caller's client is left open
      node.disconnect();
    }
  });

  it.skipIf(!have)('shows the sharded queue with its shards in Chromium', async () => {
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({ executablePath: CHROMIUM!, args: ['--headless', '--no-sandbox', '--disable-gpu'] });
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      await page.goto(url);
      const big = page.locator('#queues tr.sharded');
      await expect.poll(() => big.locator('td').first().textContent()).toBe('big3 shards');
      expect(await page.locator('#queues tr.shard td.name').allTextContents()).toEqual(['└ big#0', '└ big#1', '└ big#2']);
      expect(await page.locator('#queues tbody tr').count()).toBe(plain.length + 4);
      await page.locator('#queues tr.shard').nth(2).click();
      await page.locator('#queueTitle', { hasText: 'big#2' }).waitFor();
    } finally {
      await browser?.close();
    }
  });
});
