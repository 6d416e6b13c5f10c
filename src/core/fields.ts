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

/** Fields of a job hash. A field at its default is not stored (see docs/internals.md "States"). */
export const JobField = {
  /** Job name (BullMQ's `name`). */
  name: 'name',
  /** Job data as JSON. */
  data: 'data',
  /** The user's options as JSON, minus those with a field of their own (absent = none). */
  opts: 'opts',
  /** Creation time, ms (BullMQ's `timestamp`). */
  timestamp: 'ts',
  /** Current priority (absent = 0). */
  priority: 'prio',
  /** The priority the job was added with, once changePriority changed `prio` (job.opts.priority). */
  priorityAdded: 'opr',
  /** Lane (absent = the default lane). */
  lane: 'lane',
  /** Delay in ms (absent = 0; 0 after promote). */
  delay: 'delay',
  /** The delay the job was added with, once promote/changeDelay changed `delay` (job.opts.delay). */
  delayAdded: 'odl',
  /** '1' when the job was added LIFO. */
  lifo: 'lifo',
  /** Attempts started (BullMQ's attemptsStarted); also the fencing token of the current attempt. */
  attemptsStarted: 'att',
  /** Base subtracted from `att` after a retry with resetAttemptsStarted (`att` keeps growing as the fence). */
  attemptsStartedBase: 'atb',
  /** Attempts finished (BullMQ's attemptsMade). */
  attemptsMade: 'made',
  /** Times the job stalled (BullMQ's stalledCounter). */
  stalledCounter: 'stc',
  /** State letter, see JobState. */
  state: 'st',
  /** Order stamp within its priority tier (FIFO or LIFO counter), part of the ready score. */
  stamp: 'sq',
  /** removeOnComplete count / age (s) (absent = keep all). */
  keepCompletedCount: 'kc',
  keepCompletedAge: 'ka',
  /** removeOnFail count / age (s) (absent = keep all). */
  keepFailedCount: 'kfc',
  keepFailedAge: 'kfa',
  /** Progress as JSON. */
  progress: 'prog',
  /** Return value as JSON. */
  returnValue: 'rv',
  /** Failed reason (BullMQ's failedReason). */
  failedReason: 'err',
  /** Stack traces as a JSON array. */
  stacktrace: 'stack',
  /** Time the current attempt started, ms (processedOn). */
  processedOn: 'pOn',
  /** Time the job finished, ms (finishedOn). */
  finishedOn: 'fOn',
  /** Parent: id, physical job key, queue name, prefix, failure policy letter (f fail, i ignore, r remove, c continue). */
  parentId: 'pid',
  parentKey: 'pk',
  parentQueue: 'pq',
  parentPrefix: 'ppx',
  parentPolicy: 'pol',
  /** A flow parent: children not finished yet. */
  pendingChildren: 'pend',
  /** Job scheduler id of a scheduler's job (repeatJobKey). */
  schedulerId: 'sid',
  /** Name of the worker that processed the job (processedBy); read when present. */
  processedBy: 'pb',
  /** Lock owner of a job claimed by manual processing (the caller's token). */
  owner: 'tok',
  /** A child failed this step job while it ran (failParentOnFailure): the child's key. */
  deferredFailure: 'dfail',
  /** keepLastIfActive follower: id of the active job holding the deduplication id. */
  dedupFollows: 'dka',
} as const;

/** Fields of a queue's `meta` hash. */
export const MetaField = {
  /** '1' while the queue is paused. */
  paused: 'paused',
  /** FIFO / LIFO stamp counters. */
  fifoSeq: 'seq',
  lifoSeq: 'lseq',
  /** Last generated job id. */
  lastId: 'id',
  /** Ready jobs / of them with priority > 0. */
  ready: 'ready',
  readyPrioritized: 'readyP',
  /** Global concurrency (absent = none). */
  concurrency: 'conc',
  /** Global rate limit: max jobs per duration (ms). */
  rateMax: 'rlmax',
  rateDuration: 'rldur',
  /** '1' when a rateLimit(ms) block may be set on the rate key. */
  rateBlock: 'blk',
  /** The lane being served and its remaining share of the turn. */
  turnLane: 'tl',
  turnLeft: 'tk',
  /** Approximate cap of the events stream (default 10000; 0 = events off). */
  eventsMaxLen: 'evmax',
  /** Hints: the delayed set / the rlwait set may hold entries. */
  delayedHint: 'dly',
  rateWaitHint: 'rlw',
  /** Hint: the lone hash (one-job lanes) may hold fields. */
  loneHint: 'lone',
  /** The Worker's group (lane) defaults: concurrency, rate `max:durationMs` (BullMQ Pro). */
  groupConcurrency: 'gconc',
  groupRate: 'grate',
  /** Jobs handed back by releaseClaim: claimed by a call whose reply was lost, never started (docs/applied-once.md). */
  releasedClaims: 'rcl',
} as const;

/** Fields of a job scheduler hash (`sched:<id>`). */
export const SchedulerField = {
  /** Version, bumped by every upsert (a slot of an older version is not advanced). */
  version: 'ver',
  /** Next slot time, ms. */
  next: 'next',
  every: 'every',
  pattern: 'pattern',
  tz: 'tz',
  start: 'start',
  end: 'end',
  limit: 'limit',
  /** Slots made so far. */
  count: 'cnt',
  /** `every` schedules: the time slots are counted from. */
  anchor: 'anchor',
  /** `every` offset, ms. */
  offset: 'off',
  /** The template job's name, data, opts (and the option fields of JobField). */
  name: 'name',
  data: 'data',
  opts: 'opts',
} as const;

/** Job states as stored in JobField.state. */
export const JobStateCode = {
  ready: 'w',
  active: 'a',
  delayed: 'd',
  completed: 'c',
  failed: 'f',
  waitingChildren: 'h',
} as const;
