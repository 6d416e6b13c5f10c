/**
 * What the move from BullMQ and the move back share: the options' validation, the list of
 * what stays, the scheduler loop and the report's common text lines. Each direction passes
 * its own words (which system the queues come from, where refused jobs stay).
 */
import type { ConnectionInput, RedisClient } from '../core/connection.js';
import { DEFAULT_PREFIX } from '../core/keys.js';
import * as v from '../core/validate.js';
import type { Refused } from './scripts.js';

/** The options both directions take. */
export interface MoveOptions {
  /** An ioredis client (shared, not closed), a URL or connection options. */
  connection?: ConnectionInput;
  /** The BullMQ queue names to move (each becomes the echomq queue of the same name). */
  queues: string[];
  /** echomq's key prefix. Default 'emq'. */
  prefix?: string;
  /** BullMQ's key prefix. Default 'bull'. */
  bullmqPrefix?: string;
  /** Report what would move and what cannot, and change nothing. */
  dryRun?: boolean;
  /** Go on when the worker check cannot tell (CLIENT LIST denied, or Redis < 7.2 under one prefix). */
  force?: boolean;
  /** Jobs examined per script call (1..1000). Default 50: about 1.7 ms of Redis CPU a call for 1 KB jobs (bench/migrate.mjs). */
  batchSize?: number;
}

export interface StateCount {
  /** Moved (in a dry run: would move). */
  moved: number;
  /** Still in BullMQ's structure after the move (refused jobs). */
  left: number;
}

export interface CannotMove {
  /** BullMQ state, 'scheduler' or 'deduplication'. */
  what: string;
  id: string;
  code: number;
  reason: string;
}

/** Entries of `cannot` listed per queue (`cannotCount` has them all). */
export const CANNOT_LISTED = 100;

/** The per-queue fields both directions' reports hold, `S` the states the direction takes. */
export interface QueueMoveCounts<S extends string = string> {
  queue: string;
  states: Record<S, StateCount>;
  /** Job schedulers (moved before the jobs, so a slot's job finds its scheduler where it lands). */
  schedulers: StateCount;
  /** Live deduplication ids moved (after the jobs that hold them). */
  deduplication: { moved: number };
  paused: boolean;
  concurrency?: number;
  rateLimit?: { max: number; duration: number };
  /** What stays where it was, at most 100 entries per queue (cannotCount has them all). */
  cannot: CannotMove[];
  cannotCount: number;
}

export type ValidMove = Required<Omit<MoveOptions, 'connection'>>;

/** Validates the options both directions take; `names` says whose queue names they are. */
export function validateMove(o: MoveOptions, names: { queues: string; queue: string }, batchDefault: number): ValidMove {
  v.plainObject('options', o);
  if (!Array.isArray(o.queues) || o.queues.length === 0) v.fail('queues', names.queues, o.queues);
  const queues = o.queues.map((q, i) => {
    const name = v.queueName(q, `queues[${i}]`);
    if (name.includes(':')) v.fail(`queues[${i}]`, names.queue, q);
    return name;
  });
  if (new Set(queues).size !== queues.length) v.fail('queues', 'distinct queue names', o.queues);
  return {
    queues,
    prefix: o.prefix === undefined ? DEFAULT_PREFIX : v.prefix(o.prefix),
    bullmqPrefix: o.bullmqPrefix === undefined ? 'bull' : v.nonEmptyString('bullmqPrefix', o.bullmqPrefix, 256),
    dryRun: o.dryRun === undefined ? false : v.boolean('dryRun', o.dryRun),
    force: o.force === undefined ? false : v.boolean('force', o.force),
    batchSize: o.batchSize === undefined ? batchDefault : v.integerIn('batchSize', o.batchSize, 1, 1000),
  };
}

/** Adds refused ids to a queue's report, the first CANNOT_LISTED of them by name. */
export function noteCannot(r: QueueMoveCounts, what: string, refused: readonly Refused[], reasons: Readonly<Record<number, string>>): void {
  for (const x of refused) {
    r.cannotCount++;
    if (r.cannot.length < CANNOT_LISTED) r.cannot.push({ what, id: x.id, code: x.code, reason: reasons[x.code] ?? `status ${x.code}` });
  }
}

/**
 * Moves the job schedulers listed in the sorted set `zkey`, one call each (`move` returns the
 * script's code: 1 moved, below 0 refused); `refuse` notes a refused one.
 */
export async function moveSchedulerSet(
  client: RedisClient, zkey: string, dryRun: boolean, r: QueueMoveCounts,
  move: (id: string) => Promise<number>, refuse: (id: string, code: number) => void,
): Promise<void> {
  let skip = 0;
  for (;;) {
    const ids = await client.zrange(zkey, skip, skip + 99);
    if (ids.length === 0) break;
    for (const id of ids) {
      const code = await move(id);
      if (code === 1) r.schedulers.moved++;
      else if (code < 0) refuse(id, code);
      if (code !== 1 || dryRun) skip++;
    }
  }
  r.schedulers.left = (await client.zcard(zkey)) - (dryRun ? r.schedulers.moved : 0);
}

/** The words of one direction in the report's text. */
export interface MoveWords {
  verb: string;
  /** Where a queue's data goes: `from → to`. */
  from: string;
  to: string;
  dryRun: boolean;
  /** The system refused jobs stay in. */
  stays: string;
}

/** A queue's lines: states, schedulers, deduplication, then `middle`, settings, `end` and what cannot move. */
export function queueLines(q: QueueMoveCounts, states: readonly string[], w: MoveWords, middle: readonly string[], end: readonly string[]): string[] {
  const lines = [`queue ${q.queue} (${w.from} → ${w.to})${w.dryRun ? ' [dry run: nothing changed]' : ''}`];
  for (const s of states) {
    const c = q.states[s]!;
    if (c.moved > 0 || c.left > 0) lines.push(`  ${s.padEnd(17)} ${w.verb} ${c.moved}${c.left > 0 ? `, ${c.left} stay in ${w.stays}` : ''}`);
  }
  lines.push(`  schedulers        ${w.verb} ${q.schedulers.moved}${q.schedulers.left > 0 ? `, ${q.schedulers.left} stay in ${w.stays}` : ''}`);
  lines.push(`  deduplication ids ${w.verb} ${q.deduplication.moved}`);
  lines.push(...middle);
  const settings = [q.paused ? 'paused' : '', q.concurrency !== undefined ? `concurrency ${q.concurrency}` : '',
    q.rateLimit ? `rate limit ${q.rateLimit.max} per ${q.rateLimit.duration} ms` : ''].filter(Boolean);
  if (settings.length > 0) lines.push(`  settings          ${settings.join(', ')}`);
  lines.push(...end);
  if (q.cannotCount > 0) {
    lines.push(`  cannot move ${q.cannotCount}:`);
    for (const c of q.cannot) lines.push(`    ${c.what} ${c.id}: ${c.reason}`);
    if (q.cannotCount > q.cannot.length) lines.push(`    … ${q.cannotCount - q.cannot.length} more`);
  }
  return lines;
}

/** The run's lines after the queues': refusals and what was forced past. */
export function runLines(r: { refusals: readonly string[]; workers: { forced: readonly string[] } }): string[] {
  return [...r.refusals.map((f) => `the move would be refused: ${f}`), ...r.workers.forced.map((f) => `forced past: ${f}`)];
}
