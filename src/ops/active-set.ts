/**
 * Reading the state sets outside the scripts. Since layout 2 `active` holds, besides the jobs,
 * one sentinel member at score +inf (ACTIVE_SENTINEL, src/core/layout.ts) that keeps the set a
 * skiplist: counts and rank windows read `active` by score below +inf, so they see the jobs
 * alone, in the same order and at the same ranks as before. Other sets are read by rank.
 */
import type { ChainableCommander } from 'ioredis';
import type { RedisClient } from '../core/connection.js';
import type { QueueKeys } from '../core/keys.js';
import { ACTIVE_BELOW } from '../core/layout.js';

const [MIN, MAX] = ACTIVE_BELOW;

/** The jobs in the queue's active set. */
export const activeCount = (client: RedisClient, keys: QueueKeys): Promise<number> => client.zcount(keys.active, MIN, MAX);

/** Queues the size of a state set on a MULTI or pipeline: ZCARD, for `active` its jobs. */
export function countSet(m: ChainableCommander, keys: QueueKeys, key: string): ChainableCommander {
  return key === keys.active ? m.zcount(key, MIN, MAX) : m.zcard(key);
}

/** The size of a state set (as countSet, in its own call). */
export const setSize = (client: RedisClient, keys: QueueKeys, key: string): Promise<number> =>
  key === keys.active ? client.zcount(key, MIN, MAX) : client.zcard(key);

/**
 * Members at ranks from…to (non-negative, inclusive) of a state set's ascending order, or of
 * its descending order when asc is false. `active` is ranked among its jobs only: a score range
 * with LIMIT, which walks `from` members (that set is as small as the workers' concurrency).
 */
export function setWindow(client: RedisClient, keys: QueueKeys, key: string, from: number, to: number, asc: boolean): Promise<string[]> {
  if (key !== keys.active) return asc ? client.zrange(key, from, to) : client.zrevrange(key, from, to);
  const n = to - from + 1;
  return asc ? client.zrangebyscore(key, MIN, MAX, 'LIMIT', from, n) : client.zrevrangebyscore(key, MAX, MIN, 'LIMIT', from, n);
}

/** setWindow with scores: a flat member, score, member, score… list. */
export function setWindowWithScores(client: RedisClient, keys: QueueKeys, key: string, from: number, to: number, asc: boolean): Promise<string[]> {
  if (key !== keys.active) return asc ? client.zrange(key, from, to, 'WITHSCORES') : client.zrevrange(key, from, to, 'WITHSCORES');
  const n = to - from + 1;
  return asc
    ? client.zrangebyscore(key, MIN, MAX, 'WITHSCORES', 'LIMIT', from, n)
    : client.zrevrangebyscore(key, MAX, MIN, 'WITHSCORES', 'LIMIT', from, n);
}
