/**
 * Follow mode of the move from BullMQ (docs/migrating-from-bullmq.md "Switching service by
 * service"): after the first move, BullMQ's producers may still add jobs and its workers may
 * still finish some; the follower moves them on as they come. It is woken by BullMQ's own
 * `events` stream (XREAD BLOCK on a connection of its own), never by BullMQ's `marker`, whose
 * pops are BullMQ workers' wake-ups; a slow sweep catches what a capped stream dropped.
 */
import type { RedisClient } from '../core/connection.js';
import type { CannotMove } from './report.js';

/** Why a pass ran: events on BullMQ's stream, the periodic sweep, or the last pass at stop. */
export type PassReason = 'first' | 'event' | 'sweep' | 'stop';

/** A job whose id echomq already held when it came to move (`what`: the queue and the BullMQ state it stays in). */
export type Collision = CannotMove;

export interface FollowStats {
  /** Passes run after the first move (the last one at stop included). */
  passes: number;
  /** Passes woken by BullMQ's events. */
  wakes: number;
  /** Passes run by the sweep timer. */
  sweeps: number;
  /** BullMQ events read from the streams. */
  events: number;
  /** Jobs whose id echomq already held when they came to move (left in BullMQ, never overwritten). */
  collisions: Collision[];
  durationMs: number;
}

/** One line of progress, handed to `onPass` after every pass. */
export interface FollowProgress {
  reason: PassReason;
  /** Jobs this pass moved. */
  moved: number;
  /** Jobs moved since the start, the first move included. */
  total: number;
  /** Jobs still in BullMQ's structures after this pass (jobs BullMQ's workers hold among them). */
  left: number;
  /** Of them, active under a live BullMQ lock. */
  heldByBullMQ: number;
  stats: FollowStats;
}

/** The newest id of a stream ('0-0' when it is empty or absent): following starts after it. */
export async function streamTail(client: RedisClient, key: string): Promise<string> {
  const r = (await client.xrevrange(key, '+', '-', 'COUNT', 1)) as Array<[string, string[]]>;
  return r.length > 0 ? r[0]![0] : '0-0';
}

export interface FollowLoop {
  client: RedisClient;
  /** BullMQ's `<prefix>:<queue>:events` of each moved queue, and the id each was read up to. */
  streams: string[];
  from: string[];
  sweepMs: number;
  signal?: AbortSignal;
  /** Runs one pass of the move; resolves when it is done. */
  pass: (reason: PassReason) => Promise<void>;
  stats: FollowStats;
}

/**
 * Waits on BullMQ's streams and runs a pass for each batch of events and at each sweep, until
 * the signal aborts; the pass in hand is finished, and one last pass moves what came before the
 * stop. The blocking read has its own connection, closed at stop to end the wait at once.
 */
export async function followLoop(f: FollowLoop): Promise<void> {
  const started = Date.now();
  const blocker = f.client.duplicate() as RedisClient;
  const stop = () => blocker.disconnect();
  f.signal?.addEventListener('abort', stop, { once: true });
  const ids = [...f.from];
  let sweepAt = Date.now() + f.sweepMs;
  try {
    while (!f.signal?.aborted) {
      let reply: Array<[string, Array<[string, string[]]>]> | null;
      try {
        const wait = Math.max(1, sweepAt - Date.now());
        reply = (await blocker.xread('COUNT', 1000, 'BLOCK', wait, 'STREAMS', ...f.streams, ...ids)) as typeof reply;
      } catch (err) {
        if (f.signal?.aborted) break;
        throw err;
      }
      let reason: PassReason = 'sweep';
      if (reply && reply.length > 0) {
        for (const [key, entries] of reply) {
          const i = f.streams.indexOf(key);
          if (i >= 0 && entries.length > 0) ids[i] = entries[entries.length - 1]![0];
          f.stats.events += entries.length;
        }
        reason = 'event';
        f.stats.wakes++;
      } else {
        f.stats.sweeps++;
      }
      if (reason === 'sweep' || Date.now() >= sweepAt) sweepAt = Date.now() + f.sweepMs;
      f.stats.passes++;
      await f.pass(reason);
    }
    f.stats.passes++;
    await f.pass('stop');
  } finally {
    f.signal?.removeEventListener('abort', stop);
    blocker.disconnect();
    f.stats.durationMs = Date.now() - started;
  }
}
