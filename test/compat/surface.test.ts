// The migration table (docs/migrating-from-bullmq.md) covers BullMQ 6's whole public surface, as
// its type definitions give it, and cannot drift: every public member of Queue (with its bases),
// Worker, Job, QueueEvents, QueueEventsProducer and FlowProducer, and every runtime name bullmq's
// root exports, has a row; a row marked `same` or `differs` names something echomq really has.
import { afterAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as echomq from '../../src/index.js';
// @ts-expect-error plain ESM helper without types
import { publicMembers, rootExports } from '../../scripts/bullmq-surface.mjs';
import { redisUrl } from '../helpers.js';

const src = (f: string) => readFileSync(join(import.meta.dirname, '..', '..', 'src', f), 'utf8');
const sources: Record<string, string> = { Job: src('job/job.ts') };
const doc = readFileSync(join(import.meta.dirname, '..', '..', 'docs', 'migrating-from-bullmq.md'), 'utf8');

/** Rows `| \`Class.member\` | status … | notes |` → member → status word. */
function rows(): Map<string, string> {
  const out = new Map<string, string>();
  const section = doc.slice(doc.indexOf('## Every public member'));
  for (const line of section.split('\n')) {
    const m = /^\|\s*`([^`]+)`\s*\|\s*([^|]*)\|/.exec(line);
    if (m) out.set(m[1], m[2].trim().split(/[\s:(,]/)[0].toLowerCase());
  }
  return out;
}

const STATUSES = new Set(['same', 'differs', 'not', 'echomq']); // 'not yet …', 'not supported …'

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers) await c().catch(() => {});
});

/** One instance of each class, to look up instance fields as well as prototype members. */
function instances(): Record<string, object> {
  const connection = redisUrl();
  const queue = new echomq.Queue('surface', { connection });
  const worker = new echomq.Worker('surface', async () => {}, { connection, autorun: false });
  const events = new echomq.QueueEvents('surface', { connection, autorun: false });
  const flows = new echomq.FlowProducer({ connection });
  closers.push(() => worker.close(), () => events.close(), () => flows.close(), () => queue.close());
  const out: Record<string, object> = { Queue: queue, Worker: worker, QueueEvents: events, FlowProducer: flows };
  out.Job = echomq.Job.fromHash((queue as unknown as { ctx: never }).ctx, '1', { name: 'x', data: '{}' });
  const Producer = (echomq as Record<string, unknown>).QueueEventsProducer as (new (n: string, o: object) => { close(): Promise<void> }) | undefined;
  if (Producer) {
    const p = new Producer('surface', { connection });
    closers.push(() => p.close());
    out.QueueEventsProducer = p;
  }
  return out;
}

describe('migration table', () => {
  it('has a row for every public member of BullMQ 6 classes, with a known status, and no row for something BullMQ lacks', () => {
    const table = rows();
    const members = publicMembers() as Record<string, string[]>;
    const missing: string[] = [];
    const expected = new Set<string>();
    for (const [cls, names] of Object.entries(members)) {
      for (const n of names) {
        const key = n.startsWith('static ') ? `${cls}.${n.slice(7)}` : `${cls}.${n}`;
        expected.add(key);
        if (!table.has(key)) missing.push(key);
      }
    }
    expect(missing, 'members without a row').toEqual([]);
    for (const [key, status] of table) {
      expect(STATUSES.has(status), `${key}: status "${status}"`).toBe(true);
      if (!key.startsWith('export ') && !key.includes(' ') && key.includes('.')) {
        expect(expected.has(key), `${key} is not a BullMQ 6 member`).toBe(true);
      }
    }
  });

  it("members marked same or differs exist on echomq's classes", () => {
    const table = rows();
    const objs = instances();
    const absent: string[] = [];
    for (const [key, status] of table) {
      if (status !== 'same' && status !== 'differs') continue;
      if (key.startsWith('export ')) continue;
      const [cls, member] = key.split('.');
      if (member === 'constructor') continue;
      const target = objs[cls];
      if (!target) continue;
      const cands = [member];
      const isStatic = (members().get(key) ?? false);
      // Fields set only when they have a value are `declare`d in the class (no own property
      // until then): read the declaration from the source.
      const declared = (m: string) => new RegExp(`declare (readonly )?${m}\\??:`).test(sources[cls] ?? '');
      const has = isStatic ? member in ((echomq as Record<string, unknown>)[cls] as object) : cands.some((m) => m in target || declared(m));
      if (!has) absent.push(key);
    }
    expect(absent, 'rows that say same/differs for a member echomq lacks').toEqual([]);
  });

  it('has a row for every runtime name exported by bullmq, and echomq exports those marked same or differs', async () => {
    const table = rows();
    const names = (await rootExports()) as string[];
    const missing = names.filter((n) => n !== '__esModule' && !table.has(`export ${n}`));
    expect(missing, 'root exports without a row').toEqual([]);
    const lacking = names.filter((n) => ['same', 'differs'].includes(table.get(`export ${n}`) ?? '') && !(n in echomq));
    expect(lacking, 'exports marked same/differs that echomq lacks').toEqual([]);
  });
});

/** Which table keys are static members (Job.create …). */
function members(): Map<string, boolean> {
  const out = new Map<string, boolean>();
  for (const [cls, names] of Object.entries(publicMembers() as Record<string, string[]>)) {
    for (const n of names) out.set(n.startsWith('static ') ? `${cls}.${n.slice(7)}` : `${cls}.${n}`, n.startsWith('static '));
  }
  return out;
}
