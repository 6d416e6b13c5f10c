/**
 * RedisConnection side by side: the connection each class holds (blocking, shared), the class
 * on its own (defaults, options, version and status), refused connections, the `url` option,
 * closing. BullMQ 6.7 keeps a Queue's connection behind `backend.connection`; echomq's classes
 * hold it as `connection` (BullMQ 5's place): `held()` reads either.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { closeConnections, libs, sideBySide } from './harness.js';
import { redisUrl } from '../helpers.js';

afterAll(closeConnections);

type Conn = {
  extraOptions: { shared?: boolean; blocking?: boolean; skipVersionCheck?: boolean; skipWaitingForReady?: boolean };
  opts: Record<string, unknown>;
  status: string;
  redisVersion: string;
  databaseType: string;
  capabilities: Record<string, boolean>;
  initializing: Promise<unknown>;
  client: unknown;
  _client: Redis;
  close(force?: boolean): Promise<void>;
};
const held = (o: unknown, which: 'connection' | 'blockingConnection' = 'connection'): Conn => {
  const x = o as Record<string, any>;
  return (x.backend?.[which] ?? x[which]) as Conn;
};
const flags = (c: Conn) => ({ shared: c.extraOptions.shared === true, blocking: c.extraOptions.blocking === true });
const hostPort = () => {
  const u = new URL(redisUrl());
  return { host: u.hostname, port: Number(u.port) };
};
/** Nothing listens on port 1: connecting is refused at once. */
const REFUSED = { host: '127.0.0.1', port: 1, retryStrategy: () => null };

describe('the connection each class holds', () => {
  it('Queue and FlowProducer: not blocking; shared when given a client. Worker: a blocking connection of its own', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const own = new lib.Queue(name, { connection: hostPort() });
      const onClient = new lib.Queue(name, { connection });
      const worker = new lib.Worker(name, async () => {}, { connection, autorun: false });
      const flow = new lib.FlowProducer({ connection });
      const seen = {
        queue: flags(held(own)),
        queueOnClient: flags(held(onClient)),
        worker: flags(held(worker)),
        workerBlocking: flags(held(worker, 'blockingConnection')),
        flow: flags(held(flow)),
      };
      await Promise.all([own.close(), onClient.close(), worker.close(), flow.close()]);
      return { ...seen, clientLeftOpen: await connection.ping() };
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.workerBlocking).toEqual({ shared: false, blocking: true });
  });

  it('skipWaitingForReady and skipVersionCheck reach the queue\'s connection', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const q = new lib.Queue(name, { connection, skipWaitingForReady: true, skipVersionCheck: true });
      const e = held(q).extraOptions;
      await q.close();
      return { skipWaitingForReady: e.skipWaitingForReady, skipVersionCheck: e.skipVersionCheck };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});

describe('new RedisConnection(opts, extraOptions)', () => {
  it('defaults, the blocking rule for maxRetriesPerRequest, and what it knows once initialized', async () => {
    const r = await sideBySide(async (lib) => {
      const RC = (lib as unknown as { RedisConnection: new (o: unknown, e?: unknown) => Conn }).RedisConnection;
      const dflt = new RC(hostPort());
      const kept = new RC({ ...hostPort(), maxRetriesPerRequest: 10 }, { blocking: false });
      const given = new RC(hostPort(), { shared: true, blocking: false, skipVersionCheck: true, skipWaitingForReady: true });
      const before = dflt.status;
      await dflt.initializing;
      const seen = {
        defaults: { shared: dflt.extraOptions.shared, blocking: dflt.extraOptions.blocking, skipVersionCheck: dflt.extraOptions.skipVersionCheck, skipWaitingForReady: dflt.extraOptions.skipWaitingForReady },
        given: { ...given.extraOptions, clusterReconnectTimeoutMs: undefined },
        blockingRetries: dflt.opts.maxRetriesPerRequest,
        nonBlockingRetries: kept.opts.maxRetriesPerRequest,
        before,
        after: dflt.status,
        version: dflt.redisVersion,
        databaseType: dflt.databaseType,
        capabilities: dflt.capabilities,
        // BullMQ's `client` is a promise of it, echomq's the client itself: awaiting works on both.
        awaited: ((await dflt.client) as Redis).status,
      };
      await Promise.all([dflt.close(), kept.close(), given._client.disconnect()]);
      return { ...seen, closed: dflt.status, end: dflt._client.status };
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.blockingRetries).toBeNull();
    expect(r.echomq.nonBlockingRetries).toBe(10);
  });

  it('a client given is used as it is (its own clientInfoTag and options); shared: close() leaves it open', async () => {
    const r = await sideBySide(async (lib) => {
      const RC = (lib as unknown as { RedisConnection: new (o: unknown, e?: unknown) => Conn }).RedisConnection;
      const mine = new Redis(redisUrl(), { maxRetriesPerRequest: null, clientInfoTag: 'my-app' });
      const c = new RC(mine, { shared: true });
      await c.initializing;
      // (BullMQ 6.7 wraps the client in an adapter; its options are the client's.)
      const seen = { tag: (c._client.options as { clientInfoTag?: string }).clientInfoTag };
      await c.close();
      const status = mine.status;
      mine.disconnect();
      return { ...seen, status };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });

  it('differs on purpose: the default clientInfoTag, the minimum version, `client` not a promise', async () => {
    const seen: Record<string, unknown> = {};
    for (const side of ['bullmq', 'echomq'] as const) {
      const RC = (libs[side] as unknown as { RedisConnection: (new (o: unknown, e?: unknown) => Conn) & { minimumVersion: string } }).RedisConnection;
      const c = new RC(hostPort(), { skipVersionCheck: true });
      await c.initializing;
      seen[side] = { tag: (c._client.options as { clientInfoTag?: string }).clientInfoTag, version: c.redisVersion, min: RC.minimumVersion, promise: c.client instanceof Promise };
      await c.close();
    }
    // BullMQ 6.7 tags no client; echomq's show `lib-name=ioredis(echomq_v<version>)` in CLIENT LIST.
    expect(seen.bullmq).toEqual({ tag: undefined, version: '5.0.0', min: '5.0.0', promise: true });
    // echomq's scripts use LMOVE and SMISMEMBER (Redis 6.2); skipVersionCheck assumes that minimum.
    expect(seen.echomq).toEqual({ tag: expect.stringMatching(/^echomq_v\d+\.\d+\.\d+/), version: '6.2.0', min: '6.2.0', promise: false });
  });
});

describe('refused connections', () => {
  it('waitUntilReady rejects with the connection error (message and code), and close() still resolves', async () => {
    const r = await sideBySide(async (lib, name) => {
      const queue = new lib.Queue(name, { connection: REFUSED });
      queue.on('error', () => {});
      const flow = new lib.FlowProducer({ connection: REFUSED });
      flow.on('error', () => {});
      const why = async (p: Promise<unknown>) => p.then(() => 'resolved', (e: Error & { code?: string }) => `${e.message} / ${e.code}`);
      const seen = { queue: await why(queue.waitUntilReady()), flow: await why(flow.waitUntilReady()) };
      return { ...seen, closed: await why(Promise.all([queue.close(), flow.close()])) };
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq.queue).toBe('connect ECONNREFUSED 127.0.0.1:1 / ECONNREFUSED');
  });

  it('the static RedisConnection.waitUntilReady(client) rejects the same way', async () => {
    const r = await sideBySide(async (lib) => {
      const RC = (lib as unknown as { RedisConnection: { waitUntilReady(c: Redis): Promise<void> } }).RedisConnection;
      const c = new Redis({ ...REFUSED, lazyConnect: true });
      c.on('error', () => {});
      const p = c.connect().catch(() => {});
      const got = await RC.waitUntilReady(c).then(() => 'resolved', (e: Error & { code?: string }) => `${e.message} / ${e.code}`);
      await p;
      const ended = await RC.waitUntilReady(c).then(() => 'resolved', (e: Error) => `${e.name}: ${e.message}`);
      return { got, ended };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});

describe('connection options and closing', () => {
  it('`url` wins over host and port', async () => {
    const r = await sideBySide(async (lib, name) => {
      const queue = new lib.Queue(name, { connection: { url: redisUrl(), host: '1.1.1.1', port: 2222, retryStrategy: () => null } as never });
      await queue.waitUntilReady();
      const status = ((await held(queue).client) as Redis).status;
      await queue.close();
      return status;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toBe('ready');
  });

  it('close() right after construction ends the client it opened', async () => {
    const r = await sideBySide(async (lib, name) => {
      const queue = new lib.Queue(name, { connection: hostPort() });
      const client = held(queue)._client;
      await queue.close();
      return client.status;
    });
    expect(r.echomq).toEqual(r.bullmq);
    expect(r.echomq).toBe('end');
  });
});
