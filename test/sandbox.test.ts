/**
 * Sandboxed processors: the forms of the processor argument and the options (checked at
 * construction), crashes and kills, the pool's size and leaks, stdio pass-through, memory
 * exhaustion, flows, and closing. The per-mode acceptance scenarios are in sandbox-suite.ts.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { FlowProducer, Job, ProcessorFileError, Queue, ValidationError, Worker, type WorkerOptions } from '../src/index.js';
import { qname, redisUrl, sleep, waitFor } from './helpers.js';
import { FIXTURE } from './sandbox-suite.js';

const fixture = (f: string) => new URL(`./fixtures/sandbox/${f}`, import.meta.url);
const MODES = ['processes', 'threads'] as const;

const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const f of closers.splice(0).reverse()) await f();
});
const queue = (name: string) => {
  const q = new Queue(name, { connection: redisUrl() });
  closers.push(() => q.close());
  return q;
};
const worker = (name: string, file: string | URL = FIXTURE, opts: WorkerOptions = {}) => {
  const w = new Worker(name, file, { connection: redisUrl(), ...opts });
  w.on('error', () => {});
  closers.push(() => w.close());
  return w;
};
const finished = (q: Queue, id: string, ms = 15_000) =>
  waitFor(async () => ['completed', 'failed'].includes(await (await q.getJob(id))!.getState()), ms, `job ${id} finished`);
const reload = async (q: Queue, id: string) => (await q.getJob(id))!;
/** The sandbox's live children (internal, for these tests). */
const liveChildren = (w: Worker) => (w as unknown as { sandbox: { size: number } }).sandbox.size;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('processor file forms', () => {
  it('takes an absolute path, a relative path without extension, a file: URL string, a URL, .cjs and .mjs', async () => {
    const name = qname('sbforms');
    const q = queue(name);
    const forms: Array<[string, string | URL]> = [
      ['absolute', resolve('test/fixtures/sandbox/plain.js')],
      ['relative, no extension', 'test/fixtures/sandbox/plain'],
      ['file: URL string', pathToFileURL(resolve('test/fixtures/sandbox/plain.js')).href],
      ['URL object', fixture('plain.js')],
      ['CommonJS module.exports', fixture('commonjs.cjs')],
    ];
    const got: Record<string, unknown> = {};
    for (const [label, file] of forms) {
      const w = worker(name, file);
      const job = await q.add('x', { label });
      await finished(q, job.id);
      got[label] = (await reload(q, job.id)).returnvalue;
      await w.close();
    }
    expect(got).toEqual({
      absolute: { kind: 'js', data: { label: 'absolute' } },
      'relative, no extension': { kind: 'js', data: { label: 'relative, no extension' } },
      'file: URL string': { kind: 'js', data: { label: 'file: URL string' } },
      'URL object': { kind: 'js', data: { label: 'URL object' } },
      'CommonJS module.exports': { kind: 'cjs', data: { label: 'CommonJS module.exports' } },
    });
  });

  it('runs a TypeScript processor when the children get a loader through execArgv', async () => {
    const name = qname('sbts');
    const q = queue(name);
    const loader = new URL('./fixtures/register-ts.mjs', import.meta.url).href;
    const w = worker(name, fixture('typed.ts'), { workerForkOptions: { execArgv: ['--import', loader] } });
    const job = await q.add('x', { n: 21 });
    await finished(q, job.id);
    expect((await reload(q, job.id)).returnvalue).toBe(42);
    await w.close();
  });

  it("a file that does not exist throws at construction with BullMQ's text", () => {
    const missing = resolve('test/fixtures/sandbox/nope');
    let err: unknown;
    try {
      new Worker(qname('sbmissing'), missing, { connection: redisUrl(), autorun: false });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ProcessorFileError);
    expect((err as Error).message).toBe(`File ${missing}.js does not exist`);
    const rel = 'test/fixtures/sandbox/nope.mjs';
    expect(() => new Worker(qname('sbmissing'), rel, { connection: redisUrl() })).toThrow(
      `File ${rel} does not exist (resolved to ${resolve(rel)})`,
    );
    const url = fixture('nope.mjs');
    expect(() => new Worker(qname('sbmissing'), url, { connection: redisUrl() })).toThrow(`URL ${url.href} does not exist in the local file system`);
  });

  it('refuses bad sandbox options and non-file URLs with typed errors naming the field', () => {
    const cases: Array<[WorkerOptions | string | URL, string]> = [
      [{ useWorkerThreads: 'yes' as never }, 'useWorkerThreads must be a boolean, got "yes"'],
      [{ workerForkOptions: 5 as never }, 'workerForkOptions must be an object, got 5'],
      [{ workerThreadsOptions: [] as never }, 'workerThreadsOptions must be an object, got an array of 0'],
      [{ workerForkOptions: { execArgv: '--inspect' as never } }, 'workerForkOptions.execArgv must be an array of strings, got "--inspect"'],
      [{ sandboxGracePeriod: -1 }, 'sandboxGracePeriod must be an integer 0…86400000, got -1'],
      [new URL('https://example.com/p.js'), 'processor must be a file: URL, a path or a function, got "https://example.com/p.js"'],
      ['', 'processor must be a function, a file path or a file: URL, got ""'],
    ];
    for (const [arg, message] of cases) {
      const file = typeof arg === 'object' && !(arg instanceof URL) ? FIXTURE : arg;
      const opts = typeof arg === 'object' && !(arg instanceof URL) ? arg : {};
      let err: unknown;
      try {
        new Worker(qname('sbopts'), file, { connection: redisUrl(), autorun: false, ...opts });
      } catch (e) {
        err = e;
      }
      expect(err, message).toBeInstanceOf(ValidationError);
      expect((err as Error).message).toBe(message);
    }
  });
});

describe.each(MODES)('sandboxed processor failures in %s', (mode) => {
  const useWorkerThreads = mode === 'threads';

  it("a file that exports no function fails its jobs with BullMQ's text", async () => {
    const name = qname('sbnofn');
    const q = queue(name);
    const w = worker(name, fixture('no-function.mjs'), { useWorkerThreads });
    const job = await q.add('x', {});
    await finished(q, job.id);
    expect((await reload(q, job.id)).failedReason).toMatch(
      /^No function is exported in processor file \(its default export is number\) \(failed to load: .*no-function\.mjs\)$/,
    );
    await w.close();
  });

  it('a file that exits while loading fails its job with the exit code', async () => {
    const name = qname('sbexitload');
    const q = queue(name);
    const w = worker(name, fixture('exit-at-load.mjs'), { useWorkerThreads });
    const job = await q.add('x', {});
    await finished(q, job.id);
    expect((await reload(q, job.id)).failedReason).toMatch(/^Error initializing child: exited with code 7 \(failed to load: .*exit-at-load\.mjs\)$/);
    await w.close();
  });

  it("children inherit the parent's environment; env and execArgv options replace it", async () => {
    const name = qname('sbenv');
    const q = queue(name);
    process.env.SANDBOX_INHERITED = 'from the parent';
    try {
      const plain = worker(name, FIXTURE, { useWorkerThreads });
      const a = await q.add('env', {});
      await finished(q, a.id);
      await plain.close();
      const env = { SANDBOX_GIVEN: 'given' };
      const execArgv = ['--no-warnings'];
      const opts: WorkerOptions = useWorkerThreads ? { workerThreadsOptions: { env, execArgv } } : { workerForkOptions: { env, execArgv } };
      const custom = worker(name, FIXTURE, { useWorkerThreads, ...opts });
      const b = await q.add('env', {});
      await finished(q, b.id);
      await custom.close();
      expect((await reload(q, a.id)).returnvalue).toEqual({ inherited: 'from the parent', given: null, execArgv: process.execArgv });
      expect((await reload(q, b.id)).returnvalue).toEqual({ inherited: null, given: 'given', execArgv });
    } finally {
      delete process.env.SANDBOX_INHERITED;
    }
  });

  it('running out of memory fails only its job, with a reason that says so', async () => {
    const name = qname('sboom');
    const q = queue(name);
    const limits: WorkerOptions = useWorkerThreads
      ? { workerThreadsOptions: { resourceLimits: { maxOldGenerationSizeMb: 32 } } }
      : { workerForkOptions: { execArgv: ['--max-old-space-size=32'] } };
    // The fork's stderr carries V8's out-of-memory report: silence it for this test.
    const restore = muteStderr(/heap|allocation|FATAL|Native stack|^\s*\d+:|----|Security context|<--|\[\d+:0x/i);
    try {
      const w = worker(name, FIXTURE, { useWorkerThreads, ...limits });
      const job = await q.add('oom', {});
      await finished(q, job.id, 30_000);
      const reason = (await reload(q, job.id)).failedReason!;
      expect(reason).toMatch(useWorkerThreads ? /^Unexpected exit code: 1 signal: null \(the sandboxed processor ran out of memory/ : /^Unexpected exit code: null signal: SIGABRT \(the sandboxed processor was killed by SIGABRT, out of memory\)$/);
      const next = await q.add('echo', {});
      await finished(q, next.id);
      expect(await (await reload(q, next.id)).getState()).toBe('completed');
      await w.close();
    } finally {
      restore();
    }
  });

  it('passes the children\'s stdout and stderr through', async () => {
    const name = qname('sbstdio');
    const q = queue(name);
    const marker = `m${Math.random().toString(36).slice(2)}`;
    const out: string[] = [];
    const origOut = process.stdout.write.bind(process.stdout);
    const origErr = process.stderr.write.bind(process.stderr);
    process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      out.push(`out:${chunk.toString()}`);
      return (origOut as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stdout.write;
    process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
      out.push(`err:${chunk.toString()}`);
      return (origErr as (...a: unknown[]) => boolean)(chunk, ...rest);
    }) as typeof process.stderr.write;
    try {
      const w = worker(name, FIXTURE, { useWorkerThreads });
      const job = await q.add('stdout', { marker });
      await finished(q, job.id);
      await waitFor(() => out.join('').includes(`sandbox-stderr-marker ${marker}`), 5000, 'stderr');
      await waitFor(() => out.join('').includes(`sandbox-stdout-marker ${marker}`), 5000, 'stdout');
      expect(out.some((s) => s.startsWith('out:') && s.includes(`sandbox-stdout-marker ${marker}`))).toBe(true);
      expect(out.some((s) => s.startsWith('err:') && s.includes(`sandbox-stderr-marker ${marker}`))).toBe(true);
      await w.close();
    } finally {
      process.stdout.write = origOut;
      process.stderr.write = origErr;
    }
  });

  it('2,000 jobs through a pool of 4 leave exactly 4 live children and no growth in open handles; close ends them', async () => {
    const name = qname('sbleak');
    const q = queue(name);
    const w = worker(name, FIXTURE, { useWorkerThreads, concurrency: 4 });
    const key = useWorkerThreads ? 'threadId' : 'pid';
    const ids = new Set<number>();
    w.on('completed', (_job: Job, rv: { pid: number; threadId: number }) => ids.add(rv[key]));
    let done = 0;
    w.on('completed', () => done++);
    await q.addBulk(Array.from({ length: 200 }, () => ({ name: 'who', data: {} })));
    await waitFor(() => done === 200, 30_000, 'warm-up');
    await sleep(50);
    const handles = process.getActiveResourcesInfo().length;
    await q.addBulk(Array.from({ length: 2000 }, () => ({ name: 'who', data: {} })));
    await waitFor(() => done === 2200, 60_000, '2,000 jobs');
    await sleep(50);
    expect(ids.size).toBe(4);
    expect(liveChildren(w)).toBe(4);
    expect(process.getActiveResourcesInfo().length).toBeLessThanOrEqual(handles);
    if (!useWorkerThreads) expect([...ids].every(alive)).toBe(true);
    await w.close();
    expect(liveChildren(w)).toBe(0);
    if (!useWorkerThreads) expect([...ids].some(alive)).toBe(false);
  });

  it('close(true) kills busy children at once', async () => {
    const name = qname('sbforce');
    const q = queue(name);
    const w = worker(name, FIXTURE, { useWorkerThreads, sandboxGracePeriod: 60_000 });
    await q.add('spin', {});
    await waitFor(() => w.activeCount === 1, 10_000, 'running');
    await sleep(100);
    expect(liveChildren(w)).toBe(1);
    const t0 = Date.now();
    await w.close(true);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(liveChildren(w)).toBe(0);
  });
});

describe('child processes that cannot start', () => {
  it('fail their job with the reason, and the worker keeps serving', async () => {
    const name = qname('sbspawn');
    const q = queue(name);
    const w = worker(name, FIXTURE, { workerForkOptions: { execPath: '/nonexistent/node' } });
    const job = await q.add('echo', {});
    await finished(q, job.id);
    expect((await reload(q, job.id)).failedReason).toMatch(/^Error initializing child: could not be started: spawn \/nonexistent\/node ENOENT/);
    expect(liveChildren(w)).toBe(0);
    await w.close();
  });
});

describe('child processes killed mid-job', () => {
  it('a SIGKILLed child fails or retries its job per attempts; the pool replaces it and 200 jobs follow', async () => {
    const name = qname('sbkill');
    const q = queue(name);
    const w = worker(name, FIXTURE, { concurrency: 2 });
    const progress = new Map<string, number>();
    w.on('progress', (job: Job, p: { pid: number }) => progress.set(job.id, p.pid));
    const once = await q.add('report-pid', {}, { attempts: 1 });
    const twice = await q.add('report-pid', {}, { attempts: 2 });
    await waitFor(() => progress.size === 2, 10_000, 'both running');
    const pids = [...progress.values()];
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    await finished(q, once.id);
    await finished(q, twice.id);
    const a = await reload(q, once.id);
    expect(await a.getState()).toBe('failed');
    expect(a.failedReason).toBe('Unexpected exit code: null signal: SIGKILL (the sandboxed processor was killed by SIGKILL)');
    const b = await reload(q, twice.id);
    expect(await b.getState()).toBe('completed');
    expect(b.returnvalue).toBe('attempt 2');
    const who = await q.addBulk(Array.from({ length: 200 }, () => ({ name: 'who', data: {} })));
    for (const j of who) await finished(q, j.id);
    const after = new Set<number>();
    for (const j of who) {
      const r = await reload(q, j.id);
      expect(await r.getState()).toBe('completed');
      after.add((r.returnvalue as { pid: number }).pid);
    }
    expect(after.size).toBe(2);
    expect(pids.some((p) => after.has(p))).toBe(false);
    expect(liveChildren(w)).toBe(2);
    await w.close();
  });
});

describe('sharded queues', () => {
  it('a sharded worker runs a processor file on every shard and closes all children', async () => {
    const name = qname('sbshard');
    const q = new Queue(name, { connection: redisUrl(), shards: 2 });
    closers.push(() => q.close());
    const w = new Worker(name, FIXTURE, { connection: redisUrl(), shards: 2, concurrency: 2 });
    w.on('error', () => {});
    const pids = new Set<number>();
    let done = 0;
    w.on('completed', (_job: Job, rv: { pid: number }) => {
      pids.add(rv.pid);
      done++;
    });
    await q.addBulk(Array.from({ length: 40 }, (_, i) => ({ name: 'who', data: {}, opts: { lane: `tenant-${i % 8}` } })));
    await waitFor(() => done === 40, 20_000, '40 jobs');
    await w.close();
    expect([...pids].some(alive)).toBe(false);
  });
});

describe('flows in the sandbox', () => {
  it('getChildrenValues and getDependencies answer from the parent', async () => {
    const parentQ = qname('sbflowp');
    const childQ = qname('sbflowc');
    queue(parentQ);
    queue(childQ);
    const inline = new Worker(childQ, async (job: Job) => ({ doubled: job.data.n * 2 }), { connection: redisUrl() });
    closers.push(() => inline.close());
    const w = worker(parentQ, FIXTURE);
    const flow = new FlowProducer({ connection: redisUrl() });
    closers.push(() => flow.close());
    const tree = await flow.add({ name: 'children', queueName: parentQ, data: {}, children: [{ name: 'c', queueName: childQ, data: { n: 4 } }] });
    const pq = queue(parentQ);
    await finished(pq, tree.job.id);
    const done = await reload(pq, tree.job.id);
    // The same answers as the Job methods give in this process.
    expect(done.returnvalue.values).toEqual(await done.getChildrenValues());
    expect(Object.values(done.returnvalue.values)).toEqual([{ doubled: 8 }]);
    expect(done.returnvalue.deps).toEqual(await done.getDependencies());
    await w.close();
  });
});

/** Drops stderr writes matching `re` until the returned function is called. */
function muteStderr(re: RegExp): () => void {
  const orig = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (re.test(chunk.toString())) return true;
    return (orig as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stderr.write;
  return () => {
    process.stderr.write = orig;
  };
}
