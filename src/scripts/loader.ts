/**
 * Loads the Lua transition scripts, in two forms:
 *
 * - a script per transition for EVAL/EVALSHA: `--!include` lines resolved, and each `K.name`
 *   rewritten to `KEYS[i]` from the script's `-- KEYS:` header (or to `nil` for a key the
 *   script does not declare, so optional keys can be tested with `if K.name then`);
 * - one function library for FCALL (Redis 7+, Valkey), holding the hot-path transitions (adding,
 *   claiming, settling, lease renewal, recovery; the rest run as scripts). Its code runs
 *   once, at FUNCTION LOAD: the many small Lua functions the transitions share are created then,
 *   not on every call as with EVAL, which saves Redis about 4 µs per call of the larger scripts.
 *   Each transition is a `do … end` block with its own `KEYS`/`ARGV` locals, its own copy of
 *   the shared code, and a registered function that sets them, resets the shared files' per-call
 *   state (their `reset_<file>` functions), runs the transition's body and then the shared
 *   files' `finish_<file>` functions (lib/common.lua writes its pending event entry there).
 *
 * The header is the single source of the key order in both forms.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { KeyName } from '../core/keys.js';

const DIR = dirname(fileURLToPath(import.meta.url));

export interface LuaScript {
  readonly name: string;
  /** Named keys, in KEYS order. */
  readonly keys: readonly KeyName[];
  /** Source for EVAL. */
  readonly source: string;
  readonly sha: string;
  /** Name of this transition in the function library (FCALL), if it is in it. */
  readonly functionName?: string;
}

/**
 * Transitions in the function library: the ones run per job, where the saved fixed cost
 * counts. Keeping the others out keeps the library small (it loads in about 2 ms).
 */
export const LIBRARY_TRANSITIONS = ['add', 'claim', 'complete', 'fail', 'extendLeases', 'recover', 'moveToWait', 'progress'];

const INCLUDE = /^--!include (\S+)\s*$/gm;

/**
 * The shared Lua files and the others each one uses (functions, constants, per-call state).
 * Their functions are Lua locals, which exist only from their definition on, so a script must
 * include a file's dependencies before it (a file may include them itself, as lanes.lua does
 * groups.lua); the loader checks that order for every script it loads, and
 * test/scripts-registry.test.ts checks this table against what the files call.
 */
export const LIB_DEPENDENCIES: Readonly<Record<string, readonly string[]>> = {
  'lib/common.lua': [],
  'lib/groups.lua': ['lib/common.lua'],
  // lib/lanes.lua only includes the lanes' role files below, in this order.
  'lib/lanes.lua': [],
  'lib/lone.lua': ['lib/common.lua'],
  'lib/ring.lua': ['lib/common.lua', 'lib/groups.lua', 'lib/lone.lua'],
  'lib/wake.lua': [],
  'lib/admission.lua': ['lib/common.lua', 'lib/groups.lua', 'lib/lone.lua', 'lib/ring.lua'],
  'lib/active.lua': ['lib/common.lua', 'lib/lone.lua', 'lib/ring.lua', 'lib/admission.lua'],
  'lib/claim.lua': ['lib/common.lua', 'lib/groups.lua', 'lib/lone.lua', 'lib/ring.lua', 'lib/wake.lua', 'lib/admission.lua', 'lib/active.lua'],
  'lib/newjob.lua': ['lib/common.lua', 'lib/ring.lua', 'lib/wake.lua', 'lib/admission.lua', 'lib/active.lua'],
  'lib/dedup.lua': ['lib/common.lua', 'lib/wake.lua', 'lib/newjob.lua'],
  'lib/retention.lua': ['lib/common.lua'],
  'lib/flow.lua': ['lib/common.lua', 'lib/wake.lua', 'lib/newjob.lua'],
  'lib/removal.lua': ['lib/common.lua', 'lib/ring.lua', 'lib/active.lua', 'lib/flow.lua'],
  'lib/schedule.lua': ['lib/common.lua', 'lib/wake.lua', 'lib/newjob.lua'],
  'lib/lock.lua': [],
  'lib/metrics.lua': [],
  'lib/once.lua': [],
  'lib/runs.lua': [],
  'lib/guard.lua': ['lib/common.lua'],
  'lib/bullmq.lua': ['lib/common.lua'],
  'lib/bullmq-back.lua': ['lib/common.lua', 'lib/bullmq.lua'],
};

/** Resolves `--!include` lines; `done` lists the files whose text is in place, in order. */
function resolveIncludes(script: string, text: string, seen: Set<string>, done: string[]): string {
  return text.replace(INCLUDE, (_m, rel: string) => {
    if (seen.has(rel)) return '';
    seen.add(rel);
    const deps = LIB_DEPENDENCIES[rel];
    if (!deps) throw new Error(`script ${script}.lua includes ${rel}, which LIB_DEPENDENCIES (src/scripts/loader.ts) does not list`);
    const resolved = resolveIncludes(script, readFileSync(join(DIR, rel), 'utf8'), seen, done);
    const missing = deps.filter((d) => !done.includes(d));
    if (missing.length > 0) throw new Error(`script ${script}.lua includes ${rel} without ${missing.join(', ')} before it`);
    done.push(rel);
    return resolved;
  });
}

export function parseKeysHeader(name: string, text: string): KeyName[] {
  const m = /^-- KEYS: (.+)$/m.exec(text);
  if (!m) throw new Error(`script ${name}.lua has no "-- KEYS:" header`);
  return m[1].split(',').map((s) => s.trim()).filter(Boolean) as KeyName[];
}

/** Rewrites `K.name` to `KEYS[i]` (or `nil` when the script does not declare the key). */
function bindKeys(text: string, keys: readonly KeyName[]): string {
  const index = new Map(keys.map((k, i) => [k as string, i + 1]));
  return text.replace(/\bK\.([A-Za-z_]\w*)/g, (_m, key: string) => {
    const i = index.get(key);
    return i === undefined ? 'nil' : `KEYS[${i}]`;
  });
}

interface Parts {
  keys: KeyName[];
  /** The shared code the script includes, resolved, with keys bound. */
  libs: string;
  /** The script's own body, with keys bound. */
  body: string;
  /** reset_<file> functions defined by the included files. */
  resets: string[];
  /** finish_<file> functions defined by the included files, run after the body returns. */
  finishes: string[];
}

function readParts(name: string): Parts {
  const raw = readFileSync(join(DIR, `${name}.lua`), 'utf8');
  const keys = parseKeysHeader(name, raw);
  const includes = [...raw.matchAll(INCLUDE)].map((m) => m[0]).join('\n');
  const libs = resolveIncludes(name, includes, new Set(), []);
  const body = raw.replace(INCLUDE, '');
  const resets = [...libs.matchAll(/^local function (reset_\w+)\(\)/gm)].map((m) => m[1]);
  const finishes = [...libs.matchAll(/^local function (finish_\w+)\(\)/gm)].map((m) => m[1]);
  return { keys, libs: bindKeys(libs, keys), body: bindKeys(body, keys), resets, finishes };
}

/** Runs the body as a function, then the finish_<file> functions, and returns its reply. */
function runBody(parts: Parts, indent: string): string[] {
  if (parts.finishes.length === 0) return [`${indent}return __main()`];
  return [`${indent}local reply = __main()`, ...parts.finishes.map((f) => `${indent}${f}()`), `${indent}return reply`];
}

let libraryCache: { name: string; source: string; tag: string } | undefined;

/**
 * The function library with every transition. Function names carry a digest of the code, so
 * processes running different echomq versions against one Redis never call each other's code.
 */
export function loadLibrary(): { name: string; source: string; tag: string } {
  if (libraryCache) return libraryCache;
  const blocks = LIBRARY_TRANSITIONS.map((name) => ({ name, parts: readParts(name) }));
  const tag = createHash('sha1')
    .update(blocks.map((b) => b.parts.libs + b.parts.body).join('\n'))
    .digest('hex')
    .slice(0, 12);
  const libName = `echomq_${tag}`;
  const out = [`#!lua name=${libName}`];
  for (const { name, parts } of blocks) {
    out.push(
      `do -- ${name}`,
      'local KEYS, ARGV',
      parts.libs,
      'local function __main()',
      parts.body,
      'end',
      `redis.register_function('emq_${tag}_${name}', function(keys, args)`,
      '  KEYS, ARGV = keys, args',
      ...parts.resets.map((r) => `  ${r}()`),
      ...runBody(parts, '  '),
      'end)',
      'end',
    );
  }
  libraryCache = { name: libName, source: out.join('\n'), tag };
  return libraryCache;
}

const cache = new Map<string, LuaScript>();

export function loadScript(name: string): LuaScript {
  const hit = cache.get(name);
  if (hit) return hit;
  const parts = readParts(name);
  const keys = parts.keys;
  // The same shape as a library block: shared code, the body as a function, its finishes.
  const source = [parts.libs, 'local function __main()', parts.body, 'end', ...runBody(parts, '')].join('\n');
  const sha = createHash('sha1').update(source).digest('hex');
  const functionName = LIBRARY_TRANSITIONS.includes(name) ? `emq_${loadLibrary().tag}_${name}` : undefined;
  const script = { name, keys, source, sha, functionName };
  cache.set(name, script);
  return script;
}
