/**
 * Sends a script call with its arguments already flat and already strings. ioredis's Command
 * copies the arguments it is given with Array.prototype.flat, which V8 runs at ~0.1 µs per
 * element, and a script call has up to ~125 (an add of 20 jobs). A Command made with no
 * arguments and then handed the flat string array writes the same bytes and settles the same.
 */
import { Cluster, Command, Redis } from 'ioredis';
import type { RedisClient } from '../core/connection.js';

/**
 * Only for clients of this package's ioredis (another copy's Command may differ) without a key
 * prefix or auto-pipelining, which call() handles; any other client keeps call(). Checked on
 * every call, as ioredis reads its options on every call.
 */
export function sendsFlat(client: RedisClient): boolean {
  const o = client.options as { keyPrefix?: string; enableAutoPipelining?: boolean };
  return (client instanceof Redis || client instanceof Cluster) && !o.keyPrefix && !o.enableAutoPipelining;
}

/** `name first numkeys ...keys ...args` as call() would send it (numbers as strings, null and undefined as ''). */
export function sendFlat(
  client: RedisClient, name: string, first: string, keys: readonly string[], args: ReadonlyArray<string | number>,
): Promise<unknown> {
  const argv: string[] = new Array(2 + keys.length + args.length);
  argv[0] = first;
  argv[1] = String(keys.length);
  let i = 2;
  for (const k of keys) argv[i++] = k;
  for (const a of args) argv[i++] = typeof a === 'string' ? a : a == null ? '' : String(a);
  const cmd = new Command(name, [], {
    replyEncoding: 'utf8',
    errorStack: client.options.showFriendlyErrorStack ? new Error() : undefined,
  });
  cmd.args = argv;
  return client.sendCommand(cmd) as Promise<unknown>;
}
