#!/usr/bin/env node
// Builds the current working tree into a private directory, so a long benchmark measures one
// fixed build even while someone else edits src/ or rebuilds dist/. Prints the path to give
// BENCH_ECHOMQ; the tree's git commit and whether src/ had uncommitted changes go to stderr
// (and into SNAPSHOT.txt next to the build).
//
//   BENCH_ECHOMQ=$(node bench/snapshot.mjs) node scripts/with-redis.mjs node --expose-gc bench/run.mjs --suite core
//   node bench/snapshot.mjs /tmp/my-build          # choose the directory
import { cpSync, mkdtempSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const dir = process.argv[2] ? resolve(process.argv[2]) : mkdtempSync(join(tmpdir(), 'echomq-snap-'));
mkdirSync(dir, { recursive: true });
for (const f of ['src', 'scripts', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
  cpSync(join(root, f), join(dir, f), { recursive: true });
}
symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
const git = (...args) => execFileSync('git', args, { cwd: root, encoding: 'utf8' }).trim();
const commit = git('rev-parse', '--short', 'HEAD');
const dirty = git('status', '--porcelain', '--', 'src');
execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: dir, stdio: 'inherit' });
execFileSync(process.execPath, ['scripts/copy-lua.mjs'], { cwd: dir, stdio: 'inherit' });
const note = `commit ${commit}${dirty ? `, with uncommitted src changes:\n${dirty}` : ', src clean'}\nbuilt ${new Date().toISOString()}\n`;
writeFileSync(join(dir, 'SNAPSHOT.txt'), note);
console.error(`[snapshot] ${dir}: ${note.trim()}`);
console.log(join(dir, 'dist', 'index.js'));
