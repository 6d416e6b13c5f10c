// The Node side of the two-runtime interop (python/tests/test_interop.py has the rest): a Node
// producer and a Python worker process on one queue; Node reads what Python wrote. Needs
// python/.venv (bash scripts/python-test.sh --setup-only); CI sets ECHOMQ_REQUIRE_PYTHON=1 so a
// missing environment fails here instead of skipping.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Job, Queue, QueueEvents } from '../src/index.js';
import { qname, redisUrl } from './helpers.js';

const PY = fileURLToPath(new URL('../python/.venv/bin/python', import.meta.url));
const WORKER = fileURLToPath(new URL('../python/tests/py_worker.py', import.meta.url));
const haveVenv = existsSync(PY);
if (!haveVenv && process.env.ECHOMQ_REQUIRE_PYTHON === '1') {
  throw new Error(`python/.venv is missing (${PY}): run bash scripts/python-test.sh --setup-only`);
}

function runPython(queue: string, count: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const p = spawn(PY, [WORKER, redisUrl(), queue, String(count)], { stdio: ['ignore', 'pipe', 'inherit'] });
    p.on('error', reject);
    p.on('exit', (code) => resolve(code ?? -1));
  });
}

describe.skipIf(!haveVenv)('a Node producer and a Python worker', () => {
  it('Python runs the jobs Node added; Node reads the return values and failures', async () => {
    const name = qname('pyint');
    const q = new Queue(name, { connection: redisUrl() });
    const ev = new QueueEvents(name, { connection: redisUrl(), lastEventId: '0' });
    const completed = new Map<string, unknown>();
    ev.on('completed', ({ jobId, returnvalue }) => completed.set(jobId, returnvalue));
    const data = [{ n: 1, s: 'héllo 😀' }, { n: 2.5, big: 1e21, list: [null, true] }, { n: 3, nested: { a: [1, 2] } }];
    const jobs = await q.addBulk(data.map((d) => ({ name: 'node-made', data: d, opts: { lane: 'l1', attempts: 2 } })));
    const failing = await q.add('node-made', { fail: 'no good: ü' }, { attempts: 1 });
    expect(await runPython(name, 4)).toBe(0);
    for (const [i, job] of jobs.entries()) {
      const got = await Job.fromId(q, job.id!);
      expect(await got!.getState()).toBe('completed');
      expect(got!.returnvalue).toEqual({ by: 'python', n: data[i]!.n, echo: data[i] });
      expect(got!.opts).toEqual({ attempts: 2, lane: 'l1' });
    }
    const f = await Job.fromId(q, failing.id!);
    expect(f!.failedReason).toBe('no good: ü');
    expect(f!.stacktrace[0]).toContain('RuntimeError: no good: ü');
    for (let i = 0; i < 50 && completed.size < 3; i++) await new Promise((r) => setTimeout(r, 50));
    expect(completed.get(jobs[0]!.id!)).toEqual({ by: 'python', n: 1, echo: data[0] });
    await ev.close();
    await q.close();
  });
});
