/**
 * Redis connections for the operator tools, and the one place that turns any error into what
 * an operator should read: one clear line for their mistakes (bad input, unknown queue or
 * job, Redis unreachable), a stack trace only for our own bugs.
 */
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import { EchoError } from '../core/errors.js';
import type { RedisClient } from '../core/connection.js';
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
  /** A plain client, or an ioredis Cluster when the target is a Redis Cluster. */
  client: RedisClient;
  prefix: string;
  /** The URL with any password masked, for messages. */
  where: string;
}

export interface ConnectOptions {
  /** The dashboard's client reconnects forever; a CLI command's gives up at once. */
  persistent?: boolean;
  /** Connect as a Redis Cluster client without asking the node first (`--cluster`). */
  cluster?: boolean;
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
 *
 * `url` may be one node's URL or a comma-separated list of seed nodes. A list, or
 * `cluster: true`, connects an ioredis Cluster at once; a single URL is asked `INFO cluster`
 * and, when it is a Cluster node, is reopened as a Cluster client, so every master is reached.
 */
export async function connect(
  url: string | undefined, prefix: string | undefined, opts: boolean | ConnectOptions = {},
): Promise<Target> {
  const o: ConnectOptions = typeof opts === 'boolean' ? { persistent: opts } : opts;
  const u = url && url !== '' ? url : DEFAULT_REDIS_URL;
  const p = prefix === undefined ? DEFAULT_PREFIX : v.prefix(prefix);
  const seeds = u.split(',').map((s) => s.trim()).filter((s) => s !== '');
  if (seeds.length === 0) v.fail('redis', 'a Redis URL (redis://host:port) or a comma-separated list of them', u);
  if (o.cluster || seeds.length > 1) return connectCluster(seeds, p, o.persistent ?? false);
  const where = maskUrl(u);
  let client: Redis;
  try {
    client = new Redis(u, {
      lazyConnect: true,
      connectTimeout: 5000,
      // One retry per command, then the command fails and the caller reports it.
      maxRetriesPerRequest: 1,
      retryStrategy: o.persistent ? (n) => Math.min(n * 200, 2000) : () => null,
    });
  } catch (err) {
    throw new UserError(`invalid Redis URL ${JSON.stringify(where)}: ${(err as Error).message}`);
  }
  const failed = await reachError(client);
  if (failed !== undefined) throw new UserError(`cannot reach Redis at ${where}: ${connectionReason(failed)}`);
  if (await clusterEnabled(client)) {
    client.disconnect();
    return connectCluster(seeds, p, o.persistent ?? false);
  }
  return { client, prefix: p, where };
}

/** Whether a node runs in cluster mode. A server that refuses INFO (ACL, managed) is taken as plain. */
async function clusterEnabled(client: Redis): Promise<boolean> {
  try {
    return /^cluster_enabled:1\s*$/m.test(await client.info('cluster'));
  } catch {
    return false;
  }
}

/**
 * One seed URL as ioredis Cluster wants it: host and port, with the credentials and TLS as
 * per-node options. An entry without a scheme (`host:port`) takes the first entry's.
 */
function seedNode(entry: string, first: URL | undefined): { url: URL; node: { host: string; port: number } } {
  const where = maskUrl(entry);
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(entry) ? entry : `${first?.protocol ?? 'redis:'}//${entry}`);
  } catch {
    v.fail('redis', 'a Redis URL (redis://host:port) or a comma-separated list of them', where);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') v.fail('redis', 'a redis:// or rediss:// URL', where);
  const db = url.pathname.replace(/^\//, '');
  // A Cluster has database 0 only; a URL naming another would silently read elsewhere.
  if (db !== '' && db !== '0') v.fail('redis', 'database 0 on a Redis Cluster (no /<db> in the URL)', where);
  return { url, node: { host: url.hostname.replace(/^\[|\]$/g, ''), port: url.port === '' ? 6379 : Number(url.port) } };
}

async function connectCluster(seeds: string[], prefix: string, persistent: boolean): Promise<Target> {
  const parsed: Array<ReturnType<typeof seedNode>> = [];
  for (const s of seeds) parsed.push(seedNode(s, parsed[0]?.url));
  const first = parsed[0].url;
  const nodeOptions: RedisOptions = {
    connectTimeout: 5000,
    maxRetriesPerRequest: 1,
    ...(first.username ? { username: decodeURIComponent(first.username) } : {}),
    ...(first.password ? { password: decodeURIComponent(first.password) } : {}),
    ...(first.protocol === 'rediss:' ? { tls: {} } : {}),
  };
  const options: ClusterOptions = {
    lazyConnect: true,
    redisOptions: nodeOptions,
    // While the Cluster is unreachable a command fails at once (as maxRetriesPerRequest does for
    // one node) instead of waiting in the offline queue: the dashboard answers "cannot reach".
    enableOfflineQueue: false,
    clusterRetryStrategy: persistent ? (n) => Math.min(n * 200, 2000) : () => null,
  };
  const where = parsed.map((x) => maskUrl(x.url.toString())).join(',');
  const client = new Cluster(parsed.map((x) => x.node), options);
  const failed = await reachError(client);
  if (failed !== undefined) {
    // ioredis only says "None of startup nodes is available": ask the first seed alone why.
    const why = (await seedError(parsed[0].node, nodeOptions)) ?? failed;
    throw new UserError(`cannot reach Redis Cluster at ${where}: ${connectionReason(why)}`);
  }
  return { client, prefix, where: `cluster ${where}` };
}

/** The error of one connection attempt to a node (refused, not found, auth…), or undefined when it answers. */
async function seedError(node: { host: string; port: number }, options: RedisOptions): Promise<unknown> {
  const probe = new Redis({ ...node, ...options, lazyConnect: true, retryStrategy: () => null });
  try {
    return await reachError(probe);
  } finally {
    probe.disconnect();
  }
}

/**
 * Connects and pings: undefined when the server answers, else why not (the socket's error
 * first: connect() only says "Connection is closed"), the client then disconnected. The error
 * listener stays: without one ioredis would also print later errors as "Unhandled error event".
 */
async function reachError(client: Redis | Cluster): Promise<unknown> {
  let socketError: unknown;
  client.on('error', (err) => (socketError = err));
  try {
    await client.connect();
    await client.ping();
    return undefined;
  } catch (err) {
    client.disconnect();
    return socketError ?? err;
  }
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
