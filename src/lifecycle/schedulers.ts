/**
 * Job schedulers: `queue.upsertJobScheduler(id, repeat, template)` and friends.
 *
 * A scheduler makes one job per slot. Slots are `anchor + k × every` (anchor = startDate, or
 * the time of the upsert that started the series) or the fire times of a cron pattern in a
 * time zone. The job of slot t has the id `repeat:<scheduler id>:<t>`, so a slot can never get
 * two jobs. Only one job per scheduler is ever pending: the upsert makes the job of the first
 * slot (due at the slot, as a delayed job), and when a worker claims that job it calls
 * `advanceScheduler`, which makes the job of the following slot. No timer process is needed.
 *
 * Clocks: every slot is computed from the Redis server clock. For `every`, the script takes
 * TIME itself. For a cron pattern the next fire time needs a cron library, so this module
 * reads the scheduler's version and next slot together with Redis TIME (one MULTI), computes the
 * following fire time with cron-parser, and the script accepts it only if version and next
 * slot are unchanged (compare-and-set): ten workers racing, or an upsert in between, make at
 * most one job for the slot. See docs/schedulers-and-flows.md.
 */
import { CronExpressionParser } from 'cron-parser';
import type { RedisClient } from '../core/connection.js';
import { Job, type JobContext } from '../job/job.js';
import { newJob } from '../job/new-job.js';
import { schedulerKey, type QueueKeys } from '../core/keys.js';
import type { JobOptions, RepeatStrategy } from '../core/options.js';
import { lifecycleScripts, type SchedulerSlotReply } from '../scripts/lifecycle.js';
import * as v from '../core/validate.js';
import { JobField, SchedulerField } from '../core/fields.js';
import { redisNowMs, redisTimeMs } from '../core/values.js';

/** When a scheduler fires: exactly one of `every` and `pattern` (BullMQ's RepeatOptions). */
export interface RepeatOptions {
  /**
   * Interval in ms between slots (a positive integer). Slots are startDate + k × every, or
   * now + k × every without a startDate (the first job runs at once), or offset + k × every.
   */
  every?: number;
  /** Cron pattern (5 fields, or 6 with seconds first), as cron-parser reads it (or the queue's `settings.repeatStrategy`). */
  pattern?: string;
  /** IANA time zone the pattern is read in. Default UTC. Accepted with `every` too, where it has no effect (as in BullMQ). */
  tz?: string;
  /** With `every`: slots at offset + k × every (ms since the epoch), as BullMQ aligns them. No effect with a pattern. */
  offset?: number;
  /** With a pattern: the first job runs at once, then the pattern's slots. With `every` the first job runs at once anyway. */
  immediately?: boolean;
  /** BullMQ's start value of the iteration count: the upsert makes nothing when count + 1 exceeds limit. */
  count?: number;
  /** BullMQ's legacy repeatable-job key; accepted, no effect (a scheduler is named by its id). */
  key?: string;
  /** BullMQ internal (deprecated); accepted, no effect. */
  jobId?: string;
  /** BullMQ internal: the previous slot (ms); accepted, no effect. */
  prevMillis?: number;
  /** No slot before this time (Date, ms since the epoch, or an ISO string). */
  startDate?: Date | number | string;
  /** No slot after this time; the scheduler is removed when it has no slot left. */
  endDate?: Date | number | string;
  /** Most jobs the scheduler makes in its current series (a changed schedule starts a new one). */
  limit?: number;
}

/** Options of the jobs a scheduler makes. `jobId`, `delay` and `deduplication` are not allowed. */
export type SchedulerJobOptions = Omit<JobOptions, 'jobId' | 'delay' | 'deduplication'>;

export interface JobSchedulerTemplate<D = any> {
  /** Job name. Default: the scheduler id. */
  name?: string;
  /** Job data. Default `{}`. */
  data?: D;
  opts?: SchedulerJobOptions;
}

/**
 * A scheduler as getJobScheduler returns it: BullMQ's JobSchedulerJson (key, name, next,
 * iterationCount, every/pattern, offset, tz, limit, startDate, endDate, template when the
 * data or options are not empty), plus `id` (the same as key; BullMQ's type has it, unset).
 */
export interface JobSchedulerJson<D = any> {
  /** The scheduler id. */
  key: string;
  /** The scheduler id again (echomq; BullMQ leaves its optional `id` unset). */
  id: string;
  name: string;
  every?: number;
  pattern?: string;
  tz?: string;
  /** With every: the slots' offset, `next mod every`; 0 with a pattern (as BullMQ reports it). */
  offset?: number;
  startDate?: number;
  endDate?: number;
  limit?: number;
  /** Jobs made in the current series. */
  iterationCount: number;
  /** Slot (ms, Redis clock) of the scheduler's newest job. */
  next: number;
  /** Present when the template has data other than {} or options. */
  template?: { data?: D; opts?: JobOptions };
}

const REPEAT_KEYS = new Set(['every', 'pattern', 'tz', 'startDate', 'endDate', 'limit', 'offset', 'immediately', 'count', 'key', 'jobId', 'prevMillis']);
const TEMPLATE_KEYS = new Set(['name', 'data', 'opts']);
/** Due schedulers checked per sweep. */
const REPAIR_BATCH = 50;

/**
 * First fire time of a cron pattern strictly after `afterMs` (ms since the epoch), or
 * undefined when the pattern never fires again. Pure: the caller passes "now".
 */
export function nextCronSlot(pattern: string, tz: string | undefined, afterMs: number): number | undefined {
  const expr = CronExpressionParser.parse(pattern, { currentDate: new Date(afterMs), ...(tz ? { tz } : {}) });
  try {
    return expr.next().getTime();
  } catch {
    return undefined;
  }
}

function dateMs(field: string, value: unknown): number {
  let ms: number | undefined;
  if (value instanceof Date) ms = value.getTime();
  else if (typeof value === 'number') ms = value;
  else if (typeof value === 'string') ms = Date.parse(value);
  if (ms === undefined || !Number.isInteger(ms) || ms < 0) {
    v.fail(field, 'a Date, a non-negative integer of ms since the epoch, or an ISO date string', value);
  }
  return ms;
}

export interface NormalizedRepeat {
  every?: number;
  pattern?: string;
  tz?: string;
  startDate?: number;
  endDate?: number;
  limit?: number;
  offset?: number;
  immediately?: boolean;
  count?: number;
}

/**
 * Validates repeat options (pattern and time zone included) without touching Redis. BullMQ's
 * texts begin the messages where it throws too. With a custom `repeatStrategy` the pattern is
 * the strategy's to read, so it is not parsed as cron.
 */
export function normalizeRepeat(repeat: unknown, customStrategy = false): NormalizedRepeat {
  const o = v.plainObject('repeat', repeat);
  for (const k of Object.keys(o)) {
    if (!REPEAT_KEYS.has(k)) v.fail(`repeat.${k}`, `one of the known options (${[...REPEAT_KEYS].join(', ')})`, k);
  }
  const out: NormalizedRepeat = {};
  if (o.every !== undefined && o.pattern !== undefined) {
    v.failAs('Both .pattern and .every options are defined for this repeatable job', 'repeat', 'an object with exactly one of every (ms) and pattern (cron)', repeat);
  }
  if (o.every === undefined && o.pattern === undefined) {
    v.failAs('Either .pattern or .every options must be defined for this repeatable job', 'repeat', 'an object with exactly one of every (ms) and pattern (cron)', repeat);
  }
  if (o.immediately !== undefined && v.boolean('repeat.immediately', o.immediately) && o.startDate !== undefined) {
    v.failAs('Both .immediately and .startDate options are defined for this repeatable job', 'repeat.immediately', 'absent with a startDate', o.immediately);
  }
  if (o.tz !== undefined) {
    const tz = v.nonEmptyString('repeat.tz', o.tz, 64);
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: tz });
    } catch {
      v.fail('repeat.tz', 'an IANA time zone name (like "Europe/Berlin")', tz);
    }
    // With every, BullMQ keeps the time zone and ignores it: so does echomq (shown, no effect).
    out.tz = tz;
  }
  if (o.every !== undefined) {
    out.every = v.integerIn('repeat.every', o.every, 1, Number.MAX_SAFE_INTEGER, 'a positive integer (ms)');
    if (o.offset !== undefined) out.offset = v.nonNegativeInt('repeat.offset', o.offset) % out.every;
  } else {
    const pattern = v.nonEmptyString('repeat.pattern', o.pattern, 256);
    if (!customStrategy) {
      try {
        CronExpressionParser.parse(pattern, out.tz ? { tz: out.tz } : {});
      } catch (err) {
        v.fail('repeat.pattern', `a cron pattern (${(err as Error).message})`, pattern);
      }
    }
    out.pattern = pattern;
    if (o.offset !== undefined) v.nonNegativeInt('repeat.offset', o.offset);
    if (o.immediately === true) out.immediately = true;
  }
  if (o.startDate !== undefined) out.startDate = dateMs('repeat.startDate', o.startDate);
  // A falsy endDate (0, '') is no end date, as BullMQ reads it; a past one was refused before.
  if (o.endDate !== undefined && o.endDate) out.endDate = dateMs('repeat.endDate', o.endDate);
  if (out.startDate !== undefined && out.endDate !== undefined && out.endDate < out.startDate) {
    v.fail('repeat.endDate', `a time at or after startDate (${out.startDate})`, o.endDate);
  }
  if (o.limit !== undefined) out.limit = v.positiveInt('repeat.limit', o.limit);
  if (o.count !== undefined) out.count = v.nonNegativeInt('repeat.count', o.count);
  if (o.key !== undefined) v.string('repeat.key', o.key);
  if (o.jobId !== undefined) v.string('repeat.jobId', o.jobId);
  if (o.prevMillis !== undefined) v.nonNegativeInt('repeat.prevMillis', o.prevMillis);
  return out;
}

/** An endDate in ms as BullMQ reads it (`+new Date(x)`); undefined when falsy or unreadable (normalizeRepeat refuses those it cannot read). */
function endDateMs(repeat: unknown): number | undefined {
  const end = repeat !== null && typeof repeat === 'object' ? (repeat as { endDate?: unknown }).endDate : undefined;
  if (!end || !(end instanceof Date || typeof end === 'number' || typeof end === 'string')) return undefined;
  const ms = +new Date(end);
  return Number.isFinite(ms) ? ms : undefined;
}

/** The next slot of a pattern after `afterMs`: the custom strategy's, or cron-parser's. */
async function nextPatternSlot(
  r: { pattern: string; tz?: string }, afterMs: number, strategy: RepeatStrategy | undefined, name: string, repeat: Record<string, unknown>,
): Promise<number | undefined> {
  if (!strategy) return nextCronSlot(r.pattern, r.tz, afterMs);
  const next = await strategy(afterMs, { ...repeat, pattern: r.pattern, ...(r.tz ? { tz: r.tz } : {}) }, name);
  if (next === undefined || next === null) return undefined;
  if (typeof next !== 'number' || !Number.isFinite(next)) v.fail('settings.repeatStrategy', 'a function returning ms since the epoch or undefined', next);
  return Math.floor(next);
}

const redisNow = (client: RedisClient): Promise<number> => redisNowMs(client);

/** The id of the job a scheduler makes for a slot (ms). */
export const schedulerJobId = (schedulerId: string, slotMs: number): string => `repeat:${schedulerId}:${slotMs}`;

/**
 * Creates or updates a scheduler and returns the job of its next slot (undefined when the
 * schedule has no slot left: endDate passed or limit reached, and the scheduler is removed).
 */
export async function upsertJobScheduler(
  ctx: JobContext,
  defaults: JobOptions | undefined,
  id: unknown,
  repeat: unknown,
  template: unknown,
  strategy?: RepeatStrategy,
): Promise<Job | undefined> {
  const sid = v.nonEmptyString('jobSchedulerId', id);
  const now = await redisNow(ctx.client);
  // BullMQ checks this before the rest, for every end not after now: negative, fractional, a past Date or string.
  const end = endDateMs(repeat);
  if (end !== undefined && end <= now) {
    v.failAs('End date must be greater than current timestamp', 'repeat.endDate', `a time after now (${now}, Redis clock)`, (repeat as { endDate: unknown }).endDate);
  }
  const r = normalizeRepeat(repeat, strategy !== undefined);
  const t = template === undefined ? {} : v.plainObject('template', template);
  for (const k of Object.keys(t)) {
    if (!TEMPLATE_KEYS.has(k)) v.fail(`template.${k}`, 'one of name, data, opts', k);
  }
  const userOpts = t.opts === undefined ? undefined : v.plainObject('template.opts', t.opts);
  for (const k of ['jobId', 'delay', 'deduplication']) {
    if (userOpts && userOpts[k] !== undefined) v.fail(`template.opts.${k}`, 'absent (the scheduler sets it)', userOpts[k]);
  }
  // Queue defaults apply, except what the scheduler decides itself.
  const merged: Record<string, unknown> = { ...(defaults ?? {}), ...(userOpts ?? {}) };
  delete merged.jobId;
  delete merged.delay;
  delete merged.deduplication;
  const name = t.name === undefined ? sid : t.name;
  const { n, args: a } = newJob(ctx.keys, ctx.maxPayloadBytes, name, t.data === undefined ? {} : t.data, merged, undefined, 'template.');
  // group.maxSize is checked by the add script only; a scheduler's jobs are made by others.
  if (n.groupMaxSize !== undefined) v.fail('template.opts.group.maxSize', 'absent (scheduled jobs are not limited by group size)', n.groupMaxSize);
  // BullMQ makes nothing (and stores nothing) when the start count is already past the limit.
  if (r.count !== undefined && r.limit !== undefined && r.count + 1 > r.limit) return undefined;
  let firstCronSlot: number | undefined;
  if (r.pattern !== undefined) {
    if (r.immediately) firstCronSlot = now;
    else {
      const after = Math.max(now, r.startDate ?? 0) - 1;
      firstCronSlot = await nextPatternSlot({ pattern: r.pattern, tz: r.tz }, after, strategy, a.name, repeat as Record<string, unknown>);
      if (firstCronSlot !== undefined && firstCronSlot < now) firstCronSlot = now;
    }
    if (firstCronSlot === undefined) v.fail('repeat.pattern', 'a cron pattern that fires again', r.pattern);
  }
  const reply = await lifecycleScripts.upsertScheduler(ctx, {
    id: sid, every: r.every, pattern: r.pattern, tz: r.tz, startDate: r.startDate, endDate: r.endDate, limit: r.limit,
    offset: r.offset, firstCronSlot,
    template: {
      name: a.name, data: a.data, opts: a.opts, priority: a.priority, lane: a.lane, lifo: a.lifo,
      keepCompleted: a.keepCompleted, keepFailed: a.keepFailed,
    },
  });
  if (reply.status !== 1 || reply.jobId === undefined) return undefined;
  return Job.load(ctx, reply.jobId);
}

/**
 * Makes the job of a scheduler's following slot once the job of its current slot has started
 * (see advanceScheduler.lua). Safe to call any time, from any number of workers at once.
 */
export async function advanceScheduler(client: RedisClient, keys: QueueKeys, id: string, strategy?: RepeatStrategy): Promise<SchedulerSlotReply> {
  const res = await client.multi().hmget(schedulerKey(keys, id), SchedulerField.version, SchedulerField.next, SchedulerField.pattern, SchedulerField.tz, SchedulerField.name).time().exec();
  const [ver, next, pattern, tz, name] = res![0][1] as Array<string | null>;
  const [sec, usec] = res![1][1] as [string, string];
  if (ver === null || next === null) return { status: -1 };
  let nextCron: number | undefined;
  if (pattern) {
    const now = redisTimeMs([sec, usec]);
    const after = Math.max(Number(next), now);
    nextCron = await nextPatternSlot({ pattern, tz: tz || undefined }, after, strategy, name ?? id, {});
    if (nextCron !== undefined && nextCron <= after) nextCron = undefined; // a slot must move forward
    if (nextCron === undefined) nextCron = -1; // the pattern never fires again
  }
  return lifecycleScripts.advanceScheduler({ client, keys }, { id, version: ver, next, nextCronSlot: nextCron });
}

/**
 * The sweep's repair step: advances schedulers whose next slot is due (at most `budget`). A
 * scheduler whose current job has not started is left alone by the script; one whose job was
 * claimed by a worker that died before advancing, or was removed by hand, gets its next job.
 */
export async function repairSchedulers(client: RedisClient, keys: QueueKeys, budget = REPAIR_BATCH, strategy?: RepeatStrategy): Promise<number> {
  const now = await redisNow(client);
  const due = await client.zrangebyscore(keys.scheds, '-inf', now, 'LIMIT', 0, budget);
  let advanced = 0;
  for (const id of due) {
    const r = await advanceScheduler(client, keys, id, strategy);
    if (r.status === 1 || r.status === 2) advanced++;
  }
  return advanced;
}

/** The template's options as given: the stored JSON plus those kept in their own fields. */
function templateOptions(h: Record<string, string>, stored: unknown): JobOptions {
  const opts: JobOptions = { ...(stored && typeof stored === 'object' ? (stored as JobOptions) : {}) };
  if (h[JobField.priority] && h[JobField.priority] !== '0') opts.priority = Number(h[JobField.priority]);
  if (h[JobField.lane] && h[JobField.lane] !== 'default') opts.lane = h[JobField.lane];
  if (h[JobField.lifo] === '1') opts.lifo = true;
  return opts;
}

function toJson(id: string, h: Record<string, string>): JobSchedulerJson {
  const num = (s: string | undefined) => (s === undefined || s === '' ? undefined : Number(s));
  const parse = (s: string | undefined) => {
    try {
      return s === undefined ? undefined : JSON.parse(s);
    } catch {
      return s;
    }
  };
  const out: JobSchedulerJson = { key: id, id, name: h[JobField.name] ?? id, iterationCount: Number(h[SchedulerField.count] ?? 0), next: Number(h[SchedulerField.next] ?? 0) };
  const start = num(h[SchedulerField.start]);
  const end = num(h[SchedulerField.end]);
  const limit = num(h[SchedulerField.limit]);
  if (limit !== undefined) out.limit = limit;
  if (start !== undefined) out.startDate = start;
  if (end !== undefined) out.endDate = end;
  if (h[SchedulerField.tz]) out.tz = h[SchedulerField.tz];
  if (h[SchedulerField.pattern]) out.pattern = h[SchedulerField.pattern];
  if (h[SchedulerField.every]) {
    out.every = Number(h[SchedulerField.every]);
    out.offset = ((Number(h[SchedulerField.anchor] ?? h[SchedulerField.next]) % out.every) + out.every) % out.every;
  } else {
    out.offset = 0;
  }
  // BullMQ shows a template only for data other than {} or options.
  const opts = templateOptions(h, parse(h[JobField.opts]));
  const hasData = h[JobField.data] !== undefined && h[JobField.data] !== '{}';
  const hasOpts = Object.keys(opts).length > 0;
  if (hasData || hasOpts) {
    out.template = {};
    if (hasData) out.template.data = parse(h[JobField.data]);
    if (hasOpts) out.template.opts = opts;
  }
  return out;
}

export async function getJobScheduler(client: RedisClient, keys: QueueKeys, id: unknown): Promise<JobSchedulerJson | undefined> {
  const sid = v.nonEmptyString('jobSchedulerId', id);
  const h = await client.hgetall(schedulerKey(keys, sid));
  if (!h || h[SchedulerField.next] === undefined) return undefined;
  return toJson(sid, h);
}

/** Schedulers ordered by next slot (asc) or latest first (asc = false, as in BullMQ). */
export async function getJobSchedulers(client: RedisClient, keys: QueueKeys, start = 0, end = -1, asc = false): Promise<JobSchedulerJson[]> {
  v.nonNegativeInt('start', start);
  v.integerIn('end', end, -1, Number.MAX_SAFE_INTEGER);
  v.boolean('asc', asc);
  const ids = asc ? await client.zrange(keys.scheds, start, end) : await client.zrevrange(keys.scheds, start, end);
  if (ids.length === 0) return [];
  const p = client.pipeline();
  for (const id of ids) p.hgetall(schedulerKey(keys, id));
  const r = (await p.exec())!;
  const out: JobSchedulerJson[] = [];
  r.forEach(([err, h], i) => {
    const hh = h as Record<string, string> | null;
    if (!err && hh && hh.next !== undefined) out.push(toJson(ids[i], hh));
  });
  return out;
}

export const getJobSchedulersCount = (client: RedisClient, keys: QueueKeys): Promise<number> => client.zcard(keys.scheds);

/** Removes a scheduler and its next job if that has not started. Returns whether it existed. */
export async function removeJobScheduler(client: RedisClient, keys: QueueKeys, id: unknown): Promise<boolean> {
  const sid = v.nonEmptyString('jobSchedulerId', id);
  return lifecycleScripts.removeScheduler({ client, keys }, sid);
}
