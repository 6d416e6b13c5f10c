/**
 * Calls made while Redis is unreachable. ioredis keeps a call made while its client is not ready
 * in an offline queue and writes it only once the client is ready again, so a call rejected
 * while still queued was never sent: its outcome is known. Such a call rejects with
 * RedisUnreachableError (the socket's code and text, then where Redis could not be reached),
 * never with RequestOutcomeUnknownError, which stays for calls that were written.
 *
 * `connectWaitMs` bounds how long a call waits in that queue: past it the call rejects (and is
 * taken out of the queue, so it is never sent later) while the client keeps reconnecting.
 * Installed on the plain (non-Cluster) clients echomq opens; a client passed in is left as it is.
 */
import type { Redis } from 'ioredis';
import { RedisUnreachableError } from './errors.js';

/** The default bound (ms) on how long a call waits for a connection. */
export const DEFAULT_CONNECT_WAIT_MS = 5000;

interface Cmd {
  reject: (err: Error) => void;
  promise: Promise<unknown>;
}
interface OfflineItem {
  command: Cmd;
  stream?: unknown;
}
/** The part of ioredis 5's offline queue (a denque) this file reads. */
interface OfflineQueue {
  length: number;
  peekAt(i: number): OfflineItem | undefined;
  removeOne(i: number): unknown;
}
type Send = (command: Cmd, stream?: unknown, node?: unknown) => unknown;

const watched = new WeakSet<object>();

/** Where the client connects: `host:port`, or its socket path. */
export function whereOf(client: Redis): string {
  const o = client.options;
  return o.path ? o.path : `${o.host ?? 'localhost'}:${o.port ?? 6379}`;
}

/** A socket-level failure to connect (refused, unknown host, timed out, no socket file…). */
export function isConnectFailure(err: unknown): err is Error & { code?: string } {
  if (!(err instanceof Error) || err instanceof RedisUnreachableError) return false;
  const e = err as Error & { code?: string; syscall?: string };
  return e.syscall === 'connect' || e.syscall === 'getaddrinfo' || e.message.startsWith('connect ')
    || ['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ENOENT'].includes(e.code ?? '');
}

/**
 * The error a connection reports through an echomq object's 'error' event: a failure to connect
 * becomes RedisUnreachableError (same code, same message as the socket's, as BullMQ's event, with
 * the address in `where`); any other error is returned as it is.
 */
export function connectionError(client: Redis | unknown, err: Error): Error {
  if (!isConnectFailure(err)) return err;
  const c = client as Redis;
  return new RedisUnreachableError(typeof c?.options === 'object' ? whereOf(c) : 'its address', err, undefined, false, true);
}

/**
 * Installs the rule above on `client` (once per client). `waitMs`: the bound in ms, or null for
 * none (calls wait for as long as ioredis keeps them).
 */
export function watchCalls(client: Redis, waitMs: number | null): void {
  if (watched.has(client)) return;
  const internals = client as unknown as { offlineQueue?: OfflineQueue; sendCommand: Send };
  if (!internals.offlineQueue || typeof internals.sendCommand !== 'function') return; // not ioredis 5's shape
  watched.add(client);
  let lastError: Error | undefined;
  client.on('error', (err: Error) => (lastError = err));
  client.on('ready', () => (lastError = undefined));
  // The socket's own error names the failure; without one (still connecting), the wait does.
  const unreachable = (cause?: Error, waited?: number): RedisUnreachableError =>
    new RedisUnreachableError(whereOf(client), lastError ?? cause, waited, true);
  /** Commands queued offline and not yet written (a later send of one of them writes it). */
  const queued = new WeakSet<object>();
  /** How many there are: while none, a send costs no set lookup. */
  let waiting = 0;
  /** Pipelines (by their stream) already given a timer: their commands leave the queue together. */
  const timed = new WeakSet<object>();

  // Takes every queued command of this call (all of a pipeline's: a MULTI is never cut) out of
  // the queue and rejects it: it is never sent.
  const expire = (command: Cmd, stream: unknown) => {
    const q = internals.offlineQueue;
    if (!q || !queued.has(command)) return;
    const err = unreachable(undefined, waitMs ?? undefined);
    for (let i = q.length - 1; i >= 0; i--) {
      const item = q.peekAt(i);
      if (item && (item.command === command || (stream !== undefined && item.stream === stream))) {
        q.removeOne(i);
        item.command.reject(err); // still marked unsent: rejects with err as it is
      }
    }
  };

  const send = internals.sendCommand;
  internals.sendCommand = function (this: Redis, command: Cmd, stream?: unknown, node?: unknown) {
    // Sent again by ioredis once ready: from here on it is written.
    if (waiting > 0 && queued.delete(command)) waiting--;
    const q = internals.offlineQueue;
    const before = q ? q.length : 0;
    const result = send.call(this, command, stream, node);
    const now = internals.offlineQueue;
    if (!now || now.length <= before || now.peekAt(now.length - 1)?.command !== command) return result;
    queued.add(command);
    waiting++;
    const reject = command.reject;
    command.reject = (err: Error) => {
      const unsent = queued.delete(command);
      if (unsent) waiting--;
      reject(unsent && !(err instanceof RedisUnreachableError) ? unreachable(err) : err);
    };
    const pipeline = typeof stream === 'object' && stream !== null ? stream : undefined;
    if (waitMs !== null && !(pipeline && timed.has(pipeline))) {
      if (pipeline) timed.add(pipeline);
      const timer = setTimeout(() => expire(command, pipeline), waitMs);
      timer.unref?.();
      const clear = () => clearTimeout(timer);
      command.promise.then(clear, clear);
    }
    return result;
  } as Send;
}
