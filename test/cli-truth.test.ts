// The CLI says what the API says: the deepest lanes of the whole queue, refusal of a lane name
// no job or setting uses, BullMQ 6's state names (checked against the real bullmq package),
// a delayed job's due time, an earlier attempt's error told as such, job schedulers and workers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { Queue as BullQueue } from 'bullmq';
import { Queue, Worker } from '../src/index.js';
import { runCli } from '../src/cli/program.js';
import { client, qname, redisUrl, waitFor } from './helpers.js';
import { startMonitor } from './monitor.js';
import { usePrivateServer } from './private-server.js';

const prefix = `clitruth-${randomUUID().slice(0, 8)}`;

async function cli(args: string[], url = redisUrl()) {
  let out = '';
  let err = '';
  const code = await runCli(['--redis', url, '--prefix', prefix, ...args], { out: (s) => (out += s), err: (s) => (err += s), env: {} });
  return { code, out, err };
}

const json = async (args: string[], url?: string) => {
  const r = await cli([...args, '--json'], url);
  expect(r.err, args.join(' ')).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.out);
};

describe('echomq CLI tells the truth', () => {
  const redis = client();
  const queues: Array<Queue | BullQueue> = [];
  const open = (label: string) => {
    const q = new Queue(qname(label), { connection: redisUrl(), prefix });
    queues.push(q);
    return q;
  };
  afterAll(async () => {
    for (const q of queues) await q.close();
    redis.disconnect();
  });

  describe('lanes --sort depth over 20,000 lanes', () => {
    // A server of its own: MONITOR on the suite's shared server can read another file's command
    // together with its own reply (ioredis: "Command queue state error").
    const server = usePrivateServer();
    let q: Queue;
    // Deep lanes spread over the whole name range, so the first pages by name hold few of them.
    const deep: Array<[string, number]> = [['l00007', 9], ['l12345', 8], ['l19999', 7], ['l05000', 6], ['l15000', 5], ['l00001', 4]];
    beforeAll(async () => {
      q = new Queue(qname('many'), { connection: server.url, prefix });
      server.closeLater(() => q.close());
      const extra = new Map(deep);
      const jobs = [];
      for (let i = 0; i < 20_000; i++) {
        const lane = `l${String(i).padStart(5, '0')}`;
        for (let k = 0; k < (extra.get(lane) ?? 1); k++) jobs.push({ name: 'x', data: {}, opts: { lane } });
      }
      for (let i = 0; i < jobs.length; i += 5000) await q.addBulk(jobs.slice(i, i + 5000));
    }, 60_000);

    it('lists the deepest lanes of the whole queue, every Redis call bounded', async () => {
      await (await q.waitUntilReady()).ping(); // no reply of the queue's pending when MONITOR starts
      const mon = await startMonitor(server.admin);
      const r = await json(['lanes', q.name, '--sort', 'depth', '--limit', '5'], server.url);
      await mon.flush();
      mon.stop();
      // Only the commands on this queue's keys count.
      const seen = mon.seen.filter((c) => c.args.some((x) => x.startsWith(q.keys.base)));
      expect(r.lanes.map((l: { name: string; depth: number }) => [l.name, l.depth])).toEqual(deep.slice(0, 5));
      expect(r.truncated).toBe(true);
      // The lane index is read in pages of at most 1,000 names; nothing reads a whole set.
      const lex = seen.filter((c) => c.args[0].toLowerCase() === 'zrangebylex');
      expect(lex.length).toBeGreaterThanOrEqual(20);
      for (const c of lex) {
        expect(c.args.map((a) => a.toUpperCase())).toContain('LIMIT');
        expect(Number(c.args[c.args.length - 1])).toBeLessThanOrEqual(1000);
      }
      const whole = seen.filter((c) => /^(zrange|lrange|smembers|hgetall|keys)$/i.test(c.args[0]) && c.args.at(-1) === '-1');
      expect(whole).toEqual([]);
      expect(seen.some((c) => /^(smembers|keys)$/i.test(c.args[0]))).toBe(false);

      const text = await cli(['lanes', q.name, '--sort', 'depth', '--limit', '3'], server.url);
      expect(text.out.split('\n').slice(1, 4).map((l) => l.split(/\s+/)[0])).toEqual(['l00007', 'l12345', 'l19999']);
    }, 30_000);
  });

  it('pause --lane refuses a lane with no jobs and no settings, naming close matches, unless --force', async () => {
    const q = open('pause');
    await q.add('x', {}, { lane: 'acme' });
    await q.add('x', {}, { lane: 'globex' });
    await q.lanes.setWeight('initech', 2); // a lane with a setting but no job yet is known

    const typo = await cli(['pause', q.name, '--lane', 'acmee']);
    expect(typo.code).toBe(1);
    expect(typo.out).toBe('');
    expect(typo.err).toBe(
      `echomq: lane "acmee" of queue "${q.name}" has no jobs and no settings; did you mean "acme"? ` +
        '(use --force to act on it anyway, e.g. before its first job arrives)\n',
    );
    const prefixOnly = await cli(['pause', q.name, '--lane', 'glo']);
    expect(prefixOnly.err).toContain('did you mean "globex"?');
    const none = await cli(['pause', q.name, '--lane', 'nosuchlane']);
    expect(none.code).toBe(1);
    expect(none.err).not.toContain('did you mean');
    expect(await redis.smembers(q.keys.lpaused)).toEqual([]); // refused: nothing written

    expect((await cli(['pause', q.name, '--lane', 'initech'])).code).toBe(0);
    expect((await cli(['pause', q.name, '--lane', 'acme'])).out).toBe(`paused lane acme of queue ${q.name}\n`);
    expect((await cli(['pause', q.name, '--lane', 'nosuchlane', '--force'])).code).toBe(0);
    expect((await redis.smembers(q.keys.lpaused)).sort()).toEqual(['acme', 'initech', 'nosuchlane']);
    expect((await cli(['resume', q.name, '--lane', 'nosuchlane'])).code).toBe(0); // a paused lane is known
  });

  it("status counts a paused queue's jobs as waiting, as BullMQ 6's getJobCounts() does", async () => {
    const bull = new BullQueue(qname('bull'), { connection: { url: redisUrl() }, prefix: `${prefix}-bull` });
    queues.push(bull);
    const q = open('paused');
    for (const target of [bull, q] as const) {
      await (target as Queue).add('a', {});
      await (target as Queue).add('b', {});
      await (target as Queue).add('p', {}, { priority: 3 });
      await (target as Queue).add('d', {}, { delay: 60_000 });
      await target.pause();
    }
    const bullCounts = await bull.getJobCounts();
    expect(bullCounts).toEqual({ active: 0, completed: 0, delayed: 1, failed: 0, prioritized: 1, waiting: 2, 'waiting-children': 0 });
    expect(await q.getJobCounts()).toEqual(bullCounts);

    const s = await json(['status', q.name]);
    expect(s.paused).toBe(true);
    expect(s.counts).toEqual(bullCounts);
    const all = await json(['status']);
    expect(all.queues.find((x: { name: string }) => x.name === q.name)).toEqual({ name: q.name, paused: true, counts: bullCounts });
    const text = await cli(['status', q.name]);
    expect(text.out).toContain(`queue ${q.name}  PAUSED`);
    expect(text.out).toMatch(/WAITING\s+PRIORITIZED\s+ACTIVE\s+DELAYED\s+COMPLETED\s+FAILED\n\s+2\s+1\s+0\s+1\s+0\s+0\n/);

    // Listed as waiting too, which is what the job itself says.
    const waiting = await json(['jobs', q.name, '--state', 'waiting']);
    expect(waiting.jobs.map((j: { name: string; state: string }) => [j.name, j.state])).toEqual([['a', 'waiting'], ['b', 'waiting']]);
    expect(await (await q.getJob(waiting.jobs[0].id))!.getState()).toBe('waiting');
    const everything = await json(['jobs', q.name]);
    expect(everything.jobs.map((j: { state: string }) => j.state).sort()).toEqual(['delayed', 'prioritized', 'waiting', 'waiting']);
    // `paused` as BullMQ 6 treats it: no job is ever in it.
    expect(await bull.getJobs(['paused' as 'wait'])).toEqual([]);
    expect(await json(['jobs', q.name, '--state', 'paused'])).toMatchObject({ jobs: [], more: false });
    expect((await cli(['jobs', q.name, '--state', 'paused'])).out).toMatch(/^no jobs \(no job is in state paused: a paused queue's jobs are waiting/);
  });

  it('--state wait is accepted by jobs and by clean, and the jobs hint names what works', async () => {
    const q = open('states');
    await q.addBulk([{ name: 'a', data: {} }, { name: 'b', data: {} }, { name: 'c', data: {} }]);
    const viaWait = await json(['jobs', q.name, '--state', 'wait']);
    expect(viaWait.jobs.map((j: { name: string; state: string }) => [j.name, j.state])).toEqual([['a', 'waiting'], ['b', 'waiting'], ['c', 'waiting']]);
    expect(await json(['jobs', q.name, '--state', 'waiting'])).toEqual(viaWait);

    // Without --state only --limit helps, and the hint says so; what it suggests works.
    const page = await cli(['jobs', q.name, '--limit', '1']);
    expect(page.out).toContain('… more jobs (raise --limit, or page one state with --state and --offset)\n');
    const next = await json(['jobs', q.name, '--state', 'waiting', '--offset', '1', '--limit', '1']);
    expect(next.jobs.map((j: { name: string }) => j.name)).toEqual(['b']);
    const offsetAlone = await cli(['jobs', q.name, '--offset', '1']);
    expect(offsetAlone.code).toBe(1);
    expect(offsetAlone.err).toBe('echomq: --offset needs one state: add --state (for example --state failed)\n');

    expect(await json(['clean', q.name, '--grace', '0', '--state', 'wait', '--limit', '1'])).toMatchObject({ removed: 1 });
    expect(await json(['clean', q.name, '--grace', '0', '--state', 'waiting'])).toMatchObject({ removed: 2 });
    const badClean = await cli(['clean', q.name, '--grace', '0', '--state', 'waiting-children']);
    expect(badClean.code).toBe(1);
    expect(badClean.err).toMatch(/Allowed choices are completed, wait, waiting, active, paused, prioritized, delayed, failed/);
  });

  it('job shows a delayed job its due time, and an error from an earlier attempt as such', async () => {
    const q = open('job');
    const delayed = await q.add('later', {}, { delay: 90_000 });
    const d = await json(['job', q.name, delayed.id]);
    expect(d.state).toBe('delayed');
    expect(Math.abs(d.due - (delayed.timestamp + 90_000))).toBeLessThan(1000);
    const text = await cli(['job', q.name, delayed.id]);
    expect(text.out).toContain(`due          ${new Date(d.due).toISOString()} (in 1m)`); // 89.9 s, in whole minutes

    const flaky = await q.add('flaky', {}, { attempts: 3 });
    const w = new Worker(
      q.name,
      async (job) => {
        if (job.attemptsMade < 2) throw new Error(`try ${job.attemptsMade} broke`);
        return 'ok';
      },
      { connection: redisUrl(), prefix },
    );
    await waitFor(async () => (await q.getJobState(flaky.id)) === 'completed');
    await w.close();
    const done = await json(['job', q.name, flaky.id]);
    expect(done).toMatchObject({ state: 'completed', attemptsMade: 3, failedReason: 'try 1 broke', errorIsEarlier: true, due: null });
    const shown = await cli(['job', q.name, flaky.id]);
    expect(shown.out).not.toMatch(/^error /m);
    expect(shown.out).toContain("earlier error try 1 broke (an earlier attempt's; the job is completed now)");
    expect(shown.out).toContain("stacktrace (earlier attempts')");
    const row = await cli(['jobs', q.name, '--state', 'completed']);
    expect(row.out).toContain('earlier attempt: try 1 broke');
  });

  it('schedulers, scheduler, remove-scheduler (alias scheduler-remove) and workers', async () => {
    const q = open('sched');
    await q.upsertJobScheduler('every-minute', { every: 60_000 }, { name: 'tick', data: { n: 1 } });
    await q.upsertJobScheduler('nightly', { pattern: '0 3 * * *', tz: 'UTC' }, { name: 'report' });
    const list = await json(['schedulers', q.name]);
    expect(list).toMatchObject({ total: 2, more: false });
    expect(list.schedulers.map((s: { key: string }) => s.key)).toEqual(['every-minute', 'nightly']); // soonest first
    const table = await cli(['schedulers', q.name]);
    expect(table.out).toMatch(/^ID\s+NAME\s+REPEAT\s+NEXT\s+JOBS MADE\n/);
    expect(table.out).toMatch(/every-minute\s+tick\s+every 1m\s+\S+ \((in \S+|\S+ ago)\)\s+1\n/);
    expect(table.out).toMatch(/nightly\s+report\s+cron 0 3 \* \* \* UTC/);
    expect((await json(['schedulers', q.name, '--limit', '1'])).more).toBe(true);

    const one = await json(['scheduler', q.name, 'every-minute']);
    expect(one).toMatchObject({ key: 'every-minute', name: 'tick', every: 60_000, template: { data: { n: 1 } } });
    expect((await cli(['scheduler', q.name, 'every-minute'])).out).toMatch(/^id\s+every-minute\nname\s+tick\nrepeat\s+every 1m\n/);
    const missing = await cli(['scheduler', q.name, 'nope']);
    expect(missing).toMatchObject({ code: 1, err: `echomq: job scheduler "nope" not found in queue "${q.name}" (see: echomq schedulers ${q.name})\n` });

    expect((await cli(['remove-scheduler', q.name, 'every-minute'])).out).toBe('removed job scheduler every-minute\n');
    expect(await q.getJobScheduler('every-minute')).toBeUndefined();
    expect(await json(['scheduler-remove', q.name, 'nightly'])).toEqual({ queue: q.name, removed: 'nightly' });
    expect((await cli(['remove-scheduler', q.name, 'nightly'])).code).toBe(1);
    expect((await cli(['schedulers', q.name])).out).toBe('no job schedulers\n');

    expect((await cli(['workers', q.name])).out).toBe('no workers connected\n');
    const w = new Worker(q.name, async () => {}, { connection: redisUrl(), prefix, name: 'billing-1' });
    await w.waitUntilReady();
    await waitFor(async () => (await q.getWorkers()).length > 0);
    const { workers } = await json(['workers', q.name]);
    expect(workers).toEqual([expect.objectContaining({ name: 'billing-1', addr: expect.stringMatching(/^127\.0\.0\.1:\d+$/), age: expect.any(Number) })]);
    expect((await cli(['workers', q.name])).out).toMatch(/^NAME\s+ADDRESS\s+AGE\s+IDLE\nbilling-1\s+127\.0\.0\.1:\d+\s+\S+/);
    await w.close();
  });
});
