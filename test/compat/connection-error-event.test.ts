// A failure to connect, as the 'error' event tells it: the same message as BullMQ's (the socket's
// own text, `connect ECONNREFUSED <host>:<port>`), so a program matching on it behaves the same;
// echomq's is still typed (RedisUnreachableError, the socket's code, the address in `where`).
import { describe, expect, it } from 'vitest';
import * as bullmq from 'bullmq';
import { FlowProducer, Queue, QueueEvents, RedisUnreachableError, Worker } from '../../src/index.js';
import { qname, waitFor } from '../helpers.js';
// @ts-expect-error plain ESM helper without types
import { freePort } from '../../scripts/redis-server.mjs';

type Emitter = { on(e: 'error', f: (e: Error) => void): unknown; close(): Promise<unknown> };

async function firstError(make: () => Emitter): Promise<Error & { code?: string; where?: string }> {
  const errors: Error[] = [];
  const o = make();
  o.on('error', (e) => errors.push(e));
  await waitFor(() => errors.length > 0, 5000, 'an error event');
  await o.close().catch(() => {});
  return errors[0];
}

describe("a refused connection's 'error' event", () => {
  it('carries the socket text as BullMQ does, typed in echomq, on every class', async () => {
    const port: number = await freePort();
    const connection = { host: '127.0.0.1', port, retryStrategy: () => null };
    const text = `connect ECONNREFUSED 127.0.0.1:${port}`;
    const theirs = await firstError(() => new bullmq.Queue(qname('refused'), { connection }));
    expect(theirs.message).toBe(text);
    const makers: Array<[string, () => Emitter]> = [
      ['Queue', () => new Queue(qname('refused'), { connection })],
      ['Worker', () => new Worker(qname('refused'), async () => {}, { connection })],
      ['QueueEvents', () => new QueueEvents(qname('refused'), { connection })],
      ['FlowProducer', () => new FlowProducer({ connection })],
    ];
    for (const [kind, make] of makers) {
      const ours = await firstError(make);
      expect({ kind, message: ours.message, code: ours.code }).toEqual({ kind, message: theirs.message, code: theirs.code });
      expect(ours).toBeInstanceOf(RedisUnreachableError);
      expect(ours.where).toBe(`127.0.0.1:${port}`);
    }
  });
});
