/**
 * Plain helpers of Job (src/job/job.ts): waiting for a job to finish through QueueEvents, and
 * adding log lines.
 */
import { scripts } from '../scripts/index.js';
import { ClosedError, JobNotFoundError } from '../core/errors.js';
import type { QueueEvents } from '../events/queue-events.js';
import type { JobContext } from './job-context.js';
import { jobKey } from '../core/keys.js';
import { jobError, withBullText } from './job-state.js';
import { parseJson } from './job-json.js';
import * as v from '../core/validate.js';
import { JobField, JobStateCode } from '../core/fields.js';

/** Job.waitUntilFinished (see there). */
export function waitUntilFinished<R>(ctx: JobContext, id: string, name: string, queueEvents: QueueEvents, ttl?: number): Promise<R> {
  const qe = queueEvents as Partial<QueueEvents> | undefined;
  if (!qe || typeof qe.on !== 'function' || typeof qe.waitUntilReady !== 'function' || !qe.keys) {
    v.fail('queueEvents', 'a QueueEvents instance', queueEvents);
  }
  if (qe.keys.events !== ctx.keys.events) {
    v.fail('queueEvents', `a QueueEvents of queue ${JSON.stringify(ctx.keys.queue)} (same prefix)`, qe.name);
  }
  if (ttl !== undefined) v.positiveInt('ttl', ttl);
  const events = queueEvents;
  const jk = jobKey(ctx.keys, id);
  const client = ctx.client;
  return new Promise<R>((resolve, reject) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      if (timer) clearTimeout(timer);
      events.off(`completed:${id}`, onCompleted);
      events.off(`failed:${id}`, onFailed);
      unsubscribeClosed();
      fn();
    };
    const fromHash = () =>
      client.hget(jk, JobField.returnValue).then(
        (rv) => finish(() => resolve(parseJson(rv ?? undefined) as R)),
        (err: unknown) => finish(() => reject(err)),
      );
    const onCompleted = (args: { returnvalue?: unknown; truncated?: string }) => {
      if (args.truncated === '1' && !('returnvalue' in args)) void fromHash();
      else finish(() => resolve(args.returnvalue as R));
    };
    const onFailed = (args: { failedReason?: string }) => finish(() => reject(new Error(args.failedReason ?? '')));
    const onClosed = () => finish(() => reject(new ClosedError('QueueEvents')));
    events.on(`completed:${id}`, onCompleted);
    events.on(`failed:${id}`, onFailed);
    const unsubscribeClosed = events.whenClosed(onClosed);
    if (ttl !== undefined) {
      timer = setTimeout(
        () => finish(() => reject(new Error(`Job wait ${name} timed out before finishing, no finish notification arrived after ${ttl}ms (id=${id})`))),
        ttl,
      );
    }
    // Only now read the state: the reader's position is fixed (waitUntilReady), so any finish
    // after the read below is delivered to the listeners above.
    void (async () => {
      await events.waitUntilReady();
      const [st, rv, err] = await client.hmget(jk, JobField.state, JobField.returnValue, JobField.failedReason);
      if (st === JobStateCode.completed) finish(() => resolve(parseJson(rv ?? undefined) as R));
      else if (st === JobStateCode.failed) finish(() => reject(new Error(err ?? '')));
      else if (st === null) {
        finish(() => reject(withBullText(new JobNotFoundError(id, 'waitUntilFinished'), `Missing key for job ${ctx.keys.prefix}:${ctx.keys.queue}:${id}. isFinished`)));
      }
    })().catch((e: unknown) => finish(() => reject(e)));
  });
}

export async function addLog(ctx: JobContext, id: string, row: string, keep: number | undefined): Promise<number> {
  v.string('log line', row, ctx.maxPayloadBytes);
  const n = await scripts.addLog(ctx, { id, line: row, keep: keep === undefined ? 0 : v.nonNegativeInt('keepLogs', keep) });
  if (n < 0) throw jobError(n, 'log', id, 'addLog');
  return n;
}
