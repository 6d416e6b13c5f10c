/**
 * Redis connections. Every public class accepts a URL, ioredis options, or an existing ioredis
 * client (Redis or Cluster). A client passed in is used as it is and never closed by echomq;
 * clients echomq creates are closed by the owner's close().
 */
import { Redis, Cluster, type RedisOptions } from 'ioredis';

export type RedisClient = Redis | Cluster;
export type ConnectionInput = string | RedisOptions | RedisClient;

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
    const reply = (await client.config('GET', 'maxmemory-policy')) as string[];
    const policy = reply?.[1];
    if (policy && policy !== 'noeviction') {
      console.warn(
        `[echomq] WARNING: Redis maxmemory-policy is "${policy}". Jobs can be evicted and lost; ` +
          'set maxmemory-policy to "noeviction".',
      );
    }
    return policy;
  } catch {
    return undefined; // CONFIG may be disabled or not allowed for this user; nothing to check.
  }
}

function isClient(x: unknown): x is RedisClient {
  return x instanceof Redis || x instanceof Cluster;
}

/**
 * Opens (or adopts) a client. `blocking` clients (used by idle workers for BLPOP) always get a
 * dedicated connection, and commands wait through reconnects instead of failing after a few
 * retries, so a worker survives a Redis restart.
 */
export function openConnection(input: ConnectionInput | undefined, opts: { blocking?: boolean; persistent?: boolean } = {}): Connection {
  const retryForever = opts.blocking || opts.persistent ? { maxRetriesPerRequest: null } : {};
  if (isClient(input)) {
    if (!opts.blocking) return { client: input, owned: false };
    return { client: input.duplicate(retryForever as never) as RedisClient, owned: true };
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
