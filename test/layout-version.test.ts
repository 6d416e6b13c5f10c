// The stored layout version (docs/protocol.md "Versions"): the client check is one read-only
// HGET of meta.lv before the first write of a Queue, Worker or FlowProducer; the version is
// stamped by the writes that create a queue's content, in the same atomic call, so a refused
// call writes nothing, and a queue stored in another layout is refused with
// IncompatibleLayoutError before anything is written.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FlowProducer, IncompatibleLayoutError, JobNotFoundError, Queue, Worker } from '../src/index.js';
import { MetaField } from '../src/core/fields.js';
import { LAYOUT_VERSION } from '../src/core/layout.js';
// @ts-expect-error plain ESM helper without types
import { ARTIFACT } from '../scripts/build-library.mjs';
import { client, keysOf, qname, redisUrl, snapshot, sleep } from './helpers.js';

const c = client();
afterAll(() => c.quit());

describe('stored layout version', () => {
  it('is one number: src/core/layout.ts, lib/common.lua and the library artifact', () => {
    const lua = readFileSync(join(import.meta.dirname, '..', 'src', 'scripts', 'lib', 'common.lua'), 'utf8');
    const m = /^local LAYOUT_VERSION = '(\d+)'$/m.exec(lua);
    expect(m?.[1]).toBe(String(LAYOUT_VERSION));
    expect(JSON.parse(readFileSync(ARTIFACT as string, 'utf8')).layoutVersion).toBe(LAYOUT_VERSION);
  });

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

  it('a refused call on a fresh queue leaves no key; a settings write stores lv with it', async () => {
    const name = qname('lv-refused');
    const keys = keysOf(name);
    const q = new Queue(name, { connection: redisUrl() });
    await expect(q.moveToLane('missing-id', 'x')).rejects.toBeInstanceOf(JobNotFoundError);
    expect((await snapshot(c, keys)).size).toBe(0);
    await q.setGlobalConcurrency(2);
    expect(await c.hget(keys.meta, MetaField.layoutVersion)).toBe(String(LAYOUT_VERSION));
    await q.obliterate();
    await q.close();
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
