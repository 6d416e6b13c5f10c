// Pure unit tests of the key scheme: queue-name escaping inside the hash tag, one hash slot per
// queue, and no collisions between user strings (queue, lane, job id) and fixed keys.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  escapeQueueName,
  unescapeQueueName,
  queueKeys,
  laneKey,
  jobKey,
  logsKey,
  laneRateKey,
  queueKeyPattern,
  type QueueKeys,
} from '../src/core/keys.js';

/** The hash tag Redis Cluster hashes: the text between the first '{' and the next '}', if non-empty. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  if (close < 0 || close === open + 1) return key;
  return key.slice(open + 1, close);
}

/** Every fixed (non-derived) key of a queue. */
function fixedKeys(k: QueueKeys): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(k)) {
    if (name === 'queue' || name === 'prefix' || name === 'base' || name.endsWith('Base')) continue;
    out.push(value as string);
  }
  return out;
}

/** A minimal Redis glob matcher (*, ?, [..] and backslash escapes), to check queueKeyPattern. */
function globMatch(pattern: string, s: string): boolean {
  let re = '^';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') re += '\\' + pattern[++i];
    else if (c === '*') re += '[\\s\\S]*';
    else if (c === '?') re += '[\\s\\S]';
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(re + '$').test(s);
}

// Strings made of the characters that matter to the scheme, so collisions are likely if possible.
const tricky = fc
  .array(fc.constantFrom('%', '{', '}', ':', '7', 'B', 'D', '2', '5', 'a', '*', '?', '[', ']', '\\', 'é', ' '), { maxLength: 12 })
  .map((a) => a.join(''));
const anyName = fc.oneof(tricky, fc.string({ unit: 'binary', maxLength: 20 }));

describe('escapeQueueName', () => {
  it('escapes %, { and } and nothing else', () => {
    expect(escapeQueueName('plain:name')).toBe('plain:name');
    expect(escapeQueueName('a{b}c')).toBe('a%7Bb%7Dc');
    expect(escapeQueueName('100%')).toBe('100%25');
    expect(escapeQueueName('%7B')).toBe('%257B');
    expect(escapeQueueName('')).toBe('');
  });

  it('round-trips every string', () => {
    fc.assert(fc.property(anyName, (s) => unescapeQueueName(escapeQueueName(s)) === s), { numRuns: 2000 });
  });

  it('is injective and never leaves a brace in the tag', () => {
    fc.assert(
      fc.property(anyName, anyName, (a, b) => {
        const ea = escapeQueueName(a);
        expect(/[{}]/.test(ea)).toBe(false);
        return a === b || ea !== escapeQueueName(b);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('queueKeys', () => {
  it('builds <prefix>:{<escaped queue>}:<suffix>', () => {
    const k = queueKeys('orders');
    expect(k.base).toBe('emq:{orders}:');
    expect(k.meta).toBe('emq:{orders}:meta');
    expect(k.wake).toBe('emq:{orders}:wake');
    expect(laneKey(k, 'x')).toBe('emq:{orders}:lane:x');
    expect(jobKey(k, '7')).toBe('emq:{orders}:job:7');
    expect(logsKey(k, '7')).toBe('emq:{orders}:logs:7');
    expect(laneRateKey(k, 'x')).toBe('emq:{orders}:lrate:x');
    expect(queueKeys('orders', 'app').meta).toBe('app:{orders}:meta');
    expect(queueKeys('a{b}').meta).toBe('emq:{a%7Bb%7D}:meta');
  });

  it('puts every key of a queue, fixed or derived, in one hash slot whose tag is the escaped name', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 20 }).filter((s) => s.length > 0), anyName, anyName, (queue, lane, id) => {
        const k = queueKeys(queue);
        const tag = escapeQueueName(queue);
        const all = [...fixedKeys(k), laneKey(k, lane), jobKey(k, id), logsKey(k, id), laneRateKey(k, lane)];
        for (const key of all) expect(hashTag(key)).toBe(tag === '' ? key : tag);
      }),
      { numRuns: 1000 },
    );
  });

  it('keeps queues apart even when a name looks like another queue plus a suffix', () => {
    const a = queueKeys('a');
    const evil = queueKeys('a}:x');
    expect(evil.base.startsWith(a.base)).toBe(false);
    expect(hashTag(evil.meta)).not.toBe(hashTag(a.meta));
    fc.assert(
      fc.property(tricky.filter((s) => s !== ''), tricky.filter((s) => s !== ''), (q1, q2) => {
        if (q1 === q2) return true;
        const k1 = queueKeys(q1);
        const k2 = queueKeys(q2);
        // No key of one queue starts with the other's base, so no key can belong to both.
        return !k1.meta.startsWith(k2.base) && !k2.meta.startsWith(k1.base) && !jobKey(k1, 'x').startsWith(k2.base);
      }),
      { numRuns: 2000 },
    );
  });

  it('never lets a lane or job id collide with a fixed key or another family', () => {
    const k = queueKeys('q');
    const fixed = new Set(fixedKeys(k));
    // The classic trap: settings must not live in keys built from the lane name.
    for (const lane of ['weight', 'x:weight', 'meta', 'ring', 'lane', 'job:1', ':', '']) {
      expect(fixed.has(laneKey(k, lane))).toBe(false);
      expect(fixed.has(laneRateKey(k, lane))).toBe(false);
    }
    fc.assert(
      fc.property(anyName, anyName, (a, b) => {
        expect(fixed.has(laneKey(k, a))).toBe(false);
        expect(fixed.has(jobKey(k, a))).toBe(false);
        expect(fixed.has(logsKey(k, a))).toBe(false);
        // Different families never meet, whatever the strings.
        expect(laneKey(k, a)).not.toBe(jobKey(k, b));
        expect(jobKey(k, a)).not.toBe(logsKey(k, b));
        expect(laneKey(k, a)).not.toBe(laneRateKey(k, b));
        // Same family: equal keys only for equal strings.
        return a === b || (laneKey(k, a) !== laneKey(k, b) && jobKey(k, a) !== jobKey(k, b));
      }),
      { numRuns: 2000 },
    );
  });

  it('has distinct fixed keys', () => {
    const list = fixedKeys(queueKeys('q'));
    expect(new Set(list).size).toBe(list.length);
  });
});

describe('queueKeyPattern', () => {
  it('matches every key of its queue and none of a queue whose name is glob-like', () => {
    fc.assert(
      fc.property(tricky.filter((s) => s !== ''), tricky.filter((s) => s !== ''), anyName, (q1, q2, id) => {
        const k1 = queueKeys(q1);
        const pattern = queueKeyPattern(k1);
        expect(globMatch(pattern, k1.meta)).toBe(true);
        expect(globMatch(pattern, jobKey(k1, id))).toBe(true);
        if (q1 !== q2) {
          const k2 = queueKeys(q2);
          expect(globMatch(pattern, k2.meta)).toBe(false);
          expect(globMatch(pattern, jobKey(k2, id))).toBe(false);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
