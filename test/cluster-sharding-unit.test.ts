// Pure parts of sharding (no Redis needed): lane → shard hashing, generated id → shard, the
// fair slot pool, and that the sharded classes override every public method of their base
// (a method that is not overridden would silently act on the unsharded key space).
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { redisUrl } from './helpers.js';
import { ShardedQueue, laneShard, shardOfGeneratedId } from '../src/cluster/sharded.js';
import { FairSlotPool, ShardedWorker } from '../src/cluster/sharded-worker.js';

describe('laneShard', () => {
  it('spreads similar lane names evenly over 3, 4 and 8 shards', () => {
    for (const n of [3, 4, 8]) {
      const counts = new Array(n).fill(0);
      for (let i = 0; i < 20_000; i++) counts[laneShard(`tenant-${i}`, n)]++;
      for (const c of counts) expect(Math.abs(c - 20_000 / n)).toBeLessThan((20_000 / n) * 0.06);
    }
  });

  it('is stable (a change would move lanes of existing queues) and total', () => {
    expect([laneShard('default', 8), laneShard('a', 8), laneShard('tenant-1', 8), laneShard('x:weight', 8)]).toEqual([
      laneShard('default', 8), laneShard('a', 8), laneShard('tenant-1', 8), laneShard('x:weight', 8),
    ]);
    const pinned = ['default', 'a', 'b', 'tenant-1', 'émoji-🙂'].map((l) => laneShard(l, 16));
    expect(pinned).toEqual([12, 3, 2, 15, 2]);
    expect(laneShard('anything', 1)).toBe(0);
  });
});

describe('generated ids', () => {
  it('name their shard: (id - 1) mod shards; custom ids name none', () => {
    // Shard i of 4 makes i+1, i+5, i+9, …
    expect([1, 5, 9].map((n) => shardOfGeneratedId(String(n), 4))).toEqual([0, 0, 0]);
    expect([4, 8, 12].map((n) => shardOfGeneratedId(String(n), 4))).toEqual([3, 3, 3]);
    expect(shardOfGeneratedId('order-7', 4)).toBeUndefined();
    expect(shardOfGeneratedId('007', 4)).toBeUndefined();
  });
});

describe('FairSlotPool', () => {
  /** Simulated shard workers: each holds `load` slots and wants `want` more. */
  function setup(concurrency: number, shards: number) {
    const pool = new FairSlotPool(concurrency);
    const ws = Array.from({ length: shards }, () => ({ load: 0, pokes: 0 }));
    for (const w of ws) pool.join(w, { load: () => w.load, poke: () => void w.pokes++ });
    /** One claim of w: the pool's grant, of which `available` jobs exist on its shard. */
    const claim = (i: number, available = Infinity) => {
      const w = ws[i];
      const n = pool.free(w, concurrency - w.load);
      const got = Math.min(n, available);
      w.load += got;
      if (n > 0) pool.claimed(w, n, got);
      return got;
    };
    return { pool, ws, claim };
  }

  it('splits the slots among shards with work and lets one busy shard use them all', () => {
    const { ws, claim } = setup(50, 8);
    for (let i = 0; i < 8; i++) claim(i);
    expect(ws.map((w) => w.load)).toEqual([7, 7, 7, 7, 7, 7, 7, 1]);
    // Only shard 0 has work: once the others come back short, it may take everything.
    const solo = setup(50, 8);
    for (let i = 1; i < 8; i++) solo.claim(i, 0);
    expect(solo.claim(0)).toBe(50);
  });

  it('hands a freed slot to a starved shard instead of refilling the big one', () => {
    const { pool, ws, claim } = setup(4, 2);
    ws[1].load = 0;
    claim(0, 100); // shard 1 has not asked yet: shard 0 gets its share, 2
    claim(1, 0); // shard 1 comes back short: idle
    expect(claim(0)).toBe(2); // now shard 0 may use all 4
    // Shard 1 gets work and asks: no room, it waits.
    expect(pool.free(ws[1], 4)).toBe(0);
    // Shard 0 finishes a job: it holds 4, the waiter 0 → it must not refill.
    expect(pool.mayRefetch(ws[0])).toBe(false);
    ws[0].load--;
    pool.released(ws[0]);
    expect(ws[1].pokes).toBe(1);
    expect(claim(1)).toBe(1);
    expect(pool.free(ws[1], 3)).toBe(0); // its loop asks again: waiting, with 1 against 3
    expect(pool.mayRefetch(ws[0])).toBe(false);
    ws[0].load--;
    pool.released(ws[0]);
    expect(claim(1)).toBe(1);
    expect(pool.free(ws[1], 2)).toBe(0);
    // 2 against 2: shard 0 refills its own slots again (one settle call per job).
    expect(pool.mayRefetch(ws[0])).toBe(true);
  });

  it('rotates a single slot among busy shards', () => {
    const { pool, ws, claim } = setup(1, 3);
    for (let i = 0; i < 3; i++) claim(i); // shard 0 takes the slot, 1 and 2 wait
    const waiting = [1, 2]; // in the order they started waiting (the order they are poked in)
    const served: number[] = [];
    let holder = 0;
    for (let turn = 0; turn < 9; turn++) {
      served.push(holder);
      const refill = pool.mayRefetch(ws[holder]);
      ws[holder].load--;
      pool.released(ws[holder]);
      if (refill) {
        ws[holder].load++;
        continue;
      }
      // The shard that just yielded asks first (the worst case): it must wait its turn.
      expect(claim(holder)).toBe(0);
      const next = waiting.shift()!;
      expect(claim(next)).toBe(1);
      waiting.push(holder);
      holder = next;
    }
    expect([0, 1, 2].map((i) => served.filter((x) => x === i).length)).toEqual([3, 3, 3]);
  });
});

describe('sharded classes override every public method', () => {
  /** Public members declared in a class of a source file (not private, protected or static). */
  function publicMembers(file: string, cls: string): string[] {
    const src = readFileSync(new URL(`../src/${file}`, import.meta.url), 'utf8');
    const start = src.indexOf(`export class ${cls}`);
    const body = src.slice(start, src.indexOf('\n}\n', start));
    const names = [...body.matchAll(/^  (?:override )?(?:async )?(?:get )?([a-zA-Z]\w*)(?:<[^>]*>)?\(/gm)].map((m) => m[1]);
    return [...new Set(names)].filter((n) => n !== 'constructor');
  }
  const own = (proto: object) => new Set(Object.getOwnPropertyNames(proto));

  it('Queue', () => {
    // Derived methods stay right on a sharded queue: they only call overridden ones.
    // emit/on/once/off only type the EventEmitter; removeDebounceKey calls removeDeduplicationKey;
    // disconnect closes the one connection the shards share.
    const derived = new Set(['getJobCountByTypes', 'count', 'client', 'emit', 'on', 'once', 'off', 'removeDebounceKey', 'disconnect']);
    const missing = publicMembers('queue/queue.ts', 'Queue').filter((n) => !derived.has(n) && !own(ShardedQueue.prototype).has(n));
    expect(missing).toEqual([]);
  });

  it('Worker', () => {
    const missing = publicMembers('worker/worker.ts', 'Worker').filter((n) => !own(ShardedWorker.prototype).has(n));
    expect(missing).toEqual([]);
  });

  it('LaneControls', async () => {
    const q = new ShardedQueue(`unit-${Date.now()}`, { shards: 2, connection: redisUrl() });
    const missing = publicMembers('lanes/lanes.ts', 'LaneControls').filter((n) => !own(Object.getPrototypeOf(q.lanes)).has(n));
    await q.close();
    expect(missing).toEqual([]);
  });
});
