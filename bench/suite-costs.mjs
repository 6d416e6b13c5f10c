// Suite `costs`: what echomq's features cost, against its own plain default lane in the same
// run, plus two comparisons with the peers (idle pickup latency, memory per waiting job).
//
// Processing rows (echomq alone; one worker at concurrency `costConcurrency`, timed from its
// construction to the `jobs`-th completion, finished jobs removed, as in `core`):
//   plain               `jobs` jobs, default lane, no priority — the baseline
//   priorities 0–N      the same with priorities drawn uniformly from 0…maxPriority (seeded)
//   L lanes             the same spread round-robin over `costLanes` lanes
//   events off          plain, with the events stream turned off (streams.events.maxLen 0):
//                       what the two XADDs per job cost (not a target, an explanation)
//   shallow / deep      `jobs` + `shallow` (or + `deep`) jobs filled with addBulk; only the first
//                       `jobs` claims are timed, so `shallow` (or `deep`) jobs still wait behind
//                       them when the window closes: does a claim slow down with queue depth?
// Floor rows (lib/floor.mjs; echomq, echomq's scripts with fixed batches and the floor
// alternating): add (`inflight` single adds pending), addBulk (`bulk` per call) and process at
// each of `floorConcurrency`, `jobs` jobs each: script calls, Redis commands and Redis µs per
// script call and per job, against the floor's. bench/instructions.mjs counts the same cases in
// instructions, which the machine's load does not move.
// Peer rows (libraries alternating):
//   idle pickup         add one job to an idle queue with one idle worker, time add → processor
//                       start; p50 and p99 of `pickups` samples per run (lib/pickup.mjs)
//   memory              `memJobs` waiting jobs with `payload` bytes of data, added with addBulk,
//                       no worker: used_memory delta ÷ jobs, measured after the library's
//                       connections are closed (so client buffers are not counted)
import { prefill, timeProcessing } from './lib/steps.mjs';
import { noise } from './lib/meter.mjs';
import { measurePickups } from './lib/pickup.mjs';
import { memoryByFamily, oneJobHash, usedMemory } from './lib/memory.mjs';
import { costTable, fmt, markdownTable, median, ratio, ratioValue, spread, targetTable } from './lib/table.mjs';
import { echomq, bullmq, beequeue } from './lib/libs.mjs';
import { floor, echomqDirect } from './lib/floor.mjs';
import { inParallel } from './lib/meter.mjs';

const PEERS = [echomq, bullmq, beequeue];
const FLOOR_LIBS = [echomq, echomqDirect, floor];

/** A small seeded generator (mulberry32), so every run draws the same priorities. */
function seeded(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function processRows(o) {
  const plain = (n) => Array.from({ length: n }, (_, i) => ({ data: { i } }));
  return [
    { name: 'plain (default lane, no priority)', base: true, jobs: () => plain(o.jobs) },
    {
      name: `priorities 0–${o.maxPriority}`,
      jobs() {
        const rnd = seeded(42);
        return Array.from({ length: o.jobs }, (_, i) => ({ data: { i }, priority: Math.floor(rnd() * (o.maxPriority + 1)) }));
      },
    },
    { name: `${fmt(o.costLanes)} lanes`, jobs: () => Array.from({ length: o.jobs }, (_, i) => ({ data: { i }, lane: `l${i % o.costLanes}` })) },
    { name: 'events off (streams.events.maxLen 0)', queueOpts: { streams: { events: { maxLen: 0 } } }, jobs: () => plain(o.jobs) },
    { name: `${fmt(o.shallow)} waiting behind`, depth: 'shallow', jobs: () => plain(o.jobs + o.shallow) },
    { name: `${fmt(o.deep)} waiting behind`, depth: 'deep', jobs: () => plain(o.jobs + o.deep) },
  ];
}

async function withQueue(ctx, lib, tag, fn, queueOpts) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await lib.open(ctx.url, `bench-costs-${tag}`, queueOpts);
  try {
    return await fn(h);
  } finally {
    await h.close();
  }
}

async function onceProcess(ctx, row, tag, target = ctx.opts.jobs) {
  return withQueue(ctx, echomq, tag, async (h) => {
    const prefillRate = await prefill(h, row.jobs());
    const m = await timeProcessing(ctx.meter, h, { concurrency: ctx.opts.costConcurrency, target });
    return { ...m, prefillRate };
  }, row.queueOpts);
}

function floorCases(o) {
  const data = (n) => Array.from({ length: n }, (_, i) => ({ data: { i } }));
  return [
    { name: `add (${o.inflight} in flight)`, async run(ctx, h) {
      const w = await ctx.meter.begin();
      await inParallel(o.jobs, o.inflight, (i) => h.add({ data: { i } }));
      return w.end(o.jobs);
    } },
    { name: `addBulk (${fmt(o.bulk)} per call)`, async run(ctx, h) {
      const jobs = data(o.jobs);
      const w = await ctx.meter.begin();
      for (let i = 0; i < jobs.length; i += o.bulk) await h.addBulk(jobs.slice(i, i + o.bulk));
      return w.end(o.jobs);
    } },
    ...o.floorConcurrency.map((c) => ({ name: `process c=${c}`, async run(ctx, h) {
      await prefill(h, data(o.jobs));
      return timeProcessing(ctx.meter, h, { concurrency: c, target: o.jobs });
    } })),
  ];
}

/** µs of Redis time per script call (commandstats: the script's line includes its commands). */
function perScriptCall(m) {
  let calls = 0, usec = 0;
  for (const name of ['fcall', 'evalsha', 'eval']) {
    const c = m.commands?.[name];
    if (c) { calls += c.calls; usec += c.usec; }
  }
  return calls ? { usPerCall: usec / calls, usPerJob: usec } : {};
}

async function onceFloor(ctx, lib, c, tag) {
  return withQueue(ctx, lib, `floor-${tag}`, async (h) => {
    const m = await c.run(ctx, h);
    return { ...m, ...perScriptCall(m) };
  });
}

async function oncePickup(ctx, lib, tag) {
  return withQueue(ctx, lib, tag, (h) => measurePickups(h, { samples: ctx.opts.pickups }));
}

async function onceMemory(ctx, lib, tag) {
  const o = ctx.opts;
  const client = ctx.meter.client;
  await ctx.meter.flush();
  ctx.gc();
  const pad = 'x'.repeat(Math.max(0, o.payload - 20)); // with {"i":…,"pad":""} the JSON is ≈ payload bytes
  const jobs = Array.from({ length: o.memJobs }, (_, i) => ({ data: { i, pad } }));
  const before = await usedMemory(client);
  const h = await lib.open(ctx.url, `bench-costs-mem-${tag}`);
  try {
    await prefill(h, jobs, 5_000);
  } finally {
    await h.close();
  }
  const after = await usedMemory(client);
  const families = await memoryByFamily(client);
  return { bytesPerJob: (after - before) / o.memJobs, families, jobHash: await oneJobHash(client, families) };
}

export async function runCosts(ctx) {
  const o = ctx.opts;
  const rows = processRows(o);
  ctx.log('[costs] warm-up');
  const warm = Math.min(o.jobs, 2000);
  await onceProcess(ctx, { jobs: () => Array.from({ length: warm }, (_, i) => ({ data: { i } })) }, 'warmup', warm);
  for (const lib of PEERS) await withQueue(ctx, lib, 'warmup', (h) => measurePickups(h, { samples: 5, warmup: 0 }));
  for (let rep = 1; rep <= o.runs; rep++) {
    const rotate = (list) => list.map((_, i) => list[(i + rep - 1) % list.length]);
    for (const row of rotate(rows)) {
      const m = await onceProcess(ctx, row, `${rep}`);
      ctx.results.add(row.name, 'echomq', m);
      ctx.log(`[costs] run ${rep}/${o.runs} ${row.name}: ${Math.round(m.rate)} jobs/s (prefill ${Math.round(m.prefillRate)} jobs/s)${noise(m)}`);
    }
    for (const c of floorCases(o)) {
      for (const lib of rotate(FLOOR_LIBS)) {
        const m = await onceFloor(ctx, lib, c, `${rep}`);
        ctx.results.add(`floor ${c.name}`, lib.name, m);
        ctx.log(`[costs] run ${rep}/${o.runs} ${c.name} ${lib.name}: ${Math.round(m.rate)} jobs/s, ${fmt(m.usPerCall, true)} µs per script call${noise(m)}`);
      }
    }
    for (const lib of rotate(PEERS)) {
      const m = await oncePickup(ctx, lib, `${rep}`);
      ctx.results.add('idle pickup', lib.name, m);
      ctx.log(`[costs] run ${rep}/${o.runs} idle pickup ${lib.name}: p50 ${m.p50.toFixed(2)} ms, p99 ${m.p99.toFixed(2)} ms`);
    }
    for (const lib of rotate(PEERS)) {
      const m = await onceMemory(ctx, lib, `${rep}`);
      ctx.results.add('memory', lib.name, m);
      ctx.log(`[costs] run ${rep}/${o.runs} memory ${lib.name}: ${Math.round(m.bytesPerJob)} bytes/job`);
    }
  }
  await ctx.meter.flush();
  return [report(ctx, rows), floorReport(ctx)].join('\n\n');
}

function floorReport(ctx) {
  const o = ctx.opts;
  const v = (name, lib, metric) => ctx.results.values(`floor ${name}`, lib, metric);
  const med = (name, lib, metric) => median(v(name, lib, metric).filter((x) => x !== undefined));
  const rows = floorCases(o).flatMap((c) => FLOOR_LIBS.map((l) => [
    c.name, l.name, spread(v(c.name, l.name, 'rate')), fmt(med(c.name, l.name, 'scriptsPerJob'), true),
    fmt(med(c.name, l.name, 'cmdsPerJob'), true), fmt(med(c.name, l.name, 'usPerCall'), true),
    fmt(med(c.name, l.name, 'usPerJob'), true), fmt(med(c.name, l.name, 'redisCpuUsPerJob'), true),
    l === floor ? '1.00×' : ratio(v(c.name, l.name, 'redisCpuUsPerJob'), v(c.name, 'floor', 'redisCpuUsPerJob')),
  ]));
  return [
    `### costs: echomq's scripts against the floor (lib/floor.mjs); ${fmt(o.jobs)} jobs per case, median of ${o.runs} run(s)`,
    '',
    '`echomq` is its Queue and Worker; `echomq scripts` its add and complete functions called with the floor\'s fixed batches (20 coalesced adds, 100 bulk jobs, ceil(c/2) settled and claimed per call) by the floor\'s driver. Redis timings move with the machine\'s load: `node bench/instructions.mjs` counts the same cases in instructions.',
    '',
    markdownTable(['case', 'library', 'jobs/s', 'script calls/job', 'Redis cmds/job', 'Redis µs per script call', 'Redis µs/job in scripts', 'Redis CPU µs/job', 'Redis CPU ÷ floor'], rows),
  ].join('\n');
}

function report(ctx, rows) {
  const o = ctx.opts;
  const v = (name, lib, metric) => ctx.results.values(name, lib, metric);
  const base = rows.find((r) => r.base).name;
  const shallow = rows.find((r) => r.depth === 'shallow').name;
  const versus = (r) => (r.depth === 'deep' ? shallow : base);
  const processTable = markdownTable(
    ['row', 'jobs in queue', 'jobs/s', 'vs baseline', 'baseline', 'Redis cmds/job', 'Redis CPU µs/job', 'prefill addBulk jobs/s'],
    rows.map((r) => [
      r.name,
      fmt(o.jobs + (r.depth === 'deep' ? o.deep : r.depth === 'shallow' ? o.shallow : 0)),
      spread(v(r.name, 'echomq', 'rate')),
      r.base ? '1.00×' : ratio(v(r.name, 'echomq', 'rate'), v(versus(r), 'echomq', 'rate')),
      r.base ? '–' : versus(r) === base ? 'plain' : 'shallow',
      fmt(median(v(r.name, 'echomq', 'cmdsPerJob')), true),
      fmt(median(v(r.name, 'echomq', 'redisCpuUsPerJob')), true),
      spread(v(r.name, 'echomq', 'prefillRate')),
    ]),
  );
  const ms = (xs) => spread(xs.map((x) => Math.round(x * 1000) / 1000));
  const pickupTable = markdownTable(
    ['library', 'p50 ms', 'p99 ms', 'max ms'],
    PEERS.map((l) => [l.name, ms(v('idle pickup', l.name, 'p50')), ms(v('idle pickup', l.name, 'p99')), ms(v('idle pickup', l.name, 'max'))]),
  );
  const memTable = markdownTable(
    ['library', 'bytes per waiting job', `vs echomq`],
    PEERS.map((l) => [l.name, spread(v('memory', l.name, 'bytesPerJob')), ratio(v('memory', l.name, 'bytesPerJob'), v('memory', 'echomq', 'bytesPerJob'))]),
  );
  const famRows = [];
  for (const l of PEERS) {
    const fams = v('memory', l.name, 'families').at(-1) ?? [];
    for (const f of fams.slice(0, 6)) famRows.push([l.name, `\`${f.family}\``, fmt(f.keys), fmt(f.bytes / o.memJobs, true)]);
  }
  const cost = (name, against) => {
    const r = ratioValue(v(name, 'echomq', 'rate'), v(against, 'echomq', 'rate'));
    return r === undefined ? undefined : (1 - r) * 100;
  };
  const [prio, lanes] = rows.slice(1, 3).map((r) => r.name);
  const deep = rows.find((r) => r.depth === 'deep').name;
  const medOf = (lib, m) => median(v('idle pickup', lib, m));
  const targets = targetTable([
    { target: `priorities 0–${o.maxPriority}: throughput lost vs plain`, measured: cost(prio, base), atMost: 10, unit: '%' },
    { target: `${fmt(o.costLanes)} lanes: throughput lost vs plain`, measured: cost(lanes, base), atMost: 15, unit: '%' },
    { target: 'idle pickup p50 (median of runs)', measured: medOf('echomq', 'p50'), atMost: 2, unit: 'ms' },
    { target: 'idle pickup p99 (median of runs)', measured: medOf('echomq', 'p99'), atMost: 10, unit: 'ms' },
    { target: 'memory per waiting job vs BullMQ', measured: ratioValue(v('memory', 'echomq', 'bytesPerJob'), v('memory', 'bullmq', 'bytesPerJob')), atMost: 1, unit: '×' },
    { target: `claims with ${fmt(o.deep)} waiting vs ${fmt(o.shallow)}`, measured: ratioValue(v(deep, 'echomq', 'rate'), v(shallow, 'echomq', 'rate')), atLeast: 0.8, unit: '×' },
  ]);
  return [
    `### costs: echomq features against its plain default lane; concurrency ${o.costConcurrency}, first ${fmt(o.jobs)} completions timed; median (min–max) of ${o.runs} run(s)`,
    '',
    processTable,
    '',
    '### costs: cost per job (medians)',
    '',
    costTable(ctx.results, rows.map((r) => r.name), ['echomq'], 'row'),
    '',
    `### costs: idle pickup latency, add → processor start, one idle worker; ${o.pickups} samples per run, median (min–max) over runs of each run's percentile`,
    '',
    pickupTable,
    '',
    `### costs: Redis memory per waiting job, ${fmt(o.memJobs)} jobs with ≈${fmt(o.payload)} bytes of data (used_memory delta ÷ jobs)`,
    '',
    memTable,
    '',
    'Where the bytes sit (last run; MEMORY USAGE by key family, digits folded to #; the rest of the delta is the keyspace table itself):',
    '',
    markdownTable(['library', 'key family', 'keys', 'bytes per job'], famRows),
    '',
    'One waiting job\'s hash (last run): field (value bytes). A hash with a value over 64 bytes is stored as a hashtable, where every field costs a table entry and two allocations:',
    '',
    markdownTable(['library', 'encoding', 'MEMORY USAGE bytes', 'fields'], PEERS.flatMap((l) => {
      const j = v('memory', l.name, 'jobHash').at(-1);
      return j ? [[l.name, j.encoding, fmt(j.bytes), j.fields.map((x) => `${x.name} (${x.bytes})`).join(', ')]] : [];
    })),
    '',
    '### costs: targets of the performance issue',
    '',
    targets,
  ].join('\n');
}
