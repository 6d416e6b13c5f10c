// Pure unit tests of retry backoff: the delay formulas, jitter, custom strategies and the
// validation of the `backoff` option. No Redis, no clock.
import { describe, expect, it } from 'vitest';
import { backoffDelay, normalizeBackoff, type BackoffStrategy } from '../src/core/backoff.js';
import { ValidationError } from '../src/core/errors.js';

const err = new Error('boom');

describe('backoffDelay', () => {
  it('is 0 without a backoff', () => {
    expect(backoffDelay(undefined, 1, err, {})).toBe(0);
    expect(backoffDelay(undefined, 7, err, {})).toBe(0);
  });

  it('fixed: the same delay every time, 0 when none is given', () => {
    for (const made of [1, 2, 5, 30]) expect(backoffDelay({ type: 'fixed', delay: 250 }, made, err, {})).toBe(250);
    expect(backoffDelay({ type: 'fixed' }, 3, err, {})).toBe(0);
  });

  it('exponential: delay × 2^(attemptsMade − 1), base 1000 by default', () => {
    const b = { type: 'exponential', delay: 100 };
    expect([1, 2, 3, 4, 5].map((m) => backoffDelay(b, m, err, {}))).toEqual([100, 200, 400, 800, 1600]);
    expect([1, 2, 3].map((m) => backoffDelay({ type: 'exponential' }, m, err, {}))).toEqual([1000, 2000, 4000]);
  });

  it('jitter takes off up to its share of the delay, never more, never below 0', () => {
    const b = { type: 'fixed', delay: 1000, jitter: 0.5 };
    expect(backoffDelay(b, 1, err, {}, {}, undefined, () => 0)).toBe(1000);
    expect(backoffDelay(b, 1, err, {}, {}, undefined, () => 0.5)).toBe(750);
    expect(backoffDelay(b, 1, err, {}, {}, undefined, () => 0.999999)).toBe(500);
    const full = { type: 'exponential', delay: 100, jitter: 1 };
    expect(backoffDelay(full, 3, err, {}, {}, undefined, () => 0.999999)).toBe(0);
    for (let i = 0; i < 200; i++) {
      const d = backoffDelay(b, 1, err, {})!;
      expect(d).toBeGreaterThanOrEqual(500);
      expect(d).toBeLessThanOrEqual(1000);
    }
  });

  it('rounds to whole milliseconds', () => {
    const d = backoffDelay({ type: 'fixed', delay: 3, jitter: 0.5 }, 1, err, {}, {}, undefined, () => 0.3);
    expect(Number.isInteger(d)).toBe(true);
    expect(d).toBe(3); // 3 × (1 − 0.15) = 2.55 → 3
  });

  it('custom strategies by name receive (attemptsMade, type, err, job)', () => {
    const calls: unknown[][] = [];
    const linear: BackoffStrategy = (made, type, e, job) => {
      calls.push([made, type, e, job]);
      return made * 10;
    };
    const job = { id: 'j' };
    expect(backoffDelay({ type: 'linear' }, 3, err, job, { linear })).toBe(30);
    expect(calls).toEqual([[3, 'linear', err, job]]);
  });

  it('a named strategy wins over the fallback; the fallback serves unknown names', () => {
    const named: BackoffStrategy = () => 1;
    const fallback: BackoffStrategy = () => 2;
    expect(backoffDelay({ type: 'named' }, 1, err, {}, { named }, fallback)).toBe(1);
    expect(backoffDelay({ type: 'other' }, 1, err, {}, { named }, fallback)).toBe(2);
  });

  it('an unknown strategy or a non-finite result gives undefined (the job is not retried)', () => {
    expect(backoffDelay({ type: 'nope' }, 1, err, {})).toBeUndefined();
    expect(backoffDelay({ type: 'nan' }, 1, err, {}, { nan: () => NaN })).toBeUndefined();
    expect(backoffDelay({ type: 'inf' }, 1, err, {}, { inf: () => Infinity })).toBeUndefined();
    expect(backoffDelay({ type: 'str' }, 1, err, {}, { str: (() => '5') as unknown as BackoffStrategy })).toBeUndefined();
  });

  it('a negative custom delay is clamped to 0', () => {
    expect(backoffDelay({ type: 'neg' }, 1, err, {}, { neg: () => -50 })).toBe(0);
  });

  it('refuses attemptsMade below 1', () => {
    expect(() => backoffDelay({ type: 'fixed', delay: 1 }, 0, err, {})).toThrow(ValidationError);
    expect(() => backoffDelay({ type: 'fixed', delay: 1 }, 1.5, err, {})).toThrow(ValidationError);
  });
});

describe('normalizeBackoff', () => {
  it('accepts a number (fixed delay), an object, or nothing', () => {
    expect(normalizeBackoff(undefined)).toBeUndefined();
    expect(normalizeBackoff(500)).toEqual({ type: 'fixed', delay: 500 });
    expect(normalizeBackoff({ type: 'exponential', delay: 100, jitter: 0.2 })).toEqual({ type: 'exponential', delay: 100, jitter: 0.2 });
    expect(normalizeBackoff({ type: 'custom' })).toEqual({ type: 'custom' });
  });

  const bad: Array<[string, unknown, string, string]> = [
    ['negative number', -1, 'backoff', '-1'],
    ['fractional number', 1.5, 'backoff', '1.5'],
    ['NaN', NaN, 'backoff', 'NaN'],
    ['a string', 'exponential', 'backoff', '"exponential"'],
    ['null', null, 'backoff', 'null'],
    ['missing type', { delay: 5 }, 'backoff.type', 'undefined'],
    ['empty type', { type: '' }, 'backoff.type', '""'],
    ['numeric type', { type: 3 }, 'backoff.type', '3'],
    ['negative delay', { type: 'fixed', delay: -5 }, 'backoff.delay', '-5'],
    ['string delay', { type: 'fixed', delay: '5' }, 'backoff.delay', '"5"'],
    ['jitter above 1', { type: 'fixed', delay: 5, jitter: 1.5 }, 'backoff.jitter', '1.5'],
    ['negative jitter', { type: 'fixed', delay: 5, jitter: -0.1 }, 'backoff.jitter', '-0.1'],
    ['NaN jitter', { type: 'fixed', delay: 5, jitter: NaN }, 'backoff.jitter', 'NaN'],
  ];
  it.each(bad)('refuses %s', (_label, value, field, got) => {
    let caught: unknown;
    try {
      normalizeBackoff(value);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(ValidationError);
    const e = caught as ValidationError;
    expect(e.field).toBe(field);
    expect(e.got).toBe(got);
    expect(e.message).toBe(`${field} must be ${e.expected}, got ${got}`);
  });
});
