// The dashboard page's script, /app.js: compiled from src/dashboard/page/*.ts (not a string in
// the source), the same script from a tsc build as from source, joined only under the rules
// script.ts states, and running in headless Chromium without errors, making the requests it
// always made.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Script } from 'node:vm';
import { randomUUID } from 'node:crypto';
import ts from 'typescript';
import { chromium, type Browser } from 'playwright-core';
import { Queue } from '../src/index.js';
import { startDashboard, type Dashboard } from '../src/dashboard/server.js';
import { joinPageModules, pageScript, readPageModules } from '../src/dashboard/script.js';
import { PAGE_HTML } from '../src/dashboard/page.js';
import { ELEMENTS } from '../src/dashboard/page/dom.js';
import { client, qname, redisUrl } from './helpers.js';

const root = join(import.meta.dirname, '..');
const pageDir = join(root, 'src', 'dashboard', 'page');
const prefix = `uis-${randomUUID().slice(0, 8)}`;
const { path: CHROMIUM, reason } = inject('chromium');

describe('dashboard script', () => {
  const redis = client();
  let dash: Dashboard;
  let q: Queue;

  beforeAll(async () => {
    q = new Queue(qname('script'), { connection: redisUrl(), prefix });
    await q.add('invoice', { n: 1 }, { lane: 'acme' });
    await q.add('report', { n: 2 }, { lane: 'globex', priority: 2 });
    dash = await startDashboard({ client: redis, prefix, port: 0 });
  });
  afterAll(async () => {
    await dash?.close();
    await q?.close();
    redis.disconnect();
  });

  it('serves /app.js as JavaScript compiled from page/*.ts: a classic script with the types gone', async () => {
    const r = await fetch(`${dash.url}app.js`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
    const body = await r.text();
    expect(body).toBe(await pageScript());
    // Parses as a classic script: no import/export left, and no TypeScript syntax.
    expect(() => new Script(body, { filename: 'app.js' })).not.toThrow();
    expect(body.startsWith("'use strict';\n")).toBe(true);

    // One section per page module, each named after a .ts file there; the entry runs last.
    const sources = readdirSync(pageDir).filter((f) => f.endsWith('.ts'));
    const sections = [...body.matchAll(/^\/\/ ---- page\/(\S+)$/gm)].map((m) => m[1]);
    expect(sections.length).toBeGreaterThanOrEqual(5);
    for (const s of sections) expect(sources).toContain(s);
    expect(sections.at(-1)).toBe('app.ts');
    // A typed declaration in the source arrives compiled.
    expect(readFileSync(join(pageDir, 'dom.ts'), 'utf8')).toContain('export function ago(ms: number): string {');
    expect(body).toContain('function ago(ms) {');
    expect(body).not.toContain('ms: number');
  });

  it('is the same script from a tsc build of page/*.ts as from source, and the build type-checks', async () => {
    const out = mkdtempSync(join(tmpdir(), 'echomq-page-'));
    try {
      // As tsconfig.build.json compiles them (its options, its rootDir), into a scratch outDir.
      const cfg = ts.getParsedCommandLineOfConfigFile(join(root, 'tsconfig.build.json'), { outDir: out, declaration: false }, {
        ...ts.sys,
        onUnRecoverableConfigFileDiagnostic: (d) => {
          throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
        },
      })!;
      const files = readdirSync(pageDir).filter((f) => f.endsWith('.ts')).map((f) => join(pageDir, f));
      const program = ts.createProgram(files, cfg.options);
      const diagnostics = files.flatMap((f) => {
        const sf = program.getSourceFile(f)!;
        return [...program.getSyntacticDiagnostics(sf), ...program.getSemanticDiagnostics(sf)];
      });
      expect(diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n'))).toEqual([]);
      for (const f of files) program.emit(program.getSourceFile(f));
      const built = join(out, 'dashboard', 'page');
      expect(readdirSync(built)).toContain('app.js');
      expect(joinPageModules(await readPageModules(built))).toBe(await pageScript());
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 60_000);

  it('looks up only elements that page.ts has, each with the tag its type says', () => {
    const tags = new Map([...PAGE_HTML.matchAll(/<([a-z0-9]+)\b[^>]*\bid="([^"]+)"/g)].map((m) => [m[2], m[1]]));
    for (const [id, tag] of Object.entries(ELEMENTS)) expect([id, tags.get(id)]).toEqual([id, tag]);
  });

  it('refuses page modules outside its rules rather than joining them wrongly', () => {
    const join1 = (mods: Record<string, string>) => () => joinPageModules(new Map(Object.entries(mods)));
    expect(join1({ app: "import { a } from './x.js';\na();", x: 'export function a() {}' })()).toContain('const { a } = page_x;');
    expect(join1({ app: "import { a } from './x.js';", x: "import { b } from './app.js';\nexport const a = 1;" })).toThrow(/cycle: app → x → app/);
    expect(join1({ app: "import { a } from './x.js';", x: 'export const b = 1;' })).toThrow(/imports a, which .\/x.js does not export/);
    expect(join1({ app: "import { a } from './gone.js';" })).toThrow(/imports .\/gone.js, which does not exist/);
    expect(join1({ app: "import { a } from '../api.js';" })).toThrow(/unsupported form "import \{ a \} from '..\/api.js';"/);
    expect(join1({ app: 'export default 1;' })).toThrow(/unsupported form "export default 1;"/);
    expect(join1({ app: 'const a = 1;\nexport { a };' })).toThrow(/unsupported form "export \{ a \};"/);
  });

  describe.skipIf(CHROMIUM === null)(CHROMIUM !== null ? 'in Chromium' : `in Chromium (skipped: ${reason})`, () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await chromium.launch({
        executablePath: CHROMIUM!,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
          '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      });
    }, 30_000);
    afterAll(async () => {
      await browser?.close();
    });

    it('runs without console errors and makes the same requests as before', async () => {
      const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
      const problems: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') problems.push(`${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
      const requests: string[] = [];
      page.on('request', (r) => requests.push(`${r.method()} ${r.url().slice(dash.url.length - 1)}`));

      await page.goto(`${dash.url}#queue=${encodeURIComponent(q.name)}`);
      await page.locator('#conn', { hasText: 'live' }).waitFor();
      await page.locator('#jobs tbody tr').nth(1).waitFor();
      // Every panel drawn once: queue list, counts, chart, lanes (sorted), a lane, a job.
      await page.locator('#lanes th[data-key="depth"]').click();
      await page.locator('#lanes tbody tr').first().click();
      await page.locator('#jobs tbody tr').first().click();
      await page.locator('#jobData', { hasText: '"n"' }).waitFor();
      expect(await page.locator('#mode').textContent()).toBe('read-only');
      expect(await page.locator('#chart polyline').count()).toBe(2);
      expect(await page.locator('#lanes tbody tr').count()).toBe(2);
      await page.close();

      expect(problems).toEqual([]);
      const queue = `/api/queues/${encodeURIComponent(q.name)}`;
      expect(requests.slice(0, 8)).toEqual([
        'GET /',
        'GET /app.css',
        'GET /app.js',
        'GET /api/config',
        'GET /api/queues',
        `GET ${queue}`,
        `GET ${queue}/throughput`,
        `GET ${queue}/jobs?limit=50&offset=0`,
      ]);
      const ids = (await q.getJobs(['waiting', 'prioritized'])).map((j) => j.id);
      expect(requests.filter((r) => r.startsWith(`GET ${queue}/jobs/`)).map((r) => r.split('/').at(-1))).toEqual([expect.toBeOneOf(ids)]);
    });
  });
});
