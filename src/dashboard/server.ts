/**
 * The dashboard web server (node:http): one page, its script and style, a JSON API and
 * Prometheus `/metrics`.
 *
 * Safety, in the order requests meet it:
 * - Every response forbids framing, sniffing and any script but our own file (CSP), and no
 *   response carries CORS headers, so other sites cannot read the API.
 * - Bound to a loopback address, only requests whose Host is a loopback name are served, so a
 *   DNS-rebinding page cannot reach the API under its own host name.
 * - Actions are POST only and need all of: the dashboard started with a token, the header
 *   `Authorization: Bearer <token>`, the custom header `X-Echomq-Action: 1` (a cross-site form
 *   cannot send it, and a cross-site fetch with it needs a CORS preflight that is never
 *   granted), an Origin and Sec-Fetch-Site that say same-origin when the browser sends them,
 *   and a JSON body.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { RedisClient } from '../core/connection.js';
import { DEFAULT_PREFIX } from '../core/keys.js';
import * as v from '../core/validate.js';
import { EchoError, JobNotFoundError } from '../core/errors.js';
import { NotFoundError, UserError, userMessage } from '../operator/target.js';
import { metricsFor } from '../ops/metrics.js';
import { Throughput } from './throughput.js';
import { get, post, HttpError, type ApiContext } from './api.js';
import { PAGE_HTML, PAGE_CSS } from './page.js';
import { pageScript } from './script.js';

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

const MAX_BODY = 64 * 1024;
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);

const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

const digest = (s: string) => createHash('sha256').update(s).digest();

export async function startDashboard(opts: DashboardOptions): Promise<Dashboard> {
  const port = opts.port === undefined ? 7070 : v.integerIn('port', opts.port, 0, 65535);
  const prefix = opts.prefix ?? DEFAULT_PREFIX;
  const host = opts.host ?? '127.0.0.1';
  const token = opts.token && opts.token.length > 0 ? opts.token : undefined;
  const tokenDigest = token ? digest(token) : undefined;
  const throughput = new Throughput(opts.client, prefix);
  const ctx: ApiContext = { target: { client: opts.client, prefix, where: '' }, throughput, readOnly: !token };
  const metrics = metricsFor(opts.client, { prefix });
  const loopbackOnly = LOOPBACK.has(host);
  const appJs = await pageScript();

  function send(res: ServerResponse, status: number, type: string, body: string): void {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  }
  const sendJson = (res: ServerResponse, status: number, value: unknown) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));

  /** Throws HttpError unless the request may perform an action. */
  function checkAction(req: IncomingMessage): void {
    if (!tokenDigest) throw new HttpError(403, 'read-only dashboard: start it with --token to allow actions');
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') throw new HttpError(403, 'cross-site request refused');
    const origin = req.headers.origin;
    if (origin !== undefined && origin !== `http://${req.headers.host}`) throw new HttpError(403, 'cross-origin request refused');
    if (req.headers['x-echomq-action'] !== '1') throw new HttpError(403, 'missing X-Echomq-Action header');
    const auth = req.headers.authorization ?? '';
    const m = /^Bearer (.+)$/.exec(auth);
    if (!m || !timingSafeEqual(digest(m[1]), tokenDigest)) throw new HttpError(401, 'a valid token is required for actions');
    if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'send a JSON body');
  }

  async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY) throw new HttpError(413, 'body too large');
      chunks.push(chunk as Buffer);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (text === '') return {};
    try {
      const v = JSON.parse(text);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new Error();
      return v as Record<string, unknown>;
    } catch {
      throw new HttpError(400, 'body must be a JSON object');
    }
  }

  async function route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const hostName = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (loopbackOnly && !LOOPBACK.has(hostName)) throw new HttpError(421, 'unexpected Host header');
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid');
    const path = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' || method === 'HEAD') {
      if (path === '/') return send(res, 200, 'text/html; charset=utf-8', PAGE_HTML);
      if (path === '/app.js') return send(res, 200, 'text/javascript; charset=utf-8', appJs);
      if (path === '/app.css') return send(res, 200, 'text/css; charset=utf-8', PAGE_CSS);
      if (path === '/metrics') return send(res, 200, metrics.contentType, await metrics.metrics());
      if (path.startsWith('/api/')) return sendJson(res, 200, await get(ctx, segments(path), url.searchParams));
      throw new HttpError(404, 'not found');
    }
    if (method === 'POST' && path.startsWith('/api/')) {
      checkAction(req);
      const body = await readBody(req);
      return sendJson(res, 200, await post(ctx, segments(path), body));
    }
    res.setHeader('Allow', 'GET, HEAD, POST');
    throw new HttpError(405, 'method not allowed');
  }

  const server = createServer((req, res) => {
    route(req, res).catch((err) => {
      if (res.headersSent) return res.destroy();
      const [status, message] = describe(err);
      if (status === 500) process.stderr.write(`echomq dashboard: ${(err as Error)?.stack ?? String(err)}\n`);
      sendJson(res, status, { error: message });
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  throughput.start();
  const bound = (server.address() as AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  return {
    url: `http://${shownHost}:${bound}/`,
    port: bound,
    async close() {
      await throughput.stop();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** `/api/queues/a%2Fb/jobs` → ['queues', 'a/b', 'jobs']. */
function segments(path: string): string[] {
  try {
    return path.slice('/api/'.length).split('/').filter((s) => s !== '').map(decodeURIComponent);
  } catch {
    throw new HttpError(400, 'malformed URL encoding');
  }
}

function describe(err: unknown): [number, string] {
  if (err instanceof HttpError) return [err.status, err.message];
  if (err instanceof NotFoundError || err instanceof JobNotFoundError) return [404, err.message];
  if (err instanceof UserError || err instanceof EchoError) return [400, err.message];
  const msg = userMessage(err); // Redis unreachable and the like
  if (msg !== undefined) return [503, msg];
  return [500, 'internal error (see the dashboard log)'];
}
