import { afterAll, describe, expect, it } from 'vitest';
import { closeConnections, sideBySide } from './harness.js';

afterAll(closeConnections);

describe('Queue identity (BullMQ QueueBase)', () => {
  it('waitUntilReady, qualifiedName and toKey match BullMQ with a plain ioredis connection', async () => {
    const r = await sideBySide(async (lib, name, connection) => {
      const queue = new lib.Queue(name, { connection, prefix: 'bull' });
      await queue.waitUntilReady();
      const seen = { qualifiedName: queue.qualifiedName, key: queue.toKey('wait'), name: queue.name };
      await queue.close();
      return { ...seen, qualifiedName: seen.qualifiedName.replace(name, '<q>'), key: seen.key.replace(name, '<q>'), name: seen.name === name };
    });
    expect(r.echomq).toEqual(r.bullmq);
  });
});
