/**
 * Property test of the lane bookkeeping: random sequences of every transition that touches a
 * lane, called straight through the script wrappers (so the test controls leases and timing),
 * and after every step the invariant checker (test/lane-invariant.ts) reads Redis and demands:
 * ring == inring == the serviceable lanes, once each; lactive == jobs in `active` per lane;
 * meta ready == sum of the lane zsets; the registry holds exactly the lanes in use.
 * Claims are also checked against the lane rules they must obey (never from a paused lane,
 * never above a lane's limit, always the head of the lane in (priority, arrival) order).
 * At the end of each run the queue is obliterated and must leave no key behind.
 *
 * 50 runs by default; LANES_PROP_RUNS=2000 for a longer hunt (about 40 s).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';
import fc from 'fast-check';
import { queueKeys } from '../src/core/keys.js';
import { scripts, type ClaimedJob, type ScriptContext } from '../src/scripts/index.js';
import { client, qname, sleep } from './helpers.js';
import { assertLaneInvariant, laneViolations, readLaneState } from './lane-invariant.js';
import { predictClaim, readTurnInputs, type TurnState } from './lane-model.js';
import { JobField, MetaField } from '../src/core/fields.js';
import { applyGroupDefaults } from '../src/pro/groups.js';

const LANES = ['default', 'x:weight', 'ünï😀', 'b'];
const PRIOS = [0, 0, 1, 2, 5, 2097151];
const LEASE = 60_000;

const pick = fc.nat(1000);

/**
 * The operations of a run. `lanes` are the lane names drawn from; `spread` makes about half the
 * jobs of an add pick a lane each (many shallow lanes), the others going to the add's lane;
 * `claim`/`fetch` bound the jobs a claim or a settle-and-claim asks for; `delays` and `rates`
 * the retry/add delays and lane rate windows drawn; `timing` keeps the sleeps, stalls and short
 * waits that make a run time-dependent.
 */
function operations(o: { lanes: readonly string[]; addMax: number; spread: boolean; claim: number; fetch: number;
  delays: readonly number[]; failDelays: readonly number[]; durations: { min: number; max: number }; timing: boolean; batches?: boolean }) {
  const lane = fc.integer({ min: 0, max: o.lanes.length - 1 }).map((i) => o.lanes[i]);
  const timed = o.timing ? 1 : 0;
  const batched = o.batches ? 1 : 0;
  const all = [
    { arbitrary: fc.record({ k: fc.constant('add' as const), lane, prio: fc.constantFrom(...PRIOS), n: fc.integer({ min: 1, max: o.addMax }),
      delay: fc.constantFrom(...o.delays), lifo: fc.boolean(), lanes: o.spread ? fc.array(fc.option(lane, { freq: 2, nil: undefined }), { minLength: o.addMax, maxLength: o.addMax }) : fc.constant([]) }),
      weight: o.spread ? 10 : 6 },
    { arbitrary: fc.record({ k: fc.constant('claim' as const), n: fc.integer({ min: 1, max: o.claim }) }), weight: o.spread ? 12 : 5 },
    { arbitrary: fc.record({ k: fc.constant('complete' as const), pick, fetch: fc.integer({ min: 0, max: o.fetch }), stale: fc.boolean() }), weight: 4 },
    { arbitrary: fc.record({ k: fc.constant('fail' as const), pick, fetch: fc.integer({ min: 0, max: o.fetch }), delay: fc.constantFrom(...o.failDelays) }), weight: 3 },
    { arbitrary: fc.record({ k: fc.constant('handBack' as const), pick }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('pauseQueue' as const), paused: fc.boolean() }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('retry' as const), pick, state: fc.constantFrom('failed' as const, 'completed' as const) }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('remove' as const), pick }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('stall' as const), n: fc.integer({ min: 1, max: 3 }), maxStalled: fc.integer({ min: 0, max: 2 }) }), weight: 2 * timed },
    { arbitrary: fc.record({ k: fc.constant('moveToLane' as const), pick, lane }), weight: 2 },
    { arbitrary: fc.record({ k: fc.constant('pauseLane' as const), lane, paused: fc.boolean() }), weight: 2 },
    { arbitrary: fc.record({ k: fc.constant('setLimit' as const), lane, limit: fc.option(fc.integer({ min: 0, max: 3 })) }), weight: 2 },
    { arbitrary: fc.record({ k: fc.constant('setWeight' as const), lane, weight: fc.integer({ min: 1, max: 4 }) }), weight: o.spread ? 3 : 1 },
    { arbitrary: fc.record({ k: fc.constant('setRate' as const), lane,
      rate: fc.option(fc.record({ max: fc.integer({ min: 1, max: 3 }), duration: fc.integer(o.durations) })) }), weight: 2 },
    { arbitrary: fc.record({ k: fc.constant('changePriority' as const), pick, prio: fc.constantFrom(...PRIOS), lifo: fc.boolean() }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('drainLane' as const), lane }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('drainQueue' as const), budget: fc.integer({ min: 1, max: 4 }), delayed: fc.boolean() }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('promote' as const), pick }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('sleep' as const), ms: fc.integer({ min: 1, max: 25 }) }), weight: timed },
    // Batch readmissions (retryJobs, promoteJobs: one lane batch over many lanes, which may make
    // one-job lanes) and the Worker's group defaults (every lane but the default one limited).
    { arbitrary: fc.record({ k: fc.constant('retryAll' as const), state: fc.constantFrom('failed' as const, 'completed' as const), n: fc.integer({ min: 1, max: 20 }) }), weight: 2 * batched },
    { arbitrary: fc.record({ k: fc.constant('promoteAll' as const), n: fc.integer({ min: 1, max: 20 }) }), weight: 2 * batched },
    { arbitrary: fc.record({ k: fc.constant('groupDefaults' as const), conc: fc.option(fc.integer({ min: 1, max: 3 })) }), weight: batched },
  ];
  return fc.oneof(...all.filter((a) => a.weight > 0));
}

// A few lanes, each often deep: the original hunt.
const op = operations({ lanes: LANES, addMax: 3, spread: false, claim: 4, fetch: 1, delays: [0, 0, 0, 5, 20, 1_000_000],
  failDelays: [-1, 0, 10, 1_000_000], durations: { min: 5, max: 40 }, timing: true });

// Many lanes of one or two jobs: adds spread over the lanes and claims for more jobs than most
// lanes hold, so one claim call drains many lanes (and, through a settle's retry or released
// limit slot, refills some of them first). Nothing here depends on the clock (no short delays,
// rate windows outlast the run), so every standalone claim is also checked turn by turn
// against the reference model (test/lane-model.ts).
const MANY = Array.from({ length: 40 }, (_, i) => (i % 13 === 0 ? `ü${i}` : `u${i}`));
const manyOp = operations({ lanes: MANY, addMax: 12, spread: true, claim: 30, fetch: 12, delays: [0, 0, 0, 0, 1_000_000],
  failDelays: [-1, 0, 0, 1_000_000], durations: { min: 1_000_000, max: 1_000_000 }, timing: false });

// The same many shallow lanes, with batch readmissions and group defaults (the turn model does
// not know group defaults, so only the invariant is checked here).
const batchOp = operations({ lanes: MANY, addMax: 12, spread: true, claim: 30, fetch: 12, delays: [0, 0, 0, 1_000_000],
  failDelays: [-1, -1, 0, 1_000_000], durations: { min: 1_000_000, max: 1_000_000 }, timing: false, batches: true });

type Op = typeof batchOp extends fc.Arbitrary<infer T> ? T : never;

/** What the test knows: ids ever added and the tokens it holds (current and stale). */
interface Model {
  ids: string[];
  held: Map<string, string>;
  stale: Array<{ id: string; token: string }>;
}

const at = <T>(xs: readonly T[], i: number): T | undefined => (xs.length === 0 ? undefined : xs[i % xs.length]);

function token(cj: ClaimedJob): string {
  const i = cj.fields.indexOf('att');
  return cj.fields[i + 1];
}
// Absent lane / prio fields mean the defaults (lib/newjob.lua leaves them out).
const DEFAULTS: Record<string, string> = { lane: 'default', prio: '0' };
const field = (cj: ClaimedJob, name: string): string => {
  const i = cj.fields.indexOf(name);
  return i < 0 ? DEFAULTS[name]! : cj.fields[i + 1]!;
};

describe('lane bookkeeping under random operations', () => {
  // Its own server: the invariant check SCANs the keyspace after every step, and the shared
  // server holds every other file's keys (request records included) while the suite runs.
  let server: { url: string; stop: () => Promise<void> } | undefined;
  let c: Redis;
  beforeAll(async () => {
    server = await startRedisServer([]);
    c = new Redis(server!.url, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    await c?.quit();
    await server?.stop();
  });

  /** Claimed jobs must come from serviceable lanes and be their lanes' heads. */
  async function checkClaimed(ctx: ScriptContext, jobs: readonly ClaimedJob[]): Promise<void> {
    if (jobs.length === 0) return;
    const s = await readLaneState(c, ctx.keys);
    const byLane = new Map<string, ClaimedJob[]>();
    for (const j of jobs) byLane.set(field(j, 'lane'), [...(byLane.get(field(j, 'lane')) ?? []), j]);
    for (const [name, claimed] of byLane) {
      expect(s.paused.has(name), `claimed from paused lane ${name}`).toBe(false);
      const lim = s.limit.get(name);
      if (lim !== undefined) expect(s.lactive.get(name) ?? 0, `lane ${name} over its limit`).toBeLessThanOrEqual(lim);
      const rest = s.lanes.get(name) ?? [];
      if (rest.length === 0) continue;
      // ZPOPMIN order: every claimed job sorts before every job left in the lane.
      const head = rest[0];
      for (const j of claimed) {
        const prio = Number(field(j, 'prio'));
        // The arrival stamp stays in the job hash (the claim's reply leaves it out).
        const member = (await c.hget(ctx.keys.jobBase + j.id, JobField.stamp)) + j.id;
        const before = prio < head.score || (prio === head.score && member < head.member);
        expect(before, `claimed ${member}@${prio} of ${name} but ${head.member}@${head.score} is still ahead`).toBe(true);
      }
    }
  }

  /** The model's prediction for a claim of n, or undefined when the clock could change it. */
  async function expectedTurns(ctx: ScriptContext, n: number): Promise<TurnState | undefined> {
    // Delayed jobs here are due in 1,000,000 ms or were due at once (promoted by this claim).
    const due = await c.zrangebyscore(ctx.keys.delayed, '-inf', Date.now() + 60_000, 'LIMIT', 0, 1);
    if ((await c.hget(ctx.keys.meta, MetaField.paused)) === '1' || due.length > 0) return undefined;
    const s = await readLaneState(c, ctx.keys);
    return predictClaim(s, await readTurnInputs(c, ctx.keys, s), n);
  }

  async function step(ctx: ScriptContext, m: Model, o: Op, exact = false): Promise<void> {
    const take = (jobs: readonly ClaimedJob[]) => {
      for (const j of jobs) m.held.set(j.id, token(j));
    };
    const settle = (id: string) => {
      const t = m.held.get(id);
      if (t !== undefined) m.stale.push({ id, token: t });
      m.held.delete(id);
    };
    switch (o.k) {
      case 'add': {
        const jobs = Array.from({ length: o.n }, (_, i) => ({
          id: '', name: 'j', data: '{}', opts: '{}', priority: o.prio, lane: o.lanes[i] ?? o.lane, delay: o.delay, lifo: o.lifo,
          keepCompleted: [-1, 0] as [number, number], keepFailed: [-1, 0] as [number, number],
        }));
        for (const r of await scripts.add(ctx, jobs)) m.ids.push(r.id);
        return;
      }
      case 'claim': {
        const want = exact ? await expectedTurns(ctx, o.n) : undefined;
        const r = await scripts.claim(ctx, { count: o.n, leaseMs: LEASE });
        take(r.jobs);
        await checkClaimed(ctx, r.jobs);
        if (want) {
          const [tl, tk] = await c.hmget(ctx.keys.meta, MetaField.turnLane, MetaField.turnLeft);
          expect({ lanes: r.jobs.map((j) => field(j, 'lane')), ring: await c.lrange(ctx.keys.ring, 0, -1), tl: tl ?? '', tk: Number(tk ?? 0) },
            'claim turns as the one-rotation-per-turn model has them').toEqual(want);
        }
        return;
      }
      case 'complete': {
        if (o.stale && m.stale.length > 0) {
          const s = at(m.stale, o.pick)!;
          if (m.held.get(s.id) === s.token) return;
          const r = await scripts.complete(ctx, { id: s.id, token: s.token, returnValue: '1', fetch: o.fetch, leaseMs: LEASE, maxEventValueBytes: 100 });
          expect(typeof r === 'number' && r < 0, 'a stale token must be refused').toBe(true);
          return;
        }
        const id = at([...m.held.keys()], o.pick);
        if (id === undefined) return;
        const r = await scripts.complete(ctx, { id, token: m.held.get(id)!, returnValue: '1', fetch: o.fetch, leaseMs: LEASE, maxEventValueBytes: 100 });
        expect(typeof r, 'a held token must be accepted').not.toBe('number');
        settle(id);
        if (typeof r !== 'number') {
          take(r.jobs);
          await checkClaimed(ctx, r.jobs);
        }
        return;
      }
      case 'fail': {
        const id = at([...m.held.keys()], o.pick);
        if (id === undefined) return;
        const r = await scripts.fail(ctx, {
          id, token: m.held.get(id)!, reason: 'boom', stack: '[]', retryDelayMs: o.delay, exhausted: o.delay < 0,
          fetch: o.fetch, leaseMs: LEASE,
        });
        expect(typeof r, 'a held token must be accepted').not.toBe('number');
        settle(id);
        if (typeof r !== 'number') {
          take(r.jobs);
          await checkClaimed(ctx, r.jobs);
        }
        return;
      }
      case 'handBack': {
        // moveToWait: the processor asked to be rate limited; the job returns to its lane.
        const id = at([...m.held.keys()], o.pick);
        if (id === undefined) return;
        expect(await scripts.moveToWait(ctx, { id, token: m.held.get(id)! })).toBe(1);
        settle(id);
        return;
      }
      case 'pauseQueue':
        await scripts.pause(ctx, o.paused);
        return;
      case 'retry': {
        const id = at(m.ids, o.pick);
        if (id !== undefined) await scripts.retry(ctx, id, o.state);
        return;
      }
      case 'remove': {
        const id = at(m.ids, o.pick);
        if (id !== undefined) await scripts.remove(ctx, { ids: [id] });
        return;
      }
      case 'stall': {
        // Leases of 1 ms expire at once: the sweep puts the jobs back (or fails them) and the
        // tokens the test held become stale.
        const r = await scripts.claim(ctx, { count: o.n, leaseMs: 1 });
        take(r.jobs);
        await checkClaimed(ctx, r.jobs);
        await assertLaneInvariant(c, ctx.keys, { registry: 'exact' });
        await sleep(3);
        const rec = await scripts.recover(ctx, { maxStalledCount: o.maxStalled, batch: 100 });
        for (const id of [...rec.requeued, ...rec.failed]) settle(id);
        return;
      }
      case 'moveToLane': {
        const id = at(m.ids, o.pick);
        if (id !== undefined) await scripts.moveToLane(ctx, { id, lane: o.lane });
        return;
      }
      case 'pauseLane':
        await scripts.pauseLane(ctx, { lane: o.lane, paused: o.paused });
        return;
      case 'setLimit':
        await scripts.setLane(ctx, { lane: o.lane, field: 'limit', value: o.limit === null ? '' : String(o.limit) });
        return;
      case 'setWeight':
        await scripts.setLane(ctx, { lane: o.lane, field: 'weight', value: String(o.weight) });
        return;
      case 'setRate':
        await scripts.setLane(ctx, { lane: o.lane, field: 'rate', value: o.rate === null ? '' : `${o.rate.max}:${o.rate.duration}` });
        return;
      case 'changePriority': {
        const id = at(m.ids, o.pick);
        if (id !== undefined) await scripts.changePriority(ctx, { id, priority: o.prio, lifo: o.lifo });
        return;
      }
      case 'drainLane': {
        let r;
        do r = await scripts.drain(ctx, { budget: 2, delayed: false, cursor: '', lane: o.lane });
        while (!r.done);
        return;
      }
      case 'drainQueue': {
        // A tiny budget makes the drain walk the ring and the registry over several calls.
        let cursor = '';
        for (let i = 0; ; i++) {
          const r = await scripts.drain(ctx, { budget: o.budget, delayed: o.delayed, cursor });
          cursor = r.cursor;
          if (r.done) break;
          if (i > 500) throw new Error('drain did not finish');
          await assertLaneInvariant(c, ctx.keys, { registry: 'exact' });
        }
        const s = await readLaneState(c, ctx.keys);
        expect(s.meta.ready, 'a finished drain leaves no ready job').toBe(0);
        return;
      }
      case 'promote': {
        const id = at(m.ids, o.pick);
        if (id !== undefined) await scripts.promote(ctx, id);
        return;
      }
      case 'sleep':
        await sleep(o.ms);
        return;
      case 'retryAll':
        await scripts.retryJobs(ctx, { state: o.state, count: o.n, timestamp: Date.now() + 1e9 });
        return;
      case 'promoteAll':
        await scripts.promoteJobs(ctx, o.n);
        return;
      case 'groupDefaults':
        await applyGroupDefaults(ctx, { concurrency: o.conc === null ? '' : String(o.conc), rate: '' });
        return;
    }
  }

  // Steps after which some lane was a one-job lane (lib/lanes.lua), so a hunt shows it covered them.
  const seen = { steps: 0, loneSteps: 0 };

  async function run(ops: Op[], exact: boolean): Promise<void> {
    const keys = queueKeys(qname('lprop'));
    const ctx: ScriptContext = { client: c, keys };
    const m: Model = { ids: [], held: new Map(), stale: [] };
    for (const [i, o] of ops.entries()) {
      try {
        await step(ctx, m, o, exact);
        const s = await readLaneState(c, keys);
        seen.steps++;
        if (s.lone.length > 0) seen.loneSteps++;
        const bad = laneViolations(s, { registry: 'exact' });
        if (bad.length > 0) throw new Error(`lane invariant broken:\n  ${bad.join('\n  ')}`);
      } catch (err) {
        throw new Error(`after step ${i} ${JSON.stringify(o)}: ${(err as Error).message}`);
      }
    }
    // Obliterate must leave nothing of the queue behind (lane counters included).
    for (let i = 0; ; i++) {
      const r = await scripts.obliterate(ctx, { budget: 5, force: true });
      expect(typeof r).not.toBe('number');
      if (typeof r !== 'number' && r.done) break;
      if (i > 500) throw new Error('obliterate did not finish');
    }
    // Request records (req:<rid>, docs/protocol.md "Applied once") expire with their window by themselves.
    const left = (await c.keys(keys.base.replace(/[*?[\]\\]/g, '\\$&') + '*')).filter((key) => !key.startsWith(keys.reqBase));
    expect(left, 'keys left after obliterate').toEqual([]);
  }

  it('keeps ring, inring, lactive, ready counts and the registry exact after every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 20, maxLength: 40 }), (ops) => run(ops, false)),
      { numRuns: Number(process.env.LANES_PROP_RUNS ?? 50) },
    );
  });

  it('keeps them exact over many shallow lanes, and every claim turns as one rotation per turn would', async () => {
    seen.steps = seen.loneSteps = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(manyOp, { minLength: 30, maxLength: 80 }), (ops) => run(ops, true)),
      { numRuns: Number(process.env.LANES_PROP_RUNS ?? 50) },
    );
    // Multi-lane adds into empty lanes make one-job lanes in most runs; the hunt must have met them.
    expect(seen.loneSteps, `steps with one-job lanes, of ${seen.steps}`).toBeGreaterThan(seen.steps / 10);
  });

  it('keeps them exact over many shallow lanes with batch readmissions and group defaults', async () => {
    seen.steps = seen.loneSteps = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(batchOp, { minLength: 30, maxLength: 80 }), (ops) => run(ops, false)),
      { numRuns: Number(process.env.LANES_PROP_RUNS ?? 50) },
    );
    expect(seen.loneSteps, `steps with one-job lanes, of ${seen.steps}`).toBeGreaterThan(seen.steps / 10);
  });
});

describe('the invariant checker', () => {
  const c = client();
  afterAll(async () => {
    await c.quit();
  });

  it('notices each kind of broken bookkeeping', async () => {
    const keys = queueKeys(qname('lcheck'));
    const ctx: ScriptContext = { client: c, keys };
    const job = { id: '', name: 'j', data: '{}', opts: '{}', priority: 0, lane: 'a', delay: 0, lifo: false,
      keepCompleted: [-1, 0] as [number, number], keepFailed: [-1, 0] as [number, number] };
    await scripts.add(ctx, [job, job, { ...job, lane: 'b' }]);
    await scripts.claim(ctx, { count: 1, leaseMs: LEASE });
    await assertLaneInvariant(c, keys, { registry: 'exact' });
    const broken = async (mutate: () => Promise<unknown>, undo: () => Promise<unknown>, want: RegExp) => {
      await mutate();
      await expect(assertLaneInvariant(c, keys, { registry: 'exact' })).rejects.toThrow(want);
      await undo();
      await assertLaneInvariant(c, keys, { registry: 'exact' });
    };
    await broken(() => c.rpush(keys.ring, 'b'), () => c.rpop(keys.ring), /duplicates/);
    await broken(() => c.srem(keys.inring, 'a'), () => c.sadd(keys.inring, 'a'), /inring/);
    // 'b' got one job from a multi-lane add: a one-job lane, in the ring through its lone field.
    expect(await c.hexists(keys.lone, 'b')).toBe(1);
    await broken(() => c.sadd(keys.inring, 'b'), () => c.srem(keys.inring, 'b'), /one-job lanes \["b"\] are in inring/);
    await broken(() => c.zadd(keys.laneBase + 'b', 0, 'x'), () => c.del(keys.laneBase + 'b'), /one-job lanes \["b"\] have a sorted set too/);
    const field = (await c.hget(keys.lone, 'b'))!;
    await broken(() => c.hdel(keys.lone, 'b'), () => c.hset(keys.lone, 'b', field), /ring .* != inring .* \+ lone/);
    await broken(() => c.sadd(keys.lpaused, 'b'), () => c.srem(keys.lpaused, 'b'), /serviceable/);
    await broken(() => c.hincrby(keys.lactive, 'a', 1), () => c.hincrby(keys.lactive, 'a', -1), /lactive\[a\]/);
    await broken(() => c.hincrby(keys.meta, MetaField.ready, 1), () => c.hincrby(keys.meta, MetaField.ready, -1), /meta ready/);
    await broken(() => c.zrem(keys.lanes, 'b'), () => c.zadd(keys.lanes, 0, 'b'), /registry lacks/);
    await broken(() => c.zadd(keys.lanes, 0, 'ghost'), () => c.zrem(keys.lanes, 'ghost'), /idle lanes/);
  });
});
