/**
 * What the move from BullMQ checks before it writes anything: a key layout that cannot collide,
 * one hash slot per queue on a Cluster, and no BullMQ worker connected to a queue it moves
 * (CLIENT LIST, by BullMQ's connection names; echomq's workers carry a mark BullMQ's lack).
 */
import { isClusterClient, masterNodes, type RedisClient } from '../core/connection.js';
import { EchoError, ErrorCodes } from '../core/errors.js';
import { clientName, queueKeys, WORKER_LIB_TAG } from '../core/keys.js';
import { bullBase } from './scripts.js';

/** The move was refused before anything was written; `reasons` says why, one line each. */
export class MigrationRefusedError extends EchoError {
  readonly reasons: readonly string[];
  constructor(reasons: readonly string[], command = 'migrate-from-bullmq') {
    super(ErrorCodes.MIGRATION_REFUSED, `${command} refused: ${reasons.join('; ')}`);
    this.reasons = reasons;
  }
}

// Suffixes only one of the two layouts writes, to see which one owns keys under a base.
const BULL_ONLY = ['id', 'wait', 'paused', 'prioritized', 'waiting-children', 'pc', 'marker', 'stalled-check', 'repeat'];
const ECHOMQ_ONLY = ['ring', 'inring', 'lanes', 'scheds', 'wchildren', 'lcfg', 'dedup'];

/**
 * Refusals of the key layout. One base a prefix of the other could name one key twice. And
 * under one prefix the two layouts' names meet: echomq's queue `q` is `<p>:{q}:…`, which is
 * BullMQ's queue `{q}` (`<p>:{q}:meta`, `…:active` as a list beside echomq's sorted set);
 * such a target is refused when the other layout holds keys there.
 */
export async function layoutRefusals(client: RedisClient, queues: readonly string[], prefix: string, bullPrefix: string): Promise<string[]> {
  const out: string[] = [];
  const holds = async (base: string, suffixes: string[]) => (await client.exists(...suffixes.map((x) => base + x))) > 0;
  for (const q of queues) {
    const ours = queueKeys(q, prefix).base;
    const theirs = bullBase(bullPrefix, q);
    if (ours.startsWith(theirs) || theirs.startsWith(ours)) {
      out.push(`queue ${q}: BullMQ's keys (${theirs}…) and echomq's (${ours}…) share a key prefix, so their keys could collide; use another --prefix`);
    } else if (ours.startsWith(`${bullPrefix}:`) && (await holds(ours, BULL_ONLY))) {
      out.push(`queue ${q}: echomq's keys ${ours}… are the keys of BullMQ's queue ${ours.slice(bullPrefix.length + 1, -1)}, which holds data; use another --prefix`);
    } else if (theirs.startsWith(`${prefix}:`) && (await holds(theirs, ECHOMQ_ONLY))) {
      out.push(`queue ${q}: BullMQ's keys ${theirs}… are the keys of an echomq queue under --prefix ${prefix}; use another --prefix`);
    }
  }
  return out;
}

/**
 * BullMQ Pro keeps a group's waiting jobs in keys of its own (`groups…`), whose layout is not
 * public: such a queue is refused whole rather than half moved. One bounded SCAN pass per queue
 * (the first key found ends it).
 */
export async function proRefusals(client: RedisClient, queues: readonly string[], bullPrefix: string): Promise<string[]> {
  const out: string[] = [];
  for (const q of queues) {
    let first: string | undefined;
    await scanKeys(client, `${globEscape(bullBase(bullPrefix, q))}groups*`, (keys) => {
      first = keys[0];
      return first === undefined;
    });
    if (first !== undefined) out.push(`queue ${q}: BullMQ Pro group data (${first}); Pro's group storage is not public, so the queue is not moved`);
  }
  return out;
}

/** A key with SCAN's glob characters escaped. */
export const globEscape = (s: string): string => s.replace(/[*?[\]\\]/g, '\\$&');

/**
 * SCANs the keys matching `pattern` (on every master of a Cluster), 1,000 a step, handing each
 * step's keys to `each`, which returns false to stop.
 */
export async function scanKeys(client: RedisClient, pattern: string, each: (keys: string[]) => boolean | Promise<boolean>): Promise<void> {
  const nodes = isClusterClient(client) ? await masterNodes(client) : [client];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (found.length > 0 && !(await each(found))) return;
    } while (cursor !== '0');
  }
}

/** On a Cluster, each queue's two bases must hash to one slot (one atomic call per batch). */
export async function slotRefusals(client: RedisClient, queues: readonly string[], prefix: string, bullPrefix: string): Promise<string[]> {
  if (!isClusterClient(client)) return [];
  const out: string[] = [];
  for (const q of queues) {
    const a = queueKeys(q, prefix).meta;
    const b = `${bullBase(bullPrefix, q)}meta`;
    const [sa, sb] = await Promise.all([client.cluster('KEYSLOT', a), client.cluster('KEYSLOT', b)]) as [number, number];
    if (Number(sa) !== Number(sb)) {
      out.push(`queue ${q}: on a Redis Cluster the move needs BullMQ's and echomq's keys in one hash slot (give both prefixes one hash tag, e.g. --bullmq-prefix '{app}' --prefix '{app}:emq'); ${b} is in slot ${sb}, ${a} in slot ${sa}`);
    }
  }
  return out;
}

/** One CLIENT LIST entry: its fields by name. */
function parseClients(text: string): Array<Record<string, string>> {
  return text.split('\n').filter((l) => l.trim() !== '').map((line) => {
    const f: Record<string, string> = {};
    for (const part of line.trim().split(' ')) {
      const i = part.indexOf('=');
      if (i > 0) f[part.slice(0, i)] = part.slice(i + 1);
    }
    return f;
  });
}

export interface WorkerCheck {
  /** Connections named as BullMQ names a worker of a moved queue, without echomq's mark. */
  bullmq: string[];
  /** Connections that may be either (the server shows no library name: Redis < 7.2). */
  unknown: string[];
  /** echomq's marked worker connections seen. */
  echomq: number;
  /** Why CLIENT LIST could not be read, when it could not. */
  unreadable?: string;
}

/**
 * Worker connections of the moved queues on the BullMQ prefix (BullMQ's names:
 * `<prefix>:<base64 queue>` or `…:w:<worker name>`). echomq names its workers the same way and
 * marks them with the library name `ioredis(echomq)`; a server before Redis 7.2 shows no
 * library name, so under one prefix such a connection cannot be told apart.
 */
export async function workerCheck(client: RedisClient, queues: readonly string[], prefix: string, bullPrefix: string): Promise<WorkerCheck> {
  const names = queues.map((q) => clientName(queueKeys(q, bullPrefix)));
  const res: WorkerCheck = { bullmq: [], unknown: [], echomq: 0 };
  let texts: string[];
  try {
    const nodes = isClusterClient(client) ? await masterNodes(client) : [client];
    texts = await Promise.all(nodes.map((n) => n.client('LIST') as Promise<string>));
  } catch (err) {
    res.unreadable = (err as Error).message;
    return res;
  }
  for (const c of texts.flatMap(parseClients)) {
    const name = c.name ?? '';
    if (!names.some((n) => name === n || name.startsWith(`${n}:w:`))) continue;
    const lib = c['lib-name'];
    if (lib !== undefined && lib.includes(WORKER_LIB_TAG)) res.echomq++;
    else if ((lib !== undefined && lib !== '') || prefix !== bullPrefix) res.bullmq.push(`${name} (${c.addr ?? '?'})`);
    else res.unknown.push(`${name} (${c.addr ?? '?'})`);
  }
  return res;
}

/** The refusals of a worker check (none with force, which the caller reports instead). */
export function workerRefusals(w: WorkerCheck): string[] {
  const out: string[] = [];
  if (w.unreadable !== undefined) out.push(`cannot read CLIENT LIST to see whether BullMQ workers run (${w.unreadable}); stop them and pass --force`);
  if (w.bullmq.length > 0) out.push(`BullMQ workers are connected to the queues: ${w.bullmq.join(', ')}; stop them first`);
  if (w.unknown.length > 0) {
    out.push(`worker connections ${w.unknown.join(', ')} may be BullMQ's or echomq's (this server shows no client library name, Redis < 7.2, and both use the prefix); stop BullMQ's workers and pass --force`);
  }
  return out;
}
