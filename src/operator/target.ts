/**
 * Redis connections for the operator tools, and the one place that turns any error into what
 * an operator should read: one clear line for their mistakes (bad input, unknown queue or
 * job, Redis unreachable), a stack trace only for our own bugs.
 */
import { Redis } from 'ioredis';
import { EchoError } from '../core/errors.js';
import { DEFAULT_PREFIX } from '../core/keys.js';
import * as v from '../core/validate.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** A mistake the operator can fix (unknown queue, bad argument). Printed without a stack. */
export class UserError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UserError';
  }
}

/** The queue or job named does not exist. */
export class NotFoundError extends UserError {}

export interface Target {
  client: Redis;
  prefix: string;
  /** The URL with any password masked, for messages. */
  where: string;
}

/** The URL as it may be printed: the password (and a user's name) replaced by `***`. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url.replace(/\/\/[^@/]*@/, '//***@');
  }
}

/**
 * Connects and waits until Redis answers. `persistent` clients (the dashboard) reconnect
 * forever in the background; one-shot clients (CLI commands) give up at once so a command
 * against a dead Redis fails in milliseconds instead of hanging.
 */
export async function connect(url: string | undefined, prefix: string | undefined, persistent = false): Promise<Target> {
  const u = url && url !== '' ? url : DEFAULT_REDIS_URL;
  const p = prefix === undefined ? DEFAULT_PREFIX : v.prefix(prefix);
  const where = maskUrl(u);
  let client: Redis;
  try {
    client = new Redis(u, {
      lazyConnect: true,
      connectTimeout: 5000,
      // One retry per command, then the command fails and the caller reports it.
      maxRetriesPerRequest: 1,
      retryStrategy: persistent ? (n) => Math.min(n * 200, 2000) : () => null,
    });
  } catch (err) {
    throw new UserError(`invalid Redis URL ${JSON.stringify(where)}: ${(err as Error).message}`);
  }
  // Connection errors surface through the awaited commands; without a listener ioredis would
  // also print them as "Unhandled error event".
  let socketError: unknown;
  client.on('error', (err) => (socketError = err));
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    client.disconnect();
    // connect() only says "Connection is closed"; the socket error says why.
    throw new UserError(`cannot reach Redis at ${where}: ${connectionReason(socketError ?? err)}`);
  }
  return { client, prefix: p, where };
}

function connectionReason(err: unknown): string {
  const e = err as NodeJS.ErrnoException & { message?: string };
  switch (e?.code) {
    case 'ECONNREFUSED':
      return 'connection refused (is redis-server running? set --redis or REDIS_URL)';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ETIMEDOUT':
      return 'connection timed out';
    default:
      return oneLine(e?.message ?? String(err));
  }
}

const oneLine = (s: string): string => s.split('\n')[0];

/** Errors worth one line; anything else is a bug and gets its stack. */
export function userMessage(err: unknown): string | undefined {
  if (err instanceof UserError || err instanceof EchoError) return err.message;
  const e = err as NodeJS.ErrnoException & { name?: string; message?: string };
  if (!e || typeof e !== 'object') return undefined;
  if (e.code && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EPIPE|EADDRINUSE|EACCES)$/.test(e.code)) {
    return oneLine(e.message ?? e.code);
  }
  // ioredis: MaxRetriesPerRequestError, "Connection is closed.", server replies (NOAUTH, WRONGPASS, READONLY…).
  if (e.name === 'MaxRetriesPerRequestError' || e.name === 'ReplyError' || /Connection is closed/.test(e.message ?? '')) {
    return `Redis: ${oneLine(e.message ?? '')}`;
  }
  return undefined;
}

/** Closes a client without waiting on a dead server. */
export async function disconnect(t: Target | undefined): Promise<void> {
  if (!t) return;
  if (t.client.status !== 'ready') {
    t.client.disconnect();
    return;
  }
  try {
    await t.client.quit();
  } catch {
    t.client.disconnect();
  }
}
