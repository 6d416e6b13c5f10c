/**
 * Acceptance tests of the lane controls: pause/resume, settings given to a lane before it has
 * jobs, per-lane rate limits, moveToLane, lanes.get/list/drain, and that queue.drain and
 * obliterate leave no ring or lane keys behind. Step-by-step cases claim by hand through the
 * claim script so the order of service is exact; flow cases use real workers.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { InvalidStateError, JobNotFoundError } from '../src/core/errors.js';
import { scripts } from '../src/scripts/index.js';
import { client, sleep, waitFor } from './helpers.js';
import { assertLaneInvariant } from './lane-invariant.js';
import { claimLanes, claimOneByOne, ctxOf, jobsFor, LaneRig, LaneTracker } from './fixtures/lanes-util.js';

const rig = new LaneRig();
const c = client();
afterEach(() => rig.closeAll());
afterAll(async () => {
  await c.quit();
});

/** Every key of a queue, by SCAN, but request records (req:<rid>: they expire with their window, docs/protocol.md "Applied once"). */
async function keysLeft(base: string): Promise<string[]> {
  const pattern = base.replace(/[*?[\]\\]/g, '\\$&') + '*';
  const out: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    out.push(...batch.filter((k) => !k.startsWith(`${base}req:`)));
  } while (cursor !== '0');
  return out.sort();
}

describe('pause and resume a lane', () => {
  it('a paused lane keeps its jobs and is skipped; resume serves it again', async () => {
    const q = rig.queue('pause');
    await q.addBulk(jobsFor('p', 5));
    await q.addBulk(jobsFor('q', 5));
    await q.lanes.pause('p');
    const done: string[] = [];
    rig.worker(q, (job) => {
      done.push(job.lane);
    }, { concurrency: 2 });
    await waitFor(() => done.length === 5, 10_000, 'lane q');
    await sleep(100); // time enough to (wrongly) serve p
    expect(done).toEqual(['q', 'q', 'q', 'q', 'q']);
    expect(await q.lanes.get('p')).toMatchObject({ depth: 5, active: 0, paused: true, inRing: false });
    await assertLaneInvariant(c, q.keys);

    await q.lanes.resume('p'); // the idle worker is woken, not left to its block timeout
    await waitFor(() => done.length === 10, 2_000, 'lane p after resume');
    expect(done.slice(5)).toEqual(['p', 'p', 'p', 'p', 'p']);
    expect(await q.lanes.get('p')).toMatchObject({ depth: 0, paused: false, inRing: false });
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });

  it('pausing a lane in the middle of its turn stops it at once', async () => {
    const q = rig.queue('pturn');
    await q.lanes.setWeight('w', 3);
    await q.addBulk(jobsFor('w', 6));
    await q.addBulk(jobsFor('o', 3));
    expect(await claimLanes(q, 1)).toEqual(['w']); // w's turn has 2 claims left
    await q.lanes.pause('w');
    expect(await claimOneByOne(q, 4)).toEqual(['o', 'o', 'o']);
    await q.lanes.resume('w');
    expect(await claimLanes(q, 10)).toEqual(['w', 'w', 'w', 'w', 'w']);
    await assertLaneInvariant(c, q.keys);
  });
});

describe('settings given to a lane without jobs', () => {
  it('weight and pause are kept and apply when the jobs arrive', async () => {
    const q = rig.queue('preset');
    await q.lanes.setWeight('fw', 3);
    await q.lanes.pause('fw');
    expect(await q.lanes.get('fw')).toMatchObject({ depth: 0, weight: 3, paused: true, inRing: false });
    expect((await q.lanes.list()).lanes.map((l) => l.name)).toEqual(['fw']);

    await q.addBulk(jobsFor('fw', 6));
    await q.addBulk(jobsFor('other', 4));
    expect(await q.lanes.get('fw')).toMatchObject({ depth: 6, paused: true, inRing: false });
    expect(await claimLanes(q, 2)).toEqual(['other', 'other']);
    await q.lanes.resume('fw');
    // fw entered the ring behind `other`; with weight 3 it then takes three turns per round.
    expect((await claimOneByOne(q, 8)).join(' ')).toBe('other fw fw fw other fw fw fw');
    await assertLaneInvariant(c, q.keys);
  });

  it('a limit is kept and holds the lane when its jobs arrive', async () => {
    const q = rig.queue('prelimit');
    await q.lanes.setLimit('fl', 1);
    await q.lanes.setRateLimit('fr', { max: 2, duration: 60_000 });
    expect(await q.lanes.get('fl')).toMatchObject({ depth: 0, limit: 1 });
    expect(await q.lanes.get('fr')).toMatchObject({ depth: 0, rate: { max: 2, duration: 60_000 } });
    await q.addBulk(jobsFor('fl', 8));
    await q.addBulk(jobsFor('fr', 4));
    const t = new LaneTracker();
    rig.worker(q, async (job) => {
      t.enter(job);
      await sleep(5);
      t.leave(job);
    }, { concurrency: 5 });
    await waitFor(() => t.finished.filter((f) => f.lane === 'fl').length === 8, 10_000, 'lane fl');
    expect(t.max.get('fl')).toBe(1);
    expect(t.startsOf('fr')).toBe(2);
    expect(await q.lanes.get('fr')).toMatchObject({ depth: 2, inRing: false });
    await assertLaneInvariant(c, q.keys);
  });

  it('limit 0 holds a lane; raising it lets the lane go', async () => {
    const q = rig.queue('limit0');
    await q.lanes.setLimit('h', 0);
    await q.addBulk(jobsFor('h', 3));
    await q.addBulk(jobsFor('x', 1));
    expect(await claimLanes(q, 10)).toEqual(['x']);
    await q.lanes.setLimit('h', 2);
    expect(await claimLanes(q, 10)).toEqual(['h', 'h']);
    await q.lanes.removeLimit('h');
    expect(await claimLanes(q, 10)).toEqual(['h']);
    await assertLaneInvariant(c, q.keys);
  });
});

describe('per-lane rate limit', () => {
  it('a lane over its rate leaves the ring until its window reopens; others keep flowing', async () => {
    const q = rig.queue('rate');
    const ctx = ctxOf(q);
    await q.lanes.setRateLimit('r', { max: 2, duration: 400 });
    await q.addBulk(jobsFor('r', 5));
    await q.addBulk(jobsFor('s', 5));
    const first = await claimLanes(q, 10);
    expect(first.filter((l) => l === 'r')).toHaveLength(2);
    expect(first.filter((l) => l === 's')).toHaveLength(5);
    expect(await q.lanes.get('r')).toMatchObject({ depth: 3, inRing: false });
    expect(await c.zscore(q.keys.rlwait, 'r')).not.toBeNull();
    await assertLaneInvariant(c, q.keys);

    // Nothing is claimable: the reply says when the window reopens.
    const idle = await scripts.claim(ctx, { count: 10, leaseMs: 60_000 });
    expect(idle.jobs).toHaveLength(0);
    expect(idle.wakeInMs).toBeGreaterThan(0);
    expect(idle.wakeInMs).toBeLessThanOrEqual(400);
    await sleep(idle.wakeInMs + 20);
    expect(await claimLanes(q, 10)).toEqual(['r', 'r']);
    await assertLaneInvariant(c, q.keys);
  });

  it('workers start at most max jobs of the lane per window while another lane flows', async () => {
    const q = rig.queue('ratew');
    const MAX = 3;
    const DURATION = 300;
    await q.lanes.setRateLimit('r', { max: MAX, duration: DURATION });
    await q.addBulk(jobsFor('r', 9));
    await q.addBulk(jobsFor('s', 200));
    const t = new LaneTracker();
    rig.worker(q, async (job) => {
      t.enter(job);
      await sleep(5);
      t.leave(job);
    }, { concurrency: 4 });
    await waitFor(() => t.finished.length === 209, 20_000, 'all jobs');
    // Start times are the claim times (processedOn, Redis clock), so client scheduling adds no
    // noise. A window opens at the lane's first claim after the previous one expired and stays
    // open `duration` ms, so fixed windows are counted: starts within (duration - 2 ms) of a
    // window's first start belong to it (2 ms: the claim's clock and the key expiry clock are
    // both in whole ms and read a moment apart). A sliding count over any `duration` span could
    // see more than max (the end of one window and the start of the next), which the
    // fixed-window design allows.
    const r = t.started.filter((s) => s.lane === 'r').map((s) => s.at).sort((a, b) => a - b);
    expect(r).toHaveLength(9);
    let i = 0;
    let windows = 0;
    while (i < r.length) {
      const start = r[i];
      let n = 0;
      while (i < r.length && r[i] < start + DURATION - 2) {
        n++;
        i++;
      }
      windows++;
      expect(n, `window ${windows} from ${start}`).toBeLessThanOrEqual(MAX);
    }
    expect(windows).toBeGreaterThanOrEqual(3);
    expect(r[r.length - 1] - r[0]).toBeGreaterThanOrEqual(2 * (DURATION - 2));
    // While r waited for its second window, s kept starting.
    const gapStarts = t.started.filter((s) => s.lane === 's' && s.at > r[MAX - 1] && s.at < r[MAX]).length;
    expect(gapStarts).toBeGreaterThan(0);
    await assertLaneInvariant(c, q.keys);
  });
});

describe('per-lane rate limit wakes', () => {
  it('a worker that went idle before the lane was shut still serves it when its window reopens', async () => {
    // Both workers block on the wake list while the queue is empty (for up to drainDelay, 5 s).
    // One is woken by the add, claims r's only job of the window and stays busy for 2 s; the
    // other must not sleep on until its block timeout: it has to learn the window's end.
    const q = rig.queue('ratewake');
    await q.lanes.setRateLimit('r', { max: 1, duration: 200 });
    const t = new LaneTracker();
    const processor = async (job: Parameters<LaneTracker['enter']>[0]) => {
      t.enter(job);
      await sleep(2000);
      t.leave(job);
    };
    rig.worker(q, processor);
    rig.worker(q, processor);
    await sleep(300);
    await q.addBulk(jobsFor('r', 2));
    await waitFor(() => t.started.length === 2, 4_000, 'both jobs of r started');
    const [a, b] = t.started.map((s) => s.at);
    expect(b - a).toBeGreaterThanOrEqual(198);
    // Without the wake the second start waits for the first job (2 s) or the block timeout.
    expect(b - a).toBeLessThan(1000);
  });
});

describe('moveToLane', () => {
  it('moves a waiting job to its arrival place in the new lane', async () => {
    const q = rig.queue('move');
    const a1 = await q.add('a1', {}, { lane: 'A' });
    const a2 = await q.add('a2', {}, { lane: 'A' });
    await q.add('b1', {}, { lane: 'B' });
    await q.add('b2', {}, { lane: 'B' });
    await q.moveToLane(a2.id, 'B');
    await a1.moveToLane('solo');
    expect(a1.lane).toBe('solo');
    expect((await q.getJob(a2.id))!.lane).toBe('B');
    expect(await q.lanes.get('A')).toMatchObject({ depth: 0, inRing: false });
    expect(await q.lanes.get('B')).toMatchObject({ depth: 3, inRing: true });
    // A had no jobs left and no settings: it is forgotten.
    expect((await q.lanes.list()).lanes.map((l) => l.name)).toEqual(['B', 'solo']);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    const r = await scripts.claim(ctxOf(q), { count: 10, leaseMs: 60_000 });
    const names = r.jobs.map((j) => j.fields[j.fields.indexOf('name') + 1]);
    // a2 arrived before b1 and b2, so it leads lane B.
    expect(names.filter((n) => n !== 'a1')).toEqual(['a2', 'b1', 'b2']);
  });

  it('moves a delayed job; refuses an active job and an unknown id', async () => {
    const q = rig.queue('moved');
    const d = await q.add('d', {}, { lane: 'A', delay: 600_000 });
    await q.moveToLane(d.id, 'C');
    await d.promote();
    expect(await q.lanes.get('C')).toMatchObject({ depth: 1, inRing: true });
    expect(await claimLanes(q, 1)).toEqual(['C']);
    await expect(q.moveToLane(d.id, 'A')).rejects.toBeInstanceOf(InvalidStateError);
    await expect(q.moveToLane('nope', 'A')).rejects.toBeInstanceOf(JobNotFoundError);
    await assertLaneInvariant(c, q.keys);
  });

  it('moving into a paused lane keeps the job out of service', async () => {
    const q = rig.queue('movep');
    await q.lanes.pause('P');
    const j = await q.add('j', {}, { lane: 'A' });
    await q.moveToLane(j.id, 'P');
    expect(await claimLanes(q, 5)).toEqual([]);
    expect(await q.lanes.get('P')).toMatchObject({ depth: 1, paused: true, inRing: false });
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });
});

describe('lanes.get / list / drain', () => {
  it('lists lanes in name order, page by page with a cursor', async () => {
    const q = rig.queue('list');
    const names = Array.from({ length: 23 }, (_, i) => `l${String(i).padStart(2, '0')}`).concat(['x:weight', 'ünï😀']);
    for (const [i, name] of names.entries()) await q.addBulk(jobsFor(name, (i % 3) + 1));
    await q.lanes.setWeight('l05', 4);
    await q.lanes.setLimit('l06', 1);
    await q.lanes.pause('l07');
    await q.lanes.setRateLimit('l08', { max: 5, duration: 1000 });
    const seen: string[] = [];
    let cursor: string | undefined;
    const sizes: number[] = [];
    for (;;) {
      const page = await q.lanes.list({ cursor, count: 10 });
      sizes.push(page.lanes.length);
      seen.push(...page.lanes.map((l) => l.name));
      if (page.cursor === null) break;
      cursor = page.cursor;
    }
    expect(sizes).toEqual([10, 10, 5]);
    expect(seen).toEqual([...names].sort((a, b) => (Buffer.from(a) < Buffer.from(b) ? -1 : 1)));
    expect(await q.lanes.get('l05')).toMatchObject({ name: 'l05', depth: 3, weight: 4, limit: null, paused: false, inRing: true });
    expect(await q.lanes.get('l06')).toMatchObject({ depth: 1, limit: 1, inRing: true });
    expect(await q.lanes.get('l07')).toMatchObject({ depth: 2, paused: true, inRing: false });
    expect(await q.lanes.get('l08')).toMatchObject({ depth: 3, rate: { max: 5, duration: 1000 } });
    expect(await q.lanes.get('x:weight')).toMatchObject({ depth: 3, weight: 1, inRing: true });
    expect(await q.lanes.get('never')).toMatchObject({ depth: 0, active: 0, weight: 1, limit: null, paused: false, inRing: false });
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });

  it('lanes.drain removes one lane’s waiting jobs and keeps its settings', async () => {
    const q = rig.queue('ldrain');
    await q.lanes.setWeight('d', 2);
    const jobs = await q.addBulk(jobsFor('d', 2500));
    await q.addBulk(jobsFor('e', 5));
    expect(await claimLanes(q, 1)).toHaveLength(1);
    expect(await q.lanes.drain('d')).toBe(jobs.length - (await q.lanes.get('d')).active);
    expect(await q.lanes.get('d')).toMatchObject({ depth: 0, weight: 2, inRing: false });
    expect(await q.lanes.get('e')).toMatchObject({ depth: 5, inRing: true });
    expect(await q.getJob(jobs[jobs.length - 1].id)).toBeUndefined();
    expect(await q.lanes.drain('empty')).toBe(0);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });
});

describe('queue.drain and obliterate', () => {
  it('drain removes every ready job of every lane and leaves no ring or lane keys', async () => {
    const q = rig.queue('qdrain');
    await q.addBulk(jobsFor('a', 1500));
    await q.addBulk(jobsFor('b', 3));
    await q.addBulk(jobsFor('held', 4));
    await q.addBulk(jobsFor('later', 2, { delay: 600_000 }));
    await q.lanes.pause('b');
    await q.lanes.setLimit('held', 0);
    await q.lanes.setRateLimit('a', { max: 1, duration: 60_000 });
    expect(await claimLanes(q, 1)).toEqual(['a']); // a is now waiting for its rate window
    expect(await q.drain()).toBe(1499 + 3 + 4);
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
    let left = await keysLeft(q.keys.base);
    expect(left).not.toContain(q.keys.ring);
    expect(left).not.toContain(q.keys.inring);
    expect(left.filter((k) => k.startsWith(q.keys.laneBase))).toEqual([]);
    expect(await q.getJobCounts('waiting', 'prioritized', 'delayed', 'active')).toEqual({ waiting: 0, prioritized: 0, delayed: 2, active: 1 });
    expect(await q.drain(true)).toBe(2);
    left = await keysLeft(q.keys.base);
    expect(left.filter((k) => k.startsWith(q.keys.laneBase))).toEqual([]);
    expect(await q.getJobCounts('delayed')).toEqual({ delayed: 0 });
    // Settings survive a drain.
    expect(await q.lanes.get('b')).toMatchObject({ paused: true });
    expect(await q.lanes.get('held')).toMatchObject({ limit: 0 });
  });

  it('drain goes on to the next lane when the budget runs out exactly at the end of one', async () => {
    // queue.drain works in batches of 1,000: a paused lane of exactly 1,000 jobs uses up the
    // first batch, and the lane after it must still be drained.
    const q = rig.queue('qdrain2');
    await q.lanes.pause('a');
    await q.lanes.pause('b');
    await q.addBulk(jobsFor('a', 1000));
    await q.addBulk(jobsFor('b', 2));
    expect(await q.drain()).toBe(1002);
    expect(await q.getJobCounts('paused', 'waiting')).toEqual({ paused: 0, waiting: 0 });
    await assertLaneInvariant(c, q.keys, { registry: 'exact' });
  });

  it('obliterate leaves no key at all, lane counters included', async () => {
    const q = rig.queue('oblit');
    await q.addBulk(jobsFor('a', 5));
    await q.addBulk(jobsFor('b:c', 5));
    await q.lanes.setWeight('a', 2);
    await q.lanes.setLimit('b:c', 1);
    await q.lanes.pause('idle');
    await q.lanes.setRateLimit('r', { max: 1, duration: 60_000 });
    await q.add('r', {}, { lane: 'r' });
    await q.add('later', {}, { lane: 'a', delay: 600_000 });
    const claimed = await scripts.claim(ctxOf(q), { count: 20, leaseMs: 60_000 });
    expect(claimed.jobs.length).toBeGreaterThan(0);
    // The rate counter of r outlives its setting: removing the limit must not leak it.
    await q.lanes.setRateLimit('r', null);
    const rJob = claimed.jobs.find((j) => j.fields[j.fields.indexOf('lane') + 1] === 'r')!;
    await scripts.complete(ctxOf(q), {
      id: rJob.id, token: rJob.fields[rJob.fields.indexOf('att') + 1], returnValue: '1', fetch: 0, leaseMs: 1, maxEventValueBytes: 10,
    });
    await q.obliterate({ force: true, count: 3 });
    expect(await keysLeft(q.keys.base)).toEqual([]);
  });
});
