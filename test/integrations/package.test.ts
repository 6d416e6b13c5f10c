// What `npm pack` ships, and that it installs and loads as users load it: `import` and `require`
// of the root and the subpaths from an empty project, with and without the optional peers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');
// The build copy lives inside node_modules so that tsc resolves the project's dependencies.
const work = join(root, 'node_modules', '.cache', `echomq-pack-${randomUUID().slice(0, 8)}`);
const apps = mkdtempSync(join(tmpdir(), 'echomq-pack-'));
const npm = (args: string[], cwd: string) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd, encoding: 'utf8' });
let tarball = '';
let files: string[] = [];

beforeAll(() => {
  mkdirSync(work, { recursive: true });
  for (const f of ['package.json', 'README.md', 'tsconfig.json', 'tsconfig.build.json', 'src', 'scripts']) cpSync(join(root, f), join(work, f), { recursive: true });
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  spawnSync(process.execPath, [tsc, '-p', join(work, 'tsconfig.build.json')], { cwd: work, stdio: 'ignore' });
  execFileSync(process.execPath, [join(work, 'scripts', 'copy-lua.mjs')], { cwd: work });
  const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', apps], work)) as Array<{ filename: string; files: Array<{ path: string }> }>;
  tarball = join(apps, packed[0].filename);
  files = packed[0].files.map((f) => f.path);
}, 120_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  rmSync(apps, { recursive: true, force: true });
});

/** An empty CommonJS project with the tarball (and `extra` packages) installed. */
function project(name: string, extra: string[]): string {
  const dir = join(apps, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, version: '1.0.0', private: true }));
  npm(['install', tarball, ...extra], dir);
  return dir;
}

function node(dir: string, code: string, type: 'commonjs' | 'module'): string {
  const r = spawnSync(process.execPath, ['--input-type=' + type, '-e', code], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`node exited ${r.status}: ${r.stderr}`);
  return r.stdout.trim();
}

describe('npm pack', () => {
  it('ships the entries, their types and the Lua scripts, and no tests', () => {
    for (const f of ['dist/index.js', 'dist/index.d.ts', 'dist/integrations/bull-board.js', 'dist/integrations/bull-board.d.ts',
      'dist/integrations/nestjs/index.js', 'dist/integrations/nestjs/index.d.ts', 'dist/ops/metrics.js', 'dist/cli/main.js',
      'dist/scripts/claim.lua', 'dist/scripts/lib/common.lua', 'package.json', 'README.md']) {
      expect(files, f).toContain(f);
    }
    expect(files.filter((f) => /(^|\/)test\/|\.test\.|\.spec\./.test(f))).toEqual([]);
    expect(existsSync(tarball)).toBe(true);
  });

  it('installs with the optional peers: import and require of the root, echomq/bull-board and echomq/nestjs', () => {
    const dir = project('with-peers', ['@bull-board/api@9', '@nestjs/common@12', '@nestjs/core@12', 'reflect-metadata', 'rxjs']);
    const cjs = node(dir, `
      const { Queue, Worker } = require('echomq');
      const { EchoMQAdapter } = require('echomq/bull-board');
      const { BullModule, Processor, WorkerHost } = require('echomq/nestjs');
      console.log([typeof Queue, typeof Worker, typeof EchoMQAdapter, typeof BullModule.forRoot, typeof Processor, typeof WorkerHost].join(','));
    `, 'commonjs');
    expect(cjs).toBe('function,function,function,function,function,function');
    const esm = node(dir, `
      import { Queue } from 'echomq';
      import { EchoMQAdapter } from 'echomq/bull-board';
      import { BullModule } from 'echomq/nestjs';
      console.log([typeof Queue, typeof EchoMQAdapter, typeof BullModule.registerQueue].join(','));
    `, 'module');
    expect(esm).toBe('function,function,function');
  }, 120_000);

  it('installs without the optional peers: the root entry still loads both ways', () => {
    const dir = project('no-peers', []);
    expect(node(dir, `console.log(typeof require('echomq').Queue)`, 'commonjs')).toBe('function');
    expect(node(dir, `import { Queue } from 'echomq'; console.log(typeof Queue)`, 'module')).toBe('function');
  }, 120_000);
});
