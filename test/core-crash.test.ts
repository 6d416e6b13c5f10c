// Crash safety: a worker process killed with SIGKILL mid-job loses its lease; another worker
// re-runs the job once the lease expires, and a late settle with the dead worker's token is
// refused and changes nothing.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { Queue, Worker, StaleJobError, type Job } from '../src/index.js';
import { errorFromCode } from '../src/core/errors.js';
import { scripts } from '../src/scripts/index.js';
import { client, keysOf, qname, redisUrl, sleep, snapshot, waitFor, activeJobs } from './helpers.js';
import { JobField } from '../src/core/fields.js';

const FIXTURE = fileURLToPath(new URL('./fixtures/crash-worker.mjs', import.meta.url));
const REGISTER = fileURLToPath(new URL('./fixtures/register-ts.mjs', import.meta.url));

interface ChildWorker {
  child: ChildProcess;
  lines: string[];
  stderr: string[];
  exited: Promise<void>;
}

/** Starts the crash fixture: a real Worker in its own node process. */
function spawnWorker(queue: string, lockDuration: number): ChildWorker {
  const child = spawn(process.execPath, ['--import', REGISTER, FIXTURE, redisUrl(), queue, String(lockDuration)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  const stderr: string[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) >= 0) {
      lines.push(buf.slice(0, nl));
      buf = buf.slice(nl + 1);
    }
  });
  child.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return { child, lines, stderr, exited };
}

async function started(w: ChildWorker): Promise<{ id: string; token: string }> {
  await waitFor(() => w.lines.some((l) => l.startsWith('STARTED ')) || w.child.exitCode !== null, 20_000, 'child worker to start a job');
  const line = w.lines.find((l) => l.startsWith('STARTED '));
  if (!line) throw new Error(`child worker exited: ${w.stderr.join('')}`);
  const [, id, token] = line.split(' ');
  return { id, token };
}

/** A promise with its resolve function, to hold a processor until the test lets it go. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

describe('core crash recovery', () => {
  const redis = client();
  const children: ChildWorker[] = [];
  const closers: Array<() => Promise<unknown>> = [];
  afterAll(async () => {
    for (const c of children) if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
    for (const c of closers.reverse()) await c();
    await redis.quit();
  });

  it('re-runs a SIGKILLed worker\'s job after its lease expires and refuses the old token', async () => {
    const name = qname('crash');
    const k = keysOf(name);
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.obliterate({ force: true }).then(() => queue.close()));
    const job = await queue.add('slow', { n: 1 });

    const dead = spawnWorker(name, 1000);
    children.push(dead);
    const held = await started(dead);
    expect(held).toEqual({ id: job.id, token: '1' });
    expect(await redis.hmget(k.jobBase + job.id, JobField.state, JobField.attemptsStarted)).toEqual(['a', '1']);

    // A second worker sweeps for stalls every 100 ms. While the child lives it renews its lease,
    // so the job is not taken from it, even well past one lockDuration.
    const hold = gate();
    const runs: Array<{ token: string; at: number; stalled: number; started: number }> = [];
    const stalledEvents: string[] = [];
    const survivor = new Worker(name, async (j: Job, token: string) => {
      runs.push({ token, at: Date.now(), stalled: j.stalledCounter, started: j.attemptsStarted });
      if (j.id === job.id) await hold.promise;
      return `done by ${token}`;
    }, { connection: redisUrl(), lockDuration: 30_000, stalledInterval: 100, maxStalledCount: 1 });
    closers.push(() => survivor.close());
    survivor.on('stalled', (id: string) => stalledEvents.push(id));
    await sleep(2500);
    expect(runs).toEqual([]);
    expect(await redis.hmget(k.jobBase + job.id, JobField.state, JobField.attemptsStarted)).toEqual(['a', '1']);

    dead.child.kill('SIGKILL');
    await dead.exited;
    const deadline = Number(await redis.zscore(k.active, job.id));
    const [sec, usec] = await redis.time();
    expect(deadline).toBeGreaterThan(Number(sec) * 1000 + Math.floor(Number(usec) / 1000) - 10);

    await waitFor(() => runs.length === 1, 10_000, 'the job to run again');
    expect(runs[0].token).toBe('2');
    expect(runs[0].stalled).toBe(1);
    expect(runs[0].started).toBe(2);
    // Not before the dead worker's lease ran out (Redis and this process share a clock; 2 ms
    // covers rounding to whole milliseconds).
    expect(runs[0].at).toBeGreaterThanOrEqual(deadline - 2);
    expect(stalledEvents).toEqual([job.id]);

    // Another ready job: a stale settle that wrongly claimed "the next job" would take it.
    const other = await queue.add('other', {});
    const ctx = { client: redis, keys: k };
    const before = await snapshot(redis, k);
    const lateComplete = await scripts.complete(ctx, {
      id: job.id, token: '1', returnValue: '"late"', fetch: 1, leaseMs: 30_000, maxEventValueBytes: 1000,
    });
    expect(lateComplete).toBe(-2);
    expect(errorFromCode(lateComplete as number, 'complete', job.id)).toBeInstanceOf(StaleJobError);
    const lateFail = await scripts.fail(ctx, {
      id: job.id, token: '1', reason: 'late', stack: '[]', retryDelayMs: -1, exhausted: false, fetch: 1, leaseMs: 30_000,
    });
    expect(lateFail).toBe(-2);
    expect(await scripts.extendLeases(ctx, { leaseMs: 30_000, jobs: [{ id: job.id, token: '1' }] })).toEqual([job.id]);
    expect(await snapshot(redis, k)).toEqual(before);

    // The live holder settles normally; the job completes exactly once.
    hold.open();
    await waitFor(async () => (await queue.getJobCounts('completed')).completed === 2, 10_000, 'both jobs completed');
    const done = (await queue.getJob(job.id))!;
    expect(await done.getState()).toBe('completed');
    expect(done.returnvalue).toBe('done by 2');
    expect(done.attemptsMade).toBe(1);
    expect(runs.map((r) => r.token)).toEqual(['2', '1']); // the second run is the other job's first
    expect(runs.length).toBe(2);
    expect((await queue.getJob(other.id))!.returnvalue).toBe('done by 1');
    // A completion with the now-finished job's current token is refused as well: at most once.
    const again = await scripts.complete(ctx, {
      id: job.id, token: '2', returnValue: '"again"', fetch: 0, leaseMs: 30_000, maxEventValueBytes: 1000,
    });
    expect(again).toBe(-2);
  });

  it('fails a job with BullMQ\'s reason once it stalls more than maxStalledCount times', async () => {
    const name = qname('crash-fail');
    const k = keysOf(name);
    const queue = new Queue(name, { connection: redisUrl() });
    closers.push(() => queue.obliterate({ force: true }).then(() => queue.close()));
    const job = await queue.add('doomed', {}, { attempts: 5 });

    const dead = spawnWorker(name, 300);
    children.push(dead);
    await started(dead);
    dead.child.kill('SIGKILL');
    await dead.exited;

    const ran: string[] = [];
    const failed: string[] = [];
    const survivor = new Worker(name, async (j: Job) => {
      ran.push(j.id);
    }, { connection: redisUrl(), stalledInterval: 50, maxStalledCount: 0 });
    closers.push(() => survivor.close());
    survivor.on('stalled', (id: string) => failed.push(id));
    await waitFor(async () => (await queue.getJobCounts('failed')).failed === 1, 10_000, 'the job to fail');
    const j = (await queue.getJob(job.id))!;
    expect(await j.getState()).toBe('failed');
    expect(j.failedReason).toBe('job stalled more than allowable limit');
    expect(j.stalledCounter).toBe(1);
    expect(j.attemptsMade).toBe(1);
    expect(ran).toEqual([]);
    expect(failed).toEqual([job.id]);
    expect(await activeJobs(redis, k)).toBe(0);
    expect(await redis.hlen(k.lactive)).toBe(0);
  });
});
