// How transitions reach Redis: FCALL of the function library by default (reloaded after
// FUNCTION FLUSH or a restart), EVALSHA with an EVAL fallback on NOSCRIPT when forced, on a
// Cluster, or when the user may not load functions. Each on its own server, so command
// statistics see only this file.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { qname, waitFor } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';

let server: { url: string; port: number; stop: () => Promise<void> };
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url);
});
afterAll(async () => {
  admin.disconnect();
  await server.stop();
});

async function stats(): Promise<Record<string, number>> {
  const info = await admin.info('commandstats');
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/cmdstat_([a-z|_]+):calls=(\d+)/g)) out[m[1]] = Number(m[2]);
  return out;
}

/** Jobs named by the queue's stream entries of one event (an entry may name several). */
async function events(q: Queue, event: string): Promise<number> {
  const entries = await q.client.xrange(q.keys.events, '-', '+');
  return entries.filter(([, f]) => f[1] === event).reduce((n, [, f]) => n + f.filter((x) => x === 'jobId').length, 0);
}

/** Adds n jobs one by one and n in bulk, and waits until a worker has processed all of them. */
async function roundTrip(url: string, name: string, n: number): Promise<void> {
  const q = new Queue(name, { connection: url });
  const seen: number[] = [];
  const w = new Worker(name, async (job) => void seen.push(job.data.i), { connection: url });
  try {
    for (let i = 0; i < n; i++) await q.add('x', { i });
    await q.addBulk(Array.from({ length: n }, (_, i) => ({ name: 'x', data: { i: n + i } })));
    await waitFor(() => seen.length === 2 * n, 5000, `${2 * n} jobs processed`);
    expect(seen).toEqual(Array.from({ length: 2 * n }, (_, i) => i));
    // Every job's events reached the stream in this mode too, shared entries included (they are
    // written when the transition's body returns: the loader's finish step).
    await waitFor(async () => (await events(q, 'completed')) === 2 * n, 5000, 'completed events');
    expect(await events(q, 'added')).toBe(2 * n);
    expect(await events(q, 'active')).toBe(2 * n);
  } finally {
    await w.close();
    await q.close();
  }
}

describe('script modes', () => {
  it('calls the function library, and loads it again after FUNCTION FLUSH', async () => {
    await admin.config('RESETSTAT');
    await roundTrip(server.url, qname('fn'), 3);
    const first = await stats();
    expect(first.fcall).toBeGreaterThan(0);
    expect(first['function|load']).toBeGreaterThanOrEqual(1);
    expect(first.evalsha ?? 0).toBe(0);

    await admin.call('FUNCTION', 'FLUSH');
    await admin.config('RESETSTAT');
    await roundTrip(server.url, qname('fn'), 3);
    const after = await stats();
    expect(after['function|load']).toBeGreaterThanOrEqual(1); // reloaded on "Function not found"
    expect(after.fcall).toBeGreaterThan(0);
    const libs = (await admin.call('FUNCTION', 'LIST')) as unknown[];
    expect(libs.length).toBe(1);
  });

  it('uses EVALSHA with an EVAL fallback when forced to, and survives SCRIPT FLUSH', async () => {
    const before = process.env.ECHOMQ_SCRIPTS;
    process.env.ECHOMQ_SCRIPTS = 'eval';
    try {
      await admin.config('RESETSTAT');
      await roundTrip(server.url, qname('ev'), 2);
      await admin.script('FLUSH');
      await roundTrip(server.url, qname('ev'), 2);
      const s = await stats();
      expect(s.fcall ?? 0).toBe(0);
      expect(s.evalsha).toBeGreaterThan(0);
      expect(s.eval).toBeGreaterThan(0); // NOSCRIPT after the flush, answered with EVAL
    } finally {
      if (before === undefined) delete process.env.ECHOMQ_SCRIPTS;
      else process.env.ECHOMQ_SCRIPTS = before;
    }
  });

  it('falls back to scripts for a user who may not load functions', async () => {
    await admin.call('FUNCTION', 'FLUSH');
    await admin.acl('SETUSER', 'nofn', 'on', '>pw', '~*', '&*', '+@all', '-function', '-fcall');
    await admin.config('RESETSTAT');
    const url = server.url.replace('redis://', 'redis://nofn:pw@');
    await roundTrip(url, qname('nofn'), 3);
    const s = await stats();
    expect(s.evalsha ?? 0).toBeGreaterThan(0);
  });
});
