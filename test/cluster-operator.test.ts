// The operator tools on a real local Redis Cluster (3 masters, one start for the file): the
// built `echomq` binary given one node's URL finds the Cluster by itself and lists the queues of
// every master, a sharded queue shows as one queue with its shards, per-queue commands reach the
// node holding the queue, the listing resumes from a cursor, and the dashboard's server lists the
// same through the same target code.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import type { Cluster } from 'ioredis';
import { Queue, ShardedQueue, laneShard } from '../src/index.js';
import { connect, disconnect, type Target } from '../src/operator/target.js';
import { findJobs, openQueue, overview, queueStatus } from '../src/operator/operations.js';
import { requireKnownLane, topLanes } from '../src/operator/lanes.js';
import { startDashboard } from '../src/dashboard/server.js';
import { keysOf, runNode } from './helpers.js';
import { clusterClient, nodeOfKey, startCluster, type LocalCluster } from './cluster-helpers.js';

const root = join(import.meta.dirname, '..');
// Inside node_modules so the compiled files resolve the project's dependencies.
const out = join(root, 'node_modules', '.cache', `echomq-cluster-cli-${randomUUID().slice(0, 8)}`);
const prefix = `clop-${randomUUID().slice(0, 6)}`;

/**
 * The binary compiled file by file (TypeScript's transpileModule, no type check): a second or
 * two instead of a full tsc build, which test/cli-binary.test.ts already runs.
 */
function buildCli(): void {
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)]));
  const config = JSON.parse(readFileSync(join(root, 'tsconfig.json'), 'utf8')).compilerOptions;
  const { options } = ts.convertCompilerOptionsFromJson({ ...config, declaration: false, sourceMap: false }, root);
  // One file alone cannot tell NodeNext that the package is ESM; say so.
  options.module = ts.ModuleKind.ES2022;
  for (const file of walk(join(root, 'src'))) {
    const rel = relative(join(root, 'src'), file);
    const target = join(out, rel);
    mkdirSync(dirname(target), { recursive: true });
    if (file.endsWith('.ts') && !file.endsWith('.d.ts') && !file.endsWith('.d.mts')) {
      writeFileSync(target.replace(/\.ts$/, '.js'), ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions: options, fileName: file }).outputText);
    } else {
      cpSync(file, target); // Lua scripts, the sandbox's .mjs
    }
  }
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
}

const run = (args: string[]) => runNode(join(out, 'cli', 'main.js'), args);

let cluster: LocalCluster;
let admin: Cluster;
const opened: Queue[] = [];
/** Two plain queues per master, by master port. */
const plain = new Map<number, string[]>();
const shardedName = 'tenants';
let sharded: ShardedQueue;
let nodeUrl: string;

beforeAll(async () => {
  const started = startCluster();
  buildCli();
  cluster = await started;
  admin = clusterClient(cluster);
  const connection = { cluster: { nodes: cluster.nodes } };
  // Names until every master holds two queues: a one-node listing would miss four of them.
  for (let i = 0; [...plain.values()].flat().length < 6; i++) {
    const name = `orders-${i}`;
    const port = await nodeOfKey(admin, keysOf(name, prefix).meta);
    const here = plain.get(port) ?? [];
    if (here.length >= 2) continue;
    here.push(name);
    plain.set(port, here);
    const q = new Queue(name, { connection, prefix });
    opened.push(q);
    await q.add('job', { i }, { lane: `l${i}` });
  }
  sharded = new Queue(shardedName, { connection, prefix, shards: 3 }) as ShardedQueue;
  opened.push(sharded);
  // One lane per shard, two jobs each: 6 jobs over 3 shards.
  const lanes: string[] = [];
  for (let i = 0; lanes.length < 3; i++) if (!lanes.some((l) => laneShard(l, 3) === laneShard(`t${i}`, 3))) lanes.push(`t${i}`);
  for (const lane of lanes) await sharded.addBulk([{ name: 'a', data: {}, opts: { lane } }, { name: 'b', data: {}, opts: { lane } }]);
  nodeUrl = `redis://127.0.0.1:${cluster.ports[0]}`;
}, 60_000);

afterAll(async () => {
  for (const q of opened) await q.close().catch(() => {});
  await admin?.quit();
  await cluster?.stop();
  rmSync(out, { recursive: true, force: true });
});

describe('echomq on a Redis Cluster', () => {
  it('status given one node lists the queues of every master, a sharded queue as one', async () => {
    expect(plain.size).toBe(3);
    const r = await run(['--redis', nodeUrl, '--prefix', prefix, 'status', '--json']);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    const body = JSON.parse(r.out) as { queues: Array<{ name: string; counts: Record<string, number>; shards?: Array<{ name: string; counts: Record<string, number> }> }>; truncated: boolean; cursor: null };
    expect(body.queues.map((q) => q.name)).toEqual([...[...plain.values()].flat(), shardedName].sort());
    expect(body).toMatchObject({ truncated: false, cursor: null });
    const t = body.queues.find((q) => q.name === shardedName)!;
    expect(t.counts.waiting).toBe(6);
    expect(t.shards!.map((s) => [s.name, s.counts.waiting])).toEqual([[`${shardedName}#0`, 2], [`${shardedName}#1`, 2], [`${shardedName}#2`, 2]]);
    // The shards sit on more than one master, and the text view shows the queue once.
    const ports = new Set(await Promise.all(t.shards!.map((s) => nodeOfKey(admin, keysOf(s.name, prefix).meta))));
    expect(ports.size).toBeGreaterThan(1);
    const text = await run(['--redis', nodeUrl, '--prefix', prefix, 'status']);
    expect(text.out).toMatch(new RegExp(`^${shardedName} \\(3 shards\\) +running +6`, 'm'));
    expect(text.out).toMatch(new RegExp(`^  ${shardedName}#1 +running +2`, 'm'));
  });

  it('per-queue commands reach the node that holds the queue, and a sharded queue opens by its name', async () => {
    // A queue on another master than the URL's node.
    const far = [...plain].find(([port]) => port !== cluster.ports[0])![1][0];
    const paused = await run(['--redis', nodeUrl, '--prefix', prefix, 'pause', far, '--json']);
    expect(paused.err).toBe('');
    expect(paused.code).toBe(0);
    expect(await admin.hget(keysOf(far, prefix).meta, 'paused')).toBe('1');
    const jobs = JSON.parse((await run(['--redis', nodeUrl, '--prefix', prefix, 'jobs', far, '--json'])).out);
    expect(jobs.jobs).toHaveLength(1);

    const status = JSON.parse((await run(['--redis', nodeUrl, '--prefix', prefix, 'status', shardedName, '--json'])).out);
    expect(status.counts.waiting).toBe(6);
    expect(status.shards).toHaveLength(3);
    expect(status.lanes.map((l: { name: string }) => l.name)).toHaveLength(3);
    const listed = JSON.parse((await run(['--redis', nodeUrl, '--prefix', prefix, 'jobs', shardedName, '--state', 'waiting', '--json'])).out);
    expect(listed.jobs).toHaveLength(6);
    const id = listed.jobs[5].id as string;
    const job = JSON.parse((await run(['--redis', nodeUrl, '--prefix', prefix, 'job', shardedName, id, '--json'])).out);
    expect(job).toMatchObject({ id, state: 'waiting' });
    expect((await run(['--redis', nodeUrl, '--prefix', prefix, 'pause', shardedName])).code).toBe(0);
    expect(await sharded.isPaused()).toBe(true);
    await sharded.resume();
  });

  it('takes a seed list or --cluster, refuses a database other than 0, and says why a seed list is unreachable', async () => {
    const seeds = cluster.ports.slice(1).map((p) => `127.0.0.1:${p}`).join(',');
    const r = await run(['--redis', seeds, '--prefix', prefix, 'status', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out).queues).toHaveLength(7);
    expect((await run(['--cluster', '--redis', nodeUrl, '--prefix', prefix, 'status', shardedName])).code).toBe(0);
    const db = await run(['--cluster', '--redis', `${nodeUrl}/2`, 'status']);
    expect(db.code).toBe(1);
    expect(db.err).toMatch(/^echomq: .*redis.*database 0 on a Redis Cluster/);
    // In-process: the binary's exit after a refused connection waits on its 2 s exit timer.
    await expect(connect('127.0.0.1:1,127.0.0.1:2', prefix)).rejects.toThrow(
      /^cannot reach Redis Cluster at redis:\/\/127\.0\.0\.1:1,redis:\/\/127\.0\.0\.1:2: connection refused/,
    );
  });

  it('a listing cut short resumes from its cursor on the next master, and the dashboard lists every master', async () => {
    let t: Target | undefined;
    let dash: Awaited<ReturnType<typeof startDashboard>> | undefined;
    try {
      t = await connect(nodeUrl, prefix);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await overview(t, 1, cursor);
        seen.push(...page.queues.map((q) => q.name));
        cursor = page.cursor ?? undefined;
        expect(page.truncated).toBe(cursor !== undefined);
        pages++;
      } while (cursor !== undefined);
      expect(pages).toBeGreaterThanOrEqual(3); // one master per page at least
      expect(seen.sort()).toEqual([...[...plain.values()].flat(), shardedName].sort());

      dash = await startDashboard({ client: t.client, prefix, port: 0 });
      const api = (await (await fetch(new URL('api/queues', dash.url))).json()) as { queues: Array<{ name: string; shards?: unknown[] }> };
      expect(api.queues.map((q) => q.name)).toEqual([...[...plain.values()].flat(), shardedName].sort());
      expect(api.queues.find((q) => q.name === shardedName)!.shards).toHaveLength(3);
    } finally {
      await dash?.close();
      await disconnect(t);
    }
  });

  it('the operations the dashboard calls take a sharded queue by its name', async () => {
    const t = await connect(nodeUrl, prefix);
    try {
      const q = await openQueue(t, shardedName);
      expect(q).toBeInstanceOf(ShardedQueue);
      const s = await queueStatus(q);
      expect(s.counts.waiting).toBe(6);
      expect(s.shards!.map((h) => h.counts.waiting)).toEqual([2, 2, 2]);
      const lane = s.lanes[1].name;
      const inLane = await findJobs(q, { state: 'waiting', lane });
      expect(inLane.jobs.map((j) => j.lane)).toEqual([lane, lane]);
      expect((await findJobs(q, { state: 'waiting', offset: 4, limit: 5 })).jobs).toHaveLength(2);
      const top = await topLanes(q, 'depth', 2);
      expect(top.lanes.map((l) => l.depth)).toEqual([2, 2]);
      expect(top.scanned).toBe(3);
      await requireKnownLane(q, lane);
      await expect(requireKnownLane(q, `${lane}x`)).rejects.toThrow(new RegExp(`queue "${shardedName}" has no jobs and no settings; did you mean "${lane}"`));
    } finally {
      await disconnect(t);
    }
  });
});
