// Prints docs/internals.md's "Hash fields" tables from src/core/fields.ts and the Lua scripts:
// per field its stored name, its constant, its meaning (the constant's doc comment), the Lua
// files that write it and read it, and the TypeScript files that use the constant.
//
// Lua is read call by call: a field named inside `redis.call('HSET' | 'HSETNX' | 'HINCRBY' |
// 'HDEL', …)` is written there, inside `redis.call('HGET' | 'HMGET' | 'HEXISTS', …)` read.
// Job hashes are also written from field lists that a script hands to one `HSET … unpack(list)`
// (lib/newjob.lua, lib/claim.lua): in a file with such a call, a field named outside any call
// counts as written. test/architecture.test.ts checks that docs/internals.md holds this output.
//
//   node scripts/field-table.mjs          print the tables (markdown)
//   node scripts/field-table.mjs --write  put them into docs/internals.md (between the
//                                         "#### `JobField`" heading and "### Script status codes")
import { readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'src');

function walk(dir, out = []) {
  for (const n of readdirSync(dir).sort()) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) walk(p, out);
    else out.push(p);
  }
  return out;
}

/** The tables of fields.ts: name → [{ key, stored, doc }]. */
function readTables() {
  const text = readFileSync(join(src, 'core', 'fields.ts'), 'utf8');
  const tables = new Map();
  for (const m of text.matchAll(/export const (\w+) = \{([\s\S]*?)\} as const;/g)) {
    const rows = [];
    let doc = '';
    for (const line of m[2].split('\n')) {
      const c = line.match(/^\s*\/\*\*\s*(.*?)\s*\*\/\s*$/);
      if (c) { doc = c[1]; continue; }
      const f = line.match(/^\s*(\w+): '([^']+)',/);
      if (f) rows.push({ key: f[1], stored: f[2], doc });
      // a comment covers the fields right below it until a blank line or the next comment
      if (!f && line.trim() === '') doc = '';
    }
    tables.set(m[1], rows);
  }
  return tables;
}

/** Every `redis.call(...)` of a Lua text: [command, inner text], with the rest of the text. */
function luaCalls(text) {
  const calls = [];
  let rest = '';
  let i = 0;
  for (;;) {
    const at = text.indexOf('redis.call(', i);
    if (at < 0) { rest += text.slice(i); break; }
    rest += text.slice(i, at);
    let depth = 0;
    let j = at + 'redis.call'.length;
    for (; j < text.length; j++) {
      if (text[j] === '(') depth++;
      else if (text[j] === ')' && --depth === 0) break;
    }
    const inner = text.slice(at + 'redis.call('.length, j);
    const cmd = (inner.match(/^\s*'(\w+)'/) ?? [])[1] ?? '';
    calls.push([cmd.toUpperCase(), inner]);
    i = j + 1;
  }
  return { calls, rest };
}

const WRITES = new Set(['HSET', 'HSETNX', 'HINCRBY', 'HDEL']);
const READS = new Set(['HGET', 'HMGET', 'HEXISTS']);
const quoted = (s) => new Set([...s.matchAll(/'([A-Za-z]+)'/g)].map((m) => m[1]));
const stripComments = (s) => s.replace(/--[^\n]*/g, '');

export function fieldTables() {
  const tables = readTables();
  const lua = walk(join(src, 'scripts')).filter((p) => p.endsWith('.lua'));
  const ts = walk(src).filter((p) => p.endsWith('.ts') && !p.endsWith('fields.ts'));
  const luaUse = lua.map((p) => {
    const { calls, rest } = luaCalls(stripComments(readFileSync(p, 'utf8')));
    const w = new Set();
    const r = new Set();
    for (const [cmd, inner] of calls) {
      if (WRITES.has(cmd)) for (const f of quoted(inner)) w.add(f);
      if (READS.has(cmd)) for (const f of quoted(inner)) r.add(f);
    }
    if (calls.some(([cmd, inner]) => cmd === 'HSET' && /unpack\(/.test(inner))) for (const f of quoted(rest)) w.add(f);
    return { name: relative(join(src, 'scripts'), p), w, r };
  });
  const out = [];
  for (const [table, rows] of tables) {
    // Lua spells job and scheduler fields on their own hashes; meta fields beside K.meta. The
    // split by hash is not visible to this reader, so a field is attributed by its stored name.
    out.push(`#### \`${table}\``, '', '| field | constant | meaning | written by (Lua) | read by (Lua) | TypeScript |', '|---|---|---|---|---|---|');
    for (const row of rows) {
      const constant = `${table}.${row.key}`;
      const writers = luaUse.filter((u) => u.w.has(row.stored)).map((u) => u.name);
      const readers = luaUse.filter((u) => u.r.has(row.stored)).map((u) => u.name);
      const users = ts.filter((p) => readFileSync(p, 'utf8').includes(constant)).map((p) => relative(src, p));
      const list = (xs) => (xs.length ? xs.map((x) => `\`${x}\``).join(', ') : '–');
      out.push(`| \`${row.stored}\` | \`${row.key}\` | ${row.doc || '–'} | ${list(writers)} | ${list(readers)} | ${list(users)} |`);
    }
    out.push('');
  }
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--write')) {
    const doc = join(root, 'docs', 'internals.md');
    const text = readFileSync(doc, 'utf8');
    const from = text.indexOf('#### `JobField`');
    const to = text.indexOf('### Script status codes');
    if (from < 0 || to < from) throw new Error('docs/internals.md: the hash-field tables section was not found');
    writeFileSync(doc, text.slice(0, from) + fieldTables() + '\n' + text.slice(to));
  } else process.stdout.write(fieldTables());
}
