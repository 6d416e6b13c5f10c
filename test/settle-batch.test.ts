// Batched settles: complete.lua settles several jobs in one call (per-job result codes, stale
// tokens left untouched, retention trimmed once per call and still converging), the worker
// sends one complete call for the jobs that finish in the same tick, and a lane alone in the
// ring is served in one turn. Call counts come from INFO commandstats of a private server, so
// other test files sharing the suite's server cannot change them.
import { describe, expect, it } from 'vitest';
import { Worker } from '../src/index.js';
import { scripts, type ClaimedJob } from '../src/scripts/index.js';
import { qname, snapshot, waitFor } from './helpers.js';
import { ctxOf, usePrivateServer } from './private-server.js';

const srv = usePrivateServer();
const queue = (name: string) => srv.queue(name);
const token = (j: ClaimedJob): string => j.fields[j.fields.indexOf('att') + 1]!;

async function calls(cmd: string): Promise<number> {
  const m = new RegExp(`^cmdstat_${cmd}:calls=(\\d+)`, 'm').exec(await srv.admin.info('commandstats'));
  return m ? Number(m[1]) : 0;
}

describe('complete.lua settles several jobs per call', () => {
  it('returns a code per job, settles the good ones and leaves a stale or missing one as it was', async () => {
    const q = queue(qname('batch-codes'));
    const ctx = ctxOf(q);
    await q.addBulk([1, 2, 3, 4].map((i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: false } })));
    const claimed = await scripts.claim(ctx, { count: 3, leaseMs: 60_000 });
    expect(claimed.jobs).toHaveLength(3);
    const [a, b, c] = claimed.jobs as [ClaimedJob, ClaimedJob, ClaimedJob];
    const staleB = String(Number(token(b)) + 1);
    const beforeB = await srv.admin.hgetall(q.keys.jobBase + b.id);

    const r = await scripts.completeMany(ctx, {
      jobs: [
        { id: a.id, token: token(a), returnValue: '"a"' },
        { id: b.id, token: staleB, returnValue: '"b"' },
        { id: 'no-such-job', token: '1', returnValue: '1' },
        { id: c.id, token: token(c), returnValue: '"c"' },
      ],
      fetch: 1, leaseMs: 60_000, maxEventValueBytes: 100,
    });
    expect(r.codes).toEqual([1, -2, -1, 1]);
    expect(r.jobs.map((j) => j.id)).toEqual(['4']); // the fetch: the next ready job
    expect(await (await q.getJob(a.id))!.getState()).toBe('completed');
    expect(await (await q.getJob(c.id))!.getState()).toBe('completed');
    expect((await q.getJob(c.id))!.returnvalue).toBe('c');
    expect(await srv.admin.hgetall(q.keys.jobBase + b.id)).toEqual(beforeB);
    expect(await srv.admin.zscore(q.keys.active, b.id)).not.toBeNull();
    expect(await q.getJobCounts('active', 'completed', 'waiting')).toEqual({ active: 2, completed: 2, waiting: 0 });
  });

  it('claims nothing and changes nothing when every token is stale', async () => {
    const q = queue(qname('batch-stale'));
    const ctx = ctxOf(q);
    await q.addBulk([1, 2, 3].map((i) => ({ name: 'j', data: { i } })));
    const [a] = (await scripts.claim(ctx, { count: 1, leaseMs: 60_000 })).jobs as [ClaimedJob];
    const before = await snapshot(srv.admin, q.keys);
    const r = await scripts.completeMany(ctx, {
      jobs: [{ id: a.id, token: String(Number(token(a)) + 1), returnValue: '1' }],
      fetch: 5, leaseMs: 60_000, maxEventValueBytes: 100,
    });
    expect(r.codes).toEqual([-2]);
    expect(r.jobs).toEqual([]);
    expect(await snapshot(srv.admin, q.keys)).toEqual(before);
  });

  it('keeps the completed set at its retention count when 100 jobs settle per call', async () => {
    const q = queue(qname('batch-keep'));
    const ctx = ctxOf(q);
    await q.addBulk(Array.from({ length: 400 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: 10 } })));
    for (let round = 0; round < 4; round++) {
      const claimed = await scripts.claim(ctx, { count: 100, leaseMs: 60_000 });
      expect(claimed.jobs).toHaveLength(100);
      const r = await scripts.completeMany(ctx, {
        jobs: claimed.jobs.map((j) => ({ id: j.id, token: token(j), returnValue: '1' })),
        fetch: 0, leaseMs: 60_000, maxEventValueBytes: 100,
      });
      expect(r.codes.every((c) => c === 1)).toBe(true);
      expect(await srv.admin.zcard(q.keys.completed)).toBe(10);
    }
    // The ten kept are the newest, and the trimmed jobs' hashes are gone.
    const kept = await srv.admin.zrange(q.keys.completed, 0, -1);
    expect(kept.map(Number).sort((x, y) => x - y)).toEqual(Array.from({ length: 10 }, (_, i) => 391 + i));
    expect(await srv.admin.exists(q.keys.jobBase + '1')).toBe(0);
  });

  it('refuses more than 1000 jobs in one call and writes nothing', async () => {
    const q = queue(qname('batch-cap'));
    await q.add('j', {});
    const before = await snapshot(srv.admin, q.keys);
    const jobs = Array.from({ length: 1001 }, (_, i) => ({ id: String(i + 1), token: '1', returnValue: '1' }));
    await expect(scripts.completeMany(ctxOf(q), { jobs, fetch: 0, leaseMs: 1000, maxEventValueBytes: 0 })).rejects.toThrow(/at most 1000/);
    expect(await snapshot(srv.admin, q.keys)).toEqual(before);
  });
});

describe('worker settles in batches', () => {
  it('sends far fewer complete calls than jobs at concurrency 10, each job once', async () => {
    const name = qname('batch-worker');
    const q = queue(name);
    const N = 600;
    await q.addBulk(Array.from({ length: N }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: true } })));
    const seen = new Map<number, number>();
    const fcalls0 = (await calls('fcall')) + (await calls('evalsha'));
    const w = new Worker(name, async (job) => {
      seen.set(job.data.i, (seen.get(job.data.i) ?? 0) + 1);
    }, { connection: srv.url, concurrency: 10 });
    srv.closeLater(() => w.close());
    let done = 0;
    w.on('completed', () => done++);
    await waitFor(() => done === N, 20_000, 'all jobs completed');
    const used = (await calls('fcall')) + (await calls('evalsha')) - fcalls0;
    await w.close();
    expect(seen.size).toBe(N);
    expect([...seen.values()].every((n) => n === 1)).toBe(true);
    // One call per job would be ~600; half the concurrency per call makes it ~120 (+ claims).
    console.log(`[settle-batch] ${N} jobs at concurrency 10: ${used} script calls`);
    expect(used).toBeLessThan(N / 3);
    expect(await q.getJobCounts('active', 'waiting', 'completed')).toEqual({ active: 0, waiting: 0, completed: 0 });
  });

  it('serves a lane alone in the ring in one turn: one ZPOPMIN for 50 jobs', async () => {
    const q = queue(qname('batch-alone'));
    const ctx = ctxOf(q);
    await q.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'j', data: { i }, opts: { lane: 'solo', priority: i % 3 } })));
    const pops0 = await calls('zpopmin');
    const claimed = await scripts.claim(ctx, { count: 50, leaseMs: 60_000 });
    expect(await calls('zpopmin') - pops0).toBe(1); // LLEN ring = 1: the whole claim is one turn
    // Still in (priority, arrival) order.
    const order = claimed.jobs.map((j) => {
      const data = JSON.parse(j.fields[j.fields.indexOf('data') + 1]!) as { i: number };
      return data.i;
    });
    const expected = Array.from({ length: 60 }, (_, i) => i).sort((x, y) => (x % 3) - (y % 3) || x - y).slice(0, 50);
    expect(order).toEqual(expected);
    // Each job comes back as written, without the fields a worker does not read (st, sq).
    const [first] = claimed.jobs;
    expect(first.fields.filter((_, i) => i % 2 === 0).sort()).toEqual(['att', 'data', 'lane', 'name', 'pOn', 'ts']);
    const stored = await srv.admin.hgetall(q.keys.jobBase + first.id);
    expect(stored).toMatchObject({ st: 'a', att: '1', pOn: first.fields[first.fields.indexOf('pOn') + 1] });
    expect(stored.sq).toMatch(/^[0-9a-f]{14}$/);
  });

  it('still rotates two lanes of weight 1 job by job in a claim of many', async () => {
    const q = queue(qname('batch-two'));
    const ctx = ctxOf(q);
    await q.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'j', data: { i }, opts: { lane: i < 10 ? 'a' : 'b' } })));
    const claimed = await scripts.claim(ctx, { count: 8, leaseMs: 60_000 });
    const lanes = claimed.jobs.map((j) => j.fields[j.fields.indexOf('lane') + 1]);
    expect(lanes).toEqual(['a', 'b', 'a', 'b', 'a', 'b', 'a', 'b']);
  });
});
