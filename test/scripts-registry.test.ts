// Every transition script is registered and every registered name has a file; the shared Lua
// files' dependency table in the loader is complete and true to what the files call.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SCRIPT_NAMES } from '../src/scripts/index.js';
import { LIB_DEPENDENCIES, LIBRARY_TRANSITIONS, loadLibrary, loadScript } from '../src/scripts/loader.js';
import { Queue } from '../src/index.js';
import { client, qname, redisUrl } from './helpers.js';

const SRC = join(import.meta.dirname, '..', 'src');
const DIR = join(SRC, 'scripts');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sourceFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []);
}
const luaFiles = (dir: string) => readdirSync(join(DIR, dir)).filter((f) => f.endsWith('.lua')).sort();

/** Top-level names a Lua file defines (`local function f`, `local X =`, `local a, b =`). */
function definedNames(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^local (?:function )?([A-Za-z_][\w, ]*?)\s*(?:=|\(|$)/gm)) {
    for (const n of m[1]!.split(',')) names.add(n.trim());
  }
  return names;
}

const withoutComments = (text: string) => text.replace(/--[^\n]*/g, '');

describe('script registry', () => {
  it('registers every .lua file under src/scripts once, and every registered name has a file', () => {
    const files = luaFiles('.').map((f) => f.slice(0, -'.lua'.length));
    // A script is registered where a module binds it: bindScript('name') from scripts/runner.ts
    // (imported as `call` in the scripts modules), or bindOnceScript('name') from
    // scripts/request-id.ts for a script applied once.
    const bound: string[] = [];
    for (const f of sourceFiles(SRC)) {
      const text = readFileSync(f, 'utf8');
      if (!/from '(?:\.\.\/scripts|\.)\/(?:runner|request-id)\.js'/.test(text)) continue;
      for (const m of text.matchAll(/\b(?:bindScript|bindOnceScript|call)\('([A-Za-z]\w*)'(?:, \{[^)]*\})?\)/g)) bound.push(m[1]!);
    }
    expect(new Set(bound).size).toBe(bound.length);
    expect([...bound].sort()).toEqual(files);
    expect(new Set(SCRIPT_NAMES).size).toBe(SCRIPT_NAMES.length);
    for (const name of [...SCRIPT_NAMES, ...LIBRARY_TRANSITIONS]) expect(files).toContain(name);
  });

  it('lists every shared file in LIB_DEPENDENCIES, and only those', () => {
    expect(Object.keys(LIB_DEPENDENCIES).sort()).toEqual(luaFiles('lib').map((f) => `lib/${f}`));
    for (const deps of Object.values(LIB_DEPENDENCIES)) {
      for (const d of deps) expect(Object.keys(LIB_DEPENDENCIES)).toContain(d);
    }
  });

  it('names in LIB_DEPENDENCIES every shared file whose functions or state a shared file uses', () => {
    const libs = Object.keys(LIB_DEPENDENCIES);
    const text = new Map(libs.map((l) => [l, readFileSync(join(DIR, l), 'utf8')]));
    const defs = new Map(libs.map((l) => [l, definedNames(text.get(l)!)]));
    for (const lib of libs) {
      const code = withoutComments(text.get(lib)!);
      const own = defs.get(lib)!;
      const used = libs.filter((other) => other !== lib
        && [...defs.get(other)!].some((n) => !own.has(n) && new RegExp(`\\b${n}\\b`).test(code)));
      expect({ lib, deps: [...LIB_DEPENDENCIES[lib]!].sort() }).toEqual({ lib, deps: expect.arrayContaining(used) });
      // And no stale entry: each listed file is used.
      expect({ lib, deps: used.sort() }).toEqual({ lib, deps: expect.arrayContaining([...LIB_DEPENDENCIES[lib]!]) });
    }
  });

  it('loads every script and the function library: each includes what its shared files need, in order', () => {
    for (const name of SCRIPT_NAMES) expect(loadScript(name).source.length).toBeGreaterThan(0);
    expect(loadLibrary().source).toContain('redis.register_function');
  });
});

// The transitions run as one function library (FCALL); a library that Redis refuses at FUNCTION
// LOAD (say, top-level code that calls a standard library, which is not reachable then) would
// silently fall back to EVALSHA per script: correct, but slower on every call.
describe('function library on a real Redis', () => {
  it('FUNCTION LOAD accepts the library, and a queue calls its transitions with FCALL', async () => {
    const c = client();
    try {
      expect(await c.call('FUNCTION', 'LOAD', 'REPLACE', loadLibrary().source)).toBe(loadLibrary().name);
      const fcalls = async () => Number(/cmdstat_fcall:calls=(\d+)/.exec(await c.info('commandstats'))?.[1] ?? 0);
      const before = await fcalls();
      const q = new Queue(qname('lib'), { connection: { url: redisUrl() } });
      await q.add('j', {});
      await q.addBulk([{ name: 'j', data: {}, opts: { lane: 'a' } }, { name: 'j', data: {}, opts: { lane: 'b' } }]);
      await q.close();
      expect(await fcalls()).toBeGreaterThanOrEqual(before + 2);
    } finally {
      c.disconnect();
    }
  });
});
