// Calls a Lua transition from a raw ioredis client, with the exact KEYS and ARGV a client of
// any language sends (docs/protocol.md "Library"): FCALL for the library's transitions (loading
// the library when missing), EVAL of the script's source for the others. No echomq binding.
import type { Redis } from 'ioredis';
import { loadLibrary, loadScript } from '../src/scripts/loader.js';
import type { QueueKeys } from '../src/core/keys.js';

/** The KEYS of script `name` for a queue: its header's names, in order. */
export const keysFor = (name: string, keys: QueueKeys): string[] => loadScript(name).keys.map((k) => keys[k] as string);

/** One call; the reply as ioredis gives it (strings, integers, arrays), or the error reply as an Error. */
export async function rawCall(c: Redis, name: string, keys: QueueKeys, argv: ReadonlyArray<string | number>): Promise<unknown> {
  const s = loadScript(name);
  const k = keysFor(name, keys);
  const args = argv.map(String);
  try {
    if (s.functionName) {
      try {
        return await c.call('FCALL', s.functionName, k.length, ...k, ...args);
      } catch (e) {
        if (!String((e as Error).message).includes('Function not found')) throw e;
        await c.call('FUNCTION', 'LOAD', 'REPLACE', loadLibrary().source);
        return await c.call('FCALL', s.functionName, k.length, ...k, ...args);
      }
    }
    return await c.call('EVAL', s.source, k.length, ...k, ...args);
  } catch (e) {
    return e as Error;
  }
}
