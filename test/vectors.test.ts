// Runs every test vector (test/vectors/*.json, written by scripts/test-vectors.mjs) against the
// real server with the library artifact a client in any language loads (python/echomq/library.json):
// the exact KEYS and ARGV of each step, its reply, and every key of the queue afterwards, byte for
// byte except the placeholders (docs/protocol.md "Writing a client"). python/tests/test_vectors.py
// runs the same files from Python.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Redis } from 'ioredis';
import { client } from './helpers.js';
// @ts-expect-error plain ESM helper without types
import { readStore, redisMs, runStep, VECTOR_DIR } from '../scripts/test-vectors.mjs';

interface Step { call?: string; redis?: string[]; keys?: string[]; argv?: string[]; reply?: unknown; sleepMs?: number }
interface Vector { name: string; about: string; steps: Step[]; store: Record<string, { type: string; value: unknown }> }

const lib = JSON.parse(readFileSync(join(VECTOR_DIR, '..', '..', 'python', 'echomq', 'library.json'), 'utf8'));
const files = readdirSync(VECTOR_DIR).filter((f: string) => f.endsWith('.json')).sort();
const vectors: Vector[] = files.map((f: string) => JSON.parse(readFileSync(join(VECTOR_DIR, f), 'utf8')));

const PLACEHOLDER = /\$\{t(\d+)(?:\+(\d+))?\}/g;
const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** Whether actual matches expected: exact, or with each ${t<i>+<x>} a value in step i's window + x. */
function matchText(expected: string, actual: string, windows: Array<[number, number] | null>): boolean {
  if (!expected.includes('${t')) return expected === actual;
  const spans: Array<[number, number]> = [];
  let pattern = '';
  let last = 0;
  for (const m of expected.matchAll(PLACEHOLDER)) {
    pattern += escape(expected.slice(last, m.index)) + '(\\d+)';
    const w = windows[Number(m[1])]!;
    const x = Number(m[2] ?? 0);
    spans.push([w[0] + x, w[1] + x]);
    last = m.index! + m[0].length;
  }
  // A stream entry id's sequence number is not fixed: '-*' after the time.
  pattern += escape(expected.slice(last)).replace(/-\\\*$/, '-\\d+');
  const got = new RegExp(`^${pattern}$`).exec(actual);
  return got !== null && spans.every(([lo, hi], i) => Number(got[i + 1]) >= lo && Number(got[i + 1]) <= hi);
}

/** expected (from the vector) against actual (as ioredis gives it); a list of differences. */
function compare(expected: unknown, actual: unknown, windows: Array<[number, number] | null>, at: string, out: string[]): void {
  if (typeof expected === 'string') {
    if (typeof actual !== 'string' || !matchText(expected, actual, windows)) out.push(`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  } else if (expected && typeof expected === 'object' && !Array.isArray(expected) && 'int' in expected) {
    if (typeof actual !== 'number' || !matchText((expected as { int: string }).int, String(actual), windows)) out.push(`${at}: expected the integer ${(expected as { int: string }).int}, got ${JSON.stringify(actual)}`);
  } else if (expected && typeof expected === 'object' && !Array.isArray(expected) && 'hgetall' in expected) {
    // A job hash's field list (HGETALL order, which a hashtable-encoded hash does not fix): as a map.
    if (!Array.isArray(actual) || actual.length % 2 !== 0) {
      out.push(`${at}: expected a field list, got ${JSON.stringify(actual)}`);
      return;
    }
    const m: Record<string, unknown> = {};
    for (let i = 0; i < actual.length; i += 2) m[actual[i] as string] = actual[i + 1];
    compare((expected as { hgetall: object }).hgetall, m, windows, at, out);
  } else if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      out.push(`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
      return;
    }
    expected.forEach((e, i) => compare(e, actual[i], windows, `${at}[${i}]`, out));
  } else if (expected && typeof expected === 'object') {
    const a = (actual ?? {}) as Record<string, unknown>;
    const ek = Object.keys(expected).sort();
    const ak = Object.keys(a).sort();
    if (JSON.stringify(ek) !== JSON.stringify(ak)) out.push(`${at}: expected keys ${JSON.stringify(ek)}, got ${JSON.stringify(ak)}`);
    for (const k of ek) compare((expected as Record<string, unknown>)[k], a[k], windows, `${at}.${k}`, out);
  } else if (expected !== actual) out.push(`${at}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

const subst = (v: unknown, q: string): unknown =>
  typeof v === 'string' ? v.split('$Q').join(q) : Array.isArray(v) ? v.map((x) => subst(x, q)) : v && typeof v === 'object'
    ? Object.fromEntries(Object.entries(v).map(([k, x]) => [subst(k, q), subst(x, q)])) : v;

/** The JSON records the library writes with cjson (request records) compare as JSON: cjson's key order is unspecified. */
function storeForCompare(store: Record<string, { type: string; value: unknown }>, q: string): Record<string, { type: string; value: unknown }> {
  const out: Record<string, { type: string; value: unknown }> = {};
  for (const [k, v] of Object.entries(store)) {
    out[k] = k.startsWith(`emq:{${q}}:req:`) && typeof v.value === 'string' ? { type: v.type, value: JSON.parse(v.value) } : v;
  }
  return out;
}

let c: Redis;
beforeAll(() => {
  c = client();
});
afterAll(() => c.quit());

describe('test vectors', () => {
  it('there are vectors for every kind the protocol page lists', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(60);
    for (const n of ['add-plain', 'add-bulk', 'add-priority', 'add-lane', 'add-delay', 'add-lifo', 'add-custom-id', 'add-dedup', 'claim',
      'complete-and-claim', 'fail-retry', 'fail-exhausted', 'lease-renewal', 'stall-recovery', 'delayed-promotion', 'layout-check']) {
      expect(vectors.map((v) => v.name)).toContain(n);
    }
  });

  it.each(vectors.map((v) => [v.name, v] as const))('%s', async (_name, v) => {
    const q = `vec${randomBytes(6).toString('hex')}`;
    const windows: Array<[number, number] | null> = [];
    const diffs: string[] = [];
    for (const [i, s] of v.steps.entries()) {
      if (s.sleepMs !== undefined) {
        await new Promise((r) => setTimeout(r, s.sleepMs));
        windows.push(null);
        continue;
      }
      const step = subst(s, q) as Step;
      const before = await redisMs(c);
      const reply = await runStep(c, lib, step);
      windows.push([before, await redisMs(c)]);
      compare(subst(s.reply, q), reply, windows, `step ${i} (${s.call ?? s.redis![0]}) reply`, diffs);
    }
    const store = await readStore(c, q);
    compare(storeForCompare(subst(v.store, q) as Vector['store'], q), storeForCompare(store, q), windows, 'store', diffs);
    expect(diffs).toEqual([]);
  });
});
