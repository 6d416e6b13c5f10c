/**
 * Loads the Lua transition scripts: resolves `--!include` lines, reads the `-- KEYS:` header
 * to learn which named keys the script takes, and rewrites each `K.name` in the body to
 * `KEYS[i]` (or `nil` for a key the script does not declare, so optional keys can be tested with
 * `if K.name then`). Script bodies refer to keys by name; no table is built per call (a
 * 24-entry table costs about 1 µs of Redis time on every call). The header is the single
 * source of the key order.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KeyName } from '../keys.js';

const DIR = dirname(fileURLToPath(import.meta.url));

export interface LuaScript {
  readonly name: string;
  /** Named keys, in KEYS order. */
  readonly keys: readonly KeyName[];
  readonly source: string;
  readonly sha: string;
}

function resolveIncludes(text: string, seen: Set<string>): string {
  return text.replace(/^--!include (\S+)\s*$/gm, (_m, rel: string) => {
    if (seen.has(rel)) return '';
    seen.add(rel);
    return resolveIncludes(readFileSync(join(DIR, rel), 'utf8'), seen);
  });
}

export function parseKeysHeader(name: string, text: string): KeyName[] {
  const m = /^-- KEYS: (.+)$/m.exec(text);
  if (!m) throw new Error(`script ${name}.lua has no "-- KEYS:" header`);
  return m[1].split(',').map((s) => s.trim()).filter(Boolean) as KeyName[];
}

const cache = new Map<string, LuaScript>();

export function loadScript(name: string): LuaScript {
  const hit = cache.get(name);
  if (hit) return hit;
  const raw = readFileSync(join(DIR, `${name}.lua`), 'utf8');
  const keys = parseKeysHeader(name, raw);
  const index = new Map(keys.map((k, i) => [k as string, i + 1]));
  const source = resolveIncludes(raw, new Set()).replace(/\bK\.([A-Za-z_]\w*)/g, (_m, key: string) => {
    const i = index.get(key);
    return i === undefined ? 'nil' : `KEYS[${i}]`;
  });
  const sha = createHash('sha1').update(source).digest('hex');
  const script = { name, keys, source, sha };
  cache.set(name, script);
  return script;
}
