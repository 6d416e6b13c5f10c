#!/usr/bin/env node
// Instructions per job: a count that does not move with the machine's load. Runs a dedicated
// redis-server under `valgrind --tool=callgrind` and drives one fixed workload per case through
// echomq (its Queue and Worker), echomq's scripts with the floor's fixed batches, the floor
// (lib/floor.mjs), bee-queue and BullMQ. Callgrind's counters are zeroed before each timed
// window and dumped after it (callgrind_control), so each window's total is the instructions
// redis-server executed for it (all threads: networking, parsing, commands, Lua); the idle
// cost of the event loop over the window's length (measured first, with hz 1) and of the one
// INFO read inside the window are subtracted. The same cases then run on a plain redis-server
// for INFO commandstats µs per script call and Redis CPU per job (timings: noisy on a busy
// machine; instructions are not). Markdown on stdout, progress on stderr.
//
//   node bench/instructions.mjs                       # 2,000 jobs, c=10 and c=50, all libraries
//   node bench/instructions.mjs --jobs 5000 --libs echomq,floor --annotate
//   node bench/instructions.mjs --help
//   BENCH_FLOOR_VARIANT=hmget8 node bench/instructions.mjs --libs floor --no-native
//                                                      # the floor with one echomq choice added back
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { Redis } from 'ioredis';
import { findServerBinary, freePort } from '../scripts/redis-server.mjs';
import { echomq, bullmq, beequeue } from './lib/libs.mjs';
import { floor, echomqDirect, floorVariant } from './lib/floor.mjs';
import { deferred, inParallel, withTimeout } from './lib/meter.mjs';
import { fmt, markdownTable } from './lib/table.mjs';

const LIBS = { echomq, 'echomq-scripts': echomqDirect, floor, 'bee-queue': beequeue, bullmq };

// name → [type, default, help], as bench/run.mjs.
const OPTIONS = {
  jobs: ['int', 2_000, 'jobs per case'],
  inflight: ['int', 100, 'add: single adds pending at once'],
  bulk: ['int', 1_000, 'addBulk: jobs per call'],
  concurrency: ['ints', '10,50', 'process: worker concurrencies'],
  libs: ['list', 'echomq,echomq-scripts,floor,bee-queue,bullmq', 'libraries: echomq, echomq-scripts, floor, bee-queue, bullmq'],
  native: ['bool', true, 'also run the cases on a plain redis-server for µs per call (--no-native: skip)'],
  'native-jobs': ['int', 20_000, 'jobs per case of the plain-server pass (longer windows: steadier timings)'],
  'native-runs': ['int', 3, 'repetitions of the plain-server pass; its columns give the median'],
  annotate: ['bool', false, 'also split each case\'s instructions into Lua VM, redis.call and commands (callgrind_annotate)'],
  keep: ['string', '', 'keep the callgrind dumps in this directory'],
  'annotate-dir': ['string', '', 'no run: split the dumps a --keep run left in this directory (with that run\'s --jobs)'],
  help: ['bool', false, 'print this help'],
};
const envName = (flag) => `BENCH_${flag.toUpperCase().replace(/-/g, '_')}`;

function usage() {
  const lines = Object.entries(OPTIONS).map(([k, [type, dflt, help]]) =>
    `  --${k}${type === 'bool' ? '' : ' <' + type + '>'}`.padEnd(30) + `${help}${type === 'bool' ? '' : ` (default ${dflt})`}; env ${envName(k)}`);
  return `usage: node bench/instructions.mjs [options]\n${lines.join('\n')}`;
}

function parseOptions(argv) {
  const spec = Object.fromEntries(Object.entries(OPTIONS).map(([k, [type]]) => [k, { type: type === 'bool' ? 'boolean' : 'string' }]));
  const { values } = parseArgs({ args: argv, options: spec, strict: true, allowNegative: true });
  const out = {};
  for (const [k, [type, dflt]] of Object.entries(OPTIONS)) {
    const given = values[k] ?? process.env[envName(k)];
    const key = k.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    const text = String(given ?? dflt);
    if (type === 'int') out[key] = Number(text.replace(/_/g, ''));
    else if (type === 'ints') out[key] = text.split(',').map((s) => Number(s.trim()));
    else if (type === 'list') out[key] = text.split(',').map((s) => s.trim()).filter(Boolean);
    else if (type === 'bool') out[key] = given === undefined ? dflt : given === true || given === '1' || given === 'true';
    else out[key] = text;
  }
  for (const l of out.libs) if (!LIBS[l]) throw new Error(`unknown library ${l}; known: ${Object.keys(LIBS).join(', ')}`);
  return out;
}

const log = (msg) => console.error(msg);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Starts redis-server, under callgrind when `dir` is given; resolves once it answers PING. */
async function startServer(cgDir) {
  const bin = findServerBinary();
  if (!bin) throw new Error('no redis-server on PATH');
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'echomq-instr-'));
  // hz 1: the event loop's timer work (serverCron) runs once a second, so idle cost stays small
  // next to a window's work and is subtracted (idle rate × window length).
  const redisArgs = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dataDir, '--save', '', '--appendonly', 'no',
    '--daemonize', 'no', '--loglevel', 'warning', '--logfile', join(dataDir, 'redis.log'), '--hz', '1', '--dynamic-hz', 'no'];
  const child = cgDir
    ? spawn('valgrind', ['--tool=callgrind', '--dump-instr=no', '--collect-systime=no', `--callgrind-out-file=${join(cgDir, 'cg.out')}`, bin, ...redisArgs],
      { stdio: ['ignore', 'ignore', 'pipe'] })
    : spawn(bin, redisArgs, { stdio: ['ignore', 'ignore', 'inherit'] });
  let err = '';
  child.stderr?.on('data', (d) => (err += d));
  const url = `redis://127.0.0.1:${port}`;
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: null, retryStrategy: () => 200 });
  client.on('error', () => {}); // refused until the server listens
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`redis-server exited: ${err}`);
    try {
      if (client.status !== 'ready') await client.connect();
      await client.ping();
      break;
    } catch {
      if (Date.now() > deadline) throw new Error(`redis-server did not answer on ${port}: ${err}`);
      await sleep(250);
    }
  }
  const stop = async () => {
    // Not awaited: the connection drops before a reply, and ioredis would queue a retry.
    client.shutdown('NOSAVE').catch(() => {});
    await sleep(100);
    client.disconnect();
    await Promise.race([new Promise((r) => child.once('exit', r)), sleep(30_000)]);
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { url, client, pid: child.pid, child, stop };
}

/** Callgrind control: zero the counters, or dump them and return the dump's instruction total. */
function makeCounter(server, cgDir) {
  const ctl = (...args) => execFileSync('callgrind_control', [...args, String(server.pid)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const dumps = () => readdirSync(cgDir).filter((f) => /^cg\.out\.\d+$/.test(f));
  return {
    zero: () => ctl('-z'),
    dump(label) {
      const before = new Set(dumps());
      ctl('-d', label.replace(/[^\w=-]+/g, '_')); // callgrind_control passes the label unquoted
      let file;
      for (let i = 0; i < 50 && !file; i++) {
        file = dumps().find((f) => !before.has(f));
        if (!file) execFileSync('sleep', ['0.1']);
      }
      if (!file) throw new Error(`no callgrind dump for ${label}`);
      const text = readFileSync(join(cgDir, file), 'utf8');
      const m = /^summary:\s*(\d+)/m.exec(text) ?? /^totals:\s*(\d+)/m.exec(text);
      return { instructions: Number(m[1]), file: join(cgDir, file) };
    },
  };
}

/** commandstats as name → { calls, usec }, and used CPU seconds, from one INFO reply. */
async function stats(client) {
  const text = await client.info('all');
  const cmds = {};
  let cpu = 0;
  for (const line of text.split('\r\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) cmds[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
    else if (/^used_cpu_(sys|user):/.test(line)) cpu += Number(line.split(':')[1]);
  }
  return { cmds, cpu };
}
const SCRIPT = new Set(['eval', 'evalsha', 'fcall', 'evalsha_ro', 'fcall_ro', 'eval_ro']);
const IGNORED = new Set(['info', 'config']);

function cases(o) {
  const data = (n) => Array.from({ length: n }, (_, i) => ({ data: { i } }));
  return [
    { name: `add (${o.inflight} in flight)`, run: (h) => inParallel(o.jobs, o.inflight, (i) => h.add({ data: { i } })) },
    {
      name: `addBulk (${fmt(o.bulk)} per call)`,
      async run(h) {
        const jobs = data(o.jobs);
        for (let i = 0; i < jobs.length; i += o.bulk) await h.addBulk(jobs.slice(i, i + o.bulk));
      },
    },
    ...o.concurrency.map((c) => ({
      name: `process c=${c}`,
      prefill: (h) => h.addBulk(data(o.jobs)),
      async run(h) {
        const done = deferred();
        let n = 0;
        const w = h.startWorker({ concurrency: c, onCompleted: () => { if (++n === o.jobs) done.resolve(); }, onFailed: (e) => done.reject(e) });
        try {
          await withTimeout(done.promise, 600_000, `processing ${o.jobs} jobs`);
        } finally {
          this.close = () => w.close();
        }
      },
    })),
  ];
}

/**
 * Runs every case for every library on one server. counter: callgrind control (or undefined on
 * the plain server). Returns rows { case, lib, calls, cmds, scripts, scriptUs, cpuUs, instr,
 * file }, all per job except scripts/calls counts.
 */
async function runAll(server, o, counter, baseline) {
  const rows = [];
  const list = cases(o);
  const queueName = (lib, tag) => `instr-${lib.replace(/\W/g, '')}-${tag}`;
  // Warm-up: scripts and libraries loaded, code paths compiled, before any counted window.
  for (const libName of o.libs) {
    await server.client.flushall();
    const h = await LIBS[libName].open(server.url, queueName(libName, 'warm'));
    await h.addBulk(Array.from({ length: 50 }, (_, i) => ({ data: { i } })));
    await inParallel(50, 10, (i) => h.add({ data: { i } }));
    const done = deferred();
    let n = 0;
    const w = h.startWorker({ concurrency: 10, onCompleted: () => { if (++n === 100) done.resolve(); }, onFailed: (e) => done.reject(e) });
    await withTimeout(done.promise, 300_000, 'warm-up');
    await w.close();
    await h.close();
  }
  for (const c of list) {
    for (const libName of o.libs) {
      await server.client.flushall();
      const h = await LIBS[libName].open(server.url, queueName(libName, c.name));
      if (c.prefill) await c.prefill(h);
      await server.client.config('RESETSTAT');
      const before = await stats(server.client);
      counter?.zero();
      const t0 = performance.now();
      await c.run(h);
      const after = await stats(server.client);
      const seconds = (performance.now() - t0) / 1000;
      const dump = counter?.dump(`${libName} ${c.name}`);
      if (c.close) await c.close();
      await h.close();
      let cmds = 0, scripts = 0, scriptUs = 0, allUs = 0;
      const detail = {};
      for (const [name, s] of Object.entries(after.cmds)) {
        if (IGNORED.has(name)) continue;
        const was = before.cmds[name] ?? { calls: 0, usec: 0 };
        const d = s.calls - was.calls;
        if (d <= 0) continue;
        cmds += d;
        detail[name] = d / o.jobs;
        if (SCRIPT.has(name)) { scripts += d; scriptUs += s.usec - was.usec; }
        allUs += s.usec - was.usec;
      }
      const row = {
        case: c.name, lib: libName, cmds: cmds / o.jobs, scripts: scripts / o.jobs,
        scriptUsPerCall: scripts ? scriptUs / scripts : undefined, redisUs: allUs / o.jobs,
        cpuUs: ((after.cpu - before.cpu) * 1e6) / o.jobs, seconds, detail,
      };
      if (dump) {
        const net = dump.instructions - baseline.idlePerSecond * seconds - baseline.info;
        row.instr = net / o.jobs;
        row.instrPerCall = scripts ? net / scripts : undefined;
        row.file = dump.file;
      }
      rows.push(row);
      log(`[instructions] ${server.label} ${c.name} ${libName}: ${row.instr !== undefined ? `${fmt(row.instr)} instr/job, ` : ''}` +
        `${fmt(row.cmds, true)} cmds/job, ${fmt(row.scripts, true)} script calls/job, ${fmt(row.cpuUs, true)} Redis CPU µs/job, ${seconds.toFixed(1)} s`);
    }
  }
  return rows;
}

/** Idle instructions per second (event loop, hz 1) and the cost of one INFO all. */
async function measureBaseline(server, counter) {
  counter.zero();
  const t0 = performance.now();
  await sleep(3000);
  const idle = counter.dump('idle').instructions;
  const idlePerSecond = idle / ((performance.now() - t0) / 1000);
  const infos = [];
  for (let i = 0; i < 3; i++) {
    counter.zero();
    const t1 = performance.now();
    await stats(server.client);
    const d = counter.dump('info').instructions;
    infos.push(d - idlePerSecond * ((performance.now() - t1) / 1000));
  }
  counter.zero();
  const t2 = performance.now();
  for (let i = 0; i < 200; i++) await server.client.ping();
  const ping = (counter.dump('ping').instructions - idlePerSecond * ((performance.now() - t2) / 1000)) / 200;
  return { idlePerSecond, info: Math.min(...infos), ping };
}

// --annotate: inclusive instructions of a few functions (Redis links with -rdynamic, so its
// non-static functions have names without debug info; Lua's internals and Redis' static
// functions do not, so the split goes by the entry points around them):
//   script calls   fcallCommand / evalShaCommand / evalCommand: the whole script
//   redis.call     the caller of scriptCall (script_lua.c luaRedisGenericCommand, unnamed):
//                  every redis.call with its Lua-side argument conversion and reply parsing
//   of it, Redis   scriptCall: the command's dispatch and the command itself
//   Lua VM         script calls − redis.call: the script's own Lua code, its GC, KEYS/ARGV
//                  tables and the reply
//   <cmd>Command   each command's own implementation, wherever it ran
const SCRIPT_FNS = ['fcallCommand', 'evalShaCommand', 'evalCommand'];
const NOT_PROCS = new Set([...SCRIPT_FNS, 'execCommand', 'processCommand', 'lookupCommand', 'infoCommand', 'configCommand',
  'flushallCommand', 'functionLoadCommand', 'scriptCommand', 'clientCommand', 'pingCommand', 'shutdownCommand', 'helloCommand', 'selectCommand']);

export function annotate(file) {
  const out = execFileSync('callgrind_annotate', ['--threshold=100', '--inclusive=yes', '--tree=caller', file], { encoding: 'utf8', maxBuffer: 512 << 20 });
  const fns = {};
  let lastCaller;
  let bridge;
  for (const line of out.split('\n')) {
    const m = /^\s*([\d,]+)\s+\([^)]*\)\s+([<*])\s+\S*?:(\S+?)(?:'\d+)?\s+(?:\([\d,]+x\)\s+)?\[/.exec(line);
    if (!m) continue;
    const ir = Number(m[1].replace(/,/g, ''));
    if (m[2] === '<') { lastCaller = m[3]; continue; }
    if (fns[m[3]] === undefined) fns[m[3]] = ir;
    if (m[3] === 'scriptCall') bridge = lastCaller;
  }
  const script = SCRIPT_FNS.reduce((sum, f) => sum + (fns[f] ?? 0), 0);
  const redisSide = fns.scriptCall ?? 0;
  const redisCall = bridge ? fns[bridge] ?? redisSide : redisSide;
  const procs = Object.entries(fns).filter(([f]) => /^[a-z]+Command$/.test(f) && !NOT_PROCS.has(f) && !/^(generic|blocking)/.test(f));
  const label = /^Trigger: dump (.*)$/m.exec(out)?.[1] ?? file;
  return { label, script, redisCall, redisSide, conversions: redisCall - redisSide, vm: script - redisCall, procs: Object.fromEntries(procs) };
}

/** One row of the --annotate table, per job (instructions ÷ jobs). */
function annotateRow(a, jobs, instrPerJob) {
  const per = (x) => fmt(x / jobs);
  const top = Object.entries(a.procs).sort((x, y) => y[1] - x[1]).slice(0, 7).map(([f, v]) => `${f.replace(/Command$/, '')} ${per(v)}`).join(', ');
  return [fmt(instrPerJob), per(a.script), per(a.vm), per(a.conversions), per(a.redisSide), top];
}
const ANNOTATE_HEADERS = ['instructions/job', 'in script calls', 'Lua VM (script code, GC, KEYS/ARGV, reply)', 'redis.call: Lua ⇄ Redis conversions', 'redis.call: Redis side (dispatch + command)', 'commands\' own code per job (largest)'];

function report(o, cg, native, baseline, notes) {
  const key = (r) => `${r.case}\u0000${r.lib}`;
  const nat = new Map(native.map((r) => [key(r), r]));
  const byCase = [...new Set(cg.map((r) => r.case))];
  const find = (c, lib) => cg.find((r) => r.case === c && r.lib === lib);
  const x = (a, b) => (a !== undefined && b ? `${(a / b).toFixed(2)}×` : '–');
  const main = markdownTable(
    ['case', 'library', 'instructions/job', 'instructions/script call', 'script calls/job', 'Redis cmds/job', '÷ floor', '÷ bee-queue',
      'µs/script call (native)', 'Redis µs/job in commands (native)', 'Redis CPU µs/job (native, noisy)'],
    byCase.flatMap((c) => cg.filter((r) => r.case === c).map((r) => {
      const n = nat.get(key(r));
      return [c, r.lib, fmt(r.instr), fmt(r.instrPerCall), fmt(r.scripts, true), fmt(r.cmds, true),
        x(r.instr, find(c, 'floor')?.instr), x(r.instr, find(c, 'bee-queue')?.instr),
        fmt(n?.scriptUsPerCall, true), fmt(n?.redisUs, true), fmt(n?.cpuUs, true)];
    })),
  );
  const pivotLibs = o.libs;
  const sum = (lib, pred) => cg.filter((r) => r.lib === lib && pred(r.case)).reduce((s, r) => s + (r.instr ?? 0), 0);
  const combos = o.concurrency.map((c) => {
    const pred = (name) => name.startsWith('add (') || name === `process c=${c}`;
    return [`add + process c=${c}`, ...pivotLibs.map((l) => fmt(sum(l, pred)))];
  });
  const detailRows = byCase.flatMap((c) => cg.filter((r) => r.case === c).map((r) => [c, r.lib,
    Object.entries(r.detail).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${fmt(v, true)}`).join(', ')]));
  const parts = [
    `# Redis instructions per job\n\n${new Date().toISOString()} · node ${process.version} · ${cpus().length} CPUs · load average ${loadavg().map((v) => v.toFixed(2)).join(' ')} · ${fmt(o.jobs)} jobs per case${floorVariant().length ? ` · floor variant (BENCH_FLOOR_VARIANT): ${floorVariant().join(', ')}` : ''}\n`,
    `Callgrind (redis-server under valgrind, hz 1): instructions of redis-server in each window, less ${fmt(baseline.idlePerSecond)} idle instructions/s × the window's length and ${fmt(baseline.info)} for the INFO read inside it. A PING round trip costs ${fmt(baseline.ping)} instructions. The native columns are the same workload with ${fmt(o.nativeJobs)} jobs per case on a plain redis-server, median of ${o.nativeRuns} runs (INFO commandstats; timings move with the machine's load). Instructions are user-space only: the kernel's socket work per round trip is not in them.\n`,
    main, '', '### instructions per job by library', '', markdownTable(['case', ...pivotLibs.map((l) => `${l}`)], [
      ...byCase.map((c) => [c, ...pivotLibs.map((l) => fmt(find(c, l)?.instr))]), ...combos]),
    '', '### commands Redis ran per job (callgrind run; a script call counts once, and so does each command inside it)', '',
    markdownTable(['case', 'library', 'commands per job'], detailRows),
  ];
  if (notes.length) parts.push('', ...notes);
  return parts.join('\n');
}

async function main() {
  let o;
  try {
    o = parseOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${err.message}\n\n${usage()}`);
    process.exit(2);
  }
  if (o.help) return console.log(usage());
  if (o.annotateDir) {
    const files = readdirSync(o.annotateDir).filter((f) => /^cg\.out\.\d+$/.test(f)).sort((a, b) => Number(a.split('.')[2]) - Number(b.split('.')[2]));
    const rows = [];
    for (const f of files) {
      const file = join(o.annotateDir, f);
      const a = annotate(file);
      if (/^(idle|info|ping)$/.test(a.label)) continue;
      const total = Number(/^summary:\s*(\d+)/m.exec(readFileSync(file, 'utf8'))[1]);
      rows.push([a.label, ...annotateRow(a, o.jobs, total / o.jobs)]);
    }
    return console.log(markdownTable(['dump', ...ANNOTATE_HEADERS], rows));
  }
  const cgDir = o.keep || mkdtempSync(join(tmpdir(), 'echomq-callgrind-'));
  mkdirSync(cgDir, { recursive: true });
  const notes = [];
  let cg, baseline, native = [];
  log(`[instructions] starting redis-server under callgrind (dumps in ${cgDir})`);
  const server = await startServer(cgDir);
  server.label = 'callgrind';
  try {
    const counter = makeCounter(server, cgDir);
    baseline = await measureBaseline(server, counter);
    log(`[instructions] idle ${fmt(baseline.idlePerSecond)} instr/s, INFO ${fmt(baseline.info)}, PING ${fmt(baseline.ping)}`);
    cg = await runAll(server, o, counter, baseline);
    if (o.annotate) {
      const rows = cg.map((r) => [r.case, r.lib, ...annotateRow(annotate(r.file), o.jobs, r.instr)]);
      notes.push('### where the instructions go (callgrind_annotate, inclusive instructions per job; see the header of bench/instructions.mjs)', '',
        markdownTable(['case', 'library', ...ANNOTATE_HEADERS], rows));
    }
  } catch (err) {
    log(`[instructions] failed: ${err.stack}`);
    throw err;
  } finally {
    await server.stop();
    if (!o.keep) rmSync(cgDir, { recursive: true, force: true });
  }
  if (o.native) {
    const plain = await startServer(undefined);
    plain.label = 'native';
    try {
      const no = { ...o, jobs: o.nativeJobs };
      const runs = [];
      for (let i = 0; i < o.nativeRuns; i++) runs.push(await runAll(plain, no, undefined, undefined));
      const med = (xs) => { const v = xs.filter((x) => x !== undefined).sort((a, b) => a - b); return v.length ? v[v.length >> 1] : undefined; };
      native = runs[0].map((r, i) => ({ ...r, ...Object.fromEntries(['scriptUsPerCall', 'redisUs', 'cpuUs'].map((k) => [k, med(runs.map((rs) => rs[i][k]))])) }));
    } finally {
      await plain.stop();
    }
  }
  console.log(report(o, cg, native, baseline, notes));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) main().then(() => process.exit(0), (err) => {
  console.error('[instructions] failed:', err);
  process.exit(1);
});
