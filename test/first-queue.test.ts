/**
 * The pages a newcomer copies from run as written: docs/first-queue.md (its Node blocks as one
 * ES module importing `echomq` from a project that installed the package, its Python blocks as
 * one script, its `npx echomq` commands, the dashboard), the README's Node → Python pair and
 * python/README.md. Each runs as its own process against the test Redis, on a database of its
 * own (the pages use REDIS_URL). The package is compiled into a scratch project's node_modules
 * (transpiled with esbuild, fast; `npm run typecheck` checks the types) so a stale dist/ cannot
 * pass or fail this test; the install lines of the page (`npm install`, `pip install`) are what
 * that scratch project and python/.venv stand for.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { build } from 'esbuild';
import ts from 'typescript';
import { Redis } from 'ioredis';
import { redisUrl } from './helpers.js';

const root = join(import.meta.dirname, '..');
// Inside node_modules so the compiled package resolves the project's dependencies (ioredis …).
const project = join(root, 'node_modules', '.cache', `echomq-first-queue-${randomUUID().slice(0, 8)}`);
const pkg = join(project, 'node_modules', 'echomq');
const PY = join(root, 'python', '.venv', 'bin', 'python');
const havePython = existsSync(PY);
if (!havePython && process.env.ECHOMQ_REQUIRE_PYTHON === '1') throw new Error(`python/.venv is missing (${PY})`);

/** The fenced code blocks of a page in one language, in order; `section` keeps those under one `##` heading. */
function blocks(markdown: string, lang: string, section?: string): string[] {
  let text = markdown;
  if (section) {
    const start = text.indexOf(`\n## ${section}\n`);
    expect(start, `section ${section}`).toBeGreaterThanOrEqual(0);
    const end = text.indexOf('\n## ', start + 1);
    text = text.slice(start, end < 0 ? undefined : end);
  }
  return [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```/gm)].filter((m) => m[1] === lang).map((m) => m[2]);
}

const page = (p: string) => readFileSync(join(root, p), 'utf8');

/** A Redis URL on a database of its own, emptied, so pages that share queue names do not meet. */
async function freshDb(db: number): Promise<string> {
  const url = `${redisUrl().replace(/\/\d*$/, '')}/${db}`;
  const c = new Redis(url);
  await c.flushdb();
  await c.quit();
  return url;
}

type Run = { code: number | null; out: string; err: string };

function run(cmd: string, args: string[], env: Record<string, string>, timeoutMs = 40_000): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: project, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out, err });
    });
  });
}

/** Starts a long-running process; resolves with it once its output matches `ready`. */
function start(cmd: string, args: string[], env: Record<string, string>, ready: RegExp) {
  const child = spawn(cmd, args, { cwd: project, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const seen = new Promise<RegExpMatchArray>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${ready} from ${cmd} ${args.join(' ')}:\n${out}`)), 30_000);
    const check = (d: Buffer) => {
      out += d;
      const m = ready.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    };
    child.stdout.on('data', check);
    child.stderr.on('data', check);
    child.on('exit', (code) => reject(new Error(`${cmd} exited (${code}) before ${ready}:\n${out}`)));
  });
  return { child, seen, output: () => out };
}

beforeAll(async () => {
  // The package as `npm install` leaves it: package.json, dist/ with the Lua and sandbox files, the bin link.
  mkdirSync(pkg, { recursive: true });
  const sources: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) sources.push(p);
    }
  };
  walk(join(root, 'src'));
  // The dashboard's page modules are read as tsc emits them (src/dashboard/script.ts): compiled alike.
  const pageDir = join(root, 'src', 'dashboard', 'page');
  mkdirSync(join(pkg, 'dist', 'dashboard', 'page'), { recursive: true });
  for (const f of sources.filter((p) => dirname(p) === pageDir)) {
    const js = ts.transpileModule(readFileSync(f, 'utf8'), { fileName: f, compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } });
    writeFileSync(join(pkg, 'dist', 'dashboard', 'page', relative(pageDir, f).replace(/\.ts$/, '.js')), js.outputText);
  }
  await build({ entryPoints: sources.filter((p) => dirname(p) !== pageDir), outdir: join(pkg, 'dist'), outbase: join(root, 'src'), format: 'esm', platform: 'node', target: 'node20', logLevel: 'error', tsconfig: join(root, 'tsconfig.build.json') });
  for (const sub of ['scripts', 'sandbox']) {
    cpSync(join(root, 'src', sub), join(pkg, 'dist', sub), { recursive: true, filter: (p) => !p.endsWith('.ts') || p.endsWith('.d.mts') });
  }
  cpSync(join(root, 'package.json'), join(pkg, 'package.json'));
  const bin = join(pkg, 'dist', 'cli', 'main.js');
  chmodSync(bin, 0o755);
  mkdirSync(join(project, 'node_modules', '.bin'), { recursive: true });
  symlinkSync(relative(join(project, 'node_modules', '.bin'), bin), join(project, 'node_modules', '.bin', 'echomq'));
  writeFileSync(join(project, 'package.json'), '{ "name": "my-app", "private": true, "type": "module" }\n');
}, 60_000);

afterAll(() => rmSync(project, { recursive: true, force: true }));

describe('docs/first-queue.md runs as written', () => {
  const md = page('docs/first-queue.md');
  let nodeUrl = '';

  it('its Node blocks, as one ES module importing echomq', async () => {
    nodeUrl = await freshDb(11);
    const js = blocks(md, 'js');
    expect(js.length).toBeGreaterThanOrEqual(5);
    writeFileSync(join(project, 'first-queue.mjs'), js.join('\n'));
    const r = await run(process.execPath, ['first-queue.mjs'], { REDIS_URL: nodeUrl });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain("newsletter: attempt 1 failed: mail server busy");
    expect(r.out).toContain("newsletter: attempt 2 failed: mail server busy");
    expect(r.out).toContain("newsletter finished: { sent: 'cy@example.com' }");
    expect(r.out).toMatch(/scheduler daily-digest: next at \d{4}-\d\d-\d\dT\d\d:00:00\.000Z/);
    // Every line the page shows as output is printed (the page's `...` stands for the events' lines).
    const shown = blocks(md, 'text')[0].split('\n').filter((l) => l && l !== '...' && !l.startsWith('scheduler'));
    for (const line of shown) expect(r.out).toContain(line);
  });

  it('its `npx echomq` commands, from the project that installed the package', async () => {
    expect(nodeUrl, 'the Node program ran first').not.toBe('');
    const commands = blocks(md, 'sh')
      .flatMap((b) => b.split('\n'))
      .map((l) => l.replace(/\s+#.*$/, '').trim())
      .filter((l) => l.startsWith('npx echomq ') && !l.includes(' dashboard'));
    expect(commands.length).toBeGreaterThanOrEqual(3);
    for (const line of commands) {
      const r = await run('npx', line.split(/\s+/).slice(1), { REDIS_URL: nodeUrl });
      expect(r.code, `${line}\n${r.out}${r.err}`).toBe(0);
      expect(r.out, line).toMatch(/\S/);
    }
    const status = await run('npx', ['echomq', 'status', 'emails', '--json'], { REDIS_URL: nodeUrl });
    expect(JSON.parse(status.out)).toMatchObject({ counts: { completed: 3, delayed: 1 } });
  });

  it('its dashboard command serves the dashboard', async () => {
    const line = blocks(md, 'sh').flatMap((b) => b.split('\n')).find((l) => l.startsWith('npx echomq dashboard'));
    expect(line).toBeDefined();
    // The page's port may be taken on a shared machine: a free one (0) instead.
    const args = line!.replace(/\s+#.*$/, '').trim().split(/\s+/).slice(1).map((a, i, all) => (all[i - 1] === '--port' ? '0' : a));
    const d = start('npx', args, { REDIS_URL: nodeUrl || (await freshDb(11)) }, /dashboard on (http:\/\/\S+)/);
    try {
      const [, url] = await d.seen;
      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('echomq');
    } finally {
      d.child.kill('SIGTERM');
    }
  });

  it.skipIf(!havePython)('its Python blocks, as one script', async () => {
    const py = blocks(md, 'python');
    expect(py.length).toBeGreaterThanOrEqual(5);
    writeFileSync(join(project, 'first_queue.py'), py.join('\n'));
    const r = await run(PY, ['first_queue.py'], { REDIS_URL: await freshDb(12) });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain("newsletter: attempt 2 failed: mail server busy");
    expect(r.out).toContain("newsletter finished: {'sent': 'cy@example.com'}");
    expect(r.out).toMatch(/scheduler daily-digest: next at \d{13} /);
  });
});

describe('the README snippets run as written', () => {
  it.skipIf(!havePython)("README.md's Python section: the Node producer hands a job to the Python worker", async () => {
    const readme = page('README.md');
    const [producer] = blocks(readme, 'js', 'Python');
    const [worker] = blocks(readme, 'python', 'Python');
    expect(producer).toBeDefined();
    expect(worker).toBeDefined();
    writeFileSync(join(project, 'producer.mjs'), producer);
    writeFileSync(join(project, 'worker.py'), worker);
    const url = await freshDb(13);
    const w = start(PY, ['-u', 'worker.py'], { REDIS_URL: url }, /'width': 640/);
    try {
      const r = await run(process.execPath, ['producer.mjs'], { REDIS_URL: url });
      expect(r.err).toBe('');
      expect(r.code).toBe(0);
      await w.seen;
      expect(w.output()).toContain("{'url': 'https://example.com/a.png', 'width': 640}");
    } finally {
      w.child.kill('SIGTERM');
    }
  });

  it.skipIf(!havePython)('python/README.md', async () => {
    const blocksOf = blocks(page('python/README.md'), 'python');
    expect(blocksOf).toHaveLength(1);
    writeFileSync(join(project, 'readme_example.py'), blocksOf[0]);
    const r = await run(PY, ['readme_example.py'], { REDIS_URL: await freshDb(14) });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toContain("{'sent': 'ada@example.com'}");
  });
});

describe('the demo', () => {
  it('ends by pointing at the first-queue page', () => {
    const last = page('src/demo/main.ts').split('\n').find((l) => l.includes("'\\nDone."));
    expect(last).toContain('docs/first-queue.md');
    expect(existsSync(join(root, 'docs', 'first-queue.md'))).toBe(true);
  });
});
