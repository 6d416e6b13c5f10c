/**
 * Names of the fields of echomq's Redis hashes: a job (`job:<id>`), a queue's `meta`, a job
 * scheduler (`sched:<id>`), and the one-letter job states. TypeScript reads and writes these
 * hashes only through the constants below; the Lua scripts spell the same strings (Lua has no
 * import), and `docs/internals.md` ("Hash fields") lists every field with the scripts that
 * write and read it, checked by `test/architecture.test.ts`.
 *
 * The stored names stay short on purpose: every field name is stored once per job, so a long
 * name costs memory on every waiting job (docs/internals.md gives the measurement). The
 * constants give each one a readable name in code.
 */

/**
 * Fields of a job hash. A field at its default is not stored (see docs/protocol.md "Job hash").
 * Integers are decimal strings; times are ms since the Unix epoch on the Redis server clock.
 */
export const JobField = {
  /** Job name (BullMQ's `name`). UTF-8 string, as given. */
  name: 'name',
  /** Job data: JSON text (JSON.stringify / json.dumps of the value). */
  data: 'data',
  /** The user's options as a JSON object, minus those with a field of their own (absent = none). */
  opts: 'opts',
  /** Creation time (BullMQ's `timestamp`): ms, decimal integer. */
  timestamp: 'ts',
  /** Current priority: decimal integer 0..2097151 (absent = 0). */
  priority: 'prio',
  /** The priority the job was added with, once changePriority changed `prio` (job.opts.priority): decimal integer. */
  priorityAdded: 'opr',
  /** Lane name, raw string (absent = the default lane, named 'default'). */
  lane: 'lane',
  /** Delay: ms, decimal integer (absent = 0; 0 after promote). */
  delay: 'delay',
  /** The delay the job was added with, once promote/changeDelay changed `delay` (job.opts.delay): ms, decimal integer. */
  delayAdded: 'odl',
  /** '1' when the job was added LIFO (absent = FIFO). */
  lifo: 'lifo',
  /** Attempts started (BullMQ's attemptsStarted), decimal integer; also the fencing token of the current attempt. */
  attemptsStarted: 'att',
  /** Base subtracted from `att` after a retry with resetAttemptsStarted (`att` keeps growing as the fence): decimal integer. */
  attemptsStartedBase: 'atb',
  /** Attempts finished (BullMQ's attemptsMade): decimal integer (absent = 0). */
  attemptsMade: 'made',
  /** Times the job stalled (BullMQ's stalledCounter): decimal integer (absent = 0). */
  stalledCounter: 'stc',
  /** State: one letter of JobStateCode. */
  state: 'st',
  /** Arrival stamp of a ready job within its priority tier: 14 lowercase hex digits (2^52 ± counter), the prefix of its lane member. */
  stamp: 'sq',
  /** removeOnComplete count: decimal integer, newest n kept; < 0 keeps all (-2 = `false` given); absent = keep all. */
  keepCompletedCount: 'kc',
  /** removeOnComplete age: ms (the option's seconds × 1000), decimal integer; absent = no age limit. */
  keepCompletedAge: 'ka',
  /** removeOnFail count: decimal integer, as keepCompletedCount. */
  keepFailedCount: 'kfc',
  /** removeOnFail age: ms (the option's seconds × 1000), decimal integer; absent = no age limit. */
  keepFailedAge: 'kfa',
  /** Progress: JSON text (a number or an object). */
  progress: 'prog',
  /** Return value: JSON text ('null' for undefined). */
  returnValue: 'rv',
  /** Failed reason (BullMQ's failedReason): the error message, a plain string (not JSON). */
  failedReason: 'err',
  /** Stack traces: a JSON array of strings, newest last, at most stackTraceLimit entries. */
  stacktrace: 'stack',
  /** Time the current attempt started (processedOn): ms, decimal integer. */
  processedOn: 'pOn',
  /** Time the job finished (finishedOn): ms, decimal integer. */
  finishedOn: 'fOn',
  /** Parent's job id (BullMQ's parent.id). Raw string. */
  parentId: 'pid',
  /** Parent's physical job key (`<prefix>:{<queue>}:job:<id>`). */
  parentKey: 'pk',
  /** Parent's queue name, raw. */
  parentQueue: 'pq',
  /** Parent's key prefix. */
  parentPrefix: 'ppx',
  /** Failure policy toward the parent, one letter: f failParentOnFailure, i ignoreDependencyOnFailure, d removeDependencyOnFailure, c continueParentOnFailure (absent = none). */
  parentPolicy: 'pol',
  /** A flow parent: children not finished yet, decimal integer. */
  pendingChildren: 'pend',
  /** Job scheduler id of a scheduler's job (repeatJobKey). Raw string. */
  schedulerId: 'sid',
  /** Name of the worker that processed the job (processedBy), as given in the Worker's `name` option. */
  processedBy: 'pb',
  /** Lock owner of a job claimed by manual processing: the caller's token, as given. */
  owner: 'tok',
  /** A child failed this step job while it ran (failParentOnFailure): the child's physical job key. */
  deferredFailure: 'dfail',
  /** keepLastIfActive follower: id of the active job holding the deduplication id (until released). */
  dedupFollows: 'dka',
  /** keepLastIfActive holder: id of the follower waiting for it to finish (not a parent link). */
  dedupFollower: 'dkn',
} as const;

/** Fields of a queue's `meta` hash. Integers are decimal strings. */
export const MetaField = {
  /** '1' while the queue is paused (absent = running). */
  paused: 'paused',
  /** FIFO stamp counter: decimal integer, HINCRBY by the scripts. */
  fifoSeq: 'seq',
  /** LIFO stamp counter: decimal integer, HINCRBY by the scripts. */
  lifoSeq: 'lseq',
  /** Last generated job id: decimal integer. */
  lastId: 'id',
  /** Ready jobs (all lanes): decimal integer. */
  ready: 'ready',
  /** Ready jobs with priority > 0: decimal integer. */
  readyPrioritized: 'readyP',
  /** Global concurrency: decimal integer >= 1 (absent = none). Written by clients (plain HSET). */
  concurrency: 'conc',
  /** Global rate limit, most jobs per window: decimal integer (absent = none). Written by clients. */
  rateMax: 'rlmax',
  /** Global rate limit window: ms, decimal integer. Written by clients with rlmax. */
  rateDuration: 'rldur',
  /** '1' when a rateLimit(ms) block may be set on the rate key. */
  rateBlock: 'blk',
  /** The lane being served across claims (raw lane name). */
  turnLane: 'tl',
  /** Jobs left of the turn lane's share: decimal integer. */
  turnLeft: 'tk',
  /** Approximate cap of the events stream: decimal integer (absent = 10000; 0 = events off). Written by clients. */
  eventsMaxLen: 'evmax',
  /** Hint '1': the delayed set may hold entries. */
  delayedHint: 'dly',
  /** Hint '1': the rlwait set may hold entries. */
  rateWaitHint: 'rlw',
  /** Hint '1': the lone hash (one-job lanes) may hold fields. */
  loneHint: 'lone',
  /** The Worker's group (lane) default concurrency (BullMQ Pro): decimal integer >= 1. */
  groupConcurrency: 'gconc',
  /** The Worker's group (lane) default rate (BullMQ Pro): `max:durationMs`. */
  groupRate: 'grate',
  /** Sharded queues, on shard 0's meta only: the shard count, a decimal integer (absent = not sharded, 1). */
  shardCount: 'shards',
  /** Stored layout version (decimal integer; docs/protocol.md "Versions"): stamped with HSETNX by the writes that create a queue's content, in the same call; read (HGET) by a client before its first write and checked against LAYOUT_VERSION. */
  layoutVersion: 'lv',
  /** Jobs handed back by releaseClaim: claimed by a call whose reply was lost, never started (docs/protocol.md "Applied once"). */
  releasedClaims: 'rcl',
} as const;

/** Fields of a job scheduler hash (`sched:<id>`). Integers are decimal strings, times ms. */
export const SchedulerField = {
  /** Version, bumped by every upsert that changes the schedule (a slot of an older version is not advanced): decimal integer. */
  version: 'ver',
  /** Next slot time: ms, decimal integer. */
  next: 'next',
  /** Repeat interval: ms, decimal integer ('' for a cron pattern). */
  every: 'every',
  /** Cron pattern ('' for every). */
  pattern: 'pattern',
  /** Time zone of the cron pattern, IANA name ('' = UTC). */
  tz: 'tz',
  /** startDate: ms, decimal integer ('' = none). */
  start: 'start',
  /** endDate: ms, decimal integer ('' = none). */
  end: 'end',
  /** Most slots: decimal integer ('' = no limit). */
  limit: 'limit',
  /** Slots made so far: decimal integer. */
  count: 'cnt',
  /** `every` schedules: the time slots are counted from, ms. */
  anchor: 'anchor',
  /** `every` offset, ms ('' = none). */
  offset: 'off',
  /** The template job's name (the option fields prio, lane, lifo, kc, ka, kfc, kfa are JobField's). */
  name: 'name',
  /** The template job's data: JSON text. */
  data: 'data',
  /** The template job's options: JSON object. */
  opts: 'opts',
} as const;

/** Fields of the per-minute metrics hashes (`metrics:completed`, `metrics:failed`; BullMQ's layout). */
export const MetricsField = {
  /** Jobs finished so far: decimal integer. */
  count: 'count',
  /** Start of the current minute's data point: ms. */
  prevTS: 'prevTS',
  /** `count` at prevTS: decimal integer. */
  prevCount: 'prevCount',
} as const;

/** Job states as stored in JobField.state. */
export const JobStateCode = {
  /** Ready (waiting, or prioritized when priority > 0): in its lane's sorted set or the lone hash. */
  ready: 'w',
  /** Active: in `active`, score = lease deadline. */
  active: 'a',
  /** Delayed: in `delayed`, score = due time. */
  delayed: 'd',
  /** Completed: in `completed`, score = finish time. */
  completed: 'c',
  /** Failed: in `failed`, score = finish time. */
  failed: 'f',
  /** Waiting for children (flow parent): in `wchildren`. */
  waitingChildren: 'h',
} as const;
