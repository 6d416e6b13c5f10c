/**
 * The scripts of the move from BullMQ (src/scripts/migrate*.lua, raiseJobId.lua) and their
 * keys: echomq's queue keys plus `bullBase`, BullMQ's `<prefix>:<queue>:` that the scripts
 * build BullMQ's keys from (docs/protocol.md "Moving a BullMQ queue").
 */
import { queueKeys, type QueueKeys } from '../core/keys.js';
import type { RedisClient } from '../core/connection.js';
import { bindScript, type ScriptContext } from '../scripts/runner.js';

const calls = {
  migrateJobs: bindScript('migrateJobs'),
  migrateScheduler: bindScript('migrateScheduler'),
  migrateDedup: bindScript('migrateDedup'),
  migrateMeta: bindScript('migrateMeta'),
  migrateDeps: bindScript('migrateDeps'),
  raiseJobId: bindScript('raiseJobId'),
};

/** BullMQ's states in the order it serves them, as migrateJobs takes them. */
export const BULL_STATES = ['waiting-children', 'wait', 'paused', 'prioritized', 'active', 'delayed', 'failed', 'completed'] as const;
export type BullState = (typeof BULL_STATES)[number];

/** echomq's keys of a queue with BullMQ's base beside them. */
export type MoveKeys = QueueKeys & { readonly bullBase: string; readonly bullPrefix: string };

/** BullMQ's base of a queue's keys: `<prefix>:<queue>:`. */
export const bullBase = (bullPrefix: string, queue: string): string => `${bullPrefix}:${queue}:`;

export function moveKeys(queue: string, prefix: string, bullPrefix: string): MoveKeys {
  return Object.freeze({ ...queueKeys(queue, prefix), bullBase: bullBase(bullPrefix, queue), bullPrefix });
}

/** A job or id the scripts left in BullMQ, with its status code. */
export interface Refused {
  id: string;
  code: number;
}

export interface JobsReply {
  examined: number;
  moved: number;
  left: number;
  refused: Refused[];
}

/** The (id, code) pairs a script reply lists from index `from` on: what the call refused. */
export function pairs(r: unknown[], from: number): Refused[] {
  const out: Refused[] = [];
  for (let i = from; i + 1 < r.length; i += 2) out.push({ id: String(r[i]), code: Number(r[i + 1]) });
  return out;
}

export const moveScripts = {
  async jobs(
    client: RedisClient, keys: MoveKeys, state: BullState, limit: number, skip: number, dry: boolean, moved: readonly string[],
  ): Promise<JobsReply> {
    const ctx: ScriptContext = { client, keys };
    const r = (await calls.migrateJobs(ctx, [state, limit, skip, dry ? '1' : '0', keys.prefix, keys.bullPrefix, JSON.stringify(moved)])) as unknown[];
    return { examined: Number(r[0]), moved: Number(r[1]), left: Number(r[2]), refused: pairs(r, 3) };
  },
  async scheduler(client: RedisClient, keys: MoveKeys, id: string, dry: boolean): Promise<number> {
    return Number(await calls.migrateScheduler({ client, keys }, [id, dry ? '1' : '0']));
  },
  async dedup(client: RedisClient, keys: MoveKeys, ids: readonly string[], dry: boolean): Promise<{ moved: number; refused: Refused[] }> {
    const r = (await calls.migrateDedup({ client, keys }, [dry ? '1' : '0', ...ids])) as unknown[];
    return { moved: Number(r[0]), refused: pairs(r, 1) };
  },
  async meta(client: RedisClient, keys: MoveKeys, dry: boolean): Promise<{ paused: boolean; concurrency?: number; rateMax?: number; rateDuration?: number }> {
    const r = (await calls.migrateMeta({ client, keys }, [dry ? '1' : '0'])) as string[];
    const n = (s: string | undefined) => (s === undefined || s === '' ? undefined : Number(s));
    return { paused: r[0] === '1', concurrency: n(r[1]), rateMax: n(r[2]), rateDuration: n(r[3]) };
  },
  /** Moves up to `limit` finished-children entries of a big flow parent ahead of it; entries left, or -20. */
  async deps(client: RedisClient, keys: MoveKeys, id: string, limit: number): Promise<number> {
    return Number(await calls.migrateDeps({ client, keys }, [id, limit, keys.prefix, keys.bullPrefix]));
  },
  async raiseJobId(client: RedisClient, keys: QueueKeys, atLeast: number): Promise<number> {
    return Number(await calls.raiseJobId({ client, keys }, [atLeast]));
  },
};
