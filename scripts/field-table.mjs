// Prints docs/protocol.md's hash-field tables from src/core/fields.ts and the Lua scripts: per
// field its stored name, its constant, its doc comment (meaning, type, unit), the Lua files that
// write it and read it, and the TypeScript files that use the constant. It fails when a field
// has no doc comment, or when the Lua names a field that fields.ts does not declare.
//
// Lua is read call by call, by argument position: in `redis.call('HSET' | 'HSETNX', key, f1,
// v1, f2, v2, …)` the odd arguments after the key are written fields, in 'HINCRBY' the first,
// in 'HDEL' all; in 'HGET' | 'HMGET' | 'HEXISTS' all arguments after the key are read. A field
// list handed over as `unpack(list)` is read from the list's own literals (`list = { … }` and
// `list[i] … = 'f', v` lines: lib/newjob.lua's `h`, lib/claim.lua's META_FIELDS), and the
// `extra` lists of createJob (lib/newjob.lua writes them into the job hash) count as written.
//
//   node scripts/field-table.mjs          print the tables (markdown)
//   node scripts/field-table.mjs --write  put them into docs/protocol.md (between the
//                                         "<!-- fields:begin -->" and "<!-- fields:end -->" markers)
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');
export const PROTOCOL = join(root, 'docs', 'protocol.md');
const BEGIN = '<!-- fields:begin -->';
const END = '<!-- fields:end -->';

function walk(dir, out = []) {
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** The tables of fields.ts: name → [{ key, stored, doc }]; every field must carry its own doc comment. */
export function readTables() {
  const text = readFileSync(join(src, 'core', 'fields.ts'), 'utf8');
  const tables = new Map();
  const undocumented = [];
  for (const m of text.matchAll(/export const (\w+) = \{([\s\S]*?)\} as const;/g)) {
    const rows = [];
    let doc = '';
    for (const line of m[2].split('\n')) {
      const c = line.match(/^\s*\/\*\*\s*(.*?)\s*\*\/\s*$/);
      if (c) { doc = c[1]; continue; }
      const f = line.match(/^\s*(\w+): '([^']+)',/);
      if (!f) continue;
      if (!doc) undocumented.push(`${m[1]}.${f[1]}`);
      rows.push({ key: f[1], stored: f[2], doc });
      doc = '';
    }
    tables.set(m[1], rows);
  }
  if (undocumented.length) throw new Error(`src/core/fields.ts: fields without a doc comment: ${undocumented.join(', ')}`);
  return tables;
}

/** Splits a Lua argument list at its top-level commas. */
function splitArgs(s) {
  const out = [];
  let depth = 0;
  let cur = '';
  let quote = '';
  for (const ch of s) {
    if (quote) {
      cur += ch;
      if (ch === quote) quote = '';
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if ('({['.includes(ch)) depth++;
    else if (')}]'.includes(ch)) depth--;
    else if (ch === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
      continue;
    }
    cur += ch;
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

/** Every `redis.call(...)` of a Lua text: [command, arguments after the command]. */
function luaCalls(text) {
  const calls = [];
  let i = 0;
  for (;;) {
    const at = text.indexOf('redis.call(', i);
    if (at < 0) break;
    let depth = 0;
    let j = at + 'redis.call'.length;
    for (; j < text.length; j++) {
      if (text[j] === '(') depth++;
      else if (text[j] === ')' && --depth === 0) break;
    }
    const args = splitArgs(text.slice(at + 'redis.call('.length, j));
    const cmd = (args[0]?.match(/^'(\w+)'$/) ?? [])[1] ?? '';
    calls.push([cmd.toUpperCase(), args.slice(1)]);
    i = j + 1;
  }
  return calls;
}

const literal = (a) => (a.match(/^'([A-Za-z]\w*)'$/) ?? [])[1];
const quoted = (s) => [...s.matchAll(/'([A-Za-z]\w*)'/g)].map((m) => m[1]);
const stripComments = (s) => s.replace(/--[^\n]*/g, '');

/** Field names of a list the text hands to `unpack(name)`: its literal and indexed assignments. */
function listFields(text, name) {
  const esc = name.replace(/[.]/g, '\\.');
  const out = [];
  for (const m of text.matchAll(new RegExp(`\\b${esc}\\s*=\\s*\\{([^}]*)\\}`, 'g'))) {
    // a flat field/value list: fields at the odd positions, unless it is a plain name list
    const items = splitArgs(m[1]);
    const pairs = items.length % 2 === 0 && items.some((x, i) => i % 2 === 1 && !literal(x));
    items.forEach((x, i) => {
      if (!pairs || i % 2 === 0) {
        const l = literal(x);
        if (l) out.push(l);
      }
    });
  }
  for (const m of text.matchAll(new RegExp(`^.*\\b${esc}\\[[^\\]]*\\][^=\\n]*=([^\\n]*)$`, 'gm'))) {
    const items = splitArgs(m[1].replace(/,\s*n\s*[+].*$/, ''));
    items.forEach((x, i) => {
      const l = literal(x);
      if (l && (items.length === 1 || i % 2 === 0)) out.push(l);
    });
  }
  return out;
}

/** Per Lua file: the fields it writes and reads. */
export function luaFieldUse() {
  const lua = walk(join(src, 'scripts')).filter((p) => p.endsWith('.lua'));
  return lua.map((p) => {
    const text = stripComments(readFileSync(p, 'utf8'));
    const w = new Set();
    const r = new Set();
    const lists = (args, into) => {
      for (const a of args) {
        const u = a.match(/^unpack\(([\w.]+)/);
        if (u) for (const f of listFields(text, u[1])) into.add(f);
      }
    };
    for (const [cmd, args] of luaCalls(text)) {
      const rest = args.slice(1);
      if (cmd === 'HSET' || cmd === 'HSETNX') {
        rest.forEach((a, i) => { if (i % 2 === 0 && literal(a)) w.add(literal(a)); });
        lists(rest, w);
      } else if (cmd === 'HINCRBY') {
        if (literal(rest[0] ?? '')) w.add(literal(rest[0]));
      } else if (cmd === 'HDEL') {
        for (const a of rest) if (literal(a)) w.add(literal(a));
        lists(rest, w);
      } else if (cmd === 'HGET' || cmd === 'HMGET' || cmd === 'HEXISTS') {
        for (const a of rest) if (literal(a)) r.add(literal(a));
        lists(rest, r);
      }
    }
    // createJob's `extra` lists become job hash fields (lib/newjob.lua)
    for (const m of text.matchAll(/\bextra\s*=\s*\{([^}]*)\}/g)) splitArgs(m[1]).forEach((x, i) => { if (i % 2 === 0 && literal(x)) w.add(literal(x)); });
    for (const m of text.matchAll(/\bextra\[[^\]]*\](?:\s*,\s*[\w.]*extra\[[^\]]*\])*\s*=\s*([^\n]*)/g)) {
      const items = splitArgs(m[1]);
      items.forEach((x, i) => { if ((items.length === 1 || i % 2 === 0) && literal(x)) w.add(literal(x)); });
    }
    return { name: relative(join(src, 'scripts'), p), text, w, r };
  });
}

/** Files of Lua that set the state field to each letter: `'st', '<letter>'`. */
const stateWriters = (use, letter) => use.filter((u) => new RegExp(`'st',\\s*'${letter}'`).test(u.text) || (letter !== '' && new RegExp(`state = '${letter}'`).test(u.text))).map((u) => u.name);

export function fieldTables() {
  const tables = readTables();
  const use = luaFieldUse();
  const declared = new Set([...tables].filter(([t]) => t !== 'JobStateCode').flatMap(([, rows]) => rows.map((r) => r.stored)));
  const undeclared = use.flatMap((u) => [...u.w, ...u.r].filter((f) => !declared.has(f)).map((f) => `${u.name}: ${f}`));
  if (undeclared.length) throw new Error(`Lua names hash fields that src/core/fields.ts does not declare: ${[...new Set(undeclared)].join(', ')}`);
  const ts = walk(src).filter((p) => p.endsWith('.ts') && !p.endsWith('fields.ts'));
  const tsText = new Map(ts.map((p) => [p, readFileSync(p, 'utf8')]));
  const list = (xs) => (xs.length ? xs.map((x) => `\`${x}\``).join(', ') : '–');
  const out = [];
  for (const [table, rows] of tables) {
    // A field is attributed by its stored name: `name`, `data`, `opts` show the scripts of job
    // and scheduler hashes together (the reader does not know which hash a call names).
    out.push(`#### \`${table}\``, '', '| field | constant | meaning, type and unit | written by (Lua) | read by (Lua) | TypeScript |', '|---|---|---|---|---|---|');
    for (const row of rows) {
      const constant = `${table}.${row.key}`;
      const users = ts.filter((p) => new RegExp(`\\b${constant.replace('.', '\\.')}\\b`).test(tsText.get(p))).map((p) => relative(src, p));
      const writers = table === 'JobStateCode' ? stateWriters(use, row.stored) : use.filter((u) => u.w.has(row.stored)).map((u) => u.name);
      const readers = table === 'JobStateCode' ? [] : use.filter((u) => u.r.has(row.stored)).map((u) => u.name);
      out.push(`| \`${row.stored}\` | \`${row.key}\` | ${row.doc} | ${list(writers)} | ${list(readers)} | ${list(users)} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--write')) {
    const text = readFileSync(PROTOCOL, 'utf8');
    const from = text.indexOf(BEGIN);
    const to = text.indexOf(END);
    if (from < 0 || to < from) throw new Error(`docs/protocol.md: the ${BEGIN} … ${END} markers were not found`);
    writeFileSync(PROTOCOL, text.slice(0, from + BEGIN.length) + '\n' + fieldTables() + '\n' + text.slice(to));
  } else process.stdout.write(fieldTables());
}
