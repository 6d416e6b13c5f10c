// A redis-server of a test file's own (scripts/redis-server.mjs), for tests that read server-wide
// counts (INFO commandstats, MONITOR) which other files sharing the suite's server would change.
// Call at the top of the file: the hooks start it before the file's tests and stop it after,
// closing the queues made with queue() first.
import { afterAll, beforeAll } from 'vitest';
import { Redis } from 'ioredis';
import { Queue } from '../src/index.js';
import type { JobContext } from '../src/job/job.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';

export interface PrivateServer {
  readonly url: string;
  /** A plain client of the server. */
  readonly admin: Redis;
  /** A Queue on the server, closed after the file's tests. */
  queue(name: string): Queue;
  /** Runs close after the file's tests, before the server stops (a worker, say). */
  closeLater(close: () => Promise<unknown>): void;
  /**
   * Resolves once every queue made with queue() has connected and has no reply pending (a PING
   * answered after whatever it sent first), so nothing races a MONITOR start (test/monitor.ts).
   */
  settled(): Promise<void>;
}

export function usePrivateServer(): PrivateServer {
  let server: { url: string; stop: () => Promise<void> } | undefined;
  let admin: Redis | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  const queues: Queue[] = [];
  beforeAll(async () => {
    server = await startRedisServer();
    admin = new Redis(server!.url);
  });
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    admin?.disconnect();
    await server?.stop();
  });
  return {
    get url() { return server!.url; },
    get admin() { return admin!; },
    queue(name: string): Queue {
      const q = new Queue(name, { connection: server!.url });
      closers.push(() => q.close());
      queues.push(q);
      return q;
    },
    closeLater(close: () => Promise<unknown>): void {
      closers.push(close);
    },
    async settled(): Promise<void> {
      await Promise.all(queues.map(async (q) => (await q.waitUntilReady()).ping()));
    },
  };
}

/** The script context of a queue's own client, as a Job's. */
export const ctxOf = (q: Queue): JobContext => ({ client: q.client, keys: q.keys, maxPayloadBytes: 1 << 20, keepLogs: 0 }) as JobContext;
