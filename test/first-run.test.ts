/**
 * What a newcomer meets first: `npm test` in a fresh clone runs every test on its first run,
 * `npm ci` on the Node the README names installs without engine warnings, and a failing
 * processor shows up in a stack trace under a plain name.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue, Worker } from '../src/index.js';
import { qname, redisUrl } from './helpers.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const semver = createRequire(import.meta.url)('semver') as { satisfies(v: string, range: string): boolean };

describe('a fresh clone', () => {
  it('`npm test` makes the Python environment before the Node tests (the interop test runs, not skips)', () => {
    const script: string = pkg.scripts.test;
    const setup = script.indexOf('scripts/python-test.sh --setup-only');
    expect(setup, script).toBeGreaterThanOrEqual(0);
    expect(setup, script).toBeLessThan(script.indexOf('vitest'));
  });

  it('every locked package installs on the Node the README names, without EBADENGINE', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const named = /Node(?:\.js)? (\d+)/.exec(readme);
    expect(named, 'the README names a Node version').not.toBeNull();
    const major = Number(named![1]);
    expect(semver.satisfies(`${major}.19.0`, pkg.engines.node)).toBe(true);
    // vite 7 (vitest's) asks for 20.19, the oldest Node 20 the tests themselves run on.
    const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'));
    const refused = Object.entries(lock.packages as Record<string, { version?: string; engines?: { node?: string } }>)
      .filter(([, p]) => typeof p.engines?.node === 'string' && !semver.satisfies(`${major}.19.0`, p.engines.node))
      .map(([path, p]) => `${path}@${p.version} needs node ${p.engines!.node}`);
    expect(refused).toEqual([]);
  });

  it('keeps Nest 12 in the tests (an override, not a downgrade)', () => {
    expect(pkg.devDependencies['@nestjs/common']).toMatch(/^\^12\./);
    expect(pkg.overrides?.['file-type']).toBeDefined();
  });
});

describe('a failing processor in a stack trace', () => {
  const connection = { url: redisUrl() };
  const name = qname('stack');
  const queue = new Queue(name, { connection });
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    await Promise.all(closers.map((close) => close()));
    await queue.obliterate({ force: true });
    await queue.close();
  });

  /** The stack frame of the processor that threw, from the worker's `failed` event. */
  async function frameOf<R>(w: Worker<unknown, R>): Promise<string> {
    closers.push(() => w.close());
    const failed = new Promise<Error>((res) => w.on('failed', (_job, err) => res(err)));
    await queue.add('x', {});
    const err = await failed;
    await w.close();
    return err.stack!.split('\n')[1].trim();
  }

  it('an inline arrow function is `processor`, not named after the code around it', async () => {
    // V8 names this arrow after the `{ connection }` beside it: `Worker.connection.connection`.
    const w = new Worker(name, async (): Promise<void> => { throw new Error('boom'); }, { connection });
    expect(await frameOf(w)).toMatch(/^at Worker\.processor \(/);
  });

  it('a named function keeps its name', async () => {
    async function sendEmail(): Promise<void> {
      throw new Error('boom');
    }
    expect(await frameOf(new Worker(name, sendEmail, { connection }))).toMatch(/^at Worker\.sendEmail\b/);
    expect(sendEmail.name).toBe('sendEmail');
  });
});
