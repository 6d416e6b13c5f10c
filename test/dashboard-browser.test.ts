// The dashboard end to end in headless Chromium (playwright-core driving Debian's
// /usr/bin/chromium): live lane depth, actions refused without the token and done with it,
// and hostile names shown as text with no script run. ECHOMQ_SCREENSHOT=1 also refreshes
// docs/dashboard.png.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type Browser, type Page } from 'playwright-core';
import { Queue, Worker } from '../src/index.js';
import { startDashboard, type Dashboard } from '../src/dashboard/server.js';
import { client, qname, redisUrl, sleep, waitFor } from './helpers.js';

// The global setup installs Chromium where it can (scripts/chromium.mjs); elsewhere the file is
// skipped with the reason in its name, and in CI a missing browser fails.
const { path: CHROMIUM, reason } = inject('chromium');
const have = CHROMIUM !== null;
if (!have && process.env.CI) throw new Error(reason);

const prefix = `ui-${randomUUID().slice(0, 8)}`;
const TOKEN = 'ui-token-123';
const XSS_LANE = '<img src=x onerror="window.__xss=1">';
const XSS_JOB = '<script>window.__xss=2</script><b>bold</b>';

describe.skipIf(!have)(have ? 'dashboard in Chromium' : `dashboard in Chromium (skipped: ${reason})`, () => {
  const redis = client();
  let browser: Browser;
  let dash: Dashboard;
  let page: Page;
  let q: Queue;
  const dialogs: string[] = [];

  beforeAll(async () => {
    q = new Queue(qname('web'), { connection: redisUrl(), prefix });
    if (process.env.ECHOMQ_SCREENSHOT) await pastHour(q);
    // Some history for the chart and the finished counts.
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'warmup', data: { i, fail: i % 7 === 0 }, opts: { lane: 'acme' } })));
    const w = new Worker(q.name, async (job) => {
      if (job.data.fail) throw new Error('card declined');
      return { ok: true };
    }, { connection: redisUrl(), prefix, concurrency: 4 });
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 25);
    await w.close();
    await q.addBulk([
      ...Array.from({ length: 3 }, (_, i) => ({ name: 'invoice', data: { i }, opts: { lane: 'acme' } })),
      ...Array.from({ length: 9 }, (_, i) => ({ name: 'report', data: { i }, opts: { lane: 'globex', priority: 2 } })),
      ...Array.from({ length: 4 }, (_, i) => ({ name: 'email', data: { i }, opts: { lane: 'initech' } })),
      { name: XSS_JOB, data: { note: '<img src=x onerror=alert(1)>' }, opts: { lane: XSS_LANE } },
    ]);
    await q.lanes.setWeight('globex', 3);
    await q.lanes.setLimit('initech', 2);
    await q.lanes.setRateLimit('initech', { max: 50, duration: 1000 });

    dash = await startDashboard({ client: redis, prefix, port: 0, token: TOKEN });
    browser = await chromium.launch({
      executablePath: CHROMIUM!,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    page = await browser.newPage({ viewport: { width: 1440, height: 1100 } });
    page.on('dialog', (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void d.dismiss();
    });
    await page.goto(`${dash.url}?queue=${encodeURIComponent(q.name)}&tab=lanes`);
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await q?.close();
    redis.disconnect();
  });

  const laneRow = (lane: string) => page.locator('#lanes tbody tr').filter({ has: page.getByRole('cell', { name: lane, exact: true }) });
  const depthOf = async (lane: string) => Number(await laneRow(lane).locator('td').nth(1).textContent());

  it('shows the queue, its lanes and their depth live', async () => {
    await page.locator('#queueTitle', { hasText: q.name }).waitFor();
    await waitFor(async () => (await depthOf('acme')) === 3, 10_000, 'acme depth 3');
    expect(await depthOf('globex')).toBe(9);
    expect(await laneRow('globex').locator('td').nth(4).textContent()).toBe('3'); // weight
    expect(await laneRow('initech').locator('td').nth(5).textContent()).toBe('2'); // limit
    expect(await laneRow('initech').locator('td').nth(7).textContent()).toBe('50 / 1000 ms');
    await q.addBulk(Array.from({ length: 5 }, () => ({ name: 'invoice', data: {}, opts: { lane: 'acme' } })));
    await waitFor(async () => (await depthOf('acme')) === 8, 10_000, 'acme depth 8 after adding 5');
    // Sorting by depth puts the deepest lane first.
    await page.locator('#lanes th[data-key="depth"]').click();
    expect(await page.locator('#lanes tbody tr td:first-child').first().textContent()).toBe('globex');
  });

  it('refuses to pause a lane without the token, and pauses it with the token', async () => {
    await laneRow('acme').click();
    await expect.poll(() => page.locator('#laneName').textContent()).toBe('acme');
    // Without the token the buttons are off, and the server refuses the page's own request.
    expect(await page.locator('#lanePause').isDisabled()).toBe(true);
    const refused = await page.evaluate(async (path) => {
      const r = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-Echomq-Action': '1' }, body: '{}' });
      return [r.status, (await r.json()).error];
    }, `api/queues/${encodeURIComponent(q.name)}/lanes/acme/pause`);
    expect(refused).toEqual([401, 'a valid token is required for actions']);
    expect((await q.lanes.get('acme')).paused).toBe(false);

    await page.fill('#tokenInput', TOKEN);
    await page.locator('#tokenForm button').click();
    await page.locator('#mode', { hasText: 'actions enabled' }).waitFor();
    await page.locator('#lanePause').click();
    await waitFor(async () => (await q.lanes.get('acme')).paused, 5000, 'lane paused in Redis');
    await waitFor(async () => (await laneRow('acme').locator('td').nth(6).textContent()) === 'yes, holding 8', 5000, 'paused shown');
    await expect.poll(() => page.locator('#lanePause').textContent()).toBe('Resume lane');

    await page.fill('#laneWeight', '4');
    await page.locator('#laneWeightSet').click();
    await waitFor(async () => (await q.lanes.get('acme')).weight === 4, 5000, 'weight 4');
  });

  it('shows hostile lane and job names as text, and runs no script', async () => {
    await waitFor(async () => (await laneRow(XSS_LANE).count()) === 1, 10_000, 'xss lane row');
    expect(await laneRow(XSS_LANE).locator('td').first().textContent()).toBe(XSS_LANE);
    await page.locator('#tab-jobs').click();
    await page.selectOption('#jobState', 'waiting');
    await page.fill('#jobLane', XSS_LANE);
    await page.locator('#jobLane').dispatchEvent('change');
    const row = page.locator('#jobs tbody tr').first();
    await expect.poll(() => row.locator('td').nth(2).textContent(), { timeout: 5000 }).toBe(XSS_JOB);
    await row.click();
    await expect.poll(() => page.locator('#jobData').textContent()).toContain('<img src=x onerror=alert(1)>');
    await sleep(500);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    // No element came out of a user string: no img/script/b inside cells or detail, no onerror anywhere.
    expect(await page.locator('td img, td script, td b, pre *, dd *, [onerror]').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1); // only app.js
    expect(dialogs).toEqual([]);

    // The picture for the docs: the page with the acme lane selected and the failed jobs listed.
    await page.locator('#jobClose').click();
    await page.selectOption('#jobState', 'failed');
    await page.fill('#jobLane', '');
    await page.locator('#jobLane').dispatchEvent('change');
    await page.locator('#jobs tbody tr td', { hasText: 'card declined' }).first().waitFor();
    if (process.env.ECHOMQ_SCREENSHOT) await liveTraffic(q, 12_000);
    await sleep(1600); // one more poll so every sparkline has a few points
    const file = process.env.ECHOMQ_SCREENSHOT ? join(import.meta.dirname, '..', 'docs', 'dashboard.png') : join(tmpdir(), `echomq-dashboard-${prefix}.png`);
    await page.screenshot({ path: file, fullPage: true });
    expect(existsSync(file)).toBe(true);
  });
});

/**
 * For the docs picture only: an hour of past completed/failed events written straight into the
 * queue's (still empty) events stream with past ids, so the throughput chart has a shape.
 */
async function pastHour(q: Queue): Promise<void> {
  const now = Date.now();
  const p = q.client.pipeline();
  for (let s = 3540; s > 5; s -= 5) {
    const ms = now - s * 1000;
    const ok = Math.round(6 + 4 * Math.sin(s / 400) + 2 * Math.sin(s / 53) + (s > 1500 && s < 1700 ? 6 : 0));
    const bad = s > 900 && s < 1000 ? 4 : s % 60 === 0 ? 1 : 0;
    for (let k = 0; k < ok + bad; k++) {
      p.xadd(q.keys.events, `${ms}-${k}`, 'event', k < ok ? 'completed' : 'failed', 'jobId', `past-${s}-${k}`);
    }
  }
  await p.exec();
}

/** For the docs picture only: lanes filling and draining for a while, so sparklines move. */
async function liveTraffic(q: Queue, ms: number): Promise<void> {
  const w = new Worker(q.name, async () => sleep(400), { connection: redisUrl(), prefix, concurrency: 2 });
  const end = Date.now() + ms;
  for (let i = 0; Date.now() < end; i++) {
    const lane = ['globex', 'initech', 'globex', 'umbrella'][i % 4];
    const n = i < 25 ? 3 : i % 3 === 0 ? 1 : 0;
    if (n > 0) await q.addBulk(Array.from({ length: n }, () => ({ name: 'report', data: { i }, opts: { lane } })));
    await sleep(250);
  }
  await w.close();
}
