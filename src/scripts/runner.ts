/**
 * Calls a transition. Two ways, chosen per client:
 *
 * - FCALL of the transition in echomq's function library (Redis 7+, Valkey; the default on a
 *   single server). "Function not found" (a new, restarted or flushed server) is answered by
 *   loading the library once (FUNCTION LOAD REPLACE) and calling again.
 * - EVALSHA of the transition's script (Redis Cluster, where a library would have to be loaded
 *   on every master; servers without functions; users whose ACL does not allow FUNCTION LOAD).
 *   NOSCRIPT (restart, failover, SCRIPT FLUSH) is answered with one EVAL of the full source.
 *
 * A client moves from FCALL to EVALSHA for good when the library cannot be loaded. Callers see
 * neither reply.
 */
import type { ChainableCommander } from 'ioredis';
import type { QueueKeys } from '../core/keys.js';
import { isClusterClient, type RedisClient } from '../core/connection.js';
import { IncompatibleLayoutError } from '../core/errors.js';
import { MetaField } from '../core/fields.js';
import { LAYOUT_VERSION } from '../core/layout.js';
import { loadLibrary, loadScript, type LuaScript } from './loader.js';
import { sendFlat, sendsFlat } from './send-flat.js';

export type ScriptMode = 'function' | 'eval';

const modes = new WeakMap<object, ScriptMode>();
const loading = new WeakMap<object, Promise<boolean>>();

/** How a client calls transitions (see the header); ECHOMQ_SCRIPTS=eval forces scripts. */
export function scriptMode(client: RedisClient): ScriptMode {
  let m = modes.get(client);
  if (!m) {
    m = isClusterClient(client) || process.env.ECHOMQ_SCRIPTS === 'eval' ? 'eval' : 'function';
    modes.set(client, m);
  }
  return m;
}

/** Loads the library on this client's server once; false (and eval mode) when it cannot. */
function loadLibraryOn(client: RedisClient): Promise<boolean> {
  let p = loading.get(client);
  if (!p) {
    p = (client.call('FUNCTION', 'LOAD', 'REPLACE', loadLibrary().source) as Promise<unknown>).then(
      () => true,
      () => {
        modes.set(client, 'eval');
        return false;
      },
    ).finally(() => loading.delete(client));
    loading.set(client, p);
  }
  return p;
}

// Not loaded, not supported (Redis < 7), or not allowed (an ACL without FCALL / FUNCTION LOAD).
const notFound = (err: unknown) => err instanceof Error && /Function not found|unknown command|NOPERM/i.test(err.message);

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

/*
 * The stored layout check (docs/protocol.md, "Versions"): before a client's first write to a
 * queue, one read-only `HGET meta lv`. A stored value other than LAYOUT_VERSION refuses every
 * write to that queue on that client with IncompatibleLayoutError; no value means a new queue
 * (or one stored before the field existed) and the write goes ahead. The check writes nothing:
 * the version is stamped (`HSETNX meta lv`) by the writes that create a queue's content, in
 * the same atomic call and only when it succeeds: the scripts (lib/common.lua stampLayout) and
 * the plain settings writes (execStamped below, in their MULTI). Kept per client and meta key,
 * so a queue pays one round trip per connection, never per job.
 */
const layoutChecks = new WeakMap<object, Map<string, true | Promise<void>>>();

async function checkLayout(client: RedisClient, keys: QueueKeys, perClient: Map<string, true | Promise<void>>): Promise<void> {
  let stored: string | null;
  try {
    stored = await client.hget(keys.meta, MetaField.layoutVersion);
  } catch (err) {
    perClient.delete(keys.meta); // a connection error is not an answer: ask again next time
    throw err;
  }
  if (stored !== null && stored !== String(LAYOUT_VERSION)) throw new IncompatibleLayoutError(keys.queue, stored, LAYOUT_VERSION);
  perClient.set(keys.meta, true);
}

/**
 * Runs the MULTI of a plain write that may create the queue's meta hash (settings in meta, the
 * rate key) with the layout stamp `HSETNX meta lv <LAYOUT_VERSION>` appended, so the stamp is
 * applied with the write. Replies the first command's reply; throws the first command error.
 */
export async function execStamped(multi: ChainableCommander, keys: QueueKeys): Promise<unknown> {
  const r = await multi.hsetnx(keys.meta, MetaField.layoutVersion, LAYOUT_VERSION).exec();
  if (!r) throw new Error('transaction aborted');
  for (const [err] of r) if (err) throw err;
  return r[0]?.[1];
}

/** Resolves once the queue's stored layout is known to be LAYOUT_VERSION on this client; rejects with IncompatibleLayoutError otherwise. */
export function ensureLayout(client: RedisClient, keys: QueueKeys): true | Promise<void> {
  let perClient = layoutChecks.get(client);
  if (!perClient) {
    perClient = new Map();
    layoutChecks.set(client, perClient);
  }
  let state = perClient.get(keys.meta);
  if (state === undefined) {
    state = checkLayout(client, keys, perClient);
    perClient.set(keys.meta, state);
  }
  return state;
}

/** ensureLayout for the plain writes outside scripts (settings in meta, the rate key, the events stream); those that can create meta run through execStamped. */
export async function layoutReady(client: RedisClient, keys: QueueKeys): Promise<void> {
  const state = ensureLayout(client, keys);
  if (state !== true) await state;
}

/** Forgets the check of a queue whose meta hash was deleted (obliterate): the next write checks again. */
export function forgetLayout(client: RedisClient, keys: QueueKeys): void {
  layoutChecks.get(client)?.delete(keys.meta);
}

export async function runScript(
  client: RedisClient,
  script: LuaScript,
  keys: QueueKeys,
  args: ReadonlyArray<string | number>,
  layoutCheck = true,
): Promise<unknown> {
  if (layoutCheck) {
    const layout = ensureLayout(client, keys);
    if (layout !== true) await layout;
  }
  const k = keysFor(script, keys);
  const flat = sendsFlat(client);
  // `<cmd> <first> numkeys ...keys ...args`, flat when the client can take it (send-flat.ts).
  const send = (cmd: string, first: string) => (flat ? sendFlat(client, cmd, first, k, args) : client.call(cmd, first, k.length, ...k, ...args));
  if (script.functionName && scriptMode(client) === 'function') {
    try {
      return await send('FCALL', script.functionName);
    } catch (err) {
      if (!notFound(err)) throw err;
      if (await loadLibraryOn(client)) return send('FCALL', script.functionName);
    }
  }
  try {
    return await send('evalsha', script.sha);
  } catch (err) {
    if (err instanceof Error && err.message.startsWith('NOSCRIPT')) return send('eval', script.source);
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

/** The generated id of id-counter value c (add.lua's idOf): shard `offset` of `step` makes offset+1, offset+1+step, … */
export function generatedId(c: number, ids: ScriptContext['ids']): string {
  return String((c - 1) * (ids?.step ?? 1) + (ids?.offset ?? 0) + 1);
}

/**
 * Loads a script once and returns a caller taking a context and the script's ARGV. Every call
 * makes the stored layout check first, but with `layoutCheck: false` (upgradeLayout, which is
 * meant for a queue of an older layout and checks the version itself, atomically).
 */
export function bindScript(name: string, opts: { layoutCheck?: boolean } = {}) {
  const script = loadScript(name);
  const check = opts.layoutCheck ?? true;
  return (ctx: ScriptContext, args: ReadonlyArray<string | number>) => runScript(ctx.client, script, ctx.keys, args, check);
}
