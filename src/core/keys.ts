/**
 * The one place that builds Redis keys. No other file joins key parts with ':'.
 *
 * Every key of a queue is `<prefix>:{<queue>}:<suffix>` so that all of them share one Redis
 * Cluster hash slot. User strings stay unambiguous:
 *   - the queue name is escaped inside the hash tag (`%` → `%25`, `{` → `%7B`, `}` → `%7D`),
 *     so the tag always ends at the queue's own closing brace and `a}:x` cannot reach queue `a`;
 *   - a per-lane or per-job key is a fixed family prefix followed by the raw user string as its
 *     last part (`lane:<lane>`, `job:<id>`, `logs:<id>`). No family prefix is a prefix of another
 *     and no fixed suffix contains ':', so two keys are equal only when family and string are.
 *     A lane called `x:weight` is the key `…:lane:x:weight`, which nothing else can be; lane
 *     settings live in hash fields, never in keys built from the lane name.
 *
 * Derived keys. Lua scripts build these from a base they receive in KEYS (same hash tag):
 *   laneBase  + lane  → zset of the lane's ready jobs          (lane:<lane>; absent for a
 *                       one-job lane, whose job is a field of the fixed `lone` hash)
 *   jobBase   + id    → hash of one job                        (job:<id>)
 *   logsBase  + id    → list of one job's log lines            (logs:<id>)
 *   lrateBase + lane  → the lane's rate-window counter, PX ttl  (lrate:<lane>)
 *   schedBase + id    → hash of one job scheduler              (sched:<id>)
 *   depsBase  + id    → hash of a parent job's children         (deps:<id>)
 *                       (child job key → status letter + value, docs/schedulers-and-flows.md)
 *   reqBase   + rid   → string: what request <rid> decided, PX = the applied-once window
 *                       (req:<rid>; lib/once.lua, docs/protocol.md "Applied once")
 *
 * Deduplication ids are user strings too, but they never enter a key: they are fields of the
 * fixed `dedup` hash (id → job id) and members of the fixed `dedupx` zset (throttle expiry),
 * so obliterate can drop them with two fixed keys.
 */

/** Default key prefix. */
export const DEFAULT_PREFIX = 'emq';

/** Escapes a queue name so that it can sit inside `{…}` without ending the hash tag early. */
export function escapeQueueName(name: string): string {
  return name.replace(/[%{}]/g, (c) => (c === '%' ? '%25' : c === '{' ? '%7B' : '%7D'));
}

/** Inverse of escapeQueueName. */
export function unescapeQueueName(escaped: string): string {
  return escaped.replace(/%(25|7B|7D)/g, (_m, h: string) => (h === '25' ? '%' : h === '7B' ? '{' : '}'));
}

export interface QueueKeys {
  /** Queue name as given by the user. */
  readonly queue: string;
  readonly prefix: string;
  /** `<prefix>:{<escaped queue>}:` — every key of the queue starts with this. */
  readonly base: string;
  /** Hash: paused, counters (seq, lseq, id, ready, readyP), global limits. */
  readonly meta: string;
  /** List: the ring of serviceable lanes, rotated by the claim. */
  readonly ring: string;
  /** Set: lanes currently in the ring (O(1) membership), but for the one-job lanes of `lone`. */
  readonly inring: string;
  /**
   * Hash lane → `<priority>:<member>`: a one-job lane, whose only ready job came with a
   * multi-lane add into the empty lane. Such a lane has no lane:<lane> sorted set and is in the
   * ring but not in `inring` (docs/internals.md, one-job lanes). The field '' is not a lane.
   */
  readonly lone: string;
  /** Sorted set (score 0): every known lane, for paged listing by name. */
  readonly lanes: string;
  /** Hash lane → weight (absent = 1). */
  readonly lweight: string;
  /** Hash lane → concurrency limit (absent = none). */
  readonly llimit: string;
  /** Hash lane → jobs of the lane in `active`. */
  readonly lactive: string;
  /** Set of paused lanes. */
  readonly lpaused: string;
  /** Hash lane → rate limit "max:durationMs". */
  readonly lrate: string;
  /** Set of lanes with any setting (weight, limit or rate): the claim reads settings only for these. */
  readonly lcfg: string;
  /** Sorted set lane → time (ms) its rate window reopens; such lanes are out of the ring. */
  readonly rlwait: string;
  /** Sorted set job id → lease deadline (ms, Redis clock). */
  readonly active: string;
  /** Sorted set job id → due time (ms, Redis clock). */
  readonly delayed: string;
  /** Sorted set job id → finish time (ms). */
  readonly completed: string;
  /** Sorted set job id → finish time (ms). */
  readonly failed: string;
  /** Stream of queue events, capped. */
  readonly events: string;
  /** String: jobs claimed in the current global rate window (PX ttl = the window). */
  readonly rate: string;
  /** List idle workers block on (BLPOP); holds at most one token. */
  readonly wake: string;
  /** Hash deduplication id → id of the job that holds it (see docs/events.md#deduplication). */
  readonly dedup: string;
  /** Sorted set deduplication id → time (ms, Redis clock) its throttle window ends. */
  readonly dedupx: string;
  /** Sorted set job scheduler id → its next slot (ms, Redis clock). */
  readonly scheds: string;
  /** Sorted set parent job id → creation time: parents in state waiting-children. */
  readonly wchildren: string;
  /** Sorted set of child outcomes for parents in other queues (JSON entry → time written). */
  readonly outbox: string;
  /** Hash of the completed-jobs metrics (BullMQ's: count, prevTS, prevCount); written only by workers with `metrics`. */
  readonly metricsCompleted: string;
  /** List of per-minute completed counts, newest first, trimmed to the worker's maxDataPoints. */
  readonly metricsCompletedData: string;
  /** As metricsCompleted, for failed jobs. */
  readonly metricsFailed: string;
  /** As metricsCompletedData, for failed jobs. */
  readonly metricsFailedData: string;
  /** Base for sched:<id> hashes (job schedulers). */
  readonly schedBase: string;
  /** Base for deps:<id> hashes (a parent's children and their outcomes). */
  readonly depsBase: string;
  /** Base for lane:<lane> sorted sets. */
  readonly laneBase: string;
  /** Base for job:<id> hashes. */
  readonly jobBase: string;
  /** Base for logs:<id> lists. */
  readonly logsBase: string;
  /** Base for lrate:<lane> counters. */
  readonly lrateBase: string;
  /** Base for req:<request id> records of applied-once calls (expire with the window). */
  readonly reqBase: string;
}

export function queueKeys(queue: string, prefix: string = DEFAULT_PREFIX): QueueKeys {
  const base = `${prefix}:{${escapeQueueName(queue)}}:`;
  const k = (suffix: string) => base + suffix;
  return Object.freeze({
    queue,
    prefix,
    base,
    meta: k('meta'),
    ring: k('ring'),
    inring: k('inring'),
    lone: k('lone'),
    lanes: k('lanes'),
    lweight: k('lweight'),
    llimit: k('llimit'),
    lactive: k('lactive'),
    lpaused: k('lpaused'),
    lrate: k('lrate'),
    lcfg: k('lcfg'),
    rlwait: k('rlwait'),
    active: k('active'),
    delayed: k('delayed'),
    completed: k('completed'),
    failed: k('failed'),
    events: k('events'),
    rate: k('rate'),
    wake: k('wake'),
    dedup: k('dedup'),
    dedupx: k('dedupx'),
    scheds: k('scheds'),
    wchildren: k('wchildren'),
    outbox: k('outbox'),
    metricsCompleted: k('metrics:completed'),
    metricsCompletedData: k('metrics:completed:data'),
    metricsFailed: k('metrics:failed'),
    metricsFailedData: k('metrics:failed:data'),
    schedBase: k('sched:'),
    depsBase: k('deps:'),
    laneBase: k('lane:'),
    jobBase: k('job:'),
    logsBase: k('logs:'),
    lrateBase: k('lrate:'),
    reqBase: k('req:'),
  });
}

export type KeyName = Exclude<keyof QueueKeys, 'queue' | 'prefix' | 'base'>;

export const laneKey = (keys: QueueKeys, lane: string): string => keys.laneBase + lane;
export const jobKey = (keys: QueueKeys, id: string): string => keys.jobBase + id;
export const logsKey = (keys: QueueKeys, id: string): string => keys.logsBase + id;
export const laneRateKey = (keys: QueueKeys, lane: string): string => keys.lrateBase + lane;
export const schedulerKey = (keys: QueueKeys, id: string): string => keys.schedBase + id;
export const depsKey = (keys: QueueKeys, id: string): string => keys.depsBase + id;

/**
 * Queue name of shard `index` of a sharded queue (src/cluster/sharded.ts): `<name>#<index>`, so shard i
 * has the hash tag `{<name>#<index>}` and its own slot. A plain queue must not be named like a
 * shard of a sharded one.
 */
export const shardQueueName = (name: string, index: number): string => `${name}#${index}`;

/**
 * The Redis client name (CLIENT SETNAME) of a connection that serves queue `keys.queue`, as
 * BullMQ names them, so `getWorkers()` and tools that read CLIENT LIST find them:
 * `<prefix>:<base64 of the queue name><suffix>`; a worker adds `:w:<worker name>` when named,
 * QueueEvents `:qe`. It names a connection, not a key.
 */
export const clientName = (keys: QueueKeys, suffix = ''): string =>
  `${keys.prefix}:${Buffer.from(keys.queue).toString('base64')}${suffix}`;

/**
 * The client library name (CLIENT SETINFO LIB-NAME, Redis 7.2+) of a worker's named
 * connections: `ioredis(echomq)`, as ioredis writes a `clientInfoTag`. It is the mark that tells
 * echomq's worker connections from BullMQ's, which carry the same names (the move from BullMQ
 * refuses while BullMQ's workers run).
 */
export const WORKER_LIB_TAG = 'echomq';

/** Pattern matching every key of the queue (for tests and obliterate checks). */
export const queueKeyPattern = (keys: QueueKeys): string => keys.base.replace(/[*?[\]\\]/g, '\\$&') + '*';

/**
 * Splits a job key `<prefix>:{<escaped queue>}:job:<id>` into its parts (the inverse of
 * jobKey), the one parser of job keys. The escaped queue name holds no braces; a prefix may
 * (`'{bull}'`, `'{app}:x'`), so each `:{` from the left is tried and the first split that
 * rebuilds the key's job base wins.
 */
export function parseJobKey(key: string): { prefix: string; queue: string; id: string; keys: QueueKeys } | undefined {
  for (let open = key.indexOf(':{'); open >= 0; open = key.indexOf(':{', open + 1)) {
    const close = key.indexOf('}:', open + 2);
    if (close < 0) return undefined;
    const escaped = key.slice(open + 2, close);
    if (/[{}]/.test(escaped)) continue;
    const prefix = key.slice(0, open);
    const queue = unescapeQueueName(escaped);
    const keys = queueKeys(queue, prefix);
    if (key.startsWith(keys.jobBase)) return { prefix, queue, id: key.slice(keys.jobBase.length), keys };
  }
  return undefined;
}

/** BullMQ's logical name `<prefix>:<queue>:<id>` of a physical job key; other strings are kept. */
export function logicalJobName(key: string): string {
  const p = parseJobKey(key);
  return p ? `${p.prefix}:${p.queue}:${p.id}` : key;
}

/**
 * Splits a queue's qualified name `<prefix>:<queue>` (BullMQ's `parent.queue`). Under the
 * caller's own prefix the rest is the name (echomq names may hold ':'); otherwise the last ':'
 * splits, as BullMQ's names cannot hold ':'. undefined when there is no such split.
 */
export function parseQualifiedName(qualified: string, ownPrefix: string): { prefix: string; queue: string } | undefined {
  if (qualified.startsWith(`${ownPrefix}:`) && qualified.length > ownPrefix.length + 1) {
    return { prefix: ownPrefix, queue: qualified.slice(ownPrefix.length + 1) };
  }
  const i = qualified.lastIndexOf(':');
  return i <= 0 || i === qualified.length - 1 ? undefined : { prefix: qualified.slice(0, i), queue: qualified.slice(i + 1) };
}

/** Splits a job's logical name `<qualified queue name>:<id>` at its last ':' (BullMQ's parentKey). */
export function parseLogicalJobName(name: string): { queue: string; id: string } | undefined {
  const i = name.lastIndexOf(':');
  return i <= 0 || i === name.length - 1 ? undefined : { queue: name.slice(0, i), id: name.slice(i + 1) };
}
