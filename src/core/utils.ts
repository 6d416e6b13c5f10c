/**
 * The small helpers BullMQ exports from its package root, for programs (and test suites) that
 * import them from there: `import { delay, removeAllQueueData } from 'bullmq'` keeps working
 * with only the package name changed. They are plain functions with BullMQ's names and
 * signatures; `removeAllQueueData` knows echomq's key layout.
 */
import type { EventEmitter } from 'node:events';
import { isClient, type RedisClient } from './connection.js';
import { queueKeyPattern, queueKeys } from './keys.js';

export { randomUUID } from 'node:crypto';


/** Resolves after `ms` milliseconds, or at once when the controller aborts. */
export function delay(ms: number, abortController?: { signal: AbortSignal }): Promise<void> {
  return new Promise((resolve) => {
    const signal = abortController?.signal;
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done);
  });
}

/** Bytes of a string in UTF-8. */
export const lengthInUtf8Bytes = (str: string): number => Buffer.byteLength(str, 'utf8');

/** True when the object has no own enumerable key. */
export const isEmpty = (obj: object): boolean => Object.keys(obj).length === 0;

/** [k1, v1, k2, v2, …] → { k1: v1, k2: v2 }. */
export function array2obj(arr: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < arr.length; i += 2) out[arr[i]] = arr[i + 1];
  return out;
}

/** { k: v } → [k, v, …], leaving out undefined values. */
export function objectToFlatArray(obj: Record<string, unknown>): unknown[] {
  const out: unknown[] = [];
  for (const [k, v] of Object.entries(obj)) if (v !== undefined) out.push(k, v);
  return out;
}

/** A copy without the keys whose value is undefined. */
export function removeUndefinedFields<T extends Record<string, unknown>>(obj: Record<string, unknown>): T {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as T;
}

/** { a: 'x' } → { x: 'a' }. */
export function invertObject<T extends Record<PropertyKey, PropertyKey>>(obj: T): Record<PropertyKey, string> {
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [v, k]));
}

/** Parses every value of a string map as JSON. */
export const parseObjectValues = (obj: Record<string, string>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, JSON.parse(v)]));

export function increaseMaxListeners(emitter: Pick<EventEmitter, 'getMaxListeners' | 'setMaxListeners'>, count: number): void {
  emitter.setMaxListeners(emitter.getMaxListeners() + count);
}

export function decreaseMaxListeners(emitter: Pick<EventEmitter, 'getMaxListeners' | 'setMaxListeners'>, count: number): void {
  increaseMaxListeners(emitter, -count);
}

/** Anything with ioredis' connect/disconnect/duplicate methods (BullMQ's test of a client). */
export function isRedisInstance(obj: unknown): boolean {
  const o = obj as Record<string, unknown> | null | undefined;
  return !!o && ['connect', 'disconnect', 'duplicate'].every((m) => typeof o[m] === 'function');
}

export const isRedisCluster = (obj: unknown): boolean => isRedisInstance(obj) && (obj as { isCluster?: boolean }).isCluster === true;

/** The logical key of a job's parent, `<parent queue>:<parent id>` (undefined without a parent). */
export function getParentKey(opts: { id: string; queue: string } | undefined): string | undefined {
  return opts ? `${opts.queue}:${opts.id}` : undefined;
}

/** What a Redis server without the CLIENT command (GCP Memorystore) answers to it. */
export const clientCommandMessageReg = /ERR unknown command ['`]\s*client\s*['`]/;

/** Re-emits the connection's errors as the emitter's, only while the emitter has 'error' listeners. */
export function forwardConnectionError(emitter: EventEmitter, connection: EventEmitter): void {
  connection.on('error', (error: unknown) => {
    if (emitter.listenerCount('error') > 0) emitter.emit('error', error);
  });
}

/** False for connection-closed and refused-connection errors (the ones to retry or ignore). */
export function isNotConnectionError(error: Error & { code?: string }): boolean {
  const closed = error.name === 'ConnectionClosedError' || error.message === 'Connection is closed.';
  return !closed && !error.message.includes('ECONNREFUSED') && error.code !== 'ECONNREFUSED';
}

/** An Error's own properties as a plain JSON-safe object (cycles dropped). */
export function errorToJSON(value: object): Record<string, unknown> {
  const seen = new WeakSet<object>([value]);
  const own: Record<string, unknown> = {};
  for (const k of Object.getOwnPropertyNames(value)) own[k] = (value as Record<string, unknown>)[k];
  return JSON.parse(JSON.stringify(own, (_k, v: unknown) => {
    if (typeof v === 'object' && v !== null) {
      if (seen.has(v)) return undefined;
      seen.add(v);
    }
    return v;
  })) as Record<string, unknown>;
}

/**
 * Deletes every key of a queue (echomq's layout: `<prefix>:{<queue>}:*`) with SCAN and DEL in
 * pages, then closes the client, as BullMQ's helper does. On a Cluster it returns false and
 * deletes nothing (SCAN reaches one node only); use `queue.obliterate()` there.
 */
export async function removeAllQueueData(client: RedisClient, queueName: string, prefix = 'bull'): Promise<void | boolean> {
  if (!isClient(client)) throw new TypeError(`removeAllQueueData: client must be an ioredis client, got ${typeof client}`);
  if ((client as { isCluster?: boolean }).isCluster) return false;
  const pattern = queueKeyPattern(queueKeys(queueName, prefix));
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) await client.del(...keys);
  } while (cursor !== '0');
  try {
    await client.quit();
  } catch (err) {
    if (isNotConnectionError(err as Error)) throw err;
  }
}

/** BullMQ's `errorObject`: where `tryCatch` leaves the error it caught (BullMQ's shape). */
export const errorObject: { value: unknown } = { value: null };

/** BullMQ's `tryCatch(fn, ctx, args)`: fn's result, or `errorObject` holding what it threw. */
export function tryCatch(fn: (...args: any[]) => any, ctx: unknown, args: unknown[]): any {
  try {
    return fn.apply(ctx, args);
  } catch (e) {
    errorObject.value = e;
    return errorObject;
  }
}

/**
 * BullMQ's `isRedisVersionLowerThan(current, minimum, currentType, desiredType = 'redis')`:
 * whether `current` (any text with a version in it, e.g. '7.2.4-rc1') is below `minimum`, when
 * the server is of the desired type; false for another type (a Valkey or Dragonfly version is
 * not compared with Redis's).
 */
export function isRedisVersionLowerThan(current: string, minimum: string, currentType: string, desiredType = 'redis'): boolean {
  if (currentType !== desiredType) return false;
  const parts = (s: string): number[] => {
    const m = /(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(s);
    return m ? [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)] : [0, 0, 0];
  };
  const a = parts(current);
  const b = parts(minimum);
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! < b[i]!;
  return false;
}

/** BullMQ's `toString(value)`: '' for null/undefined, strings as they are, arrays element by element, -0 as '-0'. */
export function toString(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return `${value.map((x) => (x === null || x === undefined ? x : toString(x)))}`;
  if (typeof value === 'symbol') return value.toString();
  const s = `${value as string}`;
  return s === '0' && 1 / (value as number) === -Infinity ? '-0' : s;
}
