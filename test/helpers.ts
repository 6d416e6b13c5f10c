import { inject } from 'vitest';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { request } from 'node:http';
import { queueKeys, type QueueKeys } from '../src/core/keys.js';

export const redisUrl = (): string => inject('redisUrl');

/** A queue name no other test uses. */
export const qname = (label = 'q'): string => `${label}-${randomUUID().slice(0, 8)}`;

/** A plain client for assertions; close it in afterAll. */
export const client = (): Redis => new Redis(redisUrl(), { maxRetriesPerRequest: null });

/**
 * Every key of a queue with its DUMP, for byte-for-byte comparisons. Request records
 * (`req:<rid>`, docs/protocol.md "Applied once") are left out: per-call bookkeeping that expires with the
 * window, which obliterate does not chase (it would need SCAN) and a state comparison ignores.
 */
export async function snapshot(c: Redis, keys: QueueKeys): Promise<Map<string, string>> {
  const pattern = keys.base.replace(/[*?[\]\\]/g, '\\$&') + '*';
  const out = new Map<string, string>();
  let cursor = '0';
  do {
    const [next, batch] = await c.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    for (const k of batch) if (!k.startsWith(keys.reqBase)) out.set(k, ((await c.dumpBuffer(k)) ?? Buffer.alloc(0)).toString('hex'));
  } while (cursor !== '0');
  return out;
}

export const keysOf = (name: string, prefix?: string): QueueKeys => queueKeys(name, prefix);

/** Jobs in a queue's active set: its members below +inf (the sentinel is at +inf, layout 2). */
export const activeJobs = (c: Redis, keys: QueueKeys): Promise<number> => c.zcount(keys.active, '-inf', '(+inf');

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves when cond() is true, polling every 5 ms; rejects after timeoutMs. */
export async function waitFor(cond: () => boolean | Promise<boolean>, timeoutMs = 10000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** A raw HTTP request, so tests can set Host and other headers fetch would not let through. */
export function rawHttp(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }>((resolve, reject) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Runs a Node script in a child process with only PATH (and `env`) set; its exit code and output. */
export function runNode(script: string, args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let o = '';
    let e = '';
    child.stdout.on('data', (d) => (o += d));
    child.stderr.on('data', (d) => (e += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out: o, err: e }));
  });
}
