// The stored layout version (docs/protocol.md "Versions"): the client check is one read-only
// HGET of meta.lv before the first write of a Queue, Worker or FlowProducer; the version is
// stamped by the writes that create a queue's content, in the same atomic call, so a refused
// call writes nothing, and a queue stored in another layout is refused with
// IncompatibleLayoutError before anything is written.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FlowProducer, IncompatibleLayoutError, JobNotFoundError, Queue, Worker } from '../src/index.js';
import { ACTIVE_SENTINEL } from '../src/core/layout.js';
import { runCli } from '../src/cli/program.js';
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
    await c.hset(keys.meta, MetaField.layoutVersion, '3');
    const before = await snapshot(c, keys);
    const q = new Queue(name, { connection: redisUrl() });
    const e = await q.add('j', { a: 1 }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(IncompatibleLayoutError);
    expect((e as IncompatibleLayoutError).code).toBe('ERR_LAYOUT');
    expect((e as Error).message).toBe(`queue ${name} is stored in layout version 3; this echomq reads layout version 2`);
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

describe('upgradeLayout (layout 1 → 2)', () => {
  /** A queue as layout 1 stored it: lv 1, leases in active without the sentinel, a ready job. */
  async function layoutOneQueue(name: string) {
    const q = new Queue(name, { connection: redisUrl() });
    await q.add('waiting', {});
    const keys = keysOf(name);
    await c.hset(keys.meta, MetaField.layoutVersion, '1');
    return { q, keys };
  }

  it('refuses a layout-1 queue with a message naming the upgrade; one call upgrades it, a second is a no-op', async () => {
    const name = qname('lv-up');
    const { q: writer, keys } = await layoutOneQueue(name);
    await writer.close();
    await c.zadd(keys.active, 1e15, 'held-by-an-old-worker'); // a layout-1 lease, as such a worker wrote it
    const q = new Queue(name, { connection: redisUrl() });
    const e = await q.add('j', {}).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(IncompatibleLayoutError);
    expect((e as Error).message).toBe(
      `queue ${name} is stored in layout version 1; this echomq reads layout version 2; upgrade it with queue.upgradeLayout() or \`echomq upgrade-layout ${name}\``);

    const before = await snapshot(c, keys);
    expect(await q.upgradeLayout({ dryRun: true })).toBe(1);
    expect(await snapshot(c, keys)).toEqual(before); // a dry run writes nothing

    expect(await q.upgradeLayout()).toBe(1);
    expect(await c.hget(keys.meta, MetaField.layoutVersion)).toBe(String(LAYOUT_VERSION));
    expect(await c.zrange(keys.active, 0, -1, 'WITHSCORES')).toEqual(['held-by-an-old-worker', '1000000000000000', ACTIVE_SENTINEL, 'inf']);
    expect(await c.call('OBJECT', 'ENCODING', keys.active)).toBe('skiplist');
    expect(await q.getActiveCount()).toBe(1);
    // The same client goes ahead now (its refused check was forgotten).
    await q.add('j', {});
    const after = await snapshot(c, keys);
    expect(await q.upgradeLayout()).toBe(LAYOUT_VERSION);
    expect(await snapshot(c, keys)).toEqual(after);
    await q.obliterate({ force: true });
    await q.close();
  });

  it('an idle layout-1 queue becomes what layout 2 writes: only lv changes, no active key is made', async () => {
    const name = qname('lv-up-idle');
    const { q, keys } = await layoutOneQueue(name);
    expect(await c.exists(keys.active)).toBe(0);
    const before = await snapshot(c, keys);
    const fresh = new Queue(name, { connection: redisUrl() });
    expect(await fresh.upgradeLayout()).toBe(1);
    const after = await snapshot(c, keys);
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    expect([...after].filter(([k, v]) => before.get(k) !== v).map(([k]) => k)).toEqual([keys.meta]);
    expect(await c.hget(keys.meta, MetaField.layoutVersion)).toBe('2');
    expect(await fresh.getWaitingCount()).toBe(1);
    await fresh.obliterate();
    await fresh.close();
    await q.close();
  });

  it('a new queue has nothing to upgrade; an unknown stored version is refused and nothing is written', async () => {
    const q = new Queue(qname('lv-up-none'), { connection: redisUrl() });
    expect(await q.upgradeLayout()).toBe(0);
    expect(await c.exists(q.keys.meta)).toBe(0);
    await c.hset(q.keys.meta, MetaField.layoutVersion, '7');
    const before = await snapshot(c, q.keys);
    const e = await q.upgradeLayout().catch((x: unknown) => x);
    expect(e).toBeInstanceOf(IncompatibleLayoutError);
    expect((e as Error).message).toBe(`queue ${q.name} is stored in layout version 7; this echomq reads layout version 2`);
    expect(await snapshot(c, q.keys)).toEqual(before);
    await c.del(q.keys.meta);
    await q.close();
  });

  it('the CLI: upgrade-layout <queue>, with --dry-run and --json', async () => {
    const name = qname('lv-up-cli');
    const { q } = await layoutOneQueue(name);
    const cli = async (...args: string[]) => {
      let out = '';
      let err = '';
      const code = await runCli(['--redis', redisUrl(), ...args], { out: (s) => (out += s), err: (s) => (err += s), env: {} });
      return { code, out, err };
    };
    expect(await cli('upgrade-layout', name, '--dry-run')).toEqual({
      code: 0, err: '', out: `queue ${name}: stored in layout version 1; upgrade-layout would move it to 2\n` });
    expect(await cli('upgrade-layout', name)).toEqual({ code: 0, err: '', out: `queue ${name}: upgraded from layout version 1 to 2\n` });
    const again = await cli('upgrade-layout', name, '--json');
    expect(JSON.parse(again.out)).toEqual({ queue: name, from: 2, to: 2, upgraded: false });
    await q.obliterate();
    await q.close();
  });
});
