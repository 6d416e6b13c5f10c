// The Node side of the Python interop tests (python/tests/test_interop*.py): a long-lived
// process that reads one JSON command per stdin line, {tag, op, ...}, and answers with JSON
// lines {tag, result} or {tag, error} (a worker also sends {tag, event} lines). One process
// serves a whole test session: starting Node with the TypeScript hooks takes seconds.
//
// Usage: node --import ../fixtures/register-ts.mjs node-peer.mjs
//   {op:'stringify', lines}                   JSON.stringify(JSON.parse(line)) of each line
//   {op:'add', url, queue, prefix?, jobs}     jobs: [{name, data, opts}]; prints {ids}
//   {op:'work', url, queue, prefix?, concurrency?, delayMs?, lockDuration?, name?}
//        starts a Node worker (stopped by {op:'close', worker: <its tag>}); its processor
//        returns data.ret (or {by:'node', n}), throws data.fail, reports data.progress and
//        data.log; each settled job is sent as an event line
//   {op:'claimOnce', url, queue, prefix?, count, requestId}  scripts.claim with that request id
//        (applied once: a rerun of a claim another client made); prints {ids}
//   {op:'read', url, queue, prefix?, id}      prints the job as Node reads it (and its logs)
//   {op:'events', url, queue, prefix?, ms}    QueueEvents from the stream's start for ms
//   {op:'cron', cases}                        prints nextCronSlot of each case
//   {op:'keys', names}                        prints queueKeys(...) of each [queue, prefix]
//   {op:'scheduler', url, queue, id, repeat, template, strategyMs?}  upsertJobScheduler
//   {op:'cli', url, argv}                     runs the echomq CLI in-process; {code, out, err}
//   {op:'dashboard', url, path}               starts the dashboard, GETs path; {status, body}
import { createInterface } from 'node:readline';
import { Redis } from 'ioredis';
import { Queue, Worker, Job, QueueEvents, nextCronSlot, queueKeys } from '../../src/index.js';
import { runCli } from '../../src/cli/program.js';
import { scripts } from '../../src/scripts/index.js';
import { startDashboard } from '../../src/dashboard/server.js';

const send = (x) => process.stdout.write(JSON.stringify(x) + '\n');
const workers = new Map();

async function run(cmd) {
  const out = (result) => send({ tag: cmd.tag, result });
  const conn = () => ({ connection: cmd.url, ...(cmd.prefix ? { prefix: cmd.prefix } : {}) });
  switch (cmd.op) {
    case 'stringify':
      out(cmd.lines.map((l) => JSON.stringify(JSON.parse(l))));
      return;
    case 'close': {
      const w = workers.get(cmd.worker);
      if (w) await w.close();
      out(true);
      return;
    }
    case 'add': {
      const q = new Queue(cmd.queue, conn());
      const jobs = await q.addBulk(cmd.jobs);
      out({ ids: jobs.map((j) => j.id) });
      await q.close();
      return;
    }
    case 'claimOnce': {
      const redis = new Redis(cmd.url);
      try {
        const r = await scripts.claim({ client: redis, keys: queueKeys(cmd.queue, cmd.prefix) }, { count: cmd.count, leaseMs: 30000, requestId: cmd.requestId });
        out({ ids: r.jobs.map((j) => j.id) });
      } finally {
        redis.disconnect();
      }
      return;
    }
    case 'work': {
      const w = new Worker(cmd.queue, async (job) => {
        if (cmd.delayMs) await new Promise((r) => setTimeout(r, cmd.delayMs));
        if (job.data && job.data.fail) throw new Error(job.data.fail);
        if (job.data && job.data.progress !== undefined) await job.updateProgress(job.data.progress);
        if (job.data && job.data.log !== undefined) await job.log(job.data.log);
        return job.data && 'ret' in job.data ? job.data.ret : { by: 'node', n: job.data?.n };
      }, { ...conn(), concurrency: cmd.concurrency ?? 1, lockDuration: cmd.lockDuration ?? 30000, stalledInterval: cmd.stalledInterval ?? 30000, ...(cmd.name ? { name: cmd.name } : {}) });
      workers.set(cmd.tag, w);
      const ev = (event) => send({ tag: cmd.tag, event });
      w.on('completed', (job, rv) => ev({ id: job.id, lane: job.opts.lane ?? 'default', rv, at: Date.now() }));
      w.on('failed', (job, err) => ev({ id: job?.id, failed: err.message }));
      w.on('error', (err) => process.stderr.write(`worker error: ${err.message}\n`));
      await w.waitUntilReady();
      out({ ready: true });
      return;
    }
    case 'read': {
      const q = new Queue(cmd.queue, conn());
      const job = await Job.fromId(q, cmd.id);
      const logs = await q.getJobLogs(cmd.id);
      out(job ? {
        id: job.id, name: job.name, data: job.data, opts: job.opts, returnvalue: job.returnvalue, failedReason: job.failedReason,
        stacktrace: job.stacktrace, progress: job.progress, attemptsMade: job.attemptsMade, timestamp: job.timestamp,
        processedOn: job.processedOn, finishedOn: job.finishedOn, state: await job.getState(), logs,
      } : null);
      await q.close();
      return;
    }
    case 'events': {
      const ev = new QueueEvents(cmd.queue, { ...conn(), lastEventId: '0' });
      const seen = [];
      for (const name of ['added', 'waiting', 'active', 'progress', 'completed', 'failed', 'stalled', 'retries-exhausted', 'delayed']) {
        ev.on(name, (args) => seen.push({ event: name, ...args }));
      }
      await new Promise((r) => setTimeout(r, cmd.ms ?? 500));
      await ev.close();
      out(seen);
      return;
    }
    case 'cron':
      out(cmd.cases.map((c) => nextCronSlot(c.pattern, c.tz, c.after) ?? null));
      return;
    case 'keys':
      out(cmd.names.map(([q, p]) => queueKeys(q, p)));
      return;
    case 'scheduler': {
      // strategyMs: the queue's settings.repeatStrategy is "previous slot + strategyMs" (a Node function).
      const settings = cmd.strategyMs ? { settings: { repeatStrategy: (millis) => millis + cmd.strategyMs } } : {};
      const q = new Queue(cmd.queue, { ...conn(), ...settings });
      const job = await q.upsertJobScheduler(cmd.id, cmd.repeat, cmd.template);
      out({ id: job?.id ?? null });
      await q.close();
      return;
    }
    case 'cli': {
      let o = '';
      let e = '';
      const code = await runCli([...cmd.argv, '--redis', cmd.url], { out: (x) => (o += x), err: (x) => (e += x), env: {}, progress: false });
      out({ code, out: o, err: e });
      return;
    }
    case 'dashboard': {
      const client = new Redis(cmd.url);
      const d = await startDashboard({ client, port: 0 });
      const res = await fetch(d.url.replace(/\/$/, '') + cmd.path);
      out({ status: res.status, body: await res.json() });
      await d.close();
      await client.quit();
      return;
    }
    default:
      throw new Error(`unknown op ${cmd.op}`);
  }
}

const rl = createInterface({ input: process.stdin });
rl.on('line', (line) => {
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch {
    return;
  }
  run(cmd).catch((err) => send({ tag: cmd.tag, error: String(err?.message ?? err) }));
});
rl.on('close', async () => {
  for (const w of workers.values()) await w.close(true).catch(() => {});
  process.exit(0);
});
send({ tag: 'hello', result: true });
