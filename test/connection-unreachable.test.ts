// Redis that cannot be reached: a port with nothing listening, and a redis-server of the test's
// own started late, stopped and started again on the same port. A call never sent rejects with
// RedisUnreachableError (the socket's code and text first), within connectWaitMs, and is never
// sent later; waitUntilReady waits while ioredis retries and rejects once it gives up (as
// BullMQ's); malformed URLs are refused at once; an error nobody listens for is one short line.
import { afterAll, describe, expect, it, vi } from 'vitest';
import * as bullmq from 'bullmq';
import { Redis } from 'ioredis';
import {
  FlowProducer, Queue, QueueEvents, RedisUnreachableError, RequestOutcomeUnknownError, ValidationError, Worker,
} from '../src/index.js';
import { qname, sleep, waitFor } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer, freePort } from '../scripts/redis-server.mjs';

type Server = { url: string; port: number; stop: () => Promise<void> };
const servers: Server[] = [];
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c().catch(() => {});
  for (const s of servers) await s.stop();
});
const start = async (port: number): Promise<Server> => {
  const s = (await startRedisServer([], { port })) as Server;
  servers.push(s);
  return s;
};
const quiet = <T extends { on(e: 'error', f: (e: Error) => void): unknown }>(o: T, into?: Error[]): T => {
  o.on('error', (e) => into?.push(e));
  return o;
};
const outcome = (p: Promise<unknown>) => p.then(() => 'resolved', (e: Error & { code?: string }) => e);

describe('a call that was never sent', () => {
  it('rejects with the connection error, as BullMQ (retryStrategy: () => null), not as outcome unknown', async () => {
    const port: number = await freePort();
    const connection = { host: '127.0.0.1', port, retryStrategy: () => null };
    const seen: Record<string, unknown> = {};
    for (const [side, lib] of [['bullmq', bullmq], ['echomq', { Queue }]] as const) {
      const errors: Error[] = [];
      const q = quiet(new (lib.Queue as typeof Queue)(qname('unreach'), { connection }), errors);
      const err = (await outcome(q.add('a', {}))) as Error & { code?: string };
      await waitFor(() => errors.length > 0, 5000, 'an error event');
      seen[side] = {
        code: err.code,
        message: err.message.startsWith(`connect ECONNREFUSED 127.0.0.1:${port}`),
        event: errors[0].message.startsWith(`connect ECONNREFUSED 127.0.0.1:${port}`),
        eventCode: (errors[0] as Error & { code?: string }).code,
      };
      if (side === 'echomq') {
        expect(err).toBeInstanceOf(RedisUnreachableError);
        expect(err).not.toBeInstanceOf(RequestOutcomeUnknownError);
        expect(err.message).toContain(`Redis cannot be reached at 127.0.0.1:${port}`);
        expect(errors[0]).toBeInstanceOf(RedisUnreachableError);
        expect(errors[0].message).toBe(`connect ECONNREFUSED 127.0.0.1:${port}`); // BullMQ's text
      }
      await q.close();
    }
    expect(seen.echomq).toEqual(seen.bullmq);
    expect(seen.echomq).toEqual({ code: 'ECONNREFUSED', message: true, event: true, eventCode: 'ECONNREFUSED' });
  });

  it('waits at most connectWaitMs while ioredis keeps retrying, is never sent later, and the queue recovers', async () => {
    const port: number = await freePort();
    const name = qname('unreach-wait');
    const q = quiet(new Queue(name, { connection: { host: '127.0.0.1', port, connectWaitMs: 300 } }));
    closers.push(() => q.close());
    const t0 = Date.now();
    // A MULTI leaves the offline queue whole: none of its commands is sent later either.
    const multi = outcome(q.client.multi().set(`${name}:k`, '1').incr(`${name}:n`).exec());
    const err = (await outcome(q.add('never-sent', {}))) as RedisUnreachableError;
    const waited = Date.now() - t0;
    expect(await multi).toBeInstanceOf(RedisUnreachableError);
    expect(err).toBeInstanceOf(RedisUnreachableError);
    expect(err.code).toBe('ECONNREFUSED');
    expect(err.message).toMatch(new RegExp(`^connect ECONNREFUSED 127\\.0\\.0\\.1:${port}: Redis cannot be reached at 127\\.0\\.0\\.1:${port} \\(the call waited 300 ms`));
    // The default bound is 5 s and ioredis's own limit (20 retries) about 10 s: this is the option's.
    expect(waited).toBeGreaterThanOrEqual(250);
    expect(waited).toBeLessThan(2500);
    expect(['connecting', 'reconnecting']).toContain(q.client.status); // still trying
    await start(port);
    await q.waitUntilReady();
    await q.add('sent', {});
    await sleep(100);
    const counts = await q.getJobCounts('waiting');
    expect(counts.waiting).toBe(1); // only the call made once Redis answered
    expect(await q.client.exists(`${name}:k`, `${name}:n`)).toBe(0);
  });

  it('connectWaitMs is validated', () => {
    expect(() => new Queue(qname('v'), { connection: { connectWaitMs: -1 } })).toThrow(/connection\.connectWaitMs must be an integer of ms >= 0, or null/);
  });
});

describe('Redis down at start, stopped and started again', () => {
  it('waitUntilReady of Queue, Worker, QueueEvents and FlowProducer waits while ioredis retries', async () => {
    const port: number = await freePort();
    const connection = { host: '127.0.0.1', port };
    const name = qname('late');
    const objs = [
      quiet(new Queue(name, { connection })),
      quiet(new Worker(name, async () => {}, { connection, autorun: false })),
      quiet(new QueueEvents(name, { connection, autorun: false })),
      quiet(new FlowProducer({ connection })),
    ];
    for (const o of objs) closers.push(() => o.close());
    let ready = 0;
    const all = Promise.all(objs.map((o) => o.waitUntilReady().then(() => ready++)));
    await sleep(300);
    expect(ready).toBe(0);
    await start(port);
    await all;
    expect(ready).toBe(4);
  });

  it('waitUntilReady rejects with the connection error once the retry strategy gives up, as BullMQ', async () => {
    const port: number = await freePort();
    const connection = { host: '127.0.0.1', port, retryStrategy: () => null };
    const seen: Record<string, string[]> = {};
    // BullMQ's QueueEvents leaves a rejection unhandled on a refused connection: compared on echomq only.
    for (const [side, lib] of [['bullmq', bullmq as unknown as Record<string, any>], ['echomq', { Queue, Worker, FlowProducer, QueueEvents }]] as const) {
      const name = qname('gaveup');
      const objs = [
        quiet(new lib.Queue(name, { connection })),
        quiet(new lib.Worker(name, async () => {}, { connection, autorun: false })),
        quiet(new lib.FlowProducer({ connection })),
      ];
      if (side === 'echomq') objs.push(quiet(new lib.QueueEvents(name, { connection, autorun: false })));
      seen[side] = await Promise.all(objs.map(async (o) => {
        const e = (await outcome(o.waitUntilReady())) as Error & { code?: string };
        return `${e.code} ${e.message}`;
      }));
      await Promise.race([Promise.all(objs.map((o) => o.close().catch(() => {}))), sleep(1000)]);
    }
    const refused = `ECONNREFUSED connect ECONNREFUSED 127.0.0.1:${port}`;
    expect(seen.bullmq).toEqual([refused, refused, refused]);
    expect(seen.echomq).toEqual([refused, refused, refused, refused]);
  });

  it('a Worker and a QueueEvents started while Redis is down start work once it is up, and ride out a restart', async () => {
    const port: number = await freePort();
    const connection = { host: '127.0.0.1', port, connectWaitMs: 200 };
    const name = qname('late-worker');
    const done: string[] = [];
    const worker = quiet(new Worker(name, async (job) => void done.push(job.name), { connection, drainDelay: 1 }));
    closers.push(() => worker.close());
    const events = quiet(new QueueEvents(name, { connection }));
    closers.push(() => events.close());
    let completed = 0;
    events.on('completed', () => completed++);
    await sleep(700); // past the bound: its claims were refused as unreachable meanwhile
    expect(worker.isRunning()).toBe(true);
    let server = await start(port);
    await events.waitUntilReady();
    await sleep(200); // its XREAD from '$' under way
    const admin = new Queue(name, { connection: server.url });
    await admin.add('first', {});
    await waitFor(() => done.includes('first') && completed === 1, 8000, 'the first job and its event');
    await admin.close();
    await server.stop();
    await sleep(500);
    expect(worker.isRunning()).toBe(true);
    server = await start(port);
    const again = new Queue(name, { connection: server.url });
    closers.push(() => again.close());
    await again.add('second', {});
    await waitFor(() => done.includes('second'), 8000, 'the job added after the restart');
    // The restarted server kept no data: the event stream starts again, and QueueEvents reads it.
    await waitFor(() => completed === 2, 8000, "QueueEvents' event after the restart");
  });
});

describe('connection URLs', () => {
  it('refuses a malformed URL at once, naming it and the forms accepted', () => {
    for (const url of ['redis//localhost:6600', 'http://localhost:6379', 'localhost:6379/x']) {
      let err: unknown;
      try {
        new Queue(qname('url'), { connection: url });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toBe(
        `connection must be a redis:// or rediss:// URL (redis://[user:password@]host[:port][/db]), host:port, a port number or a Unix socket path (/path/to/redis.sock), got ${JSON.stringify(url)}`);
    }
    expect(() => new Worker(qname('url'), async () => {}, { connection: { url: 'redis//localhost:6600' } })).toThrow(/connection\.url must be a redis:\/\/ or rediss:\/\/ URL.*got "redis\/\/localhost:6600"/);
  });

  it('keeps socket paths, bare ports, host:port and redis:// URLs', async () => {
    for (const url of ['/tmp/echomq-none.sock', '6390', 'localhost:6390', 'redis://localhost:6390/2', 'rediss://u:p@localhost:6390']) {
      const q = quiet(new Queue(qname('url'), { connection: url }));
      await q.disconnect();
      await q.close();
    }
    const path = (new Queue(qname('url'), { connection: '/tmp/echomq-none.sock' }) as Queue);
    quiet(path);
    expect((path.client as Redis).options.path).toBe('/tmp/echomq-none.sock');
    await path.disconnect();
  });
});

describe('an error nobody listens for', () => {
  it('is printed as one line per distinct error, not once per retry', async () => {
    const port: number = await freePort();
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    try {
      const q = new Queue(qname('print'), { connection: { host: '127.0.0.1', port, retryStrategy: () => 20 } });
      const errors: Error[] = [];
      q.client.on('error', (e) => errors.push(e));
      await waitFor(() => errors.length >= 10, 5000, 'ten connection errors');
      const lines = printed.mock.calls.filter((c) => String(c[0]).includes(`127.0.0.1:${port}`));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toEqual([`[echomq] Queue ${q.name}: connect ECONNREFUSED 127.0.0.1:${port}`]);
      await q.disconnect();
      await q.close();
    } finally {
      printed.mockRestore();
    }
  });
});
