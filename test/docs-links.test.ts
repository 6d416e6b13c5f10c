/**
 * The docs stand on their own: no file cites a document readers of the repository do not have,
 * and every relative link in the Markdown pages reaches a file (and a heading, for `#anchor`s)
 * that exists. No Redis needed.
 */
import { describe, expect, it } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const self = relative(root, fileURLToPath(import.meta.url));

/** Tracked and new (not ignored) files: what a clone of the branch would hold. */
function repoFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-co', '--exclude-standard'], { cwd: root, encoding: 'utf8' });
  return out.split('\n').filter((f) => f && existsSync(join(root, f)) && statSync(join(root, f)).isFile());
}

const TEXT = /\.(ts|mts|cts|js|mjs|cjs|py|lua|md|sh|json|toml|txt|yml|yaml|html|css)$|^\.ci\//;

/** Citations of documents outside the repository: the design notes it was built from. */
const OUTSIDE: Array<[RegExp, string]> = [
  [/\bDESIGN(\.md\b|\s*§)/, 'the design notes (DESIGN)'],
  [/\bdesign brief\b/i, 'a design brief'],
  [/\bthe brief\b/i, 'a brief'],
  [/\.\.\/shared\b/, 'a folder beside the repository (../shared)'],
  [/(^|[\s(`'"[])seeds\//, 'a seeds/ folder'],
];

function outsideCitations(path: string, text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    for (const [re, what] of OUTSIDE) if (re.test(line)) found.push(`${path}:${i + 1} cites ${what}: ${line.trim()}`);
  });
  return found;
}

/** GitHub's heading anchor: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of stripCode(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const base = text.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  for (const m of markdown.matchAll(/<a\s+(?:name|id)="([^"]+)"/g)) out.add(m[1]);
  return out;
}

/** Fenced code blocks blanked out (line count kept), so their contents are not read as links or headings. */
function stripCode(markdown: string): string {
  let inFence = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*(```|~~~)/.test(line)) {
        inFence = !inFence;
        return '';
      }
      return inFence ? '' : line;
    })
    .join('\n');
}

function brokenLinks(path: string, markdown: string, read: (p: string) => string | undefined): string[] {
  const broken: string[] = [];
  const lines = stripCode(markdown).split('\n');
  lines.forEach((line, i) => {
    const bare = line.replace(/`[^`]*`/g, '');
    for (const m of bare.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1];
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
      const [file, anchor] = target.split('#', 2);
      const dest = file === '' ? path : join(dirname(path), decodeURIComponent(file));
      const text = read(dest);
      if (text === undefined) {
        broken.push(`${path}:${i + 1} links to ${target}: no file ${dest}`);
        continue;
      }
      if (anchor && dest.endsWith('.md') && !anchorsOf(text).has(decodeURIComponent(anchor).toLowerCase())) {
        broken.push(`${path}:${i + 1} links to ${target}: ${dest} has no heading #${anchor}`);
      }
    }
  });
  return broken;
}

function readRepo(p: string): string | undefined {
  const abs = join(root, p);
  if (!existsSync(abs)) return undefined;
  return statSync(abs).isDirectory() ? '' : readFileSync(abs, 'utf8');
}

describe('docs stand on their own', () => {
  const files = repoFiles();

  it('no file cites a document outside the repository', () => {
    const found = files
      .filter((f) => TEXT.test(f) && f !== self && f !== 'package-lock.json')
      .flatMap((f) => outsideCitations(f, readFileSync(join(root, f), 'utf8')));
    expect(found).toEqual([]);
  });

  it('the check itself catches each form of citation', () => {
    const samples = ['see DESIGN §11', 'as DESIGN.md says', 'the design brief names it', 'The brief packs', 'read ../shared/x', 'from `seeds/`'];
    for (const s of samples) expect(outsideCitations('x.md', s), s).toHaveLength(1);
    expect(outsideCitations('x.md', 'random drops over seeds 1–10, by design')).toEqual([]);
  });

  it('every relative link in the Markdown pages reaches an existing file and heading', () => {
    const pages = files.filter((f) => f.endsWith('.md') && !f.includes('node_modules'));
    expect(pages).toContain('README.md');
    expect(pages).toContain('docs/performance.md');
    const broken = pages.flatMap((p) => brokenLinks(p, readFileSync(join(root, p), 'utf8'), readRepo));
    expect(broken).toEqual([]);
  });

  it('the link check catches a missing file and a missing heading', () => {
    const pages: Record<string, string> = { 'docs/a.md': '# Title\n## The `claim` (one call)\n## Keys\n## Keys\n' };
    const read = (p: string) => pages[p];
    expect(brokenLinks('README.md', '[a](docs/a.md#the-claim-one-call) [b](docs/a.md#keys-1) [c](#x)', (p) => read(p) ?? (p === 'README.md' ? '# X\n' : undefined))).toEqual([]);
    expect(brokenLinks('README.md', '[a](docs/nope.md)', read)).toHaveLength(1);
    expect(brokenLinks('README.md', '[a](docs/a.md#gone)', read)).toHaveLength(1);
  });
});

describe('the docs read as a product, not a work log', () => {
  const root2 = root;
  const pages = ['README.md', 'python/README.md', 'bench/README.md', 'bench/python/README.md', ...readdirSync(join(root2, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const LOG: Array<[RegExp, string]> = [
    [/\b(Set [A-Z]|Round \d+)\b/, 'a measurement set or round'],
    [/\b(this|previous|the last|fifth|fourth|third|second|first) session\b/i, 'a working session'],
    [/\byesterday\b|\bthis host\b|\bthe day before\b/i, 'a day or host of the work'],
    [/\bthe performance issue\b|\(issue \d+\)|\bissue \d+'s\b/i, 'an issue of the tracker'],
  ];

  it('no page speaks of sessions, rounds, sets or issues', () => {
    const found: string[] = [];
    for (const p of pages) {
      readFileSync(join(root2, p), 'utf8').split('\n').forEach((line, i) => {
        for (const [re, what] of LOG) if (re.test(line)) found.push(`${p}:${i + 1} names ${what}: ${line.trim().slice(0, 120)}`);
      });
    }
    expect(found).toEqual([]);
  });

  it('docs/performance.md is a page a user reads: short, every commit it cites exists, every command it gives names a real suite or script', () => {
    const perf = readFileSync(join(root2, 'docs/performance.md'), 'utf8');
    expect(perf.split('\n').length).toBeLessThanOrEqual(320);
    for (const heading of ['## What a job costs', '## Against BullMQ and bee-queue', '## What bounds each row', '## How throughput grows', '## Reproducing']) {
      expect(perf).toContain(heading);
    }
    const commits = [...new Set([...perf.matchAll(/`([0-9a-f]{7,40})`/g)].map((m) => m[1]))];
    expect(commits.length).toBeGreaterThan(0);
    const shallow = existsSync(join(root2, '.git', 'shallow'));
    if (!shallow) {
      for (const c of commits) {
        const r = spawnSync('git', ['cat-file', '-e', `${c}^{commit}`], { cwd: root2 });
        expect(r.status, `commit ${c} cited by docs/performance.md`).toBe(0);
      }
    }
    const table = /const SUITES = \{([^}]*)\}/.exec(readFileSync(join(root2, 'bench/run.mjs'), 'utf8'))![1];
    const suites = [...table.matchAll(/'?([\w-]+)'?\s*:/g)].map((m) => m[1]);
    expect(suites).toContain('core');
    for (const m of perf.matchAll(/--suite ([\w,-]+)/g)) for (const s of m[1].split(',')) expect(suites, `suite ${s}`).toContain(s);
    for (const m of perf.matchAll(/\b(bench\/[\w/.-]+\.(?:mjs|py))/g)) expect(existsSync(join(root2, m[1])), m[1]).toBe(true);
  });

  it("the README's performance section is the current table and a link", () => {
    const readme = readFileSync(join(root2, 'README.md'), 'utf8');
    const start = readme.indexOf('\n## Performance\n');
    const section = readme.slice(start, readme.indexOf('\n## ', start + 1));
    expect(section).toMatch(/\| process, concurrency 50 \|/);
    expect(section).toContain('(docs/performance.md)');
    expect(section.split('\n').length).toBeLessThanOrEqual(25);
  });
});
