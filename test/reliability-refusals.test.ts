// Redis refusals are typed (docs/protocol.md "Applied once"): an add that Redis refuses before running it —
// OOM under maxmemory with noeviction, a read-only replica — rejects with RedisRefusedError, its
// message beginning with Redis's own text, and writes nothing. Dedicated servers: the test
// changes maxmemory.
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, RedisRefusedError } from '../src/index.js';
import { keysOf, qname, snapshot, waitFor } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';

interface Server {
  url: string;
  port: number;
  stop: () => Promise<void>;
}

describe('Redis refusals', () => {
  const servers: Server[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    for (const s of servers) await s.stop();
  });

  it('an add refused for OOM or by a read-only replica rejects typed and writes nothing', async () => {
    const primary: Server = await startRedisServer(['--maxmemory-policy', 'noeviction']);
    servers.push(primary);
    const admin = new Redis(primary.url);
    closers.push(() => admin.quit());
    const name = qname('refuse');
    const queue = new Queue(name, { connection: primary.url });
    closers.push(() => queue.close());
    await queue.addBulk(Array.from({ length: 20 }, (_, i) => ({ name: 'x', data: { i } })));
    const before = await snapshot(admin, keysOf(name));

    await admin.config('SET', 'maxmemory', '1');
    for (const attempt of [() => queue.add('x', { big: 'y'.repeat(1000) }), () => queue.addBulk([{ name: 'x', data: {} }, { name: 'y', data: {} }])]) {
      const err = await attempt().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(RedisRefusedError);
      expect((err as Error).message).toMatch(/^OOM command not allowed/);
      expect((err as RedisRefusedError).redisCode).toBe('OOM');
    }
    await admin.config('SET', 'maxmemory', '0');
    // Only the records of the refused calls may differ: none was written, so nothing does.
    expect(await snapshot(admin, keysOf(name))).toEqual(before);

    const replica: Server = await startRedisServer(['--replicaof', '127.0.0.1', String(primary.port)]);
    servers.push(replica);
    const rAdmin = new Redis(replica.url);
    closers.push(() => rAdmin.quit());
    await waitFor(async () => /master_link_status:up/.test(await rAdmin.info('replication')), 10_000, 'replica in sync');
    const rq = new Queue(name, { connection: replica.url });
    closers.push(() => rq.close());
    const err = await rq.add('x', {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RedisRefusedError);
    expect((err as Error).message).toMatch(/^READONLY /);
    expect(await snapshot(admin, keysOf(name))).toEqual(before);
  }, 30_000);
});
