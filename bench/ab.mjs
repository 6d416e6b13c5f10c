#!/usr/bin/env node
// A/B of two echomq builds in one process: the core rows (add, addBulk, process at c=1/10/50
// in one lane) and the lanes-shallow rows (10 vs 20,000 lanes at c=10/50, addBulk into 1 vs
// 1,000 new lanes), case by case alternating the builds (A, B, B, A, …) so a slow spell on a
// shared machine hits both alike. Builds are index.js paths, e.g. from bench/snapshot.mjs.
//
//   node scripts/with-redis.mjs node --expose-gc bench/ab.mjs /tmp/old/dist/index.js /tmp/new/dist/index.js [runs] [rows]
//   rows: core, shallow or both (default both)
import { createMeter, collectGarbage } from './lib/meter.mjs';
import { prefill, timeProcessing } from './lib/steps.mjs';
import { inParallel } from './lib/meter.mjs';

const [A, B, runsArg, rowsArg] = process.argv.slice(2);
if (!A || !B) {
  console.error('usage: bench/ab.mjs <build A index.js> <build B index.js> [runs] [core|shallow|both]');
  process.exit(2);
}
const runs = Number(runsArg ?? 3);
const rows = rowsArg ?? 'both';
const url = process.env.REDIS_URL;
const load = async (path) => {
  process.env.BENCH_ECHOMQ = path;
  return (await import(`./lib/libs.mjs?build=${encodeURIComponent(path)}`)).echomq;
};
const builds = { A: await load(A), B: await load(B) };
const JOBS = 20_000;
const lanesOf = (n, lanes) => Array.from({ length: n }, (_, i) => ({ data: { i }, ...(lanes ? { lane: `u${i % lanes}` } : {}) }));

const cases = [];
if (rows !== 'shallow') {
  cases.push(
    { name: 'add (100 in flight)', run: async (m, h) => { const w = await m.begin(); await inParallel(JOBS, 100, (i) => h.add({ data: { i } })); return w.end(JOBS); } },
    { name: 'addBulk (1000 × 20)', run: async (m, h) => { const bs = Array.from({ length: 20 }, () => lanesOf(1000)); const w = await m.begin(); for (const b of bs) await h.addBulk(b); return w.end(20_000); } },
    ...[1, 10, 50].map((c) => ({ name: `process c=${c}`, run: async (m, h) => { await prefill(h, lanesOf(JOBS)); return timeProcessing(m, h, { concurrency: c, target: JOBS }); } })),
  );
}
if (rows !== 'core') {
  for (const c of [10, 50]) {
    for (const lanes of [10, 20_000]) {
      cases.push({ name: `${lanes} lanes c=${c}`, run: async (m, h) => { await prefill(h, lanesOf(JOBS, lanes)); return timeProcessing(m, h, { concurrency: c, target: JOBS }); } });
    }
  }
  for (const lanes of [1, 1000]) {
    cases.push({
      name: `addBulk into ${lanes} lane(s)`,
      run: async (m, h) => {
        const bs = Array.from({ length: 20 }, (_, b) => Array.from({ length: 1000 }, (_, i) => ({ data: { i }, lane: `b${b}-u${i % lanes}` })));
        const w = await m.begin();
        for (const b of bs) await h.addBulk(b);
        return w.end(20_000);
      },
    });
  }
}

const meter = await createMeter(url);
const results = new Map(); // case → build → measurements
let seq = 0;
async function once(c, build) {
  await meter.flush();
  collectGarbage();
  const h = await builds[build].open(url, `ab-${seq++}`);
  try {
    return await c.run(meter, h);
  } finally {
    await h.close();
  }
}
for (const c of cases) await once({ ...c }, 'A'); // warm-up, both builds
for (const c of cases) await once({ ...c }, 'B');
for (let r = 0; r < runs; r++) {
  for (const c of cases) {
    const order = (r + cases.indexOf(c)) % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
    for (const b of order) {
      const m = await once(c, b);
      const row = results.get(c.name) ?? { A: [], B: [] };
      row[b].push(m);
      results.set(c.name, row);
      console.error(`[ab] run ${r + 1}/${runs} ${c.name} ${b}: ${Math.round(m.rate)} jobs/s, Redis ${m.redisCpuUsPerJob.toFixed(1)} µs/job`);
    }
  }
}
await meter.close();
const med = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
const f = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
console.log(`A = ${A}\nB = ${B}\nmedians of ${runs}, builds alternated case by case\n`);
// Redis CPU per job: the median, and the least of the runs (the run least slowed by others).
console.log('| case | A jobs/s | B jobs/s | B/A | A Redis µs/job (min) | B Redis µs/job (min) | A cmds/job | B cmds/job |');
console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
const cpu = (ms) => `${f(med(ms.map((m) => m.redisCpuUsPerJob)), 1)} (${f(Math.min(...ms.map((m) => m.redisCpuUsPerJob)), 1)})`;
for (const [name, row] of results) {
  const a = med(row.A.map((m) => m.rate));
  const b = med(row.B.map((m) => m.rate));
  console.log(`| ${name} | ${f(a)} | ${f(b)} | ${f(b / a, 2)}× | ${cpu(row.A)} | ${cpu(row.B)} | ${f(med(row.A.map((m) => m.cmdsPerJob)), 2)} | ${f(med(row.B.map((m) => m.cmdsPerJob)), 2)} |`);
}
process.exit(0);
