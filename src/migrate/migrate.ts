/**
 * `migrateFromBullMQ`: moves BullMQ 6 queues' live data into echomq (docs/migrating-from-bullmq.md
 * "Moving a live queue"). The move itself is the library's scripts (src/scripts/migrate*.lua):
 * each call reads a bounded batch of BullMQ's records, writes echomq's and deletes BullMQ's in one
 * atomic call, so a move killed at any point and run again moves each job exactly once. This
 * file checks what must hold first, drives the calls in BullMQ's serving order and reports.
 */
import { openConnection, type RedisClient } from '../core/connection.js';
import { queueKeys } from '../core/keys.js';
import { Code, MIGRATE_REASONS } from '../core/errors.js';
import { JobField, JobStateCode, MetaField } from '../core/fields.js';
import { lifecycleScripts, type ChildOutcome } from '../scripts/lifecycle.js';
import { redisNowMs } from '../core/values.js';
import * as v from '../core/validate.js';
import { globEscape, layoutRefusals, MigrationRefusedError, proRefusals, scanKeys, slotRefusals, workerCheck, workerRefusals } from './checks.js';
import { followLoop, streamTail, type FollowProgress, type FollowStats, type PassReason } from './follow.js';
import { BULL_STATES, moveKeys, moveScripts, type BullState, type MoveKeys, type Refused } from './scripts.js';
import { CANNOT_LISTED, moveSchedulerSet, noteCannot as note, queueLines, runLines, validateMove, type MoveOptions, type QueueMoveCounts, type StateCount } from './report.js';

export type { CannotMove, MoveOptions, StateCount } from './report.js';

export interface MigrateOptions extends MoveOptions {
  /**
   * Keep moving what BullMQ's producers still add, and what BullMQ's workers finish, until
   * `signal` aborts (BullMQ workers may run meanwhile: jobs they hold stay theirs).
   */
  follow?: boolean;
  /** Ends following: the pass in hand finishes, one last pass runs, the report is returned. */
  signal?: AbortSignal;
  /** Following: ms between sweeps run without a BullMQ event (1000..3600000). Default 30000. */
  sweepMs?: number;
  /**
   * echomq's id counter is raised to BullMQ's plus this gap at every pass, so ids the two
   * systems generate meanwhile do not meet (0..1e12). Default 1,000,000 when following, else 0.
   */
  idGap?: number;
  /** Following: called after every pass with a progress line's numbers. */
  onPass?: (p: FollowProgress) => void;
}

/** Why a job, scheduler or deduplication id stays in BullMQ, by the scripts' status code. */
export const REFUSAL_REASONS = MIGRATE_REASONS;

export interface QueueMigration extends QueueMoveCounts<BullState> {
  /** BullMQ's id counter and echomq's after the move (new ids start above both). */
  ids: { bullmq: number; echomq: number };
  /** Finished children whose outcome went to a parent moved before they finished. */
  delivered: number;
}

export interface MigrationReport {
  dryRun: boolean;
  prefix: string;
  bullmqPrefix: string;
  queues: QueueMigration[];
  /** Why the move is refused (a dry run reports them; a move throws MigrationRefusedError). */
  refusals: string[];
  /** Moved (or would move) jobs over all queues and states. */
  jobs: number;
  /** echomq worker connections seen on the queues; refusals passed over with force. */
  workers: { echomq: number; forced: string[]; bullmq?: string[] };
  /** Following: its passes, wake-ups and any id collision met. */
  follow?: FollowStats;
  /** Redis clock minus this process's clock, ms: BullMQ's due times were on producers' clocks. */
  clockOffsetMs: number;
  durationMs: number;
}

type Valid = Required<Omit<MigrateOptions, 'connection' | 'signal' | 'onPass'>>;

function validate(o: MigrateOptions): Valid {
  const base = validateMove(o, { queues: 'a non-empty array of BullMQ queue names', queue: "a BullMQ queue name (BullMQ's names hold no ':')" }, 50);
  const follow = o.follow === undefined ? false : v.boolean('follow', o.follow);
  if (o.signal !== undefined && !(o.signal instanceof AbortSignal)) v.fail('signal', 'an AbortSignal', o.signal);
  if (o.onPass !== undefined && typeof o.onPass !== 'function') v.fail('onPass', 'a function', o.onPass);
  if (follow && o.dryRun === true) v.fail('follow', 'false with dryRun (a dry run changes nothing to follow)', o.follow);
  return {
    follow,
    sweepMs: o.sweepMs === undefined ? 30_000 : v.integerIn('sweepMs', o.sweepMs, 1000, 3_600_000),
    idGap: o.idGap === undefined ? (follow ? 1_000_000 : 0) : v.integerIn('idGap', o.idGap, 0, 1e12),
    ...base,
  };
}

function emptyReport(queue: string): QueueMigration {
  const states = Object.fromEntries(BULL_STATES.map((s) => [s, { moved: 0, left: 0 }])) as Record<BullState, StateCount>;
  return { queue, states, schedulers: { moved: 0, left: 0 }, deduplication: { moved: 0 }, ids: { bullmq: 0, echomq: 0 }, paused: false, delivered: 0, cannot: [], cannotCount: 0 };
}

function noteCannot(r: QueueMigration, what: string, refused: readonly Refused[]): void {
  note(r, what, refused, REFUSAL_REASONS);
}

/** Moves (or, dry, examines) every job of one BullMQ state of one queue. */
async function moveState(client: RedisClient, keys: MoveKeys, state: BullState, o: { dryRun: boolean; batchSize: number; queues: string[] }, r: QueueMigration): Promise<void> {
  const big = await movePass(client, keys, state, o, r);
  if (big.length === 0) return;
  // Flow parents with more children than one call moves: their finished children go ahead of
  // them in bounded steps (migrateDeps), then a second pass moves them with the rest.
  for (const id of big) {
    let left = 1;
    for (let guard = 0; left > 0 && guard < 100_000; guard++) left = await moveScripts.deps(client, keys, id, Math.min(o.batchSize * 5, 1000));
  }
  await movePass(client, keys, state, o, r, new Set(big));
}

/**
 * One pass over a state; returns the ids refused as too big for one call, which it does not
 * report. A second pass (`again`: those ids) reports only what it refuses of them: the first
 * pass reported the others.
 */
async function movePass(
  client: RedisClient, keys: MoveKeys, state: BullState, o: { dryRun: boolean; batchSize: number; queues: string[] }, r: QueueMigration,
  again?: ReadonlySet<string>,
): Promise<string[]> {
  let skip = 0;
  let left = 0;
  const big: string[] = [];
  // Lists keep refused jobs at the serving end, so the window passes them (O(skip) a call):
  // past this many the rest of the list waits for the next run.
  const MAX_SKIP = 5000;
  for (;;) {
    const res = await moveScripts.jobs(client, keys, state, o.batchSize, skip, o.dryRun, o.queues);
    r.states[state].moved += res.moved;
    await deliver(client, keys, res.refused.filter((x) => x.code > 0).map((x) => x.id), r);
    res.refused = res.refused.filter((x) => x.code < 0);
    const tooBig = again ? [] : res.refused.filter((x) => x.code === Code.MIGRATE_TOO_BIG);
    // A dry run counts such a parent as moving (in steps); a move takes it in the second pass.
    if (o.dryRun) r.states[state].moved += tooBig.length;
    else big.push(...tooBig.map((x) => x.id));
    noteCannot(r, state, res.refused.filter((x) => (again ? again.has(x.id) : !tooBig.includes(x))));
    left = res.left;
    if (res.examined === 0) break;
    skip += o.dryRun ? res.examined : res.refused.length;
    if (skip > MAX_SKIP || (o.dryRun && skip >= res.left)) break;
  }
  r.states[state].left = o.dryRun ? left - r.states[state].moved : left;
  return big;
}

/**
 * Finished children moved after their parent (a BullMQ worker finished them once the parent was
 * in echomq, and BullMQ, finding the parent's records gone, told no one): their outcome goes to
 * the parent as echomq's own settle would send it (resolveChild, counted once however often).
 */
async function deliver(client: RedisClient, keys: MoveKeys, ids: readonly string[], r: QueueMigration): Promise<void> {
  for (const id of ids) {
    const jk = `${keys.jobBase}${id}`;
    const [pid, pq, pol, st, rv, err] = await client.hmget(jk, JobField.parentId, JobField.parentQueue, JobField.parentPolicy, JobField.state, JobField.returnValue, JobField.failedReason);
    if (!pid || !pq) continue;
    let kind: ChildOutcome;
    if (st === JobStateCode.completed) kind = 'c';
    else if (pol === 'i' || pol === 'f' || pol === 'd') kind = pol;
    else if (pol === 'c') kind = 'x';
    else continue; // no policy: the parent keeps waiting, as for a child failed in echomq
    const res = await lifecycleScripts.resolveChild({ client, keys: queueKeys(pq, keys.prefix) }, { parentId: pid, childKey: jk, kind, value: kind === 'c' ? (rv ?? 'null') : (err ?? '') });
    if (res.status === 1) r.delivered++;
  }
}

async function moveSchedulers(client: RedisClient, keys: MoveKeys, dryRun: boolean, r: QueueMigration): Promise<void> {
  await moveSchedulerSet(client, `${keys.bullBase}repeat`, dryRun, r, (id) => moveScripts.scheduler(client, keys, id, dryRun), (id, code) => noteCannot(r, 'scheduler', [{ id, code }]));
}

async function moveDedup(client: RedisClient, keys: MoveKeys, dryRun: boolean, r: QueueMigration): Promise<void> {
  const base = `${keys.bullBase}de:`;
  await scanKeys(client, `${globEscape(base)}*`, async (found) => {
    const ids = found.map((k) => k.slice(base.length));
    for (let i = 0; i < ids.length; i += 500) {
      const res = await moveScripts.dedup(client, keys, ids.slice(i, i + 500), dryRun);
      r.deduplication.moved += res.moved;
      noteCannot(r, 'deduplication', res.refused);
    }
    return true;
  });
}

/**
 * Moves BullMQ queues into echomq: jobs in every state with their ids, history, logs and flow
 * links, job schedulers, deduplication ids and the queue's settings. Refuses (MigrationRefusedError,
 * nothing written) while BullMQ workers run on the queues, when keys could collide, and on a
 * Cluster when a queue's two layouts are in different slots.
 */
export async function migrateFromBullMQ(options: MigrateOptions): Promise<MigrationReport> {
  const o = validate(options);
  const started = Date.now();
  const conn = openConnection(options.connection);
  try {
    const client = await conn.initializing;
    const w = await workerCheck(client, o.queues, o.prefix, o.bullmqPrefix);
    // Soft: the check cannot tell; --force goes on past them (and the report names them).
    // Following expects BullMQ's workers to run: the report names them instead.
    const soft = o.follow ? [] : workerRefusals({ bullmq: [], unknown: w.unknown, echomq: 0, unreadable: w.unreadable });
    const refusals = [
      ...(await layoutRefusals(client, o.queues, o.prefix, o.bullmqPrefix)), ...(await slotRefusals(client, o.queues, o.prefix, o.bullmqPrefix)),
      ...(await proRefusals(client, o.queues, o.bullmqPrefix)),
      ...(o.follow ? [] : workerRefusals({ bullmq: w.bullmq, unknown: [], echomq: 0 })), ...(o.force ? [] : soft),
    ];
    // A dry run reports the refusals with what would move; a move writes nothing.
    if (refusals.length > 0 && !o.dryRun) throw new MigrationRefusedError(refusals);
    const clockOffsetMs = (await redisNowMs(client)) - Date.now();

    const keys = o.queues.map((q) => moveKeys(q, o.prefix, o.bullmqPrefix));
    // Following starts after the streams' newest entries: what comes later wakes it.
    const streams = keys.map((k) => `${k.bullBase}events`);
    const from = o.follow ? await Promise.all(streams.map((s) => streamTail(client, s))) : [];
    const reports = await movePassAll(client, keys, o, 'first');
    const report: MigrationReport = {
      dryRun: o.dryRun, prefix: o.prefix, bullmqPrefix: o.bullmqPrefix, queues: reports, jobs: countJobs(reports), refusals,
      workers: { echomq: w.echomq, forced: o.force ? soft : [], ...(o.follow ? { bullmq: [...w.bullmq, ...w.unknown] } : {}) },
      clockOffsetMs, durationMs: 0,
    };
    if (o.follow) {
      const stats: FollowStats = { passes: 0, wakes: 0, sweeps: 0, events: 0, collisions: [], durationMs: 0 };
      report.follow = stats;
      noteCollisions(stats, reports);
      await followLoop({
        client, streams, from, sweepMs: o.sweepMs, signal: options.signal, stats,
        pass: async (reason: PassReason) => {
          const pass = await movePassAll(client, keys, o, reason);
          const moved = countJobs(pass);
          noteCollisions(stats, pass);
          report.queues = report.queues.map((r, i) => mergePass(r, pass[i]!));
          report.jobs += moved;
          options.onPass?.({
            reason, moved, total: report.jobs, stats,
            left: pass.reduce((n, q) => n + Object.values(q.states).reduce((m, c) => m + c.left, 0), 0),
            heldByBullMQ: pass.reduce((n, q) => n + q.states.active.left, 0),
          });
        },
      });
    }
    report.durationMs = Date.now() - started;
    return report;
  } finally {
    await conn.close();
  }
}

const countJobs = (qs: readonly QueueMigration[]): number => qs.reduce((n, r) => n + Object.values(r.states).reduce((m, s) => m + s.moved, 0), 0);

/**
 * One pass over every queue: ids, settings (first pass only), schedulers, flows, states, and
 * deduplication ids (a SCAN of the keyspace: not on passes woken by events, only on the
 * first, the sweeps and the last).
 */
async function movePassAll(client: RedisClient, keys: readonly MoveKeys[], o: Valid, reason: PassReason): Promise<QueueMigration[]> {
  const first = reason === 'first';
  const reports = o.queues.map(emptyReport);
  // Ids first, so no id echomq generates meanwhile can take a BullMQ job's; while following,
  // BullMQ's producers still draw ids, so echomq's stay `idGap` above BullMQ's at every pass.
  for (const [i, k] of keys.entries()) {
    const bullId = Number((await client.get(`${k.bullBase}id`)) ?? '0') || 0;
    reports[i]!.ids.bullmq = bullId;
    reports[i]!.ids.echomq = o.dryRun ? Math.max(bullId, Number((await client.hget(k.meta, MetaField.lastId)) ?? '0')) : await moveScripts.raiseJobId(client, queueKeys(k.queue, o.prefix), bullId + o.idGap);
    if (first) {
      const meta = await moveScripts.meta(client, k, o.dryRun);
      reports[i]!.paused = meta.paused;
      if (meta.concurrency !== undefined) reports[i]!.concurrency = meta.concurrency;
      if (meta.rateMax !== undefined && meta.rateDuration !== undefined) reports[i]!.rateLimit = { max: meta.rateMax, duration: meta.rateDuration };
    }
    await moveSchedulers(client, k, o.dryRun, reports[i]!);
  }
  // Flow parents of every queue before any child, so a child never reports to a parent not
  // moved yet; then each queue's states in BullMQ's serving order.
  for (const [i, k] of keys.entries()) await moveState(client, k, 'waiting-children', o, reports[i]!);
  for (const [i, k] of keys.entries()) {
    for (const s of BULL_STATES) if (s !== 'waiting-children') await moveState(client, k, s, o, reports[i]!);
    if (reason !== 'event') await moveDedup(client, k, o.dryRun, reports[i]!);
  }
  return reports;
}

/** A later pass added to the run's report: counts add up, what stays is the latest pass's. */
function mergePass(r: QueueMigration, p: QueueMigration): QueueMigration {
  const states = Object.fromEntries(BULL_STATES.map((s) => [s, { moved: r.states[s].moved + p.states[s].moved, left: p.states[s].left }])) as Record<BullState, StateCount>;
  return {
    ...r, states, ids: p.ids, delivered: r.delivered + p.delivered, cannot: p.cannot, cannotCount: p.cannotCount,
    schedulers: { moved: r.schedulers.moved + p.schedulers.moved, left: p.schedulers.left },
    deduplication: { moved: r.deduplication.moved + p.deduplication.moved },
  };
}

/** Ids echomq already held when BullMQ's job came to move: named once each, never overwritten. */
function noteCollisions(stats: FollowStats, qs: readonly QueueMigration[]): void {
  for (const q of qs) {
    for (const c of q.cannot) {
      if (c.code !== Code.MIGRATE_ID_TAKEN || stats.collisions.length >= CANNOT_LISTED) continue;
      if (!stats.collisions.some((x) => x.id === c.id && x.what === `${q.queue} ${c.what}`)) stats.collisions.push({ ...c, what: `${q.queue} ${c.what}` });
    }
  }
}

/** The report as text for people (the CLI's output without --json). */
export function migrationText(r: MigrationReport): string {
  const verb = r.dryRun ? 'would move' : 'moved';
  const lines: string[] = [];
  for (const q of r.queues) {
    lines.push(...queueLines(q, BULL_STATES, { verb, from: r.bullmqPrefix, to: r.prefix, dryRun: r.dryRun, stays: 'BullMQ' },
      [`  ids               BullMQ's counter ${q.ids.bullmq}; echomq generates ids above ${q.ids.echomq}`],
      q.delivered > 0 ? [`  flow children     ${q.delivered} outcomes delivered to parents moved before the child finished`] : []));
  }
  lines.push(...runLines(r));
  if (r.follow) {
    const f = r.follow;
    lines.push(`followed ${Math.round(f.durationMs / 1000)} s: ${f.passes} passes (${f.wakes} woken by ${f.events} BullMQ events, ${f.sweeps} sweeps)`);
    for (const c of f.collisions) lines.push(`  id collision: ${c.what} ${c.id}: ${c.reason} (left in BullMQ, not overwritten)`);
    if ((r.workers.bullmq ?? []).length > 0) lines.push(`BullMQ worker connections seen at the start: ${r.workers.bullmq!.join(', ')}`);
  }
  lines.push(`${r.jobs} jobs ${verb} in ${r.durationMs} ms (Redis clock ${r.clockOffsetMs >= 0 ? '+' : ''}${r.clockOffsetMs} ms from this host's)`);
  return lines.join('\n') + '\n';
}
