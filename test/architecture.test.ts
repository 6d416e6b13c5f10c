// The code's shape, checked so that docs/internals.md and the module graph cannot drift:
// no import cycles under src/ (type-only imports included), folders as layers in the order of
// the map's folder table, and every source file named in the map. (The hash-field tables and
// raw field names: test/protocol.test.ts.)
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
const tsFiles = files.filter((p) => /\.(ts|mts|tsx)$/.test(p) && !/\.d\.m?ts$/.test(p));

/** Relative imports of a module: static, type-only, re-exports and dynamic import(). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g)) {
    const spec = m[1] ?? m[2]!;
    const base = resolve(dirname(file), spec);
    const hit = [base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), base.replace(/\.mjs$/, '.mts'), base, join(base, 'index.ts')].find((c) => existsSync(c) && statSync(c).isFile());
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

/** The folder of a module under src/: its first path segment, '.' for the package root's files. */
const folderOf = (file: string): string => {
  const parts = relative(src, file).split('/');
  return parts.length > 1 ? parts[0]! : '.';
};

/**
 * The rows of the folder table in docs/internals.md, top first: the `src/<folder>/` names in
 * each row's first cell (`src/index.ts` stands for the package root's files, folder '.').
 */
function layerRows(): string[][] {
  const table = internals.slice(internals.indexOf('| folder |'));
  const lines = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
  return lines.map((l) => [...l.split('|')[1]!.matchAll(/`src\/([^`]*)`/g)].map((m) => (m[1] === 'index.ts' ? '.' : m[1]!.replace(/\/$/, ''))));
}

/** An import between folders: importing module, imported module and their folders. */
interface FolderEdge { from: string; to: string; fromFolder: string; toFolder: string }

/**
 * What breaks the layering: an import of a folder on the same row or a row below (a folder
 * imports only from rows above it), and pairs of folders that import each other.
 */
function layerViolations(edges: readonly FolderEdge[], rows: readonly string[][]): { against: string[]; mutual: string[] } {
  const rank = new Map(rows.flatMap((r, i) => r.map((f) => [f, i] as const)));
  const against: string[] = [];
  const pairs = new Set<string>();
  for (const e of edges) {
    if (e.fromFolder === e.toFolder) continue;
    pairs.add(`${e.fromFolder}>${e.toFolder}`);
    const a = rank.get(e.fromFolder) ?? -1;
    const b = rank.get(e.toFolder) ?? Infinity;
    if (b >= a) against.push(`${e.from} -> ${e.to}`);
  }
  const mutual = [...pairs].filter((p) => { const [a, b] = p.split('>'); return a! < b! && pairs.has(`${b}>${a}`); }).map((p) => p.replace('>', ' <-> '));
  return { against, mutual };
}

const folderEdges = (): FolderEdge[] => tsFiles.flatMap((f) => importsOf(f).map((t) => ({
  from: relative(src, f), to: relative(src, t), fromFolder: folderOf(f), toFolder: folderOf(t),
})));

describe('folders as layers', () => {
  it('lists every folder under src/ once in the folder table of docs/internals.md', () => {
    const listed = layerRows().flat();
    const folders = [...new Set(files.map(folderOf))].sort();
    expect(listed.filter((f, i) => listed.indexOf(f) !== i)).toEqual([]);
    expect(folders.filter((f) => !listed.includes(f))).toEqual([]);
    expect(listed.filter((f) => !folders.includes(f))).toEqual([]);
  });

  it('imports only from folders on rows above, and no two folders import each other', () => {
    const { against, mutual } = layerViolations(folderEdges(), layerRows());
    expect(against).toEqual([]);
    expect(mutual).toEqual([]);
  });

  it('the check fails on an import against the order, within a row, and between two folders both ways', () => {
    const rows = [['core'], ['job', 'events'], ['queue']];
    const e = (from: string, to: string): FolderEdge => ({ from: `${from}/a.ts`, to: `${to}/b.ts`, fromFolder: from, toFolder: to });
    expect(layerViolations([e('queue', 'job'), e('job', 'core')], rows)).toEqual({ against: [], mutual: [] });
    expect(layerViolations([e('core', 'queue')], rows).against).toEqual(['core/a.ts -> queue/b.ts']);
    expect(layerViolations([e('job', 'events')], rows).against).toEqual(['job/a.ts -> events/b.ts']);
    expect(layerViolations([e('queue', 'job'), e('job', 'queue')], rows).mutual).toEqual(['job <-> queue']);
    expect(layerViolations([e('queue', 'nowhere')], rows).against).toEqual(['queue/a.ts -> nowhere/b.ts']);
  });
});

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
