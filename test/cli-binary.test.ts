// The built `echomq` binary run as a real process: shebang entry, exit codes and stderr. It is
// compiled here into a scratch folder (like `npm run build` does into dist/) so the test never
// runs a stale dist/.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { Queue } from '../src/index.js';
import { qname, redisUrl, runNode } from './helpers.js';

const root = join(import.meta.dirname, '..');
// Inside node_modules so the build resolves the project's dependencies.
const out = join(root, 'node_modules', '.cache', `echomq-cli-${randomUUID().slice(0, 8)}`);
const main = join(out, 'cli', 'main.js');
const prefix = `clibin-${randomUUID().slice(0, 8)}`;

const run = (args: string[], env: Record<string, string> = {}) => runNode(main, args, env);

describe('echomq binary', () => {
  let q: Queue;
  beforeAll(() => {
    mkdirSync(out, { recursive: true });
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    // Type errors elsewhere in the tree must not hide this test's result: tsc still emits.
    spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json'), '--outDir', out, '--declaration', 'false', '--sourceMap', 'false'], { stdio: 'ignore' });
    cpSync(join(root, 'src', 'scripts'), join(out, 'scripts'), { recursive: true, filter: (src) => !src.endsWith('.ts') });
    writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
    expect(existsSync(main), 'the CLI compiled').toBe(true);
  }, 60_000);
  afterAll(async () => {
    await q?.close();
    rmSync(out, { recursive: true, force: true });
  });

  it('starts with a node shebang and prints status with exit code 0', async () => {
    expect(readFileSync(join(root, 'src', 'cli', 'main.ts'), 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    expect(readFileSync(main, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    q = new Queue(qname('bin'), { connection: redisUrl(), prefix });
    await q.add('x', {}, { lane: 'l1' });
    // REDIS_URL from the environment, --prefix after the command.
    const r = await run(['status', q.name, '--prefix', prefix, '--json'], { REDIS_URL: redisUrl() });
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject({ name: q.name, counts: { waiting: 1 }, lanes: [{ name: 'l1', depth: 1 }] });
  });

  it('exits 1 with one line for an unknown queue and for a refused connection', async () => {
    const unknown = await run(['--redis', redisUrl(), '--prefix', prefix, 'lanes', 'missing']);
    expect(unknown.code).toBe(1);
    expect(unknown.err).toBe(`echomq: queue "missing" not found under prefix "${prefix}" (see: echomq status)\n`);
    const refused = await run(['--redis', 'redis://127.0.0.1:1', 'status']);
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/^echomq: cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/?: connection refused/);
    expect(refused.err.trim().split('\n')).toHaveLength(1);
    const usage = await run(['weight']);
    expect(usage.code).toBe(1);
    expect(usage.err).toMatch(/missing required argument 'queue'/);
  });

  it('refuses an unknown lane with exit code 1 and takes the BullMQ state names', async () => {
    const env = { REDIS_URL: redisUrl() };
    const lanes = new Queue(qname('binlanes'), { connection: redisUrl(), prefix });
    try {
      await lanes.add('x', {}, { lane: 'acme' });
      const typo = await run(['pause', lanes.name, '--lane', 'acm', '--prefix', prefix], env);
      expect(typo.code).toBe(1);
      expect(typo.err).toMatch(/^echomq: lane "acm" of queue "[^"]+" has no jobs and no settings; did you mean "acme"\? \(use --force/);
      expect(typo.err.trim().split('\n')).toHaveLength(1);
      expect((await run(['pause', lanes.name, '--lane', 'acm', '--force', '--prefix', prefix], env)).code).toBe(0);
      const wait = await run(['jobs', lanes.name, '--state', 'wait', '--json', '--prefix', prefix], env);
      expect(wait.code).toBe(0);
      expect(JSON.parse(wait.out).jobs).toEqual([expect.objectContaining({ lane: 'acme', state: 'waiting' })]);
      const schedulers = await run(['schedulers', lanes.name, '--prefix', prefix], env);
      expect(schedulers).toMatchObject({ code: 0, out: 'no job schedulers\n', err: '' });
    } finally {
      await lanes.close();
    }
  });
});
