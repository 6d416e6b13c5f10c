/**
 * The version of the stored layout (keys, hash fields, encodings) that docs/protocol.md
 * describes. Clients of every language compare it with the one a queue's meta hash records
 * and stop on a mismatch instead of guessing. Version 2 added the active set's sentinel.
 */
export const LAYOUT_VERSION = 2;

/** The stored version that upgradeLayout.lua (Queue.upgradeLayout) moves to LAYOUT_VERSION. */
export const UPGRADES_FROM = 1;

/**
 * The active set's sentinel (layout 2; lib/common.lua ACTIVE_SENTINEL): a permanent member at
 * score +inf, longer than zset-max-listpack-value (64 bytes), so Redis keeps `active` as a
 * skiplist and a lease ZADD/ZREM no longer scans the set. It is no job: every reader counts and
 * ranges `active` below +inf (ACTIVE_BELOW), and no job may take this id.
 */
export const ACTIVE_SENTINEL = '~'.repeat(72);

/** The score bounds of the jobs in `active` (ZCOUNT / ZRANGEBYSCORE): the sentinel is at +inf. */
export const ACTIVE_BELOW = ['-inf', '(+inf'] as const;
