// The shared cron table (test/fixtures/cron-cases.json): the next slot of each pattern, time
// zone and start as Node computes it. python/tests/test_cron.py runs the same table against the
// Python client, so a Python worker advances a Node scheduler to the same slot. null: no slot
// (cron-parser refuses the pattern or finds none).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nextCronSlot } from '../src/index.js';

interface CronCase { pattern: string; tz: string | null; after: number; next: number | null }
const cases = JSON.parse(readFileSync(new URL('./fixtures/cron-cases.json', import.meta.url), 'utf8')) as CronCase[];

function slot(c: CronCase): number | null {
  try {
    return nextCronSlot(c.pattern, c.tz ?? undefined, c.after) ?? null;
  } catch {
    return null;
  }
}

describe('cron parity table', () => {
  it.each(cases)('$pattern in $tz after $after', (c) => {
    expect(slot(c)).toBe(c.next);
  });
});
