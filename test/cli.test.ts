// The echomq CLI in-process through runCli: output for people and --json, exit codes, and one
// clear line on stderr for operator mistakes. Every test here uses its own key prefix, so
// `status` without a queue sees only this file's queues.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from '../src/index.js';
import { runCli } from '../src/cli/program.js';
import { createServer } from 'node:net';
import { client, qname, redisUrl, waitFor } from './helpers.js';

const prefix = `cli-${randomUUID().slice(0, 8)}`;

/** A loopback port nothing listens on (the kernel picks it, we close it). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer().on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => resolve(port));
    });
  });
}

async function cli(args: string[], opts: { progress?: boolean; redis?: string } = {}) {
  let out = '';
  let err = '';
  const code = await runCli(['--redis', opts.redis ?? redisUrl(), '--prefix', prefix, ...args], {
    out: (s) => (out += s),
    err: (s) => (err += s),
    env: {},
    progress: opts.progress,
  });
  return { code, out, err };
}

const json = async (args: string[]) => {
  const r = await cli([...args, '--json']);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out);
};

describe('echomq CLI', () => {
  const redis = client();
  const queues: Queue[] = [];
  const open = (name: string) => {
    const q = new Queue(name, { connection: redisUrl(), prefix });
    queues.push(q);
    return q;
  };
  /** Runs the queue's jobs to the end: data.fail makes a job fail with a stack and a log line. */
  async function settle(q: Queue, n: number) {
    const w = new Worker(
      q.name,
      async (job) => {
        await job.log(`working on ${job.id}`);
        if (job.data?.fail) throw new Error(`boom ${job.id}`);
        return 'ok';
      },
      { connection: redisUrl(), prefix, concurrency: 8 },
    );
    await waitFor(async () => {
      const c = await q.getJobCounts('completed', 'failed');
      return (c.completed ?? 0) + (c.failed ?? 0) >= n;
    });
    await w.close();
  }

  let main: Queue;
  beforeAll(async () => {
    main = open(qname('orders'));
    await main.addBulk([
      ...Array.from({ length: 3 }, (_, i) => ({ name: 'ship', data: { i }, opts: { lane: 'acme' } })),
      { name: 'ship', data: { fail: true }, opts: { lane: 'acme' } },
      { name: 'bill', data: { fail: true }, opts: { lane: 'globex' } },
    ]);
    await settle(main, 5);
    await main.addBulk([
      { name: 'later', data: {}, opts: { lane: 'acme' } },
      { name: 'urgent', data: {}, opts: { lane: 'globex', priority: 3 } },
      { name: 'soon', data: {}, opts: { lane: 'acme', delay: 60_000 } },
    ]);
    await main.lanes.setWeight('acme', 3);
    await main.lanes.setLimit('globex', 2);
    await main.lanes.setRateLimit('globex', { max: 10, duration: 1000 });
  });
  afterAll(async () => {
    for (const q of queues) await q.close();
    redis.disconnect();
  });

  it('status without a queue lists the queues under the prefix', async () => {
    const other = open(qname('emails'));
    await other.add('x', {});
    const text = await cli(['status']);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/^QUEUE\s+STATE\s+WAITING/);
    expect(text.out).toContain(main.name);
    expect(text.out).toContain(other.name);
    const data = await json(['status']);
    expect(data.queues.map((q: { name: string }) => q.name)).toEqual([main.name, other.name].sort());
    const row = data.queues.find((q: { name: string }) => q.name === main.name);
    expect(row.counts).toMatchObject({ waiting: 1, prioritized: 1, delayed: 1, completed: 3, failed: 2 });
  });

  it('status of a queue shows counts and a lane table', async () => {
    const r = await cli(['status', main.name]);
    expect(r.code).toBe(0);
    expect(r.out).toContain(`queue ${main.name}  running`);
    expect(r.out).toMatch(/WAITING\s+PRIORITIZED\s+ACTIVE\s+DELAYED\s+COMPLETED\s+FAILED\n\s+1\s+1\s+0\s+1\s+3\s+2/);
    expect(r.out).toMatch(/LANE\s+DEPTH\s+ACTIVE\s+WEIGHT\s+LIMIT\s+PAUSED\s+RATE/);
    expect(r.out).toMatch(/acme\s+1\s+0\s+3\s+-\s+no\s+-/);
    expect(r.out).toMatch(/globex\s+1\s+0\s+1\s+2\s+no\s+10\/1\.0s/);
    const s = await json(['status', main.name]);
    expect(s).toMatchObject({ name: main.name, paused: false, globalConcurrency: null, lanesTruncated: false });
    expect(s.counts.failed).toBe(2);
  });

  it('lanes shows depth, active, weight, limit, paused and rate', async () => {
    const { lanes } = await json(['lanes', main.name]);
    expect(lanes).toEqual([
      expect.objectContaining({ name: 'acme', depth: 1, active: 0, weight: 3, limit: null, paused: false, rate: null }),
      expect.objectContaining({ name: 'globex', depth: 1, weight: 1, limit: 2, rate: { max: 10, duration: 1000 } }),
    ]);
    const sorted = await cli(['lanes', main.name, '--sort', 'weight']);
    expect(sorted.out.split('\n')[1]).toMatch(/^acme/);
  });

  it('jobs filters by state and lane, and job shows data, logs, error and stack', async () => {
    const failed = await json(['jobs', main.name, '--state', 'failed']);
    expect(failed.jobs.map((j: { name: string }) => j.name).sort()).toEqual(['bill', 'ship']);
    const acme = await json(['jobs', main.name, '--state', 'failed', '--lane', 'acme', '--limit', '50']);
    expect(acme.jobs).toHaveLength(1);
    expect(acme.jobs[0]).toMatchObject({ lane: 'acme', state: 'failed', failedReason: expect.stringMatching(/^boom/) });
    const waiting = await json(['jobs', main.name, '--state', 'waiting', '--lane', 'acme']);
    expect(waiting.jobs.map((j: { name: string }) => j.name)).toEqual(['later']);
    const all = await json(['jobs', main.name, '--limit', '3']);
    expect(all.jobs).toHaveLength(3);
    expect(all.more).toBe(true);
    const table = await cli(['jobs', main.name, '--state', 'completed']);
    expect(table.out).toMatch(/^ID\s+NAME\s+LANE\s+STATE\s+PRIO\s+ATTEMPTS\s+AGE\s+REASON/);

    const id = acme.jobs[0].id;
    const detail = await cli(['job', main.name, id]);
    expect(detail.code).toBe(0);
    expect(detail.out).toMatch(/state\s+failed/);
    expect(detail.out).toContain(`error        boom ${id}`);
    expect(detail.out).toMatch(/stacktrace\n\s+Error: boom/);
    expect(detail.out).toContain(`logs (1)\n  working on ${id}`);
    expect(detail.out).toContain('"fail": true');
    const d = await json(['job', main.name, id]);
    expect(d).toMatchObject({ id, state: 'failed', logs: [`working on ${id}`], data: { fail: true } });
  });

  it('retry puts one failed job back, and --all-failed works in batches with a progress bar', async () => {
    const q = open(qname('retry'));
    await q.addBulk(Array.from({ length: 23 }, (_, i) => ({ name: 'j', data: { fail: true, i } })));
    await settle(q, 23);
    const [first] = await q.getJobs('failed', 0, 0);
    const one = await cli(['retry', q.name, first.id]);
    expect(one).toMatchObject({ code: 0, out: `retried job ${first.id} (was failed)\n` });
    expect(await first.getState()).toBe('waiting');
    const again = await cli(['retry', q.name, first.id]);
    expect(again.code).toBe(1);
    expect(again.err).toBe(`echomq: job "${first.id}" is waiting; only failed or completed jobs can be retried\n`);

    const all = await cli(['retry', q.name, '--all-failed', '--batch', '5'], { progress: true });
    expect(all.code).toBe(0);
    expect(all.out).toBe('retried 22 failed jobs\n');
    expect(all.err).toContain('\r[');
    expect(all.err).toContain('] 22/22');
    expect(all.err.match(/\r\[/g)!.length).toBeGreaterThanOrEqual(6); // start + one per batch of 5
    expect(await q.getJobCounts('failed', 'waiting')).toEqual({ failed: 0, waiting: 23 });
  });

  it('pause and resume a queue or a lane; set weight and limit', async () => {
    const q = open(qname('ctl'));
    await q.add('x', {}, { lane: 'a' });
    expect((await cli(['pause', q.name])).out).toBe(`paused queue ${q.name}\n`);
    expect(await q.isPaused()).toBe(true);
    await cli(['resume', q.name]);
    expect(await q.isPaused()).toBe(false);
    expect((await cli(['pause', q.name, '--lane', 'a'])).out).toBe(`paused lane a of queue ${q.name}\n`);
    expect((await q.lanes.get('a')).paused).toBe(true);
    await cli(['resume', q.name, '--lane', 'a']);
    expect((await q.lanes.get('a')).paused).toBe(false);
    expect((await cli(['weight', q.name, 'a', '5'])).code).toBe(0);
    expect((await cli(['limit', q.name, 'a', '2'])).code).toBe(0);
    expect(await q.lanes.get('a')).toMatchObject({ weight: 5, limit: 2 });
    expect((await cli(['limit', q.name, 'a', 'none'])).out).toBe('lane a: limit none\n');
    expect((await q.lanes.get('a')).limit).toBeNull();
  });

  it('remove, drain and clean', async () => {
    const q = open(qname('maint'));
    const [a] = await q.addBulk([
      { name: 'a', data: {} },
      { name: 'b', data: {} },
      { name: 'c', data: {}, opts: { delay: 60_000 } },
    ]);
    expect((await cli(['remove', q.name, a.id])).out).toBe(`removed job ${a.id}\n`);
    expect(await q.getJob(a.id)).toBeUndefined();
    expect((await cli(['drain', q.name])).out).toBe('removed 1 jobs\n');
    expect(await q.getJobCounts('waiting', 'delayed')).toEqual({ waiting: 0, delayed: 1 });
    expect(await json(['drain', q.name, '--delayed'])).toEqual({ removed: 1 });

    await q.addBulk(Array.from({ length: 4 }, () => ({ name: 'd', data: {} })));
    await settle(q, 4);
    const cleaned = await json(['clean', q.name, '--grace', '0', '--state', 'completed', '--limit', '3']);
    expect(cleaned.removed).toBe(3);
    expect((await q.getJobCounts('completed')).completed).toBe(1);
  });

  it('operator mistakes exit 1 with one line on stderr and no stack trace', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['status', 'no-such-queue'], /^echomq: queue "no-such-queue" not found under prefix "cli-[0-9a-f]+" \(see: echomq status\)\n$/],
      [['job', main.name, '999999'], /^echomq: job "999999" not found in queue/],
      [['remove', main.name, '999999'], /^echomq: remove: job "999999" does not exist\n$/],
      [['weight', main.name, 'acme', '0'], /^echomq: weight must be an integer 1…1000000, got 0\n$/],
      [['limit', main.name, 'acme', 'many'], /^echomq: limit must be a non-negative integer, got "many"\n$/],
      [['jobs', main.name, '--state', 'failed', '--limit', '-1'], /^echomq: limit must be an integer 1…10000, got -1\n$/],
      [['retry', main.name], /^echomq: give a job id, or --all-failed/],
      [['clean', main.name, '--grace', 'x'], /^echomq: grace must be a non-negative integer, got "x"\n$/],
    ];
    for (const [args, re] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.err, args.join(' ')).toMatch(re);
      expect(r.err.trim().split('\n'), args.join(' ')).toHaveLength(1);
      expect(r.out).toBe('');
    }
    const unknown = await cli(['frobnicate']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toMatch(/unknown command 'frobnicate'/);
    const badState = await cli(['jobs', main.name, '--state', 'nope']);
    expect(badState.code).toBe(1);
    expect(badState.err).toMatch(/Allowed choices are waiting, prioritized/);
  });

  it('an unreachable Redis is one clear line, quickly', async () => {
    const port = await freePort();
    const t0 = Date.now();
    const r = await cli(['status'], { redis: `redis://127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(r.err).toBe(`echomq: cannot reach Redis at redis://127.0.0.1:${port}: connection refused (is redis-server running? set --redis or REDIS_URL)\n`);
    expect(Date.now() - t0).toBeLessThan(3000);
  });

  it('names with terminal escapes are shown escaped, and --help exits 0', async () => {
    const q = open(qname('esc'));
    await q.add('\u001b[2Jwipe', {}, { lane: 'red\u001b[31m' });
    const r = await cli(['jobs', q.name]);
    expect(r.out).not.toContain('\u001b');
    expect(r.out).toContain('\\u001b[2Jwipe');
    expect(r.out).toContain('red\\u001b[31m');
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: echomq');
  });
});

describe('echomq dashboard command', () => {
  it('serves until asked to stop, read-only without a token', async () => {
    let err = '';
    let config: unknown;
    const code = await runCli(['--redis', redisUrl(), '--prefix', prefix, 'dashboard', '--port', '0'], {
      out: () => {},
      err: (s) => (err += s),
      env: {},
      untilStopped: async () => {
        const url = /on (http:\/\/\S+\/) /.exec(err)![1];
        config = await (await fetch(`${url}api/config`)).json();
      },
    });
    expect(code).toBe(0);
    expect(err).toMatch(/^echomq dashboard on http:\/\/127\.0\.0\.1:\d+\/ \(read-only; Redis redis:\/\/127\.0\.0\.1:\d+\/?\)\n$/);
    expect(config).toEqual({ readOnly: true, tokenRequired: false, prefix });
  });
});
