/**
 * `migrateToBullMQ`: moves echomq queues' jobs back into BullMQ 6's layout, the way back of
 * `migrateFromBullMQ` (docs/migrating-from-bullmq.md "Going back"). Each call of the scripts
 * (src/scripts/migrateBack*.lua) moves a bounded batch atomically: a job is written as BullMQ's
 * and deleted from echomq in one call, so a move killed at any point and run again moves each
 * job exactly once. This file checks that no echomq worker runs, drives the calls and reports.
 */
import { openConnection, type RedisClient } from '../core/connection.js';
import { Code, MIGRATE_REASONS } from '../core/errors.js';
import { bindScript, type ScriptContext } from '../scripts/runner.js';
import { layoutRefusals, MigrationRefusedError, slotRefusals, workerCheck } from './checks.js';
import { moveKeys, pairs, type MoveKeys, type Refused } from './scripts.js';
import { readyBatches } from './back-order.js';
import { moveSchedulerSet, noteCannot, queueLines, runLines, validateMove, type MoveOptions as MigrateOptions, type QueueMoveCounts, type StateCount, type ValidMove } from './report.js';

const calls = { jobs: bindScript('migrateBackJobs'), meta: bindScript('migrateBackMeta'), scheduler: bindScript('migrateBackScheduler'), dedup: bindScript('migrateBackDedup') };

/** echomq's states the move back takes, in the order it takes them (active jobs stay). */
export const BACK_STATES = ['waiting-children', 'ready', 'delayed', 'failed', 'completed'] as const;
export type BackState = (typeof BACK_STATES)[number];

/** Why a job stays in echomq, by status code (the forward move's table plus a paused lane). */
export const BACK_REASONS: Readonly<Record<number, string>> = {
  ...MIGRATE_REASONS,
  [Code.MIGRATE_ID_TAKEN]: 'BullMQ already holds this id',
  [Code.MIGRATE_OUTSIDE]: 'its flow parent or a pending child is in a queue (or prefix) this command does not move, or its parent stays in echomq',
  [Code.MIGRATE_TOO_BIG]: 'a flow parent with more than 1,000 children (more than one bounded call moves)',
  [Code.MIGRATE_NOT_CARRIED]: 'a keepLastIfActive job (next job or holder) is not carried back',
  [Code.MIGRATE_LOCKED]: 'a deduplication id whose holder job is still in echomq (active, or refused): run again once it moved',
};

export interface QueueMigrationBack extends QueueMoveCounts<BackState> {
  /** Active jobs left in echomq (never taken: finish or stop their workers first). */
  active: number;
  /** BullMQ's id counter after the move (ids BullMQ generates start above it). */
  ids: { bullmq: number };
}

export interface MigrationBackReport {
  dryRun: boolean;
  prefix: string;
  bullmqPrefix: string;
  queues: QueueMigrationBack[];
  refusals: string[];
  jobs: number;
  workers: { echomq: number; forced: string[] };
  durationMs: number;
}

function validate(o: MigrateOptions): ValidMove {
  return validateMove(o, { queues: 'a non-empty array of echomq queue names', queue: "a queue name BullMQ can hold (BullMQ's names hold no ':')" }, 100);
}

function note(r: QueueMigrationBack, what: string, refused: readonly Refused[]): void {
  noteCannot(r, what, refused, BACK_REASONS);
}

type Run = { dryRun: boolean; batchSize: number; queues: string[] };

async function runBatch(client: RedisClient, k: MoveKeys, state: BackState, ids: readonly string[], o: Run): Promise<{ moved: number; refused: Refused[] }> {
  const ctx: ScriptContext = { client, keys: k };
  const r = (await calls.jobs(ctx, [state, o.dryRun ? '1' : '0', k.prefix, k.bullPrefix, JSON.stringify(o.queues), ...ids])) as unknown[];
  return { moved: Number(r[1]), refused: pairs(r, 2) };
}

/** Moves the jobs of one sorted-set state (waiting-children, delayed, failed, completed) in score order. */
async function moveSet(client: RedisClient, k: MoveKeys, state: Exclude<BackState, 'ready'>, o: Run, r: QueueMigrationBack): Promise<void> {
  const key = { 'waiting-children': k.wchildren, delayed: k.delayed, failed: k.failed, completed: k.completed }[state];
  let skip = 0;
  for (;;) {
    const ids = await client.zrange(key, skip, skip + o.batchSize - 1);
    if (ids.length === 0) break;
    const res = await runBatch(client, k, state, ids, o);
    r.states[state].moved += res.moved;
    note(r, state, res.refused);
    skip += o.dryRun ? ids.length : res.refused.length;
  }
  r.states[state].left = (await client.zcard(key)) - (o.dryRun ? r.states[state].moved : 0);
}

async function moveSchedulers(client: RedisClient, k: MoveKeys, dryRun: boolean, r: QueueMigrationBack): Promise<void> {
  await moveSchedulerSet(client, k.scheds, dryRun, r,
    async (id) => Number(await calls.scheduler({ client, keys: k }, [id, dryRun ? '1' : '0', k.prefix, k.bullPrefix])), (id, code) => note(r, 'scheduler', [{ id, code }]));
}

async function moveDedup(client: RedisClient, k: MoveKeys, dryRun: boolean, r: QueueMigrationBack): Promise<void> {
  let cursor = '0';
  do {
    const [next, flat] = await client.hscan(k.dedup, cursor, 'COUNT', 500);
    cursor = next;
    const ids = flat.filter((_, i) => i % 2 === 0);
    if (ids.length === 0) continue;
    const res = (await calls.dedup({ client, keys: k }, [dryRun ? '1' : '0', ...ids])) as unknown[];
    r.deduplication.moved += Number(res[0]);
    note(r, 'deduplication', pairs(res, 1));
  } while (cursor !== '0');
}

/** Moves the ready jobs of every lane in one order: priority, then arrival across lanes. */
async function moveReady(client: RedisClient, k: MoveKeys, o: Run, r: QueueMigrationBack): Promise<void> {
  const order = await readyBatches(client, k, o.batchSize);
  let refused = 0;
  for (;;) {
    const ids = await order.next();
    if (ids.length === 0) break;
    const res = await runBatch(client, k, 'ready', ids, o);
    r.states.ready.moved += res.moved;
    note(r, 'ready', res.refused);
    refused += res.refused.length;
    order.settled(new Set(res.refused.map((x) => x.id)), o.dryRun);
  }
  r.states.ready.left = refused;
}

/**
 * Moves echomq queues back into BullMQ 6's layout under `bullmqPrefix`: waiting, prioritized,
 * delayed, failed and completed jobs with their ids, history and logs, flows, the paused flag,
 * global concurrency and rate limit; BullMQ's id counter is raised above echomq's. Refuses
 * (MigrationRefusedError, nothing written) while echomq workers run on the queues, when keys
 * could collide, and on a Cluster when a queue's two layouts are in different slots.
 */
export async function migrateToBullMQ(options: MigrateOptions): Promise<MigrationBackReport> {
  const o = validate(options);
  const started = Date.now();
  const conn = openConnection(options.connection);
  try {
    const client = await conn.initializing;
    // echomq's worker connections carry echomq's prefix in their names and its library mark.
    const w = await workerCheck(client, o.queues, o.bullmqPrefix, o.prefix);
    const soft: string[] = [];
    if (w.unreadable !== undefined) soft.push(`cannot read CLIENT LIST to see whether echomq workers run (${w.unreadable}); stop them and pass --force`);
    const unmarked = [...w.bullmq, ...w.unknown];
    if (unmarked.length > 0) soft.push(`worker connections ${unmarked.join(', ')} carry echomq's queue names without echomq's library mark (Redis < 7.2, or another client); stop echomq's workers and pass --force`);
    const refusals = [
      ...(await layoutRefusals(client, o.queues, o.prefix, o.bullmqPrefix)), ...(await slotRefusals(client, o.queues, o.prefix, o.bullmqPrefix)),
      ...(w.echomq > 0 ? [`${w.echomq} echomq worker connection(s) are connected to the queues; stop the workers first`] : []),
      ...(o.force ? [] : soft),
    ];
    if (refusals.length > 0 && !o.dryRun) throw new MigrationRefusedError(refusals, 'migrate-to-bullmq');

    const keys = o.queues.map((q) => moveKeys(q, o.prefix, o.bullmqPrefix));
    const reports: QueueMigrationBack[] = o.queues.map((queue) => ({
      queue, states: Object.fromEntries(BACK_STATES.map((s) => [s, { moved: 0, left: 0 }])) as Record<BackState, StateCount>,
      schedulers: { moved: 0, left: 0 }, deduplication: { moved: 0 }, active: 0, ids: { bullmq: 0 }, paused: false, cannot: [], cannotCount: 0,
    }));
    // Settings and ids first: a paused queue stays paused from its first moved job on.
    for (const [i, k] of keys.entries()) {
      const m = (await calls.meta({ client, keys: k }, [o.dryRun ? '1' : '0'])) as string[];
      const r = reports[i]!;
      r.paused = m[0] === '1';
      if (m[1]) r.concurrency = Number(m[1]);
      if (m[2] && m[3]) r.rateLimit = { max: Number(m[2]), duration: Number(m[3]) };
      r.ids.bullmq = Number(m[4]);
      r.active = await client.zcard(k.active);
      await moveSchedulers(client, k, o.dryRun, r);
    }
    // Flow parents of every queue before any child, so a child never reports to a parent that
    // is not in BullMQ yet; then each queue's states.
    for (const [i, k] of keys.entries()) await moveSet(client, k, 'waiting-children', o, reports[i]!);
    for (const [i, k] of keys.entries()) {
      await moveReady(client, k, o, reports[i]!);
      for (const s of ['delayed', 'failed', 'completed'] as const) await moveSet(client, k, s, o, reports[i]!);
      await moveDedup(client, k, o.dryRun, reports[i]!);
    }
    const jobs = reports.reduce((n, r) => n + Object.values(r.states).reduce((m, s) => m + s.moved, 0), 0);
    return {
      dryRun: o.dryRun, prefix: o.prefix, bullmqPrefix: o.bullmqPrefix, queues: reports, jobs, refusals,
      workers: { echomq: w.echomq, forced: o.force ? soft : [] }, durationMs: Date.now() - started,
    };
  } finally {
    await conn.close();
  }
}

/** The report as text for people (the CLI's output without --json). */
export function migrationBackText(r: MigrationBackReport): string {
  const verb = r.dryRun ? 'would move' : 'moved';
  const lines: string[] = [];
  for (const q of r.queues) {
    lines.push(...queueLines(q, BACK_STATES, { verb, from: r.prefix, to: r.bullmqPrefix, dryRun: r.dryRun, stays: 'echomq' }, [
      ...(q.active > 0 ? [`  active            ${q.active} stay in echomq (never taken; run again once they finished)`] : []),
      `  ids               BullMQ generates ids above ${q.ids.bullmq}`,
    ], []));
  }
  lines.push(...runLines(r));
  lines.push(`${r.jobs} jobs ${verb} in ${r.durationMs} ms`);
  return lines.join('\n') + '\n';
}
