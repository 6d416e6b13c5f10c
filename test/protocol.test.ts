// docs/protocol.md is the wire contract a second client is written from; this checks it against
// the code: each script's KEYS and ARGV in the page equal its header (and the loader's key
// order), the field tables equal what fields.ts and the Lua give, every status code of the code
// is in the page and the reverse, the key table names every QueueKeys key, the layout version
// matches. It also keeps TypeScript from spelling stored field names or state letters raw.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Code, EchoError, ErrorCodes, refusalError, UnrecoverableError } from '../src/core/errors.js';
import { LAYOUT_VERSION } from '../src/core/layout.js';
import { queueKeys } from '../src/core/keys.js';
import { LIBRARY_TRANSITIONS, loadScript } from '../src/scripts/loader.js';
// @ts-expect-error plain ESM helper without types
import { headers, scriptNames, scriptSections } from '../scripts/protocol-scripts.mjs';
// @ts-expect-error plain ESM helper without types
import { fieldTables } from '../scripts/field-table.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
const page = readFileSync(join(root, 'docs', 'protocol.md'), 'utf8');
const artifact = JSON.parse(readFileSync(join(root, 'python', 'echomq', 'library.json'), 'utf8'));

interface Header {
  name: string;
  keys: string[];
  argv: { lead: string; rows: Array<{ pos: string; text: string }> };
  returns: string;
  errors: string;
  events: string;
}
const scripts = headers() as Header[];

/** The page's section of a script: KEYS and the ARGV table rows, parsed back from markdown. */
function pageSection(name: string): { keys: string[]; argv: Array<{ pos: string; text: string }>; reply: string; codes: string } | undefined {
  const start = page.indexOf(`### \`${name}\`\n`);
  if (start < 0) return undefined;
  const next = page.indexOf('\n### ', start + 1);
  const end = page.indexOf('<!-- scripts:end -->', start);
  const body = page.slice(start, next < 0 || next > end ? end : next);
  const keysLine = /^- \*\*KEYS\*\* \((\d+)\): (.*)$/m.exec(body);
  const keys = keysLine ? [...keysLine[2]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!) : [];
  if (keysLine) expect(Number(keysLine[1]), `${name}: KEYS count`).toBe(keys.length);
  const argv = [...body.matchAll(/^\| (?:`\[([^\]]+)\]`|then) \| (.*) \|$/gm)].map((m) => ({ pos: m[1] ?? '', text: m[2]!.replace(/\\\|/g, '|') }));
  const reply = (/^- \*\*Reply\*\*: (.*)$/m.exec(body) ?? [])[1] ?? '';
  const codes = (/^- \*\*Status codes\*\*: (.*)$/m.exec(body) ?? [])[1] ?? '';
  return { keys, argv, reply, codes };
}

describe('docs/protocol.md against the scripts', () => {
  it('has one section per script, every src/scripts/*.lua', () => {
    const names = scriptNames() as string[];
    expect(names).toEqual(readdirSync(join(src, 'scripts')).filter((f) => f.endsWith('.lua')).map((f) => f.slice(0, -4)).sort());
    const inPage = [...page.matchAll(/^### `(\w+)`$/gm)].map((m) => m[1]);
    expect(inPage).toEqual(names);
  });

  it.each(scripts.map((h) => [h.name, h] as const))('%s: KEYS and ARGV in the page equal its header', (name, h) => {
    const s = pageSection(name);
    expect(s, `docs/protocol.md has no section for ${name}`).toBeDefined();
    // the header's KEYS are the order the loader binds and the artifact ships
    expect(h.keys).toEqual([...loadScript(name).keys]);
    expect(h.keys).toEqual(artifact.scripts[name].keys);
    expect(s!.keys).toEqual(h.keys);
    expect(h.argv.rows.length, `${name}.lua: its ARGV header names no [n] position`).toBeGreaterThan(0);
    expect(s!.argv).toEqual(h.argv.rows);
    for (const r of h.argv.rows) expect(r.text, `${name}.lua ARGV [${r.pos}] says nothing`).not.toBe('');
    expect(h.returns, `${name}.lua: header without Returns`).not.toBe('');
    expect(h.errors, `${name}.lua: header without Errors`).not.toBe('');
    expect(h.events, `${name}.lua: header without Events`).not.toBe('');
    expect(s!.reply).toBe(h.returns);
  });

  it.each(scripts.map((h) => [h.name] as const))('%s: its ARGV table has one row per position, each with a description of its own', (name) => {
    const rows = pageSection(name)!.argv;
    const positions = rows.filter((r) => r.pos !== '').map((r) => r.pos);
    expect(new Set(positions).size, `${name}: a position appears twice`).toBe(positions.length);
    for (const r of rows) {
      expect(r.text.trim(), `${name} [${r.pos}] has no description`).not.toMatch(/^[/|…,;.:]*$/);
      // A row holds its own argument: no other position starts inside it (references sit in parentheses).
      const outside = r.text.replace(/\([^()]*(?:\([^()]*\)[^()]*)*\)/g, '');
      expect(outside, `${name} [${r.pos}] runs into another position`).not.toMatch(/(?:^|[,;:]\s)\[(?:\d+|[a-e])(?:\s*(?:\+|\.\.)[^\]]*)?\]/);
      if (r.pos === '') expect(r.text, `${name}: a group row introduces the next positions`).toMatch(/\S/);
    }
  });

  it('the generated reference is current (node scripts/protocol-scripts.mjs --write)', () => {
    expect(page).toContain((scriptSections(LIBRARY_TRANSITIONS) as string).trim());
  });
});

describe('docs/protocol.md against the stored layout', () => {
  it('states the layout version of src/core/layout.ts, as the artifact does', () => {
    expect(/^Layout version: \*\*(\d+)\*\*$/m.exec(page)?.[1]).toBe(String(LAYOUT_VERSION));
    expect(artifact.layoutVersion).toBe(LAYOUT_VERSION);
  });

  it('holds the field tables that scripts/field-table.mjs derives (node scripts/field-table.mjs --write)', () => {
    expect(page).toContain((fieldTables() as string).trim());
  });

  it('lists every key of a queue, and only those', () => {
    const k = queueKeys('q') as unknown as Record<string, string>;
    const names = Object.keys(k).filter((n) => !['queue', 'prefix', 'base'].includes(n)).sort();
    const section = page.slice(page.indexOf('<!-- keys:begin -->'), page.indexOf('<!-- keys:end -->'));
    const listed = [...section.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]!).sort();
    expect(listed).toEqual(names);
    // each row spells the key's real suffix (a family's as `lane:<lane>`)
    for (const n of names) {
      const row = section.split('\n').find((l) => l.startsWith(`| \`${n}\` |`))!;
      const suffix = k[n]!.slice(k.base!.length);
      expect(row.includes('`' + suffix), `key ${n}: the row names its suffix ${suffix}`).toBe(true);
    }
  });
});

describe('status codes', () => {
  const entries = Object.entries(Code) as Array<[string, number]>;
  const luaFiles = readdirSync(join(src, 'scripts')).filter((f) => f.endsWith('.lua')).map((f) => join(src, 'scripts', f))
    .concat(readdirSync(join(src, 'scripts', 'lib')).map((f) => join(src, 'scripts', 'lib', f)));

  it('one name per number', () => {
    const values = entries.map(([, v]) => v);
    expect(new Set(values).size).toBe(values.length);
    for (const v of values) expect(v).toBeLessThan(0);
  });

  it('the page lists exactly the codes of Code, and the artifact carries them', () => {
    const section = page.slice(page.indexOf('<!-- codes:begin -->'), page.indexOf('<!-- codes:end -->'));
    const rows = [...section.matchAll(/^\| (-\d+) \| `(\w+)` \| (.+?) \|/gm)].map((m) => [m[2]!, Number(m[1])] as [string, number]);
    expect(Object.fromEntries(rows)).toEqual(Code);
    expect(rows.length).toBe(entries.length);
    expect(artifact.codes).toEqual(Code);
  });

  it('every code a header or a script replies with is in Code, and every Code is replied by some script', () => {
    const values = new Set(entries.map(([, v]) => v));
    const named = new Set<number>();
    for (const h of scripts) {
      for (const m of `${h.returns} ${h.errors}`.matchAll(/(?<![\w.])-(\d+)\b/g)) {
        const n = -Number(m[1]);
        expect(values.has(n), `${h.name}.lua header names ${n}, which Code does not`).toBe(true);
        named.add(n);
      }
    }
    for (const f of luaFiles) {
      const text = readFileSync(f, 'utf8').replace(/--[^\n]*/g, '');
      for (const m of text.matchAll(/return\s*\{?\s*(-\d+)\b|\]\s*=\s*(-\d+)\s*$|\bcode\s*=\s*(-\d+)\b|then\s+return\s+(-\d+)\b/gm)) {
        const n = Number(m[1] ?? m[2] ?? m[3] ?? m[4]);
        expect(values.has(n), `${relative(src, f)} replies ${n}, which Code does not name`).toBe(true);
      }
    }
    expect(entries.filter(([, v]) => !named.has(v)).map(([k]) => k)).toEqual([]);
  });
});

describe('status codes become errors in one table', () => {
  // add's per-job codes and addFlow's are built by their bindings with the add's parent and lane
  const byBindings = new Set<number>([Code.GROUP_FULL, Code.CROSS_QUEUE_CHILDREN, Code.OTHER_PARENT]);

  it.each(Object.entries(Code).filter(([, v]) => !byBindings.has(v)))('%s gives a typed error with BullMQ\'s text first', (_name, code) => {
    const e = refusalError(code, { jobId: '7', op: 'op', command: 'moveToFinished', state: 'active', parentKey: 'bull:q:1', queue: 'q' });
    expect(e instanceof EchoError || e instanceof UnrecoverableError).toBe(true);
    if (e instanceof EchoError) expect(Object.values(ErrorCodes)).toContain(e.code);
    expect(e.message).not.toMatch(/unexpected reply/);
  });

  it('an unknown code is reported as such, not guessed', () => {
    const e = refusalError(-99, { jobId: '7', op: 'op' }) as EchoError;
    expect(e.code).toBe(ErrorCodes.UNKNOWN);
    expect(e.message).toBe('op: unexpected reply -99 for job "7"');
  });

  it('EchoError codes come from ErrorCodes only', () => {
    const known = new Set<string>(Object.values(ErrorCodes));
    const offenders: string[] = [];
    for (const f of tsFiles) {
      for (const m of readFileSync(f, 'utf8').matchAll(/(?:new EchoError|super)\(\s*'(ERR_\w+)'/g)) if (!known.has(m[1]!)) offenders.push(`${relative(src, f)} ${m[1]}`);
    }
    expect(offenders).toEqual([]);
  });
});

function walk(dir: string, out: string[] = []): string[] {
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}
const tsFiles = walk(src).filter((p) => /\.(ts|mts)$/.test(p) && !/\.d\.m?ts$/.test(p) && !p.endsWith(join('core', 'fields.ts')));
const fieldsText = readFileSync(join(src, 'core', 'fields.ts'), 'utf8');
const declared = [...fieldsText.matchAll(/^\s*(\w+): '([^']+)',/gm)].map((m) => ({ key: m[1]!, stored: m[2]! }));

describe('TypeScript names stored fields through src/core/fields.ts', () => {
  it('spells no stored field name in a hash command, across lines and in object arguments', () => {
    const stored = new Set(declared.map((d) => d.stored));
    const offenders: string[] = [];
    for (const f of tsFiles) {
      const text = readFileSync(f, 'utf8');
      for (const m of text.matchAll(/\.(?:hget|hmget|hset|hsetnx|hmset|hdel|hincrby|hincrbyfloat|hexists|hstrlen)\(/g)) {
        let depth = 0;
        let j = m.index! + m[0].length - 1;
        for (; j < text.length; j++) {
          if (text[j] === '(') depth++;
          else if (text[j] === ')' && --depth === 0) break;
        }
        const args = text.slice(m.index! + m[0].length, j);
        const names = [...args.matchAll(/'([A-Za-z]\w*)'|[{,]\s*([A-Za-z]\w*)\s*:/g)].map((x) => x[1] ?? x[2]!);
        if (names.some((n) => stored.has(n))) offenders.push(`${relative(src, f)}:${text.slice(0, m.index).split('\n').length}`);
      }
    }
    expect(offenders).toEqual([]);
  });

  it('builds no hash-shaped object literal with raw stored names', () => {
    // Two or more distinct short stored names (those that differ from their constant) as keys
    // of one object literal is a hash written or faked by hand; computed keys ([JobField.x]) pass.
    const coded = new Set(declared.filter((d) => d.key !== d.stored && d.stored.length > 1).map((d) => d.stored));
    const offenders: string[] = [];
    for (const f of tsFiles) {
      readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
        const keys = new Set([...line.matchAll(/[{,]\s*(\w+)\s*:(?!\s*(?:number|string|boolean|[A-Z]\w*)\b\s*[,)=])/g)].map((m) => m[1]!).filter((k) => coded.has(k)));
        if (keys.size >= 2) offenders.push(`${relative(src, f)}:${i + 1} ${[...keys].join(' ')}`);
      });
    }
    expect(offenders).toEqual([]);
  });

  it('compares state letters only through JobStateCode', () => {
    const offenders: string[] = [];
    for (const f of tsFiles) {
      readFileSync(f, 'utf8').split('\n').forEach((line, i) => {
        if (/\b(?:st|state|\w+State)\s*[!=]==?\s*'[wadcfh]'|'[wadcfh]'\s*[!=]==?\s*(?:st|state)\b/.test(line)) offenders.push(`${relative(src, f)}:${i + 1}`);
      });
    }
    expect(offenders).toEqual([]);
  });
});
