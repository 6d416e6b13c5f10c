#!/usr/bin/env node
// The move from BullMQ, measured once: BullMQ 6 adds N waiting jobs of about 1 KB each (its own
// addBulk), then migrateFromBullMQ moves them. Prints one markdown row: jobs per second of the
// move, the longest single command Redis ran during it (SLOWLOG, every command over 100 µs
// logged) and Redis' memory at its peak during the move (INFO used_memory, sampled every
// 20 ms), beside the memory before. Wall times on a busy machine also count the time Redis
// waited for a core; `--callgrind` instead runs redis-server under valgrind's callgrind and
// prints the instructions it executed per moved job, a count the machine's load does not move.
// Run after `npm run build`:
//
//   node bench/migrate.mjs [--jobs 100000] [--batch 50]
//   node bench/migrate.mjs --callgrind --jobs 2000
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { Queue as BullQueue } from 'bullmq';
import { findServerBinary, freePort, startRedisServer } from '../scripts/redis-server.mjs';
import { ECHOMQ_MODULE } from './lib/libs.mjs';

const { values } = parseArgs({ options: { jobs: { type: 'string', default: '100000' }, batch: { type: 'string', default: '50' }, callgrind: { type: 'boolean', default: false } } });
const N = Number(values.jobs);
const { migrateFromBullMQ } = await import(ECHOMQ_MODULE);
const cgDir = values.callgrind ? mkdtempSync(join(tmpdir(), 'echomq-migrate-cg-')) : undefined;
const server = cgDir ? await callgrindServer(cgDir) : process.env.REDIS_URL ? { url: process.env.REDIS_URL, stop: async () => {} } : await startRedisServer();

/** redis-server under callgrind (hz 1, so idle timer work stays small next to the move). */
async function callgrindServer(dir) {
  const port = await freePort();
  const child = spawn('valgrind', ['--tool=callgrind', '--dump-instr=no', `--callgrind-out-file=${join(dir, 'cg.out')}`, findServerBinary(),
    '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', '--hz', '1', '--dynamic-hz', 'no'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}`;
  const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => 200, maxRetriesPerRequest: null });
  probe.on('error', () => {});
  for (let i = 0; i < 240; i++) {
    try { await probe.connect(); await probe.ping(); break; } catch { await new Promise((r) => setTimeout(r, 250)); }
  }
  probe.disconnect();
  const ctl = (...a) => execFileSync('callgrind_control', [...a, String(child.pid)], { stdio: ['ignore', 'pipe', 'pipe'] });
  return {
    url,
    zero: () => ctl('-z'),
    dump() {
      const before = new Set(readdirSync(dir));
      ctl('-d', 'move');
      for (let i = 0; i < 100; i++) {
        const f = readdirSync(dir).find((x) => /^cg\.out\.\d+$/.test(x) && !before.has(x));
        if (f) return Number(/^(?:summary|totals):\s*(\d+)/m.exec(readFileSync(join(dir, f), 'utf8'))[1]);
        execFileSync('sleep', ['0.1']);
      }
      throw new Error('no callgrind dump');
    },
    stop: async () => { child.kill('SIGTERM'); await new Promise((r) => child.once('exit', r)); rmSync(dir, { recursive: true, force: true }); },
  };
}
const redis = new Redis(server.url);
const memory = async () => Number(/used_memory:(\d+)/.exec(await redis.info('memory'))[1]);
// Redis' own CPU time (s): on a busy machine wall times (SLOWLOG included) also count the time
// the server waited for a core; its CPU time per call does not.
const cpu = async () => { const t = await redis.info('cpu'); return Number(/used_cpu_user:([\d.]+)/.exec(t)[1]) + Number(/used_cpu_sys:([\d.]+)/.exec(t)[1]); };
try {
  const name = `bench-migrate-${Date.now()}`;
  const bullConn = new Redis(server.url, { maxRetriesPerRequest: null });
  const q = new BullQueue(name, { connection: bullConn });
  const payload = 'x'.repeat(1000);
  process.stderr.write(`adding ${N} BullMQ jobs…\n`);
  for (let i = 0; i < N; i += 1000) {
    await q.addBulk(Array.from({ length: Math.min(1000, N - i) }, (_, k) => ({ name: 'job', data: { i: i + k, payload } })));
  }
  await q.close();
  bullConn.disconnect();
  if (server.zero) {
    server.zero();
    const report = await migrateFromBullMQ({ connection: server.url, queues: [name], batchSize: Number(values.batch) });
    const instructions = server.dump();
    if (report.jobs !== N) throw new Error(`moved ${report.jobs} of ${N}`);
    console.log('| jobs | batch | redis-server instructions per moved job (callgrind) |');
    console.log('|---|---|---|');
    console.log(`| ${N.toLocaleString('en')} waiting, 1 KB | ${values.batch} | ${Math.round(instructions / N).toLocaleString('en')} |`);
  } else {
    await timed(name);
  }
} finally {
  await redis.quit();
  await server.stop();
}

/** The timed move: wall time, Redis CPU, SLOWLOG and memory. */
async function timed(name) {
  const before = await memory();
  await redis.config('SET', 'slowlog-log-slower-than', '100');
  await redis.config('SET', 'slowlog-max-len', '100000');
  await redis.slowlog('RESET');
  let peak = before;
  const sampler = setInterval(() => { memory().then((m) => { if (m > peak) peak = m; }, () => {}); }, 20);
  const cpu0 = await cpu();
  const calls0 = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0);
  const t0 = performance.now();
  const report = await migrateFromBullMQ({ connection: server.url, queues: [name], batchSize: Number(values.batch) });
  const ms = performance.now() - t0;
  clearInterval(sampler);
  const cpuUs = ((await cpu()) - cpu0) * 1e6;
  const calls = Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.info('commandstats'))?.[1] ?? 0) - calls0;
  peak = Math.max(peak, await memory());
  const log = await redis.slowlog('GET', 100000);
  const longest = log.reduce((m, e) => (Number(e[2]) > m.us ? { us: Number(e[2]), cmd: String(e[3][0]) } : m), { us: 0, cmd: '–' });
  if (report.jobs !== N) throw new Error(`moved ${report.jobs} of ${N}`);
  const mb = (b) => (b / 1048576).toFixed(1);
  console.log('| jobs | batch | time | jobs/s | Redis CPU per script call (mean) | per job | longest call (SLOWLOG, wall) | calls over 1 ms | Redis memory before → peak |');
  console.log('|---|---|---|---|---|---|---|---|---|');
  console.log(`| ${N.toLocaleString('en')} waiting, 1 KB | ${values.batch} | ${(ms / 1000).toFixed(2)} s | ${Math.round(N / (ms / 1000)).toLocaleString('en')} | ${(cpuUs / Math.max(calls, 1) / 1000).toFixed(2)} ms over ${calls} calls | ${(cpuUs / N).toFixed(1)} µs | ${(longest.us / 1000).toFixed(2)} ms (${longest.cmd}) | ${log.filter((e) => Number(e[2]) > 1000).length} | ${mb(before)} MB → ${mb(peak)} MB |`);
}
