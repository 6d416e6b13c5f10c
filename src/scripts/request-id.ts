/**
 * Request ids of applied-once calls (docs/protocol.md "Applied once", src/scripts/lib/once.lua). One id is
 * made per logical call and sent as the script's last argument; ioredis resends the same bytes
 * after a lost reply, and echomq's own retries pass the same id again, so the script answers
 * every rerun from the record of the first run.
 *
 * Format: `<process prefix><counter in base 36>` (unique without a random draw per call), then
 * `@<ms>` once this client's Redis clock offset is known: the send time on the Redis clock, so a
 * rerun older than the window is refused (EMQ_EXPIRED) instead of being applied twice.
 */
import { randomBytes } from 'node:crypto';
import { EchoError, RedisRefusedError, RedisUnreachableError, RequestOutcomeUnknownError } from '../core/errors.js';
import { redisTimeMs } from '../core/values.js';
import { bindScript, type ScriptContext } from './runner.js';

/** 16 random base64url characters per process: ids of two processes never meet. */
const PREFIX = randomBytes(12).toString('base64url');
let counter = 0;

/** The offset is read again after this long (clock drift stays far below the script's 2 s margin). */
const OFFSET_TTL_MS = 10 * 60_000;

/** How far the local clock may step back (NTP slews) before the offset is read again. */
const CLOCK_BACK_MS = 1000;

interface Offset {
  ms?: number;
  at: number;
  pending: boolean;
}
const offsets = new WeakMap<object, Offset>();

interface TimeClient {
  time(): Promise<unknown>;
}

/** Reads the Redis clock once (in the background) and keeps `Redis time − local time`. */
function learnOffset(client: TimeClient, o: Offset): void {
  o.pending = true;
  const t0 = Date.now();
  client.time().then(
    (t) => {
      const t1 = Date.now();
      const r = t as [string, string];
      o.ms = redisTimeMs([r[0], r[1]]) - Math.round((t0 + t1) / 2);
      o.at = t1;
      o.pending = false;
    },
    () => {
      o.pending = false;
    },
  );
}

/** A new request id for one logical call on `client`. */
export function newRequestId(client: TimeClient): string {
  const id = PREFIX + (counter++).toString(36);
  let o = offsets.get(client);
  if (!o) {
    o = { at: 0, pending: false };
    offsets.set(client, o);
  }
  const now = Date.now();
  // A local clock that went back since the offset was read (a test's fake timers, a clock reset)
  // says nothing about the send time: the offset is read again, and until then no time is sent.
  const wentBack = o.ms !== undefined && now < o.at - CLOCK_BACK_MS;
  if (wentBack) o.ms = undefined;
  if (!o.pending && (o.ms === undefined || now - o.at > OFFSET_TTL_MS)) learnOffset(client, o);
  return o.ms === undefined ? id : `${id}@${now + o.ms}`;
}

/** Most bytes in a request id (lib/once.lua). */
export const MAX_REQUEST_ID_BYTES = 200;

/**
 * The id of part `part` of a logical call made of several script calls (a cross-queue flow):
 * `<id>/<part>`, keeping the `@<ms>` suffix last, so every part has its own record and a retry
 * of the logical call with the same id gives each part the same id again.
 */
export function deriveRequestId(requestId: string, part: string | number): string {
  const p = String(part);
  if (!/^[0-9A-Za-z]{1,16}$/.test(p)) throw new RangeError(`request id part: 1 to 16 letters or digits, got ${JSON.stringify(p)}`);
  const at = /@\d+$/.exec(requestId);
  const id = at ? `${requestId.slice(0, at.index)}/${p}${at[0]}` : `${requestId}/${p}`;
  if (requestId === '' || Buffer.byteLength(id) > MAX_REQUEST_ID_BYTES) {
    throw new RangeError(`request id: 1 to ${MAX_REQUEST_ID_BYTES} bytes with its part, got ${Buffer.byteLength(id)}`);
  }
  return id;
}

/** Pauses (ms) before a call whose outcome is unknown is sent again (as the Python client's). */
const LOST_RETRY_PAUSES = [50, 200];

/**
 * Runs `call` (an applied-once call with a fixed request id) and sends it again after a short
 * pause while its outcome is unknown (the reply was lost and the client did not resend it): the
 * rerun answers from the first run's record. An expired request is not retried.
 */
export async function retryLost<T>(call: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await call();
    } catch (err) {
      if (!(err instanceof RequestOutcomeUnknownError) || err.expired || i >= LOST_RETRY_PAUSES.length) throw err;
      await new Promise((r) => setTimeout(r, LOST_RETRY_PAUSES[i]));
    }
  }
}

/** Redis's words for a call it refused before running it: nothing was written. */
const REFUSED = /^(OOM|READONLY|NOPERM|MISCONF|NOREPLICAS|MASTERDOWN|NOAUTH|WRONGPASS)\b/;

/**
 * The typed error of a failed applied-once call: Redis refused it (RedisRefusedError), it is
 * older than the window (EMQ_EXPIRED) or its reply never came (RequestOutcomeUnknownError,
 * naming the request); any other error (a script error: a bug) is returned as it is.
 */
export function onceError(err: unknown, op: string, requestId: string): unknown {
  if (!(err instanceof Error)) return err;
  // echomq's own refusals made before the call (the stored layout check) are already typed.
  // A call never sent (Redis unreachable while it waited) has a known outcome: nothing was written.
  if (err instanceof EchoError || err instanceof RedisUnreachableError) return err;
  if (REFUSED.test(err.message)) return new RedisRefusedError(op, err);
  if (err.message.includes('EMQ_EXPIRED')) return new RequestOutcomeUnknownError(op, requestId, err);
  // A reply error is a reply: the script ran or Redis refused it; anything else lost the reply.
  if (err.name === 'ReplyError') return err;
  return new RequestOutcomeUnknownError(op, requestId, err);
}

/** Runs an applied-once call (its request id is among its arguments): a failure becomes the typed error of onceError. */
export async function onceCall(op: string, requestId: string, p: Promise<unknown>): Promise<unknown> {
  try {
    return await p;
  } catch (err) {
    throw onceError(err, op, requestId);
  }
}

/**
 * Loads a script applied once: its caller passes the script's ARGV without the request id, and
 * the id (a new one when absent), which goes last (docs/protocol.md "Applied once").
 */
export function bindOnceScript(name: string) {
  const run = bindScript(name);
  return (ctx: ScriptContext, args: Array<string | number>, requestId = newRequestId(ctx.client)): Promise<unknown> => {
    args.push(requestId);
    return onceCall(name, requestId, run(ctx, args));
  };
}
