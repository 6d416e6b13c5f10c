// BullMQ's exported helpers, from echomq's root: same results as bullmq's for the same input.
import { afterAll, describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import * as bullmq from 'bullmq';
import * as echomq from '../../src/index.js';
import { Queue } from '../../src/index.js';
import { closeConnections, connection } from './harness.js';
import { client, keysOf, qname, snapshot, waitFor } from '../helpers.js';

afterAll(closeConnections);

describe('exported helpers', () => {
  it('pure helpers return what bullmq returns', () => {
    const cases: Array<[keyof typeof bullmq & keyof typeof echomq, unknown[]]> = [
      ['array2obj', [['a', '1', 'b', '2']]],
      ['objectToFlatArray', [{ a: 1, b: undefined, c: 'x' }]],
      ['isEmpty', [{}]],
      ['isEmpty', [{ a: 1 }]],
      ['lengthInUtf8Bytes', ['héllo ✓']],
      ['removeUndefinedFields', [{ a: 1, b: undefined }]],
      ['invertObject', [{ a: 'x', b: 'y' }]],
      ['parseObjectValues', [{ a: '1', b: '{"c":2}' }]],
      ['getParentKey', [{ id: '7', queue: 'bull:parents' }]],
      ['getParentKey', [undefined]],
      ['isRedisInstance', [{}]],
      ['isRedisCluster', [{ connect() {}, disconnect() {}, duplicate() {}, isCluster: true }]],
      ['isNotConnectionError', [new Error('boom')]],
      ['isNotConnectionError', [new Error('connect ECONNREFUSED 127.0.0.1:1')]],
    ];
    for (const [name, args] of cases) {
      expect((echomq[name] as (...a: unknown[]) => unknown)(...args), name).toEqual((bullmq[name] as (...a: unknown[]) => unknown)(...args));
    }
    expect([echomq.QUEUE_EVENT_SUFFIX, echomq.DELAY_TIME_1, echomq.DELAY_TIME_5]).toEqual([bullmq.QUEUE_EVENT_SUFFIX, bullmq.DELAY_TIME_1, bullmq.DELAY_TIME_5]);
    const err = Object.assign(new Error('x'), { code: 'E1' });
    expect(echomq.errorToJSON(err)).toEqual(bullmq.errorToJSON(err));
    const a = new EventEmitter();
    const b = new EventEmitter();
    echomq.increaseMaxListeners(a, 5);
    bullmq.increaseMaxListeners(b, 5);
    expect(a.getMaxListeners()).toBe(b.getMaxListeners());
    expect(typeof echomq.randomUUID()).toBe('string');
  });

  it('delay resolves after the time, or at once on abort', async () => {
    const t0 = Date.now();
    await echomq.delay(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
    const ac = new AbortController();
    const p = echomq.delay(60_000, ac);
    ac.abort();
    await p;
  });

  it("removeAllQueueData deletes every key of an echomq queue and closes the client, as bullmq's does for its own", async () => {
    const name = qname('rmall');
    const q = new Queue(name, { connection: connection(), prefix: 'bull' });
    await q.add('x', { a: 1 }, { lane: 'l', priority: 2 });
    await q.add('y', {}, { delay: 10_000 });
    const check = client();
    expect((await snapshot(check, keysOf(name, 'bull'))).size).toBeGreaterThan(0);
    const victim = connection();
    await echomq.removeAllQueueData(victim, name, 'bull');
    expect((await snapshot(check, keysOf(name, 'bull'))).size).toBe(0);
    // QUIT was sent: the reply comes before the socket closes.
    await waitFor(() => victim.status === 'end', 2000, 'client closed');
    await q.close();
    await check.quit();
  });
});
