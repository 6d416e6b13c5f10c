// The stored layout version (docs/protocol.md "Versions"): meta.lv is written before the first
// write of a Queue, Worker or FlowProducer, and a queue stored in another layout is refused
// with IncompatibleLayoutError before anything is written.
import { afterAll, describe, expect, it } from 'vitest';
import { FlowProducer, IncompatibleLayoutError, Queue, Worker } from '../src/index.js';
import { MetaField } from '../src/core/fields.js';
import { LAYOUT_VERSION } from '../src/core/layout.js';
import { client, keysOf, qname, redisUrl, snapshot, sleep } from './helpers.js';

const c = client();
afterAll(() => c.quit());

describe('stored layout version', () => {
  it('a read-only Queue writes nothing; the first add stores lv', async () => {
    const name = qname('lv');
    const q = new Queue(name, { connection: redisUrl() });
    await q.waitUntilReady();
    await q.getJobCounts();
    expect(await c.exists(keysOf(name).meta)).toBe(0);
    await q.add('j', {});
    expect(await c.hget(keysOf(name).meta, MetaField.layoutVersion)).toBe(String(LAYOUT_VERSION));
    await q.close();
  });

  it('refuses every write to a queue stored in another layout, and writes nothing', async () => {
    const name = qname('lv-bad');
    const keys = keysOf(name);
    await c.hset(keys.meta, MetaField.layoutVersion, '2');
    const before = await snapshot(c, keys);
    const q = new Queue(name, { connection: redisUrl() });
    const e = await q.add('j', { a: 1 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(IncompatibleLayoutError);
    expect((e as IncompatibleLayoutError).code).toBe('ERR_LAYOUT');
    expect((e as Error).message).toBe(`queue ${name} is stored in layout version 2; this echomq reads layout version 1`);
    await expect(q.pause()).rejects.toBeInstanceOf(IncompatibleLayoutError);
    await expect(q.setGlobalConcurrency(3)).rejects.toBeInstanceOf(IncompatibleLayoutError);

    const flows = new FlowProducer({ connection: redisUrl() });
    await expect(flows.add({ name: 'p', queueName: name, children: [{ name: 'c', queueName: name }] })).rejects.toBeInstanceOf(IncompatibleLayoutError);

    const errors: unknown[] = [];
    const w = new Worker(name, async () => 1, { connection: redisUrl() });
    w.on('error', (err) => errors.push(err));
    await sleep(200);
    expect(errors.some((x) => x instanceof IncompatibleLayoutError)).toBe(true);
    await w.close(true);
    await flows.close();
    await q.close();
    expect(await snapshot(c, keys)).toEqual(before);
  });

  it('after obliterate the next write stores lv again', async () => {
    const name = qname('lv-obl');
    const q = new Queue(name, { connection: redisUrl() });
    await q.add('j', {});
    await q.obliterate();
    expect(await c.exists(keysOf(name).meta)).toBe(0);
    await q.add('j', {});
    expect(await c.hget(keysOf(name).meta, MetaField.layoutVersion)).toBe(String(LAYOUT_VERSION));
    await q.obliterate();
    await q.close();
  });
});
