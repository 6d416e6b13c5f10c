/**
 * `echomq/dashboard`: the dashboard as a Node request handler, `(req, res, next?)`, to mount
 * under a path of any server (Express/Connect middleware, Fastify with `reply.hijack()`, NestJS,
 * plain node:http). It serves the page, its script and style, the JSON API and `/metrics` under
 * `basePath`, and calls `next()` (or answers 404 when there is none) for anything else.
 *
 * Safety, in the order requests meet it:
 * - Every response forbids framing, sniffing and any script but our own file (CSP), and no
 *   response carries CORS headers, so other sites cannot read the API.
 * - Actions are POST only and need all of: actions allowed (`readOnly` false), the token when
 *   one is set (`Authorization: Bearer <token>`), the custom header `X-Echomq-Action: 1` (a
 *   cross-site form cannot send it, and a cross-site fetch with it needs a CORS preflight that is
 *   never granted), an Origin and Sec-Fetch-Site that say same-origin when the browser sends them,
 *   and a JSON body. Same origin is judged against the scheme and host the browser used, which
 *   behind a TLS proxy are X-Forwarded-Proto and X-Forwarded-Host (simple cross-site requests
 *   cannot set those headers).
 * The loopback Host rule (against DNS rebinding) belongs to the standalone server (server.ts),
 * which knows it listens on a loopback address; a host application has its own host names.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createHash, timingSafeEqual } from 'node:crypto';
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import { DEFAULT_PREFIX } from '../core/keys.js';
import * as v from '../core/validate.js';
import { EchoError, JobNotFoundError } from '../core/errors.js';
import { NotFoundError, UserError, userMessage } from '../operator/target.js';
import { metricsFor } from '../ops/metrics.js';
import { Throughput } from './throughput.js';
import { get, post, HttpError, type ApiContext } from './api.js';
import { PAGE_HTML, PAGE_CSS } from './page.js';
import { pageScript } from './bundle.js';

export interface DashboardHandlerOptions {
  /**
   * An ioredis client or Cluster (left open by close()), or a redis:// URL or ioredis options
   * (a client made and closed by the handler). A URL or options naming any node of a Redis
   * Cluster make a Cluster client, so every master's queues are listed.
   */
  connection: Redis | Cluster | string | RedisOptions;
  prefix?: string;
  /** Where the dashboard is mounted, e.g. `/admin/queues`. Default `/`. */
  basePath?: string;
  /** Actions need `Authorization: Bearer <token>`. */
  token?: string;
  /**
   * No actions at all. Default: true without a token, false with one. `readOnly: true` wins over
   * a token; `readOnly: false` without a token leaves actions to the host's own authentication.
   */
  readOnly?: boolean;
}

export type NextFunction = (err?: unknown) => void;

export interface DashboardHandler {
  (req: IncomingMessage, res: ServerResponse, next?: NextFunction): void;
  readonly basePath: string;
  readonly readOnly: boolean;
  /** Stops the throughput reader and closes the Redis client the handler made itself. */
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

export const SECURITY_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

const digest = (s: string) => createHash('sha256').update(s).digest();

/** `/admin/queues/` → `/admin/queues`; `/` → ``. */
function normalizeBase(p: unknown): string {
  if (p === undefined) return '';
  const s = v.string('basePath', p);
  if (!/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/.test(s)) v.fail('basePath', 'a URL path starting with "/"', p);
  return s.replace(/\/+$/, '');
}

function isRedis(c: unknown): c is Redis | Cluster {
  return typeof c === 'object' && c !== null && typeof (c as Redis).hget === 'function' && typeof (c as Redis).pipeline === 'function';
}

/** First value of a header that proxies may repeat or list. */
function first(h: string | string[] | undefined): string | undefined {
  const s = Array.isArray(h) ? h[0] : h;
  return s?.split(',')[0].trim() || undefined;
}

/** The origin the browser used: the request's own scheme and Host, or what the proxy says they were. */
export function requestOrigin(req: IncomingMessage): string {
  const proto = first(req.headers['x-forwarded-proto']) ?? ((req.socket as { encrypted?: boolean }).encrypted ? 'https' : 'http');
  const host = first(req.headers['x-forwarded-host']) ?? req.headers.host ?? '';
  return `${proto}://${host}`.toLowerCase();
}

export function createDashboardHandler(opts: DashboardHandlerOptions): DashboardHandler {
  if (typeof opts !== 'object' || opts === null) v.fail('options', 'an object', opts);
  const c = opts.connection;
  if (c === undefined || c === null || (typeof c !== 'string' && typeof c !== 'object')) {
    v.fail('connection', 'an ioredis client, a redis:// URL or ioredis options', c);
  }
  const prefix = opts.prefix === undefined ? DEFAULT_PREFIX : v.prefix(opts.prefix);
  const base = normalizeBase(opts.basePath);
  if (opts.token !== undefined && (typeof opts.token !== 'string' || opts.token.length === 0)) v.fail('token', 'a non-empty string', opts.token);
  if (opts.readOnly !== undefined && typeof opts.readOnly !== 'boolean') v.fail('readOnly', 'a boolean', opts.readOnly);
  const tokenDigest = opts.token ? digest(opts.token) : undefined;
  const readOnly = opts.readOnly ?? tokenDigest === undefined;

  const owned = !isRedis(c);
  // A dashboard keeps polling through an outage: commands fail fast (one retry) and the
  // client reconnects in the background, so the page recovers by itself.
  const persistent: RedisOptions = { maxRetriesPerRequest: 1, retryStrategy: (n) => Math.min(n * 200, 2000) };
  const given = isRedis(c) ? c : typeof c === 'string' ? new Redis(c, persistent) : new Redis({ ...persistent, ...(c as RedisOptions) });
  if (owned) given.on('error', () => undefined); // reported per request as "cannot reach Redis"
  const seed = given instanceof Cluster ? (given as unknown as { startupNodes: Array<{ host?: string; port?: number }> }).startupNodes[0] : given.options;
  const where = `${seed?.host ?? '127.0.0.1'}:${seed?.port ?? 6379}`;
  let client: Redis = given as Redis;
  let throughput!: Throughput;
  let ctx!: ApiContext;
  let metrics!: ReturnType<typeof metricsFor>;
  let ready: Promise<void> | undefined;
  /** A Cluster client the handler made from a node's client, closed by close(). */
  let madeCluster: Cluster | undefined;
  /**
   * On first use: a node of a Cluster (a URL, options, or a plain client connected to one, as
   * `echomq dashboard --redis <node>` gives) is replaced by a Cluster client of its own.
   */
  const setup = (): Promise<void> =>
    (ready ??= (async () => {
      if (!(given instanceof Cluster)) {
        const info = await given.info('cluster').catch(() => ''); // Redis down: stay with the plain client
        if (/cluster_enabled:1/.test(info)) {
          const o = (given as Redis).options;
          if (owned) given.disconnect();
          const cl = new Cluster([{ host: o.host, port: o.port }], {
            redisOptions: { ...persistent, username: o.username, password: o.password, tls: o.tls },
            clusterRetryStrategy: (n) => Math.min(n * 200, 2000),
          });
          cl.on('error', () => undefined);
          // Until the slots are known, nodes('master') lists only the seed: wait (bounded) for them.
          await new Promise<void>((resolve) => {
            const t = setTimeout(resolve, 5000);
            cl.once('ready', () => {
              clearTimeout(t);
              resolve();
            });
          });
          client = cl as unknown as Redis;
          madeCluster = cl;
        }
      }
      throughput = new Throughput(client, prefix);
      throughput.start();
      ctx = { target: { client, prefix, where }, throughput, readOnly, tokenRequired: tokenDigest !== undefined };
      metrics = metricsFor(client, { prefix });
    })());

  function send(res: ServerResponse, status: number, type: string, body: string, head = false): void {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': Buffer.byteLength(body) });
    res.end(head ? undefined : body);
  }
  const sendJson = (res: ServerResponse, status: number, value: unknown) =>
    send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));

  /** Throws HttpError unless the request may perform an action. */
  function checkAction(req: IncomingMessage): void {
    if (readOnly) throw new HttpError(403, 'read-only dashboard: start it with a token to allow actions');
    const site = req.headers['sec-fetch-site'];
    if (site !== undefined && site !== 'same-origin') throw new HttpError(403, 'cross-site request refused');
    const origin = req.headers.origin;
    if (origin !== undefined && origin.toLowerCase() !== requestOrigin(req)) throw new HttpError(403, 'cross-origin request refused');
    if (req.headers['x-echomq-action'] !== '1') throw new HttpError(403, 'missing X-Echomq-Action header');
    if (tokenDigest) {
      const m = /^Bearer (.+)$/.exec(req.headers.authorization ?? '');
      if (!m || !timingSafeEqual(digest(m[1]), tokenDigest)) throw new HttpError(401, 'a valid token is required for actions');
    }
    if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) throw new HttpError(415, 'send a JSON body');
  }

  async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
    // A host framework may have parsed the body already (express.json()).
    const parsed = (req as { body?: unknown }).body;
    if (parsed !== undefined && typeof parsed === 'object' && parsed !== null && !Buffer.isBuffer(parsed)) {
      if (Array.isArray(parsed)) throw new HttpError(400, 'body must be a JSON object');
      return parsed as Record<string, unknown>;
    }
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
      const val = JSON.parse(text);
      if (typeof val !== 'object' || val === null || Array.isArray(val)) throw new Error();
      return val as Record<string, unknown>;
    } catch {
      throw new HttpError(400, 'body must be a JSON object');
    }
  }

  /** Answers a request under the base path; `rest` is the path after it ('' or '/…'). */
  async function route(req: IncomingMessage, res: ServerResponse, rest: string, search: string): Promise<void> {
    const method = req.method ?? 'GET';
    if (method === 'GET' || method === 'HEAD') {
      const head = method === 'HEAD';
      if (rest === '') {
        // The page's links are relative, so it must be served at a path ending in "/".
        res.writeHead(308, { ...SECURITY_HEADERS, Location: `${base}/${search}` });
        return void res.end();
      }
      if (rest === '/') return send(res, 200, 'text/html; charset=utf-8', PAGE_HTML, head);
      if (rest === '/app.js') return send(res, 200, 'text/javascript; charset=utf-8', await pageScript(), head);
      if (rest === '/app.css') return send(res, 200, 'text/css; charset=utf-8', PAGE_CSS, head);
      if (rest === '/metrics') return send(res, 200, metrics.contentType, await metrics.metrics(), head);
      if (rest.startsWith('/api/')) return sendJson(res, 200, await get(ctx, segments(rest), new URLSearchParams(search)));
      throw new HttpError(404, 'not found');
    }
    if (method === 'POST' && rest.startsWith('/api/')) {
      checkAction(req);
      const body = await readBody(req);
      return sendJson(res, 200, await post(ctx, segments(rest), body));
    }
    res.setHeader('Allow', 'GET, HEAD, POST');
    throw new HttpError(405, 'method not allowed');
  }

  function fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) return void res.destroy();
    const [status, message] = describeError(err, client.status === 'ready' ? undefined : where);
    if (status === 500) process.stderr.write(`echomq dashboard: ${(err as Error)?.stack ?? String(err)}\n`);
    sendJson(res, status, { error: message });
  }

  const handler = ((req: IncomingMessage, res: ServerResponse, next?: NextFunction) => {
    // Express strips a mount path into req.url and keeps the full one in originalUrl.
    const full = (req as { originalUrl?: string }).originalUrl ?? req.url ?? '/';
    const q = full.indexOf('?');
    const path = q < 0 ? full : full.slice(0, q);
    const search = q < 0 ? '' : full.slice(q);
    const inside = path === base || path.startsWith(base + '/') || (base === '' && path === '');
    if (!inside) {
      if (next) return next();
      return sendJson(res, 404, { error: 'not found' });
    }
    setup()
      .then(() => route(req, res, base === '' && path === '/' ? '/' : path.slice(base.length), search))
      .catch((err) => fail(res, err));
  }) as DashboardHandler;
  Object.defineProperties(handler, {
    basePath: { value: base === '' ? '/' : base },
    readOnly: { value: readOnly },
    close: {
      value: async () => {
        await ready?.catch(() => undefined);
        await throughput?.stop();
        if (owned) given.disconnect();
        madeCluster?.disconnect();
      },
    },
  });
  return handler;
}

/** `/api/queues/a%2Fb/jobs` → ['queues', 'a/b', 'jobs']. */
function segments(path: string): string[] {
  try {
    return path.slice('/api/'.length).split('/').filter((s) => s !== '').map(decodeURIComponent);
  } catch {
    throw new HttpError(400, 'malformed URL encoding');
  }
}

/** Status and one plain line for an error; with Redis down (`down` = its host:port) says so. */
function describeError(err: unknown, down: string | undefined): [number, string] {
  if (err instanceof HttpError) return [err.status, err.message];
  if (err instanceof NotFoundError || err instanceof JobNotFoundError) return [404, err.message];
  if (err instanceof UserError || err instanceof EchoError) return [400, err.message];
  const msg = userMessage(err); // Redis unreachable and the like
  if (msg !== undefined && down !== undefined) return [503, `cannot reach Redis at ${down}`];
  if (msg !== undefined) return [503, msg];
  return [500, 'internal error (see the dashboard log)'];
}
