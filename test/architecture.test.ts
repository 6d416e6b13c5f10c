// The code's shape, checked so that docs/internals.md and the module graph cannot drift:
// no import cycles under src/ (type-only imports included), every source file named in the
// map of docs/internals.md. (The hash-field tables and raw field names: test/protocol.test.ts.)
import { describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const internals = readFileSync(join(root, 'docs', 'internals.md'), 'utf8');

function walk(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}
const files = walk(src);
const tsFiles = files.filter((p) => /\.(ts|mts)$/.test(p) && !/\.d\.m?ts$/.test(p));

/** Relative imports of a module: static, type-only, re-exports and dynamic import(). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
    const spec = m[1] ?? m[2]!;
    const base = resolve(dirname(file), spec);
    const hit = [base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts'), base, join(base, 'index.ts')].find((c) => existsSync(c) && statSync(c).isFile());
    if (hit && tsFiles.includes(hit)) out.push(hit);
  }
  return out;
}

/** Strongly connected components of more than one module (Tarjan). */
function cycles(): string[][] {
  const graph = new Map(tsFiles.map((f) => [f, importsOf(f)] as const));
  let index = 0;
  const stack: string[] = [];
  const on = new Set<string>();
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v)!) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        c.push(relative(src, w));
      } while (w !== v);
      if (c.length > 1 || graph.get(v)!.includes(v)) found.push(c.sort());
    }
  };
  for (const f of tsFiles) if (!idx.has(f)) visit(f);
  return found;
}

describe('architecture', () => {
  it('has no import cycles under src/ (type-only imports count)', () => {
    expect(cycles()).toEqual([]);
  });

  it('names every file under src/ in the map of docs/internals.md', () => {
    const missing = files
      .filter((p) => {
        const rel = relative(root, p);
        // Lua scripts are named in the transition table and the lib list by their own name.
        if (p.endsWith('.lua')) return !internals.includes('`' + relative(join(src, 'scripts'), p) + '`') && !internals.includes('`' + relative(src, p) + '`');
        return !internals.includes('`' + rel + '`');
      })
      .map((p) => relative(root, p));
    expect(missing).toEqual([]);
  });
});
