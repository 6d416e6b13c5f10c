/**
 * The standalone dashboard (`echomq dashboard`): a node:http server around the same handler an
 * application mounts (handler.ts), plus the one rule only a standalone server can apply: bound
 * to a loopback address, it serves only requests whose Host is a loopback name, so a
 * DNS-rebinding page cannot reach the API under its own host name.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RedisClient } from '../core/connection.js';
import * as v from '../core/validate.js';
import { createDashboardHandler, SECURITY_HEADERS } from './handler.js';

export interface DashboardOptions {
  /** A plain client or an ioredis Cluster (every master's queues are listed). */
  client: RedisClient;
  prefix?: string;
  /** TCP port; 0 picks a free one. Default 7070. */
  port?: number;
  /** Address to listen on. Default 127.0.0.1 (this machine only). */
  host?: string;
  /** Allows actions for requests that present it. Without one the dashboard is read-only. */
  token?: string;
}

export interface Dashboard {
  url: string;
  port: number;
  close(): Promise<void>;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  const port = opts.port === undefined ? 7070 : v.integerIn('port', opts.port, 0, 65535);
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token && opts.token.length > 0 ? opts.token : undefined;
  const handler = createDashboardHandler({ connection: opts.client, prefix: opts.prefix, token });
  const loopbackOnly = LOOPBACK.has(host);

  const server = createServer((req, res) => {
    const hostName = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (loopbackOnly && !LOOPBACK.has(hostName)) {
      const body = JSON.stringify({ error: 'unexpected Host header' });
      res.writeHead(421, { ...SECURITY_HEADERS, 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body) });
      return void res.end(body);
    }
    handler(req, res);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shownHost}:${bound}/`,
    port: bound,
    async close() {
      await handler.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
