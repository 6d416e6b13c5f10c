// Suite `core`: echomq against BullMQ and bee-queue on the three hot paths a queue lives on.
//   add      single adds, `inflight` calls pending at a time (a busy web tier)
//   addBulk  `batches` sequential bulk adds of `bulk` jobs each (bee-queue: saveAll)
//   process  one worker drains `jobs` pre-filled noop jobs at each concurrency; timed from the
//            worker's construction to the last completion. Finished jobs are removed at once
//            (removeOnComplete: true; bee-queue: removeOnSuccess) by every library, so none
//            pays for retention.
// Within a repetition the libraries alternate case by case (echomq, BullMQ, bee-queue, echomq,
// …). Ratios are echomq's median over each peer's, and over the best peer of that row.
import { inParallel, noise } from './lib/meter.mjs';
import { prefill, timeProcessing } from './lib/steps.mjs';
import { costTable, markdownTable, median, ratio, ratioValue, spread, targetTable } from './lib/table.mjs';
import { echomq, bullmq, beequeue } from './lib/libs.mjs';

const LIBS = [echomq, bullmq, beequeue];
const PEERS = LIBS.slice(1);

function jobs(n) {
  return Array.from({ length: n }, (_, i) => ({ data: { i } }));
}

function cases(o) {
  const list = [
    {
      name: `add (${o.inflight} in flight)`,
      async run(meter, h) {
        const window = await meter.begin();
        await inParallel(o.jobs, o.inflight, (i) => h.add({ data: { i } }));
        return window.end(o.jobs);
      },
    },
    {
      name: `addBulk (${o.bulk} × ${o.batches})`,
      async run(meter, h) {
        const batches = Array.from({ length: o.batches }, () => jobs(o.bulk));
        const window = await meter.begin();
        for (const b of batches) await h.addBulk(b);
        return window.end(o.bulk * o.batches);
      },
    },
  ];
  for (const c of o.concurrency) {
    list.push({
      name: `process c=${c}`,
      async run(meter, h) {
        await prefill(h, jobs(o.jobs));
        return timeProcessing(meter, h, { concurrency: c, target: o.jobs });
      },
    });
  }
  return list;
}

/** One case against one library on an empty Redis. */
async function once(ctx, lib, c, tag) {
  await ctx.meter.flush();
  ctx.gc();
  const h = await lib.open(ctx.url, `bench-core-${tag}`);
  try {
    return await c.run(ctx.meter, h);
  } finally {
    await h.close();
  }
}

export async function runCore(ctx) {
  const o = ctx.opts;
  const list = cases(o);
  // Warm-up: loads scripts and lets the JIT settle so the first timed run is not penalised.
  for (const lib of LIBS) {
    ctx.log(`[core] warm-up ${lib.name}`);
    const warm = cases({ ...o, jobs: Math.min(o.jobs, 1000), batches: 1, concurrency: [10] });
    for (const c of warm) await once(ctx, lib, c, 'warmup');
  }
  for (let rep = 1; rep <= o.runs; rep++) {
    // Rotate who goes first each repetition, so no library always runs right after another.
    const order = LIBS.map((_, i) => LIBS[(i + rep - 1) % LIBS.length]);
    for (const c of list) {
      for (const lib of order) {
        const m = await once(ctx, lib, c, `${rep}`);
        ctx.results.add(c.name, lib.name, m);
        ctx.log(`[core] run ${rep}/${o.runs} ${c.name} ${lib.name}: ${Math.round(m.rate)} jobs/s${noise(m)}`);
      }
    }
  }
  await ctx.meter.flush();

  const names = list.map((c) => c.name);
  const rate = (n, lib) => ctx.results.values(n, lib, 'rate');
  // The peer with the highest median jobs/s in a row.
  const best = (n) => PEERS.map((p) => p.name).reduce((a, b) => ((median(rate(n, b)) || 0) > (median(rate(n, a)) || 0) ? b : a));
  const rows = names.map((n) => [
    n,
    ...LIBS.map((l) => spread(rate(n, l.name))),
    ...PEERS.map((p) => ratio(rate(n, 'echomq'), rate(n, p.name))),
    `${ratio(rate(n, 'echomq'), rate(n, best(n)))} (${best(n)})`,
  ]);
  return [
    `### core: echomq vs BullMQ vs bee-queue — throughput, jobs/s, median (min–max) of ${o.runs} run(s); ${o.jobs} jobs for add and process`,
    '',
    markdownTable(
      ['case', ...LIBS.map((l) => `${l.name} jobs/s`), ...PEERS.map((p) => `echomq/${p.name}`), 'echomq/best peer'],
      rows,
    ),
    '',
    '### core: cost per job (medians)',
    '',
    costTable(ctx.results, names, LIBS.map((l) => l.name)),
    '',
    '### core: targets of the performance issue',
    '',
    targetTable(coreTargets(list, rate, best)),
  ].join('\n');
}

/** The core targets, for whichever of their cases ran. */
function coreTargets(list, rate, best) {
  const find = (prefix) => list.find((c) => c.name.startsWith(prefix))?.name;
  const vs = (n, peer) => (n ? ratioValue(rate(n, 'echomq'), rate(n, peer)) : undefined);
  const vsBest = (n) => (n ? vs(n, best(n)) : undefined);
  const add = find('add (');
  const bulk = find('addBulk');
  const [c1, c10, c50] = ['process c=1', 'process c=10', 'process c=50'].map((n) => list.find((c) => c.name === n)?.name);
  return [
    { target: 'process c=50 vs BullMQ', measured: vs(c50, 'bullmq'), atLeast: 2, unit: '×' },
    { target: 'process c=50 vs best peer', measured: vsBest(c50), atLeast: 1.7, unit: '×' },
    { target: 'process c=10 vs best peer', measured: vsBest(c10), atLeast: 1.5, unit: '×' },
    { target: 'process c=1 vs best peer', measured: vsBest(c1), atLeast: 1.3, unit: '×' },
    { target: 'add single vs BullMQ', measured: vs(add, 'bullmq'), atLeast: 1.5, unit: '×' },
    { target: 'addBulk vs BullMQ', measured: vs(bulk, 'bullmq'), atLeast: 3, unit: '×' },
    { target: 'addBulk vs bee-queue saveAll', measured: vs(bulk, 'bee-queue'), atLeast: 1, unit: '×' },
  ];
}
