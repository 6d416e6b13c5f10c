#!/usr/bin/env node
// Benchmark runner: picks suites and sizes from flags (or BENCH_* environment variables),
// runs them against one Redis (REDIS_URL, or a throwaway local server), and prints markdown
// tables on stdout; progress goes to stderr. See bench/README.md.
//
//   node bench/run.mjs --suite core --runs 3 --jobs 20000
//   node bench/run.mjs --small                      # quick end-to-end check of every suite
//   BENCH_SUITE=fairness BENCH_RUNS=1 npm run bench
import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { ensureRedis } from '../scripts/redis-server.mjs';
import { collectGarbage, createMeter, disturbed } from './lib/meter.mjs';
import { Results, commandTable } from './lib/table.mjs';
import { ECHOMQ_MODULE } from './lib/libs.mjs';
import { runCore } from './suite-core.mjs';
import { runLanesScale } from './suite-lanes-scale.mjs';
import { runLanesShallow } from './suite-lanes-shallow.mjs';
import { runFairness } from './suite-fairness.mjs';
import { runCeiling } from './suite-ceiling.mjs';
import { runCosts } from './suite-costs.mjs';
import { runSandbox } from './suite-sandbox.mjs';

const SUITES = { core: runCore, 'lanes-scale': runLanesScale, 'lanes-shallow': runLanesShallow, fairness: runFairness, ceiling: runCeiling, costs: runCosts, sandbox: runSandbox };

// name → [type, default, help]. Lists are comma-separated numbers.
const OPTIONS = {
  suite: ['list', 'core,lanes-scale,lanes-shallow,fairness,ceiling,costs,sandbox', 'suites to run: core, lanes-scale, lanes-shallow, fairness, ceiling, costs, sandbox (or all)'],
  runs: ['int', 3, 'repetitions of every case; tables show the median and min–max'],
  jobs: ['int', 20_000, 'jobs per add/process case (core, lanes-shallow) and completions timed (lanes-scale)'],
  inflight: ['int', 100, 'core add: single adds pending at once'],
  bulk: ['int', 1_000, 'core addBulk: jobs per call'],
  batches: ['int', 20, 'core addBulk: calls per case'],
  concurrency: ['ints', '1,10,50', 'core and lanes-shallow process: worker concurrencies'],
  lanes: ['ints', '10,1000,100000', 'lanes-scale: non-empty lane counts (the first is the baseline)'],
  'lane-concurrency': ['int', 10, 'lanes-scale: worker concurrency'],
  'shallow-lanes': ['ints', '10,1000,20000', 'lanes-shallow: lane counts of equal depth sharing --jobs jobs (the first is the baseline)'],
  burst: ['int', 3_000, 'fairness: jobs in the noisy lane'],
  quiet: ['int', 100, 'fairness: jobs in each of the two quiet lanes'],
  'fair-concurrency': ['ints', '1,10', 'fairness: worker concurrencies'],
  'ceiling-requests': ['int', 1_000_000, 'ceiling: redis-benchmark requests for the pipelined claim row'],
  'ceiling-clients': ['int', 50, 'ceiling: redis-benchmark connections'],
  'ceiling-pipeline': ['int', 16, 'ceiling: redis-benchmark pipeline depth (-P)'],
  'cost-concurrency': ['int', 10, 'costs: worker concurrency of the processing rows'],
  'cost-lanes': ['int', 100, 'costs: lanes in the many-lanes row'],
  'max-priority': ['int', 20, 'costs: priorities are drawn from 0…this'],
  'floor-concurrency': ['ints', '10,50', 'costs: worker concurrencies of the floor rows (echomq against lib/floor.mjs)'],
  shallow: ['int', 1_000, 'costs: jobs left waiting behind the timed claims, shallow row'],
  deep: ['int', 1_000_000, 'costs: jobs left waiting behind the timed claims, deep row'],
  pickups: ['int', 200, 'costs: idle pickup samples per library and run'],
  'mem-jobs': ['int', 100_000, 'costs: waiting jobs added for the memory row'],
  'sandbox-jobs': ['int', 5_000, 'sandbox: jobs per case'],
  'sandbox-concurrency': ['ints', '1,4,8', 'sandbox: worker concurrencies (child processes and worker threads each)'],
  payload: ['int', 1_024, 'costs: bytes of job data in the memory row'],
  'quiet-wait': ['int', 120, 'before each case, wait up to this many seconds for other processes to go idle (0: never wait)'],
  json: ['string', '', 'also write every raw measurement to this file'],
  detail: ['bool', false, 'also print which Redis commands each case ran, per job'],
  small: ['bool', false, 'small sizes for a quick check (flags given explicitly still win)'],
  help: ['bool', false, 'print this help'],
};

const SMALL = {
  runs: '1', jobs: '2000', batches: '4', lanes: '10,100,5000', 'shallow-lanes': '10,100,2000', burst: '300', quiet: '10',
  'ceiling-requests': '100000', deep: '50000', pickups: '40', 'mem-jobs': '10000', 'sandbox-jobs': '500',
};

function envName(flag) {
  return `BENCH_${flag.toUpperCase().replace(/-/g, '_')}`;
}

function usage() {
  const lines = Object.entries(OPTIONS).map(
    ([k, [type, dflt, help]]) => `  --${k}${type === 'bool' ? '' : ' <' + type + '>'}`.padEnd(30) + `${help}${type === 'bool' ? '' : ` (default ${dflt})`}; env ${envName(k)}`,
  );
  return `usage: node bench/run.mjs [options]\n${lines.join('\n')}`;
}

function parseOptions(argv) {
  const spec = Object.fromEntries(Object.entries(OPTIONS).map(([k, [type]]) => [k, { type: type === 'bool' ? 'boolean' : 'string' }]));
  const { values } = parseArgs({ args: argv, options: spec, strict: true });
  const raw = (k) => values[k] ?? process.env[envName(k)];
  const small = values.small ?? ['1', 'true'].includes(process.env.BENCH_SMALL ?? '');
  const out = {};
  for (const [k, [type, dflt]] of Object.entries(OPTIONS)) {
    const given = raw(k);
    const text = String(given ?? (small && k in SMALL ? SMALL[k] : dflt));
    const key = k.replace(/-([a-z])/g, (_, c) => c.toUpperCase());
    const num = (s) => {
      const n = Number(s.replace(/_/g, ''));
      if (!Number.isInteger(n) || n < 1) throw new Error(`--${k} wants a positive integer, got ${JSON.stringify(s)}`);
      return n;
    };
    if (type === 'int') out[key] = k === 'quiet-wait' && text === '0' ? 0 : num(text);
    else if (type === 'ints') out[key] = text.split(',').map((s) => num(s.trim()));
    else if (type === 'list') out[key] = text.split(',').map((s) => s.trim()).filter(Boolean);
    else if (type === 'bool') out[key] = given === true || given === '1' || given === 'true';
    else out[key] = text;
  }
  out.small = small;
  if (out.suite.includes('all')) out.suite = Object.keys(SUITES);
  for (const s of out.suite) if (!SUITES[s]) throw new Error(`unknown suite ${JSON.stringify(s)}; known: ${Object.keys(SUITES).join(', ')}`);
  return out;
}

/** How many timed windows other processes disturbed (see disturbed() in lib/meter.mjs). */
function noiseNote(results) {
  const windows = Object.values(results.toJSON()).flatMap((byLib) => Object.values(byLib).flat())
    .filter((m) => typeof m.otherCores === 'number');
  if (windows.length === 0) return '';
  const busy = windows.filter(disturbed);
  const max = Math.max(...windows.map((m) => m.otherCores));
  return `; ${busy.length} of ${windows.length} timed windows had other processes using > 0.2 core (max ${max.toFixed(2)})`;
}

async function main() {
  let opts;
  try {
    opts = parseOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`${err.message}\n\n${usage()}`);
    process.exit(2);
  }
  if (opts.help) {
    console.log(usage());
    return;
  }
  const redis = await ensureRedis();
  const log = (msg) => console.error(msg);
  const meter = await createMeter(redis.url, { quietWaitMs: opts.quietWait * 1000, log });
  const gc = collectGarbage;
  const raw = {};
  try {
    const version = await meter.serverVersion();
    console.log(
      `# echomq benchmarks\n\n${new Date().toISOString()} · node ${process.version} · Redis ${version} · ` +
        `${cpus().length} CPUs · load average at start ${loadavg().map((x) => x.toFixed(2)).join(' ')}` +
        `${typeof globalThis.gc === 'function' ? ' · GC between cases' : ''}\n\nechomq: ${ECHOMQ_MODULE}\n`,
    );
    for (const suite of opts.suite) {
      const results = new Results();
      const t0 = performance.now();
      const text = await SUITES[suite]({ url: redis.url, meter, results, opts, log, gc });
      console.log(`${text}\n\n_${suite}: ${((performance.now() - t0) / 1000).toFixed(0)} s wall, load average now ${loadavg()[0].toFixed(2)}${noiseNote(results)}_\n`);
      if (opts.detail) console.log(`### ${suite}: Redis commands per job\n\n${commandTable(results)}\n`);
      raw[suite] = results.toJSON();
    }
    if (opts.json) writeFileSync(opts.json, JSON.stringify({ opts, results: raw }, null, 2));
  } finally {
    await meter.close();
    await redis.stop();
  }
}

main().then(
  // Libraries may leave timers or sockets behind after close; the tables are printed, so exit.
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
