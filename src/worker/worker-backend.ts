/**
 * `worker.getBackend()`: the Redis escape hatches of BullMQ 6's RedisQueueBackend, over the
 * worker's real connections. BullMQ 6 moved `worker.client`, `blockingClient`, `redisVersion`
 * and `databaseType` onto its backend object; programs that read them there keep working.
 * BullMQ's backend operations (addJob, moveToActive, waitForJob, …) are its own Lua protocol
 * and have no counterpart here: echomq's transitions are its own scripts (docs/internals.md).
 */
import { closeConnection, type Connection, type RedisClient } from '../core/connection.js';

/** The server's version and type, as the worker's RedisConnection read them (INFO server, once per client). */
export interface ServerInfo {
  /** The server's own version: valkey_version on Valkey, redis_version on Redis ('' when INFO was refused, e.g. by an ACL). */
  version: string;
  /** 'redis', 'valkey' or 'dragonfly' (BullMQ's DatabaseType). */
  type: string;
}

/** BullMQ's RedisConnection status. */
export type ConnectionStatus = 'initializing' | 'ready' | 'closing' | 'closed';

/** What a connection view reads from its worker. */
export interface ConnectionSource {
  /** The connection, or undefined while it is not open. */
  connection(): Connection | undefined;
  /** Opens it if needed (the blocking connection is opened on first use). */
  open(): Connection;
  /** The worker is closing / has closed its connections. */
  closing(): boolean;
  closed(): boolean;
  server(): ServerInfo | undefined;
}

/** BullMQ's RedisConnection as a program sees it: status, client, server version and type, close. */
export class WorkerConnection {
  private closedHere = false;

  constructor(private readonly src: ConnectionSource) {}

  get status(): ConnectionStatus {
    if (this.closedHere || this.src.closed()) return 'closed';
    if (this.src.closing()) return 'closing';
    return this.src.connection()?.client.status === 'ready' ? 'ready' : 'initializing';
  }

  /** The ioredis client (BullMQ: a promise of it). */
  get client(): Promise<RedisClient> {
    return Promise.resolve(this.src.open().client);
  }

  get redisVersion(): string {
    return this.src.server()?.version ?? '';
  }

  get databaseType(): string {
    return this.src.server()?.type ?? 'redis';
  }

  /** Closes the connection if echomq opened it (a client you passed stays open, as in BullMQ). */
  async close(force = false): Promise<void> {
    this.closedHere = true;
    await closeConnection(this.src.connection(), force);
  }

  async disconnect(): Promise<void> {
    await closeConnection(this.src.connection(), true);
  }
}

/** What getBackend() returns (see the file comment). */
export interface WorkerBackend {
  readonly connection: WorkerConnection;
  readonly blockingConnection: WorkerConnection;
  readonly client: Promise<RedisClient>;
  readonly blockingClient: Promise<RedisClient>;
  readonly redisVersion: string;
  readonly databaseType: string;
  readonly minimumBlockTimeout: number;
  readonly maximumBlockTimeout: number;
  readonly qualifiedName: string;
  toKey(type: string): string;
  clientName(suffix?: string): string;
  waitUntilReady(): Promise<void>;
  /** Closes both connections (the worker's own close() also stops its loop: prefer it). */
  close(force?: boolean): Promise<void>;
  disconnect(): Promise<void>;
}

/** What makeBackend needs from its worker. */
export interface BackendHost {
  main: ConnectionSource;
  blocking: ConnectionSource;
  minimumBlockTimeout: number;
  maximumBlockTimeout: number;
  qualifiedName: string;
  toKey(type: string): string;
  clientName(suffix?: string): string;
  waitUntilReady(): Promise<void>;
}

export function makeBackend(host: BackendHost): WorkerBackend {
  const connection = new WorkerConnection(host.main);
  const blockingConnection = new WorkerConnection(host.blocking);
  return {
    connection,
    blockingConnection,
    get client() { return connection.client; },
    get blockingClient() { return blockingConnection.client; },
    get redisVersion() { return connection.redisVersion; },
    get databaseType() { return connection.databaseType; },
    minimumBlockTimeout: host.minimumBlockTimeout,
    maximumBlockTimeout: host.maximumBlockTimeout,
    qualifiedName: host.qualifiedName,
    toKey: (type) => host.toKey(type),
    clientName: (suffix) => host.clientName(suffix),
    waitUntilReady: () => host.waitUntilReady(),
    async close(force = false) {
      await blockingConnection.close(true);
      await connection.close(force);
    },
    async disconnect() {
      await blockingConnection.disconnect();
      await connection.disconnect();
    },
  };
}
