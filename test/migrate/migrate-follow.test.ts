// Follow mode of the move from BullMQ: BullMQ 6.7 producers (the real package) keep adding
// plain, prioritized and delayed jobs, flows and scheduler slots while a BullMQ worker runs for
// part of the time and an echomq worker runs throughout; the follower moves what comes. Every
// job runs once, by one system or the other, nothing stays in BullMQ's keys, and the follower
// never pops BullMQ's `marker` (MONITOR: no ZPOPMIN/BZPOPMIN on it from its connections).
import { spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import * as bull from 'bullmq';
import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { Queue, Worker, migrateFromBullMQ, type Job } from '../../src/index.js';
import { ValidationError } from '../../src/core/errors.js';
import { qname, redisUrl, sleep, waitFor } from '../helpers.js';
import { testRedis } from './helpers.js';
import { everyNth, faultScope } from '../fault-proxy.js';

const REGISTER = fileURLToPath(new URL('../fixtures/register-ts.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

const { redis, opened, conn } = testRedis();

/**
 * Commands on one key seen by MONITOR, with the address of the connection that sent them. A raw
 * socket: MONITOR's lines are plain `+<time> [<db> <addr>] "<cmd>" "<arg>"…` replies.
 */
async function watchKey(key: string): Promise<{ seen: Array<{ cmd: string; addr: string }>; stop(): Promise<void> }> {
  const url = new URL(redisUrl());
  const sock = net.connect(Number(url.port || 6379), url.hostname);
  const seen: Array<{ cmd: string; addr: string }> = [];
  let buf = '';
  let ready!: () => void;
  const ok = new Promise<void>((r) => { ready = r; });
  sock.on('data', (d: Buffer) => {
    buf += d.toString('latin1');
    const lines = buf.split('\r\n');
    buf = lines.pop()!;
    for (const l of lines) {
      if (l === '+OK') ready();
      const m = /^\+\S+ \[\d+ (\S+)\] "([^"]+)"/.exec(l);
      if (m && l.includes(`"${key}"`)) seen.push({ addr: m[1]!, cmd: m[2]!.toLowerCase() });
    }
  });
  sock.write('MONITOR\r\n');
  await ok;
  return { seen, stop: async () => void sock.destroy() };
}

/** BullMQ keys of a queue that hold jobs or their records (its settings, id, stream and marker aside). */
async function bullJobKeys(name: string): Promise<string[]> {
  const left: string[] = [];
  const keep = new Set(['meta', 'id', 'events', 'marker', 'stalled-check', 'pc']);
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `bull:${name}:*`, 'COUNT', 1000);
    cursor = next;
    for (const k of keys) if (!keep.has(k.slice(`bull:${name}:`.length))) left.push(k);
  } while (cursor !== '0');
  return left;
}

describe('migrateFromBullMQ follow', () => {
  it('moves what live BullMQ producers add while a BullMQ worker runs part of the time; each job runs once', async () => {
    const name = qname('fol');
    const bq = new bull.Queue(name, { connection: conn() });
    const flows = new bull.FlowProducer({ connection: conn() });
    opened.push(bq, flows);
    const runs = new Map<string, string[]>(); // job id → systems that ran it
    const ran = (who: string, id: string) => runs.set(id, [...(runs.get(id) ?? []), who]);
    const parentsSaw = new Map<string, number>();
    const bw = new bull.Worker(name, async (job) => {
      ran('bullmq', job.id!);
      await sleep(20);
      if (job.name === 'parent') parentsSaw.set(job.id!, Object.keys(await job.getChildrenValues()).length);
      return `b${job.id}`;
    }, { connection: conn(), concurrency: 2 });
    const ew = new Worker(name, async (job: Job) => {
      ran('echomq', job.id!);
      if (job.name === 'parent') parentsSaw.set(job.id!, Object.keys(await job.getChildrenValues()).length);
      return `e${job.id}`;
    }, { connection: redisUrl(), concurrency: 4 });
    opened.push(ew);
    await bq.upsertJobScheduler('tick', { every: 250 }, { name: 'tick', data: {} });
    const added: string[] = [];
    for (let i = 0; i < 5; i++) added.push((await bq.add('early', { i })).id!);
    await sleep(300); // the BullMQ worker runs some, and the scheduler's first slots

    const marker = await watchKey(`bull:${name}:marker`);
    const events = await watchKey(`bull:${name}:events`);
    const followConn = new Redis(redisUrl(), { connectionName: 'emq-follower', maxRetriesPerRequest: null });
    const stop = new AbortController();
    let lines = 0;
    const following = migrateFromBullMQ({ connection: followConn, queues: [name], follow: true, signal: stop.signal, sweepMs: 1000, onPass: () => void lines++ });
    // Its two connections: the moves' and the blocking reader's (a duplicate, same name).
    await waitFor(async () => (await redis.client('LIST') as string).split('name=emq-follower ').length === 3, 5000, 'the follower');
    const followerAddrs = (await redis.client('LIST') as string).split('\n').filter((l) => l.includes('name=emq-follower')).map((l) => /addr=(\S+)/.exec(l)![1]!);

    // Producers for 2 s: plain, prioritized, delayed, and a flow every 400 ms; the BullMQ worker stops half-way.
    const eq = new Queue(name, { connection: redisUrl() });
    opened.push(eq);
    const t0 = Date.now();
    let bullWorkerClosed: Promise<void> | undefined;
    const flowParents: string[] = [];
    for (let i = 0; Date.now() - t0 < 2000; i++) {
      added.push((await bq.add('plain', { i })).id!);
      added.push((await bq.add('prio', { i }, { priority: 1 + (i % 3) })).id!);
      added.push((await bq.add('later', { i }, { delay: 150 })).id!);
      if (i % 8 === 0) {
        const f = await flows.add({ name: 'parent', queueName: name, children: [{ name: 'child', queueName: name, data: { i } }, { name: 'child', queueName: name, data: { j: i } }] });
        flowParents.push(f.job.id!);
        added.push(f.job.id!, ...f.children!.map((c) => c.job.id!));
      }
      // Half-way one service switches its producer to echomq and the BullMQ worker stops.
      if (Date.now() - t0 > 1000) added.push((await eq.add('switched', { i })).id!);
      if (!bullWorkerClosed && Date.now() - t0 > 1000) bullWorkerClosed = bw.close();
      await sleep(50);
    }
    await bullWorkerClosed;
    await bq.removeJobScheduler('tick').catch(() => false); // gone from BullMQ already: the follower moved it
    await waitFor(() => added.every((id) => runs.has(id)), 10_000, 'every job run');
    stop.abort();
    const report = await following;
    await marker.stop();
    await events.stop();
    await followConn.quit();
    await ew.close();

    // Each job once, by one system or the other; both ran some.
    const twice = [...runs].filter(([, who]) => who.length > 1);
    expect(twice).toEqual([]);
    const by = (who: string) => added.filter((id) => runs.get(id)?.[0] === who).length;
    expect(by('bullmq')).toBeGreaterThan(0);
    expect(by('echomq')).toBeGreaterThan(0);
    // Ids drawn by both systems during the overlap never met: echomq's stayed a gap above BullMQ's.
    const switched = added.filter((id) => Number(id) > 1_000_000);
    expect(switched.length).toBeGreaterThan(5);
    expect(new Set(added).size).toBe(added.length);
    // Flows complete across the switch: every parent saw both children's values.
    for (const p of flowParents) expect(parentsSaw.get(p)).toBe(2);
    // Scheduler slots: each slot's job ran once (ids are distinct by slot time), and slots went on after the move.
    const ticks = [...runs.keys()].filter((id) => id.startsWith('repeat:'));
    const slotTimes = ticks.map((id) => id.split(':').pop());
    expect(new Set(slotTimes).size).toBe(ticks.length);
    expect(ticks.filter((id) => runs.get(id)![0] === 'echomq').length).toBeGreaterThan(2);
    // Nothing left in BullMQ's keys.
    expect(await bullJobKeys(name)).toEqual([]);
    // The follower was woken by BullMQ's events and never popped the marker; the monitor did see BullMQ's worker pop it.
    expect(report.follow!.wakes).toBeGreaterThan(0);
    expect(report.follow!.collisions).toEqual([]);
    expect(lines).toBe(report.follow!.passes);
    const pops = marker.seen.filter((c) => c.cmd === 'bzpopmin' || c.cmd === 'zpopmin');
    expect(followerAddrs.length).toBe(2);
    expect(events.seen.filter((c) => c.cmd === 'xread' && followerAddrs.includes(c.addr)).length).toBeGreaterThan(0);
    expect(pops.filter((c) => followerAddrs.includes(c.addr))).toEqual([]);
    expect(pops.length).toBeGreaterThan(0);
    expect(marker.seen.filter((c) => followerAddrs.includes(c.addr))).toEqual([]);
  }, 25_000);

  it("delivers a child's result that a BullMQ worker returns after its parent moved", async () => {
    const name = qname('fol-deliver');
    const flows = new bull.FlowProducer({ connection: conn() });
    const bq = new bull.Queue(name, { connection: conn() });
    opened.push(flows, bq);
    let release!: () => void;
    const gate = new Promise<void>((r) => { release = r; });
    const bw = new bull.Worker(name, async () => { await gate; return 'from BullMQ'; }, { connection: conn() });
    const f = await flows.add({ name: 'parent', queueName: name, children: [{ name: 'child', queueName: name, data: {} }] });
    const pid = f.job.id!;
    await waitFor(async () => (await bq.getActiveCount()) === 1, 5000, 'the child active in BullMQ');

    const stop = new AbortController();
    const following = migrateFromBullMQ({ connection: redisUrl(), queues: [name], follow: true, signal: stop.signal, sweepMs: 1000 });
    const eq = new Queue(name, { connection: redisUrl() });
    opened.push(eq);
    await waitFor(async () => (await (await eq.getJob(pid))?.getState()) === 'waiting-children', 5000, 'the parent moved');
    const seen: Record<string, unknown>[] = [];
    const ew = new Worker(name, async (job: Job) => void seen.push(await job.getChildrenValues()), { connection: redisUrl() });
    opened.push(ew);
    release();
    await waitFor(async () => (await (await eq.getJob(pid))?.getState()) === 'completed', 8000, 'the moved parent completed');
    stop.abort();
    const report = await following;
    await bw.close();
    // BullMQ found the parent's records gone and wrote its result nowhere: the follower delivered it.
    expect(await redis.exists(`bull:${name}:${pid}:processed`)).toBe(0);
    expect(seen.map((v) => Object.values(v))).toEqual([['from BullMQ']]);
    expect(report.queues[0]!.delivered).toBe(1);
    expect(await bullJobKeys(name)).toEqual([]);
  }, 15_000);

  it('keeps echomq ids a gap above BullMQ\'s, and names an id collision without overwriting', async () => {
    const name = qname('fol-ids');
    const bq = new bull.Queue(name, { connection: conn() });
    const eq = new Queue(name, { connection: redisUrl() });
    opened.push(bq, eq);
    await eq.add('mine', { side: 'echomq' }, { jobId: 'dup' });
    const stop = new AbortController();
    const following = migrateFromBullMQ({ connection: redisUrl(), queues: [name], follow: true, signal: stop.signal, sweepMs: 1000, idGap: 500 });
    await bq.add('theirs', { side: 'bullmq' }, { jobId: 'dup' });
    const plain = await bq.add('plain', {});
    await waitFor(async () => (await eq.getJob(plain.id!)) !== undefined, 5000, 'the plain job moved');
    const fresh = await eq.add('fresh', {});
    stop.abort();
    const report = await following;
    expect(Number(fresh.id)).toBe(Number(plain.id) + 500 + 1);
    // The last pass found echomq's counter past the gap (the fresh job drew one): it keeps it.
    expect(report.queues[0]!.ids).toEqual({ bullmq: Number(plain.id), echomq: Number(fresh.id) });
    expect(report.follow!.collisions.map((c) => [c.what, c.id])).toEqual([[`${name} wait`, 'dup']]);
    expect((await eq.getJob('dup'))!.data).toEqual({ side: 'echomq' });
    expect(await redis.hget(`bull:${name}:dup`, 'data')).toBe(JSON.stringify({ side: 'bullmq' }));
  }, 10_000);

  it('the CLI follows until SIGTERM, then exits 0 with its report', async () => {
    const name = qname('fol-cli');
    const bq = new bull.Queue(name, { connection: conn() });
    const eq = new Queue(name, { connection: redisUrl() });
    opened.push(bq, eq);
    for (let i = 0; i < 3; i++) await bq.add('before', { i });
    const marker = await watchKey(`bull:${name}:marker`);
    const child = spawn(process.execPath, ['--import', REGISTER, CLI, '--redis', redisUrl(), 'migrate-from-bullmq', name, '--follow', '--json', '--sweep', '1000'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => void (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => void (err += d.toString()));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    await waitFor(async () => (await eq.getWaitingCount()) === 3, 10_000, 'the first move');
    const after = [await bq.add('after', { n: 1 }), await bq.add('after', { n: 2 }, { priority: 2 }), await bq.add('after', { n: 3 }, { delay: 60_000 })];
    await waitFor(async () => (await Promise.all(after.map((j) => eq.getJob(j.id!)))).every(Boolean), 10_000, 'the followed jobs');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    await marker.stop();
    const report = JSON.parse(out) as { jobs: number; follow: { passes: number; wakes: number } };
    expect(report.jobs).toBe(6);
    expect(report.follow.wakes).toBeGreaterThan(0);
    expect(err).toMatch(/follow \(event\): moved [1-3], [4-6] in all/);
    expect(marker.seen.filter((c) => c.cmd === 'bzpopmin' || c.cmd === 'zpopmin')).toEqual([]);
    expect(await bullJobKeys(name)).toEqual([]);
  }, 20_000);

  it('replies lost with the connection cut (moves and blocking reads): every job still moves and runs once', async () => {
    const scope = faultScope(redisUrl());
    try {
      const name = qname('fol-cut');
      const bq = scope.open(new bull.Queue(name, { connection: conn() }));
      const flows = scope.open(new bull.FlowProducer({ connection: conn() }));
      const proxy = await scope.proxy();
      proxy.policy = everyNth(5, (c) => c.name === 'EVALSHA' || c.name === 'EVAL' || c.name === 'XREAD');
      const stop = new AbortController();
      const following = migrateFromBullMQ({ connection: proxy.url, queues: [name], follow: true, signal: stop.signal, sweepMs: 1000, batchSize: 7 });
      const added: string[] = [];
      for (let i = 0; i < 40; i++) {
        added.push((await bq.add('plain', { i })).id!, (await bq.add('prio', { i }, { priority: 1 + (i % 4) })).id!, (await bq.add('later', { i }, { delay: 100 })).id!);
        if (i % 10 === 0) {
          const f = await flows.add({ name: 'parent', queueName: name, children: [{ name: 'child', queueName: name }, { name: 'child', queueName: name }] });
          added.push(f.job.id!, ...f.children!.map((c) => c.job.id!));
        }
        await sleep(15);
      }
      await waitFor(async () => (await bullJobKeys(name)).length === 0, 10_000, 'BullMQ emptied');
      stop.abort();
      await following;
      expect(proxy.droppedTotal).toBeGreaterThan(3);
      expect(proxy.dropped.get('XREAD') ?? 0).toBeGreaterThan(0); // a blocking read cut and resent
      const runs = new Map<string, number>();
      const ew = scope.open(new Worker(name, async (job: Job) => void runs.set(job.id!, (runs.get(job.id!) ?? 0) + 1), { connection: redisUrl(), concurrency: 8 }));
      await waitFor(() => added.every((id) => runs.has(id)), 10_000, 'every job run');
      await sleep(100);
      await ew.close();
      expect([...runs.values()].filter((n) => n !== 1)).toEqual([]);
      expect(runs.size).toBe(added.length);
    } finally {
      await scope.closeAll();
    }
  }, 20_000);

  it('validates the follow options before touching Redis', async () => {
    const name = qname('fol-bad');
    const bad = [
      [{ follow: true, sweepMs: 5 }, /sweepMs/],
      [{ follow: true, dryRun: true }, /follow/],
      [{ follow: 'yes' }, /follow/],
      [{ follow: true, signal: {} }, /signal/],
      [{ follow: true, idGap: -1 }, /idGap/],
      [{ follow: true, onPass: 3 }, /onPass/],
    ] as const;
    for (const [extra, field] of bad) {
      await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [name], ...(extra as object) })).rejects.toThrow(ValidationError);
      await expect(migrateFromBullMQ({ connection: redisUrl(), queues: [name], ...(extra as object) })).rejects.toThrow(field);
    }
    expect(await redis.keys(`*${name}*`)).toEqual([]);
  });
});
