/**
 * A bulk add over many lanes: add.lua then takes each job's lane as an argument of its own
 * (scripts.add) instead of an option record per lane. Each job must land in its own lane, with
 * the options of its record, in ring order, and the deduplication paths that build a job from
 * the record (keepLastIfActive's follower) must use the job's lane, not another job's.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { scripts } from '../src/scripts/index.js';
import { client } from './helpers.js';
import { assertLaneInvariant } from './lane-invariant.js';
import { claimLanes, ctxOf, LaneRig } from './fixtures/lanes-util.js';
import { JobField } from '../src/core/fields.js';
import { applyGroupDefaults } from '../src/pro/groups.js';

const rig = new LaneRig();
const c = client();
afterEach(() => rig.closeAll());
afterAll(async () => {
  await c.quit();
});

describe('addBulk over many lanes', () => {
  it('puts every job in its own lane with its options, and the ring takes the lanes in bulk order', async () => {
    const q = rig.queue('bulk-lanes');
    const lanes = ['u3', 'u1', 'u2', 'u3', 'u0', 'u1'];
    const jobs = await q.addBulk(lanes.map((lane, i) => ({
      name: `n${i}`, data: { i },
      opts: { lane, ...(i === 3 ? { priority: 2 } : {}), ...(i === 5 ? { delay: 60_000 } : {}) },
    })));
    for (const [i, j] of jobs.entries()) {
      const h = await c.hgetall(`${q.keys.jobBase}${j.id}`);
      expect({ i, lane: h.lane, prio: h.prio ?? '0', st: h.st }).toEqual({
        i, lane: lanes[i], prio: i === 3 ? '2' : '0', st: i === 5 ? 'd' : 'w',
      });
    }
    expect(await c.lrange(q.keys.ring, 0, -1)).toEqual(['u3', 'u1', 'u2', 'u0']);
    await assertLaneInvariant(c, q.keys);
    // One job per lane turn, in ring order; u3's prioritized job waits behind its first job.
    expect(await claimLanes(q, 5)).toEqual(['u3', 'u1', 'u2', 'u0', 'u3']);
    await assertLaneInvariant(c, q.keys);
  });

  it('gives a keepLastIfActive follower made in a many-lane bulk the lane of its own job', async () => {
    const q = rig.queue('bulk-follow');
    const dedup = { deduplication: { id: 'k', keepLastIfActive: true } };
    const holder = await q.add('h', { v: 0 }, { lane: 'k1', ...dedup });
    const claimed = await scripts.claim(ctxOf(q), { count: 1, leaseMs: 60_000 });
    expect(claimed.jobs.map((j) => j.id)).toEqual([holder.id]);
    await q.addBulk([
      { name: 'x', data: { v: 1 }, opts: { lane: 'k3' } },
      { name: 'f', data: { v: 2 }, opts: { lane: 'k2', ...dedup } },
      { name: 'y', data: { v: 3 }, opts: { lane: 'k4' } },
    ]);
    const follower = await c.hget(`${q.keys.jobBase}${holder.id}`, JobField.dedupFollower);
    expect(follower).toBeTruthy();
    expect(await c.hmget(`${q.keys.jobBase}${follower}`, JobField.lane, JobField.state, JobField.dedupFollows)).toEqual(['k2', 'h', holder.id]);
    expect(await c.lrange(q.keys.ring, 0, -1)).toEqual(['k3', 'k4']);
    await assertLaneInvariant(c, q.keys);
  });

  it('keeps a lane at its group-default concurrency out of the ring when a many-lane bulk gives it jobs', async () => {
    const q = rig.queue('bulk-gconc');
    await applyGroupDefaults(ctxOf(q), { concurrency: '1', rate: '' });
    await q.add('first', {}, { lane: 'g' });
    expect(await claimLanes(q, 1)).toEqual(['g']); // g is at its limit of 1
    await q.addBulk([{ name: 'a', data: {}, opts: { lane: 'g' } }, { name: 'b', data: {}, opts: { lane: 'h' } }]);
    expect(await c.lrange(q.keys.ring, 0, -1)).toEqual(['h']);
    await assertLaneInvariant(c, q.keys);
  });
});
