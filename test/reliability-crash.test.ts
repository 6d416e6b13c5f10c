// Process crashes under load: 4 worker processes work through 20,000 jobs in 50 lanes while a
// controller SIGKILLs a random one every ~500 ms and starts a replacement. Every execution is
// recorded (job id + fencing token) before the job's work, so re-executions are counted. At the
// end every job is completed exactly once, nothing is failed, active or waiting, and the lane
// bookkeeping (ring, inring, active counts, ready counters, registry) is exact.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue } from '../src/index.js';
import { checkLaneInvariant } from './lane-invariant.js';
import { client, keysOf, qname, redisUrl, sleep } from './helpers.js';
import { JobField } from '../src/core/fields.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/reliability-worker.mjs', import.meta.url));
const REGISTER = fileURLToPath(new URL('./fixtures/register-ts.mjs', import.meta.url));

const JOBS = 20_000;
const LANES = 50;
const CHILDREN = 4;
const CONCURRENCY = 8;
const KILL_EVERY_MS = 500;
const LOCK_MS = 1000;
const STALLED_MS = 500;
const DEADLINE_MS = 90_000;

interface Child {
  proc: ChildProcess;
  stderr: string[];
  exited: Promise<void>;
}

function spawnWorker(queue: string, execKey: string): Child {
  const proc = spawn(
    process.execPath,
    ['--import', REGISTER, FIXTURE, redisUrl(), queue, execKey, String(LOCK_MS), String(STALLED_MS), String(CONCURRENCY)],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const stderr: string[] = [];
  proc.stderr!.on('data', (d: Buffer) => {
    if (stderr.length < 200) stderr.push(d.toString());
  });
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  return { proc, stderr, exited };
}

const alive = (c: Child) => c.proc.exitCode === null && c.proc.signalCode === null;

describe('reliability: worker processes killed with SIGKILL under load', () => {
  const redis = client();
  const all: Child[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of all) if (alive(c)) c.proc.kill('SIGKILL');
    await Promise.all(all.map((c) => c.exited));
    for (const c of closers.reverse()) await c().catch(() => {});
    await redis.quit();
  });

  it(`completes ${JOBS} jobs in ${LANES} lanes exactly once while workers are killed`, async () => {
    const name = qname('rel-crash');
    const k = keysOf(name);
    const execKey = `${name}:test-executions`; // outside the queue's keyspace
    closers.push(() => redis.del(execKey));
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(async () => {
      await queue.obliterate({ force: true });
      await queue.close();
    });

    const t0 = Date.now();
    const bulk = Array.from({ length: JOBS }, (_, i) => ({
      name: 'j',
      data: { i },
      opts: { lane: `lane-${i % LANES}`, removeOnComplete: false, removeOnFail: false },
    }));
    const added = await queue.addBulk(bulk);
    const ids = added.map((j) => j.id);
    expect(new Set(ids).size).toBe(JOBS);
    const tAdded = Date.now();

    let live: Child[] = [];
    for (let i = 0; i < CHILDREN; i++) live.push(spawnWorker(name, execKey));
    all.push(...live);

    let kills = 0;
    const invariantBreaks: string[] = [];
    let checks = 0;
    let lastCheck = Date.now();
    const deadline = Date.now() + DEADLINE_MS;
    for (;;) {
      await sleep(KILL_EVERY_MS - 100 + Math.floor(Math.random() * 200));
      const done = await redis.zcard(k.completed);
      if (done >= JOBS) break;
      if (Date.now() > deadline) {
        const counts = await queue.getJobCounts();
        throw new Error(
          `timed out with ${done}/${JOBS} completed after ${kills} kills; counts ${JSON.stringify(counts)}; ` +
            `stderr: ${live.flatMap((c) => c.stderr).join('').slice(0, 2000)}`,
        );
      }
      const victim = live[Math.floor(Math.random() * live.length)];
      victim.proc.kill('SIGKILL');
      kills++;
      const fresh = spawnWorker(name, execKey);
      all.push(fresh);
      live = live.filter((c) => c !== victim).concat(fresh);
      // Now and then, check the lane bookkeeping in one atomic snapshot while everything runs.
      if (Date.now() - lastCheck > 3000) {
        lastCheck = Date.now();
        checks++;
        invariantBreaks.push(...(await checkLaneInvariant(redis, k)));
      }
    }
    const tDone = Date.now();
    for (const c of live) c.proc.kill('SIGKILL');
    await Promise.all(all.map((c) => c.exited));

    // Every job completed exactly once, by an execution that was recorded.
    const executions = await redis.lrange(execKey, 0, -1);
    const perJob = new Map<string, Set<string>>();
    for (const e of executions) {
      const at = e.lastIndexOf(':');
      const id = e.slice(0, at);
      let s = perJob.get(id);
      if (!s) perJob.set(id, (s = new Set()));
      s.add(e.slice(at + 1));
    }
    const p = redis.pipeline();
    for (const id of ids) p.hmget(k.jobBase + id, JobField.state, JobField.attemptsMade, JobField.returnValue, JobField.attemptsStarted, JobField.stalledCounter);
    const hashes = (await p.exec())!.map(([err, v]) => {
      if (err) throw err;
      return v as Array<string | null>;
    });
    const problems: string[] = [];
    let stalls = 0;
    hashes.forEach(([st, made, rv, att, stc], i) => {
      const id = ids[i];
      stalls += Number(stc ?? 0);
      const token = rv === null ? null : (JSON.parse(rv) as string);
      if (st !== 'c' || made !== '1' || token === null || !perJob.get(id)?.has(token) || Number(att) < Number(token)) {
        if (problems.length < 20) problems.push(`job ${id}: st=${st} made=${made} rv=${rv} att=${att} executions=${[...(perJob.get(id) ?? [])]}`);
      }
    });
    expect(problems).toEqual([]);
    expect(perJob.size).toBe(JOBS);
    const completedIds = await redis.zrange(k.completed, 0, -1);
    expect(completedIds.length).toBe(JOBS);
    expect(new Set(completedIds)).toEqual(new Set(ids));

    // Nothing failed, active, delayed or waiting; the lane bookkeeping is exact and empty.
    expect(await queue.getJobCounts()).toEqual({
      waiting: 0, prioritized: 0, active: 0, delayed: 0, completed: JOBS, failed: 0, 'waiting-children': 0,
    });
    expect(await checkLaneInvariant(redis, k, { registry: 'exact' })).toEqual([]);
    expect(await redis.llen(k.ring)).toBe(0);
    expect(await redis.scard(k.inring)).toBe(0);
    expect(await redis.hgetall(k.lactive)).toEqual({});
    expect(await redis.zcard(k.lanes)).toBe(0);
    expect(invariantBreaks).toEqual([]);

    const reexecutions = executions.length - JOBS;
    console.log(
      `[reliability-crash] ${JOBS} jobs / ${LANES} lanes: ${kills} SIGKILLs, ${executions.length} executions, ` +
        `${reexecutions} re-executions, ${stalls} stalled-lease recoveries, ${checks} mid-run invariant checks; ` +
        `add ${tAdded - t0} ms, process ${tDone - tAdded} ms`,
    );
    expect(kills).toBeGreaterThan(3);
  }, 120_000);
});
