// The dashboard end to end in headless Chromium (playwright-core driving Debian's
// /usr/bin/chromium), one browser for the file: the overview's health flags, every view in
// the URL (pasted links, the back button), the job panel on screen where the user clicked,
// paging with State = all, a list that holds still under the pointer, search by id, bulk
// actions, workers, job schedulers, queue actions, lanes, the token, hostile names shown as
// text, and no sideways scrolling at 800, 1,024 and 1,400 px. ECHOMQ_SCREENSHOT=1 also
// refreshes the pictures in docs/.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { FlowProducer, Queue, Worker } from '../src/index.js';
import { startDashboard, type Dashboard } from '../src/dashboard/server.js';
import { client, qname, redisUrl, sleep, waitFor } from './helpers.js';

// The global setup installs Chromium where it can (scripts/chromium.mjs); elsewhere the file is
// skipped with the reason in its name, and in CI a missing browser fails.
const { path: CHROMIUM, reason } = inject('chromium');
const have = CHROMIUM !== null;
if (!have && process.env.CI) throw new Error(reason);

const SHOTS = !!process.env.ECHOMQ_SCREENSHOT;
const prefix = `ui-${randomUUID().slice(0, 8)}`;
const TOKEN = 'ui-token-123';
const XSS_LANE = '<img src=x onerror="window.__xss=1">';
const XSS_JOB = '<script>window.__xss=2</script><b>bold</b>';
const LONG_REASON = 'payment gateway answered 502 Bad Gateway for the capture call; the charge stays authorised and will be retried '.repeat(3);
const LONG_LANE = 'tenant-' + 'very-long-customer-name-'.repeat(6) + 'eu-west';
const docs = (f: string) => join(import.meta.dirname, '..', 'docs', f);

describe.skipIf(!have)(have ? 'dashboard in Chromium' : `dashboard in Chromium (skipped: ${reason})`, () => {
  const redis = client();
  let browser: Browser;
  let ctx: BrowserContext;
  let dash: Dashboard;
  let page: Page;
  let q: Queue;
  let busy: Queue;
  let busyWorker: Worker;
  const dialogs: string[] = [];
  const errors: string[] = [];
  const qs = () => `?queue=${encodeURIComponent(q.name)}`;

  beforeAll(async () => {
    q = new Queue(qname('web'), { connection: redisUrl(), prefix });
    busy = new Queue(qname('billing'), { connection: redisUrl(), prefix });
    // Some history: 25 completed, 5 failed (one with a long reason), for the chart and the failure rate.
    await q.addBulk(Array.from({ length: 30 }, (_, i) => ({ name: 'warmup', data: { i, fail: i % 7 === 0 }, opts: { lane: 'acme' } })));
    const w = new Worker(q.name, async (job) => {
      if (job.data.fail) throw new Error(job.data.i === 7 ? LONG_REASON : 'card declined');
      return { ok: true };
    }, { connection: redisUrl(), prefix, concurrency: 4 });
    await waitFor(async () => (await q.getJobCounts('completed')).completed === 25);
    await w.close();
    await q.addBulk([
      ...Array.from({ length: 3 }, (_, i) => ({ name: 'invoice', data: { i }, opts: { lane: 'acme' } })),
      ...Array.from({ length: 9 }, (_, i) => ({ name: 'report', data: { i }, opts: { lane: 'globex', priority: 2 } })),
      ...Array.from({ length: 4 }, (_, i) => ({ name: 'email', data: { i }, opts: { lane: 'initech' } })),
      ...Array.from({ length: 2 }, (_, i) => ({ name: 'sync-' + 'x'.repeat(80), data: { i }, opts: { lane: LONG_LANE } })),
      { name: XSS_JOB, data: { note: '<img src=x onerror=alert(1)>' }, opts: { lane: XSS_LANE } },
      { name: 'reminder', data: { to: 'ops' }, opts: { lane: 'acme', delay: 3_600_000 } },
    ]);
    await new FlowProducer({ connection: redisUrl(), prefix }).add({
      name: 'bundle', queueName: q.name, data: { order: 7 }, opts: { lane: 'acme' },
      children: [{ name: 'part', queueName: busy.name, data: { part: 1 } }, { name: 'part', queueName: busy.name, data: { part: 2 } }],
    }).then(() => undefined);
    await q.lanes.setWeight('globex', 3);
    await q.lanes.setLimit('initech', 2);
    await q.lanes.setRateLimit('initech', { max: 50, duration: 1000 });
    await q.lanes.pause('globex'); // a paused lane holding 9 jobs
    await q.upsertJobScheduler('nightly-report', { pattern: '0 3 * * *', tz: 'Europe/Paris' }, { name: 'report', data: { kind: 'nightly' } });
    // A queue with a named worker (its children of the flow wait there while the worker is paused).
    busyWorker = new Worker(busy.name, async () => sleep(50), { connection: redisUrl(), prefix, name: 'billing-1', autorun: false });
    await busyWorker.waitUntilReady();

    dash = await startDashboard({ client: redis, prefix, port: 0, token: TOKEN });
    browser = await chromium.launch({
      executablePath: CHROMIUM!,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    });
    ctx = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await ctx.newPage();
    page.on('dialog', (d) => {
      dialogs.push(`${d.type()}: ${d.message()}`);
      void (d.type() === 'confirm' ? d.accept() : d.dismiss());
    });
    page.on('pageerror', (e) => errors.push(e.message));
  }, 30_000);

  afterAll(async () => {
    await browser?.close();
    await dash?.close();
    await busyWorker?.close();
    await q?.close();
    await busy?.close();
    redis.disconnect();
  });

  const row = (table: string, text: string) => page.locator(`${table} tbody tr`).filter({ has: page.getByRole('cell', { name: text, exact: true }) });
  const laneRow = (lane: string) => row('#lanes', lane);
  const depthOf = async (lane: string) => Number(await laneRow(lane).locator('td').nth(1).textContent());
  /** The page scrolls sideways when its content is wider than the window. */
  const sideways = () => page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);

  it('flags what needs attention in the overview, and each queue opens at its own URL', async () => {
    await page.goto(dash.url);
    const web = row('#queues', q.name);
    // Ready work with no worker, a paused lane holding work, and 5 of 30 failing in the window.
    await expect.poll(() => web.locator('td.flags').textContent(), { timeout: 10_000 }).toBe('19 ready, no worker17% failing1 paused lane holding work');
    expect(await web.getAttribute('class')).toBe('attn-bad');
    expect(await web.locator('td').nth(10).textContent()).toMatch(/^\d+s$/); // oldest waiting job's age
    expect(await web.locator('td.tput').textContent()).toBe('6.0'); // 30 finished in the 5-minute window
    expect(await web.locator('td').nth(6).getAttribute('class')).toContain('bad-text'); // failed count in red
    await expect.poll(() => row('#queues', busy.name).locator('td').nth(2).textContent()).toBe('1'); // one worker
    await page.fill('#queueFilter', 'billing');
    await expect.poll(() => page.locator('#queues tbody tr').count()).toBe(1);
    await page.fill('#queueFilter', '');

    await web.click();
    await page.locator('#queueTitle', { hasText: q.name }).waitFor();
    expect(new URL(page.url()).search).toBe(qs());
    await page.goBack();
    await page.locator('#overview').waitFor();
    await page.goForward();
    await page.locator('#queueTitle', { hasText: q.name }).waitFor();
  });

  it('shows the lanes and their depth live, sortable, and a paused lane holding work', async () => {
    await page.goto(`${dash.url}${qs()}&tab=lanes`);
    await waitFor(async () => (await depthOf('acme')) === 3, 10_000, 'acme depth 3');
    expect(await depthOf('globex')).toBe(9);
    expect(await laneRow('globex').locator('td').nth(6).textContent()).toBe('3'); // weight
    expect(await laneRow('globex').locator('td').nth(8).textContent()).toBe('yes, holding 9');
    expect(await laneRow('initech').locator('td').nth(7).textContent()).toBe('2'); // limit
    expect(await laneRow('initech').locator('td').nth(9).textContent()).toBe('50 / 1000 ms');
    // Share of service: every start so far was in acme; globex's head job waits since set-up.
    await expect.poll(() => laneRow('acme').locator('td.share').textContent()).toBe('100.0%');
    expect(await laneRow('globex').locator('td.share').textContent()).toBe('—');
    expect(await laneRow('globex').locator('td.oldest').textContent()).toMatch(/^\d+s$/);
    expect(await page.locator('#shareNote').textContent()).toMatch(/^share of the last 30 starts, over \d+s$/);
    await q.addBulk(Array.from({ length: 5 }, () => ({ name: 'invoice', data: {}, opts: { lane: 'acme' } })));
    await waitFor(async () => (await depthOf('acme')) === 8, 10_000, 'acme depth 8 after adding 5');
    // Sparklines span their cell from the first samples on, and an empty lane still draws its line.
    expect((await laneRow('acme').locator('svg.spark polyline').boundingBox())!.width).toBeGreaterThan(100);
    await q.lanes.drain('initech');
    await waitFor(async () => (await depthOf('initech')) === 0, 10_000, 'emptied lane');
    expect((await laneRow('initech').locator('svg.spark polyline').boundingBox())!.width).toBeGreaterThan(100);
    await page.locator('#lanes th[data-key="depth"]').click();
    // Deepest first is asked of the server over all lanes, and kept in the URL across a reload.
    await page.locator('#laneNote', { hasText: 'the 5 lanes with the most jobs of all 5' }).waitFor();
    expect(new URL(page.url()).searchParams.get('sort')).toBe('-depth');
    await page.reload();
    await page.locator('#laneNote', { hasText: 'the 5 lanes with the most jobs of all 5' }).waitFor();
    expect(await page.locator('#lanes th[data-key="depth"]').getAttribute('class')).toBe('desc');
    expect(await page.locator('#lanes tbody tr td:first-child').allTextContents()).toEqual(['globex', 'acme', LONG_LANE, XSS_LANE, 'initech']);
    // Lane search by prefix, in the URL.
    await page.fill('#laneSearch', 'glo');
    await page.locator('#laneSearchGo').click();
    await expect.poll(() => page.locator('#lanes tbody tr td:first-child').allTextContents()).toEqual(['globex']);
    expect(new URL(page.url()).searchParams.get('find')).toBe('glo');
    await page.goBack();
    await expect.poll(() => page.locator('#lanes tbody tr').count()).toBe(5);
    // The queue's latency from its finished jobs (30 warm-up jobs).
    await page.locator('#latNote', { hasText: 'from the newest 30 finished jobs' }).waitFor();
    expect(await page.locator('#latProc').textContent()).toMatch(/^p50 \d+ ms · p90 \d+ ms · p99 \d+ ms$/);
    // A cut-off lane name keeps its full text on hover.
    const long = laneRow(LONG_LANE).locator('td').first();
    expect(await long.getAttribute('title')).toBe(LONG_LANE);
    expect(await long.evaluate((e) => e.scrollWidth > e.clientWidth)).toBe(true);
  });

  it('keeps actions off without the token, and acts with it', async () => {
    await laneRow('acme').click();
    await expect.poll(() => page.locator('#laneName').textContent()).toBe('acme');
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
    await expect.poll(() => page.locator('#lanePause').textContent()).toBe('Resume lane');
    await page.fill('#laneWeight', '4');
    await page.locator('#laneWeightSet').click();
    await waitFor(async () => (await q.lanes.get('acme')).weight === 4, 5000, 'weight 4');
    await page.locator('#lanePause').click();
    await waitFor(async () => !(await q.lanes.get('acme')).paused, 5000, 'lane resumed');
  });

  it('pages through State = all, and opens a job where the user is, at a URL that opens it again', async () => {
    await page.goto(`${dash.url}${qs()}`);
    await page.locator('#jobs tbody tr').nth(49).waitFor();
    expect(await page.locator('#jobPage').textContent()).toBe('1–50');
    const first = await page.locator('#jobs tbody tr td.id').allTextContents();
    await page.locator('#jobNext').click();
    await expect.poll(() => page.locator('#jobPage').textContent()).toMatch(/^51–\d+$/);
    const second = await page.locator('#jobs tbody tr td.id').allTextContents();
    expect(second.length).toBeGreaterThan(0);
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    const total = Object.values(await q.getJobCounts()).reduce((a, b) => a + b, 0);
    expect(first.length + second.length).toBe(total);
    await page.locator('#jobPrev').click();
    await expect.poll(() => page.locator('#jobPage').textContent()).toBe('1–50');

    // Scrolled to the bottom, a click on the last row shows the panel in the window.
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const last = page.locator('#jobs tbody tr').nth(49);
    const lastId = (await last.locator('td.id').textContent())!;
    await last.click();
    await page.locator('#jobId', { hasText: lastId }).waitFor();
    const box = (await page.locator('#jobDetail').boundingBox())!;
    const vp = page.viewportSize()!;
    expect(box.y).toBeGreaterThanOrEqual(0);
    expect(box.y + box.height).toBeLessThanOrEqual(vp.height);
    expect(box.x + box.width).toBeLessThanOrEqual(vp.width);
    expect(box.width).toBeGreaterThan(300);
    expect(new URL(page.url()).searchParams.get('job')).toBe(lastId);
    // By keyboard: Escape closes the panel; a row reached with Tab opens with Enter.
    await page.keyboard.press('Escape');
    await page.locator('#jobDetail').waitFor({ state: 'detached' });
    const firstRow = page.locator('#jobs tbody tr').first();
    await firstRow.focus();
    await page.keyboard.press('Enter');
    await page.locator('#jobId', { hasText: (await firstRow.locator('td.id').textContent())! }).waitFor();
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('jobDetail');

    // A failed job: its reason and stack trace; the URL opened afresh shows the same panel.
    const failed = (await q.getJobs(['failed'])).find((j) => j.failedReason === LONG_REASON)!;
    const link = `${dash.url}${qs()}&state=failed&job=${failed.id}`;
    const fresh = await ctx.newPage();
    await fresh.goto(link);
    await fresh.locator('#jobError', { hasText: LONG_REASON.trim() }).waitFor();
    expect(await fresh.locator('pre.trace').first().textContent()).toContain('Error: payment gateway');
    expect(await fresh.locator('#jobFields').textContent()).toMatch(/attempts1 made, 1 started, 0 stalls.*created.*processed.*finished/);
    expect(await fresh.locator('#jobState').inputValue()).toBe('failed');
    const reason = fresh.locator('#jobs td.reason', { hasText: 'payment gateway' }).first();
    expect(await reason.getAttribute('title')).toBe(LONG_REASON);
    await fresh.close();

    // A delayed job: due time and options; promote applies.
    const delayed = (await q.getJobs(['delayed'])).find((j) => j.name === 'reminder')!;
    await page.goto(`${dash.url}${qs()}&state=delayed&job=${delayed.id}`);
    await page.locator('#jobOpts', { hasText: '"delay": 3600000' }).waitFor();
    const due = await page.locator('#jobFields dd').nth(8).textContent();
    expect(due).toBe(new Date(delayed.timestamp + 3_600_000).toLocaleString('en-US'));
    expect(await page.locator('#jobPromote').isDisabled()).toBe(false);
    expect(await page.locator('#jobRetry').isDisabled()).toBe(true);
    // A waiting job: change its priority and move it to another lane from the panel.
    const [invoice] = (await q.getJobs(['waiting'])).filter((j) => j.name === 'invoice');
    await page.goto(`${dash.url}${qs()}&job=${invoice.id}`);
    await page.fill('#jobPriority', '5');
    await page.locator('#jobPrioritySet').click();
    await waitFor(async () => (await q.getJob(invoice.id!))!.priority === 5, 5000, 'priority 5');
    await page.fill('#jobLaneMove', 'initech');
    await page.locator('#jobLaneSet').click();
    await waitFor(async () => (await q.getJob(invoice.id!))!.lane === 'initech', 5000, 'moved to initech');
    // The back button closes the panel; the list stays.
    await page.goto(`${dash.url}${qs()}&state=delayed`);
    await page.locator('#jobs tbody tr').first().click();
    await page.locator('#jobDetail').waitFor();
    await page.goBack();
    await page.locator('#jobDetail').waitFor({ state: 'detached' });
    expect(await page.locator('#jobs tbody tr').count()).toBe(2); // the reminder and the scheduler's next job
  });

  it('shows a flow parent with its children in another queue, and links between them', async () => {
    const [parent] = await q.getJobs(['waiting-children']);
    await page.goto(`${dash.url}${qs()}&job=${parent.id}`);
    await page.locator('#jobChildren li').nth(1).waitFor();
    expect(await page.locator('#jobChildren').textContent()).toContain(`${busy.name} / `);
    await page.locator('#jobChildren a').first().click();
    await page.locator('#jobFields', { hasText: busy.name }).waitFor();
    await page.locator('#jobFamily a', { hasText: parent.id }).waitFor(); // the child links back to its parent
  });

  it('holds the list still under the pointer, and finds a job by id', async () => {
    await page.goto(`${dash.url}${qs()}&state=delayed`);
    await page.locator('#jobs tbody tr').first().waitFor();
    const before = await page.locator('#jobs td.id').allTextContents();
    await page.locator('#jobs tbody tr').first().hover();
    await page.locator('#paused-refresh').waitFor();
    const sooner = await q.add('sooner', {}, { delay: 600_000 }); // due first: it would be the top row
    await sleep(3200); // two polls
    expect(await page.locator('#jobs td.id').allTextContents()).toEqual(before);
    await page.mouse.move(5, 5);
    await expect.poll(() => page.locator('#jobs td.id').first().textContent()).toBe(sooner.id);

    await page.fill('#jobSearch', sooner.id!);
    await page.locator('#jobSearchGo').click();
    await expect.poll(() => page.locator('#jobs td.id').allTextContents()).toEqual([sooner.id]);
    expect(new URL(page.url()).searchParams.get('id')).toBe(sooner.id);
    await page.locator('#jobs').hover(); // the list holds still for the search too
    await page.mouse.move(5, 5);
    await page.fill('#jobSearch', '');
    await page.locator('#jobSearchGo').click();
    await page.selectOption('#jobState', 'all');
    await page.fill('#jobNameSearch', 'invoice');
    await page.locator('#jobNameGo').click();
    await page.locator('#jobPage', { hasText: 'scan complete' }).waitFor();
    const names = await page.locator('#jobs td.name:nth-child(3)').allTextContents();
    expect(names.length).toBe((await q.getJobs(['waiting', 'delayed', 'failed', 'completed', 'active', 'prioritized'])).filter((j) => j.name.includes('invoice')).length);
    expect(new Set(names)).toEqual(new Set(['invoice']));
    expect(new URL(page.url()).searchParams.get('name')).toBe('invoice');
    await page.locator('#jobNameClear').click();
    await page.fill('#jobSearch', 'no-such-job');
    await page.locator('#jobSearchGo').click();
    await page.locator('#jobPage', { hasText: 'no job "no-such-job"' }).waitFor();
  });

  it('retries, promotes and removes selected jobs in bulk; refuses without the token', async () => {
    const failedIds = (await q.getJobs(['failed'])).map((j) => j.id).slice(0, 2);
    // Another tab without the token: the bulk bar shows, its buttons are off.
    const other = await browser.newContext({ viewport: { width: 1400, height: 900 } }).then((c) => c.newPage());
    await other.goto(`${dash.url}${qs()}&state=failed`);
    await other.locator('#jobs tbody input[type=checkbox]').first().check();
    expect(await other.locator('#bulkRetry').isDisabled()).toBe(true);
    await other.context().close();

    await page.goto(`${dash.url}${qs()}&state=failed`);
    for (const id of failedIds) await row('#jobs', id).locator('input[type=checkbox]').check();
    await page.locator('#bulkBar', { hasText: '2 selected' }).waitFor();
    await page.locator('#bulkRetry').click();
    await page.locator('#toast', { hasText: 'retry: 2 done' }).waitFor();
    for (const id of failedIds) expect(await (await q.getJob(id))!.getState()).toBe('waiting');

    const { delayed } = await q.getJobCounts('delayed');
    expect(delayed).toBe(3); // the reminder, the hover test's job, the scheduler's next
    await page.goto(`${dash.url}${qs()}&state=delayed`);
    await page.locator('#jobs tbody tr').nth(2).waitFor();
    await page.locator('#jobs thead input[type=checkbox]').check();
    await page.locator('#bulkPromote').click();
    await page.locator('#toast', { hasText: 'promote: 3 done' }).waitFor();
    expect(await q.getJobCounts('delayed')).toEqual({ delayed: 0 });
  });

  it('lists workers and job schedulers, and removes a scheduler', async () => {
    await page.goto(`${dash.url}?queue=${encodeURIComponent(busy.name)}&tab=workers`);
    const w = page.locator('#workers tbody tr').first();
    await expect.poll(() => w.locator('td').first().textContent()).toBe('billing-1');
    expect(await w.locator('td').nth(1).textContent()).toMatch(/^127\.0\.0\.1:\d+$/);
    // What each worker runs: two jobs claimed by a named worker, with their name and lane.
    const crew = new Queue(qname('crew'), { connection: redisUrl(), prefix });
    const hand = new Worker(crew.name, null, { connection: redisUrl(), prefix, name: 'crew-7' });
    await crew.addBulk([{ name: 'resize', data: {}, opts: { lane: 'photos' } }, { name: 'encode', data: {}, opts: { lane: 'video' } }]);
    const held = [(await hand.getNextJob('t1'))!, (await hand.getNextJob('t2'))!];
    await page.goto(`${dash.url}?queue=${encodeURIComponent(crew.name)}&tab=workers`);
    const cells = async () => (await page.locator('#held tbody tr').all()).length === 2
      ? Promise.all((await page.locator('#held tbody tr').all()).map(async (r) => (await r.locator('td').allTextContents()).slice(0, 4).join('|')))
      : [];
    await expect.poll(cells).toEqual(held.map((j) => `crew-7|${j.id}|${j.name}|${j.lane}`));
    expect(await page.locator('#heldNote').textContent()).toBe('2 active jobs');
    await row('#held', 'encode').click();
    await expect.poll(() => page.url()).toContain(`job=${held[1].id}`);
    await hand.close();
    await crew.close();

    await page.goto(`${dash.url}${qs()}&tab=schedulers`);
    const s = row('#schedulers', 'nightly-report');
    await s.waitFor();
    expect(await s.locator('td').nth(1).textContent()).toBe('0 3 * * *');
    expect(await s.locator('td').nth(2).textContent()).toBe('Europe/Paris');
    await s.getByRole('button', { name: 'Remove' }).click();
    await waitFor(async () => (await q.getJobScheduler('nightly-report')) === undefined, 5000, 'scheduler removed');
    await expect.poll(() => s.count()).toBe(0);
  });

  it('cleans by state and age, and obliterates only after the name is typed', async () => {
    await page.goto(`${dash.url}${qs()}`);
    await page.locator('#cleanOpen').click();
    await page.selectOption('#cleanState', 'completed');
    await page.fill('#cleanHours', '0');
    await page.locator('#cleanGo').click();
    await page.locator('#toast', { hasText: '25 jobs cleaned' }).waitFor();
    expect(await q.getJobCounts('completed')).toEqual({ completed: 0 });

    const doomed = new Queue(qname('doomed'), { connection: redisUrl(), prefix });
    await doomed.add('x', {});
    await page.goto(`${dash.url}?queue=${encodeURIComponent(doomed.name)}`);
    await page.locator('#obliterateOpen').click();
    expect(await page.locator('#obliterateGo').isDisabled()).toBe(true);
    await page.fill('#obliterateName', doomed.name.slice(0, -1));
    expect(await page.locator('#obliterateGo').isDisabled()).toBe(true);
    await page.fill('#obliterateName', doomed.name);
    await page.locator('#obliterateGo').click();
    await page.locator('#overview').waitFor();
    expect(await doomed.count()).toBe(0);
    expect(await redis.exists(doomed.keys.meta)).toBe(0);
    await doomed.close();
  });

  it('never scrolls sideways at 800, 1,024 and 1,400 px', async () => {
    const views = ['', `${qs()}`, `${qs()}&state=failed`, `${qs()}&tab=lanes`, `${qs()}&tab=schedulers`];
    for (const v of views) {
      await page.goto(dash.url + v);
      await page.locator(v === '' ? '#queues tbody tr' : '#jobs tbody tr, #lanes tbody tr, #schedulers').first().waitFor();
      for (const width of [800, 1024, 1400]) {
        await page.setViewportSize({ width, height: 900 });
        await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))); // laid out
        expect(await sideways(), `${width} px ${v || 'overview'}`).toBeLessThanOrEqual(0);
      }
    }
    await page.setViewportSize({ width: 1400, height: 900 });
  });

  it('shows hostile lane and job names as text, and runs no script', async () => {
    await page.goto(`${dash.url}${qs()}&state=waiting&lane=${encodeURIComponent(XSS_LANE)}`);
    const r = page.locator('#jobs tbody tr').first();
    await expect.poll(() => r.locator('td').nth(2).textContent(), { timeout: 5000 }).toBe(XSS_JOB);
    await r.click();
    await expect.poll(() => page.locator('#jobData').textContent()).toContain('<img src=x onerror=alert(1)>');
    await page.goto(`${dash.url}${qs()}&tab=lanes`);
    await laneRow(XSS_LANE).waitFor();
    await sleep(500);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(await page.locator('td img, td script, td b, pre *, dd *, [onerror]').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1); // only app.js
    expect(dialogs.filter((d) => !d.startsWith('confirm'))).toEqual([]);
    expect(errors).toEqual([]);
  });

  // The pictures in docs/ (ECHOMQ_SCREENSHOT=1): a queue of their own with an hour of history.
  it.runIf(SHOTS)('takes the pictures for the docs', async () => {
    const shop = new Queue('orders', { connection: redisUrl(), prefix });
    await pastHour(shop);
    await shop.lanes.setWeight('acme', 3);
    await shop.lanes.pause('umbrella');
    await shop.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'report', data: { i }, opts: { lane: 'umbrella' } })));
    const traffic = liveTraffic(shop, 14_000);
    await page.setViewportSize({ width: 1400, height: 900 });
    await page.goto(dash.url);
    await row('#queues', 'orders').waitFor();
    await sleep(8000);
    await page.screenshot({ path: docs('dashboard-overview.png') });
    await page.goto(`${dash.url}?queue=orders&tab=lanes`);
    await sleep(5500);
    await page.screenshot({ path: docs('dashboard-lanes.png') });
    await traffic;
    await page.goto(`${dash.url}?queue=orders&state=failed`);
    await page.locator('#jobs tbody tr').first().click();
    await page.locator('pre.trace').first().waitFor();
    await page.screenshot({ path: docs('dashboard-job.png') });
    await page.goto(`${dash.url}?queue=orders`);
    await page.locator('#chart').waitFor();
    await sleep(1600);
    await page.screenshot({ path: docs('dashboard-queue.png') });
    await shop.close();
  }, 60_000);
});

/**
 * For the docs pictures only: an hour of past completed/failed events written straight into the
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

/** For the docs pictures only: lanes filling and draining for a while, so sparklines move. */
async function liveTraffic(q: Queue, ms: number): Promise<void> {
  const w = new Worker(q.name, async (job) => {
    await sleep(300);
    if (job.data.i % 9 === 4) throw new Error(`warehouse API timed out after 30 s (order ${job.data.i})`);
  }, { connection: redisUrl(), prefix, concurrency: 3 });
  const end = Date.now() + ms;
  for (let i = 0; Date.now() < end; i++) {
    const lane = ['acme', 'initech', 'acme', 'globex'][i % 4];
    const n = i < 25 ? 3 : i % 3 === 0 ? 1 : 0;
    if (n > 0) await q.addBulk(Array.from({ length: n }, () => ({ name: 'report', data: { i }, opts: { lane } })));
    await sleep(250);
  }
  await w.close();
}
