/**
 * The connections that serve a queue, read from CLIENT LIST (BullMQ's getWorkers and
 * getQueueEvents). A worker names its connection `clientName(keys)` or
 * `clientName(keys, ':w:' + name)`, a QueueEvents `clientName(keys, ':qe')` (src/core/keys.ts, BullMQ's
 * scheme), so BullMQ tools that read CLIENT LIST see echomq's workers too. Read-only.
 */
import type { RedisClient } from '../core/connection.js';
import { clientCommandMessageReg } from '../core/utils.js';

/** One CLIENT LIST entry: every `key=value` field, `name` replaced by the queue name, `rawname` the connection's name. */
export type ClientInfo = Record<string, string>;

/** Parses CLIENT LIST text, keeping the entries whose name `match` accepts. */
export function parseClientList(list: string, queueName: string, match: (name: string) => boolean): ClientInfo[] {
  const out: ClientInfo[] = [];
  for (const line of list.split(/\r?\n/)) {
    if (line === '') continue;
    const info: ClientInfo = {};
    for (const pair of line.split(' ')) {
      const eq = pair.indexOf('=');
      if (eq < 0) continue;
      info[pair.slice(0, eq)] = pair.slice(eq + 1);
    }
    const name = info.name;
    if (name && match(name)) {
      info.name = queueName;
      info.rawname = name;
      out.push(info);
    }
  }
  return out;
}

/**
 * Matching clients of the server (in a Cluster: of the node that has the most, since a client
 * connects to the nodes it talks to). A server without CLIENT gives BullMQ's one placeholder
 * entry `{ name: 'GCP does not support client list' }`.
 */
export async function clientsNamed(client: RedisClient, queueName: string, match: (name: string) => boolean): Promise<ClientInfo[]> {
  try {
    const nodes = 'nodes' in client && typeof client.nodes === 'function' ? client.nodes('all') : [client];
    const lists = await Promise.all(nodes.map((n) => n.client('LIST') as Promise<string>));
    return lists
      .map((l) => parseClientList(l, queueName, match))
      .reduce((best, cur) => (cur.length > best.length ? cur : best), [] as ClientInfo[]);
  } catch (err) {
    if (err instanceof Error && clientCommandMessageReg.test(err.message)) return [{ name: 'GCP does not support client list' }];
    throw err;
  }
}
