/**
 * Calls a loaded script by SHA. A NOSCRIPT reply (Redis restarted, failed over or flushed its
 * script cache) is answered with one EVAL of the full source, which also caches it again on
 * that server, so callers never see it.
 */
import type { QueueKeys } from '../keys.js';
import type { RedisClient } from '../connection.js';
import { loadScript, type LuaScript } from './loader.js';

const keyArrays = new WeakMap<QueueKeys, Map<string, string[]>>();

function keysFor(script: LuaScript, keys: QueueKeys): string[] {
  let perQueue = keyArrays.get(keys);
  if (!perQueue) {
    perQueue = new Map();
    keyArrays.set(keys, perQueue);
  }
  let arr = perQueue.get(script.name);
  if (!arr) {
    arr = script.keys.map((k) => {
      const v = keys[k];
      if (typeof v !== 'string') throw new Error(`script ${script.name} names unknown key ${k}`);
      return v;
    });
    perQueue.set(script.name, arr);
  }
  return arr;
}

export async function runScript(
  client: RedisClient,
  script: LuaScript,
  keys: QueueKeys,
  args: ReadonlyArray<string | number>,
): Promise<unknown> {
  const k = keysFor(script, keys);
  try {
    return await client.evalsha(script.sha, k.length, ...k, ...args);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) {
      return client.eval(script.source, k.length, ...k, ...args);
    }
    throw err;
  }
}

/** What a script call needs: the client and the queue's keys. */
export interface ScriptContext {
  readonly client: RedisClient;
  readonly keys: QueueKeys;
  /** Set for shard `offset` of a sharded queue of `step` shards: how add generates ids. */
  readonly ids?: { readonly step: number; readonly offset: number };
}

/** Loads a script once and returns a caller taking a context and the script's ARGV. */
export function bindScript(name: string) {
  const script = loadScript(name);
  return (ctx: ScriptContext, args: ReadonlyArray<string | number>) => runScript(ctx.client, script, ctx.keys, args);
}
