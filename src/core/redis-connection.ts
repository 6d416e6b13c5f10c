/**
 * RedisConnection: one ioredis client (Redis or Cluster) and what echomq knows about it, with
 * BullMQ's public shape (`extraOptions`, `opts`, `status`, `capabilities`, `redisVersion`,
 * `databaseType`, static `waitUntilReady`, `close`, `disconnect`, `reconnect`). Queue, Worker,
 * QueueEvents, QueueEventsProducer and FlowProducer each hold one as `connection`.
 *
 * Where echomq differs from BullMQ on purpose:
 * - `client` is the ioredis client itself, as `queue.client` is in echomq (BullMQ: a promise of
 *   it). `await connection.client` therefore works as in BullMQ, without waiting for readiness;
 *   `initializing` is the promise that does (it resolves to the client, or rejects with the
 *   error that kept it from connecting, e.g. `connect ECONNREFUSED 127.0.0.1:1234`).
 * - the default `clientInfoTag` is `echomq_v<version>` (BullMQ's `bullmq_v<version>`): the
 *   library that opened a connection is what CLIENT LIST should show.
 * - `minimumVersion` is 6.2.0 (BullMQ's 5.0.0): echomq's scripts use LMOVE and SMISMEMBER.
 *
 * Which client a Queue or Worker gets (shared, duplicated for blocking reads, retrying forever)
 * is echomq's policy and lives in connection.ts (openConnection); this class takes what it is
 * given: a client is used as it is.
 */
import { EventEmitter } from 'node:events';
import { readFileSync } from 'node:fs';
import { Redis, Cluster, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';
import { ConnectionClosedError, CONNECTION_CLOSED_ERROR_MSG } from './errors.js';
import { fail, failAs, integerIn } from './validate.js';
import { DEFAULT_CONNECT_WAIT_MS, watchCalls } from './connection-wait.js';

export type RedisClient = Redis | Cluster;
/**
 * A Redis Cluster to connect to: seed nodes (any subset of the cluster) and ioredis
 * ClusterOptions (per-node connection options go in `options.redisOptions`).
 */
export interface ClusterConnection {
  cluster: { nodes: ClusterNode[]; options?: ClusterOptions };
}
/**
 * ioredis options, plus BullMQ's `url` (wins over host and port) and `skipVersionCheck`, and
 * echomq's `connectWaitMs`: how long a call waits for a connection before it rejects with
 * RedisUnreachableError (default 5000; null: no bound). The client keeps reconnecting meanwhile.
 */
export type ConnectionOptions = RedisOptions & { url?: string; skipVersionCheck?: boolean; connectWaitMs?: number | null };
export type ConnectionInput = string | ConnectionOptions | ClusterConnection | RedisClient;

/** BullMQ's second constructor argument. */
export interface RedisConnectionExtraOptions {
  /** The client belongs to someone else: close() leaves it open. */
  shared?: boolean;
  /** Commands wait through reconnects (maxRetriesPerRequest null), as blocking reads need. */
  blocking?: boolean;
  /** Do not read the server's version (redisVersion is then minimumVersion). */
  skipVersionCheck?: boolean;
  /** `initializing` does not wait for the client to be ready. */
  skipWaitingForReady?: boolean;
}

/** echomq's own settings of a connection it opens (not part of BullMQ's extraOptions). */
export interface OpenSettings {
  /** Commands wait through reconnects although this is not the blocking connection (a Worker's). */
  retryForever?: boolean;
}

export type DatabaseType = 'redis' | 'valkey' | 'dragonfly';

interface RedisCapabilities {
  canDoubleTimeout: boolean;
  canBlockFor1Ms: boolean;
}

const PACKAGE_VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
})();

/** True for an ioredis Cluster client. */
export function isClusterClient(client: RedisClient): client is Cluster {
  return (client as { isCluster?: boolean }).isCluster === true;
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

export function isClusterInput(x: unknown): x is ClusterConnection {
  return typeof x === 'object' && x !== null && 'cluster' in x && typeof (x as ClusterConnection).cluster === 'object';
}

/**
 * Refuses an ioredis key prefix, as BullMQ does: echomq builds every key itself (the `prefix`
 * option), and a client that prefixes keys again would address other keys than the scripts'.
 */
export function rejectKeyPrefix(input: unknown): void {
  type Prefixed = { keyPrefix?: unknown; redisOptions?: { keyPrefix?: unknown } };
  const o = (isClient(input) ? input.options : input) as (Prefixed & { cluster?: { options?: Prefixed } }) | undefined;
  if (typeof o !== 'object' || o === null) return;
  const found = o.keyPrefix ?? o.redisOptions?.keyPrefix ?? o.cluster?.options?.keyPrefix ?? o.cluster?.options?.redisOptions?.keyPrefix;
  if (found !== undefined && found !== '') {
    failAs('BullMQ: ioredis does not support ioredis prefixes, use the prefix option instead.', 'connection.keyPrefix', 'absent (use the prefix option)', found);
  }
}

/** The forms of a connection string ioredis reads as its user means them. */
const URL_FORMS = 'a redis:// or rediss:// URL (redis://[user:password@]host[:port][/db]), host:port, a port number or a Unix socket path (/path/to/redis.sock)';

/**
 * Refuses a connection string ioredis would misread: another scheme (`http://…`), or a string
 * without one whose path part it would take for a socket path (`redis//localhost:6600` becomes
 * the socket `//localhost:6600`). Socket paths, bare ports and host:port stay valid.
 */
export function checkConnectionUrl(url: unknown, field: string): void {
  if (typeof url !== 'string' || url === '') fail(field, URL_FORMS, url);
  if (/^\d+$/.test(url) || (url.startsWith('/') && !url.startsWith('//'))) return;
  let ok = false;
  try {
    if (/^rediss?:\/\//i.test(url)) ok = new URL(url) !== undefined;
    else if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
      const u = new URL(url.startsWith('//') ? `redis:${url}` : `redis://${url}`);
      ok = url.startsWith('//') || u.pathname === '' || u.pathname === '/';
    }
  } catch {
    ok = false;
  }
  if (!ok) fail(field, URL_FORMS, url);
}

/** "a.b.c" < "x.y.z", numerically per part (a missing part is 0). */
function versionLower(version: string, than: string): boolean {
  const a = version.split('.').map((p) => parseInt(p, 10) || 0);
  const b = than.split('.').map((p) => parseInt(p, 10) || 0);
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if ((a[i] ?? 0) !== (b[i] ?? 0)) return (a[i] ?? 0) < (b[i] ?? 0);
  }
  return false;
}

/** The server's version and kind, from INFO server (one read per client, shared by its connections). */
const serverInfo = new WeakMap<object, Promise<{ version: string; databaseType: DatabaseType }>>();

function readServerInfo(client: RedisClient): Promise<{ version: string; databaseType: DatabaseType }> {
  let p = serverInfo.get(client);
  if (!p) {
    p = (client.info('server') as Promise<string>).then((doc) => {
      const f = new Map<string, string>();
      for (const line of doc.split(/\r?\n/)) {
        const at = line.indexOf(':');
        if (at > 0) f.set(line.slice(0, at), line.slice(at + 1));
      }
      const databaseType: DatabaseType = f.has('dragonfly_version') || f.get('server') === 'Dragonfly' ? 'dragonfly'
        : f.has('valkey_version') || f.get('server_name') === 'valkey' ? 'valkey' : 'redis';
      const version = f.get(`${databaseType}_version`) ?? f.get('redis_version') ?? RedisConnection.minimumVersion;
      return { version, databaseType };
    });
    serverInfo.set(client, p);
    // A failed read (a connection lost meanwhile) is tried again by the next connection.
    p.catch(() => serverInfo.delete(client));
  }
  return p;
}

export class RedisConnection extends EventEmitter {
  /** The oldest server echomq runs on (its scripts use LMOVE and SMISMEMBER). */
  static minimumVersion = '6.2.0';
  static recommendedMinimumVersion = '6.2.0';

  readonly extraOptions: Required<RedisConnectionExtraOptions>;
  /** The options the client was (or is) configured with: for a Cluster, its per-node redisOptions. */
  readonly opts: ConnectionOptions;
  status: 'initializing' | 'ready' | 'closing' | 'closed' = 'initializing';
  capabilities: RedisCapabilities = { canDoubleTimeout: false, canBlockFor1Ms: true };
  closing = false;
  /** Resolves to the client once it is ready (see skipWaitingForReady) and its version read. */
  readonly initializing: Promise<RedisClient>;
  private readonly raw: RedisClient;
  private version: string = RedisConnection.minimumVersion;
  private dbType: DatabaseType = 'redis';
  private closed: Promise<void> | undefined;

  constructor(opts: ConnectionInput = {}, extraOptions: RedisConnectionExtraOptions = {}, settings: OpenSettings = {}) {
    super();
    this.extraOptions = { shared: false, blocking: true, skipVersionCheck: false, skipWaitingForReady: false, ...extraOptions };
    rejectKeyPrefix(opts);
    const retryForever = this.extraOptions.blocking || settings.retryForever ? { maxRetriesPerRequest: null } : {};
    if (isClient(opts)) {
      this.raw = opts;
      const o = (isClusterClient(opts) ? opts.options.redisOptions : opts.options) ?? {};
      this.opts = o;
      // BullMQ's rule: a client given for blocking reads must wait through reconnects.
      if (this.extraOptions.blocking && o.maxRetriesPerRequest !== null && o.maxRetriesPerRequest !== undefined) {
        failAs('BullMQ: Your redis options maxRetriesPerRequest must be null.', 'connection.maxRetriesPerRequest', 'null for a blocking connection', o.maxRetriesPerRequest);
      }
    } else if (isClusterInput(opts)) {
      const options = opts.cluster.options ?? {};
      const redisOptions: RedisOptions = { clientInfoTag: `echomq_v${PACKAGE_VERSION}`, ...(options.redisOptions ?? {}), ...retryForever };
      this.opts = redisOptions;
      this.raw = new Cluster(opts.cluster.nodes, { ...options, redisOptions });
    } else {
      const base = { ...retryForever, enableReadyCheck: true };
      let waitMs: number | null = DEFAULT_CONNECT_WAIT_MS;
      if (typeof opts === 'string') {
        checkConnectionUrl(opts, 'connection');
        this.opts = { clientInfoTag: `echomq_v${PACKAGE_VERSION}`, ...base };
        this.raw = new Redis(opts, this.opts);
      } else {
        const { url, connectWaitMs, ...rest } = opts;
        if (url !== undefined && url !== '') checkConnectionUrl(url, 'connection.url'); // '' reads as absent, as before
        if (connectWaitMs !== undefined) {
          waitMs = connectWaitMs === null ? null : integerIn('connection.connectWaitMs', connectWaitMs, 0, 2_147_483_647, 'an integer of ms >= 0, or null for no bound');
        }
        this.opts = { clientInfoTag: `echomq_v${PACKAGE_VERSION}`, ...rest, ...base };
        this.raw = url ? new Redis(url, this.opts) : new Redis(this.opts);
        if (url) this.opts.url = url;
        if (connectWaitMs !== undefined) this.opts.connectWaitMs = connectWaitMs;
      }
      // A blocking read waits for as long as ioredis keeps it (a worker's idle BLPOP).
      watchCalls(this.raw as Redis, this.extraOptions.blocking ? null : waitMs);
    }
    if (this.opts.skipVersionCheck === true) this.extraOptions.skipVersionCheck = true;
    this.initializing = this.init();
    // Surfaced by the owner's waitUntilReady(); connection errors also reach its 'error' listeners.
    this.initializing.catch((err: unknown) => {
      if (this.listenerCount('error') > 0) this.emit('error', err);
    });
  }

  /** The ioredis client (echomq's; BullMQ's is a promise of it, so `await connection.client` works as there). */
  get client(): RedisClient {
    return this.raw;
  }

  /** BullMQ's name of the client (protected there; some programs reach it). */
  get _client(): RedisClient {
    return this.raw;
  }

  /** true when this connection opened the client and must close it. */
  get owned(): boolean {
    return !this.extraOptions.shared;
  }

  /** The server's version (minimumVersion until read, or when skipVersionCheck). */
  get redisVersion(): string {
    return this.version;
  }

  get databaseType(): DatabaseType {
    return this.dbType;
  }

  /**
   * Resolves when the client is ready (connecting a lazy client first); rejects with the error
   * that ended the connection (e.g. ECONNREFUSED with `retryStrategy: () => null`), or a
   * ConnectionClosedError for a client already ended.
   */
  static async waitUntilReady(client: RedisClient): Promise<void> {
    if (client.status === 'ready') return;
    if (client.status === 'connect' && isClusterClient(client)) return;
    if (client.status === 'wait') return void (await client.connect());
    if (client.status === 'end') throw new ConnectionClosedError(CONNECTION_CLOSED_ERROR_MSG);
    let lastError: Error | undefined;
    const onError = (err: Error) => (lastError = err);
    let onReady!: () => void;
    let onEnd!: () => void;
    const max = client.getMaxListeners();
    if (max > 0) client.setMaxListeners(max + 3);
    try {
      await new Promise<void>((resolve, reject) => {
        onReady = resolve;
        onEnd = () => reject(lastError ?? new ConnectionClosedError(CONNECTION_CLOSED_ERROR_MSG));
        client.once('ready', onReady);
        client.once('end', onEnd);
        client.on('error', onError);
      });
    } finally {
      client.off('ready', onReady);
      client.off('end', onEnd);
      client.off('error', onError);
      if (max > 0) client.setMaxListeners(Math.max(max, client.getMaxListeners() - 3));
    }
  }

  private async init(): Promise<RedisClient> {
    if (!this.extraOptions.skipWaitingForReady) await RedisConnection.waitUntilReady(this.raw);
    if (!this.extraOptions.skipVersionCheck && this.raw.status !== 'end') {
      let info: { version: string; databaseType: DatabaseType } | undefined;
      try {
        info = await readServerInfo(this.raw);
      } catch (err) {
        // INFO may be refused to this user (ACL), or the connection lost meanwhile (ioredis
        // reconnects): run without knowing the version, unless the connection is gone for good.
        if ((this.raw.status as string) === 'end') throw err;
      }
      if (info) {
        this.version = info.version;
        this.dbType = info.databaseType;
        if (this.dbType === 'redis' && !this.closing && versionLower(this.version, RedisConnection.minimumVersion)) {
          throw new Error(`Redis version needs to be greater or equal than ${RedisConnection.minimumVersion} Current: ${this.version}`);
        }
      }
    }
    const known = this.dbType === 'redis' ? this.version : '7.0.8';
    this.capabilities = { canDoubleTimeout: !versionLower(known, '6.0.0'), canBlockFor1Ms: !versionLower(known, '7.0.8') };
    if (!this.closing) this.status = 'ready';
    return this.raw;
  }

  /**
   * Closes the client if this connection owns it (a shared one stays open): QUIT, so replies
   * already asked for arrive; at once when `force`, or when the client is not connected (a QUIT
   * would wait for a connection that may never come). Idempotent.
   */
  close(force = false): Promise<void> {
    if (this.closed) return this.closed;
    this.closing = true;
    this.status = 'closing';
    this.initializing.catch(() => {});
    this.closed = (async () => {
      if (this.owned) {
        const c = this.raw;
        if (force || c.status === 'wait' || c.status === 'end') c.disconnect();
        else {
          try {
            // QUIT's reply comes before the socket closes: wait for 'end', so a closed
            // connection reads as ended (BullMQ sets the status by hand instead). Only with a
            // socket open or opening: while reconnecting there is none left to close.
            const open = !isClusterClient(c) && ['ready', 'connect', 'connecting'].includes(c.status);
            const ended = open ? new Promise<void>((resolve) => c.once('end', () => resolve())) : undefined;
            await c.quit();
            await ended;
          } catch {
            c.disconnect();
          }
        }
      }
      this.status = 'closed';
    })();
    return this.closed;
  }

  /** Drops the connection at once (also a shared client, as BullMQ's); `wait`: until it has ended. */
  async disconnect(wait = true): Promise<void> {
    const c = this.raw;
    if (c.status === 'end') return;
    const ended = wait ? new Promise<void>((resolve) => c.once('end', () => resolve())) : undefined;
    c.disconnect();
    await ended;
  }

  /** Connects again after disconnect(), or waits for a reconnect in progress. */
  async reconnect(): Promise<void> {
    const c = this.raw;
    for (;;) {
      if (c.status === 'ready' || (c.status === 'connect' && isClusterClient(c))) return;
      if (c.status === 'wait' || (c.status as string) === 'end') return void (await c.connect());
      try {
        await RedisConnection.waitUntilReady(c);
      } catch (err) {
        if (!['end', 'connecting', 'connect', 'reconnecting'].includes(c.status)) throw err;
      }
    }
  }
}
