/**
 * BullMQ's exported repeat helpers: the next time a repeat fires after a given time. echomq's
 * schedulers compute their slots in Lua on the Redis clock (lib/schedule.lua) with the same
 * rules; these are for programs that call BullMQ's helpers (or pass `settings.repeatStrategy`).
 */
import { CronExpressionParser } from 'cron-parser';

/** BullMQ's link for moving legacy repeatable jobs to job schedulers (BullMQ 5 → 6). */
export const LEGACY_REPEATABLE_JOBS_MIGRATION_URL = 'https://docs.bullmq.io/guide/migrations/migrate-from-v5-to-v6';

/** The repeat options these helpers read (BullMQ's RepeatOptions). */
export interface RepeatStrategyOptions {
  pattern?: string;
  every?: number;
  startDate?: Date | string | number;
  immediately?: boolean;
  tz?: string;
  [key: string]: unknown;
}

/** The next cron time after `millis` (or after startDate when that is later); now with `immediately`. */
function nextCron(millis: number, opts: RepeatStrategyOptions): number | undefined {
  const start = opts.startDate !== undefined ? new Date(opts.startDate) : undefined;
  const from = start && start.getTime() > millis ? start : new Date(millis);
  const expr = CronExpressionParser.parse(opts.pattern ?? '', { ...(opts as object), currentDate: from });
  try {
    return opts.immediately ? Date.now() : expr.next().getTime();
  } catch {
    return undefined; // past the pattern's end
  }
}

/** BullMQ's `defaultRepeatStrategy(millis, opts)`: the next time of `opts.pattern` after `millis`. */
export const defaultRepeatStrategy = (millis: number, opts: RepeatStrategyOptions): number | undefined => nextCron(millis, opts);

/**
 * BullMQ's `getNextMillis(millis, opts)`: with `every`, the next multiple of it after `millis`
 * (that multiple itself with `immediately`); with `pattern`, as defaultRepeatStrategy. Both
 * given: BullMQ's error.
 */
export const getNextMillis = (millis: number, opts: RepeatStrategyOptions): number | undefined => {
  if (opts.pattern && opts.every) throw new Error('Both .pattern and .every options are defined for this repeatable job');
  if (opts.every) return Math.floor(millis / opts.every) * opts.every + (opts.immediately ? 0 : opts.every);
  return nextCron(millis, opts);
};
