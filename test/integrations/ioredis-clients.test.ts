// An application's own ioredis client, of either major version, is used as is: echomq
// recognises clients by shape, not by `instanceof` against its own copy of ioredis.
import { afterAll, describe, expect, it } from 'vitest';
import { Redis as Redis5 } from 'ioredis';
import { Redis as Redis6 } from 'ioredis6';
import { FlowProducer, Queue, QueueEvents, Worker } from '../../src/index.js';
import { isClient } from '../../src/core/connection.js';
import { qname, redisUrl } from '../helpers.js';

const opened: Array<{ quit(): Promise<unknown> }> = [];
afterAll(async () => {
  for (const c of opened) await c.quit().catch(() => {});
});

describe.each([
  ['ioredis 5', (url: string) => new Redis5(url, { maxRetriesPerRequest: null })],
  ['ioredis 6', (url: string) => new Redis6(url, { maxRetriesPerRequest: null })],
])('%s client passed as connection', (_label, make) => {
  it('is recognised, shared by Queue, Worker, QueueEvents and FlowProducer, and left open by their close()', async () => {
    const conn = make(redisUrl());
    opened.push(conn);
    expect(isClient(conn)).toBe(true);
    const name = qname('own-client');
    const queue = new Queue(name, { connection: conn as never });
    const events = new QueueEvents(name, { connection: conn as never });
    await events.waitUntilReady();
    const flows = new FlowProducer({ connection: conn as never });
    // The queue uses the very client it was given (no second, unconfigured connection).
    expect(queue.client).toBe(conn);
    const done = new Promise<unknown>((resolve) => events.on('completed', ({ returnvalue }) => resolve(returnvalue)));
    const worker = new Worker(name, async (job) => job.data.n * 2, { connection: conn as never });
    await queue.add('double', { n: 21 }, { priority: 3, lane: 'tenant-a' });
    expect(await done).toBe(42);
    await flows.add({ name: 'parent', queueName: name, children: [{ name: 'child', queueName: name, data: { n: 1 } }] });
    await worker.close();
    await events.close();
    await flows.close();
    await queue.close();
    expect(conn.status).toBe('ready');
    expect(await conn.ping()).toBe('PONG');
  });
});

it('plain option objects and URLs are still options, not clients', () => {
  expect(isClient({ host: '127.0.0.1', port: 6379 })).toBe(false);
  expect(isClient('redis://127.0.0.1:6379')).toBe(false);
  expect(isClient({ duplicate() {}, connect() {}, status: 'ready' })).toBe(false);
});
