// The BullMQ getters across many lanes (an echomq extension, so not side by side): ready jobs
// are listed lane by lane in lane-name order, each lane in service order, and the descending
// order is its exact reverse; every window (Redis range semantics) is the matching slice of
// that sequence; the first and the last page read only the lanes they need (checked with
// MONITOR, filtered to the queue's own keys).
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { qname, redisUrl } from './helpers.js';
import { startMonitor } from './monitor.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/** Redis LRANGE/ZRANGE semantics over a plain array. */
function redisSlice<T>(all: T[], start: number, end: number): T[] {
  const n = all.length;
  const s = start < 0 ? Math.max(0, n + start) : start;
  const e = end < 0 ? n + end : Math.min(end, n - 1);
  return s > e ? [] : all.slice(s, e + 1);
}

describe('getters across lanes', () => {
  it('lists ready jobs lane by lane in lane-name order; every window is a slice of that order, both ways', async () => {
    const q = new Queue(qname('lanes'), { connection: redisUrl() });
    closers.push(() => q.close());
    // Lanes added out of name order, with a priority mix and a lifo job.
    await q.add('c0', {}, { lane: 'c' });
    await q.add('a0', {}, { lane: 'a' });
    await q.add('b0', {}, { lane: 'b' });
    await q.add('a1', {}, { lane: 'a' });
    await q.add('aL', {}, { lane: 'a', lifo: true });
    await q.add('c1', {}, { lane: 'c' });
    await q.add('ap2', {}, { lane: 'a', priority: 2 });
    await q.add('cp1', {}, { lane: 'c', priority: 1 });
    await q.add('ap1', {}, { lane: 'a', priority: 1 });
    const waitingAsc = ['aL', 'a0', 'a1', 'b0', 'c0', 'c1'];
    const prioAsc = ['ap1', 'ap2', 'cp1'];
    const names = async (...args: Parameters<Queue['getJobs']>) => (await q.getJobs(...args)).map((j) => j.name);
    expect(await names('waiting', 0, -1, true)).toEqual(waitingAsc);
    expect(await names('waiting')).toEqual([...waitingAsc].reverse());
    expect(await names('prioritized', 0, -1, true)).toEqual(prioAsc);
    for (let s = -8; s <= 7; s++) {
      for (let e = -8; e <= 7; e++) {
        for (const asc of [true, false]) {
          const w = asc ? waitingAsc : [...waitingAsc].reverse();
          const p = asc ? prioAsc : [...prioAsc].reverse();
          expect(await names('waiting', s, e, asc), `waiting ${s},${e},${asc}`).toEqual(redisSlice(w, s, e));
          expect(await names(['prioritized'], s, e, asc), `prioritized ${s},${e},${asc}`).toEqual(redisSlice(p, s, e));
        }
      }
    }
    expect(await q.getCountsPerPriority([0, 1, 2, 3])).toEqual({ 0: 6, 1: 2, 2: 1, 3: 0 });
    await q.pause();
    expect(await q.getCountsPerPriority([1])).toEqual({ 1: 2 });
    expect(await names('waiting', -2, -1, true)).toEqual(['c0', 'c1']);
  });

  it('the first and the last page of many lanes read only the lanes at that end', async () => {
    // A Redis of its own: MONITOR on the shared one would stream every other test file's
    // commands (and ioredis' monitor mode loses track of its replies under that flood).
    const own = (await startRedisServer([])) as { url: string; stop(): Promise<void> };
    closers.push(() => own.stop());
    const q = new Queue(qname('many'), { connection: own.url });
    closers.push(() => q.close());
    const lanes = Array.from({ length: 300 }, (_, i) => `l${String(i).padStart(3, '0')}`);
    for (let i = 0; i < lanes.length; i += 100) {
      await q.addBulk(lanes.slice(i, i + 100).flatMap((lane) => [{ name: `${lane}-0`, data: {}, opts: { lane } }, { name: `${lane}-1`, data: {}, opts: { lane } }]));
    }
    const base = new Redis(own.url);
    await q.waitUntilReady();
    const monitor = await startMonitor(base);
    closers.push(async () => {
      monitor.stop();
      base.disconnect();
    });
    const read = async (...args: Parameters<Queue['getJobs']>) => {
      monitor.seen.length = 0;
      const names = (await q.getJobs(...args)).map((j) => j.name);
      await monitor.flush();
      const ofLanes = monitor.seen.filter(({ args: a }) => a[1]?.startsWith(q.keys.laneBase));
      const laneReads = ofLanes.filter(({ args: a }) => /^z(rev)?rangebyscore$/i.test(a[0]!)).map(({ args: a }) => a[1]);
      const lanesCounted = ofLanes.filter(({ args: a }) => /^zcount$/i.test(a[0]!)).length;
      return { names, lanesRead: new Set(laneReads).size, lanesCounted };
    };
    expect(await read('waiting', 0, 2, true)).toEqual({ names: ['l000-0', 'l000-1', 'l001-0'], lanesRead: 2, lanesCounted: 0 });
    expect(await read('waiting', 0, 2)).toEqual({ names: ['l299-1', 'l299-0', 'l298-1'], lanesRead: 2, lanesCounted: 0 });
    // From the end: read from the other end, reversed.
    expect(await read('waiting', -3, -1, true)).toEqual({ names: ['l298-1', 'l299-0', 'l299-1'], lanesRead: 2, lanesCounted: 0 });
    expect(await read('waiting', -1, -1)).toEqual({ names: ['l000-0'], lanesRead: 1, lanesCounted: 0 });
    // One lane in: the lanes of the page are counted (one pipelined ZCOUNT each), one is read.
    expect(await read('waiting', 2, 3, true)).toEqual({ names: ['l001-0', 'l001-1'], lanesRead: 1, lanesCounted: 300 });
    // A window in the middle: the same, from the nearer end.
    expect(await read('waiting', 398, 399, true)).toEqual({ names: ['l199-0', 'l199-1'], lanesRead: 1, lanesCounted: 300 });
  });

  it('a sharded queue merges its shards with the same semantics: windows both ways, counts, one job', async () => {
    const q = new Queue(qname('sharded'), { connection: redisUrl(), shards: 3 });
    closers.push(() => q.close());
    const lanes = ['a', 'b', 'c', 'd', 'e', 'f'];
    for (const lane of lanes) {
      await q.add(`${lane}0`, {}, { lane });
      await q.add(`${lane}1`, {}, { lane });
      await q.add(`${lane}p`, {}, { lane, priority: 1 + lanes.indexOf(lane) });
    }
    for (let i = 0; i < 4; i++) await q.add(`d${i}`, {}, { lane: lanes[i], delay: 60_000 + i * 1000 });
    const waitingAsc = lanes.flatMap((l) => [`${l}0`, `${l}1`]);
    const prioAsc = lanes.map((l) => `${l}p`);
    const delayedAsc = ['d0', 'd1', 'd2', 'd3'];
    const names = async (...args: Parameters<Queue['getJobs']>) => (await q.getJobs(...args)).map((j) => j.name);
    for (const [s, e] of [[0, -1], [1, 3], [-3, -1], [-2, -2], [4, 100], [10, 20], [-100, 1], [3, 1]] as Array<[number, number]>) {
      for (const asc of [true, false]) {
        const dir = <T>(xs: T[]) => (asc ? xs : [...xs].reverse());
        expect(await names('wait', s, e, asc), `waiting ${s},${e},${asc}`).toEqual(redisSlice(dir(waitingAsc), s, e));
        expect(await names('prioritized', s, e, asc), `prioritized ${s},${e},${asc}`).toEqual(redisSlice(dir(prioAsc), s, e));
        expect(await names('delayed', s, e, asc), `delayed ${s},${e},${asc}`).toEqual(redisSlice(dir(delayedAsc), s, e));
      }
    }
    expect(await q.getJobCounts('waiting', 'wait', 'prioritized', 'delayed', 'paused')).toEqual({ waiting: 12, wait: 12, prioritized: 6, delayed: 4, paused: 0 });
    expect(await q.getCountsPerPriority([0, 1, 6, 7])).toEqual({ 0: 12, 1: 1, 6: 1, 7: 0 });
    expect((await q.getRanges(['prioritized', 'waiting'], 0, 0, true)).length).toBe(2);
    const [job] = await q.getJobs('prioritized', -1, -1);
    await job.log('hello');
    expect(await q.getJobState(job.id)).toBe('prioritized');
    expect(await q.getJobLogs(job.id)).toEqual({ logs: ['hello'], count: 1 });
    expect(await q.getJobState('nope')).toBe('unknown');
  });
});
