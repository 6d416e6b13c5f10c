// Queue discovery of the operator tools on one Redis: a bounded walk that resumes from its
// cursor, a sharded queue's shards grouped as one queue, and cursors of the wrong form refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import { findQueues } from '../src/operator/discovery.js';
import { client } from './helpers.js';

const prefix = `disc-${randomUUID().slice(0, 6)}`;
let c: Redis;
const queues: Queue[] = [];

beforeAll(async () => {
  c = client();
  for (const name of ['a', 'b', 'c', 'plain#7']) {
    const q = new Queue(name, { connection: c, prefix });
    queues.push(q);
    await q.add('x', {});
  }
  const sharded = new Queue('s', { connection: c, prefix, shards: 2 });
  queues.push(sharded);
  await sharded.addBulk([{ name: 'x', data: {}, opts: { lane: 'l1' } }, { name: 'x', data: {}, opts: { lane: 'l2' } }]);
  // Keys that are no queue's meta, so the walk has something to step over.
  const p = c.pipeline();
  for (let i = 0; i < 3000; i++) p.set(`${prefix}:junk:${i}`, '1');
  await p.exec();
});

afterAll(async () => {
  for (const q of queues) await q.close();
  const keys = await c.keys(`${prefix}:*`);
  for (let i = 0; i < keys.length; i += 1000) await c.del(...keys.slice(i, i + 1000));
  await c.quit();
});

describe('findQueues', () => {
  it('lists everything in one walk, a sharded queue once with its shards', async () => {
    const page = await findQueues(c, prefix);
    expect(page.cursor).toBeNull();
    expect(page.queues).toEqual([{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'plain#7' }, { name: 's', shards: ['s#0', 's#1'] }]);
  });

  it('stops after its SCAN budget and resumes from the cursor to the same queues', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await findQueues(c, prefix, { cursor, scanCalls: 1 });
      seen.push(...page.queues.map((q) => q.name));
      cursor = page.cursor ?? undefined;
      pages++;
    } while (cursor !== undefined && pages < 100);
    expect(pages).toBeGreaterThan(1);
    expect(cursor).toBeUndefined();
    // A sharded queue is listed where shard 0 is found, so once across pages.
    expect(seen.sort()).toEqual(['a', 'b', 'c', 'plain#7', 's']);
  });

  it('refuses a cursor of the wrong form, naming the field', async () => {
    await expect(findQueues(c, prefix, { cursor: '12@127.0.0.1:6379' })).rejects.toThrow(/cursor/);
    await expect(findQueues(c, prefix, { cursor: 'x' })).rejects.toThrow(/cursor/);
    await expect(findQueues(c, prefix, { max: 0 })).rejects.toThrow(/max/);
  });
});
