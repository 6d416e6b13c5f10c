// Key isolation against a real Redis: queues whose names try to reach into each other's
// keyspace (`a`, `a}:x`, `a{b}`, `a%7D:x`, `{a}`), lanes `x` and `x:weight` in one queue, and job
// ids that look like key suffixes. A full workload on one queue (adds, lane settings, priority
// and lane changes, logs, processing, clean, drain, obliterate) never changes a key of another
// (DUMP snapshots), lanes never see each other's jobs or settings, and every key of a queue
// lives in one Redis Cluster hash slot (CRC16 of the hash tag, computed here).
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker } from '../src/index.js';
import { escapeQueueName } from '../src/core/keys.js';
import { checkLaneInvariant } from './lane-invariant.js';
import { client, keysOf, redisUrl, snapshot, waitFor } from './helpers.js';
import { randomUUID } from 'node:crypto';

// ------------------------------------------------------------------ Redis Cluster hash slots
const CRC_TABLE = (() => {
  const t = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i << 8;
    for (let j = 0; j < 8; j++) c = c & 0x8000 ? ((c << 1) ^ 0x1021) & 0xffff : (c << 1) & 0xffff;
    t[i] = c;
  }
  return t;
})();

/** CRC16/XMODEM, the checksum Redis Cluster uses. */
function crc16(buf: Uint8Array): number {
  let crc = 0;
  for (const b of buf) crc = ((crc << 8) & 0xffff) ^ CRC_TABLE[((crc >> 8) ^ b) & 0xff];
  return crc;
}

/** The slot Redis Cluster assigns a key: CRC16 of the hash tag (if any) mod 16384, on bytes. */
function keySlot(key: string): number {
  const b = Buffer.from(key);
  const open = b.indexOf(0x7b);
  if (open >= 0) {
    const close = b.indexOf(0x7d, open + 1);
    if (close > open + 1) return crc16(b.subarray(open + 1, close)) % 16384;
  }
  return crc16(b) % 16384;
}

// ------------------------------------------------------------------ the workload
const SUFFIX_IDS = ['meta', 'lane:x', 'x:weight', '1:logs', 'logs:1', 'job:1', 'active', '{a}', 'a}:x', 'lweight', 'x'];

describe('reliability: key isolation between queues, lanes and job ids', () => {
  const redis = client();
  const tag = randomUUID().slice(0, 6);
  // A unique prefix keeps these fixed queue names apart from other test runs on the same server.
  const prefix = `emqiso${tag}`;
  const names = ['a', 'a}:x', 'a{b}', 'a%7D:x', '{a}', 'a:lane:x'];
  const queues = new Map<string, Queue>();
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    await redis.quit();
  });

  const others = (name: string) => names.filter((n) => n !== name);
  const snapAll = async (list: string[]) => new Map(await Promise.all(list.map(async (n) => [n, await snapshot(redis, keysOf(n, prefix))] as const)));

  /** Everything a queue can do, with lanes `x` and `x:weight` and suffix-like job ids. */
  async function exercise(name: string): Promise<void> {
    const k = keysOf(name, prefix);
    const queue = queues.get(name)!;
    await queue.remove('seed');
    await queue.remove('seed2');
    // Lane settings on `x` never show on `x:weight` and the other way round.
    await queue.lanes.setWeight('x', 5);
    await queue.lanes.setLimit('x:weight', 2);
    // A long window: the lane's rate counter (a key with a TTL) must outlive the other queues'
    // workloads, or its expiry would look like a change made by them.
    await queue.lanes.setRateLimit('x', { max: 1000, duration: 600_000 });
    expect((await queue.lanes.get('x:weight')).weight).toBe(1);
    expect((await queue.lanes.get('x:weight')).rate).toBe(null);
    expect((await queue.lanes.get('x')).limit).toBe(null);

    for (const id of SUFFIX_IDS) {
      await queue.add('j', { id, lane: 'x' }, { jobId: id, lane: 'x', priority: 2, removeOnComplete: false });
    }
    await queue.addBulk(SUFFIX_IDS.map((id) => ({ name: 'j', data: { id }, opts: { jobId: `w-${id}`, lane: 'x:weight', removeOnComplete: false } })));
    expect((await queue.lanes.get('x')).depth).toBe(SUFFIX_IDS.length);
    expect((await queue.lanes.get('x:weight')).depth).toBe(SUFFIX_IDS.length);
    // The job called `meta` did not touch the queue's meta hash; the job `lane:x` is not lane x.
    expect(await redis.type(k.meta)).toBe('hash');
    expect(await redis.type(k.laneBase + 'x')).toBe('zset');
    expect(await redis.type(k.jobBase + 'lane:x')).toBe('hash');
    expect((await queue.getJob('meta'))!.data).toEqual({ id: 'meta', lane: 'x' });

    // Settings and pauses of lane x leave the keys of lane x:weight and its jobs byte-identical.
    const dumpWeightLane = async () =>
      Promise.all([k.laneBase + 'x:weight', ...SUFFIX_IDS.map((id) => k.jobBase + `w-${id}`)].map((key) => redis.dumpBuffer(key)));
    const weightLaneBefore = await dumpWeightLane();
    await queue.lanes.setWeight('x', 7);
    await queue.lanes.setLimit('x', 3);
    await queue.lanes.removeLimit('x');
    await queue.lanes.pause('x');
    await queue.lanes.resume('x');
    await queue.changePriority('x', 4);
    expect(await dumpWeightLane()).toEqual(weightLaneBefore);

    await queue.changePriority('x:weight', 0);
    await queue.moveToLane('w-x', 'x');
    await queue.moveToLane('w-x', 'x:weight');
    await queue.lanes.pause('x');
    expect((await queue.lanes.get('x:weight')).paused).toBe(false);
    await (await queue.getJob('1:logs'))!.log('a line');
    expect(await redis.llen(k.logsBase + '1:logs')).toBe(1);
    await queue.remove('lane:x'); // removes the job, not lane x
    expect((await queue.lanes.get('x')).depth).toBe(SUFFIX_IDS.length - 1);
    expect(await redis.type(k.laneBase + 'x')).toBe('zset');
    await queue.add('gone', {}, { jobId: 'to-drain', lane: 'x:weight:drain' });
    expect(await queue.lanes.drain('x:weight:drain')).toBe(1);
    expect((await queue.lanes.get('x:weight')).depth).toBe(SUFFIX_IDS.length);

    // Process lane x:weight only (x is paused), then x.
    const done: string[] = [];
    const worker = new Worker(name, async (job) => {
      done.push(job.id);
      return job.id;
    }, { connection: redisUrl(), prefix, concurrency: 4, drainDelay: 1 });
    await waitFor(() => done.length === SUFFIX_IDS.length, 10_000, 'lane x:weight to be processed');
    expect(done.every((id) => id.startsWith('w-'))).toBe(true);
    await queue.lanes.resume('x');
    await waitFor(() => done.length === 2 * SUFFIX_IDS.length - 1, 10_000, 'lane x to be processed');
    await worker.close();
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);

    // Maintenance.
    expect((await queue.clean(0, 3, 'completed')).length).toBe(3);
    await queue.add('later', {}, { jobId: 'delayed:1', delay: 60_000 });
    await queue.add('now', {}, { jobId: 'waiting:1' });
    expect(await queue.drain(true)).toBe(2);
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
  }

  it('a workload on one queue never touches another queue\'s keys', async () => {
    for (const n of names) {
      const q = new Queue(n, { connection: redisUrl(), prefix });
      queues.set(n, q);
      closers.push(() => q.close());
      closers.push(() => q.obliterate({ force: true }));
      // Seed every queue so that there is something to disturb.
      await q.add('seed', { n }, { jobId: 'seed', lane: 'x' });
      await q.add('seed', { n }, { jobId: 'seed2', lane: 'x:weight', priority: 1 });
      await q.lanes.setWeight('x', 2);
    }
    for (const n of names) {
      const before = await snapAll(others(n));
      await exercise(n);
      const after = await snapAll(others(n));
      for (const o of others(n)) expect(after.get(o), `queue ${JSON.stringify(o)} changed by work on ${JSON.stringify(n)}`).toEqual(before.get(o));
    }

    // Every key of every queue: starts with its own base, carries its own hash tag, one slot;
    // and no key belongs to two queues.
    const owner = new Map<string, string>();
    for (const n of names) {
      const k = keysOf(n, prefix);
      const keys = [...(await snapshot(redis, k)).keys()];
      expect(keys.length).toBeGreaterThan(5);
      const slots = new Set(keys.map(keySlot));
      expect(slots.size, `keys of ${JSON.stringify(n)} in slots ${[...slots]}`).toBe(1);
      expect([...slots][0]).toBe(keySlot(`{${escapeQueueName(n)}}`));
      for (const key of keys) {
        expect(key.startsWith(`${prefix}:{${escapeQueueName(n)}}:`)).toBe(true);
        expect(owner.has(key), `key ${key} of ${n} also belongs to ${owner.get(key)}`).toBe(false);
        owner.set(key, n);
      }
    }

    // Obliterating one queue leaves the others byte-identical.
    for (const n of names) {
      const before = await snapAll(others(n));
      await queues.get(n)!.obliterate({ force: true });
      expect((await snapshot(redis, keysOf(n, prefix))).size).toBe(0);
      const after = await snapAll(others(n));
      for (const o of others(n)) expect(after.get(o), `obliterate of ${JSON.stringify(n)} changed ${JSON.stringify(o)}`).toEqual(before.get(o));
    }
  }, 60_000);

  it('computes Redis Cluster slots like Redis does', () => {
    // Reference values from the Redis Cluster specification and CLUSTER KEYSLOT.
    expect(crc16(Buffer.from('123456789'))).toBe(0x31c3);
    expect(keySlot('foo')).toBe(12182);
    expect(keySlot('{user1000}.following')).toBe(keySlot('{user1000}.followers'));
    expect(keySlot('foo{}{bar}')).toBe(keySlot('foo{}{bar}')); // empty tag: whole key
    expect(keySlot('foo{{bar}}zap')).toBe(keySlot('{bar'));
  });
});
