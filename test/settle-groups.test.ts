// Compact argument forms: a settle whose jobs share their settle fields (lane, kc, ka, made)
// sends them once per group ('g'), and a plain add sends each job's name and data alone (two
// fields a job). Both must decide exactly what the longer forms decide; malformed calls are
// refused before any write.
import { describe, expect, it } from 'vitest';
import { Worker } from '../src/index.js';
import { Code } from '../src/core/errors.js';
import { scripts, settleHint, type ClaimedJob } from '../src/scripts/index.js';
import { bindScript } from '../src/scripts/runner.js';
import { qname, snapshot, waitFor } from './helpers.js';
import { startMonitor } from './monitor.js';
import { ctxOf, usePrivateServer } from './private-server.js';

const srv = usePrivateServer();
const queue = (name: string) => srv.queue(name);
const rawComplete = bindScript('complete');
const rawAdd = bindScript('add');
const fieldsOf = (j: ClaimedJob): Record<string, string> => {
  const o: Record<string, string> = {};
  for (let i = 0; i < j.fields.length; i += 2) o[j.fields[i]!] = j.fields[i + 1]!;
  return o;
};
const token = (j: ClaimedJob): string => fieldsOf(j).att!;

/** The FCALLs of a named function the server saw while fn ran (MONITOR), as argument lists. */
async function watchCalls(fn: () => Promise<unknown>, match: RegExp): Promise<string[][]> {
  await srv.settled();
  const monitor = await startMonitor(srv.admin);
  try {
    await fn();
    await monitor.flush();
  } finally {
    monitor.stop();
  }
  return monitor.seen
    .filter(({ args, source }) => source !== 'lua' && args[0]?.toLowerCase() === 'fcall' && match.test(args[1] ?? ''))
    .map(({ args }) => args);
}
/** ARGV of an FCALL as MONITOR shows it: after the function name, the key count and the keys. */
const argvOf = (call: string[]): string[] => call.slice(3 + Number(call[2]));

describe('complete: settle fields once per group', () => {
  it('settles interleaved jobs of two lanes and kept-or-not retention by group, codes in the caller\'s order', async () => {
    const q = queue(qname('groups'));
    const ctx = ctxOf(q);
    // Lane a keeps its completed jobs, lane b removes them: two groups of settle fields.
    await q.addBulk([
      ...[1, 2, 3].map((i) => ({ name: 'a', data: { i }, opts: { lane: 'a', removeOnComplete: false } })),
      ...[4, 5, 6].map((i) => ({ name: 'b', data: { i }, opts: { lane: 'b', removeOnComplete: true } })),
    ] as never);
    const claimed = (await scripts.claim(ctx, { count: 6, leaseMs: 60_000 })).jobs;
    expect(claimed).toHaveLength(6);
    // Interleave the lanes and make one token stale: codes must come back per job as given.
    const byLane = (l: string) => claimed.filter((j) => (fieldsOf(j).lane ?? 'default') === l);
    const [a1, a2, a3] = byLane('a') as [ClaimedJob, ClaimedJob, ClaimedJob];
    const [b1, b2, b3] = byLane('b') as [ClaimedJob, ClaimedJob, ClaimedJob];
    const order = [a1, b1, a2, b2, a3, b3];
    const jobs = order.map((j) => ({ id: j.id, token: j === b2 ? String(Number(token(j)) + 1) : token(j), returnValue: JSON.stringify(j.id), claimed: settleHint(fieldsOf(j)) }));
    let r: Awaited<ReturnType<typeof scripts.completeMany>> | undefined;
    const calls = await watchCalls(async () => {
      r = await scripts.completeMany(ctx, { jobs, fetch: 0, leaseMs: 60_000, maxEventValueBytes: 100 });
    }, /complete/);
    expect(calls).toHaveLength(1);
    const argv = argvOf(calls[0]!);
    expect(argv[8]).toBe('g');
    // Two group heads (5 fields) and six jobs (3 fields), then the request id.
    expect(argv.length).toBe(9 + 2 * 5 + 6 * 3 + 1);
    expect(r!.codes).toEqual([1, 1, 1, -2, 1, 1]);
    for (const j of [a1, a2, a3]) {
      expect(await (await q.getJob(j.id))!.getState()).toBe('completed');
      expect((await q.getJob(j.id))!.returnvalue).toBe(j.id);
    }
    for (const j of [b1, b3]) expect(await srv.admin.exists(q.keys.jobBase + j.id)).toBe(0);
    expect(await (await q.getJob(b2.id))!.getState()).toBe('active');
    expect(await srv.admin.hmget(q.keys.lactive, 'a', 'b')).toEqual([null, '1']);
  });

  it('a settle of one job, or of jobs that share nothing, sends the seven-field form', async () => {
    const q = queue(qname('groups-seven'));
    const ctx = ctxOf(q);
    await q.addBulk([1, 2].map((i) => ({ name: 'j', data: { i }, opts: { lane: `l${i}` } })) as never);
    const claimed = (await scripts.claim(ctx, { count: 2, leaseMs: 60_000 })).jobs;
    const calls = await watchCalls(async () => {
      const r = await scripts.completeMany(ctx, {
        jobs: claimed.map((j) => ({ id: j.id, token: token(j), returnValue: '1', claimed: settleHint(fieldsOf(j)) })),
        fetch: 0, leaseMs: 60_000, maxEventValueBytes: 100,
      });
      expect(r.codes).toEqual([1, 1]);
    }, /complete/);
    expect(argvOf(calls[0]!)[8]).toBe('7');
  });

  it('refuses malformed groups and leaves Redis unchanged', async () => {
    const q = queue(qname('groups-bad'));
    const ctx = ctxOf(q);
    await q.addBulk([1, 2].map((i) => ({ name: 'j', data: { i } })));
    const claimed = (await scripts.claim(ctx, { count: 2, leaseMs: 60_000 })).jobs as [ClaimedJob, ClaimedJob];
    const head = [0, 60_000, 100, '', 0, '', '', '', 'g'];
    const [x, y] = claimed;
    const before = await snapshot(srv.admin, q.keys);
    // A count that is not a positive integer, and a group that runs past the arguments.
    await expect(rawComplete(ctx, [...head, '', '0', '', '', '0', x.id, token(x), '1'])).rejects.toThrow(/group's job count must be a positive integer, got 0/);
    await expect(rawComplete(ctx, [...head, '', '0', '', '', 'two', x.id, token(x), '1'])).rejects.toThrow(/got two/);
    await expect(rawComplete(ctx, [...head, '', '0', '', '', '3', x.id, token(x), '1', y.id, token(y), '1'])).rejects.toThrow(/do not match the arguments/);
    await expect(rawComplete(ctx, [...head, '', '0', '', '', '1', x.id, token(x), '1', 'r1', 'r2'])).rejects.toThrow(/do not match the arguments/);
    await expect(rawComplete(ctx, [0, 60_000, 100, '', 0, '', '', '', 'x', x.id, token(x), '1'])).rejects.toThrow(/fields per job must be 3, 7 or 'g'/);
    expect(await snapshot(srv.admin, q.keys)).toEqual(before);
    // Well formed, with a request id after the last group: settled once, a rerun answers the same.
    const args = [...head, '', '0', '', '', '2', x.id, token(x), '1', y.id, token(y), '2', 'req-groups-1'];
    const first = (await rawComplete(ctx, args)) as unknown[];
    expect(first.slice(0, 5)).toEqual([0, -1, 2, 1, 1]);
    const again = (await rawComplete(ctx, args)) as unknown[];
    expect(again.slice(0, 5)).toEqual([0, -1, 2, 1, 1]);
    expect(await q.getJobCounts('active', 'completed', 'waiting')).toEqual({ active: 0, completed: 0, waiting: 0 });
  });

  it('a worker at concurrency 10 settles through groups and completes every job once', async () => {
    const q = queue(qname('groups-worker'));
    await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'j', data: { i }, opts: { removeOnComplete: true } })));
    let done = 0;
    const seen = new Set<string>();
    let worker: Worker | undefined;
    const calls = await watchCalls(async () => {
      worker = new Worker(q.name, async (job) => { seen.add(job.id!); return job.data; }, { connection: srv.url, concurrency: 10 });
      worker.on('completed', () => { done++; });
      await waitFor(() => done === 200, 15_000, '200 completions');
    }, /complete/);
    await worker!.close();
    expect(seen.size).toBe(200);
    const forms = calls.map((c) => argvOf(c)[8]);
    expect(forms.filter((f) => f === 'g').length).toBeGreaterThan(0);
    expect(await q.getJobCounts('active', 'completed', 'waiting')).toEqual({ active: 0, completed: 0, waiting: 0 });
  }, 30_000);
});

describe('add: two fields a job for a plain call', () => {
  it('Queue.add and addBulk send name and data alone; a custom id or a delay sends four', async () => {
    const q = queue(qname('names-only'));
    const calls = await watchCalls(async () => {
      await q.add('one', { a: 1 });
      await q.addBulk([{ name: 'b1', data: 1 }, { name: 'b2', data: 2 }]);
      await q.add('custom', 3, { jobId: 'c1' });
      await q.add('later', 4, { delay: 60_000 });
    }, /add/);
    expect(calls.map((c) => argvOf(c)[2])).toEqual(['2', '2', '4', '4']);
    const [single, bulk] = calls.map(argvOf) as [string[], string[]];
    expect(single.length).toBe(3 + 15 + 2 + 1); // head, one record, one job, the request id
    expect(bulk.slice(-5, -1)).toEqual(['b1', '1', 'b2', '2']);
    expect((await q.getJob('1'))!.name).toBe('one');
    expect((await q.getJob('3'))!.data).toBe(2);
  });

  it('replies {first id, n} to a two-field call, and the same to its rerun, which writes nothing', async () => {
    const q = queue(qname('names-only-reply'));
    const ctx = ctxOf(q);
    await q.add('seed', 0); // id 1
    const record = ['', 0, 'default', 0, '0', '0', '', '', '', '', 0, '', '', '', ''];
    const args = [3, 1, 2, ...record, 'a', '1', 'b', '2', 'c', '3', 'req-names-1'];
    expect(await rawAdd(ctx, args)).toEqual(['2', 3]);
    const after = await snapshot(srv.admin, q.keys);
    expect(await rawAdd(ctx, args)).toEqual(['2', 3]);
    expect(await snapshot(srv.admin, q.keys)).toEqual(after);
    expect((await q.getJobs(['waiting'])).map((j) => [j.id, j.name]).sort()).toEqual([['1', 'seed'], ['2', 'a'], ['3', 'b'], ['4', 'c']]);
  });

  it('refuses two fields a job with several records or a record that is not plain, writing nothing', async () => {
    const q = queue(qname('names-only-bad'));
    const ctx = ctxOf(q);
    await q.add('seed', 0);
    const before = await snapshot(srv.admin, q.keys);
    const record = (o: { delay?: number; lifo?: string; dedup?: string; gmax?: string } = {}) =>
      ['', 0, 'default', o.delay ?? 0, o.lifo ?? '0', '', '', '', '', o.dedup ?? '', 0, '', '', '', o.gmax ?? ''];
    // Refused by add.lua's guards with {BAD_ARGUMENT, position}: 3 (fields per job), 2 (records).
    expect(await rawAdd(ctx, [1, 1, 2, ...record({ delay: 10 }), 'n', '1'])).toEqual([Code.BAD_ARGUMENT, 3]);
    expect(await rawAdd(ctx, [1, 1, 2, ...record({ lifo: '1' }), 'n', '1'])).toEqual([Code.BAD_ARGUMENT, 3]);
    expect(await rawAdd(ctx, [1, 1, 2, ...record({ dedup: 'd' }), 'n', '1'])).toEqual([Code.BAD_ARGUMENT, 3]);
    expect(await rawAdd(ctx, [1, 1, 2, ...record({ gmax: '3' }), 'n', '1'])).toEqual([Code.BAD_ARGUMENT, 3]);
    expect(await rawAdd(ctx, [1, 2, 2, ...record(), ...record(), 'n', '1'])).toEqual([Code.BAD_ARGUMENT, 2]);
    expect(await rawAdd(ctx, [1, 1, 3, ...record(), 'n', '1', 'x'])).toEqual([Code.BAD_ARGUMENT, 3]);
    expect(await snapshot(srv.admin, q.keys)).toEqual(before);
  });
});
