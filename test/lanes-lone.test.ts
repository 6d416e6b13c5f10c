/**
 * One-job lanes (lib/lanes.lua, docs/internals.md "One-job lanes"): a multi-lane add that puts a
 * single job into an empty plain lane keeps that job in the `lone` hash instead of a sorted set
 * of its own. The representation must not show: every reader sees the same jobs, counts and
 * order as for lanes built one add at a time (each with a sorted set), every change of a lane or
 * job turns the lane into an ordinary one where it must, and the bookkeeping stays exact.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Queue } from '../src/index.js';
import { scripts } from '../src/scripts/index.js';
import { applyGroupDefaults } from '../src/pro/groups.js';
import { client, sleep } from './helpers.js';
import { assertLaneInvariant, readLaneState } from './lane-invariant.js';
import { claimLanes, ctxOf, LaneRig } from './fixtures/lanes-util.js';

const rig = new LaneRig();
const c = client();
afterEach(() => rig.closeAll());
afterAll(async () => {
  await c.quit();
});

const LEASE = 60_000;
// Six one-job lanes (two with a priority) and one lane of three jobs.
const PLAN: Array<{ lane: string; priority?: number }> = [
  { lane: 'u0' }, { lane: 'u1', priority: 2 }, { lane: 'deep' }, { lane: 'u2' }, { lane: 'deep', priority: 1 },
  { lane: 'u3' }, { lane: 'u4', priority: 7 }, { lane: 'deep' }, { lane: 'u5' },
];
const jobsOf = () => PLAN.map((p, i) => ({ name: `n${i}`, data: { i }, opts: { lane: p.lane, ...(p.priority ? { priority: p.priority } : {}) } }));

/** Everything a user can read about ready jobs and lanes, in a form two queues can compare. */
async function observe(q: Queue) {
  const ids = (jobs: Array<{ id?: string }>) => jobs.map((j) => j.id);
  const lanes = (await q.lanes.list()).lanes.map((l) => ({ name: l.name, depth: l.depth, active: l.active, inRing: l.inRing, paused: l.paused }));
  return {
    counts: await q.getJobCounts(),
    waiting: ids(await q.getWaiting()),
    prioritized: ids(await q.getPrioritized()),
    ascending: ids(await q.getJobs(['waiting', 'prioritized'], 0, -1, true)),
    page: ids(await q.getJobs(['waiting'], 1, 2, true)),
    lanes,
    groupsJobs: await q.getGroupsJobsCount(),
    groupU1: ids(await q.getGroupJobs('u1')),
    groupU1Last: ids(await q.getGroupJobs('u1', -1, -1)),
    groupU1Past: ids(await q.getGroupJobs('u1', 1, 5)),
    perPriority: await q.getCountsPerPriority([0, 1, 2, 7]),
    perPriorityU4: await q.getCountsPerPriorityForGroup('u4', [0, 7]),
    statusU3: await q.getGroupStatus('u3'),
    waitingGroups: await q.getGroupsByStatus('waiting'),
  };
}

describe('one-job lanes', () => {
  it('hold a multi-lane add\'s single jobs in the lone hash, on the ring, served in ring order, leaving no key behind', async () => {
    const q = rig.queue('lone-basic');
    const lanes = Array.from({ length: 40 }, (_, i) => `p${i}`);
    await q.addBulk(lanes.map((lane, i) => ({ name: 'j', data: { i }, opts: { lane } })));
    const s = await readLaneState(c, q.keys);
    expect(s.lone.sort()).toEqual([...lanes].sort());
    expect(s.inring).toEqual([]);
    expect(s.ring).toEqual(lanes);
    expect(await c.exists(...lanes.map((l) => q.keys.laneBase + l))).toBe(0);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    // 40 lanes in one claim, so lactive is written with its wide field: a hashtable.
    const claimed = await scripts.claim(ctxOf(q), { count: 40, leaseMs: LEASE });
    expect(claimed.jobs.map((j) => j.fields[j.fields.indexOf('lane') + 1])).toEqual(lanes);
    expect(await c.exists(q.keys.lone)).toBe(0);
    expect(await c.object('ENCODING', q.keys.lactive)).toBe('hashtable');
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    for (const j of claimed.jobs) {
      const token = j.fields[j.fields.indexOf('att') + 1];
      await scripts.complete(ctxOf(q), { id: j.id, token, returnValue: '1', fetch: 0, leaseMs: LEASE, maxEventValueBytes: 100 });
    }
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    for (const k of [q.keys.lone, q.keys.lactive, q.keys.lanes, q.keys.ring, q.keys.inring]) expect(await c.exists(k), k).toBe(0);
  });

  it('read like lanes built one add at a time, before and after every change of a lane or a job', async () => {
    const bulk = rig.queue('lone-bulk');
    const single = rig.queue('lone-single');
    await bulk.addBulk(jobsOf());
    for (const j of jobsOf()) await single.add(j.name, j.data, j.opts);
    expect((await readLaneState(c, bulk.keys)).lone.sort()).toEqual(['u0', 'u1', 'u2', 'u3', 'u4', 'u5']);
    expect((await readLaneState(c, single.keys)).lone).toEqual([]);
    const same = async (what: string) => {
      await assertLaneInvariant(c, bulk.keys, { registry: 'exact' });
      await assertLaneInvariant(c, single.keys, { registry: 'exact' });
      expect(await observe(bulk), what).toEqual(await observe(single));
    };
    await same('as added');
    const both = async (f: (q: Queue) => Promise<unknown>, what: string) => {
      await f(bulk);
      await f(single);
      await same(what);
    };
    const idIn = async (q: Queue, lane: string) => (await q.getGroupJobs(lane))[0]!.id!;
    await both(async (q) => q.changePriority(await idIn(q, 'u1'), 5), 'changePriority of a one-job lane\'s job');
    await both(async (q) => q.remove(await idIn(q, 'u2')), 'remove of a one-job lane\'s job');
    await both(async (q) => q.moveToLane(await idIn(q, 'u0'), 'u9'), 'moveToLane out of a one-job lane');
    await both((q) => q.pauseGroup('u3'), 'pauseGroup of a one-job lane');
    await both((q) => q.resumeGroup('u3'), 'resumeGroup');
    await both((q) => q.lanes.setWeight('u4', 3), 'a weight on a one-job lane');
    await both((q) => q.add('late', { late: true }, { lane: 'u5', priority: 1 }), 'a single add into a one-job lane');
    await both((q) => q.addBulk([{ name: 'b', data: {}, opts: { lane: 'u4' } }, { name: 'b', data: {}, opts: { lane: 'u8' } }]), 'a multi-lane add into one-job lanes');
    // The claim serves both queues in the same order.
    expect(await claimLanes(bulk, 20)).toEqual(await claimLanes(single, 20));
    await same('all claimed');
  });

  it('give their job to the lane\'s sorted set when it gets more jobs: priorities stay exact', async () => {
    const q = rig.queue('lone-join');
    await q.addBulk([{ name: 'a', data: {}, opts: { lane: 'x', priority: 5 } }, { name: 'b', data: {}, opts: { lane: 'y' } }]);
    expect((await readLaneState(c, q.keys)).lone.sort()).toEqual(['x', 'y']);
    const hi = await q.add('hi', {}, { lane: 'x', priority: 1 });
    const s = await readLaneState(c, q.keys);
    expect(s.lone).toEqual(['y']);
    expect(s.inring.sort()).toEqual(['x']);
    expect(s.ring).toEqual(['x', 'y']); // x keeps its place in the ring
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    const first = await scripts.claim(ctxOf(q), { count: 1, leaseMs: LEASE });
    expect(first.jobs[0]!.id).toBe(hi.id);
  });

  it('count toward group.maxSize', async () => {
    const q = rig.queue('lone-max');
    await q.addBulk([{ name: 'a', data: {}, opts: { lane: 'm' } }, { name: 'b', data: {}, opts: { lane: 'n' } }]);
    expect((await readLaneState(c, q.keys)).lone.sort()).toEqual(['m', 'n']);
    await expect(q.add('c', {}, { group: { id: 'm', maxSize: 1 } })).rejects.toThrow(/maxSize|max size/i);
    await q.add('d', {}, { group: { id: 'm', maxSize: 2 } });
    expect(await q.getGroupsJobsCount()).toBe(3);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });

  it('leave the ring, as sorted sets, when group defaults make a lane with an active job maxed', async () => {
    const q = rig.queue('lone-group');
    await q.add('first', {}, { lane: 'g' });
    await scripts.claim(ctxOf(q), { count: 1, leaseMs: LEASE }); // g has one active job, no ready job
    await q.addBulk([{ name: 'x', data: {}, opts: { lane: 'g' } }, { name: 'y', data: {}, opts: { lane: 'h' } }]);
    expect((await readLaneState(c, q.keys)).lone.sort()).toEqual(['g', 'h']);
    await applyGroupDefaults(ctxOf(q), { concurrency: '1', rate: '' });
    const s = await readLaneState(c, q.keys);
    expect(s.lone).toEqual(['h']);
    expect(s.ring).toEqual(['h']);
    expect(s.lanes.get('g')!.length).toBe(1);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    // A claim of h under group defaults serves it as an ordinary lane.
    expect(await claimLanes(q, 5)).toEqual(['h']);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });

  it('are not put on the ring while a forgotten lane still waits for its group rate window', async () => {
    const q = rig.queue('lone-rate');
    await applyGroupDefaults(ctxOf(q), { concurrency: '', rate: '1:60000' });
    await q.add('first', {}, { lane: 'r' });
    const claimed = await scripts.claim(ctxOf(q), { count: 1, leaseMs: LEASE });
    const j = claimed.jobs[0]!;
    await scripts.complete(ctxOf(q), { id: j.id, token: j.fields[j.fields.indexOf('att') + 1], returnValue: '1', fetch: 0, leaseMs: LEASE, maxEventValueBytes: 100 });
    expect(await c.zscore(q.keys.rlwait, 'r')).not.toBeNull();
    await q.addBulk([{ name: 'x', data: {}, opts: { lane: 'r' } }, { name: 'y', data: {}, opts: { lane: 's' } }]);
    const s = await readLaneState(c, q.keys);
    expect(s.ring).toEqual(['s']);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });

  it('are drained, obliterated and kept by removeOrphanedJobs like any ready job', async () => {
    const q = rig.queue('lone-drain');
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'j', data: {}, opts: { lane: `d${i}` } })));
    expect(await q.removeOrphanedJobs()).toBe(0);
    expect(await q.getWaitingCount()).toBe(30);
    await q.drain();
    expect(await q.getWaitingCount()).toBe(0);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    expect(await c.exists(q.keys.lone)).toBe(0);
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'j', data: {}, opts: { lane: `e${i}` } })));
    await q.obliterate({ force: true });
    // Request records (req:<rid>, docs/protocol.md "Applied once") expire with their window by themselves.
    expect((await c.keys(q.keys.base.replace(/[*?[\]\\]/g, '\\$&') + '*')).filter((key) => !key.startsWith(q.keys.reqBase))).toEqual([]);
  });

  it('come back to the ring with a pause and resume after a worker of an earlier version dropped them', async () => {
    const q = rig.queue('lone-skew');
    await q.addBulk([{ name: 'a', data: {}, opts: { lane: 'x' } }, { name: 'b', data: {}, opts: { lane: 'y' } }]);
    // What a worker of an earlier version does with a lane whose sorted set it finds empty.
    await c.lrem(q.keys.ring, 0, 'x');
    await q.lanes.pause('x');
    await q.lanes.resume('x');
    const s = await readLaneState(c, q.keys);
    expect(s.ring).toEqual(['y', 'x']);
    expect(s.lone).toEqual(['y']);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    expect(await claimLanes(q, 2)).toEqual(['y', 'x']);
  });

  it('are served by a worker like ordinary lanes', async () => {
    const q = rig.queue('lone-worker');
    await q.addBulk(Array.from({ length: 200 }, (_, i) => ({ name: 'j', data: { i }, opts: { lane: `w${i % 150}` } })));
    const seen: number[] = [];
    rig.worker(q, (job) => { seen.push((job.data as { i: number }).i); }, { concurrency: 20 });
    for (let t = 0; seen.length < 200 && t < 200; t++) await sleep(25);
    expect([...seen].sort((a, b) => a - b)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    await rig.closeWorkers();
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });
});

// The same random operations on two queues, one fed by addBulk across lanes (one-job lanes) and
// one by single adds (a sorted set per lane): every reading, claim and refusal must be equal.
// 15 runs by default (about 4 s); LANES_PROP_RUNS=300 for a longer hunt.
const RUNS = Number(process.env.LANES_PROP_RUNS ?? 15);
describe('one-job lanes under random operations', () => {
  const LANES = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const lane = fc.constantFrom(...LANES);
  const pick = fc.nat(1000);
  const op = fc.oneof(
    { arbitrary: fc.record({ k: fc.constant('add' as const), jobs: fc.array(fc.record({ lane, prio: fc.constantFrom(0, 0, 1, 3) }), { minLength: 1, maxLength: 6 }) }), weight: 5 },
    { arbitrary: fc.record({ k: fc.constant('claim' as const), n: fc.integer({ min: 1, max: 6 }) }), weight: 3 },
    { arbitrary: fc.record({ k: fc.constant('complete' as const), pick, fetch: fc.integer({ min: 0, max: 3 }) }), weight: 3 },
    { arbitrary: fc.record({ k: fc.constant('changePriority' as const), pick, prio: fc.constantFrom(0, 2, 5) }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('remove' as const), pick }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('moveToLane' as const), pick, lane }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('pause' as const), lane, paused: fc.boolean() }), weight: 1 },
    { arbitrary: fc.record({ k: fc.constant('weight' as const), lane, w: fc.integer({ min: 1, max: 3 }) }), weight: 1 },
  );
  type Op = typeof op extends fc.Arbitrary<infer T> ? T : never;
  const at = <T>(xs: readonly T[], i: number): T | undefined => (xs.length === 0 ? undefined : xs[i % xs.length]);
  const outcome = async (f: () => Promise<unknown>) => {
    try {
      await f();
      return 'ok';
    } catch (e) {
      return (e as Error).constructor.name;
    }
  };

  it('reads, claims and refuses the same as lanes built one add at a time', async () => {
    let loneSteps = 0;
    let steps = 0;
    await fc.assert(fc.asyncProperty(fc.array(op, { minLength: 10, maxLength: 30 }), async (ops) => {
      const qs = [rig.queue('lp-bulk'), rig.queue('lp-single')] as const;
      const held: Array<Map<string, string>> = [new Map(), new Map()];
      const ids: string[] = [];
      const claimed = (i: number, jobs: Array<{ id: string; fields: string[] }>) => {
        for (const j of jobs) held[i]!.set(j.id, j.fields[j.fields.indexOf('att') + 1]!);
        return jobs.map((j) => j.id);
      };
      try {
        for (const [n, o] of (ops as Op[]).entries()) {
          const r: unknown[] = [];
          // The job an op picks, chosen once for both queues (their ids are the same).
          const heldId = 'pick' in o ? at([...held[0]!.keys()].sort(), o.pick) : undefined;
          const anyId = 'pick' in o ? at(ids, o.pick) : undefined;
          for (const [i, q] of qs.entries()) {
            switch (o.k) {
              case 'add': {
                const jobs = o.jobs.map((j, x) => ({ name: `n${x}`, data: { x }, opts: { lane: j.lane, ...(j.prio ? { priority: j.prio } : {}) } }));
                if (i === 0) {
                  const made = await q.addBulk(jobs);
                  ids.push(...made.map((m) => m.id!));
                } else {
                  for (const j of jobs) await q.add(j.name, j.data, j.opts);
                }
                break;
              }
              case 'claim':
                r.push(claimed(i, (await scripts.claim(ctxOf(q), { count: o.n, leaseMs: LEASE })).jobs));
                break;
              case 'complete': {
                const id = heldId;
                if (id === undefined) break;
                const token = held[i]!.get(id)!;
                held[i]!.delete(id);
                const done = await scripts.complete(ctxOf(q), { id, token, returnValue: '1', fetch: o.fetch, leaseMs: LEASE, maxEventValueBytes: 100 });
                r.push(typeof done === 'number' ? done : claimed(i, done.jobs));
                break;
              }
              case 'changePriority': {
                const id = anyId;
                if (id !== undefined) r.push(await outcome(() => q.changePriority(id, o.prio)));
                break;
              }
              case 'remove': {
                const id = anyId;
                if (id !== undefined && !held[0]!.has(id)) r.push(await q.remove(id));
                break;
              }
              case 'moveToLane': {
                const id = anyId;
                if (id !== undefined) r.push(await outcome(() => q.moveToLane(id, o.lane)));
                break;
              }
              case 'pause':
                await (o.paused ? q.lanes.pause(o.lane) : q.lanes.resume(o.lane));
                break;
              case 'weight':
                await q.lanes.setWeight(o.lane, o.w);
                break;
            }
          }
          const what = `after step ${n} ${JSON.stringify(o)}`;
          if (r.length === 2) expect(r[0], what).toEqual(r[1]);
          for (const q of qs) await assertLaneInvariant(c, q.keys, { registry: 'exact' });
          const s = await readLaneState(c, qs[0].keys);
          steps++;
          if (s.lone.length > 0) loneSteps++;
          expect(await observe(qs[0]), what).toEqual(await observe(qs[1]));
        }
      } finally {
        await rig.closeAll();
      }
    }), { numRuns: RUNS });
    // Most runs must have had one-job lanes for this to say anything.
    expect(loneSteps, `steps with one-job lanes, of ${steps}`).toBeGreaterThan(steps / 5);
  }, Math.max(60_000, RUNS * 1000));
});
