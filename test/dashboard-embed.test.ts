// echomq/dashboard's createDashboardHandler mounted in other servers: plain node:http with a
// fallback, and Express under a base path driven by real Chromium (deep link to a job, an
// action with the token, the host app's own routes untouched), then the dashboard's Redis
// (a private redis-server) stopped and started again under the open page.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import express from 'express';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Queue } from '../src/index.js';
import { createDashboardHandler, type DashboardHandler } from '../src/dashboard/handler.js';
// @ts-expect-error plain ESM helper without types
import { startRedisServer } from '../scripts/redis-server.mjs';
import { client, qname, rawHttp as raw, redisUrl, waitFor } from './helpers.js';

const { path: CHROMIUM, reason } = inject('chromium');
const have = CHROMIUM !== null;
if (!have && process.env.CI) throw new Error(reason);

const prefix = `emb-${randomUUID().slice(0, 8)}`;
const TOKEN = 'embed-token-42';

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

const JSON_ACTION = { 'Content-Type': 'application/json', 'X-Echomq-Action': '1' };

describe('createDashboardHandler in node:http', () => {
  const redis = client();
  const servers: Server[] = [];
  const handlers: DashboardHandler[] = [];
  let q: Queue;

  beforeAll(async () => {
    q = new Queue(qname('emb'), { connection: redisUrl(), prefix });
    await q.add('a', { n: 1 }, { lane: 'acme' });
  });
  afterAll(async () => {
    for (const h of handlers) await h.close();
    for (const s of servers) s.close();
    await q.close();
    redis.disconnect();
  });

  async function mount(opts: Parameters<typeof createDashboardHandler>[0], fallback = true): Promise<string> {
    const h = createDashboardHandler(opts);
    handlers.push(h);
    const s = createServer((req, res) => h(req, res, fallback ? () => res.end('host app') : undefined));
    servers.push(s);
    return listen(s);
  }

  it('serves under basePath only and leaves the rest to next() or a 404', async () => {
    const url = await mount({ connection: redis, prefix, basePath: '/ops/queues/' });
    expect((await raw(`${url}/`)).body).toBe('host app');
    expect((await raw(`${url}/ops/queuesx`)).body).toBe('host app');
    const redirect = await raw(`${url}/ops/queues?queue=x`);
    expect([redirect.status, redirect.headers.location]).toEqual([308, '/ops/queues/?queue=x']);
    const page = await raw(`${url}/ops/queues/`);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.body).toContain('src="app.js"'); // relative: works under any base path
    expect((await raw(`${url}/ops/queues/app.js`)).headers['content-type']).toMatch(/^text\/javascript/);
    const status = JSON.parse((await raw(`${url}/ops/queues/api/queues/${encodeURIComponent(q.name)}`)).body);
    expect(status.lanes.map((l: { name: string }) => l.name)).toEqual(['acme']);

    const bare = await mount({ connection: redis, prefix, basePath: '/ops' }, false);
    const r = await raw(`${bare}/elsewhere`);
    expect([r.status, JSON.parse(r.body)]).toEqual([404, { error: 'not found' }]);
  });

  it('checks same origin against the scheme and host the browser used, behind a TLS proxy too', async () => {
    const url = await mount({ connection: redis, prefix, token: TOKEN });
    const path = `${url}/api/queues/${encodeURIComponent(q.name)}/lanes/acme/pause`;
    const auth = { ...JSON_ACTION, Authorization: `Bearer ${TOKEN}` };
    const host = new URL(url).host;
    const tries: Array<[Record<string, string>, number]> = [
      [{ ...auth, Origin: `https://${host}` }, 403], // the page was not served over https
      [{ ...auth, Origin: 'https://queues.example.com', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'evil.example' }, 403],
      [{ ...auth, Origin: 'https://queues.example.com', 'X-Forwarded-Proto': 'https', 'X-Forwarded-Host': 'queues.example.com' }, 200],
      [{ ...auth, Origin: `http://${host}` }, 200],
    ];
    for (const [headers, status] of tries) {
      const r = await raw(path, { method: 'POST', headers, body: '{}' });
      expect(r.status, JSON.stringify(headers) + r.body).toBe(status);
    }
    expect((await q.lanes.get('acme')).paused).toBe(true);
    await q.lanes.resume('acme');
  });

  it('readOnly wins over a token; readOnly false without a token leaves auth to the host', async () => {
    const ro = await mount({ connection: redis, prefix, token: TOKEN, readOnly: true });
    const path = `/api/queues/${encodeURIComponent(q.name)}/pause`;
    const r = await raw(ro + path, { method: 'POST', headers: { ...JSON_ACTION, Authorization: `Bearer ${TOKEN}` }, body: '{}' });
    expect(r.status).toBe(403);
    expect(JSON.parse((await raw(`${ro}/api/config`)).body)).toEqual({ readOnly: true, tokenRequired: true, prefix });

    const open = await mount({ connection: redis, prefix, readOnly: false });
    expect((await raw(open + path, { method: 'POST', headers: JSON_ACTION, body: '{}' })).status).toBe(200);
    expect(await q.isPaused()).toBe(true);
    expect((await raw(open + path.replace('pause', 'resume'), { method: 'POST', headers: { ...JSON_ACTION, 'Sec-Fetch-Site': 'cross-site' }, body: '{}' })).status).toBe(403);
    await q.resume();
  });

  it('validates its options, naming the field', () => {
    expect(() => createDashboardHandler({ connection: 42 as never })).toThrow(/connection must be an ioredis client, a redis:\/\/ URL or ioredis options, got 42/);
    expect(() => createDashboardHandler({ connection: redis, basePath: 'admin' })).toThrow(/basePath must be a URL path starting with "\/", got "admin"/);
    expect(() => createDashboardHandler({ connection: redis, token: '' })).toThrow(/token must be a non-empty string/);
    expect(() => createDashboardHandler({ connection: redis, readOnly: 'no' as never })).toThrow(/readOnly must be a boolean/);
  });
});

describe.skipIf(!have)(have ? 'dashboard mounted in Express, in Chromium' : `dashboard mounted in Express (skipped: ${reason})`, () => {
  let redisServer: { url: string; port: number; stop: () => Promise<void> };
  let browser: Browser;
  let page: Page;
  let handler: DashboardHandler;
  let server: Server;
  let base: string;
  let q: Queue;

  beforeAll(async () => {
    redisServer = await startRedisServer();
    q = new Queue(qname('shop'), { connection: redisServer.url, prefix });
    await q.addBulk(Array.from({ length: 3 }, (_, i) => ({ name: 'invoice', data: { i }, opts: { lane: 'acme' } })));
    const app = express();
    app.use(express.json()); // a parsed body must work as well as a raw one
    app.get('/', (_req, res) => void res.send('shop front'));
    handler = createDashboardHandler({ connection: redisServer.url, prefix, basePath: '/admin/queues', token: TOKEN });
    app.use('/admin/queues', handler);
    server = createServer(app);
    base = `${await listen(server)}/admin/queues/`;
    browser = await chromium.launch({
      executablePath: CHROMIUM!,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await handler?.close();
    server?.close();
    await q?.close();
    await redisServer?.stop();
  });

  it('opens a pasted deep link under the base path, acts with the token, and leaves the host routes alone', async () => {
    const [job] = await q.getJobs(['waiting'], 0, 0);
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    // The token arrives in the fragment and leaves the address bar; the deep link has none.
    await page.goto(`${base}?queue=${encodeURIComponent(q.name)}&job=${job.id}#token=${TOKEN}`);
    await page.locator('#jobData', { hasText: `"i": ${job.data.i}` }).waitFor();
    expect(page.url()).not.toContain(TOKEN);
    expect(page.url()).toBe(`${base}?queue=${encodeURIComponent(q.name)}&job=${job.id}`);
    await page.locator('#mode', { hasText: 'actions enabled' }).waitFor();
    await page.locator('#queuePause').click();
    await waitFor(() => q.isPaused(), 5000, 'queue paused through Express');
    expect(await (await fetch(base.replace('/admin/queues/', '/'))).text()).toBe('shop front');
    expect(errors).toEqual([]);
  });

  it('says in plain words that Redis is down, and recovers by itself', async () => {
    await page.locator('#conn', { hasText: 'live' }).waitFor();
    await q.close();
    await redisServer.stop();
    await page.locator('#conn', { hasText: `cannot reach Redis at 127.0.0.1:${redisServer.port}` }).waitFor({ timeout: 15_000 });
    expect(await page.locator('body').textContent()).not.toMatch(/maxRetriesPerRequest|ioredis/);
    redisServer = await startRedisServer([], { port: redisServer.port });
    q = new Queue(q.name, { connection: redisServer.url, prefix });
    await q.add('again', { back: true }, { lane: 'acme' });
    await page.locator('#conn', { hasText: 'live' }).waitFor({ timeout: 15_000 });
    await page.locator('#queueTitle', { hasText: q.name }).waitFor();
  });
});
