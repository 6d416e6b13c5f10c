// add.lua has a plain path (one option record, generated ids, one lane, ready, FIFO) beside its
// general one. Both must store the same bytes: the same job runs through each and the hashes,
// lane entries, counters and events are compared.
import { afterEach, describe, expect, it } from 'vitest';
import { Queue, type JobOptions } from '../src/index.js';
import { client, keysOf, qname, redisUrl } from './helpers.js';
import { LAYOUT_VERSION } from '../src/core/layout.js';
import { addBatches } from '../src/job/new-job.js';

type Bulk = { name: string; data: unknown; opts?: JobOptions }[];

const OPTION_SETS: JobOptions[] = [
  {},
  { priority: 7 },
  { lane: 'tenant-a' } as JobOptions,
  { priority: 3, lane: 'b', removeOnComplete: 5, removeOnFail: { count: 2, age: 60 } } as JobOptions,
  { removeOnComplete: false, timestamp: 1_700_000_000_000, attempts: 3, backoff: { type: 'fixed', delay: 10 } },
];

describe('add: the plain path stores what the general path stores', () => {
  const queues: Queue[] = [];
  afterEach(async () => {
    for (const q of queues.splice(0)) await q.obliterate({ force: true }).then(() => q.close());
  });

  for (const [i, opts] of OPTION_SETS.entries()) {
    it(`option set ${i}: ${JSON.stringify(opts)}`, async () => {
      const redis = client();
      const qa = new Queue(qname('plain'), { connection: redisUrl() });
      const qb = new Queue(qname('general'), { connection: redisUrl() });
      queues.push(qa, qb);
      const jobs: Bulk = [
        { name: 'n1', data: { x: 1 }, opts },
        { name: 'n2', data: 'two', opts },
      ];
      // The plain path: every job has a generated id and the same options.
      const a = await qa.addBulk(jobs);
      // The general path: the same two jobs, then one with a custom id in the same call.
      const b = await qb.addBulk([...jobs, { name: 'n3', data: 3, opts: { ...opts, jobId: 'custom' } }]);
      expect(a.map((j) => j.id)).toEqual(['1', '2']);
      expect(b.map((j) => j.id)).toEqual(['1', '2', 'custom']);
      const ka = keysOf(qa.name), kb = keysOf(qb.name);
      for (const id of ['1', '2']) {
        const ha = await redis.hgetall(`${ka.jobBase}${id}`);
        const hb = await redis.hgetall(`${kb.jobBase}${id}`);
        // The stored timestamp is the Redis clock unless given: compare its presence only then.
        if (!opts.timestamp) {
          expect(Math.abs(Number(ha.ts) - Number(hb.ts))).toBeLessThan(5000);
          ha.ts = hb.ts = '';
        }
        expect(Object.keys(ha)).toEqual(Object.keys(hb)); // same fields, same order
        expect(ha).toEqual(hb);
      }
      const lane = (opts as { lane?: string }).lane ?? 'default';
      const ma = await redis.zrange(`${ka.laneBase}${lane}`, 0, -1, 'WITHSCORES');
      const mb = await redis.zrange(`${kb.laneBase}${lane}`, 0, -1, 'WITHSCORES');
      expect(ma).toEqual(mb.slice(0, 4));
      const meta = ['id', 'seq', 'ready', 'readyP', 'lv'];
      const metaA = await redis.hmget(ka.meta, ...meta);
      const metaB = await redis.hmget(kb.meta, ...meta);
      expect(metaA[0]).toBe('2');
      expect(metaA[1]).toBe('2');
      expect(metaA.slice(2)).toEqual([String(2), opts.priority ? '2' : null, String(LAYOUT_VERSION)]);
      expect(metaB.slice(2)).toEqual([String(3), opts.priority ? '3' : null, String(LAYOUT_VERSION)]);
      expect(await redis.lrange(ka.ring, 0, -1)).toEqual(await redis.lrange(kb.ring, 0, -1));
      expect(await redis.llen(ka.wake)).toBe(1);
      // Events: the plain call's entries equal the general call's for its first two jobs.
      const ea = (await redis.xrange(ka.events, '-', '+')).map(([, f]) => f);
      const eb = (await redis.xrange(kb.events, '-', '+')).map(([, f]) => f);
      expect(ea.length).toBe(1);
      expect(eb[0].slice(0, ea[0].length)).toEqual(ea[0]);
      redis.disconnect();
    });
  }
});

// The plain path makes its ids and stamps by joining a head to the last digits (lib/runs.lua):
// runs that cross a head's boundary, from counters set just below it, must give the strings the
// general path formats whole.
describe('add: the plain path\'s ids and stamps across digit boundaries', () => {
  const STARTS: [number, number][] = [[0, 0], [95, 250], [9_995, 4_090], [123_456_789, 1_048_570]];
  for (const [id0, seq0] of STARTS) {
    it(`from id ${id0}, seq ${seq0}`, async () => {
      const redis = client();
      const qa = new Queue(qname('plainrun'), { connection: redisUrl() });
      const qb = new Queue(qname('generalrun'), { connection: redisUrl() });
      try {
        const ka = keysOf(qa.name), kb = keysOf(qb.name);
        for (const k of [ka, kb]) await redis.hset(k.meta, 'id', id0, 'seq', seq0);
        const jobs = Array.from({ length: 300 }, (_, i) => ({ name: 'n', data: i }));
        const a = await qa.addBulk(jobs.slice(0, 100));
        // A custom id last in the call sends it down the general path.
        const b = await qb.addBulk([...jobs.slice(0, 99), { name: 'n', data: 99, opts: { jobId: 'last' } }]);
        expect(a.map((j) => j.id)).toEqual(Array.from({ length: 100 }, (_, i) => String(id0 + 1 + i)));
        expect(b.map((j) => j.id).slice(0, 99)).toEqual(a.map((j) => j.id).slice(0, 99));
        const ma = await redis.zrange(`${ka.laneBase}default`, 0, -1);
        const mb = await redis.zrange(`${kb.laneBase}default`, 0, -1);
        expect(ma.slice(0, 99)).toEqual(mb.slice(0, 99));
        const stamp = (i: number) => (2 ** 52 + seq0 + 1 + i).toString(16).padStart(14, '0');
        expect(ma).toEqual(a.map((j, i) => stamp(i) + j.id));
        for (const j of a.slice(0, 99)) {
          expect(await redis.hget(`${ka.jobBase}${j.id}`, 'sq')).toBe(await redis.hget(`${kb.jobBase}${j.id}`, 'sq'));
        }
      } finally {
        for (const q of [qa, qb]) await q.obliterate({ force: true }).then(() => q.close());
        redis.disconnect();
      }
    });
  }
});

describe('add batches', () => {
  const jobs = (lanes: string[]) => lanes.map((lane, i) => ({ lane, i }));
  it('puts up to 100 jobs of one lane in a call, and counts each lane a call opens as one job more', () => {
    expect(addBatches(jobs(Array(250).fill('a'))).map((b) => b.length)).toEqual([100, 100, 50]);
    expect(addBatches(jobs(Array.from({ length: 120 }, (_, i) => `l${i}`))).map((b) => b.length)).toEqual([50, 50, 20]);
    // 2 lanes: 99 jobs + 2 lanes fill the budget of 101.
    expect(addBatches(jobs(Array.from({ length: 200 }, (_, i) => (i % 2 ? 'a' : 'b')))).map((b) => b.length)).toEqual([99, 99, 2]);
    const all = jobs(Array.from({ length: 333 }, (_, i) => `l${i % 7}`));
    expect(addBatches(all).flat()).toEqual(all); // order kept, nothing lost
    expect(addBatches([])).toEqual([]);
  });

});
