/**
 * The `echomq` command line. `runCli(argv, io)` runs one command in-process and resolves to
 * the exit code, so tests call it directly; main.ts only wires it to the real process.
 *
 * Every handler returns `{ data, text }`: `--json` prints data, otherwise text for people.
 * Exit codes: 0 ok, 1 the operator's mistake or Redis unreachable (one line on stderr),
 * 2 an unexpected error (with its stack: a bug to report).
 */
import { Command, CommanderError, Option } from 'commander';
import { LAYOUT_VERSION } from '../core/layout.js';
import { connect, disconnect, userMessage, UserError, type Target } from '../operator/target.js';
import * as ops from '../operator/operations.js';
import * as states from '../operator/states.js';
import { requireKnownLane, topLanes, type LaneSortKey } from '../operator/lanes.js';
import * as sched from '../operator/schedulers.js';
import { migrateFromBullMQ, migrationText } from '../migrate/migrate.js';
import type { FollowProgress } from '../migrate/follow.js';
import { migrateToBullMQ, migrationBackText } from '../migrate/back.js';
import {
  jobText, jobsTable, lanesTable, progressBar, queuesTable, schedulerText, schedulersTable, statusText, workersTable,
} from './format.js';

export interface CliIO {
  out(s: string): void;
  err(s: string): void;
  env: Record<string, string | undefined>;
  /** Draw progress bars on stderr (true when stderr is a terminal). */
  progress?: boolean;
  /** Resolves when a long-running command (the dashboard) should stop. Default: SIGINT/SIGTERM. */
  untilStopped?: () => Promise<void>;
}

interface Output {
  data: unknown;
  text: string;
}

interface Globals {
  redis?: string;
  prefix?: string;
  json?: boolean;
  cluster?: boolean;
}

/** Numbers parse as numbers; anything else is passed on as given so validation names the field and the value. */
function num(s: string): number {
  const t = s.trim();
  return (t !== '' && Number.isFinite(Number(t)) ? Number(t) : s) as number;
}

export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  const program = build(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode; // commander already printed it
    const msg = userMessage(err);
    if (msg !== undefined) {
      io.err(`echomq: ${msg}\n`);
      return 1;
    }
    io.err(`echomq: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`);
    return 2;
  }
}

function build(io: CliIO): Command {
  const program = new Command('echomq')
    .description('Operate echomq queues: inspect, retry, pause, tune lanes, serve the dashboard.')
    .addOption(new Option('--redis <url>', 'Redis URL (default: $REDIS_URL or redis://127.0.0.1:6379)'))
    .addOption(new Option('--prefix <prefix>', 'key prefix of the queues').default('emq'))
    .addOption(new Option('--cluster', 'connect to a Redis Cluster (found by itself from any node\'s URL; --redis may list seed nodes, comma-separated)'))
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err })
    .showSuggestionAfterError(true);

  /** Runs a handler against a fresh connection and prints its result. */
  const action =
    (fn: (t: Target, args: string[], opts: Record<string, unknown>) => Promise<Output>) =>
    async (...raw: unknown[]) => {
      const cmd = raw[raw.length - 1] as Command;
      const opts = cmd.optsWithGlobals() as Globals & Record<string, unknown>;
      const args = raw.slice(0, -2).filter((a) => a !== undefined) as string[];
      const t = await connect(opts.redis ?? io.env.REDIS_URL, opts.prefix, { cluster: opts.cluster });
      try {
        const res = await fn(t, args, opts);
        io.out(opts.json ? JSON.stringify(res.data, null, 2) + '\n' : res.text);
      } finally {
        await disconnect(t);
      }
    };
  const json = () => new Option('--json', 'print JSON instead of text');

  program
    .command('status [queue]')
    .description('counts per state and lanes of a queue; without a queue, every queue under the prefix (on every master of a Cluster)')
    .option('--cursor <cursor>', 'resume a listing of queues that was cut short')
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        if (name === undefined) {
          const { queues, truncated, cursor } = await states.queuesOverview(t, 1000, o.cursor as string | undefined);
          const more = truncated ? `… more queues not shown (echomq status --cursor ${cursor})\n` : '';
          return { data: { queues, truncated, cursor }, text: queuesTable(queues) + more };
        }
        const s = await states.queueStateStatus(await ops.openQueue(t, name));
        return { data: s, text: statusText(s) };
      }),
    );

  program
    .command('lanes <queue>')
    .description('every lane: depth, active, weight, limit, paused, rate (with --sort depth: the deepest lanes of the whole queue)')
    .addOption(new Option('--sort <column>', 'order').choices(['name', 'depth', 'active', 'weight']).default('name'))
    .addOption(new Option('--limit <n>', 'most lanes to show').default('1000'))
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        const q = await ops.openQueue(t, name);
        const key = o.sort as 'name' | LaneSortKey;
        let lanes;
        let truncated;
        if (key === 'name') ({ lanes, truncated } = await ops.allLanes(q, num(String(o.limit))));
        else {
          // Every lane is ranked (read in bounded pages), not only the first --limit by name.
          const r = await topLanes(q, key, num(String(o.limit)));
          lanes = r.lanes;
          truncated = r.scanned > lanes.length;
        }
        return { data: { lanes, truncated }, text: lanesTable(lanes) + (truncated ? '… more lanes (raise --limit)\n' : '') };
      }),
    );

  program
    .command('jobs <queue>')
    .description('list jobs by state and lane')
    .addOption(new Option('--state <state>', 'job state (default: all states; wait = waiting)').choices([...states.LIST_STATE_ARGS]))
    .option('--lane <lane>', 'only jobs of this lane')
    .option('--limit <n>', 'most jobs to list', '50')
    .option('--offset <n>', 'skip this many (needs --state)', '0')
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        const q = await ops.openQueue(t, name);
        const r = await states.listJobs(q, {
          state: o.state as string | undefined, lane: o.lane as string | undefined, limit: num(String(o.limit)), offset: num(String(o.offset)),
        });
        // --offset pages one state's list; across all states only --limit can show more.
        const hint = o.state === undefined ? 'raise --limit, or page one state with --state and --offset' : 'use --limit / --offset';
        const text = r.note !== undefined ? `no jobs (${r.note})\n` : jobsTable(r.jobs, Date.now()) + (r.more ? `… more jobs (${hint})\n` : '');
        return { data: r, text };
      }),
    );

  program
    .command('job <queue> <id>')
    .description('one job: data, progress, logs, error, stack trace')
    .addOption(json())
    .action(
      action(async (t, [name, id]) => {
        const d = await states.jobView(await ops.openQueue(t, name), id);
        return { data: d, text: jobText(d) };
      }),
    );

  program
    .command('retry <queue> [id]')
    .description('retry one failed (or completed) job, or every failed job with --all-failed')
    .option('--all-failed', 'retry every failed job, in batches')
    .option('--batch <n>', 'jobs per batch with --all-failed', '500')
    .addOption(json())
    .action(
      action(async (t, [name, id], o) => {
        const q = await ops.openQueue(t, name);
        if (o.allFailed) {
          if (id !== undefined) throw new UserError('give a job id or --all-failed, not both');
          const draw = io.progress ? (d: number, n: number) => n > 0 && io.err(progressBar(d, n)) : undefined;
          const r = await ops.retryAllFailed(q, { batch: num(String(o.batch)), onProgress: draw });
          if (draw) io.err('\n');
          return { data: r, text: `retried ${r.retried} failed jobs${r.skipped ? ` (${r.skipped} skipped: changed meanwhile)` : ''}\n` };
        }
        if (id === undefined) throw new UserError('give a job id, or --all-failed to retry every failed job');
        const r = await ops.retryJob(q, id);
        return { data: r, text: `retried job ${id} (was ${r.from})\n` };
      }),
    );

  program
    .command('remove <queue> <id>')
    .description('delete a job (refused while it is active)')
    .addOption(json())
    .action(
      action(async (t, [name, id]) => {
        await ops.removeJob(await ops.openQueue(t, name), id);
        return { data: { removed: id }, text: `removed job ${id}\n` };
      }),
    );

  for (const paused of [true, false]) {
    const verb = paused ? 'pause' : 'resume';
    program
      .command(`${verb} <queue>`)
      .description(paused ? 'stop all workers from taking jobs of the queue (or of one lane)' : 'let workers take jobs again')
      .option('--lane <lane>', `${verb} only this lane`)
      .option('--force', `${verb} a lane that has no jobs and no settings (yet)`)
      .addOption(json())
      .action(
        action(async (t, [name], o) => {
          const lane = o.lane as string | undefined;
          const q = await ops.openQueue(t, name);
          // The library takes any lane name (a lane may be paused before its first job); a typo should not pass silently.
          if (lane !== undefined && !o.force) await requireKnownLane(q, lane);
          await ops.setPaused(q, paused, lane);
          const what = lane === undefined ? `queue ${name}` : `lane ${lane} of queue ${name}`;
          return { data: { queue: name, lane: lane ?? null, paused }, text: `${paused ? 'paused' : 'resumed'} ${what}\n` };
        }),
      );
  }

  program
    .command('weight <queue> <lane> <n>')
    .description("set a lane's weight (its share of service per turn, default 1)")
    .addOption(json())
    .action(
      action(async (t, [name, lane, n]) => {
        await (await ops.openQueue(t, name)).lanes.setWeight(lane, num(n));
        return { data: { queue: name, lane, weight: num(n) }, text: `lane ${lane}: weight ${n}\n` };
      }),
    );

  program
    .command('limit <queue> <lane> <n>')
    .description("set a lane's concurrency limit (most jobs active at once), or `none` to remove it")
    .addOption(json())
    .action(
      action(async (t, [name, lane, n]) => {
        const limit = n === 'none' ? 'none' : num(n);
        await ops.setLaneLimit(await ops.openQueue(t, name), lane, limit);
        return { data: { queue: name, lane, limit: limit === 'none' ? null : limit }, text: `lane ${lane}: limit ${n}\n` };
      }),
    );

  program
    .command('drain <queue>')
    .description('remove all waiting jobs (and delayed ones with --delayed)')
    .option('--delayed', 'also remove delayed jobs')
    .option('--lane <lane>', 'drain only this lane')
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        const n = await ops.drain(await ops.openQueue(t, name), { delayed: Boolean(o.delayed), lane: o.lane as string | undefined });
        return { data: { removed: n }, text: `removed ${n} jobs\n` };
      }),
    );

  program
    .command('clean <queue>')
    .description('remove jobs of a state older than the grace period')
    .requiredOption('--grace <ms>', 'only jobs older than this many ms')
    .addOption(new Option('--state <state>', 'which jobs (wait = waiting)').choices([...states.CLEAN_STATE_ARGS]).default('completed'))
    .option('--limit <n>', 'most jobs to remove (0 = all)', '0')
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        const { ids, note } = await states.cleanJobs(await ops.openQueue(t, name), num(String(o.grace)), String(o.state), num(String(o.limit)));
        return { data: { removed: ids.length, ids }, text: `removed ${ids.length} ${o.state} jobs${note ? ` (${note})` : ''}\n` };
      }),
    );

  program
    .command('schedulers <queue>')
    .description('job schedulers of a queue, soonest next job first')
    .option('--limit <n>', 'most schedulers to list', '50')
    .option('--offset <n>', 'skip this many', '0')
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        const r = await sched.listSchedulers(await ops.openQueue(t, name), { limit: num(String(o.limit)), offset: num(String(o.offset)) });
        return { data: r, text: schedulersTable(r.schedulers, Date.now()) + (r.more ? `… ${r.total} schedulers in all (use --limit / --offset)\n` : '') };
      }),
    );

  program
    .command('scheduler <queue> <id>')
    .description('one job scheduler: repeat, next job, jobs made, template')
    .addOption(json())
    .action(
      action(async (t, [name, id]) => {
        const s = await sched.showScheduler(await ops.openQueue(t, name), id);
        return { data: s, text: schedulerText(s) };
      }),
    );

  program
    .command('remove-scheduler <queue> <id>')
    .alias('scheduler-remove')
    .description('delete a job scheduler and its waiting next job (jobs already made stay)')
    .addOption(json())
    .action(
      action(async (t, [name, id]) => {
        await sched.removeScheduler(await ops.openQueue(t, name), id);
        return { data: { queue: name, removed: id }, text: `removed job scheduler ${id}\n` };
      }),
    );

  program
    .command('workers <queue>')
    .description('workers connected to a queue: name, address, age')
    .addOption(json())
    .action(
      action(async (t, [name]) => {
        const workers = await sched.listWorkers(await ops.openQueue(t, name));
        return { data: { workers }, text: workersTable(workers) };
      }),
    );

  program
    .command('upgrade-layout <queue>')
    .description(`move a queue stored in layout version 1 to layout version ${LAYOUT_VERSION} (stop older echomq clients first)`)
    .option('--dry-run', 'only report the stored version')
    .addOption(json())
    .action(
      action(async (t, [name], o) => {
        const from = await (await ops.openQueue(t, name)).upgradeLayout({ dryRun: Boolean(o.dryRun) });
        const upgraded = from !== 0 && from !== LAYOUT_VERSION && !o.dryRun;
        const text = from === 0 ? `queue ${name}: no layout version stored (nothing to upgrade)\n`
          : from === LAYOUT_VERSION ? `queue ${name}: already in layout version ${from}\n`
          : upgraded ? `queue ${name}: upgraded from layout version ${from} to ${LAYOUT_VERSION}\n`
          : `queue ${name}: stored in layout version ${from}; upgrade-layout would move it to ${LAYOUT_VERSION}\n`;
        return { data: { queue: name, from, to: LAYOUT_VERSION, upgraded }, text };
      }),
    );

  // The two directions of the move take the same options; the text names whose workers are checked.
  const moveCommand = (name: string, description: string, force: string, batch: string) => program
    .command(`${name} <queue...>`)
    .description(description)
    .option('--bullmq-prefix <prefix>', "BullMQ's key prefix", 'bull')
    .option('--dry-run', 'report what would move and what cannot, and why; change nothing')
    .option('--force', force)
    .option('--batch <n>', 'jobs per script call (1..1000)', batch);
  const moveOptions = (t: Target, queues: unknown, o: Record<string, unknown>) => ({
    connection: t.client, queues: queues as string[], prefix: t.prefix, bullmqPrefix: String(o.bullmqPrefix),
    dryRun: Boolean(o.dryRun), force: Boolean(o.force), batchSize: num(String(o.batch)),
  });

  moveCommand('migrate-from-bullmq', "move BullMQ queues' data into the echomq queues of the same names: jobs in every state, flows, schedulers, deduplication ids, settings, ids",
    'go on when the check for running BullMQ workers cannot tell (CLIENT LIST denied, or Redis < 7.2 with one prefix for both)', '50')
    .option('--follow', 'after the move, keep moving what BullMQ producers add and BullMQ workers finish, until SIGINT/SIGTERM (BullMQ workers may run)')
    .option('--sweep <ms>', 'with --follow: ms between sweeps when BullMQ writes no event', '30000')
    .option('--id-gap <n>', "echomq's id counter kept this far above BullMQ's (default with --follow: 1000000)")
    .addOption(json())
    .action(
      action(async (t, [queues], o) => {
        const follow = Boolean(o.follow);
        const stop = new AbortController();
        if (follow) void (io.untilStopped ?? untilSignal)().then(() => stop.abort());
        const report = await migrateFromBullMQ({
          ...moveOptions(t, queues, o),
          ...(follow ? { follow, signal: stop.signal, sweepMs: num(String(o.sweep)), onPass: followLine(io) } : {}),
          ...(o.idGap !== undefined ? { idGap: num(String(o.idGap)) } : {}),
        });
        return { data: report, text: migrationText(report) };
      }),
    );

  moveCommand('migrate-to-bullmq', "move echomq queues back into BullMQ 6's layout: waiting, prioritized, delayed, failed and completed jobs, flows, settings, ids (each job's lane kept in its options)",
    'go on when the check for running echomq workers cannot tell (CLIENT LIST denied, or Redis < 7.2)', '100')
    .addOption(json())
    .action(
      action(async (t, [queues], o) => {
        const report = await migrateToBullMQ(moveOptions(t, queues, o));
        return { data: report, text: migrationBackText(report) };
      }),
    );

  program
    .command('dashboard')
    .description('serve the web dashboard (read-only unless --token is given)')
    .option('--port <port>', 'TCP port', '7070')
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--token <token>', 'allow actions for requests bearing this token (default: $ECHOMQ_DASHBOARD_TOKEN)')
    .action(async (...raw: unknown[]) => {
      const o = (raw[raw.length - 1] as Command).optsWithGlobals() as Globals & { port: string; host: string; token?: string };
      const t = await connect(o.redis ?? io.env.REDIS_URL, o.prefix, { persistent: true, cluster: o.cluster });
      const { startDashboard } = await import('../dashboard/server.js');
      const token = o.token ?? io.env.ECHOMQ_DASHBOARD_TOKEN;
      try {
        const d = await startDashboard({ client: t.client, prefix: t.prefix, port: num(o.port), host: o.host, token });
        io.err(`echomq dashboard on ${d.url} (${token ? 'actions allowed with the token' : 'read-only'}; Redis ${t.where})\n`);
        await (io.untilStopped ?? untilSignal)();
        await d.close();
      } finally {
        await disconnect(t);
      }
    });

  program
    .command('demo')
    .description('run the lanes demo against Redis')
    .action(async (...raw: unknown[]) => {
      const o = (raw[raw.length - 1] as Command).optsWithGlobals() as Globals;
      const url = o.redis ?? io.env.REDIS_URL;
      // The demo ships separately; a plain string keeps the compiler from requiring it.
      const spec = '../demo/main.js';
      let mod: { runDemo?: (connection?: string) => unknown };
      try {
        mod = await import(spec);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND') throw new UserError('the demo is not included in this build');
        throw err;
      }
      if (typeof mod.runDemo !== 'function') throw new UserError('the demo module has no runDemo()');
      await (url ? mod.runDemo(url) : mod.runDemo());
    });

  return program;
}

/** Following: one progress line on stderr for each pass that moved jobs, and at each sweep. */
function followLine(io: CliIO): (p: FollowProgress) => void {
  return (p) => {
    if (p.moved === 0 && p.reason === 'event') return;
    io.err(`${new Date().toISOString()} follow (${p.reason}): moved ${p.moved}, ${p.total} in all; ${p.left} in BullMQ (${p.heldByBullMQ} held by BullMQ workers); ${p.stats.passes} passes, ${p.stats.collisions.length} id collisions\n`);
  };
}

function untilSignal(): Promise<void> {
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
