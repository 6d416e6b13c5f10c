// The move back to BullMQ killed at random points (SIGKILL of its process, two seeds) and run
// again: every echomq job ends in BullMQ exactly once, in its state, the ready ones in the one
// order the move gives them (priority, then arrival across lanes), and nothing stays in echomq.
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker, migrateToBullMQ } from '../../src/index.js';
import { client, keysOf, qname, redisUrl, waitFor } from '../helpers.js';
import { killMidway } from './helpers.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/migrate-back-run.mjs', import.meta.url));
const redis = client();
afterAll(() => redis.quit());

/** echomq jobs in six lanes: ready (some prioritized), delayed, completed. Returns id → state and the ready order. */
async function fill(name: string, n: number): Promise<{ want: Map<string, string>; order: string[] }> {
  const q = new Queue(name, { connection: redis.duplicate() });
  const want = new Map<string, string>();
  const done = await q.addBulk(Array.from({ length: n / 4 }, (_, i) => ({ name: `done${i}`, data: { i } })));
  const w = new Worker(name, async () => 'ok', { connection: redis.duplicate(), concurrency: 20 });
  await waitFor(async () => (await q.getCompletedCount()) === n / 4, 20_000, 'the completed history');
  await w.close();
  for (const j of done) want.set(j.id!, 'completed');
  const jobs = await q.addBulk(Array.from({ length: n - n / 4 }, (_, i) => ({
    name: `j${i}`, data: { i },
    opts: { lane: `l${i % 6}`, ...(i % 3 === 1 ? { priority: 1 + (i % 5) } : i % 3 === 2 && i % 2 === 0 ? { delay: 600_000 } : {}) },
  })));
  for (const [i, j] of jobs.entries()) want.set(j.id!, i % 3 === 1 ? 'prioritized' : i % 3 === 2 && i % 2 === 0 ? 'delayed' : 'waiting');
  // The order the move gives ready jobs: by priority, then arrival stamp, across lanes.
  const k = keysOf(name);
  const ready: Array<[number, string]> = [];
  for (const lane of await redis.zrange(k.lanes, 0, -1)) {
    const flat = await redis.zrange(k.laneBase + lane, 0, -1, 'WITHSCORES');
    for (let i = 0; i < flat.length; i += 2) ready.push([Number(flat[i + 1]), flat[i]!]);
  }
  ready.sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1));
  await q.close();
  return { want, order: ready.map(([, m]) => m.slice(14)) };
}

async function check(name: string, want: Map<string, string>, order: string[]): Promise<void> {
  const seen = new Map<string, string>();
  const wait = (await redis.lrange(`bull:${name}:wait`, 0, -1)).reverse();
  const prio = await redis.zrange(`bull:${name}:prioritized`, 0, -1);
  expect([...wait, ...prio]).toEqual(order);
  for (const [state, ids] of [['waiting', wait], ['prioritized', prio], ['delayed', await redis.zrange(`bull:${name}:delayed`, 0, -1)],
    ['completed', await redis.zrange(`bull:${name}:completed`, 0, -1)]] as const) {
    for (const id of ids) {
      expect(seen.has(id), `job ${id} twice`).toBe(false);
      seen.set(id, state);
      expect(await redis.exists(`bull:${name}:${id}`), `BullMQ job ${id}`).toBe(1);
    }
  }
  expect(new Map([...seen].sort())).toEqual(new Map([...want].sort()));
  const k = keysOf(name);
  expect(await redis.keys(`${k.jobBase.replace(/[{}]/g, '\\$&')}*`)).toEqual([]);
  expect(Number((await redis.hget(k.meta, 'ready')) ?? 0)).toBe(0);
  expect(await redis.llen(k.ring)).toBe(0);
}

describe('the move back to BullMQ under faults', () => {
  it.each([5, 29])('SIGKILLed at a random point (seed %i) and run again: every job once, in order', async (seed) => {
    const name = qname('back-kill');
    const { want, order } = await fill(name, 400);
    const moved = async () => (await redis.llen(`bull:${name}:wait`)) + (await redis.zcard(`bull:${name}:prioritized`))
      + (await redis.zcard(`bull:${name}:delayed`)) + (await redis.zcard(`bull:${name}:completed`));
    const movedBefore = await killMidway(FIXTURE, name, seed, want.size, want.size - 20, moved);
    const again = await migrateToBullMQ({ connection: redisUrl(), queues: [name] });
    expect(again.queues[0]!.cannotCount).toBe(0);
    expect(again.jobs).toBe(want.size - movedBefore);
    await check(name, want, order);
  }, 30_000);
});
