/**
 * Redis connections. Every public class accepts a URL, ioredis options, or an existing ioredis
 * client (Redis or Cluster). A client passed in is used as it is and never closed by echomq;
 * clients echomq creates are closed by the owner's close().
 */
import type { Redis } from 'ioredis';
import {
  RedisConnection, isClient, isClusterClient, rejectKeyPrefix, type ConnectionInput, type RedisClient,
} from './redis-connection.js';

export { RedisConnection, isClient, isClusterClient };
export type { ClusterConnection, ConnectionInput, ConnectionOptions, RedisClient } from './redis-connection.js';

/** The master nodes of a Cluster once it is connected (a one-element list for a plain client). */
export async function masterNodes(client: RedisClient): Promise<Redis[]> {
  if (!isClusterClient(client)) return [client];
  if (client.status !== 'ready') await client.ping(); // waits for the slot map (offline queue)
  return client.nodes('master');
}

/** A connection a Queue, Worker, QueueEvents or FlowProducer holds (`client`, `owned`). */
export type Connection = RedisConnection;

const checked = new WeakSet<object>();

/**
 * Warns once per client unless Redis evicts nothing (`maxmemory-policy noeviction`): any other
 * policy can silently delete job hashes and queue structures under memory pressure.
 */
export async function checkEvictionPolicy(client: RedisClient): Promise<string | undefined> {
  if (checked.has(client)) return undefined;
  checked.add(client);
  try {
    // On a Cluster every master holds queues: ask each one (CONFIG is a per-node command).
    let worst: string | undefined;
    for (const node of await masterNodes(client)) {
      const reply = (await node.config('GET', 'maxmemory-policy')) as string[];
      const policy = reply?.[1];
      if (policy && policy !== 'noeviction') {
        const where = isClusterClient(client) ? ` on ${node.options.host}:${node.options.port}` : '';
        console.warn(
          `[echomq] WARNING: Redis maxmemory-policy is "${policy}"${where}. Jobs can be evicted and lost; ` +
            'set maxmemory-policy to "noeviction".',
        );
        worst = policy;
      }
      worst ??= policy;
    }
    return worst;
  } catch {
    return undefined; // CONFIG may be disabled or not allowed for this user; nothing to check.
  }
}

/**
 * echomq's connection policy: opens (or adopts) the client of a Queue, Worker, QueueEvents or
 * FlowProducer. A client passed in is shared, used as it is and never closed by echomq, except
 * for `blocking` connections (an idle worker's BLPOP, QueueEvents' XREAD): those always get a
 * dedicated duplicate, and their commands wait through reconnects instead of failing after a
 * few retries, so a worker survives a Redis restart (`persistent`: the same for a Worker's
 * command connection). `extra` passes BullMQ's skipVersionCheck / skipWaitingForReady.
 * `nodeOptions` go into a blocking Cluster duplicate's redisOptions, so every node connection
 * it opens carries them (a worker's connection name: one SETNAME would reach one node only).
 */
export function openConnection(
  input: ConnectionInput | undefined,
  opts: {
    blocking?: boolean; persistent?: boolean; skipVersionCheck?: boolean; skipWaitingForReady?: boolean;
    nodeOptions?: { connectionName?: string; clientInfoTag?: string };
  } = {},
): RedisConnection {
  const blocking = opts.blocking === true;
  const extra = { blocking, skipVersionCheck: opts.skipVersionCheck === true, skipWaitingForReady: opts.skipWaitingForReady === true };
  const settings = { retryForever: opts.persistent === true };
  rejectKeyPrefix(input); // before a duplicate is opened
  if (isClient(input)) {
    if (!blocking) return new RedisConnection(input, { ...extra, shared: true }, settings);
    // Cluster.duplicate(startupNodes, options): per-node options live in redisOptions.
    const dup = isClusterClient(input)
      ? input.duplicate([], { redisOptions: { ...(input.options.redisOptions ?? {}), maxRetriesPerRequest: null, ...opts.nodeOptions } })
      : (input.duplicate({ maxRetriesPerRequest: null } as never) as RedisClient);
    return new RedisConnection(dup, { ...extra, shared: false }, settings);
  }
  return new RedisConnection(input ?? {}, { ...extra, shared: false }, settings);
}

/** Closes the connection's client if it owns it (at once when `force`). */
export async function closeConnection(conn: Connection | undefined, force = false): Promise<void> {
  await conn?.close(force);
}
