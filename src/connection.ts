/**
 * Redis connections. Every public class accepts a URL, ioredis options, or an existing ioredis
 * client (Redis or Cluster). A client passed in is used as it is and never closed by echomq;
 * clients echomq creates are closed by the owner's close().
 */
import { failAs } from './validate.js';
import { Redis, Cluster, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;
/**
 * A Redis Cluster to connect to: seed nodes (any subset of the cluster) and ioredis
 * ClusterOptions (per-node connection options go in `options.redisOptions`).
 */
export interface ClusterConnection {
  cluster: { nodes: ClusterNode[]; options?: ClusterOptions };
}
export type ConnectionInput = string | RedisOptions | ClusterConnection | RedisClient;

/** True for an ioredis Cluster client. */
export function isClusterClient(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
}

/** The master nodes of a Cluster once it is connected (a one-element list for a plain client). */
export async function masterNodes(client: RedisClient): Promise<Redis[]> {
  if (!isClusterClient(client)) return [client];
  if (client.status !== 'ready') await client.ping(); // waits for the slot map (offline queue)
  return client.nodes('master');
}

export interface Connection {
  readonly client: RedisClient;
  /** true when echomq created the client and must close it. */
  readonly owned: boolean;
}

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
 * An ioredis client (Redis or Cluster) of any copy or major version of ioredis, recognised by
 * its shape rather than `instanceof`: an application's own ioredis (5 or 6, installed beside
 * ours) is a different class, and treating it as options would open a second, unconfigured
 * client (every call then fails with MaxRetriesPerRequestError).
 */
export function isClient(x: unknown): x is RedisClient {
  if (x instanceof Redis || x instanceof Cluster) return true;
  if (typeof x !== 'object' || x === null) return false;
  const c = x as Record<string, unknown>;
  return typeof c.duplicate === 'function' && typeof c.connect === 'function' && typeof c.status === 'string'
    && typeof c.options === 'object' && c.options !== null && typeof c.sendCommand === 'function';
}

function isClusterInput(x: unknown): x is ClusterConnection {
  return typeof x === 'object' && x !== null && 'cluster' in x && typeof (x as ClusterConnection).cluster === 'object';
}

/** A Cluster client whose per-node connections use `extra` on top of `options.redisOptions`. */
function newCluster(nodes: ClusterNode[], options: ClusterOptions = {}, extra: RedisOptions = {}): Cluster {
  return new Cluster(nodes, { ...options, redisOptions: { ...(options.redisOptions ?? {}), ...extra } });
}

/**
 * Opens (or adopts) a client. `blocking` clients (used by idle workers for BLPOP) always get a
 * dedicated connection, and commands wait through reconnects instead of failing after a few
 * retries, so a worker survives a Redis restart.
 */
/**
 * Refuses an ioredis key prefix, as BullMQ does: echomq builds every key itself (the `prefix`
 * option), and a client that prefixes keys again would address other keys than the scripts'.
 */
function rejectKeyPrefix(input: unknown): void {
  const o = (isClient(input) ? input.options : input) as { keyPrefix?: unknown; redisOptions?: { keyPrefix?: unknown }; cluster?: { options?: { keyPrefix?: unknown; redisOptions?: { keyPrefix?: unknown } } } } | undefined;
  if (typeof o !== 'object' || o === null) return;
  const found = o.keyPrefix ?? o.redisOptions?.keyPrefix ?? o.cluster?.options?.keyPrefix ?? o.cluster?.options?.redisOptions?.keyPrefix;
  if (found !== undefined && found !== '') {
    failAs('BullMQ: ioredis does not support ioredis prefixes, use the prefix option instead.', 'connection.keyPrefix', 'absent (use the prefix option)', found);
  }
}

export function openConnection(input: ConnectionInput | undefined, opts: { blocking?: boolean; persistent?: boolean } = {}): Connection {
  const retryForever = opts.blocking || opts.persistent ? { maxRetriesPerRequest: null } : {};
  rejectKeyPrefix(input);
  if (isClient(input)) {
    if (!opts.blocking) return { client: input, owned: false };
    if (isClusterClient(input)) {
      // Cluster.duplicate(startupNodes, options): per-node options live in redisOptions.
      const o = input.options;
      return { client: input.duplicate([], { redisOptions: { ...(o.redisOptions ?? {}), ...retryForever } }), owned: true };
    }
    return { client: input.duplicate(retryForever as never) as RedisClient, owned: true };
  }
  if (isClusterInput(input)) {
    return { client: newCluster(input.cluster.nodes, input.cluster.options, retryForever), owned: true };
  }
  const base: RedisOptions = { ...retryForever, enableReadyCheck: true };
  const client =
    typeof input === 'string'
      ? new Redis(input, base)
      : new Redis({ ...(input ?? {}), ...base });
  return { client, owned: true };
}

export async function closeConnection(conn: Connection | undefined, force = false): Promise<void> {
  if (!conn || !conn.owned) return;
  const c = conn.client;
  if (force || c.status === 'wait' || c.status === 'end') {
    c.disconnect();
    return;
  }
  try {
    await c.quit();
  } catch {
    c.disconnect();
  }
}
