// The dashboard's HTTP side without a browser: JSON API, action guards (token, custom header,
// same-origin, Host), security headers, /metrics and the throughput series.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from '../src/index.js';
import { startDashboard, type Dashboard } from '../src/dashboard/server.js';
import { client, qname, rawHttp as raw, redisUrl, waitFor } from './helpers.js';

const prefix = `dash-${randomUUID().slice(0, 8)}`;
const TOKEN = 'correct horse battery staple';

const ACTION = { 'Content-Type': 'application/json', 'X-Echomq-Action': '1', Authorization: `Bearer ${TOKEN}` };

describe('dashboard HTTP', () => {
  const redis = client();
  let ro: Dashboard;
  let rw: Dashboard;
  let q: Queue;
  const name = qname('shop/eu%{x}'); // slashes, percent and braces survive the URL and the key

  beforeAll(async () => {
    ro = await startDashboard({ client: redis, prefix, port: 0 });
    rw = await startDashboard({ client: redis, prefix, port: 0, token: TOKEN });
    q = new Queue(name, { connection: redisUrl(), prefix });
    await q.addBulk([
      { name: 'a', data: { n: 1 }, opts: { lane: 'acme' } },
      { name: 'b', data: { n: 2 }, opts: { lane: 'acme', priority: 1 } },
      { name: 'c', data: { n: 3 }, opts: { lane: 'lane/with?odd#chars' } },
    ]);
  });
  afterAll(async () => {
    await ro.close();
    await rw.close();
    await q.close();
    redis.disconnect();
  });

  const api = (d: Dashboard, path: string) => `${d.url}api/queues/${encodeURIComponent(name)}${path}`;

  it('serves the page with a strict CSP and no CORS, and reads the API', async () => {
    const page = await raw(ro.url);
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("script-src 'self'");
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['access-control-allow-origin']).toBeUndefined();
    expect(page.body).toContain('<script src="app.js" defer></script>');
    expect(page.body).not.toMatch(/<script>/); // no inline script
    const js = await raw(`${ro.url}app.js`);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    // One self-contained bundle (Preact inside, esbuild-made): nothing fetched from elsewhere,
    // nothing the CSP forbids (eval, Function), nothing written as HTML.
    expect(js.body.length).toBeGreaterThan(20_000);
    expect((js.body.match(/https?:\/\/[^\s"'`]+/g) ?? []).filter((u) => !u.startsWith('http://www.w3.org/'))).toEqual([]);
    expect(js.body).not.toMatch(/\beval\(|new Function\(|\bimport\(/);
    // Preact writes HTML only for dangerouslySetInnerHTML, which no view uses.
    const views = readdirSync(join(import.meta.dirname, '..', 'src', 'dashboard', 'page'));
    expect(views.filter((f) => readFileSync(join(import.meta.dirname, '..', 'src', 'dashboard', 'page', f), 'utf8').includes('dangerouslySetInnerHTML'))).toEqual([]);

    expect(await (await fetch(`${ro.url}api/config`)).json()).toEqual({ readOnly: true, tokenRequired: false, prefix });
    const all = await (await fetch(`${ro.url}api/queues`)).json();
    expect(all.queues).toEqual([expect.objectContaining({ name, paused: false, counts: expect.objectContaining({ waiting: 2, prioritized: 1 }) })]);
    const st = await (await fetch(api(ro, ''))).json();
    expect(st.lanes.map((l: { name: string; depth: number }) => [l.name, l.depth])).toEqual([['acme', 2], ['lane/with?odd#chars', 1]]);

    const summary = await (await fetch(api(ro, '?lanes=0'))).json();
    expect(Object.keys(summary).sort()).toEqual(['counts', 'name', 'paused']); // the queue view's poll reads no lanes
    const jobs = await (await fetch(`${api(ro, '/jobs')}?state=waiting&lane=${encodeURIComponent('lane/with?odd#chars')}`)).json();
    expect(jobs.jobs.map((j: { name: string }) => j.name)).toEqual(['c']);
    const detail = await (await fetch(api(ro, `/jobs/${jobs.jobs[0].id}`))).json();
    expect(detail).toMatchObject({ name: 'c', data: { n: 3 }, state: 'waiting', logs: [] });

    const missing = await fetch(`${ro.url}api/queues/nope`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error).toMatch(/queue "nope" not found/);
    expect((await fetch(api(ro, '/jobs/424242'))).status).toBe(404);
    const bad = await fetch(`${api(ro, '/jobs')}?state=bogus`);
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatch(/^state must be all or one of/);
  });

  it('refuses every action when started without a token', async () => {
    const r = await raw(api(ro, '/pause'), { method: 'POST', headers: ACTION, body: '{}' });
    expect(r.status).toBe(403);
    expect(JSON.parse(r.body).error).toMatch(/read-only dashboard/);
    expect(await q.isPaused()).toBe(false);
  });

  it('needs the token, the custom header, same origin and JSON for actions', async () => {
    const url = api(rw, '/lanes/acme/pause');
    const host = new URL(rw.url).host;
    const tries: Array<[Record<string, string>, number, RegExp]> = [
      [{ ...ACTION, Authorization: '' }, 401, /valid token/],
      [{ ...ACTION, Authorization: 'Bearer wrong' }, 401, /valid token/],
      [{ ...ACTION, 'X-Echomq-Action': '' }, 403, /X-Echomq-Action/],
      [{ ...ACTION, Origin: 'http://evil.example' }, 403, /cross-origin/],
      [{ ...ACTION, 'Sec-Fetch-Site': 'cross-site' }, 403, /cross-site/],
      [{ ...ACTION, 'Content-Type': 'text/plain' }, 415, /JSON/],
      [{ ...ACTION, Host: 'evil.example' }, 421, /Host/],
    ];
    for (const [headers, status, msg] of tries) {
      const r = await raw(url, { method: 'POST', headers, body: '{}' });
      expect([r.status, r.body], JSON.stringify(headers)).toEqual([status, expect.stringMatching(msg)]);
    }
    expect((await q.lanes.get('acme')).paused).toBe(false);
    // GET never acts, and other methods are refused without CORS headers.
    expect((await raw(url)).status).toBe(404);
    const opt = await raw(url, { method: 'OPTIONS', headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' } });
    expect(opt.status).toBe(405);
    expect(opt.headers['access-control-allow-origin']).toBeUndefined();

    const ok = await raw(url, { method: 'POST', headers: { ...ACTION, Origin: `http://${host}`, 'Sec-Fetch-Site': 'same-origin' }, body: '{}' });
    expect([ok.status, ok.body]).toEqual([200, '{"ok":true}']);
    expect((await q.lanes.get('acme')).paused).toBe(true);
  });

  it('sets weight and limit, pauses the queue, retries and removes jobs', async () => {
    const post = (path: string, body: unknown = {}) => fetch(api(rw, path), { method: 'POST', headers: ACTION, body: JSON.stringify(body) });
    expect((await post('/lanes/acme/weight', { value: 5 })).status).toBe(200);
    expect((await post('/lanes/acme/limit', { value: 2 })).status).toBe(200);
    expect(await q.lanes.get('acme')).toMatchObject({ weight: 5, limit: 2 });
    expect((await post('/lanes/acme/limit', { value: null })).status).toBe(200);
    expect((await q.lanes.get('acme')).limit).toBeNull();
    const bad = await post('/lanes/acme/weight', { value: 'heavy' });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toBe('weight must be an integer 1…1000000, got "heavy"');
    expect((await post('/lanes/acme/resume')).status).toBe(200);
    expect((await post('/pause')).status).toBe(200);
    expect(await q.isPaused()).toBe(true);
    expect((await post('/resume')).status).toBe(200);

    const [c] = await q.getJobs('waiting', 0, -1).then((js) => js.filter((j) => j.name === 'c'));
    expect((await post(`/jobs/${c.id}/remove`)).status).toBe(200);
    expect(await q.getJob(c.id)).toBeUndefined();
    const f = await q.add('f', { fail: true }, { lane: 'x' });
    const w = new Worker(name, async (job) => {
      if (job.data.fail) throw new Error('no');
    }, { connection: redisUrl(), prefix });
    await waitFor(async () => (await f.getState()) === 'failed');
    await w.close();
    const retried = await post(`/jobs/${f.id}/retry`);
    expect(await retried.json()).toEqual({ id: f.id, from: 'failed' });
    expect(await f.getState()).toBe('waiting');
  });

  it('counts completed and failed per second, and serves /metrics', async () => {
    const tq = new Queue(qname('tp'), { connection: redisUrl(), prefix });
    await tq.addBulk(Array.from({ length: 12 }, (_, i) => ({ name: 'j', data: { fail: i % 4 === 0 } })));
    const w = new Worker(tq.name, async (job) => {
      if (job.data.fail) throw new Error('x');
    }, { connection: redisUrl(), prefix, concurrency: 4 });
    await waitFor(async () => (await tq.getJobCounts('completed')).completed === 9);
    await w.close();
    const sum = (a: number[]) => a.reduce((x, y) => x + y, 0);
    // The first view reads back the last hour still in the stream.
    const tp = await (await fetch(`${ro.url}api/queues/${encodeURIComponent(tq.name)}/throughput`)).json();
    expect(tp.completed).toHaveLength(3600);
    expect([sum(tp.completed), sum(tp.failed)]).toEqual([9, 3]);
    expect(Math.abs(tp.end * 1000 - Date.now())).toBeLessThan(5000);

    const m = await raw(`${ro.url}metrics`);
    expect(m.headers['content-type']).toMatch(/^text\/plain/);
    expect(m.body).toContain(`echomq_queue_jobs{queue="${tq.name}",state="completed"} 9`);
    expect(m.body).toContain('# TYPE echomq_jobs_completed_total counter');
    await tq.close();
  });
});
