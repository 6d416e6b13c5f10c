// What each dashboard read touches, counted on a redis-server of this file's own (INFO
// commandstats): the overview's health flags read at most HEALTH_LANES lanes of a queue with
// 1,500, one CLIENT LIST serves every queue's workers, a page of jobs reads its page and one
// more, a job shows at most CHILDREN_SHOWN children per kind; and the actions' bounds (bulk,
// clean, schedulers page, jobs page) refuse more, leaving Redis unchanged.
import { describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { FlowProducer, Queue, Worker } from '../src/index.js';
import { Throughput } from '../src/dashboard/throughput.js';
import { ACTIVE_SHOWN, CHILDREN_SHOWN, HEALTH_LANES, activeByWorker, NAME_SCAN, jobFull, jobsPage, lanesPage, overviewHealth, searchByName, schedulersPage, workersByQueue } from '../src/dashboard/reads.js';
import { BULK_MAX, get, post, type ApiContext, type LanesReply } from '../src/dashboard/api.js';
import { SHARE_SAMPLE, laneShare } from '../src/dashboard/lane-share.js';
import { LATENCY_SAMPLE, latency } from '../src/dashboard/latency.js';
import { usePrivateServer } from './private-server.js';
import { waitFor } from './helpers.js';

const server = usePrivateServer();

/** Calls per command during `fn`, from INFO commandstats. */
async function counted(admin: Redis, fn: () => Promise<unknown>): Promise<Record<string, number>> {
  await admin.config('RESETSTAT');
  await fn();
  const info = await admin.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}

describe('dashboard reads are bounded', () => {
  it('reads at most HEALTH_LANES lanes for the health flags of a queue with 1,500 lanes', async () => {
    const q = server.queue('wide');
    await q.addBulk(Array.from({ length: 1500 }, (_, i) => ({ name: 'j', data: {}, opts: { lane: `l${String(i).padStart(4, '0')}` } })));
    for (let i = 0; i < 300; i++) await q.lanes.pause(`l${String(i * 5).padStart(4, '0')}`);
    const tp = new Throughput(server.admin, 'emq', 60_000);
    await tp.totals('wide', 300); // the events ring is read once before counting
    const t = { client: server.admin, prefix: 'emq', where: '' };
    let reply: Awaited<ReturnType<typeof overviewHealth>> | undefined;
    const calls = await counted(server.admin, async () => (reply = await overviewHealth(t, tp, 300)));
    const h = reply!.queues[0].health;
    expect(h.pausedLanes).toBe(300);
    expect(h.pausedLanesWithWork).toBeGreaterThan(0);
    expect(h.pausedLanesWithWork).toBeLessThanOrEqual(HEALTH_LANES);
    expect(h.oldestWaiting).toBe((await q.getJob('1'))!.timestamp); // l0000's head, the first job added
    expect(h.noWorker).toBe(true);
    // Lane heads: one ZRANGE per examined lane; paused lanes: one ZCARD per examined member.
    expect(calls.zrange).toBe(HEALTH_LANES);
    expect(calls.zcard ?? 0).toBeLessThanOrEqual(HEALTH_LANES + 8); // and the state counts
    expect(calls.sscan).toBe(1);
    expect(calls['client|list'] ?? calls.client).toBe(1);
    await tp.stop();

    // The lanes view pages by name and searches by prefix: one ZRANGEBYLEX a page.
    let page: Awaited<ReturnType<typeof lanesPage>> | undefined;
    const c2 = await counted(server.admin, async () => (page = await lanesPage(q, { limit: 200 })));
    expect([page!.lanes.length, page!.lanes[0].name, page!.next]).toEqual([200, 'l0000', 'l0199']);
    expect(c2.zrangebylex).toBe(1);
    expect(c2.zcard).toBe(200);
    const next = await lanesPage(q, { limit: 200, after: page!.next! });
    expect(next.lanes[0].name).toBe('l0200');
    const found = await lanesPage(q, { prefix: 'l14', limit: 1000 });
    expect([found.lanes.length, found.lanes[0].name, found.lanes[99].name, found.next]).toEqual([100, 'l1400', 'l1499', null]);
    expect((await lanesPage(q, { prefix: 'l14', after: 'l1449' })).lanes[0].name).toBe('l1450');
    await expect(lanesPage(q, { limit: 1001 })).rejects.toThrow('limit must be an integer 1…1000, got 1001');
  });

  it('serves the workers of every queue from one CLIENT LIST', async () => {
    const a = server.queue('wa');
    const b = server.queue('wb');
    await a.add('x', {});
    await b.add('x', {});
    const w1 = new Worker('wa', async () => undefined, { connection: server.url, name: 'alpha', autorun: false });
    const w2 = new Worker('wb', async () => undefined, { connection: server.url, name: 'beta', autorun: false });
    await Promise.all([w1.waitUntilReady(), w2.waitUntilReady()]);
    let byQueue: Map<string, Array<{ name: string; addr: string }>> | undefined;
    const calls = await counted(server.admin, async () => (byQueue = await workersByQueue(server.admin, 'emq', ['wa', 'wb', 'wide'])));
    expect(calls['client|list'] ?? calls.client).toBe(1);
    expect(byQueue!.get('wa')!.map((w) => w.name)).toEqual(['alpha']);
    expect(byQueue!.get('wb')!.map((w) => w.name)).toEqual(['beta']);
    expect(byQueue!.get('wa')![0].addr).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(byQueue!.get('wide')).toEqual([]);
    await Promise.all([w1.close(), w2.close()]);
  });

  it('groups the active jobs by the worker holding them, reading the first ACTIVE_SHOWN only', async () => {
    const q = server.queue('held');
    await q.addBulk(Array.from({ length: ACTIVE_SHOWN + 5 }, (_, i) => ({ name: i % 2 ? 'odd' : 'even', data: {}, opts: { lane: `t${i % 3}` } })));
    const a = new Worker('held', null, { connection: server.url, name: 'alpha' });
    const b = new Worker('held', null, { connection: server.url, name: 'beta' });
    const byA: string[] = [];
    for (let i = 0; i < 255; i++) byA.push((await a.getNextJob('ta'))!.id!);
    for (let i = 0; i < 250; i++) await b.getNextJob('tb');
    let reply: Awaited<ReturnType<typeof activeByWorker>> | undefined;
    const calls = await counted(server.admin, async () => (reply = await activeByWorker(server.admin, q.keys)));
    // One window of the active set, one HMGET per job shown; 505 active, 500 read.
    expect(calls.zrangebyscore).toBe(1);
    expect(calls.hmget).toBe(ACTIVE_SHOWN);
    expect([reply!.active, reply!.truncated]).toEqual([ACTIVE_SHOWN, true]);
    expect(Object.keys(reply!.held).sort()).toEqual(['alpha', 'beta']);
    expect(reply!.held.alpha.length + reply!.held.beta.length).toBe(ACTIVE_SHOWN);
    const first = reply!.held.alpha.find((j) => j.id === byA[0])!;
    const job = (await q.getJob(byA[0]))!;
    expect(first).toEqual({ id: byA[0], name: job.name, lane: job.lane, since: job.processedOn });
    expect(reply!.held.alpha.every((j) => byA.includes(j.id))).toBe(true);
    await Promise.all([a.close(), b.close()]);
  });

  it('sorts lanes by depth, active or weight over all 20,000 lanes of a queue, in pages of 1,000', async () => {
    const q = server.queue('many');
    const lane = (i: number) => `m${String(i).padStart(5, '0')}`;
    for (let i = 0; i < 20_000; i += 5000) {
      await q.addBulk(Array.from({ length: 5000 }, (_, k) => ({ name: 'j', data: {}, opts: { lane: lane(i + k) } })));
    }
    // The largest lanes sort last by name, far beyond the first page of 1,000.
    await q.addBulk([...Array(4).fill(lane(19_990)), ...Array(2).fill(lane(15_000))].map((l) => ({ name: 'j', data: {}, opts: { lane: l } })));
    await q.lanes.setWeight(lane(17_777), 9);
    const ctx = { target: { client: server.admin, prefix: 'emq', where: '' }, readOnly: true, tokenRequired: false } as unknown as ApiContext;
    let reply: LanesReply | undefined;
    const calls = await counted(server.admin, async () => (reply = (await get(ctx, ['queues', 'many', 'lanes'], new URLSearchParams('sort=depth&limit=3'))) as LanesReply));
    expect(reply!.lanes.map((l) => [l.name, l.depth])).toEqual([[lane(19_990), 5], [lane(15_000), 3], [lane(0), 1]]);
    expect([reply!.scanned, reply!.next]).toEqual([20_000, null]);
    expect(calls.zrangebylex).toBe(21); // 20 full pages and the empty one after
    const heavy = (await get(ctx, ['queues', 'many', 'lanes'], new URLSearchParams('sort=weight&limit=1'))) as LanesReply;
    expect(heavy.lanes.map((l) => [l.name, l.weight])).toEqual([[lane(17_777), 9]]);
    await expect(get(ctx, ['queues', 'many', 'lanes'], new URLSearchParams('sort=size'))).rejects.toThrow('sort must be "name", "depth", "active" or "weight", got "size"');
    await expect(get(ctx, ['queues', 'many', 'lanes'], new URLSearchParams('sort=depth&limit=1001'))).rejects.toThrow('limit must be an integer 1…1000, got 1001');
  });

  it('reads one page of jobs and one more id, in every state and across states', async () => {
    const q = server.queue('deep');
    await q.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'j', data: { i } })));
    const w = new Worker('deep', async () => undefined, { connection: server.url, concurrency: 50 });
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 1000, 20_000, '1,000 completed');
    await w.close();
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'w', data: { i } })));
    let page: Awaited<ReturnType<typeof jobsPage>> | undefined;
    const calls = await counted(server.admin, async () => (page = await jobsPage(q, { state: 'completed', limit: 50 })));
    expect(page!.jobs).toHaveLength(50);
    expect(page!.next).toBe('0:50');
    expect(calls.hgetall).toBeLessThanOrEqual(51);
    // "all": the 30 waiting, then completed from the start, on the same cursor scheme.
    const first = await jobsPage(q, { limit: 50 });
    expect(first.jobs.map((j) => j.state)).toEqual([...Array(30).fill('waiting'), ...Array(20).fill('completed')]);
    const second = await jobsPage(q, { limit: 50, cursor: first.next! });
    expect(second.jobs[0].id).not.toBe(first.jobs[49].id);
    expect(new Set([...first.jobs, ...second.jobs].map((j) => j.id)).size).toBe(100);
    await expect(jobsPage(q, { limit: 201 })).rejects.toThrow('limit must be an integer 1…200, got 201');
    await expect(jobsPage(q, { cursor: 'x' })).rejects.toThrow(/cursor must be "<state index>:<offset>"/);
  });

  it('searches names as a resumable scan of at most NAME_SCAN jobs a call', async () => {
    const q = server.queue('names');
    await q.addBulk(Array.from({ length: 2500 }, (_, i) => ({ name: `job-${i}`, data: {} })));
    let r: Awaited<ReturnType<typeof searchByName>> | undefined;
    const calls = await counted(server.admin, async () => (r = await searchByName(q, { name: '-2499' })));
    expect([r!.jobs, r!.scanned, r!.next]).toEqual([[], NAME_SCAN, `1:${NAME_SCAN}`]); // waiting is state 1 of "all"
    expect(calls.hget).toBeLessThanOrEqual(NAME_SCAN + 10); // one name per job examined, and the queue's flags
    const rest = await searchByName(q, { name: '-2499', cursor: r!.next! });
    expect([rest.jobs.map((j) => [j.name, j.state]), rest.scanned, rest.next]).toEqual([[['job-2499', 'waiting']], 500, null]);
    // Stops at `limit` matches, with the cursor just after the last one.
    const some = await searchByName(q, { name: 'job-1', state: 'waiting', limit: 3 });
    expect([some.jobs.map((j) => j.name), some.next]).toEqual([['job-1', 'job-10', 'job-11'], '0:12']);
    expect((await searchByName(q, { name: 'job-1', state: 'waiting', limit: 1, cursor: some.next! })).jobs[0].name).toBe('job-12');
  });

  it('shows a job with at most CHILDREN_SHOWN children of each kind, with the totals', async () => {
    const q = server.queue('fam');
    const children = Array.from({ length: CHILDREN_SHOWN + 10 }, (_, i) => ({ name: 'c', queueName: 'kids', data: { i } }));
    const flow = await new FlowProducer({ connection: server.url }).add({ name: 'p', queueName: 'fam', data: {}, children });
    const detail = await jobFull(q, flow.job.id!);
    expect(detail.children).toHaveLength(CHILDREN_SHOWN); // of 60 pending
    expect(detail.childCounts).toMatchObject({ unprocessed: CHILDREN_SHOWN + 10 });
    expect(detail.children[0]).toMatchObject({ status: 'pending', ref: { queue: 'kids', local: true } });
    const kid = await jobFull(new Queue('kids', { connection: server.admin }), detail.children[0].ref.id);
    expect(kid.parent).toEqual({ queue: 'fam', id: flow.job.id, local: true });
  });

  it('measures each lane\'s share of service from at most SHARE_SAMPLE recent starts', async () => {
    const q = server.queue('fair');
    await q.lanes.setWeight('heavy', 3);
    await q.addBulk([
      ...Array.from({ length: 1500 }, (_, i) => ({ name: 'j', data: { i }, opts: { lane: 'light' } })),
      ...Array.from({ length: 1500 }, (_, i) => ({ name: 'j', data: { i }, opts: { lane: 'heavy' } })),
    ]);
    let done = 0;
    const w = new Worker('fair', async () => void done++, { connection: server.url, concurrency: 1 });
    await waitFor(() => done >= 1200, 30_000, '1,200 processed');
    await w.close();
    let share: Awaited<ReturnType<typeof laneShare>> | undefined;
    const t0 = performance.now();
    const calls = await counted(server.admin, async () => (share = await laneShare(server.admin, q.keys)));
    const ms = performance.now() - t0;
    const s = share!;
    expect(s.started).toBeLessThanOrEqual(SHARE_SAMPLE);
    expect(s.started).toBeGreaterThanOrEqual(1200);
    expect(s.unknown).toBe(0);
    // Weights 3 : 1 while both lanes hold work: three starts in four go to the heavy lane.
    expect(s.lanes.map((l) => l.lane)).toEqual(['heavy', 'light']);
    expect(s.lanes[0].share).toBeGreaterThan(0.7);
    expect(s.lanes[0].share).toBeLessThan(0.8);
    // Cost: the stream read backwards in pages of 1,000 and one HMGET per start counted.
    expect(calls.xrevrange).toBeLessThanOrEqual(8);
    expect(calls.hmget).toBe(s.started);
    console.log(`laneShare: ${s.started} starts in ${calls.xrevrange} XREVRANGE + ${calls.hmget} HMGET, ${ms.toFixed(1)} ms`);
  });

  it('gives time waiting and processing percentiles from at most LATENCY_SAMPLE finished jobs', async () => {
    const q = server.queue('slow');
    await q.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'j', data: { i } })));
    const w = new Worker('slow', async () => new Promise((r) => setTimeout(r, 25)), { connection: server.url, concurrency: 4 });
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 40, 10_000, '40 completed');
    await w.close();
    let r: Awaited<ReturnType<typeof latency>> | undefined;
    const now = Date.now();
    const calls = await counted(server.admin, async () => (r = await latency(server.admin, q.keys, 300, now)));
    expect(r!.jobs).toBe(40);
    expect(r!.processing!.p50).toBeGreaterThanOrEqual(20);
    expect(r!.processing!.p99).toBeGreaterThanOrEqual(r!.processing!.p50);
    // 40 jobs, 4 at a time, 25 ms each: the last waited about 9 rounds.
    expect(r!.wait!.p99).toBeGreaterThanOrEqual(150);
    expect(calls.hmget).toBe(40);
    expect(calls.xrevrange).toBe(1);
    expect(LATENCY_SAMPLE).toBe(2000);
    // A window that ends before any of them finished counts none.
    expect((await latency(server.admin, q.keys, 60, now - 120_000)).jobs).toBe(0);
  });

  it('refuses actions and pages beyond their bounds, leaving Redis unchanged', async () => {
    const q = server.queue('bounds');
    await q.add('x', {});
    const ctx: ApiContext = { target: { client: server.admin, prefix: 'emq', where: '' }, throughput: undefined as never, readOnly: false, tokenRequired: false };
    const before = await server.admin.dbsize();
    const ids = Array.from({ length: BULK_MAX + 1 }, (_, i) => String(i + 1));
    await expect(post(ctx, ['queues', 'bounds', 'jobs', 'bulk'], { action: 'remove', ids })).rejects.toThrow(`ids must be an array of 1…${BULK_MAX} job ids`);
    await expect(post(ctx, ['queues', 'bounds', 'jobs', 'bulk'], { action: 'explode', ids: ['1'] })).rejects.toThrow('action must be "retry", "remove" or "promote"');
    await expect(post(ctx, ['queues', 'bounds', 'clean'], { state: 'wait', graceMs: 0, limit: 10_001 })).rejects.toThrow('limit must be an integer 1…10000');
    await expect(post(ctx, ['queues', 'bounds', 'obliterate'], { confirm: 'bound' })).rejects.toThrow('confirm must be the queue\'s name "bounds", got "bound"');
    await expect(schedulersPage(q, 0, 101)).rejects.toThrow('limit must be an integer 1…100');
    expect(await server.admin.dbsize()).toBe(before);
    expect(await q.count()).toBe(1);
  });
});
